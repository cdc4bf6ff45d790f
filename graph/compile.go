package graph

import (
	"fmt"
	"slices"

	"github.com/flowebm/flowebm/layers"
	"gonum.org/v1/gonum/mat"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// scope binds one parameter set into one graph; it implements layers.Binder.
// Each parameter gets exactly one node per graph.
type scope struct {
	g      *G.ExprGraph
	dtype  tensor.Dtype
	params *Params
	nodes  map[string]*G.Node
}

func newScope(g *G.ExprGraph, p *Params) *scope {
	return &scope{g: g, dtype: p.dtype, params: p, nodes: make(map[string]*G.Node)}
}

func (s *scope) Graph() *G.ExprGraph { return s.g }
func (s *scope) Dtype() tensor.Dtype { return s.dtype }

func (s *scope) Param(name string, shape ...int) (*G.Node, error) {
	if n, ok := s.nodes[name]; ok {
		if !slices.Equal([]int(n.Shape()), shape) {
			return nil, fmt.Errorf("graph: parameter %s used with shapes %v and %v in one graph", name, n.Shape(), shape)
		}
		return n, nil
	}
	p := s.params.Get(name)
	if p == nil {
		return nil, fmt.Errorf("graph: no parameter named %q", name)
	}
	v, err := p.view(shape)
	if err != nil {
		return nil, err
	}
	// Gorgonia merges nodes of equal name, type and shape: qualify the name
	// by the parameter set so that two models with the same parameter names
	// (two flows, an imported EBM) stay distinct in one graph.
	n := G.NewTensor(s.g, s.dtype, len(shape), G.WithShape(shape...), G.WithName(fmt.Sprintf("%s@%p", name, s.params)), G.WithValue(v))
	s.nodes[name] = n
	return n, nil
}

// wrt returns the nodes of all parameters in declaration order, or an error
// naming a parameter the graph does not use (its gradient would be zero by
// construction, which is almost always an architecture mistake).
func (s *scope) wrt() (G.Nodes, error) {
	ns := make(G.Nodes, len(s.params.list))
	for i, p := range s.params.list {
		n, ok := s.nodes[p.Name]
		if !ok {
			return nil, fmt.Errorf("graph: parameter %s is not used by the model", p.Name)
		}
		ns[i] = n
	}
	return ns, nil
}

// program is a compiled graph for fixed input shapes: inputs are bound
// tensors that run() reads; run() leaves the outputs' values in the
// executor, where the accessors copy them from.
type program struct {
	inputs  []*tensor.Dense
	outs    []*G.Node
	exec    *executor
	tape    bool // run on Gorgonia's TapeMachine instead (tests compare the two)
	vm      G.VM
	outVals []G.Value
}

// buildFunc adds a computation to g given its input nodes and returns the
// output nodes (none of them scalars).
type buildFunc func(g *G.ExprGraph, in []*G.Node) ([]*G.Node, error)

// useTapeMachine makes compile build programs that run on Gorgonia's
// TapeMachine (set by tests that compare it with the executor).
var useTapeMachine = false

// compile builds a program; inputs are (rows, cols) matrices or, for a
// one-element shape, vectors.
func compile(dtype tensor.Dtype, shapes [][]int, build buildFunc) (p *program, err error) {
	defer func() {
		if r := recover(); r != nil {
			p, err = nil, fmt.Errorf("graph: building the graph failed: %v", r)
		}
	}()
	g := G.NewGraph()
	p = &program{tape: useTapeMachine}
	in := make([]*G.Node, len(shapes))
	for i, s := range shapes {
		t := tensor.New(tensor.WithShape(s...), tensor.Of(dtype))
		p.inputs = append(p.inputs, t)
		in[i] = G.NewTensor(g, dtype, len(s), G.WithShape(s...), G.WithName(fmt.Sprintf("input%d", i)), G.WithValue(t))
	}
	outs, err := build(g, in)
	if err != nil {
		return nil, err
	}
	for _, o := range outs {
		if o.IsScalar() {
			return nil, fmt.Errorf("graph: internal error: scalar output %v", o)
		}
	}
	p.outs = outs
	if !p.tape {
		p.exec = newExecutor(g, outs)
		return p, nil
	}
	reads := make(G.Nodes, len(outs))
	p.outVals = make([]G.Value, len(outs))
	for i, o := range outs {
		p.outVals[i] = tensor.New(tensor.WithShape(o.Shape()...), tensor.Of(dtype))
		reads[i] = G.Read(o, &p.outVals[i])
	}
	p.vm = G.NewTapeMachine(g.ExactSubgraphRoots(reads...))
	return p, nil
}

// run executes the program once.
func (p *program) run() (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("graph: evaluation failed: %v", r)
		}
	}()
	if !p.tape {
		return p.exec.run()
	}
	p.vm.Reset()
	return p.vm.RunAll()
}

// output returns output i's value after the last run.
func (p *program) output(i int) tensor.Tensor {
	if !p.tape {
		return p.exec.value(p.outs[i]).(tensor.Tensor)
	}
	return p.outVals[i].(tensor.Tensor)
}

// setMatrix copies the rows of x into input i.
func (p *program) setMatrix(i int, x mat.Matrix) {
	t := p.inputs[i]
	r, c := x.Dims()
	switch d := t.Data().(type) {
	case []float64:
		if rm, ok := x.(mat.RawMatrixer); ok && rm.RawMatrix().Stride == c {
			copy(d, rm.RawMatrix().Data[:r*c])
			return
		}
		for a := 0; a < r; a++ {
			for b := 0; b < c; b++ {
				d[a*c+b] = x.At(a, b)
			}
		}
	case []float32:
		for a := 0; a < r; a++ {
			for b := 0; b < c; b++ {
				d[a*c+b] = float32(x.At(a, b))
			}
		}
	}
}

// setVector copies v into input i.
func (p *program) setVector(i int, v []float64) { writeFrom(p.inputs[i], v) }

// vector copies output i into dst.
func (p *program) vector(i int, dst []float64) { readInto(dst, p.output(i)) }

// matrix copies output i into dst, which has the output's shape.
func (p *program) matrix(i int, dst *mat.Dense) {
	raw := dst.RawMatrix()
	t := p.output(i)
	if raw.Stride == raw.Cols {
		readInto(raw.Data[:raw.Rows*raw.Cols], t)
		return
	}
	for r := 0; r < raw.Rows; r++ {
		row := raw.Data[r*raw.Stride : r*raw.Stride+raw.Cols]
		switch d := t.Data().(type) {
		case []float64:
			copy(row, d[r*raw.Cols:])
		case []float32:
			for c := range row {
				row[c] = float64(d[r*raw.Cols+c])
			}
		}
	}
}

// programs caches compiled programs by the rows they take and the block
// they serve.
type programs struct {
	m      map[shardKey]*program
	blocks map[int][]*program // the programs of each batch size's blocks (split)
	errs   []error            // the blocks' errors of the last run (sharded)
}

func (c *programs) get(key shardKey, dtype tensor.Dtype, shapes [][]int, build buildFunc) (*program, error) {
	if p, ok := c.m[key]; ok {
		return p, nil
	}
	p, err := compile(dtype, shapes, build)
	if err != nil {
		return nil, err
	}
	if c.m == nil {
		c.m = make(map[shardKey]*program)
	}
	c.m[key] = p
	return p, nil
}

// reset drops every compiled program.
func (c *programs) reset() { c.m, c.blocks = nil, nil }

// checkBatch validates a (n, d) batch against a model dimension.
func checkBatch(what string, x mat.Matrix, d int) (int, error) {
	n, c := x.Dims()
	if c != d {
		return 0, fmt.Errorf("graph: %s has %d columns, model dimension is %d", what, c, d)
	}
	if n == 0 {
		return 0, fmt.Errorf("graph: %s is empty", what)
	}
	return n, nil
}

func checkLen(what string, v []float64, n int) error {
	if len(v) != n {
		return fmt.Errorf("graph: %s has length %d, want %d", what, len(v), n)
	}
	return nil
}

func checkDims(what string, m *mat.Dense, r, c int) error {
	if m == nil {
		return fmt.Errorf("graph: %s is nil", what)
	}
	if a, b := m.Dims(); a != r || b != c {
		return fmt.Errorf("graph: %s is %d×%d, want %d×%d", what, a, b, r, c)
	}
	return nil
}

// paramGrads returns the gradient nodes of cost w.r.t. every parameter of s.
func paramGrads(cost *G.Node, s *scope) (G.Nodes, error) {
	wrt, err := s.wrt()
	if err != nil {
		return nil, err
	}
	return G.Grad(cost, wrt...)
}

// readFlat copies outputs[from:] (one per parameter, in order) into a flat gradient.
func (p *program) readFlat(from int, dst []float64) {
	off := 0
	for i := from; i < len(p.outs); i++ {
		t := p.output(i)
		n := t.Shape().TotalSize()
		readInto(dst[off:off+n], t)
		off += n
	}
}

// sumOf is gorgonia.Sum over all elements, a scalar cost.
func sumOf(n *G.Node) (*G.Node, error) { return G.Sum(n) }

var _ layers.Binder = (*scope)(nil)
