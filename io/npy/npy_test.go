package npy

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// want is the array gen.py stores: arange(24).reshape(2,3,4)/8 − 1.
func want() []float64 {
	w := make([]float64, 24)
	for i := range w {
		w[i] = float64(i)/8 - 1
	}
	return w
}

func TestReadNumPyFiles(t *testing.T) {
	ref := want()
	scaled := func(f func(float64) float64) []float64 {
		out := make([]float64, len(ref))
		for i, v := range ref {
			out[i] = f(v)
		}
		return out
	}
	cases := []struct {
		file  string
		shape []int
		data  []float64
	}{
		{"c_f8_2x3x4.npy", []int{2, 3, 4}, ref},
		{"c_f4_2x3x4.npy", []int{2, 3, 4}, ref}, // multiples of 1/8 are exact in float32
		{"fortran_f8_2x3x4.npy", []int{2, 3, 4}, ref},
		{"fortran_f4_2x3x4.npy", []int{2, 3, 4}, ref},
		{"big_f8_2x3x4.npy", []int{2, 3, 4}, ref},
		{"v2_f8_2x3x4.npy", []int{2, 3, 4}, ref},
		{"keyorder_f8_2x3x4.npy", []int{2, 3, 4}, ref},
		{"i8_2x3x4.npy", []int{2, 3, 4}, scaled(func(v float64) float64 { return 8 * v })},
		{"u1_2x3x4.npy", []int{2, 3, 4}, scaled(func(v float64) float64 { return 8*v + 8 })},
		{"bool_2x3x4.npy", []int{2, 3, 4}, scaled(func(v float64) float64 {
			if v > 0 {
				return 1
			}
			return 0
		})},
		{"scalar_f8.npy", []int{}, []float64{2.5}},
		{"empty_f8_0x3.npy", []int{0, 3}, []float64{}},
	}
	for _, c := range cases {
		a, err := ReadFile(filepath.Join("testdata", c.file))
		if err != nil {
			t.Errorf("%s: %v", c.file, err)
			continue
		}
		if !reflect.DeepEqual(a.Shape, c.shape) {
			t.Errorf("%s: shape %v, want %v", c.file, a.Shape, c.shape)
		}
		if !reflect.DeepEqual(a.Data, c.data) {
			t.Errorf("%s: data %v, want %v", c.file, a.Data, c.data)
		}
	}
}

func TestRejectsWithClearErrors(t *testing.T) {
	cases := map[string]string{
		"f2_3.npy":       "float16 is not supported",
		"structured.npy": "structured dtype",
		"complex_3.npy":  `'descr' is "<c16"`,
		"truncated.npy":  "file truncated",
	}
	for file, msg := range cases {
		_, err := ReadFile(filepath.Join("testdata", file))
		if err == nil {
			t.Errorf("%s: read without error", file)
			continue
		}
		var fe *FormatError
		if !errors.As(err, &fe) {
			t.Errorf("%s: error %v is not a *FormatError", file, err)
		}
		if !strings.Contains(err.Error(), msg) || !strings.Contains(err.Error(), file) {
			t.Errorf("%s: error %q does not name the file and %q", file, err, msg)
		}
	}
	if _, err := Read(strings.NewReader("PK\x03\x04 not an npy")); err == nil || !strings.Contains(err.Error(), "not a .npy file") {
		t.Errorf("zip bytes: error %v", err)
	}
}

func TestWriteRoundTrip(t *testing.T) {
	shapes := [][]int{{}, {5}, {2, 3}, {2, 3, 4}, {1, 2, 1, 3}, {0, 4}}
	for _, sh := range shapes {
		for _, d := range []Dtype{Float64, Float32} {
			a := &Array{Shape: sh}
			a.Data = make([]float64, a.Len())
			for i := range a.Data {
				a.Data[i] = float64(i)*0.25 - 3
			}
			var buf bytes.Buffer
			if err := Write(&buf, a, d); err != nil {
				t.Fatal(err)
			}
			if buf.Len() < 64 || (buf.Len()-a.Len()*map[Dtype]int{Float64: 8, Float32: 4}[d])%64 != 0 {
				t.Errorf("shape %v %v: header not padded to 64 bytes (%d bytes in all)", sh, d, buf.Len())
			}
			b, err := Read(&buf)
			if err != nil {
				t.Fatalf("shape %v %v: %v", sh, d, err)
			}
			if !reflect.DeepEqual(b.Shape, sh) && !(len(sh) == 0 && len(b.Shape) == 0) {
				t.Errorf("shape %v read back as %v", sh, b.Shape)
			}
			if !reflect.DeepEqual(b.Data, a.Data) || b.Dtype != d.String() {
				t.Errorf("shape %v %v: read back %v (%s)", sh, d, b.Data, b.Dtype)
			}
		}
	}
	if err := Write(&bytes.Buffer{}, &Array{Shape: []int{2, 2}, Data: make([]float64, 3)}, Float64); err == nil {
		t.Error("mismatched shape and data accepted")
	}
}

// TestNumPyReadsWhatWeWrite asks NumPy itself to load a file written here.
// It is skipped where /usr/bin/python3 has no NumPy.
func TestNumPyReadsWhatWeWrite(t *testing.T) {
	if exec.Command("/usr/bin/python3", "-c", "import numpy").Run() != nil {
		cross.Skip(t, "NumPy reads our .npy", "no NumPy under /usr/bin/python3 (apt-get install python3-numpy)")
	}
	dir := t.TempDir()
	for _, d := range []Dtype{Float32, Float64} {
		path := filepath.Join(dir, d.String()[1:]+".npy")
		a := &Array{Shape: []int{2, 3, 4}, Data: want()}
		if err := WriteFile(path, a, d); err != nil {
			t.Fatal(err)
		}
		script := `import sys, numpy as np
a = np.load(sys.argv[1])
ref = np.arange(24).reshape(2, 3, 4) / 8.0 - 1.0
assert a.dtype == np.dtype(sys.argv[2]), a.dtype
assert a.shape == (2, 3, 4), a.shape
assert (a == ref).all()
`
		out, err := exec.Command("/usr/bin/python3", "-c", script, path, d.String()).CombinedOutput()
		if err != nil {
			t.Errorf("NumPy rejects our %s file: %v\n%s", d, err, out)
		}
	}
}

func TestWriteFileLeavesNoPartialFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "x.npy")
	err := WriteFile(path, &Array{Shape: []int{3}, Data: make([]float64, 2)}, Float64)
	if err == nil {
		t.Fatal("bad array written")
	}
	if _, statErr := os.Stat(path); !os.IsNotExist(statErr) {
		t.Errorf("a failed write left %s behind", path)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 0 {
		t.Errorf("temporary files left: %v", entries)
	}
}

// FuzzRead checks that no byte sequence makes Read panic, that whatever
// it accepts is self-consistent, and that it survives a write/read round trip.
// The seed corpus is the golden files plus testdata/fuzz/FuzzRead.
func FuzzRead(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "*.npy"))
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		a, err := Read(bytes.NewReader(b))
		if err != nil {
			if a != nil {
				t.Fatal("array returned with an error")
			}
			return
		}
		if len(a.Data) != a.Len() {
			t.Fatalf("shape %v but %d elements", a.Shape, len(a.Data))
		}
		var buf bytes.Buffer
		if err := Write(&buf, a, Float64); err != nil {
			t.Fatal(err)
		}
		c, err := Read(&buf)
		if err != nil {
			t.Fatal(err)
		}
		if len(c.Data) != len(a.Data) || len(c.Shape) != len(a.Shape) {
			t.Fatalf("round trip changed the array: %v → %v", a.Shape, c.Shape)
		}
		for i := range a.Data {
			if a.Data[i] != c.Data[i] && !(a.Data[i] != a.Data[i] && c.Data[i] != c.Data[i]) {
				t.Fatalf("element %d: %v → %v", i, a.Data[i], c.Data[i])
			}
		}
	})
}

// What NumPy refuses is refused: a list as the shape, keys besides the
// three, and (reading a file) bytes after the data the shape announces.
func TestRefusesWhatNumPyRefuses(t *testing.T) {
	header := func(dict string) []byte {
		h := dict + strings.Repeat(" ", 118-len(dict)) + "\n"
		return append([]byte("\x93NUMPY\x01\x00"), append([]byte{byte(len(h)), 0}, h...)...)
	}
	for _, c := range []struct{ dict, want string }{
		{"{'descr': '<f8', 'fortran_order': False, 'shape': [2], }", "header field 'shape'"},
		{"{'descr': '<f8', 'fortran_order': False, 'shape': (2,), 'extra': 1, }", `keys "extra"`},
	} {
		b := append(header(c.dict), make([]byte, 16)...)
		if _, err := Read(bytes.NewReader(b)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.dict, err, c.want)
		}
	}
	path := filepath.Join(t.TempDir(), "long.npy")
	os.WriteFile(path, append(header("{'descr': '<f8', 'fortran_order': False, 'shape': (2,), }"), make([]byte, 32)...), 0o644)
	if _, err := ReadFile(path); err == nil || !strings.Contains(err.Error(), "more bytes after the header's shape [2]") {
		t.Errorf("trailing data: %v", err)
	}
}
