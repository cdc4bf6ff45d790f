package data

import (
	"fmt"

	"gonum.org/v1/gonum/mat"
)

// KNN is a k-nearest-neighbour classifier (Euclidean distance, majority
// vote, ties to the nearer neighbours' class). It assigns generated images
// to classes, so that the class weights of samples can be compared with the
// data's.
type KNN struct {
	K      int
	Ref    *mat.Dense // reference points, one per row
	Labels []int
	// Classes is the number of classes (labels are 0..Classes−1).
	Classes int
	norms   []float64
}

// NewKNN builds a classifier from reference points and their labels.
func NewKNN(k int, ref *mat.Dense, labels []int, classes int) (*KNN, error) {
	n, _ := ref.Dims()
	if k < 1 || k > n || len(labels) != n {
		return nil, fmt.Errorf("data: k-NN with k = %d, %d reference points and %d labels", k, n, len(labels))
	}
	c := &KNN{K: k, Ref: ref, Labels: labels, Classes: classes, norms: make([]float64, n)}
	for i := range c.norms {
		c.norms[i] = mat.Dot(ref.RowView(i), ref.RowView(i))
	}
	return c, nil
}

// Classify returns the class of each row of x.
func (c *KNN) Classify(x mat.Matrix) []int {
	r, _ := x.Dims()
	n, _ := c.Ref.Dims()
	// ‖x − y‖² = ‖x‖² − 2x·y + ‖y‖²; the ‖x‖² term does not change the
	// ranking, so it is left out.
	var dots mat.Dense
	dots.Mul(x, c.Ref.T())
	out := make([]int, r)
	bestD := make([]float64, c.K) // the K smallest distances so far, ascending
	bestJ := make([]int, c.K)
	votes := make([]int, c.Classes)
	for i := 0; i < r; i++ {
		row := dots.RawRowView(i)
		m := 0
		for j := 0; j < n; j++ {
			v := c.norms[j] - 2*row[j]
			if m == c.K && v >= bestD[m-1] {
				continue
			}
			if m < c.K {
				m++
			}
			p := m - 1
			for p > 0 && bestD[p-1] > v {
				bestD[p], bestJ[p] = bestD[p-1], bestJ[p-1]
				p--
			}
			bestD[p], bestJ[p] = v, j
		}
		clear(votes)
		best := -1
		for _, j := range bestJ[:m] { // nearest first: ties go to the nearer class
			l := c.Labels[j]
			votes[l]++
			if best < 0 || votes[l] > votes[best] {
				best = l
			}
		}
		out[i] = best
	}
	return out
}
