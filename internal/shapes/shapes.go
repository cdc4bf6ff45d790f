// Package shapes computes with arrays' shapes (their sizes per axis).
package shapes

import "slices"

// Product is the number of values of an array of the shape: the product
// of its sizes (1 for none).
func Product(shape []int) int {
	p := 1
	for _, s := range shape {
		p *= s
	}
	return p
}

// Squeezed is shape without its axes of size 1 (a new slice): arrays whose
// squeezed shapes are equal hold their values in the same order.
func Squeezed(shape []int) []int {
	return slices.DeleteFunc(slices.Clone(shape), func(s int) bool { return s == 1 })
}
