package experiments

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writeIDX writes an IDX image file of n rows×cols images and its label
// file to dir, as name-images-idx3-ubyte.gz and name-labels-idx1-ubyte.
func writeIDX(t *testing.T, dir, name string, n, rows, cols int) {
	t.Helper()
	var ib, lb bytes.Buffer
	zw := gzip.NewWriter(&ib)
	binary.Write(zw, binary.BigEndian, [4]uint32{0x803, uint32(n), uint32(rows), uint32(cols)})
	binary.Write(&lb, binary.BigEndian, [2]uint32{0x801, uint32(n)})
	for k := 0; k < n; k++ {
		for p := 0; p < rows*cols; p++ {
			zw.Write([]byte{byte(k*7 + p)})
		}
		lb.WriteByte(byte(k % 10))
	}
	zw.Close()
	for f, b := range map[string][]byte{name + "-images-idx3-ubyte.gz": ib.Bytes(), name + "-labels-idx1-ubyte": lb.Bytes()} {
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// MNIST checks the images as it reads them: an error names the image
// file and what is wrong with it, rather than failing later in pooling,
// the model or the k-NN classifier.
func TestMNISTImageChecks(t *testing.T) {
	for _, c := range []struct {
		name        string
		train, test [3]int // images, rows, columns
		want        string
	}{
		{"odd rows", [3]int{6, 27, 28}, [3]int{2, 28, 28}, "train-images-idx3-ubyte.gz: images are 27×28, want sides divisible by 4"},
		{"test size", [3]int{6, 28, 28}, [3]int{2, 8, 8}, "t10k-images-idx3-ubyte.gz: images are 8×8, the training images ("},
		{"few images", [3]int{2, 8, 8}, [3]int{2, 8, 8}, "train-images-idx3-ubyte.gz: 2 images, want at least 5"},
	} {
		dir := t.TempDir()
		writeIDX(t, dir, "train", c.train[0], c.train[1], c.train[2])
		writeIDX(t, dir, "t10k", c.test[0], c.test[1], c.test[2])
		_, err := MNIST(dir, 4)
		if err == nil || !strings.HasPrefix(err.Error(), filepath.Join(dir, c.want)) {
			t.Errorf("%s: error %v, want %q", c.name, err, c.want)
		}
	}
	dir := t.TempDir()
	writeIDX(t, dir, "train", 6, 8, 12)
	writeIDX(t, dir, "t10k", 3, 8, 12)
	e, err := MNIST(dir, 4)
	if err != nil {
		t.Fatal(err)
	}
	if e.Dim() != 6 || e.Image.Height != 2 || e.Image.Width != 3 || !strings.Contains(e.Description, "to 2×3") {
		t.Errorf("dimension %d, image %+v, %q", e.Dim(), e.Image, e.Description)
	}
}
