package layers

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// Init fills the values of a parameter at initialisation. fanIn is the
// number of inputs of the layer the parameter belongs to.
type Init func(rng *rand.Rand, fanIn int, values []float64)

// TorchUniform is PyTorch's default initialisation of nn.Linear, for weights
// (kaiming_uniform_ with a = √5) and biases alike: U(−1/√fanIn, 1/√fanIn).
func TorchUniform(rng *rand.Rand, fanIn int, values []float64) {
	bound := 1 / math.Sqrt(float64(fanIn))
	for i := range values {
		values[i] = bound * (2*rng.Float64() - 1)
	}
}

// Zeros sets every value to zero.
func Zeros(_ *rand.Rand, _ int, values []float64) {
	for i := range values {
		values[i] = 0
	}
}

// ScaledNormal returns the initialisation N(0, (scale/√fanIn)²) used by the
// RealNVP of h2o64/flow_mcmc (scale 1e-6 makes the flow the identity up to
// about 1e-6).
func ScaledNormal(scale float64) Init {
	return func(rng *rand.Rand, fanIn int, values []float64) {
		sd := scale / math.Sqrt(float64(fanIn))
		for i := range values {
			values[i] = sd * rng.NormFloat64()
		}
	}
}

// ParamSpec describes one parameter tensor of a layer.
type ParamSpec struct {
	Name  string // PyTorch-style dotted name, e.g. "net.0.weight"
	Shape []int  // PyTorch layout, e.g. (out, in) for a Linear weight
	FanIn int    // the fan-in passed to Init
	Init  Init   // nil means TorchUniform
}

// Size is the number of scalars in the parameter.
func (p ParamSpec) Size() int {
	n := 1
	for _, s := range p.Shape {
		n *= s
	}
	return n
}

// Binder gives a layer access to the graph under construction.
type Binder interface {
	// Graph is the graph nodes are added to.
	Graph() *G.ExprGraph
	// Dtype is the graph's float type (tensor.Float64 or tensor.Float32).
	Dtype() tensor.Dtype
	// Param returns a node bound to the named parameter's values, with the
	// given shape (a reshaping view of the same values; it must have the
	// parameter's number of elements).
	Param(name string, shape ...int) (*G.Node, error)
}

// Scalar returns a constant node holding v in the binder's float type.
func Scalar(b Binder, v float64) *G.Node {
	if b.Dtype() == tensor.Float32 {
		return G.NewConstant(float32(v))
	}
	return G.NewConstant(v)
}

// Constant returns a constant matrix node of the given shape holding v
// (row-major) in the binder's float type. Gorgonia merges constant nodes of
// equal name whatever their values, shapes and types, so the node's name
// carries a hash of all three: distinct constants stay distinct (probe 57:
// an ONNX graph's column [[1],[2],[3]] and row [[1,2,3]] were one node,
// and its energies wrong at exit 0).
func Constant(b Binder, name string, v []float64, shape ...int) *G.Node {
	h := fnv.New64a()
	fmt.Fprintf(h, "%v%v", b.Dtype(), shape)
	var buf [8]byte
	for _, x := range v {
		binary.LittleEndian.PutUint64(buf[:], math.Float64bits(x))
		h.Write(buf[:])
	}
	name = fmt.Sprintf("%s#%016x", name, h.Sum64())
	var t *tensor.Dense
	if b.Dtype() == tensor.Float32 {
		f := make([]float32, len(v))
		for i, x := range v {
			f[i] = float32(x)
		}
		t = tensor.New(tensor.WithShape(shape...), tensor.WithBacking(f))
	} else {
		t = tensor.New(tensor.WithShape(shape...), tensor.WithBacking(append([]float64(nil), v...)))
	}
	return G.NewConstant(t, G.WithName(name))
}

// batchOf returns the leading dimension of a (B, d) node.
func batchOf(x *G.Node) (int, int, error) {
	s := x.Shape()
	if len(s) != 2 {
		return 0, 0, fmt.Errorf("layers: want a (batch, dim) matrix, have shape %v", s)
	}
	return s[0], s[1], nil
}
