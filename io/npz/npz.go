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
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"github.com/flowebm/flowebm/internal/sysmem"
	"github.com/flowebm/flowebm/io/npy"
	"github.com/flowebm/flowebm/io/safefile"
)

// maxMember bounds the uncompressed size of one member (4 GiB, decoded to
// at most 32 GiB of float64 for a uint8 array), so that a corrupt archive
// cannot ask for unbounded memory before failing.
const maxMember = 4 << 30

// maxDecoded bounds one member's values once decoded to float64 (8 GiB,
// or half the machine's memory if less).
const maxDecoded = 8 << 30

// elemSize is the byte size of a NumPy type string's elements ("<f4": 4).
func elemSize(dtype string) uint64 {
	h := npy.Header{Dtype: dtype, Shape: []int{1}}
	n, _ := h.DataBytes()
	return n
}

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
		arr, err := ReadMember(f)
		if err != nil {
			return nil, fmt.Errorf("npz: member %q: %w", f.Name, err)
		}
		a.Names = append(a.Names, name)
		a.Arrays[name] = arr
	}
	return a, nil
}

// MemberHeader reads the .npy header of an archive member without
// decoding its data (callers check shape and dtype before ReadMember).
func MemberHeader(f *zip.File) (npy.Header, error) {
	rc, err := f.Open()
	if err != nil {
		return npy.Header{}, err
	}
	defer rc.Close()
	return npy.ReadHeader(rc)
}

// ReadMember decodes one member of an archive. Its .npy header is read
// first: the data it announces must fit in the member's declared
// uncompressed size, and that size must be at most maxMember, before
// anything is decoded; the decompressed stream may not run past the
// declared size; and the member is read to its end so that archive/zip
// checks its CRC-32.
func ReadMember(f *zip.File) (*npy.Array, error) {
	declared := f.UncompressedSize64
	if declared > maxMember {
		return nil, fmt.Errorf("declared uncompressed size %d bytes, more than the %d supported", declared, uint64(maxMember))
	}
	h, err := MemberHeader(f)
	if err != nil {
		return nil, err
	}
	need, ok := h.DataBytes()
	if !ok || need > declared {
		return nil, fmt.Errorf("header announces shape %v of %s, more data than the member's declared %d bytes", h.Shape, h.Dtype, declared)
	}
	if elems, limit := need/max(1, elemSize(h.Dtype)), sysmem.Limit(maxDecoded); float64(elems*8) > limit {
		return nil, fmt.Errorf("shape %v decodes to %d bytes of float64, more than the %.0f supported (8 GiB, or half the machine's memory if less)", h.Shape, elems*8, limit)
	}
	rc, err := f.Open()
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	lr := &io.LimitedReader{R: rc, N: int64(declared) + 1}
	arr, err := npy.Read(lr)
	if err != nil {
		return nil, err
	}
	// Nothing may follow the data; reading to the end lets archive/zip
	// check the size and the CRC-32.
	n, err := io.Copy(io.Discard, lr)
	switch {
	case errors.Is(err, zip.ErrChecksum):
		return nil, fmt.Errorf("CRC-32 does not match, a checksum error (the file is corrupt; NumPy refuses it too): %w", err)
	case err != nil:
		return nil, err
	case lr.N == 0:
		return nil, fmt.Errorf("decompresses to more than its declared %d bytes", declared)
	case n > 0:
		return nil, fmt.Errorf("data after the %d values of shape %v, want nothing", len(arr.Data), h.Shape)
	}
	return arr, nil
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
