package npy

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// ReadFile allocates the values once, without a copy of the raw bytes: a
// (10⁸, 2) float64 file took 3.2 GB to read, twice its values.
func TestReadFileAllocatesValuesOnce(t *testing.T) {
	const n = 1 << 20 // 8 MiB of float64
	a := &Array{Shape: []int{n / 2, 2}, Data: make([]float64, n)}
	for i := range a.Data {
		a.Data[i] = float64(i)
	}
	path := filepath.Join(t.TempDir(), "a.npy")
	if err := WriteFile(path, a, Float64); err != nil {
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	got, err := ReadFile(path)
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > n*8*5/4 {
		t.Errorf("ReadFile allocated %d bytes for %d bytes of values", alloc, n*8)
	}
	for i, v := range got.Data {
		if v != float64(i) {
			t.Fatalf("value %d is %v", i, v)
		}
	}
}

// A stream shorter than its stated size is refused as truncated, saying
// how many bytes it held.
func TestReadSizedTruncated(t *testing.T) {
	var b bytes.Buffer
	if err := Write(&b, &Array{Shape: []int{4}, Data: []float64{1, 2, 3, 4}}, Float64); err != nil {
		t.Fatal(err)
	}
	short := b.Bytes()[:b.Len()-12]
	for _, size := range []int64{-1, int64(b.Len()), int64(len(short))} {
		_, err := ReadSized(bytes.NewReader(short), size)
		if err == nil || !strings.Contains(err.Error(), "data is 20 bytes, want 32 bytes for shape [4] of <f8 (file truncated)") {
			t.Errorf("size %d: %v", size, err)
		}
	}
	path := filepath.Join(t.TempDir(), "short.npy")
	os.WriteFile(path, short, 0o644)
	if _, err := ReadFile(path); err == nil || !strings.Contains(err.Error(), "file truncated") {
		t.Errorf("ReadFile: %v", err)
	}
}

// ReadSizedInto decodes into the caller's buffer: C and Fortran order, a
// float32 stream, an empty array; an array of another number of values is
// refused before anything is read into the buffer.
func TestReadSizedInto(t *testing.T) {
	c := []byte("\x93NUMPY\x01\x00v\x00{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }")
	f := []byte("\x93NUMPY\x01\x00v\x00{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }")
	for name, h := range map[string][]byte{"C": c, "Fortran": f} {
		var b bytes.Buffer
		b.Write(h)
		b.Write(bytes.Repeat([]byte(" "), 127-len(h)))
		b.WriteByte('\n')
		for _, v := range []uint32{0x3f800000, 0x40000000, 0x40400000, 0x40800000, 0x40a00000, 0x40c00000} { // 1..6
			b.Write([]byte{byte(v), byte(v >> 8), byte(v >> 16), byte(v >> 24)})
		}
		want := []float64{1, 2, 3, 4, 5, 6}
		if name == "Fortran" {
			want = []float64{1, 3, 5, 2, 4, 6}
		}
		dst := make([]float64, 6)
		a, err := ReadSizedInto(bytes.NewReader(b.Bytes()), int64(b.Len()), dst)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if &a.Data[0] != &dst[0] || fmt.Sprint(dst) != fmt.Sprint(want) {
			t.Errorf("%s: %v into %v, want %v in the buffer", name, a.Data, dst, want)
		}
		seven := make([]float64, 7)
		if _, err := ReadSizedInto(bytes.NewReader(b.Bytes()), int64(b.Len()), seven); err == nil || !strings.Contains(err.Error(), "(6 values)") || seven[0] != 0 {
			t.Errorf("%s into 7 values: %v, buffer %v", name, err, seven)
		}
	}
	var b bytes.Buffer
	if err := Write(&b, &Array{Shape: []int{0, 2}}, Float64); err != nil {
		t.Fatal(err)
	}
	if a, err := ReadSizedInto(bytes.NewReader(b.Bytes()), int64(b.Len()), nil); err != nil || len(a.Data) != 0 || a.Data == nil {
		t.Errorf("empty: %+v, %v", a, err)
	}
}
