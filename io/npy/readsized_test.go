package npy

import (
	"bytes"
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
