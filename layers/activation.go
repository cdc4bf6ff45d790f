package layers

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	G "gorgonia.org/gorgonia"
)

// Activation is an elementwise non-linearity. Its zero value is the
// identity. Kind is one of "identity", "relu", "leaky_relu", "silu",
// "softplus", "tanh", "elu"; Slope is LeakyReLU's negative slope.
type Activation struct {
	Kind  string  `json:"kind"`
	Slope float64 `json:"slope,omitempty"`
}

// Activations, as their PyTorch namesakes (ELU with α = 1, Softplus with β = 1).
var (
	Identity = Activation{Kind: "identity"}
	ReLU     = Activation{Kind: "relu"}
	SiLU     = Activation{Kind: "silu"}
	Softplus = Activation{Kind: "softplus"}
	Tanh     = Activation{Kind: "tanh"}
	ELU      = Activation{Kind: "elu"}
)

// LeakyReLU returns x ↦ max(x, 0) + slope·min(x, 0).
func LeakyReLU(slope float64) Activation { return Activation{Kind: "leaky_relu", Slope: slope} }

// String writes the activation as ParseActivation reads it, e.g. "leaky_relu(0.05)".
func (a Activation) String() string {
	if a.Kind == "leaky_relu" {
		return "leaky_relu(" + strconv.FormatFloat(a.Slope, 'g', -1, 64) + ")"
	}
	if a.Kind == "" {
		return "identity"
	}
	return a.Kind
}

// ParseActivation reads the form String writes.
func ParseActivation(s string) (Activation, error) {
	s = strings.TrimSpace(strings.ToLower(s))
	if rest, ok := strings.CutPrefix(s, "leaky_relu"); ok {
		slope := 0.01 // PyTorch's default
		if rest != "" {
			if !strings.HasPrefix(rest, "(") || !strings.HasSuffix(rest, ")") {
				return Activation{}, fmt.Errorf("activation %q: want leaky_relu(slope)", s)
			}
			v, err := strconv.ParseFloat(strings.TrimSpace(rest[1:len(rest)-1]), 64)
			if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
				return Activation{}, fmt.Errorf("activation %q: slope must be a finite number", s)
			}
			slope = v
		}
		return LeakyReLU(slope), nil
	}
	switch s {
	case "", "identity", "relu", "silu", "softplus", "tanh", "elu":
		if s == "" {
			s = "identity"
		}
		return Activation{Kind: s}, nil
	}
	return Activation{}, fmt.Errorf("activation %q: want one of identity, relu, leaky_relu(slope), silu, softplus, tanh, elu", s)
}

// Apply adds the activation of x to x's graph, as differentiable Gorgonia
// operations; ReLU, LeakyReLU and tanh are one fused operation each
// (leakyReLU, mathOp).
func (a Activation) Apply(b Binder, x *G.Node) (*G.Node, error) {
	switch a.Kind {
	case "", "identity":
		return x, nil
	case "relu":
		return applyLeakyReLU(x, 0)
	case "leaky_relu":
		return applyLeakyReLU(x, a.Slope)
	case "silu":
		return applySiLU(x)
	case "softplus":
		return G.Softplus(x)
	case "tanh":
		return applyMath(fnTanh, x)
	case "elu":
		// max(x,0) + expm1(min(x,0)), with min(x,0) = x − max(x,0): no overflow for large x.
		pos, err := G.Rectify(x)
		if err != nil {
			return nil, err
		}
		mn, err := G.Sub(x, pos)
		if err != nil {
			return nil, err
		}
		em, err := G.Expm1(mn)
		if err != nil {
			return nil, err
		}
		return G.Add(pos, em)
	}
	return nil, fmt.Errorf("layers: unknown activation %q", a.Kind)
}
