package experiments

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"
)

// writeIDXHeader writes an IDX image file holding only its header (n
// rows×cols images declared, none there) and a label file of n labels.
func writeIDXHeader(t *testing.T, dir, name string, n, rows, cols int) {
	t.Helper()
	var ib, lb bytes.Buffer
	binary.Write(&ib, binary.BigEndian, [4]uint32{0x803, uint32(n), uint32(rows), uint32(cols)})
	binary.Write(&lb, binary.BigEndian, [2]uint32{0x801, uint32(n)})
	lb.Write(make([]byte, n))
	for f, b := range map[string][]byte{name + "-images-idx3-ubyte": ib.Bytes(), name + "-labels-idx1-ubyte": lb.Bytes()} {
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// mnist28 and fashion-mnist take 28×28 images only: other sizes are
// refused from the files' headers, before the images are read or the
// classifier built (1024×1024 images made a k-NN covariance of 8 TiB; 5×3
// ones fell back to a model that the scaled settings did not fit), with an
// error naming the file, its size and the size wanted.
func TestIDXExperimentsTake28x28(t *testing.T) {
	source := map[string]string{"mnist28": "MNIST", "fashion-mnist": "Fashion-MNIST"}
	for _, name := range []string{"mnist28", "fashion-mnist"} {
		// Headers only: reading the images would be a truncation error.
		dir := t.TempDir()
		writeIDXHeader(t, dir, "train", 20, 1024, 1024)
		writeIDXHeader(t, dir, "t10k", 10, 1024, 1024)
		want := filepath.Join(dir, "train-images-idx3-ubyte") + ": images are 1024×1024, want 28×28 (" + name + " is " + source[name] + " at full size)"
		if _, err := ByNameIn(name, dir); err == nil || err.Error() != want {
			t.Errorf("%s, 1024×1024: %v, want %q", name, err, want)
		}
		dir = t.TempDir()
		writeIDX(t, dir, "train", 30, 5, 3)
		writeIDX(t, dir, "t10k", 10, 5, 3)
		want = filepath.Join(dir, "train-images-idx3-ubyte.gz") + ": images are 5×3, want 28×28"
		if _, err := ByNameIn(name, dir); err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("%s, 5×3: %v, want %q", name, err, want)
		}
		dir = t.TempDir()
		writeIDX(t, dir, "train", 30, 28, 28)
		writeIDXHeader(t, dir, "t10k", 10, 1, 1)
		want = filepath.Join(dir, "t10k-images-idx3-ubyte") + ": images are 1×1, want 28×28"
		if _, err := ByNameIn(name, dir); err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("%s, 1×1 test images: %v, want %q", name, err, want)
		}
	}
}

// The classifier's principal components refuse rows too long for their
// d×d covariance, rather than allocating it.
func TestKNNClassifierBoundsComponents(t *testing.T) {
	d := maxPCAValues + 1
	ref := mat.NewDense(3, d, nil)
	for i := range ref.RawMatrix().Data {
		ref.RawMatrix().Data[i] = float64(i % 7)
	}
	_, err := NewKNNClassifier(ref, []int{0, 1, 0}, 2, KNNOptions{K: 1, Components: 2})
	want := "experiments: k-NN principal components of rows of 4097 values (4097 pixels pooled by 1×1): the 4097×4097 covariance would take 128 MiB; want at most 4096 values"
	if err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("%d values a row: %v, want %q", d, err, want)
	}
}
