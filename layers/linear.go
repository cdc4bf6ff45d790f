package layers

import (
	"fmt"
	"strconv"

	G "gorgonia.org/gorgonia"
)

// Linear is the affine map y = x·Wᵀ + b with PyTorch's layout: weight
// (Out, In), bias (Out). Its parameters are Name+".weight" and Name+".bias".
type Linear struct {
	Name       string
	In, Out    int
	WeightInit Init // nil means TorchUniform
	BiasInit   Init // nil means TorchUniform
	NoBias     bool
}

// ParamSpecs lists the weight and, unless NoBias, the bias.
func (l Linear) ParamSpecs() []ParamSpec {
	s := []ParamSpec{{Name: l.Name + ".weight", Shape: []int{l.Out, l.In}, FanIn: l.In, Init: l.WeightInit}}
	if !l.NoBias {
		s = append(s, ParamSpec{Name: l.Name + ".bias", Shape: []int{l.Out}, FanIn: l.In, Init: l.BiasInit})
	}
	return s
}

// Apply maps x (B, In) to (B, Out).
func (l Linear) Apply(b Binder, x *G.Node) (*G.Node, error) {
	if _, d, err := batchOf(x); err != nil {
		return nil, err
	} else if d != l.In {
		return nil, fmt.Errorf("layers: %s expects %d inputs, have %d", l.Name, l.In, d)
	}
	w, err := b.Param(l.Name+".weight", l.Out, l.In)
	if err != nil {
		return nil, err
	}
	if !l.NoBias {
		bias, err := b.Param(l.Name+".bias", 1, l.Out)
		if err != nil {
			return nil, err
		}
		return applyLinear(x, w, bias) // one fused node: x·Wᵀ + b
	}
	wt, err := G.Transpose(w)
	if err != nil {
		return nil, err
	}
	return G.Mul(x, wt)
}

// Layout says how an MLP numbers its Linear layers.
type Layout int

const (
	// ModuleList numbers the Linears 0, 1, 2, … as an nn.ModuleList of
	// Linears with functional activations does.
	ModuleList Layout = iota
	// Sequential numbers them 0, 2, 4, … as an nn.Sequential that
	// interleaves Linears and activation modules does.
	Sequential
)

// MLP is a stack of Linear layers with an activation after every layer but
// the last (and Output after the last). Sizes lists the widths, input first:
// [2, 32, 1] is 2→32→1.
type MLP struct {
	Name       string
	Sizes      []int
	Hidden     Activation
	Output     Activation // zero value: identity
	Layout     Layout
	WeightInit Init // nil means TorchUniform
	BiasInit   Init // nil means TorchUniform
	// LastWeightInit and LastBiasInit, when set, replace the initialisers of
	// the last layer (e.g. Zeros, for an energy that is 0 at start).
	LastWeightInit, LastBiasInit Init
}

// Linears returns the MLP's layers with their names and initialisers.
func (m MLP) Linears() []Linear {
	n := len(m.Sizes) - 1
	ls := make([]Linear, n)
	for i := range ls {
		idx := i
		if m.Layout == Sequential {
			idx = 2 * i
		}
		name := strconv.Itoa(idx)
		if m.Name != "" {
			name = m.Name + "." + name
		}
		ls[i] = Linear{Name: name, In: m.Sizes[i], Out: m.Sizes[i+1], WeightInit: m.WeightInit, BiasInit: m.BiasInit}
		if i == n-1 {
			if m.LastWeightInit != nil {
				ls[i].WeightInit = m.LastWeightInit
			}
			if m.LastBiasInit != nil {
				ls[i].BiasInit = m.LastBiasInit
			}
		}
	}
	return ls
}

// ParamSpecs lists every layer's parameters in order.
func (m MLP) ParamSpecs() []ParamSpec {
	var s []ParamSpec
	for _, l := range m.Linears() {
		s = append(s, l.ParamSpecs()...)
	}
	return s
}

// Apply maps x (B, Sizes[0]) to (B, Sizes[last]).
func (m MLP) Apply(b Binder, x *G.Node) (*G.Node, error) {
	if len(m.Sizes) < 2 {
		return nil, fmt.Errorf("layers: MLP %q needs at least two sizes, have %v", m.Name, m.Sizes)
	}
	ls := m.Linears()
	h := x
	for i, l := range ls {
		var err error
		if h, err = l.Apply(b, h); err != nil {
			return nil, err
		}
		act := m.Hidden
		if i == len(ls)-1 {
			act = m.Output
		}
		if h, err = act.Apply(b, h); err != nil {
			return nil, err
		}
	}
	return h, nil
}
