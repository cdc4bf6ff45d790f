package config

import (
	"fmt"
	"math"
	"strings"

	"github.com/flowebm/flowebm/graph"
	"github.com/flowebm/flowebm/layers"
)

// FlowFamily names the family of a run's flow (model.flow).
type FlowFamily string

// The flow families.
const (
	// FlowRealNVP is layers.RealNVP, the paper's flow (the default).
	FlowRealNVP FlowFamily = "realnvp"
	// FlowSpline is layers.SplineFlow: rational-quadratic neural spline
	// couplings (Durkan et al. 2019, flowMC's default flow).
	FlowSpline FlowFamily = "spline"
)

// FlowFamilies lists the MLP flows' families; FlowConvRealNVP, the image
// experiments' flow, is the other family model.flow accepts.
var FlowFamilies = []FlowFamily{FlowRealNVP, FlowSpline}

// MaxFlowBins is the most bins model.flow_bins accepts: the spline's
// minimum bin width and height (layers.DefaultSplineMinBin, 1e-3) times
// the bins must stay below 1.
var MaxFlowBins = int(math.Ceil(1/layers.DefaultSplineMinBin)) - 1

// MaxFlowTailBound bounds model.flow_tail_bound, as base_sigma is bounded:
// beyond it the spline's knots leave float64's range.
const MaxFlowTailBound = 1e150

// flowFamilyValues quotes the families as `"realnvp" or "spline"`.
func flowFamilyValues() string {
	q := make([]string, len(FlowFamilies))
	for i, f := range FlowFamilies {
		q[i] = fmt.Sprintf("%q", f)
	}
	return strings.Join(q[:len(q)-1], ", ") + " or " + q[len(q)-1]
}

// check refuses a family that is not one of FlowFamilies ("" is the
// default, realnvp).
func (f FlowFamily) check() error {
	if f == "" || f == FlowConvRealNVP {
		return nil
	}
	for _, v := range FlowFamilies {
		if f == v {
			return nil
		}
	}
	return fmt.Errorf("algorithms: model.flow %q, want %s (unset: %q), or %q for the image experiments", string(f), flowFamilyValues(), FlowRealNVP, FlowConvRealNVP)
}

// UnmarshalText accepts a family's name ("" for the default), so that a
// configuration file naming another is refused when it is read.
func (f *FlowFamily) UnmarshalText(b []byte) error {
	v := FlowFamily(b)
	if err := v.check(); err != nil {
		return err
	}
	*f = v
	return nil
}

// Set parses a family's name (a flag.Value).
func (f *FlowFamily) Set(s string) error { return f.UnmarshalText([]byte(s)) }

// String returns the name.
func (f FlowFamily) String() string { return string(f) }

// Type names the values in help texts.
func (f *FlowFamily) Type() string {
	s := make([]string, len(FlowFamilies))
	for i, v := range FlowFamilies {
		s[i] = string(v)
	}
	return strings.Join(s, "|")
}

// FlowNet is the map of the run's own flow in d dimensions (not
// model.flow_onnx's), with the model's defaults: a RealNVP or a neural
// spline flow of flow_blocks blocks of couplings with hidden widths
// flow_hidden and mask flow_mask, starting at (or, for the RealNVP's
// 1e-6 weights, next to) the identity. The conv RealNVP needs the
// images' shape: FlowNetFor builds it (FlowNet gives nil).
func (m Model) FlowNet(d int) graph.FlowNet {
	m = m.WithDefaults()
	switch m.Flow {
	case FlowConvRealNVP:
		return nil
	case FlowSpline:
		return layers.SplineFlow{Dim: d, Blocks: m.FlowBlocks, Hidden: m.FlowHidden, Mask: m.FlowMask,
			Spline: layers.RQSpline{Bins: m.FlowBins, TailBound: m.FlowTailBound}}
	}
	return layers.RealNVP{Dim: d, Blocks: m.FlowBlocks, Hidden: m.FlowHidden, Init: m.FlowInit, Mask: m.FlowMask}
}

// validateFamily checks model.flow and the fields that apply to one
// family only: flow_bins and flow_tail_bound (the spline's), flow_init
// (the RealNVP's). A field given for the other family is refused rather
// than ignored.
func (m Model) validateFamily() error {
	if err := m.Flow.check(); err != nil {
		return err
	}
	family := FlowRealNVP
	if m.Flow != "" {
		family = m.Flow
	}
	if family != FlowSpline {
		for _, c := range []struct {
			name string
			set  bool
		}{{"flow_bins", m.FlowBins != 0}, {"flow_tail_bound", m.FlowTailBound != 0}} {
			if c.set {
				return fmt.Errorf("algorithms: model.%s applies to model.flow %q, not %q: drop it, or set model.flow to %q", c.name, FlowSpline, family, FlowSpline)
			}
		}
		return nil
	}
	if m.FlowInit != "" {
		return fmt.Errorf("algorithms: model.flow_init %q applies to model.flow %q, not %q (whose couplings start as the identity, their conditioners' last layers zero): drop it", m.FlowInit, FlowRealNVP, FlowSpline)
	}
	if m.FlowBins != 0 && (m.FlowBins < 2 || m.FlowBins > MaxFlowBins) {
		return fmt.Errorf("algorithms: model.flow_bins %d, want 2 to %d bins (unset: the default %d)", m.FlowBins, MaxFlowBins, layers.DefaultSplineBins)
	}
	if b := m.FlowTailBound; b != 0 && !(b > 0 && b <= MaxFlowTailBound) {
		return fmt.Errorf("algorithms: model.flow_tail_bound %v, want a bound B in (0, 1e150]: the spline maps [−B, B] onto itself (unset: the default %v)", b, layers.DefaultSplineTailBound)
	}
	return nil
}
