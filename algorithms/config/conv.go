package config

import (
	"fmt"
	"strings"

	"github.com/flowebm/flowebm/algorithms/experiments"
	"github.com/flowebm/flowebm/graph"
	"github.com/flowebm/flowebm/layers"
)

// EBMFamily names the architecture of a run's energy network (model.ebm).
type EBMFamily string

// The EBM families.
const (
	// EBMMLP is graph.MLPEnergy: an MLP of widths model.ebm_hidden with
	// LeakyReLU(model.ebm_slope), the toy EBM of the paper (the default).
	EBMMLP EBMFamily = "mlp"
	// EBMConv is layers.ImageEnergy: a convolutional ResNet energy for the
	// image experiments, with stage widths model.ebm_channels.
	EBMConv EBMFamily = "conv"
)

// EBMFamilies lists the EBM families.
var EBMFamilies = []EBMFamily{EBMMLP, EBMConv}

// FlowConvRealNVP is layers.ImageRealNVP: a RealNVP of checkerboard and
// channel couplings with squeezes and convolutional ResNet conditioners,
// for the image experiments. model.flow_blocks is its number of couplings
// of each kind per scale (default 2: 8 couplings over its 2 scales) and
// model.flow_hidden its conditioners' width, one value (default 32).
const FlowConvRealNVP FlowFamily = "conv-realnvp"

// MaxEBMStages bounds the stages of model.ebm_channels (each halves the
// image), and MaxConvWidth the width of any convolutional stage or
// conditioner.
const (
	MaxEBMStages = 8
	MaxConvWidth = 4096
)

// check refuses a family that is not one of EBMFamilies ("" is the
// default, mlp).
func (f EBMFamily) check() error {
	for _, v := range EBMFamilies {
		if f == v || f == "" {
			return nil
		}
	}
	q := make([]string, len(EBMFamilies))
	for i, v := range EBMFamilies {
		q[i] = fmt.Sprintf("%q", v)
	}
	return fmt.Errorf("algorithms: model.ebm %q, want %s (unset: %q)", string(f), strings.Join(q, " or "), EBMMLP)
}

// UnmarshalText accepts a family's name ("" for the default), so that a
// configuration file naming another is refused when it is read.
func (f *EBMFamily) UnmarshalText(b []byte) error {
	v := EBMFamily(b)
	if err := v.check(); err != nil {
		return err
	}
	*f = v
	return nil
}

// Set parses a family's name (a flag.Value).
func (f *EBMFamily) Set(s string) error { return f.UnmarshalText([]byte(s)) }

// String returns the name.
func (f EBMFamily) String() string { return string(f) }

// Type names the values in help texts.
func (f *EBMFamily) Type() string { return "mlp|conv" }

// Conv reports whether the model has a convolutional EBM or flow, which
// need an image experiment.
func (m Model) Conv() bool { return m.EBM == EBMConv || m.Flow == FlowConvRealNVP }

// validateEBM checks model.ebm and the fields that apply to one family
// only: ebm_hidden and ebm_slope (the MLP's), ebm_channels (the conv
// EBM's). A field given for the other family is refused rather than
// ignored.
func (m Model) validateEBM() error {
	if err := m.EBM.check(); err != nil {
		return err
	}
	if m.EBM != EBMConv {
		if m.EBMChannels != nil {
			return fmt.Errorf("algorithms: model.ebm_channels applies to model.ebm %q, not %q: drop it, or set model.ebm to %q", EBMConv, EBMMLP, EBMConv)
		}
		return nil
	}
	for _, c := range []struct {
		name string
		set  bool
	}{{"ebm_hidden", m.EBMHidden != nil}, {"ebm_slope", m.EBMSlope != 0}} {
		if c.set {
			return fmt.Errorf("algorithms: model.%s applies to model.ebm %q, not %q (whose widths are model.ebm_channels): drop it", c.name, EBMMLP, EBMConv)
		}
	}
	if m.EBMChannels != nil && (len(m.EBMChannels) < 1 || len(m.EBMChannels) > MaxEBMStages) {
		return fmt.Errorf("algorithms: model.ebm_channels has %d widths, want 1 to %d stages (unset: %v)", len(m.EBMChannels), MaxEBMStages, layers.ImageEnergy{}.WithDefaults().Channels)
	}
	for _, w := range m.EBMChannels {
		if w < 1 || w > MaxConvWidth {
			return fmt.Errorf("algorithms: model.ebm_channels holds %d, want widths 1 to %d", w, MaxConvWidth)
		}
	}
	return nil
}

// validateConvFlow checks the fields of model.flow "conv-realnvp": one
// hidden width, and none of the fields of the MLP flows it has no use for
// (flow_mask, flow_init: its masks and initialisation are its own; the
// spline's flow_bins and flow_tail_bound are refused by validateFamily).
func (m Model) validateConvFlow() error {
	if m.Flow != FlowConvRealNVP {
		return nil
	}
	for _, c := range []struct {
		name string
		set  bool
	}{{"flow_mask", m.FlowMask != ""}, {"flow_init", m.FlowInit != ""}} {
		if c.set {
			return fmt.Errorf("algorithms: model.%s applies to model.flow %q and %q, not %q (checkerboard and channel masks, heads initialised at 1e-6): drop it", c.name, FlowRealNVP, FlowSpline, FlowConvRealNVP)
		}
	}
	if m.FlowHidden != nil && len(m.FlowHidden) != 1 {
		return fmt.Errorf("algorithms: model.flow_hidden %v: model.flow %q takes one width, its conditioners' channels (unset: 32)", m.FlowHidden, FlowConvRealNVP)
	}
	if len(m.FlowHidden) == 1 && m.FlowHidden[0] > MaxConvWidth {
		return fmt.Errorf("algorithms: model.flow_hidden %v, want a width of 1 to %d channels", m.FlowHidden, MaxConvWidth)
	}
	if m.FlowBlocks > 64 {
		return fmt.Errorf("algorithms: model.flow_blocks %d: model.flow %q takes 1 to 64 couplings of each kind per scale (unset: 2)", m.FlowBlocks, FlowConvRealNVP)
	}
	return nil
}

// imageShape is the shape of the experiment's images as the image models
// take it, or an error naming the conv fields when it has none.
func (m Model) imageShape(exp *experiments.Experiment) (layers.ImageShape, error) {
	if exp.Image == nil || exp.Kind != experiments.KindImages {
		fields, need := m.convFields()
		why := exp.Name + " has no images"
		if exp.Kind == experiments.KindDataSet { // round 82 A3: images given as --data were said to be none
			why = "a data set (data.file, --data) trains MLP models on its rows, images flattened too"
		}
		return layers.ImageShape{}, fmt.Errorf("algorithms: %s %s an image experiment (mnist28, fashion-mnist, cifar10, mnist), and %s: set model.ebm to %q and model.flow to %q or %q",
			fields, need, why, EBMMLP, FlowRealNVP, FlowSpline)
	}
	return layers.ImageShape{C: exp.Image.Channels, H: exp.Image.Height, W: exp.Image.Width}, nil
}

// convFields names the conv fields set, for messages.
func (m Model) convFields() (fields, need string) {
	var f []string
	if m.EBM == EBMConv {
		f = append(f, fmt.Sprintf("model.ebm %q", EBMConv))
	}
	if m.Flow == FlowConvRealNVP {
		f = append(f, fmt.Sprintf("model.flow %q", FlowConvRealNVP))
	}
	need = "needs"
	if len(f) > 1 {
		need = "need"
	}
	return strings.Join(f, " and "), need
}

// imageEnergy is the conv EBM of the model for images of shape s.
func (m Model) imageEnergy(s layers.ImageShape) layers.ImageEnergy {
	return layers.ImageEnergy{Name: "net", Image: s, Channels: m.EBMChannels}
}

// imageFlow is the conv RealNVP of the model for images of shape s, with
// the defaults of layers.ImageRealNVP where flow_blocks and flow_hidden
// are unset.
func (m Model) imageFlow(s layers.ImageShape) layers.ImageRealNVP {
	r := layers.ImageRealNVP{Image: s, Checkerboard: m.FlowBlocks, ChannelWise: m.FlowBlocks}
	if len(m.FlowHidden) == 1 {
		r.Hidden = m.FlowHidden[0]
	}
	return r
}

// CheckImage refuses conv models outside image experiments, and image
// models that do not fit the experiment's images (a conv RealNVP needs
// their height and width divisible by 4), naming the fields.
func (m Model) CheckImage(exp *experiments.Experiment) error {
	if !m.Conv() {
		return nil
	}
	s, err := m.imageShape(exp)
	if err != nil {
		return err
	}
	if m.EBM == EBMConv {
		if _, err := m.imageEnergy(s).Layers(); err != nil {
			return fmt.Errorf("algorithms: model.ebm %q with model.ebm_channels %v on %s's %v images: %w", EBMConv, m.imageEnergy(s).WithDefaults().Channels, exp.Name, s, err)
		}
	}
	if m.Flow == FlowConvRealNVP && m.FlowONNX == nil {
		if _, err := m.imageFlow(s).Couplings(); err != nil {
			return fmt.Errorf("algorithms: model.flow %q on %s's %v images: %w", FlowConvRealNVP, exp.Name, s, err)
		}
	}
	return nil
}

// EnergyNet is the run's energy network for data of d dimensions, images
// of shape image for the image experiments (nil otherwise): the MLP of
// model.ebm_hidden, or for model.ebm "conv" the image EBM of
// model.ebm_channels, with E ≡ 0 at start either way.
func (m Model) EnergyNet(d int, image *experiments.ImageShape) (graph.EnergyNet, error) {
	if m.EBM == EBMConv {
		s, err := m.shapeOf(d, image)
		if err != nil {
			return nil, err
		}
		return m.imageEnergy(s), nil
	}
	m = m.WithDefaults()
	return graph.MLPEnergy{MLP: layers.MLP{Name: "net", Sizes: append(append([]int{d}, m.EBMHidden...), 1),
		Hidden: layers.LeakyReLU(m.EBMSlope), Layout: layers.Sequential, LastWeightInit: layers.Zeros, LastBiasInit: layers.Zeros}}, nil
}

// FlowNetFor is the map of the run's own flow (not model.flow_onnx's)
// for data of d dimensions, images of shape image (nil: none): FlowNet's,
// or for model.flow "conv-realnvp" the image RealNVP of those images.
func (m Model) FlowNetFor(d int, image *experiments.ImageShape) (graph.FlowNet, error) {
	if m.Flow == FlowConvRealNVP {
		s, err := m.shapeOf(d, image)
		if err != nil {
			return nil, err
		}
		return m.imageFlow(s), nil
	}
	return m.FlowNet(d), nil
}

// shapeOf is the layers' shape of image, which must have d values, or an
// error naming the conv fields without images.
func (m Model) shapeOf(d int, image *experiments.ImageShape) (layers.ImageShape, error) {
	if image == nil {
		fields, need := m.convFields()
		return layers.ImageShape{}, fmt.Errorf("algorithms: %s %s an image experiment (mnist28, fashion-mnist, cifar10, mnist): the data have no image shape", fields, need)
	}
	s := layers.ImageShape{C: image.Channels, H: image.Height, W: image.Width}
	if s.Dim() != d {
		return layers.ImageShape{}, fmt.Errorf("algorithms: images of shape %v have %d values, the data %d", s, s.Dim(), d)
	}
	return s, nil
}
