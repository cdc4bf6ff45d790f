package graph

import (
	"fmt"
	"math/rand/v2"
	"slices"

	"github.com/flowebm/flowebm/layers"
	"gorgonia.org/tensor"
)

// Param is one named parameter tensor. Its values are stored in the set's
// float type and shared by every graph the set is bound into.
type Param struct {
	Name  string
	Shape []int
	value *tensor.Dense
}

// Size is the number of scalars.
func (p *Param) Size() int { return p.value.Shape().TotalSize() }

// Float64s returns a copy of the values as float64, row-major.
func (p *Param) Float64s() []float64 {
	dst := make([]float64, p.Size())
	readInto(dst, p.value)
	return dst
}

// SetFloat64s sets the values from src (row-major, len Size()).
func (p *Param) SetFloat64s(src []float64) error {
	if len(src) != p.Size() {
		return fmt.Errorf("graph: parameter %s has %d values, got %d", p.Name, p.Size(), len(src))
	}
	writeFrom(p.value, src)
	return nil
}

// view returns a tensor of the given shape sharing p's values.
func (p *Param) view(shape []int) (*tensor.Dense, error) {
	n := 1
	for _, s := range shape {
		n *= s
	}
	if n != p.Size() {
		return nil, fmt.Errorf("graph: parameter %s has shape %v, cannot view as %v", p.Name, p.Shape, shape)
	}
	if slices.Equal(shape, p.Shape) {
		return p.value, nil
	}
	return tensor.New(tensor.WithShape(shape...), tensor.WithBacking(p.value.Data())), nil
}

// Params is an ordered set of named parameters of one float type.
type Params struct {
	dtype tensor.Dtype
	list  []*Param
	index map[string]int
}

// NewParams allocates the parameters described by specs in dtype
// (tensor.Float64 or tensor.Float32) and initialises them with rng.
func NewParams(specs []layers.ParamSpec, dtype tensor.Dtype, rng *rand.Rand) (*Params, error) {
	if dtype != tensor.Float64 && dtype != tensor.Float32 {
		return nil, fmt.Errorf("graph: dtype %v not supported, want float64 or float32", dtype)
	}
	p := &Params{dtype: dtype, index: make(map[string]int, len(specs))}
	for _, s := range specs {
		if _, dup := p.index[s.Name]; dup {
			return nil, fmt.Errorf("graph: parameter %q declared twice", s.Name)
		}
		if s.Size() < 1 { // probe 68 A1: a parameter of no values panicked
			return nil, fmt.Errorf("graph: parameter %q has shape %v, no values", s.Name, s.Shape)
		}
		vals := make([]float64, s.Size())
		init := s.Init
		if init == nil {
			init = layers.TorchUniform
		}
		init(rng, s.FanIn, vals)
		var t *tensor.Dense
		if dtype == tensor.Float32 {
			t = tensor.New(tensor.WithShape(s.Shape...), tensor.Of(tensor.Float32))
		} else {
			t = tensor.New(tensor.WithShape(s.Shape...), tensor.Of(tensor.Float64))
		}
		writeFrom(t, vals)
		p.index[s.Name] = len(p.list)
		p.list = append(p.list, &Param{Name: s.Name, Shape: slices.Clone(s.Shape), value: t})
	}
	return p, nil
}

// Dtype is the float type of the values.
func (p *Params) Dtype() tensor.Dtype { return p.dtype }

// List returns the parameters in declaration order.
func (p *Params) List() []*Param { return p.list }

// Names returns the parameter names in declaration order.
func (p *Params) Names() []string {
	n := make([]string, len(p.list))
	for i, q := range p.list {
		n[i] = q.Name
	}
	return n
}

// Get returns the named parameter, or nil.
func (p *Params) Get(name string) *Param {
	i, ok := p.index[name]
	if !ok {
		return nil
	}
	return p.list[i]
}

// Count is the total number of scalars, the length of a flat gradient.
func (p *Params) Count() int {
	n := 0
	for _, q := range p.list {
		n += q.Size()
	}
	return n
}

// Flatten writes all values, in declaration order, into dst (len Count())
// and returns it; a nil dst is allocated.
func (p *Params) Flatten(dst []float64) []float64 {
	if dst == nil {
		dst = make([]float64, p.Count())
	}
	if len(dst) != p.Count() {
		panic(fmt.Sprintf("graph: Flatten: have %d slots for %d parameters", len(dst), p.Count()))
	}
	off := 0
	for _, q := range p.list {
		n := q.Size()
		readInto(dst[off:off+n], q.value)
		off += n
	}
	return dst
}

// SetFlat sets all values from src, in declaration order (len Count()).
func (p *Params) SetFlat(src []float64) {
	if len(src) != p.Count() {
		panic(fmt.Sprintf("graph: SetFlat: have %d values for %d parameters", len(src), p.Count()))
	}
	off := 0
	for _, q := range p.list {
		n := q.Size()
		writeFrom(q.value, src[off:off+n])
		off += n
	}
}

// readInto copies a float32 or float64 tensor's values into dst.
func readInto(dst []float64, t tensor.Tensor) {
	switch d := t.Data().(type) {
	case []float64:
		copy(dst, d)
	case []float32:
		for i, v := range d {
			dst[i] = float64(v)
		}
	case float64:
		dst[0] = d
	case float32:
		dst[0] = float64(d)
	default:
		panic(fmt.Sprintf("graph: unsupported tensor data %T", d))
	}
}

// writeFrom copies src into a float32 or float64 tensor's values.
func writeFrom(t tensor.Tensor, src []float64) {
	switch d := t.Data().(type) {
	case []float64:
		copy(d, src)
	case []float32:
		for i, v := range src {
			d[i] = float32(v)
		}
	default:
		panic(fmt.Sprintf("graph: unsupported tensor data %T", d))
	}
}

// The float types models are built in (tensor.Float64 and tensor.Float32),
// for callers that do not import gorgonia.org/tensor.
var (
	Float64 = tensor.Float64
	Float32 = tensor.Float32
)
