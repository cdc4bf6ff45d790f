// Package npz reads and writes NumPy .npz archives: zip files of .npy
// members, as written by numpy.savez and read by numpy.load.
//
// Member names are given without the ".npy" suffix, as NumPy shows them
// (numpy.load("w.npz")["net.0.weight"]); the suffix is added on writing and
// removed on reading. Arrays are exchanged as npy.Array (float64, C order).
//
// ReadFile decodes every member; OpenReader decodes only those asked for,
// as numpy.load does, so that one array can be read from an archive whose
// other members are large or broken.
package npz

import (
	"archive/zip"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"sort"
	"strconv"
	"strings"

	"github.com/flowebm/flowebm/internal/sysmem"
	"github.com/flowebm/flowebm/internal/textclip"
	"github.com/flowebm/flowebm/io/npy"
	"github.com/flowebm/flowebm/io/safefile"
)

// maxMember bounds the uncompressed size of one member (4 GiB, decoded to
// at most 32 GiB of float64 for a uint8 array), so that a corrupt archive
// cannot ask for unbounded memory before failing.
const maxMember = 4 << 30

// maxDecoded bounds one member's values once decoded to float64 (8 GiB,
// or half the machine's memory or of ulimit -v if less).
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
	return nil, &MissingMemberError{Name: name, Have: a.Names}
}

// MissingMemberError is the refusal of a member name that an archive does
// not hold.
type MissingMemberError struct {
	Name string   // the name asked for
	Have []string // the archive's members, in file order
}

func (e *MissingMemberError) Error() string {
	return fmt.Sprintf("npz: no member %q (have %s)", e.Name, quoteList(e.Have))
}

// Members lists the archive's members as errors do (quoted, at most 8).
func (e *MissingMemberError) Members() string { return quoteList(e.Have) }

// Read reads an .npz archive of size bytes from r, decoding every member.
func Read(r io.ReaderAt, size int64) (*Archive, error) {
	zr, err := NewReader(r, size)
	if err != nil {
		return nil, err
	}
	return zr.readAll()
}

// readAll decodes every member of r in file order.
func (r *Reader) readAll() (*Archive, error) {
	a := &Archive{Names: r.Names, Arrays: make(map[string]*npy.Array, len(r.Names))}
	for _, name := range r.Names {
		v, err := r.Get(name)
		if err != nil {
			return nil, err
		}
		a.Arrays[name] = v
	}
	return a, nil
}

// Reader gives the members of an .npz archive by name and decodes only
// those asked for: a member that is not, however large it claims to be,
// costs nothing but its directory entry.
type Reader struct {
	// Names are the member names without ".npy", in file order.
	Names []string

	files map[string]*zip.File
	path  string    // named in errors; empty for NewReader
	c     io.Closer // the file OpenReader opened
}

// NewReader reads the directory of an .npz archive of size bytes from r;
// no member is decoded. Errors do not name the archive.
func NewReader(r io.ReaderAt, size int64) (*Reader, error) {
	z, err := zip.NewReader(r, size)
	if err != nil {
		if errors.Is(err, zip.ErrFormat) { // round 80 B2: "zip: not a valid zip file" alone
			return nil, fmt.Errorf("npz: not a zip archive (%w): an .npz is a zip file that ends with a directory of its members, which this file of %d bytes lacks or has damaged: it is cut short, damaged, or not an .npz", err, size)
		}
		return nil, fmt.Errorf("npz: not a zip archive: %w", err)
	}
	zr := &Reader{files: make(map[string]*zip.File, len(z.File))}
	for _, f := range z.File {
		if err := checkEntry(r, f); err != nil {
			return nil, err
		}
		name := strings.TrimSuffix(f.Name, ".npy")
		if _, dup := zr.files[name]; dup {
			return nil, fmt.Errorf("npz: member %q appears twice", name)
		}
		zr.Names = append(zr.Names, name)
		zr.files[name] = f
	}
	return zr, nil
}

// checkEntry refuses what Python's zipfile (and so NumPy) refuses in a
// member's headers: an encrypted member, and a local header whose name
// differs from the central directory's (a file assembled from two). The
// local header is found just before the member's data; one beyond the
// 4 KiB searched (extra fields of that size) is not compared.
func checkEntry(r io.ReaderAt, f *zip.File) error {
	if f.Flags&0x41 != 0 {
		return fmt.Errorf("npz: member %q is encrypted (general purpose flag bit 0 or 6): NumPy cannot read it either", f.Name)
	}
	end, err := f.DataOffset()
	if err != nil {
		return fmt.Errorf("npz: member %q: %w", f.Name, err)
	}
	start := max(0, end-4096)
	buf := make([]byte, end-start)
	if _, err := r.ReadAt(buf, start); err != nil {
		return fmt.Errorf("npz: member %q: local header: %w", f.Name, err)
	}
	for i := len(buf) - 30; i >= 0; i-- {
		if string(buf[i:i+4]) != "PK\x03\x04" {
			continue
		}
		n, m := int(binary.LittleEndian.Uint16(buf[i+26:])), int(binary.LittleEndian.Uint16(buf[i+28:]))
		if i+30+n+m != len(buf) {
			continue
		}
		if local := string(buf[i+30 : i+30+n]); local != f.Name {
			return fmt.Errorf("npz: member %q: its local header names it %q: the archive is damaged or assembled from two (Python's zipfile refuses it too)", f.Name, local)
		}
		return nil
	}
	return nil
}

// OpenReader opens the .npz file at path and reads its directory; no
// member is decoded. Errors, and those of the Reader's methods, name the
// file. The Reader must be closed.
func OpenReader(path string) (*Reader, error) {
	f, err := safefile.Open(path)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	zr, err := NewReader(f, fi.Size())
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	zr.path, zr.c = path, f
	return zr, nil
}

// Close closes the file OpenReader opened; it does nothing for a Reader
// from NewReader.
func (r *Reader) Close() error {
	if r.c == nil {
		return nil
	}
	return r.c.Close()
}

// member returns the zip entry of the named member, or an error naming the
// missing member and listing those present.
func (r *Reader) member(name string) (*zip.File, error) {
	if f, ok := r.files[name]; ok {
		return f, nil
	}
	return nil, r.wrap(&MissingMemberError{Name: name, Have: r.Names})
}

// Header reads the .npy header of the named member without decoding its
// data, so that callers can check its shape and dtype first.
func (r *Reader) Header(name string) (npy.Header, error) {
	f, err := r.member(name)
	if err != nil {
		return npy.Header{}, err
	}
	h, err := MemberHeader(f)
	if err != nil {
		return npy.Header{}, r.wrap(fmt.Errorf("npz: member %q: %w", f.Name, err))
	}
	return h, nil
}

// Get decodes the named member (see ReadMember), or returns an error
// naming the missing member and listing those present.
func (r *Reader) Get(name string) (*npy.Array, error) {
	f, err := r.member(name)
	if err != nil {
		return nil, err
	}
	a, err := ReadMember(f)
	if err != nil {
		return nil, r.wrap(fmt.Errorf("npz: member %q: %w", f.Name, err))
	}
	return a, nil
}

// GetInto is Get decoding into dst, which must have room for exactly the
// member's values (see ReadMemberInto).
func (r *Reader) GetInto(name string, dst []float64) (*npy.Array, error) {
	f, err := r.member(name)
	if err != nil {
		return nil, err
	}
	a, err := ReadMemberInto(f, dst)
	if err != nil {
		return nil, r.wrap(fmt.Errorf("npz: member %q: %w", f.Name, err))
	}
	return a, nil
}

// wrap prefixes err with the archive's path, if known.
func (r *Reader) wrap(err error) error {
	if r.path == "" {
		return err
	}
	return fmt.Errorf("%s: %w", r.path, err)
}

// quoteList quotes the first few names for an error message and gives the
// count of a longer list: "a", "b", … (600000 in all).
func quoteList(names []string) string {
	const listed = 8
	q := make([]string, 0, listed+1)
	for i, n := range names {
		if i == listed {
			q = append(q, fmt.Sprintf("… (%d in all)", len(names)))
			break
		}
		q = append(q, strconv.Quote(textclip.Cut(n, 40))) // whole characters (probe 27)
	}
	return strings.Join(q, ", ")
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
// first: its dtype must be one npy reads, the data it announces must fit
// in the member's declared uncompressed size, and that size must be at
// most maxMember, before anything is decoded; the decompressed stream may
// not run past the declared size, nor end before it; and the member is
// read to its end so that archive/zip checks its CRC-32.
func ReadMember(f *zip.File) (*npy.Array, error) { return readMember(f, nil) }

// ReadMemberInto is ReadMember decoding into dst, which must have room for
// exactly the member's values: nothing their size is allocated, so the
// bound on decoded values (half the memory free) does not apply (probe
// 56: a run's checkpointed bank of 10⁸ chains, which the run had room
// for, was refused on resuming).
func ReadMemberInto(f *zip.File, dst []float64) (*npy.Array, error) {
	if dst == nil {
		dst = []float64{}
	}
	return readMember(f, dst)
}

// readMember is ReadMember, decoding into dst unless it is nil.
func readMember(f *zip.File, dst []float64) (*npy.Array, error) {
	declared := f.UncompressedSize64
	if declared > maxMember {
		return nil, fmt.Errorf("declared uncompressed size %d bytes, more than the %d supported", declared, uint64(maxMember))
	}
	h, err := MemberHeader(f)
	if err != nil {
		return nil, err
	}
	if err := h.Check(); err != nil {
		return nil, err
	}
	need, ok := h.DataBytes()
	if !ok || need > declared {
		return nil, fmt.Errorf("header announces shape %v of %s, more data than the member's declared %d bytes", h.Shape, h.Dtype, declared)
	}
	if elems, limit := need/max(1, elemSize(h.Dtype)), sysmem.Limit(maxDecoded); dst == nil && float64(elems*8) > limit {
		return nil, fmt.Errorf("shape %v decodes to %d bytes of float64, more than the %.0f supported (%s)", h.Shape, elems*8, limit, sysmem.Why(maxDecoded))
	}
	rc, err := f.Open()
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	crc := crc32.NewIEEE() // archive/zip skips its check when the stored CRC-32 is 0
	cr := &counter{r: io.TeeReader(rc, crc)}
	lr := &io.LimitedReader{R: cr, N: int64(declared) + 1}
	// The declared size is a claim (a zip bomb cut short declares 1.6 GB):
	// the raw bytes are read before values are allocated for them, unless
	// they go to the caller's dst.
	var arr *npy.Array
	if dst != nil {
		arr, err = npy.ReadSizedInto(lr, int64(declared), dst)
	} else {
		arr, err = npy.Read(lr)
	}
	if err != nil {
		return nil, sizeError(err, cr.n, declared)
	}
	// Nothing may follow the data; reading to the end lets archive/zip
	// check the size and the CRC-32.
	n, err := io.Copy(io.Discard, lr)
	switch {
	case errors.Is(err, zip.ErrChecksum):
		return nil, fmt.Errorf("CRC-32 does not match, a checksum error (the file is corrupt; NumPy refuses it too): %w", err)
	case err != nil:
		return nil, sizeError(err, cr.n, declared)
	case lr.N == 0:
		return nil, fmt.Errorf("decompresses to more than its declared %d bytes", declared)
	case n > 0:
		return nil, fmt.Errorf("data after the %d values of shape %v, want nothing", len(arr.Data), h.Shape)
	case crc.Sum32() != f.CRC32:
		return nil, fmt.Errorf("CRC-32 does not match (stored %08x, data %08x), a checksum error (the file is corrupt; NumPy refuses it too)", f.CRC32, crc.Sum32())
	}
	return arr, nil
}

// counter counts the bytes read through it.
type counter struct {
	r io.Reader
	n int64
}

func (c *counter) Read(b []byte) (int, error) {
	n, err := c.r.Read(b)
	c.n += int64(n)
	return n, err
}

// sizeError explains the errors archive/zip gives when a member's data,
// of which got bytes were read, and its declared uncompressed size
// disagree; other errors are returned as they are.
func sizeError(err error, got int64, declared uint64) error {
	switch {
	case errors.Is(err, io.ErrUnexpectedEOF):
		return fmt.Errorf("data end after %d bytes, shorter than the member's declared uncompressed size of %d bytes (the archive is corrupt): %w", got, declared, err)
	case errors.Is(err, zip.ErrFormat):
		return fmt.Errorf("decompresses to more than its declared %d bytes: %w", declared, err)
	}
	return err
}

// ReadFile reads the .npz file at path, decoding every member (OpenReader
// decodes only those asked for); errors name the file.
func ReadFile(path string) (*Archive, error) {
	zr, err := OpenReader(path)
	if err != nil {
		return nil, err
	}
	defer zr.Close()
	return zr.readAll()
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
