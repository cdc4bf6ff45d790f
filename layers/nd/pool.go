package nd

import (
	"fmt"
	"hash"
	"math"

	"github.com/chewxy/hm"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// PoolKind says how Pool combines a window.
type PoolKind int

const (
	// AvgPool averages a window.
	AvgPool PoolKind = iota
	// MaxPool takes a window's maximum.
	MaxPool
)

// String names the kind.
func (k PoolKind) String() string {
	switch k {
	case AvgPool:
		return "AvgPool"
	case MaxPool:
		return "MaxPool"
	}
	return fmt.Sprintf("PoolKind(%d)", int(k))
}

// Pool is ONNX AveragePool or MaxPool over the 1 to 3 spatial axes of x
// (N, C, spatial…). Kernel, Strides, Dilations, PadsBegin and PadsEnd
// have one entry per spatial axis (kernel, strides and dilations ≥ 1,
// pads ≥ 0; callers resolve defaults and auto_pad), so the rank is
// len(Kernel) + 2: Type needs nothing else. Window o along an axis takes
// the input elements o·stride − padBegin + j·dilation, j < kernel.
//
// Output sizes follow ONNX and PyTorch: ⌊(in + pads − dilation·(kernel −
// 1) − 1) / stride⌋ + 1, or with CeilMode the ceiling, less one when the
// last window would start past the input and its begin padding
// (PyTorch's rule, which ONNX Runtime follows).
//
// MaxPool ignores the padding (it pads with −∞) and routes a window's
// gradient to its first maximum (a NaN propagates but passes no
// gradient). AvgPool divides by the number of the window's elements
// inside the input, or with
// CountIncludePad by the number inside the padded input [−padBegin, in +
// padEnd): as in PyTorch's avg_pool, the part of a CeilMode window that
// runs past the padded input is never counted; a window with nothing to
// count gives 0.
type Pool struct {
	pure
	Kind                                           PoolKind
	Kernel, Strides, Dilations, PadsBegin, PadsEnd []int
	CountIncludePad, CeilMode                      bool
}

// poolGrad is Pool's gradient; its inputs are x, Pool's output and the
// output gradient.
type poolGrad struct {
	pure
	op Pool
	x  tensor.Shape
}

// poolPlan is a pooling of planes of the geometry g (img: input, grid:
// output), with each output's divisor for the average.
type poolPlan struct {
	g                     convGeom
	planes, inVol, outVol int
	div                   []float64
	taps                  []poolTap
}

// poolTap is a window tap (jz, jy, jx) that meets a line's outputs [lo,
// hi), the first at offset xo of the input line.
type poolTap struct{ jz, jy, lo, hi, xo int }

// geometry checks the attributes against x's shape and returns the
// output shape and the three-axis geometry (img: input, grid: output).
func (op Pool) geometry(x tensor.Shape) (tensor.Shape, convGeom, error) {
	d := len(op.Kernel)
	var g convGeom
	if d < 1 || d > 3 || len(op.Strides) != d || len(op.Dilations) != d || len(op.PadsBegin) != d ||
		len(op.PadsEnd) != d || len(x) != d+2 || !positive(x) || op.Kind < AvgPool || op.Kind > MaxPool {
		return nil, g, fmt.Errorf("nd: %v of an input of shape %v", op, x)
	}
	g.img, g.k = pad3(x[2:], 1), pad3(op.Kernel, 1)
	g.s, g.d, g.p = pad3(op.Strides, 1), pad3(op.Dilations, 1), pad3(op.PadsBegin, 0)
	pe := pad3(op.PadsEnd, 0)
	for a := range 3 {
		num := g.img[a] + g.p[a] + pe[a] - g.d[a]*(g.k[a]-1) - 1
		if num < 0 || g.k[a] < 1 || g.s[a] < 1 || g.d[a] < 1 || g.p[a] < 0 || pe[a] < 0 {
			return nil, g, fmt.Errorf("nd: %v of an input of shape %v", op, x)
		}
		g.grid[a] = num/g.s[a] + 1
		if op.CeilMode {
			g.grid[a] = (num+g.s[a]-1)/g.s[a] + 1
			if (g.grid[a]-1)*g.s[a] >= g.img[a]+g.p[a] {
				g.grid[a]--
			}
		}
	}
	return append(tensor.Shape{x[0], x[1]}, spatial(g.grid, d)...), g, nil
}

// plan returns the pooling of x of geometry g.
func (op Pool) plan(x tensor.Shape, g *convGeom) *poolPlan {
	p := &poolPlan{g: *g, planes: x[0] * x[1], inVol: g.imgVol(), outVol: g.gridVol()}
	p.div = make([]float64, p.outVol)
	pe := pad3(op.PadsEnd, 0)
	var counts [3][]float64 // per axis and output, the taps counted
	for a := range 3 {
		counts[a] = make([]float64, g.grid[a])
		for o := range counts[a] {
			for j := 0; j < g.k[a]; j++ {
				pos := o*g.s[a] - g.p[a] + j*g.d[a]
				if (op.CountIncludePad && pos < g.img[a]+pe[a]) || (pos >= 0 && pos < g.img[a]) {
					counts[a][o]++
				}
			}
		}
	}
	for t := 0; t < g.kVol(); t++ {
		jx := t % g.k[2]
		lo, hi := g.span(2, jx)
		if lo < hi {
			p.taps = append(p.taps, poolTap{jz: t / (g.k[1] * g.k[2]), jy: t / g.k[2] % g.k[1], lo: lo, hi: hi, xo: lo*g.s[2] + jx*g.d[2] - g.p[2]})
		}
	}
	for o := range p.div {
		p.div[o] = counts[0][o/(g.grid[1]*g.grid[2])] * counts[1][o/g.grid[2]%g.grid[1]] * counts[2][o%g.grid[2]]
	}
	return p
}

// lines calls f for each output line and window tap: f(yo, xo, lo, hi)
// says that outputs yo + [lo, hi) of a plane meet the inputs xo + j·stride,
// j < hi − lo. Taps come in window order, or the reverse.
func (p *poolPlan) lines(reverse bool, f func(yo, xo, lo, hi int)) {
	g := &p.g
	for oz := 0; oz < g.grid[0]; oz++ {
		for oy := 0; oy < g.grid[1]; oy++ {
			yo := (oz*g.grid[1] + oy) * g.grid[2]
			for n := range p.taps {
				t := &p.taps[n]
				if reverse {
					t = &p.taps[len(p.taps)-1-n]
				}
				iz, iy := oz*g.s[0]-g.p[0]+t.jz*g.d[0], oy*g.s[1]-g.p[1]+t.jy*g.d[1]
				if iz >= 0 && iz < g.img[0] && iy >= 0 && iy < g.img[1] {
					f(yo, (iz*g.img[1]+iy)*g.img[2]+t.xo, t.lo, t.hi)
				}
			}
		}
	}
}

// poolForward pools the planes of x into y.
func poolForward[T fp](p *poolPlan, kind PoolKind, y, x []T) {
	s := p.g.s[2]
	parallelFor(p.planes, p.planes*p.outVol*p.g.kVol(), func(_, lo, hi int) {
		for pl := lo; pl < hi; pl++ {
			xp, yp := block(x, pl, p.inVol), block(y, pl, p.outVol)
			if kind == MaxPool {
				fill(yp, T(math.Inf(-1)))
				p.lines(false, func(yo, xo, lo, hi int) {
					for j, v := range yp[yo+lo : yo+hi] {
						yp[yo+lo+j] = max(v, xp[xo+j*s])
					}
				})
				continue
			}
			clear(yp)
			p.lines(false, func(yo, xo, lo, hi int) {
				for j := range yp[yo+lo : yo+hi] {
					yp[yo+lo+j] += xp[xo+j*s]
				}
			})
			for o, d := range p.div {
				if d > 0 {
					yp[o] /= T(d)
				}
			}
		}
	})
}

// poolBackward sets dx to the gradient of pooling x into y given the
// output gradient g.
func poolBackward[T fp](p *poolPlan, kind PoolKind, dx, x, y, g []T) {
	s := p.g.s[2]
	parallelFor(p.planes, p.planes*p.outVol*p.g.kVol(), func(_, lo, hi int) {
		ab := intPool.get(p.outVol)
		defer intPool.put(ab)
		vb := getScratch[T](p.outVol)
		defer putScratch(vb)
		arg, v := *ab, *vb
		for pl := lo; pl < hi; pl++ {
			xp, dp := block(x, pl, p.inVol), block(dx, pl, p.inVol)
			yp, gp := block(y, pl, p.outVol), block(g, pl, p.outVol)
			clear(dp)
			if kind == MaxPool {
				maxRoute(p, dp, xp, yp, gp, arg)
				continue
			}
			for o, d := range p.div {
				v[o] = 0
				if d > 0 {
					v[o] = gp[o] / T(d)
				}
			}
			p.lines(false, func(yo, xo, lo, hi int) {
				for j, u := range v[yo+lo : yo+hi] {
					dp[xo+j*s] += u
				}
			})
		}
	})
}

// maxRoute adds each output's gradient to the first element of its window
// equal to its maximum y (nothing for a NaN maximum), using arg (outVol
// long) as scratch.
func maxRoute[T fp](p *poolPlan, dp, xp, yp, gp []T, arg []int) {
	s := p.g.s[2]
	for o := range arg {
		arg[o] = -1
	}
	p.lines(true, func(yo, xo, lo, hi int) {
		for j, m := range yp[yo+lo : yo+hi] {
			a, i := arg[yo+lo+j], xo+j*s
			if xp[i] == m {
				a = i
			}
			arg[yo+lo+j] = a
		}
	})
	for o, i := range arg {
		if i >= 0 {
			dp[i] += gp[o]
		}
	}
}

// Arity is 1.
func (op Pool) Arity() int { return 1 }

// Type is a function from and to tensors of rank len(Kernel) + 2.
func (op Pool) Type() hm.Type { return fnType(len(op.Kernel)+2, len(op.Kernel)+2) }

// InferShape returns (N, C, out…).
func (op Pool) InferShape(in ...G.DimSizer) (tensor.Shape, error) {
	s, err := inShapes(op, in, 1)
	if err != nil {
		return nil, err
	}
	out, _, err := op.geometry(s[0])
	return out, err
}

// Do pools.
func (op Pool) Do(in ...G.Value) (G.Value, error) { return op.UsePreallocDo(nil, in...) }

// UsePreallocDo pools, writing into prealloc when it fits.
func (op Pool) UsePreallocDo(prealloc G.Value, in ...G.Value) (G.Value, error) {
	ts, err := operands(op, in, 1)
	if err != nil {
		return nil, err
	}
	x := ts[0]
	s, g, err := op.geometry(shapeOf(x))
	if err != nil {
		return nil, err
	}
	out := output(prealloc, x.Dtype(), s, x)
	p := op.plan(shapeOf(x), &g)
	if x.Dtype() == tensor.Float32 {
		poolForward(p, op.Kind, data[float32](out), data[float32](x))
	} else {
		poolForward(p, op.Kind, data[float64](out), data[float64](x))
	}
	return out, nil
}

// WriteHash writes the attributes.
func (op Pool) WriteHash(h hash.Hash) { fmt.Fprintf(h, "%v", op) }

// Hashcode hashes the attributes.
func (op Pool) Hashcode() uint32 { return hashOf(op) }

// String shows the attributes.
func (op Pool) String() string {
	return fmt.Sprintf("%v{kernel %v, strides %v, dilations %v, pads %v %v, include pad %v, ceil %v}",
		op.Kind, op.Kernel, op.Strides, op.Dilations, op.PadsBegin, op.PadsEnd, op.CountIncludePad, op.CeilMode)
}

// DiffWRT is true: the input is differentiable.
func (op Pool) DiffWRT(int) []bool { return []bool{true} }

// SymDiff returns the input's gradient.
func (op Pool) SymDiff(in G.Nodes, out, grad *G.Node) (G.Nodes, error) {
	d, err := G.ApplyOp(poolGrad{op: op, x: in[0].Shape().Clone()}, in[0], out, grad)
	return G.Nodes{d}, err
}

func (op poolGrad) Arity() int { return 3 }
func (op poolGrad) Type() hm.Type {
	r := len(op.x)
	return fnType(r, r, r, r)
}

// check checks the shapes of x, y and g.
func (op poolGrad) check(s ...tensor.Shape) (convGeom, error) {
	y, geom, err := op.op.geometry(op.x)
	if err != nil || !s[0].Eq(op.x) || !s[1].Eq(y) || !s[2].Eq(y) {
		return geom, fmt.Errorf("nd: %v: inputs of shapes %v", op, s)
	}
	return geom, nil
}

func (op poolGrad) InferShape(in ...G.DimSizer) (tensor.Shape, error) {
	s, err := inShapes(op, in, 3)
	if err != nil {
		return nil, err
	}
	if _, err := op.check(s...); err != nil {
		return nil, err
	}
	return op.x.Clone(), nil
}
func (op poolGrad) Do(in ...G.Value) (G.Value, error) { return op.UsePreallocDo(nil, in...) }
func (op poolGrad) UsePreallocDo(prealloc G.Value, in ...G.Value) (G.Value, error) {
	ts, err := operands(op, in, 3)
	if err != nil {
		return nil, err
	}
	geom, err := op.check(shapeOf(ts[0]), shapeOf(ts[1]), shapeOf(ts[2]))
	if err != nil {
		return nil, err
	}
	out := output(prealloc, ts[0].Dtype(), op.x, ts...)
	p := op.op.plan(op.x, &geom)
	if out.Dtype() == tensor.Float32 {
		poolBackward(p, op.op.Kind, data[float32](out), data[float32](ts[0]), data[float32](ts[1]), data[float32](ts[2]))
	} else {
		poolBackward(p, op.op.Kind, data[float64](out), data[float64](ts[0]), data[float64](ts[1]), data[float64](ts[2]))
	}
	return out, nil
}
func (op poolGrad) WriteHash(h hash.Hash) { fmt.Fprintf(h, "%v", op) }
func (op poolGrad) Hashcode() uint32      { return hashOf(op) }
func (op poolGrad) String() string        { return fmt.Sprintf("%vGrad%v", op.op, op.x) }
