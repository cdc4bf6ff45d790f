// Package checkpoint stores models as a folder holding spec.json (the
// architecture) and weights.npz (parameters with PyTorch-style names), so
// that a model can be rebuilt and reloaded, by flowebm or by a few lines of
// NumPy/PyTorch.
//
// spec.json, format "flowebm-checkpoint/1":
//
//	{
//	  "format": "flowebm-checkpoint/1",
//	  "dtype": "float64",                       // or "float32"
//	  "base_sigma": [1.5, 1.5],                 // σ of the base ρ = N(0, diag σ²), the EBM's tilt
//	  "ebm": {"sizes": [2, 32, 64, 64, 64, 1],  // MLP energy d→…→1
//	          "activation": "leaky_relu(0.05)",
//	          "layout": "sequential",           // names net.0, net.2, … ("modulelist": net.0, net.1, …)
//	          "name": "net"},
//	  "flow": {"dim": 2, "blocks": 4, "block_depth": 1, "hidden": [16],
//	           "activation": "relu", "mask": "half", "name": "couplings"},
//	  "standardization": {"shift": [..], "scale": [..]}  // optional, see below
//	}
//
// "flow" above is a RealNVP (layers.RealNVP). A neural spline flow
// (layers.SplineFlow) adds "kind": "spline" and its spline's settings, and
// has no block_depth:
//
//	"flow": {"kind": "spline", "dim": 2, "blocks": 4, "hidden": [16],
//	         "activation": "relu", "mask": "half", "name": "splines",
//	         "bins": 8, "tail_bound": 5, "min_bin_width": 0.001,
//	         "min_bin_height": 0.001, "min_derivative": 0.001}
//
// A flow without "kind" (every checkpoint written before the spline flow,
// and every RealNVP's since) is a RealNVP; another kind is refused. The
// image models have "kind": "conv" (the EBM, layers.ImageEnergy, without
// "sizes" and "layout") and "kind": "conv-realnvp" (the flow,
// layers.ImageRealNVP); conv.go shows their fields. An EBM without "kind"
// is an MLP.
//
// Models trained on a user's data set live in standardised coordinates
// z = (x − shift) / scale; "standardization" then gives the map to the
// data's units x, and Models.Energy evaluates the model there.
//
// weights.npz holds "ebm.<name>" and "flow.<name>" members, e.g.
// "ebm.net.0.weight" (32, 2) and "flow.couplings.0.s.0.weight" (16, 2)
// (a spline flow's "flow.splines.0.net.0.weight" (16, 1)), in the spec's
// dtype. "flow" is omitted for models without a flow.
package checkpoint

import (
	"archive/zip"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/big"
	"math/bits"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/gonum/mat"
	"gorgonia.org/tensor"

	"github.com/flowebm/flowebm/graph"
	"github.com/flowebm/flowebm/internal/jsonfile"
	"github.com/flowebm/flowebm/internal/textclip"
	"github.com/flowebm/flowebm/io/data"
	"github.com/flowebm/flowebm/io/npy"
	"github.com/flowebm/flowebm/io/npz"
	"github.com/flowebm/flowebm/io/onnx"
	"github.com/flowebm/flowebm/io/safefile"
	"github.com/flowebm/flowebm/layers"
)

// Format is the value of spec.json's "format" field.
const Format = "flowebm-checkpoint/1"

// EBMSpec describes an MLP energy network or, with Kind EBMKindConv, a
// convolutional one (layers.ImageEnergy).
type EBMSpec struct {
	// Kind is EBMKindConv for a conv EBM; "" (every checkpoint before
	// it, and every MLP's since) or EBMKindMLP for an MLP.
	Kind       string `json:"kind,omitempty"`
	Sizes      []int  `json:"sizes,omitempty"` // the MLP's
	Activation string `json:"activation"`
	Layout     string `json:"layout,omitempty"` // the MLP's (always written for it)
	Name       string `json:"name"`
	// The conv EBM's (see layers.ImageEnergy), written in full: Image is
	// [C, H, W], Channels the stages' widths, Blocks the residual blocks
	// per stage (0: none), Downsample "conv" or "avgpool". An MLP has none.
	Image      []int  `json:"image,omitempty"`
	Channels   []int  `json:"channels,omitempty"`
	Blocks     int    `json:"blocks,omitempty"`
	Downsample string `json:"downsample,omitempty"`
}

// The flow kinds of FlowSpec.Kind.
const (
	FlowKindRealNVP     = "realnvp"      // layers.RealNVP; also an absent kind
	FlowKindSpline      = "spline"       // layers.SplineFlow
	FlowKindConvRealNVP = "conv-realnvp" // layers.ImageRealNVP
)

// The EBM kinds of EBMSpec.Kind.
const (
	EBMKindMLP  = "mlp"  // graph.MLPEnergy; also an absent kind
	EBMKindConv = "conv" // layers.ImageEnergy
)

// FlowSpec describes a RealNVP (layers.RealNVP), with Kind
// FlowKindSpline a neural spline flow (layers.SplineFlow), or with Kind
// FlowKindConvRealNVP a conv RealNVP (layers.ImageRealNVP).
type FlowSpec struct {
	// Kind is FlowKindSpline for a spline flow, FlowKindConvRealNVP for a
	// conv RealNVP; "" (a RealNVP's, as every checkpoint before the spline
	// flow) or FlowKindRealNVP for a RealNVP.
	Kind       string `json:"kind,omitempty"`
	Dim        int    `json:"dim"`
	Blocks     int    `json:"blocks,omitempty"`      // the MLP flows' (always written, ≥ 1)
	BlockDepth int    `json:"block_depth,omitempty"` // the RealNVP's (always written, ≥ 1); a spline flow has none
	Hidden     []int  `json:"hidden"`
	Activation string `json:"activation"`
	Mask       string `json:"mask"`
	MaskWidth  int    `json:"mask_width,omitempty"`
	Name       string `json:"name"`
	// The spline flow's spline (layers.RQSpline), written in full; absent
	// fields take layers.RQSpline's defaults. A RealNVP has none.
	Bins          int     `json:"bins,omitempty"`
	TailBound     float64 `json:"tail_bound,omitempty"`
	MinBinWidth   float64 `json:"min_bin_width,omitempty"`
	MinBinHeight  float64 `json:"min_bin_height,omitempty"`
	MinDerivative float64 `json:"min_derivative,omitempty"`
	// The conv RealNVP's (layers.ImageRealNVP), written in full: Image is
	// [C, H, W], Scales its scales, Checkerboard and Channel its couplings
	// of each kind per scale (0: none), ResBlocks its conditioners'
	// residual blocks (0: none), Dt the couplings' step, InitScale its
	// heads' initial scale; Hidden is one width, the conditioners'.
	Image        []int   `json:"image,omitempty"`
	Scales       int     `json:"scales,omitempty"`
	Checkerboard int     `json:"checkerboard,omitempty"`
	Channel      int     `json:"channel,omitempty"`
	ResBlocks    int     `json:"res_blocks,omitempty"`
	Dt           float64 `json:"dt,omitempty"`
	InitScale    float64 `json:"init_scale,omitempty"`
}

// spline reports whether f is a spline flow's spec.
func (f *FlowSpec) spline() bool { return f.Kind == FlowKindSpline }

// rqSpline is the spline of a spline flow's spec, with the defaults.
func (f *FlowSpec) rqSpline() layers.RQSpline {
	return layers.RQSpline{Bins: f.Bins, TailBound: f.TailBound, MinBinWidth: f.MinBinWidth, MinBinHeight: f.MinBinHeight, MinDerivative: f.MinDerivative}.WithDefaults()
}

// ONNXFlowSpec names the files of a flow kept as ONNX.
type ONNXFlowSpec struct {
	Sample  string `json:"sample"`
	Density string `json:"density"`
}

// The files of an ONNX flow in a checkpoint folder.
const (
	FlowSampleFile  = "flow_sample.onnx"
	FlowDensityFile = "flow_density.onnx"
)

// MinBaseSigma and MaxBaseSigma bound the σ of a base ρ = N(0, σ²I), in a
// checkpoint as in a run's configuration (model.base_sigma): beyond them
// the base's density and energies of data leave float64's range.
const (
	MinBaseSigma = 1e-150
	MaxBaseSigma = 1e150
)

// BaseSigmaRange names [MinBaseSigma, MaxBaseSigma] in messages.
const BaseSigmaRange = "[1e-150, 1e150]"

// ValidBaseSigma reports whether σ lies in [MinBaseSigma, MaxBaseSigma]
// (false for NaN).
func ValidBaseSigma(sigma float64) bool { return sigma >= MinBaseSigma && sigma <= MaxBaseSigma }

// Spec is the content of spec.json.
type Spec struct {
	Format    string    `json:"format"`
	Dtype     string    `json:"dtype"`
	BaseSigma []float64 `json:"base_sigma"`
	EBM       EBMSpec   `json:"ebm"`
	Flow      *FlowSpec `json:"flow,omitempty"`
	// FlowONNX, instead of Flow, is a flow read from ONNX (io/onnx.ReadFlow),
	// kept in the checkpoint folder as FlowSampleFile and FlowDensityFile
	// with the checkpoint's weights.
	FlowONNX *ONNXFlowSpec `json:"flow_onnx,omitempty"`
	// Standardization maps the models' coordinates to the data's units
	// (absent: they are the data's units).
	Standardization *data.Scaling `json:"standardization,omitempty"`
	// PointShape is the shape of one point of the data the models were
	// trained on, where the data file held points of two axes or more
	// ((n, C, H, W) images: [C, H, W]); absent: rows of d values.
	PointShape []int `json:"point_shape,omitempty"`
}

// Models are the models a checkpoint holds.
type Models struct {
	EBM  *graph.EBM
	Flow *graph.Flow // may be nil
	// Scaling maps the models' coordinates to the data's units (nil: the
	// identity).
	Scaling *data.Scaling
	// PointShape is the shape of one point of the training data where it
	// had two axes or more (nil: rows); points of another arrangement of
	// the same sizes are refused by the commands that read points.
	PointShape []int
}

// Energy writes, for every row of x (in the data's units), minus the log of
// the learned unnormalised density there, tilt and standardisation
// included: E(z) − log ρ(z) + Σ log scale with z the standardised x and ρ
// the normalised base N(0, diag σ²). exp(−energy) thus integrates over the
// data space to the EBM's normaliser Z = ∫ exp(−E) ρ (1 at
// initialisation), and sums over a grid to the model's mass there (× Z).
func (m Models) Energy(x mat.Matrix, energy []float64) error {
	return m.EnergyGrad(x, energy, nil)
}

// EnergyGrad is Energy that also writes ∇ₓ of the energy (in the data's
// units) into grad, unless grad is nil.
func (m Models) EnergyGrad(x mat.Matrix, energy []float64, grad *mat.Dense) error {
	z := x
	if m.Scaling != nil {
		z = m.Scaling.FromData(x)
	}
	var err error
	if grad == nil {
		err = m.EBM.LogDensity(z, energy)
	} else {
		err = m.EBM.LogDensityGrad(z, energy, grad)
	}
	if err != nil {
		return err
	}
	logdet := 0.0
	if m.Scaling != nil {
		logdet = m.Scaling.LogDet()
	}
	for i := range energy {
		energy[i] = logdet - energy[i]
	}
	if grad != nil {
		// ∇ₓ = −∇_z log p̃ / scale, coordinate by coordinate.
		r, c := grad.Dims()
		for i := 0; i < r; i++ {
			for j := 0; j < c; j++ {
				s := 1.0
				if m.Scaling != nil {
					s = m.Scaling.Scale[j]
				}
				grad.Set(i, j, -grad.At(i, j)/s)
			}
		}
	}
	return nil
}

// SpecOf describes m. The EBM's network must be a graph.MLPEnergy.
func SpecOf(m Models) (Spec, error) {
	s := Spec{Format: Format, Dtype: m.EBM.Params.Dtype().String()}
	switch net := m.EBM.Net.(type) {
	case graph.MLPEnergy:
		s.EBM = EBMSpec{Sizes: net.Sizes, Activation: net.Hidden.String(), Layout: layoutName(net.Layout), Name: net.Name}
	case layers.ImageEnergy:
		s.EBM = convEBMSpec(net)
	default:
		return Spec{}, fmt.Errorf("checkpoint: energy network %T cannot be described (only MLP and conv energies can)", m.EBM.Net)
	}
	if m.EBM.Tilt != nil {
		s.BaseSigma = m.EBM.Tilt.Sigma
	}
	if m.Scaling != nil {
		if err := m.Scaling.Validate(); err != nil {
			return Spec{}, fmt.Errorf("checkpoint: standardization: %w", err)
		}
		if m.Scaling.Dim() != m.EBM.Dim() {
			return Spec{}, fmt.Errorf("checkpoint: standardization has %d coordinates, the EBM %d", m.Scaling.Dim(), m.EBM.Dim())
		}
		s.Standardization = m.Scaling
	}
	if m.PointShape != nil {
		if err := checkPointShape(m.PointShape, m.EBM.Dim()); err != nil {
			return Spec{}, fmt.Errorf("checkpoint: %w", err)
		}
		s.PointShape = m.PointShape
	}
	if m.Flow != nil && s.BaseSigma == nil {
		s.BaseSigma = m.Flow.Base.Sigma
	}
	if m.Flow == nil {
		return s, nil
	}
	switch n := m.Flow.Net.(type) {
	case *onnx.FlowNet:
		s.FlowONNX = &ONNXFlowSpec{Sample: FlowSampleFile, Density: FlowDensityFile}
	case layers.RealNVP:
		s.Flow = realNVPSpec(n)
	case layers.SplineFlow:
		s.Flow = splineSpec(n)
	case layers.ImageRealNVP:
		s.Flow = convFlowSpec(n)
	default:
		return Spec{}, fmt.Errorf("checkpoint: the flow is %T; a checkpoint stores flowebm's RealNVP, its neural spline flow, its conv RealNVP or a flow read from ONNX", m.Flow.Net)
	}
	return s, nil
}

// splineSpec describes a SplineFlow, its spline in full.
func splineSpec(n layers.SplineFlow) *FlowSpec {
	act := n.Activation
	if act == (layers.Activation{}) {
		act = layers.ReLU
	}
	sp := n.Spline.WithDefaults()
	return &FlowSpec{Kind: FlowKindSpline, Dim: n.Dim, Blocks: n.Blocks, Hidden: n.Hidden,
		Activation: act.String(), Mask: or(n.Mask, layers.MaskHalf), MaskWidth: n.MaskWidth, Name: or(n.Name, "splines"),
		Bins: sp.Bins, TailBound: sp.TailBound, MinBinWidth: sp.MinBinWidth, MinBinHeight: sp.MinBinHeight, MinDerivative: sp.MinDerivative}
}

// realNVPSpec describes a RealNVP.
func realNVPSpec(n layers.RealNVP) *FlowSpec {
	act := n.Activation
	if act == (layers.Activation{}) {
		act = layers.ReLU
	}
	return &FlowSpec{Dim: n.Dim, Blocks: n.Blocks, BlockDepth: max(n.BlockDepth, 1), Hidden: n.Hidden,
		Activation: act.String(), Mask: or(n.Mask, layers.MaskHalf), MaskWidth: n.MaskWidth, Name: or(n.Name, "couplings")}
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func layoutName(l layers.Layout) string {
	if l == layers.Sequential {
		return "sequential"
	}
	return "modulelist"
}

// Limits on what spec.json may describe, checked before anything is
// allocated, so that a corrupt or hostile spec is refused with the field at
// fault rather than exhausting memory.
const (
	maxSize      = 1 << 20 // one layer width, flow.dim
	maxLayers    = 1024    // linear layers of the EBM, of one s or t MLP
	maxBlocks    = 1024    // flow.blocks, flow.block_depth
	maxArrays    = 1 << 16 // parameter arrays in all
	maxUnrolled  = 1 << 16 // linear layers of one flow pass (blocks·depth·4·layers)
	maxStringLen = 256     // activation, layout, mask, names
	maxSpecBytes = 256 << 20
)

// maxParams bounds the parameter count a spec may imply (2^28: 2 GiB of
// float64). A variable so that the fuzz tests can lower it.
var maxParams int64 = 1 << 28

// countParams returns the number of parameters (weights and biases) and
// parameter arrays of an MLP with the given widths, exactly.
func countParams(sizes []int) (*big.Int, int) {
	n := new(big.Int)
	for i := 0; i+1 < len(sizes); i++ {
		in, out := big.NewInt(int64(sizes[i])), big.NewInt(int64(sizes[i+1]))
		n.Add(n, in.Mul(in, out))
		n.Add(n, out)
	}
	return n, 2 * (len(sizes) - 1)
}

func checkString(field, v string) error {
	if len(v) > maxStringLen {
		return fmt.Errorf("spec.json: field %q is %d bytes long (%q), want at most %d", field, len(v), textclip.Cut(v, 32), maxStringLen)
	}
	return nil
}

func checkSizes(field string, sizes []int) error {
	for i, v := range sizes {
		if v < 1 || v > maxSize {
			return fmt.Errorf("spec.json: field %q has %d at index %d, want sizes in 1..2^20", field, v, i)
		}
	}
	return nil
}

// validate checks every field of s and the parameter count it implies,
// allocating nothing in proportion to the sizes it describes.
func (s Spec) validate() error {
	if s.Format != Format {
		return fmt.Errorf("spec.json: field \"format\" is %q, want %q", clip(s.Format), Format)
	}
	if s.Dtype != "float64" && s.Dtype != "float32" {
		return fmt.Errorf("spec.json: field \"dtype\" is %q, want \"float32\" or \"float64\"", clip(s.Dtype))
	}
	for _, c := range []struct{ field, v string }{{"ebm.kind", s.EBM.Kind}, {"ebm.activation", s.EBM.Activation}, {"ebm.layout", s.EBM.Layout}, {"ebm.name", s.EBM.Name}, {"ebm.downsample", s.EBM.Downsample}} {
		if err := checkString(c.field, c.v); err != nil {
			return err
		}
	}
	var total *big.Int
	var arrays int
	var err error
	switch s.EBM.Kind {
	case "", EBMKindMLP:
		total, arrays, err = s.EBM.validateMLP()
	case EBMKindConv:
		total, arrays, err = s.EBM.validateConv()
	default:
		err = fmt.Errorf("spec.json: field \"ebm.kind\" is %q, want %q or %q (absent: %q)", clip(s.EBM.Kind), EBMKindMLP, EBMKindConv, EBMKindMLP)
	}
	if err != nil {
		return err
	}
	d := s.Dim()
	if len(s.BaseSigma) != d {
		return fmt.Errorf("spec.json: field \"base_sigma\" has %d values, want %d (the dimension, %s)", len(s.BaseSigma), d, s.dimField())
	}
	for i, v := range s.BaseSigma {
		if !ValidBaseSigma(v) {
			return fmt.Errorf("spec.json: field \"base_sigma\" has %g at index %d, want σ in %s", v, i, BaseSigmaRange)
		}
	}
	if s.PointShape != nil {
		if err := checkPointShape(s.PointShape, d); err != nil {
			return fmt.Errorf("spec.json: field %w", err)
		}
	}
	if err := s.validateFlowONNX(); err != nil {
		return err
	}
	if s.Flow == nil {
		return nil
	}
	if s.Flow.Kind == FlowKindConvRealNVP && s.EBM.Kind == EBMKindConv && !slices.Equal(s.Flow.Image, s.EBM.Image) {
		return fmt.Errorf("spec.json: field \"flow.image\" is %v, \"ebm.image\" %v: want the same images", clipInts(s.Flow.Image), clipInts(s.EBM.Image))
	}
	return s.Flow.validate(d, total, arrays)
}

// maxPointAxes bounds the axes of point_shape (NumPy's arrays have at most
// 64, one of them the points').
const maxPointAxes = 63

// checkPointShape checks a point_shape: two axes or more, each at least 1,
// their product the dimension d.
func checkPointShape(shape []int, d int) error {
	if len(shape) < 2 || len(shape) > maxPointAxes {
		return fmt.Errorf("\"point_shape\" has %d sizes, want 2 to %d (absent for rows of d values)", len(shape), maxPointAxes)
	}
	n := 1
	for _, s := range shape {
		if s < 1 || s > d {
			return fmt.Errorf("\"point_shape\" is %s, want sizes in 1..%d whose product is %d (the dimension)", clipInts(shape), d, d)
		}
		n *= s
		if n > d {
			break
		}
	}
	if n != d {
		return fmt.Errorf("\"point_shape\" is %s, want sizes whose product is %d (the dimension)", clipInts(shape), d)
	}
	return nil
}

// validateMLP checks the fields of an MLP EBM's spec, and returns its
// parameter count and arrays.
func (e EBMSpec) validateMLP() (*big.Int, int, error) {
	for _, c := range []struct {
		field string
		set   bool
	}{{"image", e.Image != nil}, {"channels", e.Channels != nil}, {"blocks", e.Blocks != 0}, {"downsample", e.Downsample != ""}} {
		if c.set {
			return nil, 0, fmt.Errorf("spec.json: field \"ebm.%s\" is a conv EBM's, but \"ebm.kind\" is %q: want \"kind\": %q with it, or no %s", c.field, or(e.Kind, EBMKindMLP), EBMKindConv, c.field)
		}
	}
	if len(e.Sizes) < 2 || e.Sizes[len(e.Sizes)-1] != 1 {
		return nil, 0, fmt.Errorf("spec.json: field \"ebm.sizes\" is %v, want at least [d, 1] ending in 1", clipInts(e.Sizes))
	}
	if l := len(e.Sizes) - 1; l > maxLayers {
		return nil, 0, fmt.Errorf("spec.json: field \"ebm.sizes\" describes %d layers, want at most %d", l, maxLayers)
	}
	if err := checkSizes("ebm.sizes", e.Sizes); err != nil {
		return nil, 0, err
	}
	total, arrays := countParams(e.Sizes)
	if total.Cmp(big.NewInt(maxParams)) > 0 {
		return nil, 0, fmt.Errorf("spec.json: field \"ebm.sizes\" %v implies %v parameters, want at most %d (2^%d)", clipInts(e.Sizes), total, maxParams, bits.Len64(uint64(maxParams))-1)
	}
	if e.Activation == "" {
		return nil, 0, fmt.Errorf("spec.json: field \"ebm.activation\" is missing or empty, want the hidden layers' activation (\"leaky_relu(0.05)\", \"relu\", \"identity\", …)")
	}
	return total, arrays, nil
}

// Dim is the dimension of the spec's models (after validate): the MLP's
// input width, or the conv EBM's C·H·W.
func (s Spec) Dim() int {
	if s.EBM.Kind == EBMKindConv {
		return imageDim(s.EBM.Image)
	}
	if len(s.EBM.Sizes) == 0 {
		return 0
	}
	return s.EBM.Sizes[0]
}

// dimField names the field that gives the dimension, for messages.
func (s Spec) dimField() string {
	if s.EBM.Kind == EBMKindConv {
		return "the product of ebm.image"
	}
	return "ebm.sizes[0]"
}

// validateFlowONNX checks the files a flow_onnx names.
func (s Spec) validateFlowONNX() error {
	o := s.FlowONNX
	if o == nil {
		return nil
	}
	if s.Flow != nil {
		return fmt.Errorf("spec.json: fields \"flow\" and \"flow_onnx\" both given, want one flow")
	}
	if o.Sample != FlowSampleFile || o.Density != FlowDensityFile {
		return fmt.Errorf("spec.json: field \"flow_onnx\" names %q and %q, want %q and %q", clip(o.Sample), clip(o.Density), FlowSampleFile, FlowDensityFile)
	}
	return nil
}

// validate checks a flow's fields in dimension d, with the EBM's total
// parameters and arrays.
func (f *FlowSpec) validate(d int, total *big.Int, arrays int) error {
	if f.Kind != "" && f.Kind != FlowKindRealNVP && f.Kind != FlowKindSpline && f.Kind != FlowKindConvRealNVP {
		return fmt.Errorf("spec.json: field \"flow.kind\" is %q, want %q or %q (the MLP flows; absent: %q) or %q (the image RealNVP)", clip(f.Kind), FlowKindRealNVP, FlowKindSpline, FlowKindRealNVP, FlowKindConvRealNVP)
	}
	if f.Kind == FlowKindConvRealNVP {
		return f.validateConv(d, total, arrays)
	}
	if err := f.noConvFields(); err != nil {
		return err
	}
	for _, c := range []struct{ field, v string }{{"flow.activation", f.Activation}, {"flow.mask", f.Mask}, {"flow.name", f.Name}} {
		if err := checkString(c.field, c.v); err != nil {
			return err
		}
	}
	if f.Activation == "" {
		return fmt.Errorf("spec.json: field \"flow.activation\" is missing or empty, want the coupling networks' activation (\"relu\", …)")
	}
	if f.Dim != d {
		return fmt.Errorf("spec.json: field \"flow.dim\" is %d, want %d (the EBM's dimension)", f.Dim, d)
	}
	if f.Dim < 2 {
		return fmt.Errorf("spec.json: field \"flow.dim\" is %d, want at least 2 (a coupling flow needs two coordinates)", f.Dim)
	}
	if f.Blocks < 1 || f.Blocks > maxBlocks {
		return fmt.Errorf("spec.json: field \"flow.blocks\" is %d, want 1..%d", f.Blocks, maxBlocks)
	}
	if f.spline() {
		if err := f.validateSpline(); err != nil {
			return err
		}
	} else {
		if err := f.validateRealNVP(); err != nil {
			return err
		}
	}
	if len(f.Hidden) >= maxLayers {
		return fmt.Errorf("spec.json: field \"flow.hidden\" has %d widths, want at most %d", len(f.Hidden), maxLayers-1)
	}
	if err := checkSizes("flow.hidden", f.Hidden); err != nil {
		return err
	}
	if f.Mask == layers.MaskCheckerboard2D && (f.MaskWidth <= 0 || f.MaskWidth > f.Dim || f.Dim%f.MaskWidth != 0) {
		return fmt.Errorf("spec.json: field \"flow.mask_width\" is %d, want a width dividing flow.dim %d", f.MaskWidth, f.Dim)
	}
	layersPerMLP := len(f.Hidden) + 1
	if u := int64(f.Blocks) * int64(max(f.BlockDepth, 1)) * int64(f.netsPerBlock()) * int64(layersPerMLP); u > maxUnrolled {
		return fmt.Errorf("spec.json: fields \"flow.blocks\" %d, \"flow.block_depth\" %d and \"flow.hidden\" (%d widths) imply %d linear layers per pass, want at most %d",
			f.Blocks, f.BlockDepth, len(f.Hidden), u, maxUnrolled)
	}
	flowN, flowArrays, err := f.params()
	if err != nil {
		return err
	}
	if flowN.Cmp(big.NewInt(maxParams)) > 0 {
		return fmt.Errorf("spec.json: fields \"flow.dim\" %d, \"flow.hidden\" %v and \"flow.blocks\" %d imply %v flow parameters, want at most %d (2^%d)",
			f.Dim, clipInts(f.Hidden), f.Blocks, flowN, maxParams, bits.Len64(uint64(maxParams))-1)
	}
	total.Add(total, flowN)
	if total.Cmp(big.NewInt(maxParams)) > 0 {
		return fmt.Errorf("spec.json: fields \"ebm\" and \"flow\" imply %v parameters in all, want at most %d (2^%d)", total, maxParams, bits.Len64(uint64(maxParams))-1)
	}
	if arrays += flowArrays; arrays > maxArrays {
		return fmt.Errorf("spec.json: fields \"ebm.sizes\", \"flow.blocks\" and \"flow.hidden\" imply %d parameter arrays, want at most %d", arrays, maxArrays)
	}
	return nil
}

// validateRealNVP checks the fields of a RealNVP's spec: its block depth,
// and none of a spline's.
func (f *FlowSpec) validateRealNVP() error {
	if f.BlockDepth < 0 || f.BlockDepth > maxBlocks {
		return fmt.Errorf("spec.json: field \"flow.block_depth\" is %d, want 0..%d (0 means 1)", f.BlockDepth, maxBlocks)
	}
	for _, c := range []struct {
		field string
		set   bool
	}{{"bins", f.Bins != 0}, {"tail_bound", f.TailBound != 0}, {"min_bin_width", f.MinBinWidth != 0},
		{"min_bin_height", f.MinBinHeight != 0}, {"min_derivative", f.MinDerivative != 0}} {
		if c.set {
			return fmt.Errorf("spec.json: field \"flow.%s\" is a spline flow's, but \"flow.kind\" is %q: want \"kind\": %q with it, or no %s", c.field, or(f.Kind, FlowKindRealNVP), FlowKindSpline, c.field)
		}
	}
	return nil
}

// validateSpline checks the fields of a spline flow's spec: no block
// depth beyond 1, a known mask, and its spline (absent fields: the
// defaults).
func (f *FlowSpec) validateSpline() error {
	if f.BlockDepth != 0 && f.BlockDepth != 1 {
		return fmt.Errorf("spec.json: field \"flow.block_depth\" is %d, but a spline flow (\"flow.kind\" %q) has no repeated blocks: want it absent (or 1)", f.BlockDepth, FlowKindSpline)
	}
	switch f.Mask {
	case "", layers.MaskHalf, layers.MaskCheckerboard, layers.MaskCheckerboard2D:
	default:
		return fmt.Errorf("spec.json: field \"flow.mask\" is %q, want %q, %q or %q", clip(f.Mask), layers.MaskHalf, layers.MaskCheckerboard, layers.MaskCheckerboard2D)
	}
	sp := f.rqSpline()
	k := float64(sp.Bins)
	for _, c := range []struct {
		field string
		v     any
		bad   bool
		want  string
	}{
		{"bins", sp.Bins, sp.Bins < 2 || sp.Bins > 1<<16, "2..65536"},
		{"tail_bound", sp.TailBound, !(sp.TailBound > 0 && sp.TailBound <= MaxBaseSigma), "a bound B in (0, 1e150]: the spline maps [−B, B] onto itself"},
		{"min_bin_width", sp.MinBinWidth, !(sp.MinBinWidth > 0 && sp.MinBinWidth*k < 1), fmt.Sprintf("a width w > 0 with bins·w < 1 (%d bins)", sp.Bins)},
		{"min_bin_height", sp.MinBinHeight, !(sp.MinBinHeight > 0 && sp.MinBinHeight*k < 1), fmt.Sprintf("a height h > 0 with bins·h < 1 (%d bins)", sp.Bins)},
		{"min_derivative", sp.MinDerivative, !(sp.MinDerivative > 0 && sp.MinDerivative < 1), "a derivative in (0, 1)"},
	} {
		if c.bad {
			return fmt.Errorf("spec.json: field \"flow.%s\" is %v, want %s", c.field, c.v, c.want)
		}
	}
	if err := sp.Validate(); err != nil { // anything the checks above missed
		return fmt.Errorf("spec.json: field \"flow\": %w", err)
	}
	return nil
}

// netsPerBlock is the number of MLPs of one block: a RealNVP's two
// couplings have an s and a t net each, a spline flow's one conditioner.
func (f *FlowSpec) netsPerBlock() int {
	if f.spline() {
		return 2
	}
	return 4
}

// params returns the flow's parameter count and parameter arrays, exactly,
// allocating nothing in proportion to its sizes (after the checks of
// validate up to the mask's width).
func (f *FlowSpec) params() (*big.Int, int, error) {
	if f.Kind == FlowKindConvRealNVP {
		n, arrays := f.convParams()
		return n, arrays, nil
	}
	if !f.spline() {
		perMLP, perArrays := countParams(append(append([]int{f.Dim}, f.Hidden...), f.Dim))
		return perMLP.Mul(perMLP, big.NewInt(4*int64(f.Blocks))), 4 * f.Blocks * perArrays, nil // 2·blocks couplings, each an s and a t MLP
	}
	// The odd couplings transform the n1 coordinates of the base mask
	// (layers.SplineFlow.BaseMask) from the other n0, the even ones the
	// n0 from the n1; each spline has 3K−1 parameters.
	d, n1 := f.Dim, 0
	switch f.Mask {
	case "", layers.MaskHalf:
		n1 = d - d/2
	case layers.MaskCheckerboard:
		n1 = d / 2
	case layers.MaskCheckerboard2D:
		w := f.MaskWidth
		rows := d / w
		n1 = (rows+1)/2*(w/2) + rows/2*(w-w/2) // even rows: odd columns; odd rows: even columns
	}
	n0 := d - n1
	if n0 < 1 || n1 < 1 {
		return nil, 0, fmt.Errorf("spec.json: field \"flow.mask\" %q leaves a coupling with nothing to transform or condition on in dimension %d", or(f.Mask, layers.MaskHalf), d)
	}
	p := f.rqSpline().ParamsPerCoord()
	even, arrays := countParams(append(append([]int{n1}, f.Hidden...), n0*p))
	odd, _ := countParams(append(append([]int{n0}, f.Hidden...), n1*p))
	n := even.Add(even, odd)
	return n.Mul(n, big.NewInt(int64(f.Blocks))), 2 * f.Blocks * arrays, nil
}

// clip shortens a string quoted in an error.
func clip(s string) string { return textclip.Cut(s, 64) }

// clipInts shortens a list of sizes quoted in an error.
func clipInts(v []int) string {
	if len(v) > 16 {
		return fmt.Sprintf("%v… (%d values)", v[:16], len(v))
	}
	return fmt.Sprint(v)
}

// checkDeclaredSize refuses a spec whose models would take more than
// 64 MiB when weights.npz does not hold that many values (read from its
// members' headers), before the models are built: a spec.json edited to
// huge layers made Load allocate gigabytes before it found that the
// weights did not fit. Smaller models get readWeights' precise messages.
func checkDeclaredSize(path string, spec Spec) error {
	pc, err := spec.ParamCount()
	if err != nil || pc*8 <= 64<<20 {
		return nil // Build reports a bad spec
	}
	zr, err := npz.OpenReader(path)
	if err != nil {
		return nil // readWeights reports it
	}
	defer zr.Close()
	total := 0
	for _, name := range zr.Names {
		h, err := zr.Header(name)
		if err != nil {
			return nil
		}
		n := 1
		for _, k := range h.Shape {
			n *= k
		}
		total += n
	}
	if total < pc {
		return fmt.Errorf("%s: its members hold %d values, but spec.json's models have %d parameters: the two files do not belong together", path, total, pc)
	}
	return nil
}

// ParamCount returns the number of parameters the spec's models have,
// after checking the spec as Build does.
func (s Spec) ParamCount() (int, error) {
	if err := s.validate(); err != nil {
		return 0, err
	}
	n, _ := countParams(s.EBM.Sizes)
	if s.EBM.Kind == EBMKindConv {
		n, _ = s.EBM.convParams()
	}
	if f := s.Flow; f != nil {
		m, _, err := f.params()
		if err != nil {
			return 0, err
		}
		n.Add(n, m)
	}
	return int(n.Int64()), nil
}

// Build constructs untrained models from a spec (weights initialised with
// rng, as a fresh model would be). Errors name the offending field. Every
// field is checked, and the parameter count bounded (2^28), before anything
// is allocated.
func (s Spec) Build(rng *rand.Rand) (Models, error) {
	if err := s.validate(); err != nil {
		return Models{}, err
	}
	dt := tensor.Float64
	if s.Dtype == "float32" {
		dt = tensor.Float32
	}
	act, err := layers.ParseActivation(s.EBM.Activation)
	if err != nil {
		return Models{}, fmt.Errorf("spec.json: field \"ebm.activation\": %w", err)
	}
	var net graph.EnergyNet
	if s.EBM.Kind == EBMKindConv {
		net = s.EBM.imageEnergy(act)
	} else {
		var layout layers.Layout
		switch s.EBM.Layout {
		case "sequential":
			layout = layers.Sequential
		case "modulelist":
			layout = layers.ModuleList
		default:
			return Models{}, fmt.Errorf("spec.json: field \"ebm.layout\" is %q, want \"sequential\" or \"modulelist\"", s.EBM.Layout)
		}
		net = graph.MLPEnergy{MLP: layers.MLP{Name: or(s.EBM.Name, "net"), Sizes: s.EBM.Sizes, Hidden: act, Layout: layout}}
	}
	d := s.Dim()
	base := layers.NewDiagonal(s.BaseSigma)
	if err := base.Validate(); err != nil {
		return Models{}, fmt.Errorf("spec.json: field \"base_sigma\": %w", err)
	}
	if sc := s.Standardization; sc != nil {
		if err := sc.Validate(); err != nil {
			return Models{}, fmt.Errorf("spec.json: field \"standardization\": %w", err)
		}
		if sc.Dim() != d {
			return Models{}, fmt.Errorf("spec.json: field \"standardization\" has %d coordinates, want %d (the dimension)", sc.Dim(), d)
		}
	}
	var flowNet graph.FlowNet
	if f := s.Flow; f != nil {
		fa, err := layers.ParseActivation(f.Activation)
		if err != nil {
			return Models{}, fmt.Errorf("spec.json: field \"flow.activation\": %w", err)
		}
		if f.Kind == FlowKindConvRealNVP {
			flowNet = f.imageRealNVP(fa)
		} else if f.spline() {
			sf := layers.SplineFlow{Dim: f.Dim, Blocks: f.Blocks, Hidden: f.Hidden, Activation: fa, Mask: f.Mask, MaskWidth: f.MaskWidth, Name: f.Name, Spline: f.rqSpline()}
			if _, err := sf.BaseMask(); err != nil {
				return Models{}, fmt.Errorf("spec.json: field \"flow.mask\": %w", err)
			}
			flowNet = sf
		} else {
			nvp := layers.RealNVP{Dim: f.Dim, Blocks: f.Blocks, BlockDepth: f.BlockDepth, Hidden: f.Hidden, Activation: fa, Mask: f.Mask, MaskWidth: f.MaskWidth, Name: f.Name}
			if _, err := nvp.BaseMask(); err != nil {
				return Models{}, fmt.Errorf("spec.json: field \"flow.mask\": %w", err)
			}
			flowNet = nvp
		}
	}
	ebm, err := graph.NewEBM(net, &base, dt, rng)
	if err != nil {
		return Models{}, fmt.Errorf("spec.json: ebm: %w", err)
	}
	m := Models{EBM: ebm, Scaling: s.Standardization, PointShape: s.PointShape}
	if s.Flow != nil {
		if m.Flow, err = graph.NewFlow(flowNet, base, dt, rng); err != nil {
			return Models{}, fmt.Errorf("spec.json: flow: %w", err)
		}
	}
	return m, nil
}

// Save writes dir/spec.json and dir/weights.npz, each atomically, creating
// dir if needed.
func Save(dir string, m Models) error {
	spec, err := SpecOf(m)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	arrays := map[string]*npy.Array{}
	add := func(prefix string, p *graph.Params) {
		for _, q := range p.List() {
			arrays[prefix+q.Name] = &npy.Array{Shape: q.Shape, Data: q.Float64s()}
		}
	}
	add("ebm.", m.EBM.Params)
	if m.Flow != nil {
		add("flow.", m.Flow.Params)
	}
	dt := npy.Float64
	if spec.Dtype == "float32" {
		dt = npy.Float32
	}
	if err := npz.WriteFile(filepath.Join(dir, "weights.npz"), arrays, dt); err != nil {
		return err
	}
	if spec.FlowONNX != nil {
		if err := saveONNXFlow(dir, m.Flow); err != nil {
			return err
		}
	}
	return safefile.Write(filepath.Join(dir, "spec.json"), func(w io.Writer) error {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(spec)
	})
}

// saveONNXFlow writes an ONNX flow's two graphs with its current weights.
func saveONNXFlow(dir string, f *graph.Flow) error {
	sb, db, err := onnx.EncodeFlowWeights(f)
	if err != nil {
		return err
	}
	if err := onnx.WriteFile(filepath.Join(dir, FlowSampleFile), sb); err != nil {
		return err
	}
	return onnx.WriteFile(filepath.Join(dir, FlowDensityFile), db)
}

// loadONNXFlow reads the ONNX flow of a checkpoint folder, in the spec's
// float type and base.
func loadONNXFlow(dir string, spec Spec) (*graph.Flow, error) {
	f, err := onnx.ReadFlow(filepath.Join(dir, FlowSampleFile), filepath.Join(dir, FlowDensityFile), onnx.FlowConfig{BaseSigma: spec.BaseSigma})
	if err != nil {
		return nil, err
	}
	if f.Params.Dtype().String() != spec.Dtype || f.Dim() != spec.Dim() {
		return nil, fmt.Errorf("%s: the flow is %v in dimension %d, spec.json says %s in dimension %d", dir, f.Params.Dtype(), f.Dim(), spec.Dtype, spec.Dim())
	}
	return f, nil
}

// Load rebuilds the models of dir/spec.json and sets their weights from
// dir/weights.npz. Every parameter must be present with its shape, in the
// spec's dtype and finite, and weights.npz must hold nothing else. spec.json
// is checked in full (the parameter count included) before anything is
// allocated, and a member of weights.npz is read only once its header
// matches the parameter it sets.
func Load(dir string) (Models, Spec, error) {
	if err := checkModelFiles(dir); err != nil {
		return Models{}, Spec{}, err
	}
	specPath := filepath.Join(dir, "spec.json")
	spec, err := readSpec(specPath)
	if err != nil {
		return Models{}, Spec{}, err
	}
	if err := checkDeclaredSize(filepath.Join(dir, "weights.npz"), spec); err != nil {
		return Models{}, Spec{}, err
	}
	m, err := spec.Build(rand.New(rand.NewPCG(0, 0)))
	if err != nil {
		// Build's errors start "spec.json: ": name the file in full.
		return Models{}, Spec{}, fmt.Errorf("%s%c%w", dir, filepath.Separator, err)
	}
	if spec.FlowONNX != nil {
		if m.Flow, err = loadONNXFlow(dir, spec); err != nil {
			return Models{}, Spec{}, err
		}
	}
	params := map[string]*graph.Param{}
	var order []string
	add := func(prefix string, p *graph.Params) {
		for _, q := range p.List() {
			params[prefix+q.Name] = q
			order = append(order, prefix+q.Name)
		}
	}
	add("ebm.", m.EBM.Params)
	if m.Flow != nil {
		add("flow.", m.Flow.Params)
	}
	if err := readWeights(filepath.Join(dir, "weights.npz"), spec.Dtype, params, order); err != nil {
		return Models{}, Spec{}, err
	}
	return m, spec, nil
}

// readSpec reads and decodes spec.json: one JSON object, no unknown fields,
// nothing after it.
func readSpec(path string) (Spec, error) {
	f, err := safefile.Open(path)
	if err != nil {
		return Spec{}, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxSpecBytes+1))
	if err != nil {
		return Spec{}, fmt.Errorf("%s: %w", path, err)
	}
	if len(b) > maxSpecBytes {
		return Spec{}, fmt.Errorf("%s: more than %d bytes, want a spec of at most %d (256 MiB)", path, maxSpecBytes, maxSpecBytes)
	}
	if t := bytes.TrimLeft(bytes.TrimPrefix(b, []byte("\uFEFF")), " \t\r\n"); len(t) == 0 || t[0] != '{' {
		what := "nothing"
		if len(t) > 0 {
			what = fmt.Sprintf("%q", clip(string(t)))
		}
		return Spec{}, fmt.Errorf("%s: want a JSON object {\"format\": %q, …}, found %s", path, Format, what)
	}
	var spec Spec
	if err := jsonfile.Decode(b, &spec, jsonfile.Options{}); err != nil {
		return Spec{}, fmt.Errorf("%s: %w", path, err)
	}
	return spec, nil
}

// readWeights sets params (named "ebm.…"/"flow.…", listed in order) from
// the .npz archive at path. A member is decoded only after its .npy header
// has the parameter's shape and dtype, so that no more is allocated than
// the parameters need; members not in params are refused unread.
func readWeights(path, dtype string, params map[string]*graph.Param, order []string) error {
	f, err := safefile.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	z, err := zip.NewReader(f, st.Size())
	if err != nil {
		return fmt.Errorf("%s: not a zip (.npz) archive: %w", path, err)
	}
	members := map[string]*zip.File{}
	var names, extra []string
	for _, zf := range z.File {
		name := strings.TrimSuffix(zf.Name, ".npy")
		if _, dup := members[name]; dup {
			return fmt.Errorf("%s: member %q appears twice", path, clip(name))
		}
		members[name] = zf
		names = append(names, name)
		if params[name] == nil {
			extra = append(extra, name)
		}
	}
	for _, name := range order {
		zf := members[name]
		if zf == nil {
			return fmt.Errorf("%s: no member %q, which spec.json's model needs (have %s)", path, name, list(names))
		}
		if err := readParam(path, name, zf, dtype, params[name]); err != nil {
			return err
		}
	}
	if len(extra) > 0 {
		return fmt.Errorf("%s: member(s) %s are not parameters of spec.json's model (spec.json and weights.npz disagree)", path, list(extra))
	}
	return nil
}

// list quotes up to 8 names.
func list(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	q := make([]string, 0, 9)
	for i, n := range names {
		if i == 8 {
			q = append(q, fmt.Sprintf("… (%d in all)", len(names)))
			break
		}
		q = append(q, strconv.Quote(clip(n)))
	}
	return strings.Join(q, ", ")
}

func readParam(path, name string, zf *zip.File, dtype string, q *graph.Param) error {
	fail := func(format string, args ...any) error {
		return fmt.Errorf("%s: member %q: %s", path, name, fmt.Sprintf(format, args...))
	}
	h, err := npz.MemberHeader(zf)
	if err != nil {
		return fail("%v", err)
	}
	want := "f8"
	if dtype == "float32" {
		want = "f4"
	}
	if len(h.Dtype) != 3 || !strings.ContainsRune("<>=|", rune(h.Dtype[0])) || h.Dtype[1:] != want {
		return fail("dtype %q, want %q (spec.json's dtype %s)", clip(h.Dtype), "<"+want, dtype)
	}
	if !slices.Equal(h.Shape, q.Shape) {
		return fail("shape %v, want %v", clipInts(h.Shape), q.Shape)
	}
	a, err := npz.ReadMember(zf)
	if err != nil {
		return fail("%v", err)
	}
	for i, v := range a.Data {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fail("value %v at index %d%s, want finite weights", v, i, position(i, q.Shape))
		}
	}
	if err := q.SetFloat64s(a.Data); err != nil {
		return fail("%v", err)
	}
	return nil
}

// position gives the multi-index of flat (C-order) index i in shape, for
// arrays of more than one dimension.
func position(i int, shape []int) string {
	if len(shape) < 2 {
		return ""
	}
	idx := make([]string, len(shape))
	for k := len(shape) - 1; k >= 0; k-- {
		idx[k] = strconv.Itoa(i % shape[k])
		i /= shape[k]
	}
	return " [" + strings.Join(idx, ", ") + "]"
}
