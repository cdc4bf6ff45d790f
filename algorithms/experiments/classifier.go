package experiments

import (
	"fmt"
	"math"
	"runtime"
	"sync"

	"github.com/flowebm/flowebm/internal/sysmem"
	"gonum.org/v1/gonum/mat"
)

// KNNOptions configure NewKNNClassifier. The zero value of a field means
// the default given with it.
type KNNOptions struct {
	// K is the number of neighbours that vote (default 5).
	K int
	// Weighted weighs each neighbour's vote by the inverse of its
	// distance; otherwise every neighbour counts one, and a tie goes to
	// the class of the nearer neighbours.
	Weighted bool
	// Components, if positive, is the number of principal components of
	// the reference images in which distances are measured (the images
	// are centred and projected once; distances then cost Components
	// rather than d multiply-adds); 0 measures them between the pixels.
	Components int
	// FitRows is the number of reference rows, the first ones, the
	// principal components are computed on (default min(n, 10,000)).
	FitRows int
	// Pool, above 1, computes the principal components of the images
	// average-pooled by Pool×Pool blocks (Shape is then required): the
	// projection stays linear in the pixels, and the covariance to
	// decompose shrinks Pool⁴-fold (CIFAR-10's 3,072 pixels to 768).
	Pool  int
	Shape *ImageShape
}

// KNNClassifier is a k-nearest-neighbour classifier (Euclidean distance,
// optionally in the span of the reference images' leading principal
// components). It assigns generated images to classes, so that the class
// weights of samples can be compared with the data's. Distances are
// computed as ‖r‖² − 2 x·r (+ ‖x‖²) with matrix products through gonum's
// mat, hence through OpenBLAS once graph.UseBLAS has installed it, by
// batches of queries and of references so that memory stays bounded
// whatever the number of rows classified.
type KNNClassifier struct {
	opt     KNNOptions
	labels  []int
	classes int
	dim     int
	ref     *mat.Dense // reference points (features), one per row
	norms   []float64  // ‖ref row‖²
	// proj (d × Components) and offset (mean·proj) map an image x to its
	// features x·proj − offset; nil: the pixels themselves.
	proj   *mat.Dense
	offset []float64
}

// Query and reference batch sizes: a batch's products are
// knnQueryBatch × knnRefBatch float64 (16 MB).
const (
	knnQueryBatch = 256
	knnRefBatch   = 8192
)

// NewKNNClassifier builds a classifier from reference images (one per
// row) and their labels 0..classes−1. Without principal components the
// classifier keeps ref itself, which the caller must then leave unchanged;
// with them it keeps only the projected rows.
func NewKNNClassifier(ref *mat.Dense, labels []int, classes int, opt KNNOptions) (*KNNClassifier, error) {
	n, d := ref.Dims()
	if opt.K == 0 {
		opt.K = 5
	}
	if opt.K < 1 || opt.K > n || len(labels) != n {
		return nil, fmt.Errorf("experiments: k-NN with k = %d, %d reference points and %d labels", opt.K, n, len(labels))
	}
	for i, l := range labels {
		if l < 0 || l >= classes {
			return nil, fmt.Errorf("experiments: k-NN reference label %d is %d, want a class 0..%d", i, l, classes-1)
		}
	}
	c := &KNNClassifier{opt: opt, labels: labels, classes: classes, dim: d, ref: ref}
	if opt.Components > 0 {
		proj, mean, err := principalComponents(ref, opt)
		if err != nil {
			return nil, err
		}
		c.proj = proj
		c.offset = make([]float64, opt.Components)
		mat.NewVecDense(opt.Components, c.offset).MulVec(proj.T(), mat.NewVecDense(d, mean))
		c.ref = c.features(ref)
	}
	c.norms = make([]float64, n)
	for i := range c.norms {
		c.norms[i] = mat.Dot(c.ref.RowView(i), c.ref.RowView(i)) // as data.KNN: the same labels
	}
	return c, nil
}

// maxPCAValues bounds the (pooled) dimension whose covariance
// principalComponents decomposes: its d×d products and eigenvectors take
// 3·8·d² bytes (400 MB at this bound, 15 MB for MNIST's 784 pixels), and
// the decomposition's time grows as d³.
const maxPCAValues = 4096

// principalComponents returns the projection d × opt.Components onto the
// leading principal components of the first opt.FitRows rows of x (pooled
// by opt.Pool, the projection brought back to the pixels), and their mean
// in the pixels.
func principalComponents(x *mat.Dense, opt KNNOptions) (*mat.Dense, []float64, error) {
	n, d := x.Dims()
	m := opt.FitRows
	if m <= 0 {
		m = min(n, 10000)
	}
	m = min(m, n)
	pool := max(opt.Pool, 1)
	var sh ImageShape
	if pool > 1 {
		if opt.Shape == nil {
			return nil, nil, fmt.Errorf("experiments: k-NN principal components of pooled images need the image shape")
		}
		sh = *opt.Shape
		if sh.Channels*sh.Height*sh.Width != d || sh.Height%pool != 0 || sh.Width%pool != 0 {
			return nil, nil, fmt.Errorf("experiments: k-NN principal components: cannot pool %d×%d×%d images (%d values) by %d×%d blocks", sh.Channels, sh.Height, sh.Width, d, pool, pool)
		}
	}
	dp := d / (pool * pool) // the pooled dimension
	if opt.Components > dp || m < 2 {
		return nil, nil, fmt.Errorf("experiments: k-NN with %d principal components of %d rows of %d values", opt.Components, m, dp)
	}
	if dp > maxPCAValues {
		return nil, nil, fmt.Errorf("experiments: k-NN principal components of rows of %d values (%d pixels pooled by %d×%d): the %d×%d covariance would take %s; want at most %d values (pool the images, or Components 0: distances in the pixels)",
			dp, d, pool, pool, dp, dp, sysmem.Bytes(8*float64(dp)*float64(dp)), maxPCAValues)
	}
	// pooled[i] is the pooled coordinate pixel i falls in.
	pooled := make([]int, d)
	for i := range pooled {
		pooled[i] = i
		if pool > 1 {
			ch, rest := i/(sh.Height*sh.Width), i%(sh.Height*sh.Width)
			r, col := rest/sh.Width, rest%sh.Width
			pooled[i] = ch*(sh.Height/pool)*(sh.Width/pool) + (r/pool)*(sh.Width/pool) + col/pool
		}
	}
	mean := make([]float64, d)
	for i := 0; i < m; i++ {
		for j, v := range x.RawRowView(i) {
			mean[j] += v
		}
	}
	for j := range mean {
		mean[j] /= float64(m)
	}
	inv := 1 / float64(pool*pool)
	// The centred rows, pooled, stored as columns: the covariance is then
	// a product of rows by rows (dot products, computed in parallel), 40%
	// faster than SymOuterK here.
	ct := mat.NewDense(dp, m, nil)
	raw := ct.RawMatrix()
	for i := 0; i < m; i++ {
		for j, v := range x.RawRowView(i) {
			raw.Data[pooled[j]*raw.Stride+i] += (v - mean[j]) * inv
		}
	}
	var g mat.Dense
	g.Mul(ct, ct.T())
	g.Scale(1/float64(m), &g)
	cov := mat.NewSymDense(dp, g.RawMatrix().Data) // the upper triangle
	var eig mat.EigenSym
	if !eig.Factorize(cov, true) {
		return nil, nil, fmt.Errorf("experiments: k-NN principal components: the eigendecomposition of the %d×%d covariance failed", dp, dp)
	}
	var vec mat.Dense
	eig.VectorsTo(&vec) // eigenvalues ascending: the last columns lead
	proj := mat.NewDense(d, opt.Components, nil)
	for j := 0; j < d; j++ {
		row := proj.RawRowView(j)
		for q := range row {
			// A pooled coordinate's weight spreads evenly over its pixels.
			row[q] = vec.At(pooled[j], dp-1-q) * inv
		}
	}
	return proj, mean, nil
}

// features returns the projected rows of x (x itself without a projection).
func (c *KNNClassifier) features(x mat.Matrix) *mat.Dense {
	if c.proj == nil {
		if d, ok := x.(*mat.Dense); ok {
			return d
		}
		return mat.DenseCopyOf(x)
	}
	var f mat.Dense
	f.Mul(x, c.proj)
	r, _ := f.Dims()
	for i := 0; i < r; i++ {
		row := f.RawRowView(i)
		for q, o := range c.offset {
			row[q] -= o
		}
	}
	return &f
}

// Classify returns the class of each row of x.
func (c *KNNClassifier) Classify(x mat.Matrix) []int {
	r, _ := x.Dims()
	out := make([]int, r)
	k := c.opt.K
	c.neighbours(x, k, func(i int, idx []int, dist []float64) {
		votes := make([]float64, c.classes)
		best := -1
		for p, j := range idx { // nearest first: ties go to the nearer class
			l := c.labels[j]
			if c.opt.Weighted {
				votes[l] += 1 / (math.Sqrt(max(dist[p], 0)) + 1e-12)
			} else {
				votes[l]++
			}
			if best < 0 || votes[l] > votes[best] {
				best = l
			}
		}
		out[i] = best
	})
	return out
}

// neighbours calls found for every row i of x with the indices of its k
// nearest references, nearest first, and their squared distances (equal
// distances keep the order of the references). found may be called
// concurrently for different rows; idx and dist are reused after it
// returns.
func (c *KNNClassifier) neighbours(x mat.Matrix, k int, found func(i int, idx []int, dist []float64)) {
	r, d := x.Dims()
	if d != c.dim {
		panic(fmt.Sprintf("experiments: classifying %d-dimensional points with a k-NN of %d-dimensional references", d, c.dim))
	}
	n, _ := c.ref.Dims()
	k = min(k, n)
	workers := max(1, min(runtime.GOMAXPROCS(0), 8))
	type best struct {
		d []float64
		j []int
		m int
	}
	buf := make([]float64, min(r, knnQueryBatch)*min(n, knnRefBatch))
	for lo := 0; lo < r; lo += knnQueryBatch {
		hi := min(r, lo+knnQueryBatch)
		f := c.features(sliceRows(x, lo, hi))
		_, p := f.Dims()
		bs := make([]best, hi-lo)
		for b := range bs {
			bs[b] = best{d: make([]float64, k), j: make([]int, k)}
		}
		for rlo := 0; rlo < n; rlo += knnRefBatch {
			rhi := min(n, rlo+knnRefBatch)
			dots := mat.NewDense(hi-lo, rhi-rlo, buf[:(hi-lo)*(rhi-rlo)])
			dots.Mul(f, c.ref.Slice(rlo, rhi, 0, p).T())
			var wg sync.WaitGroup
			for w := 0; w < workers; w++ {
				wg.Add(1)
				go func(w int) {
					defer wg.Done()
					for b := w; b < hi-lo; b += workers {
						s := &bs[b]
						row := dots.RawRowView(b)
						for jj, dj := range row {
							j := rlo + jj
							// ‖x − y‖² − ‖x‖²: ‖x‖² does not change the ranking.
							v := c.norms[j] - 2*dj
							if s.m == k && v >= s.d[k-1] {
								continue
							}
							if s.m < k {
								s.m++
							}
							q := s.m - 1
							for q > 0 && s.d[q-1] > v {
								s.d[q], s.j[q] = s.d[q-1], s.j[q-1]
								q--
							}
							s.d[q], s.j[q] = v, j
						}
					}
				}(w)
			}
			wg.Wait()
		}
		var wg sync.WaitGroup
		for w := 0; w < workers; w++ {
			wg.Add(1)
			go func(w int) {
				defer wg.Done()
				dist := make([]float64, k)
				for b := w; b < hi-lo; b += workers {
					s := &bs[b]
					fr := f.RawRowView(b)
					xx := dot(fr, fr)
					for q := range dist {
						dist[q] = s.d[q] + xx
					}
					found(lo+b, s.j, dist)
				}
			}(w)
		}
		wg.Wait()
	}
}

// sliceRows returns rows lo..hi−1 of x.
func sliceRows(x mat.Matrix, lo, hi int) mat.Matrix {
	_, c := x.Dims()
	if s, ok := x.(interface {
		Slice(i, k, j, l int) mat.Matrix
	}); ok {
		return s.Slice(lo, hi, 0, c)
	}
	out := mat.NewDense(hi-lo, c, nil)
	for i := lo; i < hi; i++ {
		for j := 0; j < c; j++ {
			out.Set(i-lo, j, x.At(i, j))
		}
	}
	return out
}

func dot(a, b []float64) float64 {
	var s float64
	for i, v := range a {
		s += v * b[i]
	}
	return s
}

// Accuracy returns the fraction of the rows of x that classify assigns to
// their label.
func Accuracy(classify func(mat.Matrix) []int, x mat.Matrix, labels []int) float64 {
	got := classify(x)
	right := 0
	for i, l := range got {
		if l == labels[i] {
			right++
		}
	}
	return float64(right) / float64(max(1, len(got)))
}
