// Package npy reads and writes NumPy .npy files (format versions 1.0, 2.0
// and 3.0) holding numeric arrays of any rank.
//
// Arrays are exchanged as float64 in C (row-major) order whatever their
// dtype on disk: float32 and float64 in either byte order, signed and
// unsigned integers of 1 to 8 bytes, and bool are read; Fortran-ordered files
// are permuted into C order. Files are written as little-endian float32 or
// float64 in C order.
//
// The package parses the header itself rather than through
// github.com/sbinet/npyio v0.9.0, which panics on valid headers whose keys
// are not in NumPy's usual order, reads float32 only into []float32, returns
// Fortran-ordered data unpermuted and cannot write N-D arrays whose shape is
// known only at run time (see REFERENCE §6).
package npy

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/flowebm/flowebm/internal/textclip"
	"github.com/flowebm/flowebm/io/safefile"
)

// Magic is the six-byte prefix of every .npy file.
const Magic = "\x93NUMPY"

// maxElements bounds the element count a header may announce (2^40), so that
// a corrupt shape cannot overflow size computations.
const maxElements = 1 << 40

// maxRank is the most dimensions a shape may have (NumPy's NPY_MAXDIMS).
const maxRank = 64

// maxDepth bounds the nesting of brackets in a header, so that a hostile
// header cannot exhaust the stack; NumPy's own headers nest at most 3 deep
// (a structured dtype's list of tuples within the dictionary).
const maxDepth = 32

// maxListed is how many keys or names an error message lists before it
// gives only their count.
const maxListed = 8

// Array is a numeric n-dimensional array in C (row-major) order.
type Array struct {
	// Shape is the extent of each dimension; nil or empty for a scalar.
	Shape []int
	// Data holds the prod(Shape) elements in C order.
	Data []float64
	// Dtype is the NumPy type string the array was read from ("<f4",
	// ">i8", "|b1"); Write ignores it.
	Dtype string
}

// Len returns the number of elements the shape describes.
func (a *Array) Len() int {
	n := 1
	for _, s := range a.Shape {
		n *= s
	}
	return n
}

// Dtype is a floating-point type Write can store.
type Dtype int

const (
	// Float64 stores "<f8" (the default).
	Float64 Dtype = iota
	// Float32 stores "<f4"; values are rounded to nearest.
	Float32
)

// String returns the NumPy type string of d.
func (d Dtype) String() string {
	if d == Float32 {
		return "<f4"
	}
	return "<f8"
}

// FormatError reports a malformed or unsupported .npy stream. Field names
// the header field or part at fault; Want says what was expected.
type FormatError struct {
	Field string
	Got   string
	Want  string
}

func (e *FormatError) Error() string {
	if e.Got == "" {
		return fmt.Sprintf("npy: %s: want %s", e.Field, e.Want)
	}
	return fmt.Sprintf("npy: %s is %s, want %s", e.Field, e.Got, e.Want)
}

// Header is the parsed dictionary of a .npy header.
type Header struct {
	Dtype   string
	Fortran bool
	Shape   []int
}

// Check returns nil if Read can decode the header's dtype, or a
// *FormatError naming the dtype and those supported.
func (h Header) Check() error {
	_, err := parseDtype(h.Dtype)
	return err
}

// DataBytes is the size of the data the header announces (elements ×
// element size); ok is false for an unsupported dtype or a size that
// overflows.
func (h Header) DataBytes() (n uint64, ok bool) {
	dt, err := parseDtype(h.Dtype)
	if err != nil {
		return 0, false
	}
	n = uint64(dt.size)
	for _, d := range h.Shape {
		if d < 0 || (d > 0 && n > math.MaxUint64/uint64(d)) {
			return 0, false
		}
		n *= uint64(d)
	}
	return n, true
}

type dtype struct {
	kind  byte // 'f', 'i', 'u', 'b'
	size  int
	order binary.ByteOrder
}

// DtypeField and MagicField are the Fields of a FormatError about the
// array's type and about the file's first bytes.
const (
	DtypeField = "header field 'descr'"
	MagicField = "magic string"
)

func parseDtype(s string) (dtype, error) {
	bad := func(want string) error {
		return &FormatError{Field: DtypeField, Got: strconv.Quote(clip(s)), Want: want}
	}
	if len(s) == 2 && s[1] == 'O' { // probe 56: "|O" was told to be a type string, which it is
		return dtype{}, bad("numbers, not an object array (pickled Python objects): save np.asarray(x, dtype=np.float64)")
	}
	if len(s) < 3 {
		return dtype{}, bad("a NumPy type string such as '<f8'")
	}
	var d dtype
	switch s[0] {
	case '<', '|', '=':
		d.order = binary.LittleEndian
	case '>':
		d.order = binary.BigEndian
	default:
		return dtype{}, bad("a type string starting with '<', '>', '|' or '='")
	}
	d.kind = s[1]
	size, err := strconv.Atoi(s[2:])
	if err != nil || strings.Trim(s[2:], "0123456789") != "" {
		return dtype{}, bad("a type string such as '<f8'")
	}
	d.size = size
	ok := false
	switch d.kind {
	case 'f':
		ok = size == 4 || size == 8
		if size == 2 {
			return dtype{}, bad("float32 or float64 (float16 is not supported; convert with a.astype(np.float32))")
		}
	case 'i', 'u':
		ok = size == 1 || size == 2 || size == 4 || size == 8
	case 'b':
		ok = size == 1
	}
	if !ok {
		return dtype{}, bad("float32 or float64 ('<f4', '<f8'), a signed or unsigned integer of 1, 2, 4 or 8 bytes ('<i8', '|u1'), or bool ('|b1')")
	}
	return d, nil
}

// ReadHeader reads the magic string, version and header dictionary of a .npy
// stream, leaving r at the first data byte.
func ReadHeader(r io.Reader) (Header, error) {
	var pre [8]byte
	if _, err := io.ReadFull(r, pre[:]); err != nil {
		return Header{}, &FormatError{Field: MagicField, Want: `the 8-byte prefix "\x93NUMPY" + version (file too short)`}
	}
	if string(pre[:6]) != Magic {
		return Header{}, &FormatError{Field: MagicField, Got: strconv.Quote(string(pre[:6])), Want: `"\x93NUMPY" (not a .npy file)`}
	}
	if pre[7] != 0 { // NumPy knows 1.0, 2.0 and 3.0 only
		return Header{}, &FormatError{Field: "format version", Got: fmt.Sprintf("%d.%d", pre[6], pre[7]), Want: "1.0, 2.0 or 3.0"}
	}
	var hlen int
	switch pre[6] {
	case 1:
		var b [2]byte
		if _, err := io.ReadFull(r, b[:]); err != nil {
			return Header{}, &FormatError{Field: "header length", Want: "2 bytes (file truncated)"}
		}
		hlen = int(binary.LittleEndian.Uint16(b[:]))
	case 2, 3:
		var b [4]byte
		if _, err := io.ReadFull(r, b[:]); err != nil {
			return Header{}, &FormatError{Field: "header length", Want: "4 bytes (file truncated)"}
		}
		hlen = int(binary.LittleEndian.Uint32(b[:]))
		if hlen > 1<<24 {
			return Header{}, &FormatError{Field: "header length", Got: strconv.Itoa(hlen), Want: "at most 16 MiB"}
		}
	default:
		return Header{}, &FormatError{Field: "format version", Got: fmt.Sprintf("%d.%d", pre[6], pre[7]), Want: "1.0, 2.0 or 3.0"}
	}
	buf := make([]byte, hlen)
	if _, err := io.ReadFull(r, buf); err != nil {
		return Header{}, &FormatError{Field: "header", Want: fmt.Sprintf("%d bytes (file truncated)", hlen)}
	}
	return parseHeader(string(buf))
}

// parseHeader parses the Python dict literal of a .npy header.
func parseHeader(s string) (Header, error) {
	p := &lit{s: s}
	v, err := p.value()
	if err != nil {
		return Header{}, err
	}
	p.space()
	if p.i != len(p.s) {
		return Header{}, &FormatError{Field: "header", Got: strconv.Quote(clip(p.s[p.i:])), Want: "nothing after the dictionary"}
	}
	d, ok := v.(map[string]any)
	if !ok {
		return Header{}, &FormatError{Field: "header", Want: "a Python dictionary"}
	}
	var extra []string
	for k := range d {
		if k != "descr" && k != "fortran_order" && k != "shape" {
			extra = append(extra, k)
		}
	}
	if len(extra) > 0 {
		sort.Strings(extra)
		return Header{}, &FormatError{Field: "header", Got: "keys " + quoteList(extra), Want: "exactly 'descr', 'fortran_order' and 'shape' (NumPy refuses others)"}
	}
	var h Header
	switch t := d["descr"].(type) {
	case string:
		h.Dtype = t
	case nil:
		return Header{}, &FormatError{Field: "header field 'descr'", Want: "present"}
	default:
		return Header{}, &FormatError{Field: "header field 'descr'", Got: "a structured dtype", Want: "a plain numeric dtype such as '<f8'"}
	}
	switch t := d["fortran_order"].(type) {
	case bool:
		h.Fortran = t
	case nil:
		return Header{}, &FormatError{Field: "header field 'fortran_order'", Want: "present"}
	default:
		return Header{}, &FormatError{Field: "header field 'fortran_order'", Want: "True or False"}
	}
	if n, ok := d["shape"].(longSeq); ok {
		return Header{}, &FormatError{Field: "header field 'shape'", Got: fmt.Sprintf("a sequence of %d items", n), Want: fmt.Sprintf("at most %d dimensions (NumPy's limit)", maxRank)}
	}
	sh, ok := d["shape"].([]int)
	if !ok {
		return Header{}, &FormatError{Field: "header field 'shape'", Want: "a tuple of non-negative integers"}
	}
	n := 1
	for _, e := range sh {
		if e < 0 {
			return Header{}, &FormatError{Field: "header field 'shape'", Got: strconv.Itoa(e), Want: "non-negative extents"}
		}
		if e > 0 && n > maxElements/e {
			return Header{}, &FormatError{Field: "header field 'shape'", Got: fmt.Sprint(sh), Want: "at most 2^40 elements"}
		}
		n *= e
	}
	h.Shape = sh
	return h, nil
}

func clip(s string) string { return textclip.Cut(s, 20) }

// quoteList quotes the first few of names, each clipped, for an error message,
// and gives the count of a longer list: "a", "b", … (600000 in all).
func quoteList(names []string) string {
	q := make([]string, 0, maxListed+1)
	for i, n := range names {
		if i == maxListed {
			q = append(q, fmt.Sprintf("… (%d in all)", len(names)))
			break
		}
		q = append(q, strconv.Quote(clip(n)))
	}
	return strings.Join(q, ", ")
}

// lit parses the subset of Python literals a .npy header uses: dicts with
// string keys, strings, True/False, and tuples of integers (lists are parsed
// so that structured dtypes get a clear error). Brackets may nest at most
// maxDepth deep.
type lit struct {
	s     string
	i     int
	depth int
}

// enter notes one more level of brackets, failing past maxDepth; leave
// undoes it.
func (p *lit) enter() error {
	p.depth++
	if p.depth > maxDepth {
		return &FormatError{Field: fmt.Sprintf("header nested too deep at byte %d", p.i), Want: fmt.Sprintf("at most %d levels of '{', '(' and '['", maxDepth)}
	}
	return nil
}

func (p *lit) leave() { p.depth-- }

func (p *lit) space() {
	for p.i < len(p.s) && strings.IndexByte(" \t\n\r", p.s[p.i]) >= 0 {
		p.i++
	}
}

func (p *lit) fail(want string) error {
	got := "the end of the header"
	if p.i < len(p.s) {
		got = strconv.Quote(clip(p.s[p.i:]))
	}
	return &FormatError{Field: fmt.Sprintf("header at byte %d", p.i), Got: got, Want: want}
}

func (p *lit) value() (any, error) {
	p.space()
	if p.i >= len(p.s) {
		return nil, p.fail("a value")
	}
	switch c := p.s[p.i]; {
	case c == '{':
		return p.dict()
	case c == '(' || c == '[':
		return p.sequence()
	case c == '\'' || c == '"':
		return p.str()
	case strings.HasPrefix(p.s[p.i:], "True"):
		p.i += 4
		return true, nil
	case strings.HasPrefix(p.s[p.i:], "False"):
		p.i += 5
		return false, nil
	case c == '-' || c >= '0' && c <= '9':
		return p.integer()
	}
	return nil, p.fail("a dict, tuple, string, integer, True or False")
}

func (p *lit) dict() (any, error) {
	if err := p.enter(); err != nil {
		return nil, err
	}
	defer p.leave()
	p.i++ // '{'
	d := map[string]any{}
	for {
		p.space()
		if p.i < len(p.s) && p.s[p.i] == '}' {
			p.i++
			return d, nil
		}
		k, err := p.str()
		if err != nil {
			return nil, err
		}
		p.space()
		if p.i >= len(p.s) || p.s[p.i] != ':' {
			return nil, p.fail("':' after a dictionary key")
		}
		p.i++
		v, err := p.value()
		if err != nil {
			return nil, err
		}
		if _, dup := d[k]; dup {
			return nil, &FormatError{Field: "header key " + strconv.Quote(clip(k)), Want: "given once"}
		}
		d[k] = v
		p.space()
		if p.i < len(p.s) && p.s[p.i] == ',' {
			p.i++
			continue
		}
		if p.i < len(p.s) && p.s[p.i] == '}' {
			continue
		}
		return nil, p.fail("',' or '}' in the dictionary")
	}
}

// intList is a Python list of integers: NumPy's shape must be a tuple.
type intList []int

// longSeq is the length of a tuple or list of more than maxRank items,
// which no header NumPy reads holds; the items are parsed but not kept.
type longSeq int

// sequence parses a tuple or list. A tuple of integers is returned as
// []int, a list of integers as intList, a sequence of more than maxRank
// items as longSeq, anything else as []any.
func (p *lit) sequence() (any, error) {
	if err := p.enter(); err != nil {
		return nil, err
	}
	defer p.leave()
	closer := byte(')')
	if p.s[p.i] == '[' {
		closer = ']'
	}
	p.i++
	var items []any
	ints := []int{}
	allInts := true
	count := 0
	for {
		p.space()
		if p.i < len(p.s) && p.s[p.i] == closer {
			p.i++
			if count > maxRank {
				return longSeq(count), nil
			}
			if allInts {
				if closer == ']' {
					return intList(ints), nil
				}
				return ints, nil
			}
			return items, nil
		}
		v, err := p.value()
		if err != nil {
			return nil, err
		}
		if count++; count <= maxRank {
			items = append(items, v)
			if n, ok := v.(int); ok {
				ints = append(ints, n)
			} else {
				allInts = false
			}
		}
		p.space()
		if p.i < len(p.s) && p.s[p.i] == ',' {
			p.i++
			continue
		}
		if p.i < len(p.s) && p.s[p.i] == closer {
			continue
		}
		return nil, p.fail(fmt.Sprintf("',' or '%c'", closer))
	}
}

func (p *lit) str() (string, error) {
	if p.i >= len(p.s) || (p.s[p.i] != '\'' && p.s[p.i] != '"') {
		return "", p.fail("a quoted string")
	}
	q := p.s[p.i]
	end := strings.IndexByte(p.s[p.i+1:], q)
	if end < 0 {
		return "", p.fail("a closed string")
	}
	v := p.s[p.i+1 : p.i+1+end]
	p.i += end + 2
	return v, nil
}

func (p *lit) integer() (any, error) {
	j := p.i
	if p.s[j] == '-' {
		j++
	}
	for j < len(p.s) && p.s[j] >= '0' && p.s[j] <= '9' {
		j++
	}
	// Python 2 era writers append L to longs.
	n, err := strconv.Atoi(p.s[p.i:j])
	if err != nil {
		return nil, p.fail("an integer that fits in 64 bits")
	}
	if j < len(p.s) && p.s[j] == 'L' {
		j++
	}
	p.i = j
	return n, nil
}

// Read reads one array from a .npy stream, leaving r after its data.
func Read(r io.Reader) (*Array, error) { return ReadSized(r, -1) }

// ReadSized is Read for a stream known to hold size bytes in all (header
// and data: a file's size, an archive member's checked declared size), or
// -1 if unknown. When the stream holds the data the header announces, the
// values are allocated at once and decoded as they are read, in chunks:
// the memory needed is the values', without a copy of the raw bytes (a
// (10⁸, 2) float64 file took 3.2 GB to read, not 1.6). Otherwise (the
// size unknown, or too small: the stream is truncated) the raw bytes are
// read first, so that a header announcing more data than there is fails
// without allocating for it.
func ReadSized(r io.Reader, size int64) (*Array, error) { return readSized(r, size, nil) }

// ReadSizedInto is ReadSized decoding into dst, which must have room for
// exactly the array's values: the Array returned holds dst, and nothing
// the size of the values is allocated (a checkpoint's bank of 10⁸ chains
// is read into the buffer the run has for it, probe 56). An array of
// another number of values is refused before anything is read.
func ReadSizedInto(r io.Reader, size int64, dst []float64) (*Array, error) {
	if dst == nil {
		dst = []float64{}
	}
	return readSized(r, size, dst)
}

// readSized is ReadSized, decoding into dst unless it is nil.
func readSized(r io.Reader, size int64, dst []float64) (*Array, error) {
	cr := &countingReader{r: r}
	h, err := ReadHeader(cr)
	if err != nil {
		return nil, err
	}
	dt, err := parseDtype(h.Dtype)
	if err != nil {
		return nil, err
	}
	a := &Array{Shape: h.Shape, Dtype: h.Dtype}
	n := a.Len()
	if dst != nil && len(dst) != n {
		return nil, &FormatError{Field: "shape", Got: fmt.Sprintf("%v (%d values)", h.Shape, n), Want: fmt.Sprintf("%d values", len(dst))}
	}
	want := int64(n) * int64(dt.size)
	if size >= 0 && size-cr.n >= want {
		a.Data, err = readValues(r, n, dt, h, dst)
	} else {
		a.Data, err = readRaw(r, want, n, dt, h)
	}
	if err != nil {
		return nil, err
	}
	if h.Fortran && len(h.Shape) > 1 {
		a.Data = fortranToC(a.Data, h.Shape)
	}
	if dst != nil && n > 0 && &a.Data[0] != &dst[0] { // decoded elsewhere (readRaw, Fortran order)
		copy(dst, a.Data)
	}
	if dst != nil {
		a.Data = dst
	}
	return a, nil
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(b []byte) (int, error) {
	n, err := c.r.Read(b)
	c.n += int64(n)
	return n, err
}

// readChunk is how many values readValues decodes at a time.
const readChunk = 1 << 16

// readValues decodes the n values of h from r, a chunk of raw bytes at a
// time, into dst, or into values allocated at once if dst is nil.
func readValues(r io.Reader, n int, dt dtype, h Header, dst []float64) ([]float64, error) {
	data := dst
	if data == nil {
		data = make([]float64, n)
	}
	buf := make([]byte, min(n, readChunk)*dt.size)
	for i := 0; i < n; i += readChunk {
		k := min(readChunk, n-i)
		got, err := io.ReadFull(r, buf[:k*dt.size])
		if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
			return nil, truncatedError(int64(i*dt.size+got), int64(n)*int64(dt.size), h)
		}
		if err != nil {
			return nil, fmt.Errorf("npy: reading data: %w", err)
		}
		decode(data[i:i+k], buf[:k*dt.size], dt)
	}
	return data, nil
}

// readRaw reads the want bytes of h's n values whole, then decodes them.
func readRaw(r io.Reader, want int64, n int, dt dtype, h Header) ([]float64, error) {
	raw, err := io.ReadAll(io.LimitReader(r, want))
	if err != nil {
		return nil, fmt.Errorf("npy: reading data: %w", err)
	}
	if int64(len(raw)) != want {
		return nil, truncatedError(int64(len(raw)), want, h)
	}
	data := make([]float64, n)
	decode(data, raw, dt)
	return data, nil
}

// truncatedError says that the data of h end after got of its want bytes.
func truncatedError(got, want int64, h Header) error {
	return &FormatError{Field: "data", Got: fmt.Sprintf("%d bytes", got),
		Want: fmt.Sprintf("%d bytes for shape %v of %s (file truncated)", want, h.Shape, h.Dtype)}
}

func decode(dst []float64, raw []byte, dt dtype) {
	o := dt.order
	for i := range dst {
		b := raw[i*dt.size : (i+1)*dt.size]
		var v float64
		switch dt.kind {
		case 'f':
			if dt.size == 4 {
				v = float64(math.Float32frombits(o.Uint32(b)))
			} else {
				v = math.Float64frombits(o.Uint64(b))
			}
		case 'b':
			if b[0] != 0 {
				v = 1
			}
		case 'i':
			switch dt.size {
			case 1:
				v = float64(int8(b[0]))
			case 2:
				v = float64(int16(o.Uint16(b)))
			case 4:
				v = float64(int32(o.Uint32(b)))
			case 8:
				v = float64(int64(o.Uint64(b)))
			}
		case 'u':
			switch dt.size {
			case 1:
				v = float64(b[0])
			case 2:
				v = float64(o.Uint16(b))
			case 4:
				v = float64(o.Uint32(b))
			case 8:
				v = float64(o.Uint64(b))
			}
		}
		dst[i] = v
	}
}

// fortranToC permutes column-major data of the given shape into row-major
// order.
func fortranToC(f []float64, shape []int) []float64 {
	c := make([]float64, len(f))
	if len(f) == 0 {
		return c
	}
	// Column-major strides.
	stride := make([]int, len(shape))
	s := 1
	for k := range shape {
		stride[k] = s
		s *= shape[k]
	}
	idx := make([]int, len(shape))
	off := 0
	for i := range c {
		c[i] = f[off]
		// Increment the C-order multi-index (last dimension fastest).
		for k := len(shape) - 1; k >= 0; k-- {
			idx[k]++
			off += stride[k]
			if idx[k] < shape[k] {
				break
			}
			off -= stride[k] * shape[k]
			idx[k] = 0
		}
	}
	return c
}

// ReadAll reads one array from a .npy stream that must end with the
// array's data, as a file does: bytes after the data are refused (NumPy
// ignores them, but they are a sign of a corrupt or wrongly named file).
func ReadAll(r io.Reader) (*Array, error) { return readAllSized(r, -1) }

// readAllSized is ReadAll of a stream of size bytes (see ReadSized).
func readAllSized(r io.Reader, size int64) (*Array, error) {
	a, err := ReadSized(r, size)
	if err != nil {
		return nil, err
	}
	var b [1]byte
	switch n, err := io.ReadFull(r, b[:]); {
	case n > 0:
		return nil, &FormatError{Field: "data", Got: "longer than the header's shape " + fmt.Sprint(a.Shape) + " holds", Want: "the file to end there"}
	case err != io.EOF:
		return nil, fmt.Errorf("npy: reading past the data: %w", err)
	}
	return a, nil
}

// ReadFile reads the array stored in the .npy file at path, which must end
// with the array's data (see ReadAll). Errors name the file.
func ReadFile(path string) (*Array, error) {
	f, err := safefile.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	size := int64(-1)
	if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() {
		size = fi.Size()
	}
	a, err := readAllSized(bufio.NewReader(f), size)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return a, nil
}

// Write writes a as a version 1.0 .npy stream (version 2.0 if the header
// needs it) of the given dtype. It fails if the shape does not match the
// number of elements.
func Write(w io.Writer, a *Array, d Dtype) error {
	n := 1
	for _, s := range a.Shape {
		if s < 0 {
			return fmt.Errorf("npy: negative extent in shape %v", a.Shape)
		}
		n *= s
	}
	if n != len(a.Data) {
		return fmt.Errorf("npy: shape %v holds %d elements, data has %d", a.Shape, n, len(a.Data))
	}
	var dims []string
	for _, s := range a.Shape {
		dims = append(dims, strconv.Itoa(s))
	}
	shape := "(" + strings.Join(dims, ", ")
	if len(dims) == 1 {
		shape += ","
	}
	shape += ")"
	dict := fmt.Sprintf("{'descr': '%s', 'fortran_order': False, 'shape': %s, }", d, shape)
	var hdr bytes.Buffer
	hdr.WriteString(Magic)
	// Pad so that the data start on a 64-byte boundary, ending in '\n'.
	major, lenBytes := 1, 2
	if len(dict)+1+10 > 65535 {
		major, lenBytes = 2, 4
	}
	total := 6 + 2 + lenBytes + len(dict) + 1
	pad := (64 - total%64) % 64
	hlen := len(dict) + pad + 1
	hdr.WriteByte(byte(major))
	hdr.WriteByte(0)
	if lenBytes == 2 {
		binary.Write(&hdr, binary.LittleEndian, uint16(hlen))
	} else {
		binary.Write(&hdr, binary.LittleEndian, uint32(hlen))
	}
	hdr.WriteString(dict)
	hdr.WriteString(strings.Repeat(" ", pad))
	hdr.WriteByte('\n')
	if _, err := w.Write(hdr.Bytes()); err != nil {
		return err
	}
	size := 8
	if d == Float32 {
		size = 4
	}
	buf := make([]byte, 0, min(len(a.Data), 8192)*size)
	for i, v := range a.Data {
		if d == Float32 {
			buf = binary.LittleEndian.AppendUint32(buf, math.Float32bits(float32(v)))
		} else {
			buf = binary.LittleEndian.AppendUint64(buf, math.Float64bits(v))
		}
		if len(buf) == cap(buf) || i == len(a.Data)-1 {
			if _, err := w.Write(buf); err != nil {
				return err
			}
			buf = buf[:0]
		}
	}
	return nil
}

// WriteFile writes a to path atomically: the data go to a temporary file in
// the same folder, which is renamed over path only once complete.
func WriteFile(path string, a *Array, d Dtype) error {
	return safefile.Write(path, func(w io.Writer) error { return Write(w, a, d) })
}
