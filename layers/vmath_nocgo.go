//go:build !cgo

package layers

import "math"

// vectorMath says which implementation of the elementwise functions is in use.
const vectorMath = "Go math (no cgo)"

func exp64(dst, src []float64, neg bool) {
	dst = dst[:len(src)]
	if neg {
		for i, v := range src {
			dst[i] = math.Exp(-v)
		}
		return
	}
	for i, v := range src {
		dst[i] = math.Exp(v)
	}
}

func exp32(dst, src []float32, neg bool) {
	dst = dst[:len(src)]
	if neg {
		for i, v := range src {
			dst[i] = float32(math.Exp(-float64(v)))
		}
		return
	}
	for i, v := range src {
		dst[i] = float32(math.Exp(float64(v)))
	}
}

func tanh64(dst, src []float64) {
	dst = dst[:len(src)]
	for i, v := range src {
		dst[i] = math.Tanh(v)
	}
}

func tanh32(dst, src []float32) {
	dst = dst[:len(src)]
	for i, v := range src {
		dst[i] = float32(math.Tanh(float64(v)))
	}
}
