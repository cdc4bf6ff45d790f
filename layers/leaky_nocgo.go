//go:build !cgo

package layers

// leaky64 and leaky32 are the Go loops without cgo.
func leaky64(dst, x, y []float64, slope float64) { leakyGo64(dst, x, y, slope) }
func leaky32(dst, x, y []float32, slope float32) { leakyGo32(dst, x, y, slope) }
