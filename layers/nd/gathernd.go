package nd

import (
	"fmt"
	"hash"

	"github.com/chewxy/hm"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// GatherND is ONNX GatherND: for data of shape d (rank r) and indices of
// shape q (rank Q, float values holding integers, negative ones counting
// from the end), each row of the indices' last axis (of length k =
// q[Q−1], 1 ≤ k ≤ r − BatchDims) picks the block of data at those k
// coordinates after the batch ones; the result has shape q[:Q−1] ++
// d[BatchDims+k:] ((1) if that is empty). The first BatchDims dimensions
// of data and indices must agree and select the batch. Type and
// InferShape need r, Q and k, which callers set in Rank, IndicesRank and
// IndexDepth (see Ranked; Do ignores them). The indices are not
// differentiable; the data's gradient adds the output gradient at the
// gathered blocks.
type GatherND struct {
	pure
	BatchDims                     int
	Rank, IndicesRank, IndexDepth int
}

// ScatterND is ONNX ScatterND without reduction: its inputs are data of
// shape d (rank r), indices of shape q (rank Q, last dimension k ≤ r,
// float values holding integers, negative ones counting from the end) and
// updates of shape q[:Q−1] ++ d[k:] ((1) if that is empty); the result is
// data with the block at each row of indices replaced by the matching
// block of updates (where rows repeat, the last one wins). Type and
// InferShape need r, Q and k, which callers set in Rank, IndicesRank and
// IndexDepth (see Ranked; Do ignores them). The indices are not
// differentiable; the data's
// gradient is the output gradient with the replaced blocks zeroed, the
// updates' the output gradient at their blocks (zero for an update
// overwritten by a later one).
type ScatterND struct {
	pure
	Rank, IndicesRank, IndexDepth int
}

// ndGeom is the geometry of a GatherND or ScatterND: n index rows, each
// picking a block of the given size.
type ndGeom struct{ rows, block, k, batch int }

// ndGeometry checks data shape d and indices shape q for b batch
// dimensions and returns the geometry and the shape of the gathered
// blocks.
func ndGeometry(d, q tensor.Shape, b int) (ndGeom, tensor.Shape, error) {
	if len(q) < 1 || b < 0 || b >= min(len(q), len(d)) || !positive(d, q) {
		return ndGeom{}, nil, fmt.Errorf("data %v, indices %v, %d batch dimensions", d, q, b)
	}
	k := q[len(q)-1]
	if k < 1 || k > len(d)-b || !d[:b].Eq(q[:b]) {
		return ndGeom{}, nil, fmt.Errorf("data %v, indices %v, %d batch dimensions", d, q, b)
	}
	out := append(append(tensor.Shape{}, q[:len(q)-1]...), d[b+k:]...)
	geom := ndGeom{rows: prod(q[:len(q)-1]), block: prod(d[b+k:]), k: k, batch: prod(q[b : len(q)-1])}
	return geom, atLeast1(out), nil
}

// ndOffsets sets offs[t] to the data offset of the block row t of the
// indices picks.
func ndOffsets[T fp](offs []int, idx []T, d tensor.Shape, b int, g ndGeom) error {
	st := strides(d)
	batchVol := prod(d[b:])
	for t := range offs {
		o := (t / g.batch) * batchVol
		for j, v := range idx[t*g.k : (t+1)*g.k] {
			i, err := indexValue(float64(v), d[b+j])
			if err != nil {
				return err
			}
			o += i * st[b+j]
		}
		offs[t] = o
	}
	return nil
}

// ndBlocks copies or adds blocks between data (blocks at offs) and packed
// (blocks one after another): to packed when gather, else adding packed
// into data.
func ndBlocks[T fp](dataV, packed []T, offs []int, block int, gather bool) {
	for t, o := range offs {
		p := packed[t*block : (t+1)*block]
		if gather {
			copy(p, dataV[o:o+block])
		} else {
			addTo(dataV[o:o+block], p)
		}
	}
}

// withOffsets computes the block offsets of idx into data of shape d and
// calls f with them (a pooled slice).
func withOffsets[T fp](idx *tensor.Dense, d tensor.Shape, b int, g ndGeom, f func([]int)) error {
	pb := intPool.get(g.rows)
	defer intPool.put(pb)
	if err := ndOffsets(*pb, data[T](idx), d, b, g); err != nil {
		return err
	}
	f(*pb)
	return nil
}

func (op GatherND) outRank() int {
	return max(1, op.IndicesRank-1+op.Rank-op.BatchDims-op.IndexDepth)
}

// Arity is 2.
func (op GatherND) Arity() int { return 2 }

// Type is a function from tensors of ranks Rank and IndicesRank to one of
// rank IndicesRank − 1 + Rank − BatchDims − IndexDepth (at least 1).
func (op GatherND) Type() hm.Type { return fnType(op.outRank(), op.Rank, op.IndicesRank) }

// InferShape returns the gathered shape.
func (op GatherND) InferShape(in ...G.DimSizer) (tensor.Shape, error) {
	s, err := inShapes(op, in, 2)
	if err != nil {
		return nil, err
	}
	if err := checkFields(op, s, []int{op.Rank, op.IndicesRank, op.IndexDepth}, []int{len(s[0]), len(s[1]), s[1][len(s[1])-1]}); err != nil {
		return nil, err
	}
	_, out, err := ndGeometry(s[0], s[1], op.BatchDims)
	if err != nil {
		return nil, fmt.Errorf("nd: %v: %w", op, err)
	}
	return out, nil
}

// Do gathers.
func (op GatherND) Do(in ...G.Value) (G.Value, error) { return op.UsePreallocDo(nil, in...) }

// UsePreallocDo gathers, writing into prealloc when it fits.
func (op GatherND) UsePreallocDo(prealloc G.Value, in ...G.Value) (G.Value, error) {
	ts, err := operands(op, in, 2)
	if err != nil {
		return nil, err
	}
	x, q := ts[0], ts[1]
	geom, s, err := ndGeometry(shapeOf(x), shapeOf(q), op.BatchDims)
	if err != nil {
		return nil, fmt.Errorf("nd: %v: %w", op, err)
	}
	out := output(prealloc, x.Dtype(), s, ts...)
	if x.Dtype() == tensor.Float32 {
		err = withOffsets[float32](q, shapeOf(x), op.BatchDims, geom, func(offs []int) {
			ndBlocks(data[float32](x), data[float32](out), offs, geom.block, true)
		})
	} else {
		err = withOffsets[float64](q, shapeOf(x), op.BatchDims, geom, func(offs []int) {
			ndBlocks(data[float64](x), data[float64](out), offs, geom.block, true)
		})
	}
	if err != nil {
		return nil, fmt.Errorf("nd: %v: %w", op, err)
	}
	return out, nil
}

// WriteHash writes the attributes.
func (op GatherND) WriteHash(h hash.Hash) { fmt.Fprintf(h, "%v", op) }

// Hashcode hashes the attributes.
func (op GatherND) Hashcode() uint32 { return hashOf(op) }

// String shows the attributes.
func (op GatherND) String() string {
	return fmt.Sprintf("GatherND{batch %d, ranks %d %d, depth %d}", op.BatchDims, op.Rank, op.IndicesRank, op.IndexDepth)
}

// DiffWRT is true for the data, false for the indices.
func (op GatherND) DiffWRT(int) []bool { return []bool{true, false} }

// SymDiff adds the gradient at the gathered blocks.
func (op GatherND) SymDiff(in G.Nodes, _, grad *G.Node) (G.Nodes, error) {
	d, err := G.ApplyOp(ndGrad{kind: ndGatherData, gather: op, shape: in[0].Shape().Clone()}, grad, in[1])
	return G.Nodes{d, nil}, err
}

// updatesRank is the rank of ScatterND's updates.
func (op ScatterND) updatesRank() int { return max(1, op.IndicesRank-1+op.Rank-op.IndexDepth) }

// shape checks the inputs' shapes and returns the geometry and the result
// shape.
func (op ScatterND) shape(d, q, u tensor.Shape) (ndGeom, error) {
	geom, us, err := ndGeometry(d, q, 0)
	if err == nil && !us.Eq(u) {
		err = fmt.Errorf("updates %v, want %v", u, us)
	}
	if err != nil {
		return geom, fmt.Errorf("nd: %v: %w", op, err)
	}
	return geom, nil
}

// Arity is 3.
func (op ScatterND) Arity() int { return 3 }

// Type is a function from tensors of ranks Rank, IndicesRank and
// IndicesRank − 1 + Rank − IndexDepth (at least 1) to one of rank Rank.
func (op ScatterND) Type() hm.Type {
	return fnType(op.Rank, op.Rank, op.IndicesRank, op.updatesRank())
}

// InferShape returns the data's shape.
func (op ScatterND) InferShape(in ...G.DimSizer) (tensor.Shape, error) {
	s, err := inShapes(op, in, 3)
	if err != nil {
		return nil, err
	}
	if err := checkFields(op, s, []int{op.Rank, op.IndicesRank, op.IndexDepth}, []int{len(s[0]), len(s[1]), s[1][len(s[1])-1]}); err != nil {
		return nil, err
	}
	if _, err := op.shape(s[0], s[1], s[2]); err != nil {
		return nil, err
	}
	return s[0].Clone(), nil
}

// Do scatters.
func (op ScatterND) Do(in ...G.Value) (G.Value, error) { return op.UsePreallocDo(nil, in...) }

// UsePreallocDo scatters, writing into prealloc when it fits.
func (op ScatterND) UsePreallocDo(prealloc G.Value, in ...G.Value) (G.Value, error) {
	ts, err := operands(op, in, 3)
	if err != nil {
		return nil, err
	}
	x, q, u := ts[0], ts[1], ts[2]
	geom, err := op.shape(shapeOf(x), shapeOf(q), shapeOf(u))
	if err != nil {
		return nil, err
	}
	out := output(prealloc, x.Dtype(), shapeOf(x), ts...)
	if x.Dtype() == tensor.Float32 {
		err = scatterND[float32](out, x, q, u, geom)
	} else {
		err = scatterND[float64](out, x, q, u, geom)
	}
	if err != nil {
		return nil, fmt.Errorf("nd: %v: %w", op, err)
	}
	return out, nil
}

// scatterND sets out to x with the blocks of u written at q's rows.
func scatterND[T fp](out, x, q, u *tensor.Dense, geom ndGeom) error {
	od, ud := data[T](out), data[T](u)
	copy(od, data[T](x))
	return withOffsets[T](q, shapeOf(x), 0, geom, func(offs []int) {
		for t, o := range offs {
			copy(od[o:o+geom.block], ud[t*geom.block:(t+1)*geom.block])
		}
	})
}

// WriteHash writes the attributes.
func (op ScatterND) WriteHash(h hash.Hash) { fmt.Fprintf(h, "%v", op) }

// Hashcode hashes the attributes.
func (op ScatterND) Hashcode() uint32 { return hashOf(op) }

// String shows the attributes.
func (op ScatterND) String() string {
	return fmt.Sprintf("ScatterND{ranks %d %d, depth %d}", op.Rank, op.IndicesRank, op.IndexDepth)
}

// DiffWRT is true for the data and updates, false for the indices.
func (op ScatterND) DiffWRT(int) []bool { return []bool{true, false, true} }

// SymDiff zeroes the replaced blocks of the gradient for the data and
// gathers them for the updates.
func (op ScatterND) SymDiff(in G.Nodes, _, grad *G.Node) (G.Nodes, error) {
	dx, err := G.ApplyOp(ndGrad{kind: ndScatterData, scatter: op, shape: in[0].Shape().Clone()}, grad, in[1])
	if err != nil {
		return nil, err
	}
	du, err := G.ApplyOp(ndGrad{kind: ndScatterUpdates, scatter: op, shape: in[2].Shape().Clone()}, grad, in[1])
	if err != nil {
		return nil, err
	}
	return G.Nodes{dx, nil, du}, nil
}

// ndGrad is a gradient of GatherND or ScatterND; its inputs are the
// output gradient and the indices.
type ndGrad struct {
	pure
	kind    int
	gather  GatherND
	scatter ScatterND
	shape   tensor.Shape // of the result
}

// The kinds of ndGrad.
const (
	ndGatherData     = iota // GatherND's data: blocks added into zeros
	ndScatterData           // ScatterND's data: replaced blocks zeroed
	ndScatterUpdates        // ScatterND's updates: blocks gathered
)

func (op ndGrad) Arity() int { return 2 }
func (op ndGrad) Type() hm.Type {
	switch op.kind {
	case ndGatherData:
		return fnType(op.gather.Rank, op.gather.outRank(), op.gather.IndicesRank)
	case ndScatterData:
		return fnType(op.scatter.Rank, op.scatter.Rank, op.scatter.IndicesRank)
	}
	return fnType(op.scatter.updatesRank(), op.scatter.Rank, op.scatter.IndicesRank)
}

// geometry checks the shapes of the gradient g and indices q and returns
// the geometry and the data's shape.
func (op ndGrad) geometry(g, q tensor.Shape) (ndGeom, tensor.Shape, error) {
	d, b := op.shape, op.batch()
	if op.kind == ndScatterUpdates {
		d = g
	}
	geom, blocks, err := ndGeometry(d, q, b)
	if err == nil {
		ok := blocks.Eq(g) // ndGatherData
		switch op.kind {
		case ndScatterData:
			ok = g.Eq(d)
		case ndScatterUpdates:
			ok = blocks.Eq(op.shape)
		}
		if !ok {
			err = fmt.Errorf("gradient %v, indices %v", g, q)
		}
	}
	if err != nil {
		return geom, nil, fmt.Errorf("nd: %v: %w", op, err)
	}
	return geom, d, nil
}

// batch is the number of batch dimensions.
func (op ndGrad) batch() int {
	if op.kind == ndGatherData {
		return op.gather.BatchDims
	}
	return 0
}

func (op ndGrad) InferShape(in ...G.DimSizer) (tensor.Shape, error) {
	s, err := inShapes(op, in, 2)
	if err != nil {
		return nil, err
	}
	if _, _, err := op.geometry(s[0], s[1]); err != nil {
		return nil, err
	}
	return op.shape.Clone(), nil
}
func (op ndGrad) Do(in ...G.Value) (G.Value, error) { return op.UsePreallocDo(nil, in...) }
func (op ndGrad) UsePreallocDo(prealloc G.Value, in ...G.Value) (G.Value, error) {
	ts, err := operands(op, in, 2)
	if err != nil {
		return nil, err
	}
	g, q := ts[0], ts[1]
	geom, d, err := op.geometry(shapeOf(g), shapeOf(q))
	if err != nil {
		return nil, err
	}
	out := output(prealloc, g.Dtype(), op.shape, ts...)
	b := op.batch()
	if g.Dtype() == tensor.Float32 {
		err = withOffsets[float32](q, d, b, geom, func(offs []int) {
			ndGradBlocks(op.kind, data[float32](out), data[float32](g), offs, geom.block)
		})
	} else {
		err = withOffsets[float64](q, d, b, geom, func(offs []int) {
			ndGradBlocks(op.kind, data[float64](out), data[float64](g), offs, geom.block)
		})
	}
	if err != nil {
		return nil, fmt.Errorf("nd: %v: %w", op, err)
	}
	return out, nil
}

// ndGradBlocks computes an ndGrad of the given kind from the gradient g
// and the block offsets.
func ndGradBlocks[T fp](kind int, out, g []T, offs []int, block int) {
	switch kind {
	case ndGatherData:
		clear(out)
		ndBlocks(out, g, offs, block, false)
	case ndScatterData:
		copy(out, g)
		for _, o := range offs {
			clear(out[o : o+block])
		}
	case ndScatterUpdates:
		ndBlocks(g, out, offs, block, true)
		seen := make(map[int]bool, len(offs))
		for t := len(offs) - 1; t >= 0; t-- {
			if seen[offs[t]] {
				clear(out[t*block : (t+1)*block])
			}
			seen[offs[t]] = true
		}
	}
}

func (op ndGrad) WriteHash(h hash.Hash) { fmt.Fprintf(h, "%v", op) }
func (op ndGrad) Hashcode() uint32      { return hashOf(op) }
func (op ndGrad) String() string {
	switch op.kind {
	case ndGatherData:
		return fmt.Sprintf("%vGrad%v", op.gather, op.shape)
	case ndScatterData:
		return fmt.Sprintf("%vDataGrad%v", op.scatter, op.shape)
	}
	return fmt.Sprintf("%vUpdatesGrad%v", op.scatter, op.shape)
}
