package onnx

import (
	"fmt"
	"math"
)

// Shape sizes. Every shape the importer builds from a model's numbers
// (Reshape's target, Expand's, Tile's repeats, ConstantOfShape's, Pad's
// pads, Resize's sizes) goes through shapeSize, which refuses it before
// its product can overflow; sizeOf saturates instead of wrapping, so that
// a shape missed by the checks reads as too large, never as small.

// sizeOf is the number of values of a shape: the product of its
// dimensions (0 if one is 0 or negative), math.MaxInt if that is larger.
func sizeOf(shape []int) int {
	n := 1
	for _, s := range shape {
		if s <= 0 {
			return 0
		}
	}
	for _, s := range shape {
		if n > math.MaxInt/s {
			return math.MaxInt
		}
		n *= s
	}
	return n
}

// checkedShape converts dimensions, refusing negative ones and sizes over
// maxElements before anything is allocated.
func checkedShape(dims []int64) ([]int, error) {
	if _, err := shapeSize(dims, dims); err != nil {
		return nil, err
	}
	return toInts(dims), nil
}

// shapeSize is the number of values of dims, a shape the model gives as
// spec (a Reshape target, whose -1 reads as 1 in dims and whose 0 copies
// a dimension). It is refused, naming spec, when a dimension is negative
// or over maxElements, or the nonzero ones multiply to more than
// maxElements (a 0 does not excuse a huge shape). The running product is
// at most maxElements before each multiplication by a dimension of at
// most maxElements, so it stays below 2^50: it cannot overflow.
func shapeSize(spec, dims []int64) (int, error) {
	n, zero := int64(1), false
	for i, d := range dims {
		switch {
		case d < 0:
			return 0, fmt.Errorf("negative dimension %d in shape %v", d, spec)
		case d > maxElements:
			return 0, fmt.Errorf("shape %v: dimension %d is %d, more than the %d values (%s as float64) one tensor may hold",
				spec, i, d, maxElements, byteSize(maxTensorBytes))
		case d == 0:
			zero = true
		default:
			n *= d
			if n > maxElements {
				return 0, tooManyValues(spec, dims)
			}
		}
	}
	if zero {
		return 0, nil
	}
	return int(n), nil
}

// tooManyValues is shapeSize's error for dims whose product is over
// maxElements, with the product in full (as a float, which cannot
// overflow).
func tooManyValues(spec, dims []int64) error {
	n, exact := 1.0, true
	for i, d := range dims {
		if d == 0 || spec[i] < 0 {
			exact = false
		}
		if d != 0 {
			n *= float64(d)
		}
	}
	if exact {
		return fmt.Errorf("shape %v has %.4g values (%s as float64), more than the %d (%s) one tensor may hold",
			spec, n, byteSize(8*n), maxElements, byteSize(maxTensorBytes))
	}
	return fmt.Errorf("shape %v: its known nonzero dimensions multiply to %.4g values (%s as float64), more than the %d (%s) one tensor may hold",
		spec, n, byteSize(8*n), maxElements, byteSize(maxTensorBytes))
}
