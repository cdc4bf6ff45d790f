package onnx

import (
	"fmt"
	"os"
	"strings"

	"github.com/flowebm/flowebm/internal/sysmem"
)

// maxTensorBytes bounds the memory of any one tensor the importer builds:
// 256 MiB (2^25 values as float64, 8 times the largest weight of the
// convolutional EBMs and flows of the zoo). Folding an operation on
// constants holds its operands, its result and the result's copy at once,
// and the graph keeps its own copy of the constants it reads: at 1 GiB per
// tensor, a 280-byte model (ConstantOfShape, Add, Mul, ReduceSum) took
// 5.3 GB; at 2 GiB, the Add of two ConstantOfShape results exhausted the
// machine.
const maxTensorBytes = 1 << 28

// MaxTensorSize says the most one tensor of a graph may hold, for
// messages.
func MaxTensorSize() string { return byteSize(maxTensorBytes) }

// maxElements bounds the values of any one tensor the importer builds:
// 2^25, 256 MiB as the float64s constants are folded in.
const maxElements = maxTensorBytes / 8

// constBudget is the memory the constants one build of the graph folds at
// load time (ConstantOfShape, Expand, Tile, Range, Reshape, arithmetic on
// constants, initializers read as constants) may take together: 1 GiB, or
// half the machine's memory if less. It is a variable for tests.
var constBudget = func() float64 { return sysmem.Limit(1 << 30) }

// maxPointBytes bounds the memory of the values the graph computes from
// the input, per point of a batch: 256 MiB. Evaluating a batch holds them
// for every point and the gradient as much again, so a model past this
// could only be sampled a handful of chains at a time on a 24 GiB
// machine. It is a variable for tests.
var maxPointBytes float64 = 256 << 20

// memory tallies what one build of the graph materialises, so that a
// model asking for too much is refused before the allocation, naming the
// node that crosses a limit.
type memory struct {
	constLimit float64 // constBudget(), read once per build
	constBytes float64 // bytes of the constants folded so far
	pointBytes float64 // bytes per point of the values computed so far
	// largestPoint is the bytes per point of the largest of them.
	largestPoint float64
}

// reserveConst accounts for a constant of n values (held as float64)
// before it is allocated, and refuses it when it is over maxTensorBytes
// or takes the constants past the build's budget.
func (in *instance) reserveConst(n int) error {
	b := 8 * float64(n)
	if b > maxTensorBytes {
		return fmt.Errorf("a constant of %d values takes %s as float64, more than the %s one tensor may hold", n, byteSize(b), byteSize(maxTensorBytes))
	}
	in.mem.constBytes += b
	if in.mem.constBytes > in.mem.constLimit {
		return fmt.Errorf("the constants folded at load time would take about %s with this node's %s, more than the %s allowed (%s)",
			byteSize(in.mem.constBytes), byteSize(b), byteSize(in.mem.constLimit), sysmem.Why(1<<30))
	}
	return nil
}

// tensorTooLarge is the error of a value computed from the input at a
// batch of points, larger than one tensor may hold.
type tensorTooLarge struct {
	shape []int
	bytes float64
	batch int
}

func (e *tensorTooLarge) Error() string {
	size := byteSize(e.bytes)
	if size == byteSize(maxTensorBytes) { // round 74 A3: "takes 256 MiB, more than the 256 MiB"
		size = fmt.Sprintf("%.0f bytes", e.bytes)
	}
	return fmt.Sprintf("result of shape %v takes %s, more than the %s one tensor may hold", e.shape, size, byteSize(maxTensorBytes))
}

// reservePoint accounts for a value of the given shape computed from the
// input (at the build's batch size), before it is added to the graph.
func (in *instance) reservePoint(shape []int) error {
	b := float64(sizeOf(phys(shape))) * in.elemBytes()
	if b > maxTensorBytes {
		return &tensorTooLarge{shape: shape, bytes: b, batch: in.batch}
	}
	in.mem.pointBytes += b / float64(max(in.batch, 1))
	in.mem.largestPoint = max(in.mem.largestPoint, b/float64(max(in.batch, 1)))
	if in.mem.pointBytes > maxPointBytes {
		return notSupported("the values computed from the input would take about %s per point with this node's, more than the %s allowed: the model is too large to evaluate", // a point's, whatever the batch: no batch advice (round 75 A1)
			byteSize(in.mem.pointBytes), byteSize(maxPointBytes))
	}
	return nil
}

// reserve accounts for the result of shape of an operation: a constant
// when allConst, else a value computed from the input.
func (in *instance) reserve(shape []int, allConst bool) error {
	if allConst {
		return in.reserveConst(sizeOf(phys(shape)))
	}
	return in.reservePoint(shape)
}

// tensorConst is tensorVal, accounted for: an initializer or a node's
// tensor attribute read as a constant is copied each time.
func (in *instance) tensorConst(t *Tensor) (*val, error) {
	if err := in.reserveConst(max(t.Len(), 1)); err != nil {
		return nil, err
	}
	return tensorVal(t), nil
}

// elemBytes is the size of a value in the network's float type.
func (in *instance) elemBytes() float64 {
	if in.floatType() == TypeFloat {
		return 4
	}
	return 8
}

// byteSize writes a memory size in GiB, MiB or KiB (3 digits).
func byteSize(b float64) string {
	switch {
	case b >= 1<<30:
		return fmt.Sprintf("%.3g GiB", b/(1<<30))
	case b >= 1<<20:
		return fmt.Sprintf("%.3g MiB", b/(1<<20))
	}
	return fmt.Sprintf("%.3g KiB", b/(1<<10))
}

// fileCopies is how many times its size reading an ONNX file may take at
// once: the file's bytes, the decoded protobuf's copy of its tensors, and
// their float64 values (twice the bytes of float32 weights).
const fileCopies = 4

// checkFileMemory refuses, before reading them, ONNX files (read
// together) that reading would take more memory for than the machine (or
// ulimit -v) allows (a 1 GB file died with a fatal out-of-memory under a
// 4 GB ulimit -v).
func checkFileMemory(paths ...string) error {
	size := 0.0
	for _, p := range paths {
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() { // otherwise the reader says why
			size += float64(fi.Size())
		}
	}
	need, limit := size*fileCopies, sysmem.Limit(sysmem.DefaultLimit)
	if need > limit {
		return fmt.Errorf("%s: %s; reading it as an ONNX model may take about %s of memory, over the limit of %s (%s)",
			strings.Join(paths, " and "), sysmem.Bytes(size), sysmem.Bytes(need), sysmem.Bytes(limit), sysmem.Why(sysmem.DefaultLimit))
	}
	return nil
}
