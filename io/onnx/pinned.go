package onnx

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/flowebm/flowebm/layers"
	"github.com/flowebm/flowebm/layers/nd"
)

// A graph exported without dynamic_axes declares its input's batch, and
// PyTorch's tracer may keep that batch as a constant: x.view(x.size(0),
// -1) becomes a Reshape to (16, −1). Run at another batch, such a Reshape
// often still succeeds and mixes the values of several samples, so the
// energies are wrong without an error (probe 47: an image EBM that
// standardises each image, exported at batch 16, was off by 20% at batch
// 5). batchBound finds these graphs by running them, and Energy and
// Outputs then run them on chunks of the declared batch.

// batchProbeSeed seeds the points batchBound runs the graph on.
const batchProbeSeed = 47

// A probeDist is a distribution of the points the load checks run a
// graph on.
type probeDist struct {
	name string
	draw func(*rand.Rand) float64
	// points, where not nil, are rows of dim values drawn whole in place
	// of draw's values (CheckAt: the points a command was given).
	points []float64
	dim    int
}

// values draws m values from d with rng, times scale.
func (d probeDist) values(rng *rand.Rand, m int, scale float64) []float64 {
	x := make([]float64, m)
	if d.points != nil {
		rows := len(d.points) / d.dim
		for i := 0; i+d.dim <= m; i += d.dim {
			r := rng.IntN(rows)
			for j, v := range d.points[r*d.dim : (r+1)*d.dim] {
				x[i+j] = scale * v
			}
		}
		return x
	}
	for i := range x {
		x[i] = scale * d.draw(rng)
	}
	return x
}

// probeDists are tried in turn until the graph's outputs are finite at
// their points (chooseProbe): at points where a graph gives NaN, every
// comparison passes (probe 50: an image EBM whose first step is the
// logit log(x) − log(1 − x), NaN at standard normal points, escaped both
// checks, and its energies were off by 20% at exit 0).
var probeDists = []probeDist{
	{name: "standard normal", draw: (*rand.Rand).NormFloat64},
	{name: "uniform on (0.01, 0.99)", draw: func(r *rand.Rand) float64 { return 0.01 + 0.98*r.Float64() }},
	{name: "normal with σ 0.01", draw: func(r *rand.Rand) float64 { return 0.01 * r.NormFloat64() }},
	// A support of x > 1 (a shifted gamma; probe 52: at d = 2 no row of
	// the others was finite).
	{name: "1 + log-normal", draw: func(r *rand.Rand) float64 { return 1 + math.Exp(r.NormFloat64()) }},
}

// chooseProbe sets n.probe to the first of probeDists at whose points
// (a batch of b) every output checked is finite, or else to the one with
// the most finite outputs (a row whose output is NaN is not compared, in
// effect: a graph giving one energy per point gives NaN there in every
// comparison). Where none gives a finite output the graph cannot be
// checked, and n.unchecked says so (probe 50: refused, a model defined on
// a small region only, log(l1(x)), could not even be evaluated where it
// is defined). A graph that cannot run at b is left to the checks, which
// say so.
func (n *Net) chooseProbe(b int) {
	best, most := 0, -1.0
	var failed error
	for i, d := range probeDists {
		rng := rand.New(rand.NewPCG(batchProbeSeed+2, uint64(n.dim)))
		x := d.values(rng, b*n.dim, 1)
		y, err := n.evaluate(x, b)
		if err != nil {
			failed = err
			continue // not at these points (an index out of range): the next distribution
		}
		f := finiteShare(y)
		if f > 0 && n.alike(y, d, rng, b) { // alike at every point (a guard's constant, probe 55): no comparison can show a coupling
			f, failed = 0, errAlike
		}
		if f > most {
			best, most = i, f
		}
		if most == 1 {
			break
		}
	}
	n.probe = probeDists[best]
	if most <= 0 { // none finite and varying, or it ran at none
		n.markUnchecked(failed)
	}
}

// alike reports whether the graph's outputs y at b points drawn from d
// are those at b other points drawn with rng, each output equal (NaN
// pairs aside): the outputs of a guard, constant where the checks draw.
func (n *Net) alike(y map[string][]float64, d probeDist, rng *rand.Rand, b int) bool {
	y2, err := n.evaluate(d.values(rng, b*n.dim, 1), b)
	if err != nil {
		return false
	}
	for name, v := range y {
		for i, f := range v {
			if g := y2[name][i]; !math.IsNaN(f) && !math.IsNaN(g) && !n.sameOutput(f, g) {
				return false
			}
		}
	}
	return true
}

// errAlike is a graph whose outputs are the same at every point a load
// check drew.
var errAlike = errors.New("its outputs are the same at all of them (a guard: torch.where(inside, E, 1e6), nan_to_num)")

// errInconclusive is a load check that found no points at which the
// graph's outputs are finite, and so could not compare them.
var errInconclusive = errors.New("no points with finite outputs")

// markUnchecked records that the load checks could not run (Unchecked):
// the graph's outputs are not finite at their points, or, where failed is
// not nil, the graph could not be computed there (probe 54: a large
// convolution over the 256 MiB a tensor may hold at 7 points was said to
// be "not finite").
func (n *Net) markUnchecked(failed error) {
	var names []string
	for _, d := range probeDists {
		names = append(names, d.name)
	}
	why := "its outputs are not finite (NaN or ±Inf) at the points flowebm runs a graph on at load to check that it gives one energy per point (%s)"
	if errors.Is(failed, errAlike) {
		why = "its outputs are the same at all the points drawn from each of the distributions flowebm runs a graph on at load to check that it gives one energy per point (%s), as where a guard (torch.where(inside, E, 1e6), nan_to_num) replaces them"
	} else if big := new(tensorTooLarge); errors.As(failed, &big) { // round 75 A2: "could not compute it" of a model that computes at smaller batches
		why = "the check that it gives one energy per point runs it at a batch of %d points, where one of its values is larger than one tensor may hold (" + byteSize(big.bytes/float64(big.batch)) + " a point; energy and sample run it in smaller chunks)"
		n.unchecked = fmt.Sprintf("%s: "+why+", so it was not checked: were it to mix the points of a batch (batch statistics), its outputs (energies, log-densities) would be wrong", n.File, big.batch)
		return
	} else if failed != nil && !errors.Is(failed, errInconclusive) {
		msg := failed.Error()
		if _, inner, ok := strings.Cut(msg, "op.Do(): "); ok { // Gorgonia's machine's words around the operation's
			msg = inner
		}
		why = "the checks that it gives one energy per point could not compute it at their points (%s): " + strings.ReplaceAll(msg, "%", "%%")
	}
	n.unchecked = fmt.Sprintf("%s: "+why+", so it was not checked: were it to mix the points of a batch (batch statistics), its outputs (energies, log-densities) would be wrong", n.File, strings.Join(names, "; "))
}

// finiteBase draws b points from n.probe with rng and evaluates the graph
// there, drawing again (up to baseTries times) until every output is
// finite, or else returning the draw with the most finite outputs;
// errInconclusive where none has any (probe 51: the points of the
// coupling check differed from those the distribution was chosen at, a
// batch mean of log(x + 2) was NaN in every row there, and NaN equal to
// NaN passed every comparison).
func (n *Net) finiteBase(rng *rand.Rand, b int) ([]float64, map[string][]float64, error) {
	var best []float64
	var bestY map[string][]float64
	most := 0.0
	for range baseTries {
		x := n.probe.values(rng, b*n.dim, 1)
		y, err := n.evaluate(x, b)
		if err != nil {
			return nil, nil, err
		}
		if f := finiteShare(y); f > most {
			best, bestY, most = x, y, f
		}
		if most == 1 {
			break
		}
	}
	if most == 0 {
		return nil, nil, errInconclusive
	}
	return best, bestY, nil
}

// finiteRows returns the first and the last of the b rows whose outputs
// in y are all finite (0 and b − 1 where none is: the caller's base has
// some finite output, so a row has one).
func finiteRows(y map[string][]float64, b int) (first, last int) {
	first, last = -1, -1
	for row := range b {
		ok := true
		for _, v := range y {
			k := len(v) / b
			for _, f := range v[row*k : (row+1)*k] {
				ok = ok && !math.IsNaN(f) && !math.IsInf(f, 0)
			}
		}
		if ok {
			if first < 0 {
				first = row
			}
			last = row
		}
	}
	if first < 0 {
		return 0, b - 1
	}
	return first, last
}

// baseTries is how many draws finiteBase tries.
const baseTries = 16

// sortedNames are the names of the outputs y, sorted: the checks compare
// them in one order, so that a refusal names the same output each run.
func sortedNames(y map[string][]float64) []string {
	names := make([]string, 0, len(y))
	for name := range y {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// finiteShare is the share of the values of the outputs y that are finite.
func finiteShare(y map[string][]float64) float64 {
	all, finite := 0, 0
	for _, v := range y {
		for _, f := range v {
			all++
			if !math.IsNaN(f) && !math.IsInf(f, 0) {
				finite++
			}
		}
	}
	if all == 0 {
		return 0
	}
	return float64(finite) / float64(all)
}

// batchBound reports whether the graph's outputs for the same points
// differ between the batch sizes a and b (a < b; the first a points are
// the same), beyond round-off: every per-sample float output is compared.
// A graph that cannot be built or run at b is bound too; why says what
// differed.
func (n *Net) batchBound(a, b int) (bound bool, why string, err error) {
	rng := rand.New(rand.NewPCG(batchProbeSeed, uint64(n.dim)))
	x, ya, err := n.finiteBase(rng, a)
	if err != nil {
		return false, "", err // the build at a was checked: a failure here is the run's
	}
	x = append(x, n.probe.values(rng, (b-a)*n.dim, 1)...)
	yb, err := n.evaluate(x, b)
	if big := new(tensorTooLarge); errors.As(err, &big) { // round 73 A3: taken for a graph bound to its batch
		return false, "", err
	}
	if err != nil {
		return true, fmt.Sprintf("it cannot run at batch %d (%v)", b, err), nil
	}
	for _, name := range sortedNames(ya) {
		va := ya[name]
		vb, ok := yb[name]
		if !ok {
			return true, fmt.Sprintf("%s cannot be computed at batch %d", n.outputLabel(name), b), nil
		}
		k := len(va) / a
		for i, v := range va {
			w := vb[i] // row i/k of both: the first a rows are the same points
			if !n.sameOutput(v, w) {
				return true, fmt.Sprintf("%s for sample %d is %v at batch %d and %v at batch %d", n.outputLabel(name), i/k+1, v, a, w, b), nil
			}
		}
	}
	return false, "", nil
}

// coupled reports whether the graph's output for a sample at batch size
// b (at least 2) depends on the other samples of the batch: the first
// and the last sample's outputs are compared between two batches that
// differ in every other sample (drawn wider, so that a batch maximum or
// minimum changes too). Such a graph (BatchNorm in training
// mode, a minibatch standard deviation, x − x.max(0)) has no output per
// sample (probe 48: exported at a fixed batch it was run on chunks, and a
// point's energy changed with the file's other points).
func (n *Net) coupled(b int) (bool, string, error) {
	rng := rand.New(rand.NewPCG(batchProbeSeed+1, uint64(n.dim)))
	base, ya, err := n.finiteBase(rng, b)
	if err != nil {
		return false, "", err
	}
	// The same points one row further down (the last first): a graph
	// whose output depends on a sample's row (a per-row constant,
	// x * arange(len(x))) is no energy per sample either (probe 49).
	rolled := append(append([]float64(nil), base[(b-1)*n.dim:]...), base[:(b-1)*n.dim]...)
	yr, err := n.evaluate(rolled, b)
	if err != nil {
		return false, "", err
	}
	for _, name := range sortedNames(ya) {
		va := ya[name]
		k := len(va) / b
		for i := range va {
			j := (i + k) % len(va) // sample i/k is row i/k+1 of the rolled batch
			if v, w := va[i], yr[name][j]; !n.sameOutput(v, w) {
				return true, fmt.Sprintf("at batch %d, %s for one point is %v in row %d and %v in row %d. The model's output depends on the point's row, or on the point in another row (torch.arange(len(x)), a bias per row, x - x[0])", b, n.outputLabel(name), v, i/k+1, w, j/k+1), nil
			}
		}
	}
	// The first sample among others three times wider (a batch maximum
	// changes), the last among others a million times wider: a coupling
	// that shows only once a sample is large (+ clamp(x.abs().max(),
	// min=50), probe 49) shows there. The first and last of the samples
	// whose outputs are finite (probe 52: kept NaN rows stayed NaN, and
	// a coupled energy on x > 1 loaded).
	first, last := finiteRows(ya, b)
	for _, c := range []struct {
		keep  int
		scale float64
	}{{first, 3}, {last, 1e6}} {
		keep := c.keep
		yb, err := n.evaluateAmong(rng, base, keep, b, c.scale)
		if err != nil {
			return false, "", err
		}
		for _, name := range sortedNames(ya) {
			va := ya[name]
			k := len(va) / b
			for i := keep * k; i < (keep+1)*k; i++ {
				if v, w := va[i], yb[name][i]; !n.sameOutput(v, w) {
					return true, fmt.Sprintf("at batch %d, %s for sample %d is %v with some other samples and %v with others. The model mixes samples (batch statistics: BatchNorm in training mode, a minibatch standard deviation, x - x.max(0))", b, n.outputLabel(name), keep+1, v, w), nil
				}
			}
		}
	}
	return false, "", nil
}

// evaluateAmong evaluates the graph at a batch of b points: row keep of
// base among others drawn from n.probe, times scale, or unscaled where
// the graph cannot run at the scaled ones (session 33: a table indexed by
// x, out of its range at 3 times its points, left a coupled graph
// unchecked).
func (n *Net) evaluateAmong(rng *rand.Rand, base []float64, keep, b int, scale float64) (map[string][]float64, error) {
	for {
		other := n.probe.values(rng, b*n.dim, scale)
		copy(other[keep*n.dim:(keep+1)*n.dim], base[keep*n.dim:(keep+1)*n.dim])
		y, err := n.evaluate(other, b)
		if err == nil || scale == 1 {
			return y, err
		}
		scale = 1
	}
}

// outputLabel names the graph output name in a message: "its output"
// where the graph has no other (PyTorch names outputs by number, "28",
// unless output_names is given), `its output "name"` otherwise.
func (n *Net) outputLabel(name string) string {
	if len(n.model.Graph.Outputs) == 1 {
		return "its output"
	}
	return fmt.Sprintf("its output %q", name)
}

// sameOutput reports whether v and w, two evaluations of one output, are
// equal up to round-off (batchBound, coupled): 1e-9 relative in float64,
// 1e-4 in float32 (about 800 float32 epsilons, for sums taken in another
// order at another batch size), an infinity equal to itself (probe 50:
// +Inf and +Inf were "different"), NaN equal to NaN.
func (n *Net) sameOutput(v, w float64) bool {
	tol := 1e-9
	if n.Dtype == tensor.Float32 {
		tol = 1e-4
	}
	return v == w || math.Abs(v-w) <= tol*(1+math.Abs(v)) || math.IsNaN(v) && math.IsNaN(w)
}

// evaluate runs the graph on the points x (batch rows) with the file's
// parameter values and returns every per-sample float output, flat.
func (n *Net) evaluate(x []float64, batch int) (map[string][]float64, error) {
	g := G.NewGraph()
	xn := G.NewMatrix(g, n.Dtype, G.WithShape(batch, n.dim), G.WithName("x"), G.WithValue(typedTensor(n.Dtype, []int{batch, n.dim}, x)))
	in := newInstance(n, &fileBinder{g: g, dtype: n.Dtype, inits: n.inits}, batch)
	if err := in.buildAll(xn); err != nil {
		return nil, err
	}
	nodes := map[string]*G.Node{}
	for _, out := range n.model.Graph.Outputs {
		if out.Name != n.outputName && !slices.Contains(n.cfg.Read, out.Name) {
			continue // not read: not checked
		}
		y, err := in.perSample(out.Name)
		if err != nil {
			continue // an integer output, or not per sample: not compared
		}
		nodes[out.Name] = y
	}
	if len(nodes) == 0 {
		return nil, fmt.Errorf("no per-sample float output")
	}
	m := G.NewTapeMachine(g)
	defer m.Close()
	if err := m.RunAll(); err != nil {
		return nil, err
	}
	vals := map[string][]float64{}
	for name, y := range nodes {
		vals[name] = valueFloats(y.Value())
	}
	return vals, nil
}

// fileBinder binds every float initializer as a tensor holding the
// file's values.
type fileBinder struct {
	g     *G.ExprGraph
	dtype tensor.Dtype
	inits map[string]*Tensor
}

func (v *fileBinder) Graph() *G.ExprGraph { return v.g }
func (v *fileBinder) Dtype() tensor.Dtype { return v.dtype }
func (v *fileBinder) Param(name string, shape ...int) (*G.Node, error) {
	t, ok := v.inits[name]
	if !ok {
		return nil, fmt.Errorf("no initializer %q", name)
	}
	return G.NewTensor(v.g, v.dtype, len(shape), G.WithShape(shape...), G.WithName(name), G.WithValue(typedTensor(v.dtype, shape, t.Float))), nil
}

var _ layers.Binder = (*fileBinder)(nil)

// typedTensor is a tensor of dtype holding the values v.
func typedTensor(dtype tensor.Dtype, shape []int, v []float64) *tensor.Dense {
	if dtype == tensor.Float32 {
		f := make([]float32, len(v))
		for i, x := range v {
			f[i] = float32(x)
		}
		return tensor.New(tensor.WithShape(shape...), tensor.WithBacking(f))
	}
	return tensor.New(tensor.WithShape(shape...), tensor.WithBacking(append([]float64(nil), v...)))
}

// valueFloats reads a float tensor's values as float64.
func valueFloats(v G.Value) []float64 {
	switch d := v.Data().(type) {
	case []float64:
		return append([]float64(nil), d...)
	case []float32:
		f := make([]float64, len(d))
		for i, x := range d {
			f[i] = float64(x)
		}
		return f
	case float64:
		return []float64{d}
	case float32:
		return []float64{float64(d)}
	}
	return nil
}

// chunked builds the graph on x (B, Dim) as B/N chunks of N = size rows
// (the declared batch of a pinned graph; 2 for a single point where the
// graph cannot run at 1), the last one filled up with repeats of x's
// rows, and returns build's outputs for each chunk joined along the batch
// and cut to B rows.
func chunked(x *G.Node, size int, build func(chunk *G.Node) ([]*G.Node, error)) ([]*G.Node, error) {
	bsz := x.Shape()[0]
	chunks := (bsz + size - 1) / size
	xs := x
	if copies := (chunks*size + bsz - 1) / bsz; copies > 1 {
		all := make([]*G.Node, copies)
		for i := range all {
			all[i] = x
		}
		var err error
		if xs, err = concatRows(all); err != nil {
			return nil, err
		}
	}
	var outs [][]*G.Node
	for c := range chunks {
		xc, err := rows(xs, c*size, size)
		if err != nil {
			return nil, err
		}
		ys, err := build(xc)
		if err != nil {
			return nil, err
		}
		for i, y := range ys {
			if c == 0 {
				outs = append(outs, nil)
			}
			outs[i] = append(outs[i], y)
		}
	}
	joined := make([]*G.Node, len(outs))
	for i, ys := range outs {
		y := ys[0]
		if len(ys) > 1 {
			var err error
			if y, err = concatRows(ys); err != nil {
				return nil, err
			}
		}
		var err error
		if joined[i], err = rows(y, 0, bsz); err != nil {
			return nil, err
		}
	}
	return joined, nil
}

// rows is the rows from to from+count of y (rank 1 or 2), by nd.Slice:
// Gorgonia's Slice hashes its start and end as bytes, so that two slices
// of one node whose bounds agree modulo 256 are merged into one node
// (probe 48: the 257th chunk was given the first's rows, at exit 0).
func rows(y *G.Node, from, count int) (*G.Node, error) {
	shape := y.Shape()
	if from == 0 && count == shape[0] {
		return y, nil
	}
	op := nd.Slice{Starts: make([]int, len(shape)), Steps: make([]int, len(shape)), Counts: append([]int(nil), shape...)}
	for a := range shape {
		op.Steps[a] = 1
	}
	op.Starts[0], op.Counts[0] = from, count
	return nd.Apply(op, y)
}

// concatRows joins ys (of one rank) along their first axis, by nd.Concat.
func concatRows(ys []*G.Node) (*G.Node, error) {
	shapes := make([]tensor.Shape, len(ys))
	for i, y := range ys {
		shapes[i] = y.Shape()
	}
	return nd.Apply(nd.Ranked(nd.Concat{Axis: 0}, shapes...), ys...)
}
