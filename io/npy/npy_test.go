package npy

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"testing/iotest"
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
	// NumPy refuses a minor version other than 0 ("we only support format
	// version (1,0), (2,0), and (3,0)").
	b := append(header("{'descr': '<f8', 'fortran_order': False, 'shape': (2,), }"), make([]byte, 16)...)
	b[7] = 1
	if _, err := Read(bytes.NewReader(b)); err == nil || !strings.Contains(err.Error(), "1.1") {
		t.Errorf("version 1.1: %v", err)
	}
	path := filepath.Join(t.TempDir(), "long.npy")
	os.WriteFile(path, append(header("{'descr': '<f8', 'fortran_order': False, 'shape': (2,), }"), make([]byte, 32)...), 0o644)
	if _, err := ReadFile(path); err == nil || !strings.Contains(err.Error(), "longer than the header's shape [2] holds") {
		t.Errorf("trailing data: %v", err)
	}
}

// v2 builds a version 2.0 .npy header around dict, followed by data.
func v2(dict string, data []byte) []byte {
	b := []byte(Magic + "\x02\x00")
	b = binary.LittleEndian.AppendUint32(b, uint32(len(dict)+1))
	b = append(b, dict...)
	b = append(b, '\n')
	return append(b, data...)
}

// Hostile headers give a short, clear error: deep nesting (before, it
// overflowed the stack), a rank over NumPy's 64, and many extra keys (a
// 6.5 MB message for 600,000 keys before) or a long key or dtype.
func TestRefusesHostileHeaders(t *testing.T) {
	keys := make([]string, 1000)
	for i := range keys {
		keys[i] = fmt.Sprintf("'k%d': 0", i)
	}
	const ok = "'descr': '<f8', 'fortran_order': False"
	for _, c := range []struct{ name, dict, want string }{
		{"deep shape", "{" + ok + ", 'shape': " + strings.Repeat("(", 8000000) + "}", "npy: header nested too deep at byte 81: want at most 32 levels"},
		{"deep list", "{" + ok + ", 'shape': (1,), 'x': " + strings.Repeat("[{'a': ", 20) + "}", "header nested too deep"},
		{"rank 65", "{" + ok + ", 'shape': (" + strings.Repeat("1, ", 65) + "), }", "'shape' is a sequence of 65 items, want at most 64 dimensions"},
		{"rank 1e6", "{" + ok + ", 'shape': (" + strings.Repeat("1,", 1000000) + "), }", "'shape' is a sequence of 1000000 items, want at most 64 dimensions"},
		{"1000 keys", "{" + ok + ", 'shape': (1,), " + strings.Join(keys, ", ") + "}", `keys "k0", "k1", "k10", "k100", "k101", "k102", "k103", "k104", … (1000 in all), want exactly`},
		{"long key", "{" + ok + ", 'shape': (1,), " + "'" + strings.Repeat("k", 1<<20) + "': 0, '" + strings.Repeat("k", 1<<20) + "': 0}", `key "kkkkkkkkkkkkkkkkkkkk…": want given once`},
		{"long descr", "{'descr': '<f" + strings.Repeat("8", 1<<20) + "', 'fortran_order': False, 'shape': (1,)}", `'descr' is "<f888888888888888888…", want`},
	} {
		_, err := Read(bytes.NewReader(v2(c.dict, make([]byte, 8))))
		if err == nil || !strings.Contains(err.Error(), c.want) || len(err.Error()) > 300 {
			t.Errorf("%s: %.400v, want %q in at most 300 bytes", c.name, err, c.want)
		}
	}
	// 64 dimensions is NumPy's limit, and allowed.
	a, err := Read(bytes.NewReader(v2("{"+ok+", 'shape': ("+strings.Repeat("1, ", 64)+"), }", make([]byte, 8))))
	if err != nil || len(a.Shape) != 64 {
		t.Errorf("rank 64: %v", err)
	}
}

// Unsupported dtypes are named with the supported ones; a size with a sign
// or other non-digits is not a size.
func TestHeaderCheck(t *testing.T) {
	for _, s := range []string{"<c16", "<U1", "|O", "<f+8", "<i 4"} {
		err := Header{Dtype: s, Shape: []int{2}}.Check()
		if err == nil || !strings.Contains(err.Error(), "want float32 or float64") && !strings.Contains(err.Error(), "type string") && !strings.Contains(err.Error(), "not an object array") {
			t.Errorf("%s: %v", s, err)
		}
	}
	for _, s := range []string{"<f4", ">f8", "|u1", "<i8", "|b1"} {
		if err := (Header{Dtype: s}).Check(); err != nil {
			t.Errorf("%s: %v", s, err)
		}
	}
}

// ReadAll refuses bytes after the data, as ReadFile does ("flowebm
// diagnose" read with Read and accepted them).
func TestReadAllRefusesTrailingBytes(t *testing.T) {
	var buf bytes.Buffer
	if err := Write(&buf, &Array{Shape: []int{2}, Data: []float64{1, 2}}, Float64); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadAll(bytes.NewReader(buf.Bytes())); err != nil {
		t.Errorf("exact file: %v", err)
	}
	b := append(buf.Bytes(), 0)
	if _, err := ReadAll(bytes.NewReader(b)); err == nil || !strings.Contains(err.Error(), "longer than the header's shape [2] holds, want the file to end there") {
		t.Errorf("trailing byte: %v", err)
	}
	if _, err := ReadAll(iotest.DataErrReader(bytes.NewReader(buf.Bytes()))); err != nil {
		t.Errorf("EOF with the last data: %v", err)
	}
}
