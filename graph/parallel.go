package graph

import (
	"fmt"
	"sync"

	"gonum.org/v1/gonum/mat"
	"gorgonia.org/tensor"
)

// Parallel says how a model evaluates a batch: split into Shards blocks of
// consecutive rows, each block run by its own compiled program (sharing
// the parameter values), up to Workers blocks at a time on separate
// goroutines.
//
// The split is a function of Shards and the batch size only, and
// per-block parameter gradients are added in block order, so results
// depend on Shards but never on Workers: with the same seed and BLAS a
// model gives the same bits on 1 worker or 16. Shards is therefore part of
// a run's configuration; Workers is a property of the machine.
//
// The zero value evaluates every batch whole, on the calling goroutine.
type Parallel struct {
	// Shards is the number of row blocks a batch is split into; 0 or 1
	// means one. A batch is split into at most n/MinShardRows blocks, so
	// that small batches stay whole; block sizes differ by at most one.
	Shards int
	// Workers is the number of blocks evaluated at once; 0 or 1 means
	// one, on the calling goroutine.
	Workers int
}

// MinShardRows is the fewest rows a block of a split batch has.
const MinShardRows = 16

// Validate checks that Shards and Workers are not negative.
func (p Parallel) Validate() error {
	if p.Shards < 0 || p.Workers < 0 {
		return fmt.Errorf("graph: parallel shards %d and workers %d: want ≥ 0 (0 means 1)", p.Shards, p.Workers)
	}
	return nil
}

// blocks is the number of row blocks of a batch of n rows.
func (p Parallel) blocks(n int) int {
	return max(1, min(p.Shards, n/MinShardRows))
}

// span is block s's row range of a batch of n rows in k blocks.
func span(n, k, s int) (lo, hi int) { return s * n / k, (s + 1) * n / k }

// each runs f(s) for s = 0…k−1, on up to Workers goroutines (the caller's
// among them), and returns the first error in block order; errs (len ≥ k)
// holds the blocks' errors. A panic in f is returned as an error.
func (p Parallel) each(k int, errs []error, f func(s int) error) error {
	errs = errs[:k]
	call := func(s int) {
		defer func() {
			if r := recover(); r != nil {
				errs[s] = fmt.Errorf("graph: evaluating block %d failed: %v", s, r)
			}
		}()
		errs[s] = f(s)
	}
	w := max(1, min(p.Workers, k))
	var wg sync.WaitGroup
	for g := 1; g < w; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for s := g; s < k; s += w {
				call(s)
			}
		}()
	}
	for s := 0; s < k; s += w {
		call(s)
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// shardKey identifies a compiled program: the rows it takes and the block
// it serves (blocks of equal size run at once, so each has its own).
type shardKey struct{ rows, block int }

// sharded compiles (serially) the program of every block of an n-row
// batch with build, each taking inputs of the given shapes with their
// leading dimension replaced by the block's rows, then runs step(s, p,
// lo, hi) for every block concurrently as par says.
func sharded(par Parallel, c *programs, n int, dtype tensor.Dtype, shapes [][]int, build buildFunc, step func(s int, p *program, lo, hi int) error) error {
	k := par.blocks(n)
	progs, err := c.split(n, k, dtype, shapes, build)
	if err != nil {
		return err
	}
	if k == 1 {
		return step(0, progs[0], 0, n)
	}
	if len(c.errs) < k {
		c.errs = make([]error, k)
	}
	return par.each(k, c.errs, func(s int) error {
		lo, hi := span(n, k, s)
		return step(s, progs[s], lo, hi)
	})
}

// split returns the programs of the k blocks of an n-row batch, compiling
// those not yet compiled.
func (c *programs) split(n, k int, dtype tensor.Dtype, shapes [][]int, build buildFunc) ([]*program, error) {
	if ps, ok := c.blocks[n]; ok && len(ps) == k {
		return ps, nil
	}
	ps := make([]*program, k)
	for s := range ps {
		lo, hi := span(n, k, s)
		sh := make([][]int, len(shapes))
		for i, d := range shapes {
			sh[i] = append([]int{hi - lo}, d[1:]...)
		}
		p, err := c.get(shardKey{hi - lo, s}, dtype, sh, build)
		if err != nil {
			return nil, err
		}
		ps[s] = p
	}
	if c.blocks == nil {
		c.blocks = make(map[int][]*program)
	}
	c.blocks[n] = ps
	return ps, nil
}

// setRows copies rows lo…hi−1 of x into input i.
func (p *program) setRows(i int, x mat.Matrix, lo, hi int) {
	if lo == 0 {
		if r, _ := x.Dims(); r == hi {
			p.setMatrix(i, x)
			return
		}
	}
	t := p.inputs[i]
	_, c := x.Dims()
	switch d := t.Data().(type) {
	case []float64:
		if rm, ok := x.(mat.RawMatrixer); ok && rm.RawMatrix().Stride == c {
			copy(d, rm.RawMatrix().Data[lo*c:hi*c])
			return
		}
		for a := lo; a < hi; a++ {
			for b := 0; b < c; b++ {
				d[(a-lo)*c+b] = x.At(a, b)
			}
		}
	case []float32:
		if rm, ok := x.(mat.RawMatrixer); ok && rm.RawMatrix().Stride == c {
			for j, v := range rm.RawMatrix().Data[lo*c : hi*c] {
				d[j] = float32(v)
			}
			return
		}
		for a := lo; a < hi; a++ {
			for b := 0; b < c; b++ {
				d[(a-lo)*c+b] = float32(x.At(a, b))
			}
		}
	}
}

// matrixRows copies output i into rows lo…hi−1 of dst.
func (p *program) matrixRows(i int, dst *mat.Dense, lo, hi int) {
	raw := dst.RawMatrix()
	t := p.output(i)
	c := raw.Cols
	for r := lo; r < hi; r++ {
		row := raw.Data[r*raw.Stride : r*raw.Stride+c]
		switch d := t.Data().(type) {
		case []float64:
			copy(row, d[(r-lo)*c:(r-lo+1)*c])
		case []float32:
			for j := range row {
				row[j] = float64(d[(r-lo)*c+j])
			}
		}
	}
}

// gradSum holds per-block flat parameter gradients and adds them in block
// order.
type gradSum struct{ blocks [][]float64 }

// buffers returns k−1 buffers of n values for blocks 1…k−1 (block 0
// writes into the caller's gradient).
func (g *gradSum) buffers(k, n int) [][]float64 {
	for len(g.blocks) < k-1 {
		g.blocks = append(g.blocks, nil)
	}
	for i := 0; i < k-1; i++ {
		if len(g.blocks[i]) != n {
			g.blocks[i] = make([]float64, n)
		}
	}
	return g.blocks[:k-1]
}

// dst is block s's gradient buffer: grad itself for block 0.
func (g *gradSum) dst(s int, grad []float64) []float64 {
	if s == 0 {
		return grad
	}
	return g.blocks[s-1]
}

// add sums blocks 1…k−1 into grad. With byRows, each block's gradient
// (of its rows' mean) is first weighted by its share of the n rows, so
// that the sum is the gradient of the batch mean.
func (g *gradSum) add(k int, grad []float64, byRows bool, n int) {
	if k == 1 {
		return
	}
	weight := func(s int) float64 {
		if !byRows {
			return 1
		}
		lo, hi := span(n, k, s)
		return float64(hi-lo) / float64(n)
	}
	if c := weight(0); c != 1 {
		for i := range grad {
			grad[i] *= c
		}
	}
	for s := 1; s < k; s++ {
		c := weight(s)
		for i, v := range g.blocks[s-1] {
			grad[i] += c * v
		}
	}
}
