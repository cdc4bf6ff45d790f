package onnx

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/flowebm/flowebm/io/safefile"
	"github.com/flowebm/flowebm/layers"
)

// Opsets supported by the importer (the default domain, ai.onnx).
const (
	MinImportOpset = 9
	MaxImportOpset = 18
)

// IR versions (ModelProto.ir_version) the importer reads: 3 (ONNX 1.0,
// the first with opset_import; PyTorch 1.13 writes 7 or 8) to 10 (ONNX
// 1.16 and 1.17; onnx.helper and newer exporters write 9 or 10). A later
// version may change what the decoder reads; 0 means the field is missing.
const (
	MinImportIRVersion = 3
	MaxImportIRVersion = 10
)

// Config selects what Decode reads from a model. The zero value reads the
// graph's only output as the energy.
type Config struct {
	// Output names the graph output that holds the energy (or the log
	// density, with LogDensity). Empty: the graph must have one output.
	Output string
	// LogDensity says the output is a log density log p(x) (a flow's
	// log_prob): the energy is its negative.
	LogDensity bool
	// Read lists the other graph outputs the caller reads (Outputs): at
	// load they are checked, as Output is, to hold values per sample
	// that do not depend on the other samples; the graph's other
	// outputs are not (probe 50: a GMM energy that also returned its
	// means, a (K, d) parameter, was refused).
	Read []string
	// Constant lists the outputs that may not depend on the input: a
	// volume-preserving flow's log-determinant (NICE's additive
	// couplings and permutations), 0 whatever the point.
	Constant []string
}

// Net is a network read from an ONNX file, as an energy: it implements
// graph.EnergyNet, so an EBM built on it evaluates E and ∇ₓE, samples
// with flowebm's kernels and trains further.
//
// The graph is instantiated for each batch size when flowebm compiles its
// programs: every shape is inferred statically and every subgraph that
// depends only on initializers, constants and input shapes (Shape, Gather
// on shapes, Concat, ConstantOfShape, Range, …) is folded at build time,
// so PyTorch's dynamic-batch idioms (x.view(x.size(0), −1)) work at every
// batch size. What remains is built from differentiable operations
// (package layers/nd), in float32 or float64.
//
// The model's input may have any rank: Net takes flat points (B, Dim) and
// reshapes them to the declared per-sample shape (for an image model
// (B, C, H, W), Dim = C·H·W). Float initializers that the computation
// reads are the EBM's parameters, under their ONNX names (for a PyTorch
// export, the state_dict's: "net.0.weight", …), initialised to the
// file's values; other initializers (integers, BatchNormalization's
// running statistics, values only used to compute shapes) are constants.
type Net struct {
	// File names the source, for errors.
	File string
	// Dtype is the input's float type (tensor.Float32 or tensor.Float64).
	Dtype tensor.Dtype
	// Opset is the model's ai.onnx opset.
	Opset int64

	model   *Model
	cfg     Config
	input   string
	inElem  DataType // the input's element type (float or double: Dtype, unless promoted)
	narrow  bool     // some values are computed in a narrower float type (promote)
	inShape []int    // per sample
	dim     int
	batch   int // declared batch size; 0 if symbolic or unknown
	// pinned: the graph's outputs depend on the batch it runs at (a
	// constant of the declared batch), so it runs on chunks of batch.
	pinned bool
	// pairs: the graph cannot be built at a batch of 1 (a constant of
	// the export's batch, torch.zeros(len(x)), broadcasts there instead
	// of falling back), so a single point runs as a batch of 2 copies.
	pairs bool
	probe probeDist // the points the load checks run the graph on (chooseProbe)
	// pointBytes and largestPoint are the bytes per point of the values
	// the graph computes from its input, all of them and the largest one
	// (tallied by the check's build; GraphValues, MaxBatch).
	pointBytes, largestPoint float64
	unchecked                string // why the load checks could not run (chooseProbe)
	nodes                    []*Node
	inits                    map[string]*Tensor
	trainable                map[string]bool
	reads                    map[string]bool // every float initializer the graph reads, weights or not
	specs                    []layers.ParamSpec
	rename                   map[string]string // initializer → parameter name, where a flow's other graph names the weight otherwise (FlowNet.alignNames)
	outputName               string
}

// MaxFileBytes bounds the ONNX files read (protobuf's own limit on a
// message): a larger one is refused before it is read.
const MaxFileBytes = 2 << 30

// ReadFile reads an ONNX energy network with the zero Config.
func ReadFile(path string) (*Net, error) { return ReadFileConfig(path, Config{}) }

// ReadFileConfig reads an ONNX network from path.
func ReadFileConfig(path string, cfg Config) (*Net, error) {
	if err := checkFileMemory(path); err != nil {
		return nil, err
	}
	b, err := safefile.ReadFile(path, MaxFileBytes)
	if err != nil {
		return nil, err
	}
	return DecodeConfig(b, path, cfg)
}

// Decode reads an ONNX energy network from b with the zero Config; file
// names it in errors.
func Decode(b []byte, file string) (*Net, error) { return DecodeConfig(b, file, Config{}) }

// DecodeConfig reads an ONNX network from b; file names it in errors.
// The graph is checked by building it once, at its declared batch size
// (or 2 if the batch is symbolic), before it is returned.
func DecodeConfig(b []byte, file string, cfg Config) (n *Net, err error) {
	defer func() {
		if r := recover(); r != nil { // a bug, not a user error: say so
			n, err = nil, fmt.Errorf("%s: internal error importing the model (please report): %v", file, r)
		}
	}()
	m, err := DecodeModel(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	n = &Net{File: file, model: m, cfg: cfg}
	if err := n.init(); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	if err := n.check(); err != nil {
		return nil, err
	}
	return n, nil
}

// init reads the IR version, opset, input, output, initializers and node
// order.
func (n *Net) init() error {
	if v := n.model.IRVersion; v < MinImportIRVersion || v > MaxImportIRVersion {
		return fmt.Errorf("ir_version %d: supported IR versions are %d to %d (ModelProto field ir_version; 0 if it is missing)", v, MinImportIRVersion, MaxImportIRVersion)
	}
	n.Opset = n.model.Opsets[""]
	if n.Opset < MinImportOpset || n.Opset > MaxImportOpset {
		return fmt.Errorf("opset %d (ai.onnx): supported opsets are %d to %d; re-export with torch.onnx.export(..., opset_version=14)", n.Opset, MinImportOpset, MaxImportOpset)
	}
	for d := range n.model.Opsets {
		if d != "" && d != "ai.onnx.ml" {
			// Custom domains are refused when a node uses them.
			continue
		}
	}
	g := n.model.Graph
	if err := checkGraph(g); err != nil {
		return err
	}
	n.inits = map[string]*Tensor{}
	for _, t := range g.Initializers {
		n.inits[t.Name] = t
	}
	if err := n.pickInput(g); err != nil {
		return err
	}
	if err := n.pickOutput(g); err != nil {
		return err
	}
	nodes, err := topoSort(g, n.inits, n.input)
	if err != nil {
		return err
	}
	n.nodes = fuseNorms(nodes, g, n.inits, n.Opset)
	n.promote()
	return nil
}

// promote builds a float32 graph that casts values to float64 (x.double()
// for one precise step) in float64, its float32 values rounded to float32
// after each operation (instance.rounded): in float32 its float64 steps
// were computed in float32 (probe 54: log(1 + 1e-10·y²)·1e10 was 0 where
// PyTorch gives 4.5).
//
// narrow records that the graph computes some values in a narrower float
// type than its own (float32 in float64, float16, bfloat16, or a promoted
// graph's float32 values), whose checks then allow float32's round-off.
func (n *Net) promote() {
	for _, nd := range n.nodes {
		if nd.OpType != "Cast" {
			continue
		}
		switch to := DataType(nodeInt(nd, "to", int64(TypeFloat))); {
		case to == TypeDouble && n.Dtype == tensor.Float32:
			n.Dtype, n.narrow = tensor.Float64, true
		case to == TypeFloat16 || to == TypeBFloat16 || to == TypeFloat && n.Dtype == tensor.Float64:
			n.narrow = true
		}
	}
}

// pickInput finds the one graph input that is not an initializer.
func (n *Net) pickInput(g *Graph) error {
	var ins []*ValueInfo
	for _, v := range g.Inputs {
		if _, ok := n.inits[v.Name]; !ok {
			ins = append(ins, v)
		}
	}
	if len(ins) != 1 {
		var names []string
		for _, v := range ins {
			names = append(names, fmt.Sprintf("%q", v.Name))
		}
		return fmt.Errorf("graph has %d inputs (not counting initializers): %s; want one input x (batch, ...): an energy that also takes a time, a label or a condition is read with those fixed; export a module that fixes them, e.g. forward(self, x): return model(x, t0.expand(x.shape[0], -1)) with the value t0 you want", len(ins), strings.Join(names, ", "))
	}
	in := ins[0]
	n.input = in.Name
	n.inElem = in.ElemType
	switch in.ElemType {
	case TypeFloat:
		n.Dtype = tensor.Float32
	case TypeDouble:
		n.Dtype = tensor.Float64
	default:
		return fmt.Errorf("input %q is %v, want float or double", in.Name, in.ElemType)
	}
	if !in.HasShape || len(in.Shape) < 1 {
		return fmt.Errorf("input %q has shape %s, want (batch, d), (batch, C, H, W, ...) with every dimension after the batch known, or (batch) for d = 1", in.Name, dimsString(in))
	}
	n.dim = 1
	for i, d := range in.Shape[1:] {
		if d.Value < 1 {
			return fmt.Errorf("input %q has shape %s: dimension %d is not a known positive size: flowebm takes the batch dimension (0) as the only dynamic one; export with dynamic_axes={%q: {0: \"batch\"}}", in.Name, dimsString(in), i+1, in.Name)
		}
		if d.Value > maxElements || int64(n.dim)*d.Value > maxElements {
			return fmt.Errorf("input %q has shape %s: more than %d values per sample", in.Name, dimsString(in), maxElements)
		}
		n.inShape = append(n.inShape, int(d.Value))
		n.dim *= int(d.Value)
	}
	if d := in.Shape[0]; d.Value > 0 && d.Param == "" {
		if d.Value > maxElements || d.Value*int64(n.dim) > maxElements {
			return fmt.Errorf("input %q has shape %s: more than %d values", in.Name, dimsString(in), maxElements)
		}
		n.batch = int(d.Value)
	}
	return nil
}

func dimsString(v *ValueInfo) string {
	if !v.HasShape {
		return "unknown"
	}
	parts := make([]string, len(v.Shape))
	for i, d := range v.Shape {
		switch {
		case d.Param != "":
			parts[i] = d.Param
		case d.Value >= 0:
			parts[i] = fmt.Sprint(d.Value)
		default:
			parts[i] = "?"
		}
	}
	return "(" + strings.Join(parts, ", ") + ")"
}

// pickOutput chooses the energy output.
func (n *Net) pickOutput(g *Graph) error {
	var names []string
	for _, v := range g.Outputs {
		names = append(names, v.Name)
	}
	if n.cfg.Output != "" {
		for _, v := range names {
			if v == n.cfg.Output {
				n.outputName = v
				return nil
			}
		}
		if len(names) == 0 {
			return fmt.Errorf("no graph output named %q: the graph has no outputs", n.cfg.Output)
		}
		return fmt.Errorf("no graph output named %q (outputs: %s)", n.cfg.Output, quoteAll(names))
	}
	if len(names) == 0 {
		return fmt.Errorf("graph has no outputs: it must declare the energy (or log density) as an output")
	}
	if len(names) != 1 {
		return &OutputsError{Names: names}
	}
	n.outputName = names[0]
	return nil
}

func quoteAll(names []string) string {
	q := make([]string, len(names))
	for i, s := range names {
		q[i] = fmt.Sprintf("%q", s)
	}
	return strings.Join(q, ", ")
}

// topoSort orders the nodes so that each comes after the producers of its
// inputs, and reports cycles and inputs nothing produces.
func topoSort(g *Graph, inits map[string]*Tensor, input string) ([]*Node, error) {
	producer := map[string]*Node{}
	for _, nd := range g.Nodes {
		for _, o := range nd.Outputs {
			if o == "" {
				continue
			}
			if p, ok := producer[o]; ok {
				return nil, fmt.Errorf("node %q and node %q both produce %q", p.Name, nd.Name, o)
			}
			producer[o] = nd
		}
	}
	state := map[*Node]int{} // 1 visiting, 2 done
	var order []*Node
	var visit func(nd *Node, depth int) error
	visit = func(nd *Node, depth int) error {
		switch state[nd] {
		case 1:
			return fmt.Errorf("node %q (%s) is part of a cycle", nodeName(nd), nd.OpType)
		case 2:
			return nil
		}
		if depth > len(g.Nodes) {
			return fmt.Errorf("node %q (%s): graph too deep", nodeName(nd), nd.OpType)
		}
		state[nd] = 1
		for _, in := range nd.Inputs {
			if in == "" || in == input {
				continue
			}
			if _, ok := inits[in]; ok {
				continue
			}
			p, ok := producer[in]
			if !ok {
				return fmt.Errorf("node %q (%s): input %q is not a graph input, an initializer or any node's output", nodeName(nd), nd.OpType, in)
			}
			if err := visit(p, depth+1); err != nil {
				return err
			}
		}
		state[nd] = 2
		order = append(order, nd)
		return nil
	}
	// Visit in file order so the result is the file order when it is valid.
	for _, nd := range g.Nodes {
		if err := visit(nd, 0); err != nil {
			return nil, err
		}
	}
	return order, nil
}

// nodeName is a node's name, or its first output's when it has none.
func nodeName(nd *Node) string {
	if nd.Name != "" {
		return nd.Name
	}
	if len(nd.Outputs) > 0 {
		return nd.Outputs[0]
	}
	return fmt.Sprintf("#%d", nd.Index)
}

// Dim is the number of values per sample (the product of the input's
// dimensions after the batch).
func (n *Net) Dim() int { return n.dim }

// InputShape is the model's input shape per sample (without the batch).
func (n *Net) InputShape() []int { return append([]int(nil), n.inShape...) }

// InputName and OutputName name the graph input and the energy output.
func (n *Net) InputName() string  { return n.input }
func (n *Net) OutputName() string { return n.outputName }

// DeclaredBatch is the input's fixed batch size, or 0 if it is symbolic.
func (n *Net) DeclaredBatch() int { return n.batch }

// Model is the decoded ONNX model.
func (n *Net) Model() *Model { return n.model }

// ParamSpecs lists the trainable float initializers, initialised to the
// file's values.
func (n *Net) ParamSpecs() []layers.ParamSpec { return n.specs }

// paramName is the name of the parameter that the initializer init is.
func (n *Net) paramName(init string) string {
	if p, ok := n.rename[init]; ok {
		return p
	}
	return init
}

// initName is the name of the initializer that the parameter param is.
func (n *Net) initName(param string) string {
	for init, p := range n.rename {
		if p == param {
			return init
		}
	}
	return param
}

// renameParams names the parameters by rename (initializer → parameter).
func (n *Net) renameParams(rename map[string]string) {
	n.rename = rename
	for i := range n.specs {
		n.specs[i].Name = n.paramName(n.specs[i].Name)
	}
}

// check builds the graph once, at the declared batch size (2 when it is
// symbolic), to find every error before anyone uses the network, and to
// find the float initializers the computation reads (the parameters).
func (n *Net) check() error {
	bsz := n.batch
	if bsz == 0 {
		bsz = 2
	}
	g := G.NewGraph()
	rec := &recordingBinder{g: g, dtype: n.Dtype, inits: n.inits, used: map[string]bool{}}
	x := G.NewMatrix(g, n.Dtype, G.WithShape(bsz, n.dim), G.WithName("x"))
	n.trainable = nil // every float initializer may be bound while recording
	in := newInstance(n, rec, bsz)
	if _, err := in.run(x); err != nil {
		return fmt.Errorf("%s: %w", n.File, err)
	}
	n.pointBytes, n.largestPoint = in.mem.pointBytes, in.mem.largestPoint
	n.reads = make(map[string]bool, len(rec.used))
	for name := range rec.used {
		n.reads[name] = true
	}
	n.trainable = rec.used
	for name := range n.trainable {
		// A −Inf attention mask (maskOnly) is a constant (an empty tensor
		// is one already: lookup never binds it as a parameter).
		if checkFinite(n.inits[name]) != nil {
			delete(n.trainable, name)
		}
	}
	if err := n.restrictParameters(); err != nil {
		return fmt.Errorf("%s: %w", n.File, err)
	}
	var names []string
	for name := range n.trainable {
		names = append(names, name)
	}
	sort.Strings(names)
	n.specs = nil
	for _, name := range names {
		t := n.inits[name]
		shape := make([]int, len(t.Dims))
		for i, d := range t.Dims {
			shape[i] = int(d)
		}
		if len(shape) == 0 {
			shape = []int{1}
		}
		n.specs = append(n.specs, layers.ParamSpec{Name: name, Shape: shape, FanIn: 1, Init: copyInit(t.Float)})
	}
	return n.checkBatch()
}

// checkBatch runs the graph at two batch sizes (pinned.go), after
// refusing a graph whose output for a sample depends on the other
// samples (coupled). A graph
// declaring its batch N that gives other outputs at N+1 (or cannot run
// there) is pinned: it runs on chunks of N. A graph declaring a dynamic
// batch that gives other outputs at 2 and 3 is refused, as no batch is
// known to be right.
func (n *Net) checkBatch() error {
	b := n.batch
	if b == 0 {
		b = 2
	}
	if n.chooseProbe(b); n.unchecked != "" {
		n.pinned = n.batch > 0 // as exported: chunks of its batch
		return nil
	}
	if err := n.runChecks(); err != nil {
		return err
	}
	n.pairs = !n.pinned && n.batch != 1 && n.buildAt(1) != nil
	return nil
}

// buildAt builds the graph at batch b on a scratch graph (probe 59 A2:
// acc = torch.zeros(len(x)); acc + E, exported at 16, gives 16 values at
// a batch of 1, where the constant broadcasts; at other batches it falls
// back to the constant's value).
func (n *Net) buildAt(b int) error {
	g := G.NewGraph()
	rec := &recordingBinder{g: g, dtype: n.Dtype, inits: n.inits, used: map[string]bool{}}
	x := G.NewMatrix(g, n.Dtype, G.WithShape(b, n.dim), G.WithName("x"))
	_, err := newInstance(n, rec, b).run(x)
	return err
}

// runChecks runs the load checks at n.probe's points (checkBatch).
func (n *Net) runChecks() error {
	if n.batch == 0 {
		// Coupled at 2 first: a graph pinned to an export batch of 2 is
		// not, and is then found by comparing batches 2 and 3.
		if err := n.checkCoupled(2); err != nil {
			return err
		}
		bound, why, err := n.batchBound(2, 3)
		if big := new(tensorTooLarge); errors.As(err, &big) {
			return fmt.Errorf("%s: %w", n.File, err)
		}
		if errors.Is(err, errInconclusive) {
			n.markUnchecked(nil)
			return nil
		}
		if err == nil && bound {
			return fmt.Errorf("%s: the input %q declares a dynamic batch, but the graph's outputs depend on the batch it runs at: %s. A value of the export's batch was kept as a constant (PyTorch traces x.view(x.size(0), -1) and torch.zeros(len(x)) so when the exported module reads the batch from Python), or the model mixes samples (batch statistics): export with the batch dimension read from the tensor (x.flatten(1), x.reshape(-1, d)), or without dynamic_axes so that flowebm runs it on chunks of the export batch", n.File, n.input, why)
		}
		return n.checkCoupled(coupledBatch)
	}
	if err := n.checkCoupled(n.batch); err != nil {
		return err
	}
	bound, _, err := n.batchBound(n.batch, n.batch+1)
	n.pinned = n.pinned || bound || err != nil // not run: chunks of N are right either way
	if errors.Is(err, errInconclusive) {
		n.markUnchecked(nil)
		return nil
	}
	if !n.pinned && n.batch < coupledBatch {
		// Run whole at every batch, it must not mix samples at larger
		// ones (probe 50: exported at batch 1, x.cumsum(0) was checked
		// at no batch of 2 or more): chunks of N compute as the export.
		c, _, err := n.coupled(coupledBatch)
		n.pinned = c || err != nil
	}
	return nil
}

// coupledBatch is the larger batch at which the load checks look for
// samples mixed: 7 rows, so that a roll of the batch by up to 6 rows
// (the identity at batches 2 and 3; probe 50: x.roll(6, 0)) moves them.
const coupledBatch = 7

// checkCoupled refuses a graph whose output for a sample at batch b
// depends on the other samples (coupled); a batch of 1 has none.
func (n *Net) checkCoupled(b int) error {
	if b < 2 {
		return nil
	}
	c, why, err := n.coupled(b)
	if err != nil { // no finite outputs, or it could not run at the checks' points (probe 53: a table lookup out of range passed)
		n.markUnchecked(err)
		n.pinned = n.batch > 0 // as exported: chunks of its batch
		return nil
	}
	if err == nil && c {
		return fmt.Errorf("%s: the graph's output for a point depends on the other points of its batch or on the point's row: %s, so it gives no energy per point: export it in eval mode (model.eval()), without the batch statistic or the row's term", n.File, why)
	}
	return nil
}

// CheckAt runs the load checks again at the points x given (rows of the
// input's size, flat; a command's --points, a chain's starts), which
// where names in messages ("the points of --points p.npy"), drawn whole,
// some scaled up: a graph that mixes the points of a batch only where its
// user's points are (defined there only: a table on 20..29, log(x − 5);
// or guarded elsewhere: torch.where(inside, E, 1e6), constant at the
// checks' own points) is refused there (probe 55: a guarded batch mean
// loaded checked, its energies wrong at exit 0). A graph the load checks
// could not check (Unchecked) and that these points check loses its
// note; points that cannot check it (one point, or near-copies of one;
// outputs all alike or not computable there) leave the graph as it was.
func (n *Net) CheckAt(x []float64, where string) error {
	rows := len(x) / n.dim
	if rows == 0 {
		return nil
	}
	pts := probeDist{name: where, points: n.telling(x[:rows*n.dim]), dim: n.dim}
	why := ""
	switch {
	case !twoDistinctRows(pts.points, n.dim): // nothing to mix a point with
		why = "they are one point, or copies of one to 1e-6"
	default:
		why = n.uninformativeAt(pts)
	}
	if why != "" {
		if n.unchecked != "" {
			n.unchecked += fmt.Sprintf(" (nor at %s: %s)", where, why)
		}
		return nil
	}
	note, probe, pinned := n.unchecked, n.probe, n.pinned
	defer func() { n.probe = probe }()
	n.unchecked, n.probe = "", pts
	if err := n.runChecks(); err != nil {
		n.unchecked = note
		if note == "" {
			return fmt.Errorf("%w (found at %s: the load checks' own points, where the graph's outputs differ, did not show it)", err, where)
		}
		return fmt.Errorf("%w (found at %s: the graph's outputs are not finite at the load checks' own points)", err, where)
	}
	if n.unchecked != "" { // not computable there: as it was
		n.unchecked, n.pinned = note, pinned
		if note != "" {
			n.unchecked = note + fmt.Sprintf(" (nor could the checks run at %s)", where)
		}
	}
	return nil
}

// telling is the rows of x (up to maxTelling of them, evenly spaced) at
// which the graph's output is not its most frequent value, where a value
// recurs: a guard's constant (torch.where(inside, E, 1e6)) shows no
// coupling, and checks drawing mostly guarded points passed (probe 56:
// 216 of 1,000 grid points inside the domain, a batch max loaded at exit
// 0). All of x where no value recurs, fewer than 2 rows are left, or the
// graph cannot run on them.
func (n *Net) telling(x []float64) []float64 {
	rows := len(x) / n.dim
	pick := make([]float64, 0, min(rows, maxTelling)*n.dim)
	for i := range min(rows, maxTelling) {
		r := i * rows / min(rows, maxTelling)
		pick = append(pick, x[r*n.dim:(r+1)*n.dim]...)
	}
	m := len(pick) / n.dim
	b := m
	if n.batch > 0 {
		b = n.batch
	}
	b = min(b, n.MaxBatch())
	var out []float64
	for from := 0; from < m; from += b { // in batches the graph runs at (the last padded)
		chunk := pick[from*n.dim : min(m, from+b)*n.dim]
		k := len(chunk) / n.dim
		in := append(slices.Clone(chunk), make([]float64, (b-k)*n.dim)...)
		for r := k; r < b; r++ {
			copy(in[r*n.dim:(r+1)*n.dim], chunk[:n.dim])
		}
		y, err := n.evaluate(in, b)
		if err != nil {
			return x
		}
		v := y[n.outputName]
		if v == nil {
			return x
		}
		out = append(out, v[:k*(len(v)/b)]...)
	}
	per := len(out) / m
	count := map[float64]int{}
	for r := range m {
		count[out[r*per]]++
	}
	mode, most := 0.0, 1
	for v, c := range count {
		if c > most || c == most && v < mode {
			mode, most = v, c
		}
	}
	if most < 2 {
		return x
	}
	var keep []float64
	for r := range m {
		if out[r*per] != mode {
			keep = append(keep, pick[r*n.dim:(r+1)*n.dim]...)
		}
	}
	if len(keep) < 2*n.dim {
		return x
	}
	return keep
}

// maxTelling is how many of the user's points telling evaluates.
const maxTelling = 256

// uninformativeAt says why the points of d cannot check the graph, or is
// empty: its outputs at a batch of them cannot be computed, are not
// finite, or are those at another draw (a guard's constant), and no
// comparison there could show a coupling.
func (n *Net) uninformativeAt(d probeDist) string {
	b := max(n.batch, 2)
	rng := rand.New(rand.NewPCG(batchProbeSeed+3, uint64(n.dim)))
	y, err := n.evaluate(d.values(rng, b*n.dim, 1), b)
	switch {
	case err != nil:
		return "the graph cannot be computed there"
	case finiteShare(y) == 0:
		return "the graph's outputs are not finite there"
	case n.alike(y, d, rng, b):
		return "the graph's outputs are the same at all of them"
	}
	return ""
}

// twoDistinctRows reports whether the rows of dim values x hold two
// points apart by more than 1e-6 (relative) in some coordinate: points
// nearer than that cannot show a coupling above the checks' round-off
// (probe 55: copies of one point jittered by 1e-9 passed them).
func twoDistinctRows(x []float64, dim int) bool {
	for i := dim; i < len(x); i += dim {
		for j := range dim {
			a, b := x[j], x[i+j]
			if math.Abs(a-b) > 1e-6*(1+max(math.Abs(a), math.Abs(b))) {
				return true
			}
		}
	}
	return false
}

// Unchecked says why the load checks that the graph gives one energy per
// point could not run (its outputs are not finite at the points they run
// it on), or is empty where they ran. A command prints it as a note.
func (n *Net) Unchecked() string { return n.unchecked }

// ParamCount is the number of trainable parameter values.
func (n *Net) ParamCount() int { return layers.SpecsSize(n.specs) }

// GraphValues is about how many values the compiled graphs of the
// network hold per point: those it computes from the input (tallied as
// the graph is built), times 1.25 while it is only evaluated and 4 while
// it is differentiated (a sampler holds the graph of its chains and of
// their proposals). Measured, float64: energy on a 64-channel
// convolution on 28×28 images, peak RSS 2.9 times the tally per point
// with ∇ₓE; sample (MALA, 100 chains, the default warm-up) on a
// 64-channel, three-convolution EBM, a live heap of 6 MB a chain, 3.6
// times its tally of 1.66 MB (probe 51: at 3 times, a count of chains
// said to fit died out of memory). The memory checks of energy and
// sample size their batches with it (probe 50: they counted an ONNX
// graph's values as none).
func (n *Net) GraphValues(grad bool) float64 {
	v := n.pointBytes / float64(n.Dtype.Size())
	if grad {
		return 4 * v
	}
	return 1.25 * v
}

// MaxBatch is the largest batch at which no value the graph computes
// from its input is over the size one tensor may hold (maxTensorBytes):
// a larger batch is refused as the graph is built.
func (n *Net) MaxBatch() int {
	if !(n.largestPoint > 0) {
		return math.MaxInt32
	}
	return max(1, int(maxTensorBytes/n.largestPoint))
}

// ParametersKey is the metadata_props key that lists a model's trainable
// parameters, as a JSON array of initializer names (io/onnx/crosscheck's
// export helper writes the module's named_parameters()). Without it every
// float initializer the computation reads is trainable; with it the others
// (a coupling's mask, a MADE's masks: PyTorch buffers) are constants.
const ParametersKey = "flowebm.parameters"

// restrictParameters keeps as trainable only the initializers that the
// model's metadata lists under ParametersKey, if it has that key.
func (n *Net) restrictParameters() error {
	list, ok := n.model.Metadata[ParametersKey]
	if !ok {
		return nil
	}
	var names []string
	if err := json.Unmarshal([]byte(list), &names); err != nil {
		return fmt.Errorf("metadata_props %q: %v; want a JSON array of initializer names", ParametersKey, err)
	}
	merged := map[string]string{} // a weight PyTorch merged into another of equal value, read through an Identity
	for _, nd := range n.model.Graph.Nodes {
		if nd.OpType == "Identity" && nd.Domain == "" && len(nd.Inputs) == 1 && len(nd.Outputs) == 1 && n.inits[nd.Inputs[0]] != nil {
			merged[nd.Outputs[0]] = nd.Inputs[0]
		}
	}
	keep := map[string]bool{}
	for _, name := range names {
		if src, ok := merged[name]; ok && n.inits[name] == nil {
			name = src // its weight is that one's (training such a flow is refused: noMergedWeights; probe 65: refused frozen too)
		}
		t, ok := n.inits[name]
		if !ok || !isFloat(t.DataType) {
			return fmt.Errorf("metadata_props %q lists %q, which is not a float initializer of the graph (PyTorch's constant folding may have folded it into another value: export with do_constant_folding=False, as io/onnx/crosscheck/export_flow.py does)", ParametersKey, name)
		}
		if n.trainable[name] {
			keep[name] = true
		}
	}
	n.trainable = keep
	return nil
}

func copyInit(v []float64) layers.Init {
	return func(_ *rand.Rand, _ int, dst []float64) { copy(dst, v) }
}

// recordingBinder binds every float initializer as a parameter and
// records which ones the graph reads.
type recordingBinder struct {
	g     *G.ExprGraph
	dtype tensor.Dtype
	inits map[string]*Tensor
	used  map[string]bool
}

func (r *recordingBinder) Graph() *G.ExprGraph { return r.g }
func (r *recordingBinder) Dtype() tensor.Dtype { return r.dtype }
func (r *recordingBinder) Param(name string, shape ...int) (*G.Node, error) {
	if _, ok := r.inits[name]; !ok {
		return nil, fmt.Errorf("no initializer %q", name)
	}
	r.used[name] = true
	return G.NewTensor(r.g, r.dtype, len(shape), G.WithShape(shape...), G.WithName(name)), nil
}

// Outputs adds the network to b's graph for the batch x (B, Dim) and
// returns the named graph outputs, each as (B, k): k values per sample,
// flattened.
func (n *Net) Outputs(b layers.Binder, x *G.Node, names ...string) ([]*G.Node, error) {
	s := x.Shape()
	if len(s) != 2 || s[1] != n.dim {
		return nil, fmt.Errorf("%s: input of shape %v, want (batch, %d)", n.File, s, n.dim)
	}
	for _, name := range names {
		if !n.hasOutput(name) {
			return nil, fmt.Errorf("%s: no graph output named %q (outputs: %s)", n.File, name, quoteAll(n.OutputNames()))
		}
	}
	build := func(x *G.Node) ([]*G.Node, error) {
		in := newInstance(n, b, x.Shape()[0])
		if err := in.buildAll(x); err != nil {
			return nil, err
		}
		out := make([]*G.Node, len(names))
		for i, name := range names {
			y, err := in.perSample(name)
			if err != nil {
				return nil, err
			}
			out[i] = y
		}
		return out, nil
	}
	out, err := n.atBatch(x, build)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", n.File, err)
	}
	return out, nil
}

// atBatch builds the graph on x by build: whole, or on chunks of the
// declared batch where the graph is pinned to it.
func (n *Net) atBatch(x *G.Node, build func(x *G.Node) ([]*G.Node, error)) ([]*G.Node, error) {
	switch bsz := x.Shape()[0]; {
	case n.pinned && bsz != n.batch:
		return chunked(x, n.batch, build)
	case n.pairs && bsz == 1:
		return chunked(x, 2, build)
	}
	return build(x)
}

// OutputNames lists the graph's outputs.
func (n *Net) OutputNames() []string {
	var names []string
	for _, v := range n.model.Graph.Outputs {
		names = append(names, v.Name)
	}
	return names
}

func (n *Net) hasOutput(name string) bool {
	for _, v := range n.model.Graph.Outputs {
		if v.Name == name {
			return true
		}
	}
	return false
}

// Energy adds the network to b's graph for the batch x (B, Dim) and
// returns the energies (B).
func (n *Net) Energy(b layers.Binder, x *G.Node) (*G.Node, error) {
	s := x.Shape()
	if len(s) != 2 || s[1] != n.dim {
		return nil, fmt.Errorf("%s: input of shape %v, want (batch, %d)", n.File, s, n.dim)
	}
	y, err := n.atBatch(x, func(x *G.Node) ([]*G.Node, error) {
		y, err := newInstance(n, b, x.Shape()[0]).run(x)
		return []*G.Node{y}, err
	})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", n.File, err)
	}
	return y[0], nil
}

// OutputsError is a graph of several outputs read with no output chosen
// (Config.Output).
type OutputsError struct{ Names []string }

func (e *OutputsError) Error() string {
	return fmt.Sprintf("graph has %d outputs (%s): choose the energy output by name (flowebm energy and sample: --output NAME; the Go API: Config.Output)", len(e.Names), quoteAll(e.Names))
}
