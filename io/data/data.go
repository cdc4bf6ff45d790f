// Package data reads image data sets in their distribution formats into
// float64 matrices, one image per row: MNIST's IDX files (also
// Fashion-MNIST's), CIFAR-10's binary batches and scikit-learn's 8×8 digits
// CSV. Files may be gzip-compressed (detected by content, not by name).
//
// Pixels keep their raw values (0..255, or 0..16 for the digits); Images.Dequantize
// turns them into continuous values for density models, as App. C.6 does.
// Every parser reports a malformed file with a *FormatError naming the file,
// the field or record at fault and what was expected, never a panic.
package data

import (
	"bufio"
	"compress/gzip"
	"fmt"
	"io"
	"math/rand/v2"

	"gonum.org/v1/gonum/mat"

	"github.com/flowebm/flowebm/io/safefile"
)

// Images is a labelled image data set.
type Images struct {
	// X holds one image per row, channel-major (C×H×W, as CIFAR-10 and
	// PyTorch lay them out), raw pixel values.
	X *mat.Dense
	// Labels are the class indices, 0..Classes−1.
	Labels                  []int
	Channels, Height, Width int
	// Levels is the number of pixel values (256, or 17 for the digits).
	Levels  int
	Classes int
}

// FormatError reports a malformed file.
type FormatError struct {
	File  string // file name as given to the reader
	Field string // the field or record at fault
	Got   string
	Want  string
}

func (e *FormatError) Error() string {
	if e.Got == "" {
		return fmt.Sprintf("%s: %s: want %s", e.File, e.Field, e.Want)
	}
	return fmt.Sprintf("%s: %s is %s, want %s", e.File, e.Field, e.Got, e.Want)
}

// maybeGzip returns a reader of r's content, decompressed if it starts with
// the gzip magic bytes.
func maybeGzip(r io.Reader, name string) (io.Reader, error) {
	br := bufio.NewReader(r)
	head, err := br.Peek(2)
	if err == nil && head[0] == 0x1f && head[1] == 0x8b {
		z, err := gzip.NewReader(br)
		if err != nil {
			return nil, &FormatError{File: name, Field: "gzip header", Got: err.Error(), Want: "a valid gzip stream"}
		}
		return z, nil
	}
	return br, nil
}

// openFile opens path for one of the readers.
func openFile(path string, read func(io.Reader, string) error) error {
	f, err := safefile.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return read(f, path)
}

// Dequantize returns the images as continuous values in [lo, hi]: each pixel
// value v becomes (v + u)/Levels with u ~ U[0, 1) (App. C.6's
// dequantisation), then is mapped affinely from [0, 1] to [lo, hi]. The
// paper uses [−1, 1].
func (im *Images) Dequantize(rng *rand.Rand, lo, hi float64) *mat.Dense {
	r, c := im.X.Dims()
	out := mat.NewDense(r, c, nil)
	src, dst := im.X.RawMatrix().Data, out.RawMatrix().Data
	for i, v := range src {
		dst[i] = lo + (hi-lo)*(v+rng.Float64())/float64(im.Levels)
	}
	return out
}

// Subset returns the images whose indices are given, as a new data set.
func (im *Images) Subset(idx []int) *Images {
	_, c := im.X.Dims()
	out := *im
	out.X = mat.NewDense(max(1, len(idx)), c, nil)
	if len(idx) == 0 {
		out.X = &mat.Dense{}
	}
	out.Labels = make([]int, len(idx))
	for k, i := range idx {
		out.X.SetRow(k, im.X.RawRowView(i))
		out.Labels[k] = im.Labels[i]
	}
	return &out
}

// ClassWeights returns the fraction of images of each class.
func (im *Images) ClassWeights() []float64 { return LabelWeights(im.Labels, im.Classes) }

// LabelWeights returns the fraction of labels equal to each class
// 0..classes−1.
func LabelWeights(labels []int, classes int) []float64 {
	w := make([]float64, classes)
	for _, l := range labels {
		w[l]++
	}
	for k := range w {
		w[k] /= float64(max(1, len(labels)))
	}
	return w
}
