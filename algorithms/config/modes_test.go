package config

import (
	"archive/zip"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flowebm/flowebm/io/npy"
)

// npyHeader is a .npy file's header (version 1.0) declaring a float64
// array of the shape, with no data after it.
func npyHeader(shape string) []byte {
	dict := fmt.Sprintf("{'descr': '<f8', 'fortran_order': False, 'shape': %s, }", shape)
	dict += strings.Repeat(" ", 63-(10+len(dict))%64) + "\n"
	return append([]byte{0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, byte(len(dict)), byte(len(dict) >> 8)}, dict...)
}

// writeNPZBomb writes an .npz whose member declares the shape in its
// header alone: what a small compressed file of zeros declares.
func writeNPZBomb(t *testing.T, path, shape string) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zw := zip.NewWriter(f)
	w, err := zw.Create("modes.npy")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(npyHeader(shape)); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
}

// writeNPY writes an n × 2 .npy file of distinct points.
func writeNPY(t *testing.T, path string, n int) {
	t.Helper()
	x := make([]float64, 2*n)
	for i := range x {
		x[i] = float64(i)
	}
	if err := npy.WriteFile(path, &npy.Array{Shape: []int{n, 2}, Data: x}, npy.Float64); err != nil {
		t.Fatal(err)
	}
}

// data.modes is refused from its header, naming the file, its shape and
// the limit, before it is read: a small .npz declaring 1e8 centres (its
// reader would decode 1.6 GB of float64), more than MaxModes centres, and
// centres whose copies exceed the memory limit; a few centres are read.
func TestModesAreBounded(t *testing.T) {
	defer func(f func() float64) { memoryLimit = f }(memoryLimit)
	memoryLimit = func() float64 { return 1 << 20 }
	dir := t.TempDir()
	file := filepath.Join(dir, "x.npy")
	writeNPY(t, file, 100)
	bomb, many, big, few := filepath.Join(dir, "bomb.npz"), filepath.Join(dir, "many.npy"), filepath.Join(dir, "big.npy"), filepath.Join(dir, "few.npy")
	writeNPZBomb(t, bomb, "(100000000, 2)")
	if err := os.WriteFile(many, npyHeader("(1000001, 1)"), 0o644); err != nil {
		t.Fatal(err)
	}
	writeNPY(t, big, 20_000) // 313 KiB of float64: 1.53 MiB with its copies
	writeNPY(t, few, 2)
	for _, c := range []struct{ modes, want string }{
		{bomb, "data.modes of shape [100000000 2] (100000000 centres, about 7.45 GiB of memory): want at most 1000000 centres and 1 MiB"},
		{many, "data.modes of shape [1000001 1] (1000001 centres, about 38.1 MiB of memory): want at most 1000000 centres and 1 MiB"},
		{big, "data.modes of shape [20000 2] (20000 centres, about 1.53 MiB of memory): want at most 1000000 centres and 1 MiB"},
	} {
		_, _, err := Data{File: file, Modes: c.modes}.Load(rand.New(rand.NewPCG(1, 1)))
		if err == nil || !strings.Contains(err.Error(), c.modes+": "+c.want) {
			t.Errorf("%s: %v, want %q", filepath.Base(c.modes), err, c.want)
		}
	}
	if _, _, err := (Data{File: file, Modes: few}).Load(rand.New(rand.NewPCG(1, 1))); err != nil {
		t.Errorf("two modes: %v", err)
	}
}
