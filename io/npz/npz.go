// Package npz reads and writes NumPy .npz archives: zip files of .npy
// members, as written by numpy.savez and read by numpy.load.
//
// Member names are given without the ".npy" suffix, as NumPy shows them
// (numpy.load("w.npz")["net.0.weight"]); the suffix is added on writing and
// removed on reading. Arrays are exchanged as npy.Array (float64, C order).
package npz

import (
	"archive/zip"
	"bytes"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"github.com/flowebm/flowebm/io/npy"
	"github.com/flowebm/flowebm/io/safefile"
)

// maxMember bounds the uncompressed size of one member (8 GiB), so that a
// corrupt archive cannot ask for unbounded memory before failing.
const maxMember = 8 << 30

// Archive is the content of an .npz file: arrays by name, in file order.
type Archive struct {
	Names  []string
	Arrays map[string]*npy.Array
}

// Get returns the array with the given name, or an error naming the
// missing member and listing those present.
func (a *Archive) Get(name string) (*npy.Array, error) {
	if v, ok := a.Arrays[name]; ok {
		return v, nil
	}
	return nil, fmt.Errorf("npz: no member %q (have %s)", name, strings.Join(a.Names, ", "))
}

// Read reads an .npz archive of size bytes from r.
func Read(r io.ReaderAt, size int64) (*Archive, error) {
	z, err := zip.NewReader(r, size)
	if err != nil {
		return nil, fmt.Errorf("npz: not a zip archive: %w", err)
	}
	a := &Archive{Arrays: map[string]*npy.Array{}}
	for _, f := range z.File {
		name := strings.TrimSuffix(f.Name, ".npy")
		if _, dup := a.Arrays[name]; dup {
			return nil, fmt.Errorf("npz: member %q appears twice", name)
		}
		if f.UncompressedSize64 > maxMember {
			return nil, fmt.Errorf("npz: member %q is %d bytes, more than the %d supported", f.Name, f.UncompressedSize64, maxMember)
		}
		rc, err := f.Open()
		if err != nil {
			return nil, fmt.Errorf("npz: member %q: %w", f.Name, err)
		}
		arr, err := npy.Read(io.LimitReader(rc, maxMember))
		rc.Close()
		if err != nil {
			return nil, fmt.Errorf("npz: member %q: %w", f.Name, err)
		}
		a.Names = append(a.Names, name)
		a.Arrays[name] = arr
	}
	return a, nil
}

// ReadFile reads the .npz file at path; errors name the file.
func ReadFile(path string) (*Archive, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	a, err := Read(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return a, nil
}

// Write writes arrays as an uncompressed .npz archive (numpy.savez), members
// sorted by name, each stored with dtype d.
func Write(w io.Writer, arrays map[string]*npy.Array, d npy.Dtype) error {
	names := make([]string, 0, len(arrays))
	for n := range arrays {
		names = append(names, n)
	}
	sort.Strings(names)
	z := zip.NewWriter(w)
	for _, n := range names {
		if n == "" {
			return fmt.Errorf("npz: empty member name")
		}
		f, err := z.CreateHeader(&zip.FileHeader{Name: n + ".npy", Method: zip.Store})
		if err != nil {
			return err
		}
		if err := npy.Write(f, arrays[n], d); err != nil {
			return fmt.Errorf("npz: member %q: %w", n, err)
		}
	}
	return z.Close()
}

// WriteFile writes arrays to path atomically (temporary file, then rename).
func WriteFile(path string, arrays map[string]*npy.Array, d npy.Dtype) error {
	return safefile.Write(path, func(w io.Writer) error { return Write(w, arrays, d) })
}
