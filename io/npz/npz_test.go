package npz

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/flowebm/flowebm/io/npy"
)

func sample() map[string]*npy.Array {
	return map[string]*npy.Array{
		"net.0.weight": {Shape: []int{3, 2}, Data: []float64{1, 2, 3, 4, 5, 6}},
		"net.0.bias":   {Shape: []int{3}, Data: []float64{-0.5, 0, 0.5}},
		"step":         {Shape: []int{}, Data: []float64{7}},
	}
}

func TestRoundTrip(t *testing.T) {
	for _, d := range []npy.Dtype{npy.Float64, npy.Float32} {
		var buf bytes.Buffer
		if err := Write(&buf, sample(), d); err != nil {
			t.Fatal(err)
		}
		a, err := Read(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(a.Names, []string{"net.0.bias", "net.0.weight", "step"}) {
			t.Errorf("names %v", a.Names)
		}
		for n, want := range sample() {
			got, err := a.Get(n)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got.Data, want.Data) || len(got.Shape) != len(want.Shape) || got.Dtype != d.String() {
				t.Errorf("%s %v: %+v, want %+v", d, n, got, want)
			}
		}
		if _, err := a.Get("missing"); err == nil || !strings.Contains(err.Error(), "net.0.bias") {
			t.Errorf("missing member: %v", err)
		}
	}
}

// TestNumPyInterop checks numpy.load reads our archives and that we read
// numpy.savez_compressed's. Skipped without NumPy under /usr/bin/python3.
func TestNumPyInterop(t *testing.T) {
	if exec.Command("/usr/bin/python3", "-c", "import numpy").Run() != nil {
		t.Skip("no NumPy under /usr/bin/python3")
	}
	dir := t.TempDir()
	ours := filepath.Join(dir, "ours.npz")
	if err := WriteFile(ours, sample(), npy.Float32); err != nil {
		t.Fatal(err)
	}
	theirs := filepath.Join(dir, "theirs.npz")
	script := `import sys, numpy as np
z = np.load(sys.argv[1])
assert sorted(z.files) == ["net.0.bias", "net.0.weight", "step"], z.files
assert z["net.0.weight"].dtype == np.float32 and z["net.0.weight"].shape == (3, 2)
assert (z["net.0.weight"] == np.arange(1, 7).reshape(3, 2)).all()
assert z["step"].shape == () and z["step"] == 7
np.savez_compressed(sys.argv[2], W=np.asfortranarray(np.arange(6.0).reshape(2, 3)), n=np.int32(3))
`
	if out, err := exec.Command("/usr/bin/python3", "-c", script, ours, theirs).CombinedOutput(); err != nil {
		t.Fatalf("NumPy: %v\n%s", err, out)
	}
	a, err := ReadFile(theirs)
	if err != nil {
		t.Fatal(err)
	}
	w, _ := a.Get("W")
	if !reflect.DeepEqual(w.Data, []float64{0, 1, 2, 3, 4, 5}) || !reflect.DeepEqual(w.Shape, []int{2, 3}) {
		t.Errorf("W = %+v", w)
	}
}

func TestReadErrorsNameTheFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bad.npz")
	os.WriteFile(path, []byte("not a zip"), 0o644)
	if _, err := ReadFile(path); err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "not a zip") {
		t.Errorf("error %v", err)
	}
}

// FuzzRead: no archive bytes make Read panic.
func FuzzRead(f *testing.F) {
	var buf bytes.Buffer
	Write(&buf, sample(), npy.Float64)
	f.Add(buf.Bytes())
	f.Add([]byte("PK\x05\x06" + strings.Repeat("\x00", 18)))
	f.Fuzz(func(t *testing.T, b []byte) {
		a, err := Read(bytes.NewReader(b), int64(len(b)))
		if err == nil && len(a.Names) != len(a.Arrays) {
			t.Fatal("names and arrays disagree")
		}
	})
}
