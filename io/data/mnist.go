package data

import (
	"fmt"

	"gonum.org/v1/gonum/mat"
)

// Pool returns the images average-pooled by k×k blocks (Height and Width
// must be multiples of k): MNIST's 28×28 becomes 7×7 with k = 4. Levels is
// unchanged, pooled values are averages of raw values.
func (im *Images) Pool(k int) (*Images, error) {
	if k < 1 || im.Height%k != 0 || im.Width%k != 0 {
		return nil, fmt.Errorf("data: pooling %d×%d images by %d: want a divisor of both sides", im.Height, im.Width, k)
	}
	h, w := im.Height/k, im.Width/k
	n, _ := im.X.Dims()
	out := *im
	out.Height, out.Width = h, w
	out.X = mat.NewDense(n, im.Channels*h*w, nil)
	inv := 1 / float64(k*k)
	for r := 0; r < n; r++ {
		src, dst := im.X.RawRowView(r), out.X.RawRowView(r)
		for c := 0; c < im.Channels; c++ {
			for i := 0; i < im.Height; i++ {
				for j := 0; j < im.Width; j++ {
					dst[c*h*w+(i/k)*w+j/k] += src[c*im.Height*im.Width+i*im.Width+j] * inv
				}
			}
		}
	}
	return &out, nil
}
