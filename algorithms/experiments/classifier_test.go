package experiments

import (
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"testing"

	"github.com/flowebm/flowebm/io/data"
	"gonum.org/v1/gonum/mat"
)

func randomPoints(rng *rand.Rand, n, d, classes int) (*mat.Dense, []int) {
	x := mat.NewDense(n, d, nil)
	labels := make([]int, n)
	for i := range labels {
		labels[i] = rng.IntN(classes)
		for j := 0; j < d; j++ {
			x.Set(i, j, rng.NormFloat64()+float64(labels[i]*(j%2)))
		}
	}
	return x, labels
}

// The batched search finds the exact nearest neighbours across the
// boundaries of its query and reference batches, and without a projection
// gives data.KNN's labels.
func TestKNNClassifierMatchesBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	const n, d, k = knnRefBatch + 900, 6, 5
	ref, labels := randomPoints(rng, n, d, 3)
	q, _ := randomPoints(rng, knnQueryBatch*2+44, d, 3)
	c, err := NewKNNClassifier(ref, labels, 3, KNNOptions{K: k})
	if err != nil {
		t.Fatal(err)
	}
	old, err := data.NewKNN(k, ref, labels, 3)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := c.Classify(q), old.Classify(q); !slices.Equal(got, want) {
		t.Errorf("labels differ from data.KNN's")
	}
	r, _ := q.Dims()
	found := make([][]int, r)
	dists := make([][]float64, r)
	c.neighbours(q, k, func(i int, idx []int, dist []float64) {
		found[i], dists[i] = slices.Clone(idx), slices.Clone(dist)
	})
	for i := 0; i < r; i++ {
		all := make([]int, n)
		d2 := make([]float64, n)
		for j := range all {
			all[j] = j
			for c := 0; c < d; c++ {
				v := q.At(i, c) - ref.At(j, c)
				d2[j] += v * v
			}
		}
		sort.SliceStable(all, func(a, b int) bool { return d2[all[a]] < d2[all[b]] })
		if !slices.Equal(found[i], all[:k]) {
			t.Fatalf("query %d: neighbours %v, want %v", i, found[i], all[:k])
		}
		for p, j := range all[:k] {
			if math.Abs(dists[i][p]-d2[j]) > 1e-9*(1+d2[j]) {
				t.Fatalf("query %d: squared distance %v, want %v", i, dists[i][p], d2[j])
			}
		}
	}
	// All the principal components keep distances.
	pc, err := NewKNNClassifier(ref, labels, 3, KNNOptions{K: k, Components: d, FitRows: n})
	if err != nil {
		t.Fatal(err)
	}
	pc.neighbours(q.Slice(0, 50, 0, d), k, func(i int, idx []int, dist []float64) {
		if !slices.Equal(idx, found[i]) {
			t.Errorf("query %d with %d components: neighbours %v, want %v", i, d, idx, found[i])
		}
		for p := range dist {
			if math.Abs(dist[p]-dists[i][p]) > 1e-9*(1+dists[i][p]) {
				t.Errorf("query %d with %d components: squared distance %v, want %v", i, d, dist[p], dists[i][p])
			}
		}
	})
}

// Weighted votes let one near neighbour outvote three far ones.
func TestKNNClassifierWeighted(t *testing.T) {
	ref := mat.NewDense(4, 2, []float64{0.1, 0, 1, 0, 0, 1, -1, 0})
	labels := []int{0, 1, 1, 1}
	q := mat.NewDense(1, 2, nil)
	for _, c := range []struct {
		weighted bool
		want     int
	}{{false, 1}, {true, 0}} {
		k, err := NewKNNClassifier(ref, labels, 2, KNNOptions{K: 4, Weighted: c.weighted})
		if err != nil {
			t.Fatal(err)
		}
		if got := k.Classify(q)[0]; got != c.want {
			t.Errorf("weighted %v: class %d, want %d", c.weighted, got, c.want)
		}
	}
	if _, err := NewKNNClassifier(ref, []int{0, 1, 2, 0}, 2, KNNOptions{}); err == nil {
		t.Error("label 2 of 2 classes accepted")
	}
}

// Principal components of pooled images: the projection depends on the
// pixels only through their block means, its pooled directions are
// orthonormal, and the components come in decreasing variance.
func TestKNNClassifierPooledComponents(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	sh := ImageShape{Channels: 2, Height: 4, Width: 6}
	const n, comps = 300, 4
	x, labels := randomPoints(rng, n, 48, 2)
	c, err := NewKNNClassifier(x, labels, 2, KNNOptions{K: 3, Components: comps, Pool: 2, Shape: &sh})
	if err != nil {
		t.Fatal(err)
	}
	// Swapping two pixels of a 2×2 block leaves the features unchanged.
	a := mat.DenseCopyOf(x.Slice(0, 1, 0, 48))
	b := mat.DenseCopyOf(a)
	i, j := 1*24+2*6+4, 1*24+3*6+5 // channel 1, rows 2 and 3, columns 4 and 5
	b.Set(0, i, a.At(0, j))
	b.Set(0, j, a.At(0, i))
	if fa, fb := c.features(a), c.features(b); !mat.EqualApprox(fa, fb, 1e-12) {
		t.Errorf("features %v and %v differ within a block", mat.Formatted(fa), mat.Formatted(fb))
	}
	// 4·proj repeats each pooled direction over the 4 pixels of its block:
	// (4·proj)ᵀ(4·proj) is 4 times the pooled directions' inner products.
	var vtv mat.Dense
	vtv.Mul(c.proj.T(), c.proj)
	for p := 0; p < comps; p++ {
		for q := 0; q < comps; q++ {
			want := 0.0
			if p == q {
				want = 1
			}
			if got := vtv.At(p, q) * 16 / 4; math.Abs(got-want) > 1e-9 {
				t.Errorf("pooled directions %d·%d = %v, want %v", p, q, got, want)
			}
		}
	}
	f := c.features(x)
	prev := math.Inf(1)
	for p := 0; p < comps; p++ {
		var s float64
		for i := 0; i < n; i++ {
			s += f.At(i, p) * f.At(i, p)
		}
		if s > prev*(1+1e-9) {
			t.Errorf("component %d has variance %v, above the previous one's %v", p, s/n, prev/n)
		}
		prev = s
	}
	if _, err := NewKNNClassifier(x, labels, 2, KNNOptions{Components: 3, Pool: 2}); err == nil {
		t.Error("pooling without a shape accepted")
	}
	if _, err := NewKNNClassifier(x, labels, 2, KNNOptions{Components: 13, Pool: 2, Shape: &sh}); err == nil {
		t.Error("13 components of 12 pooled values accepted")
	}
}
