//go:build !cgo

package layers

// couplingKernels64 and couplingKernels32 are the coupling operations'
// loops: without cgo, the Go loops of coupling_op.go.
var (
	couplingKernels64 = couplingGoKernels64
	couplingKernels32 = couplingGoKernels32
)
