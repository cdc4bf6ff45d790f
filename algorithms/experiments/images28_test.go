package experiments

import (
	"bytes"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flowebm/flowebm/io/data"
	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"
)

// loaded keeps the image experiments the tests build, each read once.
var loaded struct {
	sync.Mutex
	m map[string]*Experiment
}

// loadExperiment returns ByName(name), built once for all the tests.
func loadExperiment(t *testing.T, name string) *Experiment {
	t.Helper()
	loaded.Lock()
	defer loaded.Unlock()
	if e := loaded.m[name]; e != nil {
		return e
	}
	t0 := time.Now()
	e, err := ByName(name)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("ByName(%q): %v", name, time.Since(t0).Round(time.Millisecond))
	if loaded.m == nil {
		loaded.m = map[string]*Experiment{}
	}
	loaded.m[name] = e
	return e
}

// checkImageExperiment checks an image experiment's sizes, its pixels'
// range and its class weights.
func checkImageExperiment(t *testing.T, e *Experiment, train, held int, shape ImageShape, names []string) {
	t.Helper()
	if e.Kind != KindImages || e.Image == nil || *e.Image != shape || e.Dim() != shape.Channels*shape.Height*shape.Width {
		t.Fatalf("%s: kind %v, image %v, dimension %d; want %v", e.Name, e.Kind, e.Image, e.Dim(), shape)
	}
	if r, _ := e.TrainSet.Dims(); r != train {
		t.Errorf("%s: %d training images, want %d", e.Name, r, train)
	}
	if r, _ := e.HeldOutSet.Dims(); r != held || len(e.HeldOutLabels) != held {
		t.Errorf("%s: %d held-out images and %d labels, want %d", e.Name, r, len(e.HeldOutLabels), held)
	}
	for _, m := range []*mat.Dense{e.TrainSet, e.HeldOutSet} {
		if lo, hi := floats.Min(m.RawMatrix().Data), floats.Max(m.RawMatrix().Data); lo < -1 || hi > 1 {
			t.Errorf("%s: pixels in [%v, %v], want [-1, 1]", e.Name, lo, hi)
		}
	}
	if !slices.Equal(e.ClassNames, names) || len(e.Weights) != len(names) || math.Abs(floats.Sum(e.Weights)-1) > 1e-12 {
		t.Errorf("%s: classes %q, weights %v", e.Name, e.ClassNames, e.Weights)
	}
}

// heldOutAccuracy returns the classifier's accuracy on the first n
// held-out images (a fixed subset: the held-out set's order is fixed).
func heldOutAccuracy(t *testing.T, e *Experiment, n int) float64 {
	t0 := time.Now()
	_, c := e.HeldOutSet.Dims()
	acc := Accuracy(e.Classify, e.HeldOutSet.Slice(0, n, 0, c), e.HeldOutLabels[:n])
	t.Logf("%s: accuracy %.4f on the first %d held-out images (%v)", e.Name, acc, n, time.Since(t0).Round(time.Millisecond))
	return acc
}

var digitNames = []string{"0", "1", "2", "3", "4", "5", "6", "7", "8", "9"}

// The classifier of mnist28 got 9,771 of MNIST's 10,000 test images right
// (0.9771, measured 2026-11-27); on the first 5,000 held-out images the
// binomial standard error of an accuracy near 0.977 is 0.0021, and the
// floor is 0.9771 − 3 × 0.0021 ≈ 0.970 (the subset measured 0.9744).
func TestMNIST28(t *testing.T) {
	e := loadExperiment(t, "mnist28")
	checkImageExperiment(t, e, 60000, 10000, ImageShape{1, 28, 28}, digitNames)
	if w := e.Weights; math.Abs(w[1]*60000-6742) > 0.5 {
		t.Errorf("weight of the ones %v, want 6742/60000", w[1])
	}
	if acc := heldOutAccuracy(t, e, 5000); acc < 0.970 {
		t.Errorf("accuracy %.4f, want ≥ 0.970", acc)
	}
}

// The classifier of fashion-mnist got 8,584 of the 10,000 test images
// right (0.8584, measured 2026-11-27); on the first 5,000 held-out images
// the binomial standard error is 0.0049, and the floor is
// 0.8584 − 3 × 0.0049 ≈ 0.843 (the subset measured 0.8592).
func TestFashionMNIST(t *testing.T) {
	if _, err := FashionMNISTDir(); err != nil {
		t.Skip(err)
	}
	e := loadExperiment(t, "fashion-mnist")
	checkImageExperiment(t, e, 60000, 10000, ImageShape{1, 28, 28}, FashionMNISTClasses)
	for k, w := range e.Weights {
		if w != 0.1 {
			t.Errorf("class %s weighs %v, want 0.1 (6,000 images of each)", e.ClassNames[k], w)
		}
	}
	if acc := heldOutAccuracy(t, e, 5000); acc < 0.843 {
		t.Errorf("accuracy %.4f, want ≥ 0.843", acc)
	}
}

// Fashion-MNIST's folder: the environment variable, else Debian's; a
// folder without the files is an error naming it. Only Debian's folder,
// which the user did not name, gets the hint to install Debian's package
// or to set the variable: a folder given (--data-dir, which train passes
// through the variable too) gets what it should hold.
func TestFashionMNISTMissing(t *testing.T) {
	empty := t.TempDir()
	want := "in " + empty + ": want the folder of Fashion-MNIST's train-images-idx3-ubyte.gz and its three siblings"
	if _, err := FashionMNIST(empty); err == nil || !strings.HasSuffix(err.Error(), want) || strings.Contains(err.Error(), "apt-get") {
		t.Errorf("empty folder: %v, want it to end with %q", err, want)
	}
	t.Setenv(FashionMNISTEnv, empty)
	if d, err := FashionMNISTDir(); d != empty || err != nil {
		t.Errorf("FashionMNISTDir() = %q, %v; want %q", d, err, empty)
	}
	if _, err := ByName("fashion-mnist"); err == nil || !strings.HasSuffix(err.Error(), want+" (the folder that "+FashionMNISTEnv+" names)") || strings.Contains(err.Error(), "apt-get") { // the variable named (probe 45)
		t.Errorf("ByName with %s=%s: %v, want it to end with %q", FashionMNISTEnv, empty, err, want)
	}
	none := filepath.Join(empty, "none")
	t.Setenv(FashionMNISTEnv, none)
	if _, err := FashionMNISTDir(); err == nil || !strings.Contains(err.Error(), FashionMNISTEnv+"="+none+" is not a folder") {
		t.Errorf("%s=%s: %v", FashionMNISTEnv, none, err)
	}
	t.Setenv(FashionMNISTEnv, "")
	if _, err := os.Stat(filepath.Join(FashionMNISTDebianDir, "train-images-idx3-ubyte.gz")); err != nil {
		if _, err := FashionMNISTDir(); err == nil || !strings.Contains(err.Error(), FashionMNISTDebianDir) || !strings.Contains(err.Error(), "apt-get install dataset-fashion-mnist") {
			t.Errorf("without Debian's package: %v", err)
		}
	}
}

// A small IDX set goes through the 28×28 path: no pooling, every training
// image a reference of the classifier.
func TestFashionMNISTSmallFiles(t *testing.T) {
	dir := t.TempDir()
	writeIDX(t, dir, "train", 60, 28, 28)
	writeIDX(t, dir, "t10k", 20, 28, 28)
	e, err := FashionMNIST(dir)
	if err != nil {
		t.Fatal(err)
	}
	checkImageExperiment(t, e, 60, 20, ImageShape{1, 28, 28}, FashionMNISTClasses)
	// writeIDX's image k is pixels k·7 + p: the test images are training
	// images, each found among its neighbours.
	if acc := Accuracy(e.Classify, e.HeldOutSet, e.HeldOutLabels); acc != 1 {
		t.Errorf("accuracy %v on training images, want 1", acc)
	}
	writeIDX(t, dir, "t10k", 20, 4, 4)
	if _, err := FashionMNIST(dir); err == nil || !strings.Contains(err.Error(), "t10k-images-idx3-ubyte.gz: images are 4×4") {
		t.Errorf("test images of another size: %v", err)
	}
}

// cifarTemplate is a fake CIFAR-10 class's image: a pattern of its own.
func cifarTemplate(class, p int) int { return (p*(class+1)*37 + class*91) % 200 }

// writeCIFAR writes a CIFAR-10 binary batch of n records to path, record i
// of class i % 10: its template plus noise in [0, 40).
func writeCIFAR(t *testing.T, path string, n int, rng *rand.Rand) {
	t.Helper()
	var b bytes.Buffer
	for i := 0; i < n; i++ {
		b.WriteByte(byte(i % 10))
		for p := 0; p < 3072; p++ {
			b.WriteByte(byte(cifarTemplate(i%10, p) + rng.IntN(40)))
		}
	}
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// CIFAR10 reads the binary batches from a folder, keeps their channel-major
// layout, dequantises to [−1, 1] and classifies; it refuses a missing
// folder or missing files with errors that say what to do.
func TestCIFAR10(t *testing.T) {
	t.Setenv(CIFAR10Env, "")
	if _, err := ByName("cifar10"); err == nil || !strings.Contains(err.Error(), CIFAR10Env) || !strings.Contains(err.Error(), "data_batch_1.bin") {
		t.Errorf("no folder: %v", err)
	}
	dir := t.TempDir()
	// Probe 28: a missing folder "lacks data_batch_1.bin …", and a file
	// gave a bare "stat …/data_batch_1.bin: not a directory".
	file := filepath.Join(dir, "afile")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, env := range []string{filepath.Join(dir, "none"), file} {
		t.Setenv(CIFAR10Env, env)
		if _, err := ByName("cifar10"); err == nil || !strings.HasPrefix(err.Error(), "experiments: cifar10: "+CIFAR10Env+"="+env+" is not a folder: want the folder of CIFAR-10's binary version") {
			t.Errorf("%s=%s: %v", CIFAR10Env, env, err)
		}
		if _, err := FindDataDir("cifar10"); err == nil || !strings.HasPrefix(err.Error(), "experiments: cifar10: "+CIFAR10Env+"="+env+" is not a folder") {
			t.Errorf("FindDataDir with %s=%s: %v", CIFAR10Env, env, err)
		}
		if _, err := CIFAR10(env); err == nil || !strings.HasPrefix(err.Error(), "experiments: cifar10: "+env+" is not a folder") {
			t.Errorf("CIFAR10(%s): %v", env, err)
		}
	}
	rng := rand.New(rand.NewPCG(5, 6))
	for _, f := range cifarRequired[:4] {
		writeCIFAR(t, filepath.Join(dir, f), 10, rng)
	}
	if _, err := CIFAR10(dir); err == nil || !strings.Contains(err.Error(), dir+" lacks data_batch_5.bin, test_batch.bin") {
		t.Errorf("missing files: %v", err)
	}
	// Probe 31: the folder is named as it is, not as FLOWEBM_CIFAR10,
	// which train --data-dir sets in its process.
	t.Setenv(CIFAR10Env, dir)
	if _, err := ByName("cifar10"); err == nil || !strings.Contains(err.Error(), "cifar10: "+dir+" lacks data_batch_5.bin") {
		t.Errorf("missing files in %s: %v", CIFAR10Env, err)
	}
	writeCIFAR(t, filepath.Join(dir, "data_batch_5.bin"), 10, rng)
	writeCIFAR(t, filepath.Join(dir, "test_batch.bin"), 20, rng)
	t.Setenv(CIFAR10Env, dir)
	e, err := ByName("cifar10")
	if err != nil {
		t.Fatal(err)
	}
	checkImageExperiment(t, e, 50, 20, ImageShape{3, 32, 32}, data.CIFAR10Classes)
	for k, w := range e.Weights {
		if w != 0.1 {
			t.Errorf("class %d weighs %v, want 0.1", k, w)
		}
	}
	// Every held-out row is its class's template, pixel by pixel in the
	// files' order, within the noise and the dequantisation.
	for i, l := range e.HeldOutLabels {
		row := e.HeldOutSet.RawRowView(i)
		for p, v := range row {
			raw := (v + 1) * 128 // in [pixel, pixel + 1)
			if d := raw - float64(cifarTemplate(l, p)); d < 0 || d >= 40 {
				t.Fatalf("held-out image %d (class %d), value %d: raw %v, template %d", i, l, p, raw, cifarTemplate(l, p))
			}
		}
	}
	if acc := Accuracy(e.Classify, e.HeldOutSet, e.HeldOutLabels); acc != 1 {
		t.Errorf("accuracy %v on the fake images, want 1", acc)
	}
}

// Flipping mirrors about half of the rows, each channel's lines reversed,
// and leaves the others as they were.
func TestFlipHorizontally(t *testing.T) {
	s := ImageShape{Channels: 2, Height: 3, Width: 5}
	const n = 400
	x := mat.NewDense(n, 30, nil)
	for i := range x.RawMatrix().Data {
		x.RawMatrix().Data[i] = float64(i)
	}
	orig := mat.DenseCopyOf(x)
	FlipHorizontally(x, s, rand.New(rand.NewPCG(7, 8)))
	flipped := 0
	for i := 0; i < n; i++ {
		if mat.Equal(x.RowView(i), orig.RowView(i)) {
			continue
		}
		flipped++
		for c := 0; c < 2; c++ {
			for r := 0; r < 3; r++ {
				for col := 0; col < 5; col++ {
					if got, want := x.At(i, c*15+r*5+col), orig.At(i, c*15+r*5+4-col); got != want {
						t.Fatalf("row %d, channel %d, line %d, column %d: %v, want %v", i, c, r, col, got, want)
					}
				}
			}
		}
	}
	// Binomial(400, ½): sd 10.
	if flipped < 150 || flipped > 250 {
		t.Errorf("%d of %d rows flipped, want about half", flipped, n)
	}
}

// The 7×7 mnist experiment is what it was before the batched classifier
// and the fused preparation: the same data bit for bit (Pool, Subset,
// Dequantize) and the same labels as data.KNN, on held-out images and on
// noise.
func TestMNISTUnchanged(t *testing.T) {
	dir, err := MNISTDir()
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(0x1ab, 0xe15))
	old := func(test bool) (*data.Images, *mat.Dense) {
		im, err := data.ReadMNIST(dir, test)
		if err != nil {
			t.Fatal(err)
		}
		p, err := im.Pool(4)
		if err != nil {
			t.Fatal(err)
		}
		p = p.Subset(rng.Perm(len(p.Labels)))
		return p, p.Dequantize(rng, -1, 1)
	}
	tr, x := old(false)
	te, hx := old(true)
	e := loadExperiment(t, "mnist")
	if !mat.Equal(e.TrainSet, x) || !mat.Equal(e.HeldOutSet, hx) || !slices.Equal(e.HeldOutLabels, te.Labels) || !slices.Equal(e.Weights, tr.ClassWeights()) {
		t.Fatal("the data differ from Pool, Subset and Dequantize's")
	}
	knn, err := data.NewKNN(knnNeighbours, mat.DenseCopyOf(x.Slice(0, 10000, 0, 49)), tr.Labels[:10000], tr.Classes)
	if err != nil {
		t.Fatal(err)
	}
	q := mat.NewDense(2000, 49, nil)
	q.Copy(hx.Slice(0, 1500, 0, 49))
	for i := 1500; i < 2000; i++ {
		for j := 0; j < 49; j++ {
			q.Set(i, j, 2*rng.Float64()-1)
		}
	}
	if got, want := e.Classify(q), knn.Classify(q); !slices.Equal(got, want) {
		n := 0
		for i := range got {
			if got[i] != want[i] {
				n++
			}
		}
		t.Errorf("%d of 2000 labels differ from data.KNN's", n)
	}
}

// TestMeasureImageClassifiers measures, when FLOWEBM_MEASURE_CLASSIFIERS is
// set, the classifiers' accuracy on the full test sets and their confusion
// (rows: true class), the numbers in docs/data.md (about 15 s each on 2
// cores).
func TestMeasureImageClassifiers(t *testing.T) {
	if os.Getenv("FLOWEBM_MEASURE_CLASSIFIERS") == "" {
		t.Skip("set FLOWEBM_MEASURE_CLASSIFIERS=1 to measure the accuracy on the full test sets")
	}
	for _, name := range []string{"mnist28", "fashion-mnist"} {
		e := loadExperiment(t, name)
		got := e.Classify(e.HeldOutSet)
		conf := make([][]int, len(e.ClassNames))
		for k := range conf {
			conf[k] = make([]int, len(e.ClassNames))
		}
		right := 0
		for i, l := range got {
			conf[e.HeldOutLabels[i]][l]++
			if l == e.HeldOutLabels[i] {
				right++
			}
		}
		p := float64(right) / float64(len(got))
		t.Logf("%s: %d of %d test images right, accuracy %.4f ± %.4f", name, right, len(got), p, math.Sqrt(p*(1-p)/float64(len(got))))
		for k, row := range conf {
			t.Logf("  %-12s %v", e.ClassNames[k], row)
		}
	}
}

// ByNameIn reads an image experiment from the folder given, and refuses a
// folder for an experiment that reads none.
func TestByNameIn(t *testing.T) {
	dir := t.TempDir()
	writeIDX(t, dir, "train", 30, 28, 28)
	writeIDX(t, dir, "t10k", 10, 28, 28)
	for _, n := range []string{"mnist28", "fashion-mnist"} {
		e, err := ByNameIn(n, dir)
		if err != nil || e.Name != n || e.Dim() != 784 {
			t.Errorf("ByNameIn(%q, %s): %v, %v", n, dir, e, err)
		}
	}
	if e, err := ByNameIn("mnist", dir); err != nil || e.Dim() != 49 {
		t.Errorf("ByNameIn(mnist, %s): %v, %v", dir, e, err)
	}
	if _, err := ByNameIn("cifar10", dir); err == nil || !strings.Contains(err.Error(), dir+" lacks data_batch_1.bin") {
		t.Errorf("cifar10 in a folder of IDX files: %v", err)
	}
	if _, err := ByNameIn("two-modes", dir); err == nil || !strings.Contains(err.Error(), "two-modes reads no data folder") {
		t.Errorf("two-modes with a folder: %v", err)
	}
	if e, err := ByNameIn("two-modes", ""); err != nil || e.Name != "two-modes" {
		t.Errorf("two-modes without a folder: %v, %v", e, err)
	}
}
