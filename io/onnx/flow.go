package onnx

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/gonum/mat"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/flowebm/flowebm/graph"
	"github.com/flowebm/flowebm/io/data"
	"github.com/flowebm/flowebm/io/safefile"
	"github.com/flowebm/flowebm/layers"
)

// A flow in ONNX is two graphs, as FlowSample and FlowDensity write them
// and as io/onnx/crosscheck/export_flow.py exports any PyTorch flow:
//
//   - the sampling graph: input z (batch, d), draws of the base ρ; outputs
//     "x" (batch, d) = T(z) and either "log_density" (batch) = log λ(x) or
//     "logdet" (batch) = log|det J_T(z)|;
//   - the density graph: input x (batch, d); output "log_density" (batch)
//     = log λ(x) and, optionally, "z" (batch, d) = T⁻¹(x), which NeuTra
//     needs.
//
// The base ρ is a Gaussian N(0, diag σ²): FlowConfig.BaseSigma, else the
// metadata_props key BaseSigmaKey of either file, else σ = 1.
const (
	FlowX          = "x"
	FlowLogDensity = "log_density"
	FlowLogDet     = "logdet"
	FlowLatent     = "z"
	// BaseSigmaKey is the metadata_props key giving the base's σ: one
	// number, or a JSON-style list of d numbers.
	BaseSigmaKey = "flowebm.base_sigma"
	// StandardizationKey is the metadata_props key of the data scaling
	// whose standardised coordinates a flow flowebm exported lives in
	// (JSON {"shift": […], "scale": […]}); absent: the data's own units.
	StandardizationKey = "flowebm.standardization"
)

// Standardization is the data scaling whose standardised coordinates the
// flow lives in, as flowebm's exports record it in its sampling graph's
// metadata (StandardizationKey); nil for graphs that record none (the
// data's own units), and an error for a record that is not a scaling of
// the flow's d coordinates. The graph read once serves (its metadata was
// decoded with it).
func (fn *FlowNet) Standardization() (*data.Scaling, error) {
	v, ok := fn.Sample.model.Metadata[StandardizationKey]
	if !ok {
		return nil, nil
	}
	d := fn.Dimension()
	var s data.Scaling
	if err := json.Unmarshal([]byte(v), &s); err != nil || len(s.Shift) != d || len(s.Scale) != d || slices.ContainsFunc(s.Scale, func(v float64) bool { return !(v > 0) || math.IsInf(v, 0) }) ||
		slices.ContainsFunc(s.Shift, func(v float64) bool { return math.IsNaN(v) || math.IsInf(v, 0) }) {
		return nil, fmt.Errorf("%s: metadata_props %q is %.80q, want {\"shift\": […], \"scale\": […]} of %d numbers each, finite, scales positive", fn.Sample.File, StandardizationKey, v, d)
	}
	return &s, nil
}

// FlowConfig selects the outputs of a flow's two graphs. The zero value
// follows the convention above.
type FlowConfig struct {
	// SampleX names the sampling graph's x output ("" means "x").
	SampleX string
	// SampleLogDensity names its log λ(x) output, or SampleLogDet its
	// log|det J_T(z)| output; both empty means whichever of
	// "log_density" and "logdet" the graph has.
	SampleLogDensity, SampleLogDet string
	// DensityOutput names the density graph's log λ(x) output ("" means
	// "log_density", or the graph's only output), or DensityLogDet its
	// log|det J_{T⁻¹}(x)| output, as a flow library's transform gives it
	// beside z (nflows' transform(x) → (z, logabsdet)): log λ(x) is then
	// log ρ(z) + log|det J_{T⁻¹}(x)|. Both empty with a graph that has
	// "logdet" and "z" but no "log_density" means those two.
	DensityOutput, DensityLogDet string
	// DensityLatent names its z = T⁻¹(x) output ("" means "z" if the graph
	// has one; without it the flow has no inverse and NeuTra refuses it).
	DensityLatent string
	// BaseSigma is the base's σ: one value for every coordinate or d
	// values. Nil: the files' metadata, else 1.
	BaseSigma []float64
	// Frozen loads the flow for sampling only: it may then have weights in
	// its sampling graph that its density graph does not read (a flow
	// exported with constant folding), which training could not keep tied.
	Frozen bool
}

// FlowNet is a flow read from ONNX: a graph.FlowNet and graph.DensityNet
// whose two graphs share their parameters by initializer name, so that a
// maximum-likelihood step on the density moves the sampling map with it.
// ReadFlow returns it inside a graph.Flow.
type FlowNet struct {
	Sample, Density *Net

	sampleX, sampleScalar string
	scalarIsLogDet        bool
	densityOut, latent    string
	densityIsLogDet       bool // densityOut is log|det J_{T⁻¹}(x)|, not log λ(x)
	base                  layers.Gaussian
	specs                 []layers.ParamSpec
	encoded               [2][]byte // the sampling and density models as read
}

// ReadFlow reads a flow from its sampling and density graphs, checks that
// they are one flow (same dimension, type and shared weights; the density
// of the sampling graph's draws agrees with the density graph's; z is
// recovered where the density graph gives it) and returns it as a
// graph.Flow whose parameters are the files' weights.
func ReadFlow(samplePath, densityPath string, cfg FlowConfig) (*graph.Flow, error) {
	if err := checkFileMemory(samplePath, densityPath); err != nil {
		return nil, err
	}
	sb, err := safefile.ReadFile(samplePath, MaxFileBytes)
	if err != nil {
		return nil, err
	}
	db, err := safefile.ReadFile(densityPath, MaxFileBytes)
	if err != nil {
		return nil, err
	}
	if bytes.Equal(sb, db) {
		return nil, fmt.Errorf("%s and %s hold the same graph: a flow is read from two, its sampling graph (z → x, with log λ(x)) and its density graph (x → log λ(x)); give the density graph as the second", samplePath, densityPath)
	}
	f, err := DecodeFlow(sb, db, samplePath, densityPath, cfg)
	if err != nil {
		// The files given the other way round (probe 67 A6: 900
		// characters on the check's numbers, or "no graph output named
		// x", and nothing of the order).
		if _, swapErr := DecodeFlow(db, sb, densityPath, samplePath, cfg); swapErr == nil {
			return nil, fmt.Errorf("%s and %s are a flow given the other way round: %s is its sampling graph (z → x) and %s its density graph (x → log λ(x)); give them in that order (--flow %s --flow-density %s)", samplePath, densityPath, densityPath, samplePath, densityPath, samplePath)
		}
	}
	return f, err
}

// DecodeFlow is ReadFlow for encoded models; the file names are for errors.
// Where cfg names no output and the graphs lack flowebm's names, their
// outputs are told apart by shape (x and z of d columns, one value per
// point) and each graph's value is read as log λ, then as its map's
// log-determinant: the flow is the reading that passes the check that its
// two graphs are one flow (probe 59: nflows' and normflows' log_det and
// log_prob were refused; session 36: a density graph's logabsdet).
func DecodeFlow(sample, density []byte, sampleFile, densityFile string, cfg FlowConfig) (*graph.Flow, error) {
	f, err := decodeFlowAs(sample, density, sampleFile, densityFile, cfg)
	if err == nil {
		return f, nil
	}
	alts := outputReadings(sample, density, cfg)
	var closest *flowCheckError
	var closestAlt FlowConfig
	if errors.As(err, &closest) {
		closestAlt = cfg
	}
	for _, alt := range alts {
		g, altErr := decodeFlowAs(sample, density, sampleFile, densityFile, alt)
		var fe *flowCheckError
		switch {
		case altErr == nil:
			return g, nil
		case !errors.As(altErr, &fe): // read, and refused for another reason
			err = altErr
		case closest == nil || fe.closerThan(closest):
			closest, closestAlt = fe, alt
		}
	}
	if closest != nil && len(alts) > 0 && (strings.Contains(err.Error(), "the names flowebm reads them by") || errors.As(err, new(*flowCheckError))) { // probe 61: the names were blamed
		return nil, fmt.Errorf("%w; without flowebm's output names, the outputs were read by their shapes (%s), and no reading passes the checks: this is the reading that came closest, %s", closest, readingsTried(alts), reading(closestAlt))
	}
	return nil, err
}

// readingsTried says how alts read the two graphs' outputs.
func readingsTried(alts []FlowConfig) string {
	var sample, density []string
	for _, a := range alts {
		switch {
		case a.SampleLogDensity != "" && !slices.Contains(sample, "log q(x)"):
			sample = append(sample, "log q(x)")
		case a.SampleLogDet != "" && !slices.Contains(sample, "log|det ∂x/∂z|"):
			sample = append(sample, "log|det ∂x/∂z|")
		}
		switch {
		case a.DensityOutput != "" && !slices.Contains(density, "log q(x)"):
			density = append(density, "log q(x)")
		case a.DensityLogDet != "" && !slices.Contains(density, "log|det ∂z/∂x|"):
			density = append(density, "log|det ∂z/∂x|")
		}
	}
	a := alts[0]
	msg := fmt.Sprintf("the sampling graph's x = %q, and %q as %s", a.SampleX, cmp.Or(a.SampleLogDensity, a.SampleLogDet), strings.Join(sample, ", then as "))
	if len(density) > 0 {
		msg += fmt.Sprintf("; the density graph's z = %q, and %q as %s", a.DensityLatent, cmp.Or(a.DensityOutput, a.DensityLogDet), strings.Join(density, ", then as "))
	}
	return msg
}

// reading says how c reads the two graphs' values per point.
func reading(c FlowConfig) string {
	as := func(density, logDet, what string) string {
		if logDet != "" {
			return fmt.Sprintf("%q as %s", logDet, what)
		}
		return fmt.Sprintf("%q as log q(x)", cmp.Or(density, FlowLogDensity))
	}
	if c.DensityOutput == "" && c.DensityLogDet == "" { // read by its names
		return fmt.Sprintf("the sampling graph's %s", as(c.SampleLogDensity, c.SampleLogDet, "log|det ∂x/∂z|"))
	}
	return fmt.Sprintf("the sampling graph's %s and the density graph's %s", as(c.SampleLogDensity, c.SampleLogDet, "log|det ∂x/∂z|"), as(c.DensityOutput, c.DensityLogDet, "log|det ∂z/∂x|"))
}

// outputReadings are the readings of the two graphs' outputs by shape,
// where cfg names none and the graphs lack flowebm's names: the sampling
// graph's two outputs x (batch, d) and s (batch) with s as log λ or as
// log|det J_T|, and the density graph's outputs of d columns (z) and of
// one value per point, as log λ or as log|det J_{T⁻¹}| (a flow library's
// transform and its inverse, each giving its log-determinant: nflows'
// transform(x) → (z, logabsdet) was refused up to session 36).
func outputReadings(sample, density []byte, cfg FlowConfig) []FlowConfig {
	sm, err1 := DecodeModel(sample)
	dm, err2 := DecodeModel(density)
	if err1 != nil || err2 != nil {
		return nil
	}
	samples := []FlowConfig{cfg}
	if cfg.SampleLogDensity == "" && cfg.SampleLogDet == "" && len(sm.Graph.Outputs) == 2 &&
		!hasOutput(sm.Graph, FlowLogDensity) && !hasOutput(sm.Graph, FlowLogDet) {
		x, scalar := byRank(sm.Graph.Outputs)
		if x == "" || scalar == "" || (cfg.SampleX != "" && cfg.SampleX != x) {
			return nil
		}
		asDensity, asLogDet := cfg, cfg
		asDensity.SampleX, asLogDet.SampleX = x, x
		asDensity.SampleLogDensity, asLogDet.SampleLogDet = scalar, scalar
		samples = []FlowConfig{asDensity, asLogDet}
	}
	var all []FlowConfig
	for _, c := range samples {
		all = append(all, densityReadings(dm.Graph, c)...)
	}
	return slices.DeleteFunc(all, func(c FlowConfig) bool { return c.names() == cfg.names() }) // tried first
}

// names are the output names c gives.
func (c FlowConfig) names() [6]string {
	return [6]string{c.SampleX, c.SampleLogDensity, c.SampleLogDet, c.DensityOutput, c.DensityLogDet, c.DensityLatent}
}

// densityReadings are cfg with the density graph's outputs read by shape
// (its z, and its value per point as log λ, then as log|det J_{T⁻¹}|),
// or cfg alone where cfg or flowebm's names say which they are.
func densityReadings(g *Graph, cfg FlowConfig) []FlowConfig {
	if cfg.DensityOutput != "" || cfg.DensityLogDet != "" || len(g.Outputs) != 2 ||
		hasOutput(g, FlowLogDensity) || (hasOutput(g, FlowLogDet) && hasOutput(g, FlowLatent)) {
		return []FlowConfig{cfg}
	}
	z, scalar := byRank(g.Outputs)
	if z == "" || scalar == "" || (cfg.DensityLatent != "" && cfg.DensityLatent != z) {
		return []FlowConfig{cfg}
	}
	asDensity, asLogDet := cfg, cfg
	asDensity.DensityLatent, asLogDet.DensityLatent = z, z
	asDensity.DensityOutput, asLogDet.DensityLogDet = scalar, scalar
	return []FlowConfig{asDensity, asLogDet}
}

// hasOutput says whether g has an output of that name.
func hasOutput(g *Graph, name string) bool {
	return slices.ContainsFunc(g.Outputs, func(v *ValueInfo) bool { return v.Name == name })
}

// byRank returns, of two outputs, the one of points (batch, d) and the
// one of a value per point, (batch) or (batch, 1) (probe 61: a (batch, 1)
// log-det was not read), by their declared shapes; "" where the shapes do
// not tell them apart.
func byRank(vs []*ValueInfo) (points, values string) {
	if len(vs) != 2 {
		return "", ""
	}
	one := func(v *ValueInfo) bool {
		return len(v.Shape) == 1 || (len(v.Shape) == 2 && v.Shape[1].Value == 1 && v.Shape[1].Param == "")
	}
	for i, v := range vs {
		w := vs[1-i]
		if v.HasShape && w.HasShape && one(v) && len(w.Shape) == 2 && !one(w) {
			return w.Name, v.Name
		}
	}
	return "", ""
}

// decodeFlowAs reads the flow with its outputs as cfg names them.
func decodeFlowAs(sample, density []byte, sampleFile, densityFile string, cfg FlowConfig) (*graph.Flow, error) {
	fn, err := decodeFlowNet(sample, density, sampleFile, densityFile, cfg)
	if err != nil {
		return nil, err
	}
	f, err := graph.NewFlow(fn, fn.base, fn.Density.Dtype, nil)
	if err != nil {
		return nil, err
	}
	if err := fn.check(f); err != nil {
		return nil, err
	}
	if !cfg.Frozen {
		if err := fn.tiedUnderChange(f); err != nil {
			return nil, err
		}
	}
	return f, nil
}

// tiedUnderChange checks that the two graphs stay one flow once training
// moves the weights: each is moved by up to 5% (a zero by 0.005), the
// log-densities compared as at load, and the weights put back. A value
// that PyTorch's constant folding computed from the weights, read by one
// graph only, is a constant where the file lists the weights
// (flowebm.parameters): the graphs agree as read, and drift apart as the
// weights train (probe 61: draws 40 standard errors off at exit 0).
func (fn *FlowNet) tiedUnderChange(f *graph.Flow) error {
	params := f.Params.List()
	saved := make([][]float64, len(params))
	rng := rand.New(rand.NewPCG(3, 4)) // a fixed check, not a draw of the run
	for i, p := range params {
		v := p.Float64s()
		saved[i] = slices.Clone(v)
		for j := range v { // by a factor, so that no weight changes sign (a scale under a log); zeros by 0.005
			if u := 2*rng.Float64() - 1; v[j] != 0 {
				v[j] *= 1 + 0.05*u
			} else {
				v[j] = 0.005 * u
			}
		}
		if err := p.SetFloat64s(v); err != nil {
			return err
		}
	}
	_, _, err := fn.logDensitiesAgree(f)
	for i, p := range params {
		if serr := p.SetFloat64s(saved[i]); serr != nil {
			return serr
		}
	}
	if err == nil {
		return nil
	}
	return &flowCheckError{stage: checkTied, err: fmt.Errorf("%w, once the weights are moved by up to 5%% as training moves them, though they agree as read: the graphs do not read the weights alike%s; export both from one module with do_constant_folding=False (io/onnx/crosscheck/export_flow.py does), or %s", err, fn.oneSided(), frozenAdvice)}
}

// differingConstants names the initializers both graphs read under one
// name, not as weights (a coupling's mask, a permutation), that hold
// different values in the two files.
func (fn *FlowNet) differingConstants() string {
	var names []string
	for name := range fn.Sample.reads {
		a, b := fn.Sample.inits[name], fn.Density.inits[name]
		if b == nil || !fn.Density.reads[name] || fn.Sample.trainable[name] || fn.Density.trainable[name] {
			continue
		}
		if !slices.Equal(a.Dims, b.Dims) || !slices.Equal(a.Float, b.Float) || !slices.Equal(a.Int, b.Int) {
			names = append(names, strconv.Quote(name))
		}
	}
	if len(names) == 0 {
		return ""
	}
	slices.Sort(names)
	return fmt.Sprintf("the initializers %s, read by both graphs and not weights (masks, permutations), differ between %s and %s", strings.Join(names[:min(len(names), 6)], ", "), fn.Sample.File, fn.Density.File)
}

// oneSided names the float initializers that one graph reads and the
// other does not and that are not weights (values folded from weights, or
// buffers).
func (fn *FlowNet) oneSided() string {
	var names []string
	for _, pair := range [][2]*Net{{fn.Sample, fn.Density}, {fn.Density, fn.Sample}} {
		for name := range pair[0].reads {
			if !pair[1].reads[pair[1].initName(pair[0].paramName(name))] && !pair[0].trainable[name] {
				names = append(names, fmt.Sprintf("%q (%s only)", name, pair[0].File))
			}
		}
	}
	if len(names) == 0 {
		return ""
	}
	slices.Sort(names)
	verb := "are"
	if len(names) == 1 {
		verb = "is"
	}
	return fmt.Sprintf(": %s %s read by one graph and not listed as weights (values PyTorch folded from the weights, do_constant_folding, go stale as they train)", strings.Join(names[:min(len(names), 6)], ", "), verb)
}

func decodeFlowNet(sample, density []byte, sampleFile, densityFile string, cfg FlowConfig) (*FlowNet, error) {
	fn := &FlowNet{sampleX: or(cfg.SampleX, FlowX), encoded: [2][]byte{sample, density}}
	if cfg.SampleLogDensity != "" && cfg.SampleLogDet != "" {
		return nil, fmt.Errorf("%s: give the sampling graph's log-density output or its log-determinant output, not both", sampleFile)
	}
	m, err := DecodeModel(sample)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", sampleFile, err)
	}
	if fn.sampleScalar, fn.scalarIsLogDet, err = sampleScalar(m.Graph, cfg); err != nil {
		return nil, fmt.Errorf("%s: %w", sampleFile, err)
	}
	if fn.Sample, err = DecodeConfig(sample, sampleFile, Config{Output: fn.sampleScalar, Read: []string{fn.sampleX}, Constant: logDets(fn.scalarIsLogDet, fn.sampleScalar)}); err != nil {
		return nil, err
	}
	if cfg, err = densityScalar(density, cfg); err != nil {
		return nil, fmt.Errorf("%s: %w", densityFile, err)
	}
	fn.densityIsLogDet = cfg.DensityLogDet != ""
	latent := []string{or(cfg.DensityLatent, FlowLatent)} // checked where the graph has it
	if fn.Density, err = DecodeConfig(density, densityFile, Config{Output: cmp.Or(cfg.DensityOutput, cfg.DensityLogDet), LogDensity: true, Read: latent, Constant: logDets(fn.densityIsLogDet, cfg.DensityLogDet)}); err != nil {
		if cfg.DensityOutput != "" || fn.densityIsLogDet || !strings.Contains(err.Error(), "choose the energy output") {
			return nil, err
		}
		cfg.DensityOutput = FlowLogDensity
		if fn.Density, err = DecodeConfig(density, densityFile, Config{Output: FlowLogDensity, LogDensity: true, Read: latent}); err != nil {
			if strings.Contains(err.Error(), "no graph output named") {
				return nil, fmt.Errorf("%w: the density graph's log q(x) is read from the output of that name; export it with output_names=[%q, %q] (z = T⁻¹(x), if it has one), or with io/onnx/crosscheck/export_flow.py; in Go, FlowConfig.DensityOutput names another output", err, FlowLogDensity, FlowLatent)
			}
			return nil, err
		}
	}
	fn.densityOut = fn.Density.OutputName()
	fn.latent = cfg.DensityLatent
	if fn.latent == "" && fn.Density.hasOutput(FlowLatent) {
		fn.latent = FlowLatent
	}
	if fn.latent != "" && !fn.Density.hasOutput(fn.latent) {
		return nil, fmt.Errorf("%s: no graph output named %q for z = T⁻¹(x) (outputs: %s)", densityFile, fn.latent, quoteAll(fn.Density.OutputNames()))
	}
	if fn.densityIsLogDet && fn.latent == "" {
		return nil, fmt.Errorf("%s: its output %q is read as log|det ∂z/∂x|, which gives log q(x) only with z = T⁻¹(x), and the graph has no output %q (outputs: %s); in Go, FlowConfig.DensityLatent names it", densityFile, fn.densityOut, FlowLatent, quoteAll(fn.Density.OutputNames()))
	}
	fn.alignNames()
	if err := fn.agree(); err != nil {
		return nil, err
	}
	if fn.base, err = flowBase(cfg.BaseSigma, fn.Sample, fn.Density); err != nil {
		return nil, err
	}
	if err := fn.tie(cfg.Frozen); err != nil {
		if !cfg.Frozen && strings.Contains(err.Error(), frozenAdvice) { // advised to sample frozen: two graphs that are not one flow even as read are said to be so (round 81 B2: the advice, followed, refused them)
			frozen := cfg
			frozen.Frozen = true
			if _, ferr := decodeFlowAs(sample, density, sampleFile, densityFile, frozen); ferr != nil {
				return nil, ferr
			}
		}
		return nil, err
	}
	if len(fn.specs) == 0 && !cfg.Frozen {
		return nil, fmt.Errorf("%s: the flow has no trainable weights (metadata %q lists none, or its graphs read no float initializer): nothing to train; "+frozenAdvice, fn.Density.File, ParametersKey)
	}
	if !cfg.Frozen {
		if err := fn.noMasksTrained(); err != nil {
			return nil, err
		}
		if err := fn.noMergedWeights(); err != nil {
			return nil, err
		}
	}
	return fn, nil
}

// noMasksTrained refuses to train a flow whose files do not say which
// initializers are weights (ParametersKey) when one of them holds only
// 0s and 1s, as a coupling's or a MADE's mask does: every initializer
// would be trained, the masks too, and the trained flow would no longer
// be the map its graphs' log-densities describe (probe 57: a RealNVP
// exported with do_constant_folding=False but without the metadata gave
// a mode weight of 0.38 for 0.30, ± 0.003, at exit 0, its masks trained
// from [0, 1] to [−0.32, 1.40]).
func (fn *FlowNet) noMasksTrained() error {
	for _, n := range []*Net{fn.Density, fn.Sample} {
		if _, listed := n.model.Metadata[ParametersKey]; listed {
			return nil
		}
	}
	for _, p := range fn.specs {
		t := fn.Density.inits[fn.Density.initName(p.Name)]
		if t == nil {
			t = fn.Sample.inits[fn.Sample.initName(p.Name)]
		}
		if t != nil && maskLike(t.Float) {
			return fmt.Errorf("%s: initializer %q holds only 0s and 1s, as a coupling's or a MADE's mask does, and neither file lists which initializers are weights (metadata_props %q): training every initializer would train the masks too and break the flow; list the weights there (io/onnx/crosscheck/export_flow.py writes the module's named_parameters()), or "+frozenAdvice, fn.Density.File, p.Name, ParametersKey)
		}
	}
	return nil
}

// noMergedWeights refuses to train a flow whose export merged weights of
// equal values into one initializer: PyTorch (in evaluation mode, constant
// folding or not) keeps one of them and reads it, through an Identity
// named after each other weight, in all their roles, so that training
// would move them as one and the files written back would lack the
// others (probe 64: an ActNorm's loc served as its logs, another ActNorm's
// loc and logs and two couplings' biases).
func (fn *FlowNet) noMergedWeights() error {
	for _, n := range []*Net{fn.Sample, fn.Density} {
		var merged []string
		for _, nd := range n.model.Graph.Nodes {
			if nd.OpType != "Identity" || nd.Domain != "" || len(nd.Inputs) != 1 || len(nd.Outputs) != 1 || !n.trainable[nd.Inputs[0]] || !weightName(nd.Outputs[0]) {
				continue
			}
			merged = append(merged, fmt.Sprintf("%q is read as %q", nd.Outputs[0], nd.Inputs[0]))
		}
		if len(merged) > 0 {
			return fmt.Errorf("%s: PyTorch's export merged weights of equal values into one initializer (%s): training would move them as one; export with io/onnx/crosscheck/export_flow.py, which keeps them apart, or "+frozenAdvice, n.File, strings.Join(merged[:min(len(merged), 4)], "; "))
		}
	}
	return nil
}

// weightName says whether a value is named like a module's weight
// (layers.0.loc), not as the exporter names what it computes (/Identity,
// onnx::Mul_12, 17).
func weightName(name string) bool {
	if strings.HasPrefix(name, "/") || strings.HasPrefix(name, "onnx::") || !strings.Contains(name, ".") {
		return false
	}
	_, err := strconv.ParseFloat(name, 64)
	return err != nil
}

// maskLike says whether v holds 0s and 1s and nothing else, both.
func maskLike(v []float64) bool {
	zero, one := false, false
	for _, x := range v {
		switch x {
		case 0:
			zero = true
		case 1:
			one = true
		default:
			return false
		}
	}
	return zero && one
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// sampleScalar picks the sampling graph's log λ or log-determinant output.
func sampleScalar(g *Graph, cfg FlowConfig) (name string, logdet bool, err error) {
	if cfg.SampleLogDensity != "" {
		return cfg.SampleLogDensity, false, nil
	}
	if cfg.SampleLogDet != "" {
		return cfg.SampleLogDet, true, nil
	}
	var names []string
	for _, v := range g.Outputs {
		names = append(names, v.Name)
	}
	hasLD, hasDet := slices.Contains(names, FlowLogDensity), slices.Contains(names, FlowLogDet)
	switch {
	case hasLD && hasDet:
		return "", false, fmt.Errorf("the sampling graph has both %q and %q: choose one (FlowConfig.SampleLogDensity or SampleLogDet)", FlowLogDensity, FlowLogDet)
	case hasLD:
		return FlowLogDensity, false, nil
	case hasDet:
		return FlowLogDet, true, nil
	}
	return "", false, fmt.Errorf("the sampling graph has no output %q (log λ(x)) or %q (log|det J_T(z)|), the names flowebm reads them by (outputs: %s): export it with those names, torch.onnx.export(..., output_names=[%q, %q]), or with io/onnx/crosscheck/export_flow.py, which also lists the weights; in Go, FlowConfig.SampleLogDensity or SampleLogDet names another output", FlowLogDensity, FlowLogDet, quoteAll(names), FlowX, FlowLogDet)
}

// alignNames ties the sampling graph's weights to the density graph's
// where their names differ by a module prefix, as when a direction is
// exported through a wrapper module (f.ts.0.shift beside ts.0.shift, or
// s.ts.0.shift beside d.ts.0.shift): the sampling graph's weights are
// then named as the density graph's, and written back under their own
// names; tie still checks that each pair holds one value. Of the prefixes
// that the first unmatched names suggest, the one that matches the most
// names is taken, so that tie names the weights that match nothing (probe
// 63: with one name outside the prefix, an innocent weight was named).
func (fn *FlowNet) alignNames() {
	sample, density := specNames(fn.Sample), specNames(fn.Density)
	best := bestRename(sample, density)
	if len(best) > 0 {
		fn.Sample.renameParams(best)
	}
}

// bestRename is the renaming of alignNames: of the module-prefix swaps that
// the first unmatched names of from suggest, the one that maps the most
// names of from onto names of to, if it maps two or more, or all those
// unmatched.
func bestRename(sample, density map[string]bool) map[string]string {
	unmatched, matched := 0, 0
	for name := range sample {
		if density[name] {
			matched++
		} else {
			unmatched++
		}
	}
	var best map[string]string
	tried := 0
	for _, sn := range slices.Sorted(maps.Keys(sample)) {
		if density[sn] {
			continue
		}
		if tried++; tried > 3 {
			break
		}
		for _, dn := range slices.Sorted(maps.Keys(density)) {
			for _, rename := range prefixSwaps(sn, dn) {
				for _, all := range []bool{false, true} {
					if m, n := renameSome(sample, density, rename, all); n > matched && (len(m) >= 2 || !all && len(m) == unmatched) {
						best, matched = m, n
					}
				}
			}
		}
	}
	return best
}

// specNames are the names of n's parameters.
func specNames(n *Net) map[string]bool {
	m := map[string]bool{}
	for _, p := range n.ParamSpecs() {
		m[p.Name] = true
	}
	return m
}

// prefixSwaps are the renamings that replace the module prefix of sn by
// that of dn, for each suffix the two names share from a module boundary
// on, the longest first: "f.ts.0.w" and "ts.0.w" drop "f.", "ts.0.w" and
// "f.ts.0.w" add it, "s.ts.0.w" and "d.ts.0.w" swap "s." for "d."; a
// swap of one module path for another ("f.ts.0." for "ts.1.") is none.
func prefixSwaps(sn, dn string) []func(string) (string, bool) {
	var swaps []func(string) (string, bool)
	for i := range len(sn) {
		if i > 0 && sn[i-1] != '.' {
			continue
		}
		from, rest := sn[:i], sn[i:]
		to, ok := strings.CutSuffix(dn, rest)
		if !ok || (to != "" && !strings.HasSuffix(to, ".")) || from == to || !wrapperSwap(from, to) {
			continue
		}
		swaps = append(swaps, func(name string) (string, bool) {
			r, ok := strings.CutPrefix(name, from)
			return to + r, ok
		})
	}
	return swaps
}

// wrapperSwap says whether the prefix from for to is a wrapper's: one of
// them empty, a prefix of the other (a module inserted: flow. for
// flow.nf.), or one of them a single module (f. for lit.model.); not one
// module path for another (f.ts.0. for ts.1.).
func wrapperSwap(from, to string) bool {
	return from == "" || to == "" || strings.HasPrefix(to, from) || strings.HasPrefix(from, to) ||
		strings.Count(from, ".") == 1 || strings.Count(to, ".") == 1
}

// renameSome maps names of from onto names of to by rename, one to one,
// and says how many names of from then have a name in to: those to lacks
// (all false: those it has are kept as they are), or every name rename
// maps (all true: where a wrapper's module holds one of the same name,
// flow.scale is the wrapper's scale and flow.flow.scale its flow's, probe
// 65), the others kept as they are where their name is free.
func renameSome(from, to map[string]bool, rename func(string) (string, bool), all bool) (map[string]string, int) {
	m, used := map[string]string{}, map[string]bool{}
	names := slices.Sorted(maps.Keys(from))
	if all {
		for _, name := range names {
			if r, ok := rename(name); ok && r != name && to[r] && !used[r] {
				m[name], used[r] = r, true
			}
		}
	}
	matched := len(m)
	for _, name := range names { // kept as they are
		if _, renamed := m[name]; !renamed && to[name] && !used[name] {
			used[name] = true
			matched++
		}
	}
	if !all {
		for _, name := range names {
			if to[name] {
				continue
			}
			if r, ok := rename(name); ok && to[r] && !used[r] {
				m[name], used[r] = r, true
				matched++
			}
		}
	}
	return m, matched
}

// logDets lists name where it is a log-determinant, which a
// volume-preserving flow gives as a constant 0.
func logDets(isLogDet bool, name string) []string {
	if isLogDet {
		return []string{name}
	}
	return nil
}

// densityScalar returns cfg with the density graph's log-determinant
// named where cfg names neither of its scalar outputs and the graph has
// flowebm's "logdet" and "z" but no "log_density".
func densityScalar(density []byte, cfg FlowConfig) (FlowConfig, error) {
	if cfg.DensityOutput != "" && cfg.DensityLogDet != "" {
		return cfg, fmt.Errorf("give the density graph's log-density output or its log-determinant output, not both")
	}
	if cfg.DensityOutput != "" || cfg.DensityLogDet != "" {
		return cfg, nil
	}
	m, err := DecodeModel(density)
	if err != nil {
		return cfg, err
	}
	var names []string
	for _, v := range m.Graph.Outputs {
		names = append(names, v.Name)
	}
	if slices.Contains(names, FlowLogDet) && slices.Contains(names, or(cfg.DensityLatent, FlowLatent)) && !slices.Contains(names, FlowLogDensity) {
		cfg.DensityLogDet = FlowLogDet
	}
	return cfg, nil
}

// agree checks that the two graphs have one dimension and float type.
func (fn *FlowNet) agree() error {
	s, d := fn.Sample, fn.Density
	if s.Dim() != d.Dim() {
		return fmt.Errorf("%s: the sampling graph's z has dimension %d, the density graph's x (%s) %d: not the same flow", s.File, s.Dim(), d.File, d.Dim())
	}
	if s.Dtype != d.Dtype {
		return fmt.Errorf("%s: the sampling graph is %v, the density graph (%s) %v: export both in one float type", s.File, s.Dtype, d.File, d.Dtype)
	}
	if !s.hasOutput(fn.sampleX) {
		return fmt.Errorf("%s: no graph output named %q for x = T(z) (outputs: %s)", s.File, fn.sampleX, quoteAll(s.OutputNames()))
	}
	return nil
}

// tie merges the two graphs' parameters by name: a name in both must have
// one shape and one value. Unless frozen, every weight of either graph
// must be read by the other: training updates the density graph's, and
// one the sampling graph does not read would move alone (probe 59: a flow
// exported with PyTorch's default constant folding has −logs folded into
// a weight of its density graph only; trained, the sampling graph's draws
// no longer followed the density, 30 standard errors off at exit 0).
func (fn *FlowNet) tie(frozen bool) error {
	byName := map[string]layers.ParamSpec{}
	for _, p := range fn.Density.ParamSpecs() {
		byName[p.Name] = p
	}
	fn.specs = slices.Clone(fn.Density.ParamSpecs())
	if !frozen {
		if err := fn.densityOnly(); err != nil {
			return err
		}
	}
	for _, p := range fn.Sample.ParamSpecs() {
		q, ok := byName[p.Name]
		if !ok {
			if !frozen {
				return fmt.Errorf("%s: weight %q of the sampling graph is not read by the density graph (%s), so training could not keep the two tied: export both from one module with do_constant_folding=False, listing the module's weights in metadata_props %q (io/onnx/crosscheck/export_flow.py does both), or "+frozenAdvice, fn.Sample.File, p.Name, fn.Density.File, ParametersKey)
			}
			fn.specs = append(fn.specs, p)
			continue
		}
		sameShape := slices.Equal(p.Shape, q.Shape)
		if sameShape && slices.Equal(fn.Sample.inits[fn.Sample.initName(p.Name)].Float, fn.Density.inits[p.Name].Float) {
			continue
		}
		if frozen { // two tensors of one name: each file's own, and the one-flow check decides (probe 69 A1)
			fn.apart(p)
			continue
		}
		generated := ""
		if strings.Contains(p.Name, "::") {
			generated = fmt.Sprintf(" (a name the exporter generates, numbered in each file: %q may be a different tensor in each)", p.Name)
		}
		if !sameShape {
			return fmt.Errorf("%s: weight %q has shape %v, %q in %s %v%s: training ties the two graphs' weights by name, and these are not one weight: export both from one module with do_constant_folding=False, listing the module's weights in metadata_props %q (io/onnx/crosscheck/export_flow.py does both), or "+frozenAdvice, fn.Sample.File, fn.Sample.initName(p.Name), p.Shape, p.Name, fn.Density.File, q.Shape, generated, ParametersKey)
		}
		return fmt.Errorf("%s: weight %q differs from %q in %s%s: the two graphs are not the same flow (export both from one module after training)", fn.Sample.File, fn.Sample.initName(p.Name), p.Name, fn.Density.File, generated) // each file's own name (probe 64)
	}
	return nil
}

// apart gives the sampling graph's parameter p, which the density graph's
// of its name is not, a name of its own, kept beside the density graph's.
func (fn *FlowNet) apart(p layers.ParamSpec) {
	name := "sample:" + p.Name
	for slices.ContainsFunc(fn.specs, func(s layers.ParamSpec) bool { return s.Name == name }) {
		name += "'"
	}
	rename := maps.Clone(fn.Sample.rename)
	if rename == nil {
		rename = map[string]string{}
	}
	rename[fn.Sample.initName(p.Name)] = name
	fn.Sample.rename = rename
	for i, s := range fn.Sample.specs {
		if s.Name == p.Name {
			fn.Sample.specs[i].Name = name
		}
	}
	p.Name = name
	fn.specs = append(fn.specs, p)
}

// frozenAdvice is how to use a flow that cannot be trained: frozen
// (probe 60: "load the flow frozen" was said to train, which has no such
// option).
const frozenAdvice = "sample with it frozen, untrained (flowebm sample --flow without --train-flow; FlowConfig.Frozen in Go): train cannot use it"

// densityOnly refuses a weight of the density graph that the sampling
// graph does not read.
func (fn *FlowNet) densityOnly() error {
	inSample := map[string]bool{}
	for _, p := range fn.Sample.ParamSpecs() {
		inSample[p.Name] = true
	}
	for _, p := range fn.Density.ParamSpecs() {
		if !inSample[p.Name] {
			return fmt.Errorf("%s: weight %q of the density graph is not read by the sampling graph (%s), so training would move it alone and the sampling graph's draws would no longer follow the density: it may be a value PyTorch folded from the module's weights (do_constant_folding, torch.onnx.export's default) or a buffer; export both from one module with do_constant_folding=False, listing the module's weights in metadata_props %q (io/onnx/crosscheck/export_flow.py does both), or "+frozenAdvice, fn.Density.File, p.Name, fn.Sample.File, ParametersKey)
		}
	}
	return nil
}

// flowBase is the Gaussian base: sigma, else the files' metadata, else 1.
func flowBase(sigma []float64, s, d *Net) (layers.Gaussian, error) {
	dim := s.Dim()
	if sigma == nil {
		var err error
		if sigma, err = metadataSigma(s, d); err != nil {
			return layers.Gaussian{}, err
		}
	}
	var g layers.Gaussian
	switch len(sigma) {
	case 0:
		g = layers.NewIsotropic(dim, 1)
	case 1:
		g = layers.NewIsotropic(dim, sigma[0])
	case dim:
		g = layers.NewDiagonal(slices.Clone(sigma))
	default:
		return layers.Gaussian{}, fmt.Errorf("%s: base σ has %d values, want 1 or %d (the flow's dimension)", s.File, len(sigma), dim)
	}
	if err := g.Validate(); err != nil {
		return layers.Gaussian{}, fmt.Errorf("%s: base σ: %w", s.File, err)
	}
	return g, nil
}

// metadataSigma reads BaseSigmaKey from either file; the two must agree.
func metadataSigma(nets ...*Net) ([]float64, error) {
	var sigma []float64
	var from string
	for _, n := range nets {
		v, ok := n.model.Metadata[BaseSigmaKey]
		if !ok {
			continue
		}
		s, err := parseSigma(v)
		if err != nil {
			return nil, fmt.Errorf("%s: metadata_props %q = %q: %v", n.File, BaseSigmaKey, v, err)
		}
		if sigma != nil && !slices.Equal(s, sigma) {
			return nil, fmt.Errorf("%s: metadata_props %q is %v, in %s %v: the two files declare different bases", n.File, BaseSigmaKey, s, from, sigma)
		}
		sigma, from = s, n.File
	}
	return sigma, nil
}

func parseSigma(v string) ([]float64, error) {
	v = strings.TrimSpace(v)
	v = strings.TrimSuffix(strings.TrimPrefix(v, "["), "]")
	var out []float64
	for _, f := range strings.Split(v, ",") {
		x, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil || !(x > 0) || math.IsInf(x, 0) {
			return nil, fmt.Errorf("want one positive number or a list [σ1, ..., σd]")
		}
		out = append(out, x)
	}
	return out, nil
}

// Dimension is d (graph.FlowNet).
func (fn *FlowNet) Dimension() int { return fn.Density.Dim() }

// Base is the flow's Gaussian base ρ.
func (fn *FlowNet) Base() layers.Gaussian { return fn.base }

// ParamSpecs lists the weights of both graphs, once each, at the files'
// values.
func (fn *FlowNet) ParamSpecs() ([]layers.ParamSpec, error) { return fn.specs, nil }

// Promoted says why a flow read as float64 computes in float64 though
// part of it is float32: its graphs mix the two types, and flowebm
// computes them in the wider ("" where no graph mixes them).
func (fn *FlowNet) Promoted() string {
	if fn.Sample.narrow || fn.Density.narrow {
		return " (its graphs mix float32 and float64, e.g. float32 weights with a float64 log_density from a float64 base distribution, and are computed in float64: export the log-density in the weights' type for a float32 flow)"
	}
	return ""
}

// Invertible says whether the density graph gives z = T⁻¹(x).
func (fn *FlowNet) Invertible() bool { return fn.latent != "" }

// NeedInverse is nil where the density graph gives z = T⁻¹(x), which
// NeuTra (MALA in the flow's latent space) needs, and otherwise the
// error that says how to export a flow that gives it.
func (fn *FlowNet) NeedInverse() error {
	if fn.Invertible() {
		return nil
	}
	return fmt.Errorf("%s: the density graph has no output %q = T⁻¹(x) (its outputs: %s), and NeuTra (MALA in the flow's latent space: --algorithm nt, --sampler neutra) needs it: write a flowebm flow's density graph with convert --what flow-density (which writes z) or sample --flow-out; export a flow of your own with its inverse as output %q, as io/onnx/crosscheck/export_flow.py does with inverse=...", fn.Density.File, FlowLatent, quoteAll(fn.Density.OutputNames()), FlowLatent)
}

// ParamCount is the number of trainable parameter values (shared by the
// two graphs).
func (fn *FlowNet) ParamCount() int { return layers.SpecsSize(fn.specs) }

// GraphValues is about how many values the compiled graphs of the flow
// hold per point: both graphs' (Net.GraphValues), as a run may hold both.
func (fn *FlowNet) GraphValues(grad bool) float64 {
	return fn.Sample.GraphValues(grad) + fn.Density.GraphValues(grad)
}

// Unchecked says why the load checks could not run on one of the graphs
// (Net.Unchecked), or is empty.
func (fn *FlowNet) Unchecked() string { return cmp.Or(fn.Sample.Unchecked(), fn.Density.Unchecked()) }

// MaxBatch is the larger batch both graphs can be built at (Net.MaxBatch).
func (fn *FlowNet) MaxBatch() int { return min(fn.Sample.MaxBatch(), fn.Density.MaxBatch()) }

// Forward adds x = T(z) and log|det J_T(z)| from the sampling graph.
func (fn *FlowNet) Forward(b layers.Binder, z *G.Node) (x, logdet *G.Node, err error) {
	out, err := fn.Sample.Outputs(b, z, fn.sampleX, fn.sampleScalar)
	if err != nil {
		return nil, nil, err
	}
	if out[0].Shape()[1] != fn.Dimension() {
		return nil, nil, fmt.Errorf("%s: output %q has %d values per sample, want d = %d", fn.Sample.File, fn.sampleX, out[0].Shape()[1], fn.Dimension())
	}
	s, err := flat(out[1])
	if err != nil {
		return nil, nil, err
	}
	if fn.scalarIsLogDet {
		return out[0], s, nil
	}
	lr, err := fn.base.Apply(b, z) // log|det J_T(z)| = log ρ(z) − log λ(T(z))
	if err != nil {
		return nil, nil, err
	}
	ld, err := G.Sub(lr, s)
	return out[0], ld, err
}

// Inverse adds z = T⁻¹(x) and log|det J_{T⁻¹}(x)| = log λ(x) − log ρ(z)
// from the density graph; it fails if that graph does not give z.
func (fn *FlowNet) Inverse(b layers.Binder, x *G.Node) (z, logdet *G.Node, err error) {
	if err := fn.NeedInverse(); err != nil {
		return nil, nil, err
	}
	out, err := fn.Density.Outputs(b, x, fn.densityOut, fn.latent)
	if err != nil {
		return nil, nil, err
	}
	if out[1].Shape()[1] != fn.Dimension() {
		return nil, nil, fmt.Errorf("%s: output %q has %d values per sample, want d = %d", fn.Density.File, fn.latent, out[1].Shape()[1], fn.Dimension())
	}
	lq, err := flat(out[0])
	if err != nil || fn.densityIsLogDet {
		return out[1], lq, err
	}
	lr, err := fn.base.Apply(b, out[1])
	if err != nil {
		return nil, nil, err
	}
	ld, err := G.Sub(lq, lr)
	return out[1], ld, err
}

// LogDensity adds log λ(x) from the density graph (graph.DensityNet):
// its output, or log ρ(z) + log|det J_{T⁻¹}(x)| from its z and
// log-determinant.
func (fn *FlowNet) LogDensity(b layers.Binder, x *G.Node) (*G.Node, error) {
	if fn.densityIsLogDet {
		z, ld, err := fn.Inverse(b, x)
		if err != nil {
			return nil, err
		}
		lr, err := fn.base.Apply(b, z)
		if err != nil {
			return nil, err
		}
		return G.Add(lr, ld)
	}
	out, err := fn.Density.Outputs(b, x, fn.densityOut)
	if err != nil {
		return nil, err
	}
	if out[0].Shape()[1] != 1 {
		return nil, fmt.Errorf("%s: output %q has %d values per sample, want one log-density", fn.Density.File, fn.densityOut, out[0].Shape()[1])
	}
	return flat(out[0])
}

// flat reshapes (B, 1) to (B).
func flat(n *G.Node) (*G.Node, error) {
	s := n.Shape()
	if len(s) != 2 || s[1] != 1 {
		return nil, fmt.Errorf("want one value per sample, have shape %v", s)
	}
	return G.Reshape(n, tensor.Shape{s[0]})
}

// Flow-check tolerances: relative differences of log λ between the two
// graphs, and of z against T⁻¹(T(z)), at the files' float type. A float32
// flow of a few couplings accumulates a few 1e-6; real disagreements (a
// different weight, a different base) are of order 1.
const (
	flowCheckTol64 = 1e-8
	flowCheckTol32 = 1e-3
	flowCheckRows  = 16
)

// check runs both graphs on draws of the base: log λ(T(z)) from the
// sampling graph must equal the density graph's at x = T(z), and the
// density graph's z (if any) must be the z drawn.
func (fn *FlowNet) check(f *graph.Flow) error {
	z, x, err := fn.logDensitiesAgree(f)
	if fe := (*flowCheckError)(nil); errors.As(err, &fe) && z != nil {
		// Which graph's log-density is not its map's (probe 64: "the base
		// declared, a weight, or the map differs" for a log-det of the
		// wrong sign).
		if d := fn.differingConstants(); d != "" { // probe 65: a mask flipped in one file was not named
			fe.err = fmt.Errorf("%w; %s", fe.err, d)
		}
		if jerr := fn.checkJacobian(f, z); jerr == nil {
			fe.err = fmt.Errorf("%w; the sampling graph's log-density agrees with its own map's Jacobian (finite differences), so %s's is the one that differs: a log-determinant of the wrong sign or of the other direction, another base, or other weights", fe.err, fn.Density.File)
		} else {
			fe.err = fmt.Errorf("%w; and %v", fe.err, jerr)
		}
		return fe
	}
	if err != nil {
		return err
	}
	tol := fn.checkTol()
	n, d := z.Dims()
	if err := fn.checkJacobian(f, z); err != nil {
		return &flowCheckError{stage: checkJacobian, err: err}
	}
	if !fn.Invertible() {
		return nil
	}
	z2, ld := mat.NewDense(n, d, nil), make([]float64, n)
	if err := f.Inverse(x, z2, ld); err != nil {
		return err
	}
	for i := 0; i < n; i++ {
		for j := 0; j < d; j++ {
			if bad(z.At(i, j), z2.At(i, j), tol) {
				return &flowCheckError{stage: checkInverse, err: fmt.Errorf("%s: output %q is not the inverse of %s's map: z = %.9g gives T⁻¹(T(z)) = %.9g (row %d, coordinate %d)", fn.Density.File, fn.latent, fn.Sample.File, z.At(i, j), z2.At(i, j), i, j)}
			}
		}
	}
	return nil
}

// Finite-difference check of log|det J_T|: central differences with step
// h in float64 (error O(h²) ≈ 1e-8 on smooth maps) and in float32 (where
// round-off of about 1e-7/h dominates); the tolerances are absolute on
// log|det|, far below what a wrong base declares (d·log σ-sized).
const (
	jacobianRows           = 2
	jacobianStep64         = 1e-4
	jacobianStep32         = 1e-2
	jacobianTol64          = 1e-4
	jacobianTol32          = 5e-2
	jacobianMaxFlowDim     = 256
	jacobianSingularLogDet = -300
)

// checkJacobian compares the log-determinant the sampling graph implies
// (its logdet output, or log ρ(z) − its log λ) with log|det ∂x/∂z| by
// finite differences of its map at the first rows of z: this catches a
// base declared other than the one the graph was exported with, a
// log-density output that is not the map's, and a map that is not
// invertible (det J = 0).
func (fn *FlowNet) checkJacobian(f *graph.Flow, z *mat.Dense) error {
	d := fn.Dimension()
	if d > jacobianMaxFlowDim {
		return nil // 2·d·rows evaluations; the log-density check above still runs
	}
	h, tol := jacobianStep64, jacobianTol64
	if fn.checkTol() == flowCheckTol32 { // a float32 map, also under a float64 output (round 88 A4)
		h, tol = jacobianStep32, jacobianTol32
	}
	k := jacobianRows
	rows := mat.NewDense(k*(2*d+1), d, nil)
	for i := 0; i < k; i++ {
		for j := 0; j <= 2*d; j++ {
			r := rows.RawRowView(i*(2*d+1) + j)
			copy(r, z.RawRowView(i))
			if j < 2*d {
				r[j/2] += h * float64(1-2*(j%2))
			}
		}
	}
	nr, _ := rows.Dims()
	x, ld := mat.NewDense(nr, d, nil), make([]float64, nr)
	if err := f.Forward(rows, x, ld); err != nil {
		return err
	}
	jac := mat.NewDense(d, d, nil)
	for i := 0; i < k; i++ {
		at := i * (2*d + 1)
		for j := 0; j < d; j++ {
			xp, xm := x.RawRowView(at+2*j), x.RawRowView(at+2*j+1)
			for r := 0; r < d; r++ {
				jac.Set(r, j, (xp[r]-xm[r])/(2*h))
			}
		}
		var lu mat.LU
		lu.Factorize(jac)
		fd, _ := lu.LogDet()
		got := ld[at+2*d]
		if fd < jacobianSingularLogDet {
			return fmt.Errorf("%s: the map z ↦ x is not invertible at a base draw (∂x/∂z is singular): not a flow", fn.Sample.File)
		}
		if !(math.Abs(fd-got) <= tol*math.Max(1, math.Abs(fd))) {
			return fmt.Errorf("%s: at a draw z of the base N(0, σ²), σ = %v, the graph's log-density implies log|det ∂x/∂z| = %.6g but its map has %.6g (finite differences): the base declared is not the one it was exported with (FlowConfig.BaseSigma, --flow-base-sigma, a checkpoint's base_sigma, metadata %q), or its log-density is not its map's", fn.Sample.File, fn.base.Sigma, got, fd, BaseSigmaKey)
		}
	}
	return nil
}

// checkTol is the relative tolerance of the checks: float32's for a
// float32 flow or one with float32 steps (probe 55: a float32 constant in
// a float64 flow's base term shifted log λ by 1.6e-7).
func (fn *FlowNet) checkTol() float64 {
	if fn.Density.Dtype == tensor.Float32 || fn.Sample.narrow || fn.Density.narrow {
		return flowCheckTol32
	}
	return flowCheckTol64
}

// logDensitiesAgree checks that log λ(T(z)) from the sampling graph equals
// the density graph's at x = T(z), for fixed draws z of the base, and
// returns z and x.
func (fn *FlowNet) logDensitiesAgree(f *graph.Flow) (z, x *mat.Dense, err error) {
	n, d := flowCheckRows, fn.Dimension()
	rng := rand.New(rand.NewPCG(1, 2)) // a fixed check, not a draw of the run
	z, x = mat.NewDense(n, d, nil), mat.NewDense(n, d, nil)
	ls, ld := make([]float64, n), make([]float64, n)
	if err := f.SampleLatent(rng, z, x, ls); err != nil {
		return nil, nil, err
	}
	if err := f.LogDensity(x, ld); err != nil {
		return nil, nil, err
	}
	for i := range ls {
		if bad(ls[i], ld[i], fn.checkTol()) {
			gap := 0.0
			for j := range ls {
				gap = math.Max(gap, math.Abs(ls[j]-ld[j])/math.Max(1, math.Abs(ls[j])))
			}
			if math.IsNaN(gap) {
				gap = math.Inf(1)
			}
			hint := ""
			if fn.densityOut == "energy" { // round 81 B2: an energy network given as the density graph
				hint = fmt.Sprintf("; %s's output is named \"energy\", as an energy network's (flowebm convert --what ebm or energy): a flow's density graph is what convert --what flow-density writes", fn.Density.File)
			}
			if math.IsInf(ls[i], 0) && ls[i] == ld[i] { // round 101 A2, round 102 B1: a singular map, both graphs agreeing (−Inf one way, +Inf the other), was said to be two flows
				return z, x, &flowCheckError{stage: checkAgree, gap: gap, err: fmt.Errorf("%s and %s: at x = T(z) (z drawn from the base N(0, σ²), σ = %s) both graphs give log λ(x) = %v: the map is not invertible there (a log-determinant of ±Inf: a singular layer, such as an invertible 1×1 map whose matrix has determinant 0, or a scale of 0), so it is not a flow; give a flow whose layers are invertible", fn.Sample.File, fn.Density.File, sigmaText(fn.base.Sigma), ls[i])}
			}
			return z, x, &flowCheckError{stage: checkAgree, gap: gap, err: fmt.Errorf("%s and %s are not one flow: at x = T(z) (z drawn from the base N(0, σ²), σ = %s), the sampling graph gives log λ(x) = %.9g and the density graph %.9g (the base declared, a weight, or the map differs)%s", fn.Sample.File, fn.Density.File, sigmaText(fn.base.Sigma), ls[i], ld[i], hint)}
		}
	}
	return z, x, nil
}

// sigmaText is a base's σ for a message: one number where every
// dimension has it (round 81 B2: a Go slice of 17-digit numbers).
func sigmaText(sigma []float64) string {
	if len(sigma) > 0 && !slices.ContainsFunc(sigma, func(s float64) bool { return s != sigma[0] }) {
		return fmt.Sprintf("%.6g in every dimension", sigma[0])
	}
	parts := make([]string, 0, len(sigma))
	for i, s := range sigma {
		if i == 8 {
			parts = append(parts, fmt.Sprintf("… (%d in all)", len(sigma)))
			break
		}
		parts = append(parts, fmt.Sprintf("%.6g", s))
	}
	return "(" + strings.Join(parts, ", ") + ")"
}

// The checks a flow read one way passes in turn (flowCheckError.stage).
const (
	checkAgree    = iota + 1 // the two graphs' log-densities at x = T(z)
	checkJacobian            // log|det| against finite differences
	checkInverse             // z = T⁻¹(T(z))
	checkTied                // the log-densities with the weights moved
)

// flowCheckError is a check that a flow read one way failed: how far it
// got and, at the log-density check, the largest relative gap between the
// two graphs' log-densities, so that of the readings of a flow's outputs
// the one that came closest is reported (probe 63: the first was, its
// numbers exact negatives, and the real cause was dropped).
type flowCheckError struct {
	stage int
	gap   float64
	err   error
}

func (e *flowCheckError) Error() string { return e.err.Error() }
func (e *flowCheckError) Unwrap() error { return e.err }

// closerThan says whether e got further than o, or as far with a smaller
// gap.
func (e *flowCheckError) closerThan(o *flowCheckError) bool {
	return e.stage > o.stage || (e.stage == o.stage && e.gap < o.gap)
}

func bad(a, b, tol float64) bool {
	return !(math.Abs(a-b) <= tol*math.Max(1, math.Abs(a)))
}

// WriteFlowWeights writes f's current weights into copies of the files f
// was read from: samplePath and densityPath get the sampling and density
// graphs with every initializer the flow trains replaced and everything
// else byte for byte (UpdateWeights). Each write is atomic.
func WriteFlowWeights(f *graph.Flow, samplePath, densityPath string) error {
	sb, db, err := EncodeFlowWeights(f)
	if err != nil {
		return err
	}
	if err := WriteFile(samplePath, sb); err != nil {
		return err
	}
	return WriteFile(densityPath, db)
}

// EncodeFlowWeights is WriteFlowWeights that returns the two encoded models.
func EncodeFlowWeights(f *graph.Flow) (sample, density []byte, err error) {
	fn, ok := f.Net.(*FlowNet)
	if !ok {
		return nil, nil, fmt.Errorf("onnx: EncodeFlowWeights writes a flow read with ReadFlow, not %T (export flowebm's RealNVP with FlowSample and FlowDensity)", f.Net)
	}
	if _, _, err := fn.logDensitiesAgree(f); err != nil { // a trained flow too
		return nil, nil, fmt.Errorf("the flow's weights as they are now: %w", err)
	}
	sb, err := updateWeights(fn.encoded[0], paramsOf(f.Params, fn.Sample))
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", fn.Sample.File, err)
	}
	db, err := updateWeights(fn.encoded[1], paramsOf(f.Params, fn.Density))
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", fn.Density.File, err)
	}
	return sb, db, nil
}

// paramsOf is the parameters of p that n reads.
func paramsOf(p *graph.Params, n *Net) map[string]*graph.Param {
	m := map[string]*graph.Param{}
	for _, s := range n.ParamSpecs() {
		if q := p.Get(s.Name); q != nil {
			m[n.initName(s.Name)] = q
		}
	}
	return m
}
