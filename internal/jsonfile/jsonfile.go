// Package jsonfile decodes JSON files that people write and edit by hand
// (configurations, checkpoints' state) strictly: one object, no unknown
// fields, no key given twice, nothing after it, with errors that name the
// file. A UTF-8 byte-order mark, which some editors write, is skipped.
package jsonfile

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/flowebm/flowebm/internal/sysmem"
	"github.com/flowebm/flowebm/internal/textclip"
	"github.com/flowebm/flowebm/io/safefile"
)

// Options relax the checks; the zero value is strict.
type Options struct {
	// AllowUnknown accepts fields that v has no place for.
	AllowUnknown bool
	// IntRanges are the values integer fields take, by the field's path in
	// the file (train.iterations): a number beyond one is refused naming
	// it, not the range of Go's int (round 119 B8: grid_size 1e20 was
	// refused as beyond 9223372036854775807, then 1e18 as beyond 1000).
	IntRanges map[string]IntRange
	// MaxBytes refuses larger files before reading them (0:
	// DefaultMaxBytes).
	MaxBytes int64
	// MaxMemory refuses a file whose values would take more bytes to
	// decode (0: sysmem.Limit(sysmem.DefaultLimit), what the machine and
	// ulimit -v leave).
	MaxMemory float64
}

// IntRange is the range of an integer field's values, Min..Max (Max
// math.MaxInt64: bounded below only, other checks bounding it above, such
// as the memory a run needs); Unset, if not empty, says what leaving the
// field out means ("the default 200").
type IntRange struct {
	Min, Max int64
	Unset    string
}

// String is "Min..Max" (or "≥ Min"), with what unset means.
func (r IntRange) String() string {
	s := fmt.Sprintf("%d..%d", r.Min, r.Max)
	if r.Max == math.MaxInt64 {
		s = fmt.Sprintf("≥ %d", r.Min)
	}
	if r.Unset == "" {
		return s
	}
	return fmt.Sprintf("%s (unset: %s)", s, r.Unset)
}

// DefaultMaxBytes bounds the JSON files flowebm reads (metrics,
// checkpoint state, seeds summaries): most are kilobytes, but a
// checkpoint's window.json and a seeds.json grow with the modes of a data
// set (45 MB and 17 MB at 5,000 modes, probe 30). A file is walked token
// by token, with memory linear in its size, before it is decoded.
// Configurations, which people write, have a tighter bound of their own.
const DefaultMaxBytes = 256 << 20

// Read decodes the JSON object in the file at path into v.
func Read(path string, v any, opt Options) error {
	f, err := safefile.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	limit := opt.MaxBytes
	if limit <= 0 {
		limit = DefaultMaxBytes
	}
	if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() && fi.Size() > limit {
		return fmt.Errorf("%s: %d bytes, want at most %d for a JSON file of flowebm's", path, fi.Size(), limit)
	}
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if int64(len(b)) > limit {
		return fmt.Errorf("%s: more than %d bytes, want at most %d", path, limit, limit)
	}
	if err := Decode(b, v, opt); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// Decode decodes the JSON object b into v.
func Decode(b []byte, v any, opt Options) error {
	b = bytes.TrimPrefix(b, []byte("\uFEFF"))
	switch t := bytes.TrimSpace(b); {
	case bytes.HasPrefix(b, []byte("\xff\xfe")) || bytes.HasPrefix(b, []byte("\xfe\xff")): // round 117 B4: Notepad's "Unicode"
		return errors.New("UTF-16 (byte-order mark FF FE or FE FF), want UTF-8: convert it, with iconv -f UTF-16 -t UTF-8 say")
	case len(t) == 0:
		return errors.New("empty, want a JSON object")
	case t[0] != '{':
		return fmt.Errorf("starts with %q, want a JSON object {…}", clip(t))
	}
	w, err := noDuplicateKeys(b, reflect.TypeOf(v))
	if err != nil {
		return err
	}
	// Before decoding: a file of small values decoded into large ones
	// ([{}, {}, …] into a slice of structs) needs far more memory than
	// its size (probe 31: a 39 MB window.json aborted the process).
	// Slices counted at their elements' size (probe 32: counted thrice, a
	// 109 MB window.json of 5,000 modes was refused under ulimit -v); no
	// file let through that would not fit (probe 33: one of zeros, 4× its
	// size decoded, was, and aborted the process).
	limit := opt.MaxMemory
	if limit <= 0 {
		limit = sysmem.Limit(sysmem.DefaultLimit)
	}
	if need := 2*w.cost + 2*float64(len(b)); need > limit {
		return fmt.Errorf("its %d values would take about %s of memory to decode (%.1f× the file's size), over the limit of %s (%s): give the process more memory, or check that it is the right file",
			w.values, sysmem.Bytes(need), need/float64(len(b)), sysmem.Bytes(limit), sysmem.Why(sysmem.DefaultLimit))
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	if !opt.AllowUnknown {
		dec.DisallowUnknownFields()
	}
	if err := dec.Decode(v); err != nil {
		return unknownAt(b, reflect.TypeOf(v), at(b, err, opt.IntRanges))
	}
	if off := dec.InputOffset(); len(bytes.TrimSpace(b[off:])) != 0 {
		return fmt.Errorf("unexpected %q after the JSON object (at byte %d), want nothing after it", clip(bytes.TrimSpace(b[off:])), off)
	}
	if w.negZeroInt != "" {
		// encoding/json reads it as 0, which means "the default" for most
		// of flowebm's fields, while the minus sign says that the writer
		// meant something else. (A float's -0 is a value, which Go's
		// encoder writes itself.)
		return fmt.Errorf("field %s is -0, a negative zero: want an integer without a sign, e.g. 0 (or leave the field out for its default)", w.negZeroInt)
	}
	return nil
}

// at adds to a syntax or type error of encoding/json the line and column
// of the character at fault in b (encoding/json's offset is just after it:
// round 116 B3, every column was one too far), and says the common slips
// in plain terms (plainSyntax).
func at(b []byte, err error, ranges map[string]IntRange) error {
	var off int64
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		off = syn.Offset
	case errors.As(err, &typ):
		off = typ.Offset
	case errors.Is(err, io.ErrUnexpectedEOF):
		return fmt.Errorf("the file ends at line %d inside an object or array: a } or ] is missing (%w)", 1+bytes.Count(b, []byte("\n")), err)
	default:
		return err
	}
	off = min(max(off, 1), int64(len(b))) - 1 // the character at fault
	line := 1 + bytes.Count(b[:off], []byte("\n"))
	col := 1 + utf8.RuneCount(b[bytes.LastIndexByte(b[:off], '\n')+1:off]) // in characters, as editors count (round 117 B2: bytes)
	if typ != nil && typ.Field != "" {                                     // say it in the file's terms, not Go's
		return fmt.Errorf("near line %d, column %d: field %s: %s", line, col, typ.Field, mismatch(typ, ranges))
	}
	if syn != nil {
		if r, size := utf8.DecodeRune(b[off:]); size > 1 && r != utf8.RuneError { // round 118 B6: encoding/json names a byte of ü as 'Ã'
			err = errors.New(strings.Replace(err.Error(), "'"+string(rune(b[off]))+"'", "'"+string(r)+"'", 1))
		}
		if why := plainSyntax(b, int(off)); why != "" {
			return fmt.Errorf("near line %d, column %d: %w (%s)", line, col, err, why)
		}
	}
	return fmt.Errorf("near line %d, column %d: %w", line, col, err)
}

// plainSyntax says in plain terms the slip that puts the character at
// b[off] where JSON does not take it, for the slips people make writing
// JSON by hand or with another language's writer (round 116 B3: Go's
// "looking for beginning of object key string"); "" for another.
func plainSyntax(b []byte, off int) string {
	if off < 0 || off >= len(b) {
		return ""
	}
	before := bytes.TrimRight(b[:off], " \t\r\n")
	switch c := b[off]; {
	case (c == '}' || c == ']') && bytes.HasSuffix(before, []byte(",")):
		return fmt.Sprintf("a comma before this %c: JSON takes none after the last element", c)
	case c == 'N' || c == 'I' || c == 'i' || c == 'n' && !bytes.HasPrefix(b[off:], []byte("null")):
		return "NaN and Infinity are not JSON numbers: write a finite number"
	case c == '/' || c == '#':
		return "JSON has no comments: remove them"
	case c == '\'':
		return "JSON strings take double quotes"
	case c == ',' && bytes.HasSuffix(before, []byte(",")):
		return "two commas in a row"
	}
	return ""
}

// unknownAt adds to encoding/json's "unknown field" error, which names
// the key only, where the key stands (train.epochs). It walks the tokens:
// a file of hundreds of megabytes decoded into a map to find the key took
// gigabytes (probe 29).
func unknownAt(b []byte, t reflect.Type, err error) error {
	name, ok := strings.CutPrefix(err.Error(), `json: unknown field "`)
	if !ok {
		return err
	}
	name = strings.TrimSuffix(name, `"`)
	w := walker{dec: json.NewDecoder(bytes.NewReader(b)), find: name}
	w.dec.UseNumber() // round 118 B7: a value beyond float64 (1e999) stopped the walk, the key's place unsaid
	if w.walk(0) != nil || len(w.found) == 0 {
		return err
	}
	msg := fmt.Sprintf("unknown field %q (at %s)", name, strings.Join(w.found, ", "))
	if parent := typeAt(t, w.foundIn); parent != nil && parent.Kind() == reflect.Struct { // round 116 B2: no expected value named
		msg += "; want one of " + strings.Join(jsonFieldNames(parent), ", ")
	}
	return errors.New(msg)
}

// jsonFieldNames are the keys that encoding/json fills in a value of the
// struct type t (embedded structs' too), in order.
func jsonFieldNames(t reflect.Type) []string {
	var names []string
	for i := range t.NumField() {
		f := t.Field(i)
		tag, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		ft := f.Type
		if ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		switch {
		case tag == "-" || !f.IsExported() && !f.Anonymous:
		case f.Anonymous && tag == "" && ft.Kind() == reflect.Struct:
			names = append(names, jsonFieldNames(ft)...)
		case tag == "":
			names = append(names, f.Name)
		default:
			names = append(names, tag)
		}
	}
	return names
}

// noDuplicateKeys refuses an object that gives a key twice, at any depth,
// also in another case (encoding/json would keep the last silently, and
// matches field names without regard to case). It returns where the
// object holds the number -0 where a value of type t has an integer
// field (the walker's negZeroInt), and what decoding it into a t costs
// (its cost and values).
func noDuplicateKeys(b []byte, t reflect.Type) (*walker, error) {
	w := &walker{dec: json.NewDecoder(bytes.NewReader(b)), typ: t}
	w.dec.UseNumber()
	if err := w.walk(0); err != nil && !errors.Is(err, errMalformed) {
		return nil, err
	}
	return w, nil // malformed input: json.Decoder.Decode says where
}

// errMalformed stops the walk at a syntax error.
var errMalformed = errors.New("malformed JSON")

// maxDepth bounds the nesting of objects and arrays. flowebm's files nest
// a few levels; encoding/json's own limit, 10000, let a 20 KB file of
// brackets cost gigabytes in the walk (probe 29).
const maxDepth = 100

// walker reads a JSON value token by token, keeping where it stands.
type walker struct {
	dec        *json.Decoder
	at         []step       // the keys and indices that lead to the value read
	typ        reflect.Type // what the value is decoded into (nil: no -0 check)
	negZeroInt string       // the first -0 in an integer field of typ
	cost       float64      // bytes that decoding into typ allocates (estimate)
	values     int
	find       string // a key whose paths found collects (unknownAt)
	found      []string
	foundIn    []step // where the first of found stands (the object holding the key)
}

// step is one key, or one index of an array, on the way to a value.
type step struct {
	key   string
	index int // -1 for a key
}

// path names where w stands: train.sampler.steps, data[2].
func (w *walker) path() string {
	var b strings.Builder
	for _, s := range w.at {
		switch {
		case s.index >= 0:
			fmt.Fprintf(&b, "[%d]", s.index)
		case b.Len() > 0:
			b.WriteString("." + s.key)
		default:
			b.WriteString(s.key)
		}
	}
	return b.String()
}

// walk reads one value, at depth.
func (w *walker) walk(depth int) error {
	if depth > maxDepth {
		return fmt.Errorf("nested more than %d deep, want at most %d", maxDepth, maxDepth)
	}
	tok, err := w.dec.Token()
	if err != nil {
		return errMalformed
	}
	switch tok {
	case json.Delim('{'):
		return w.object(depth)
	case json.Delim('['):
		for i := 0; w.dec.More(); i++ {
			if err := w.inside(step{index: i}, depth); err != nil {
				return err
			}
		}
		if _, err := w.dec.Token(); err != nil {
			return errMalformed
		}
	case json.Number("-0"): // one path kept, not one per -0 (probe 30: a file of -0s took gigabytes)
		if w.negZeroInt == "" && w.typ != nil {
			if t := typeAt(w.typ, w.at); t != nil && isInt(t.Kind()) {
				w.negZeroInt = w.path()
			}
		}
	}
	return nil
}

// object reads the keys and values of an object whose { was read.
func (w *walker) object(depth int) error {
	seen := map[string]string{}
	for w.dec.More() {
		k, err := w.dec.Token()
		if err != nil {
			return errMalformed
		}
		key, _ := k.(string)
		// Folded as encoding/json matches names ("ſeed" is "seed").
		folded := strings.ToLower(strings.ToUpper(key))
		if first, ok := seen[folded]; ok {
			w.at = append(w.at, step{key: key, index: -1})
			return fmt.Errorf("field %q given twice (as %q and %q), want each field once", w.path(), first, key)
		}
		seen[folded] = key
		if err := w.inside(step{key: key, index: -1}, depth); err != nil {
			return err
		}
	}
	if _, err := w.dec.Token(); err != nil {
		return errMalformed
	}
	return nil
}

// inside reads the value at s, one level below depth.
func (w *walker) inside(s step, depth int) error {
	w.values++
	if w.typ != nil {
		w.cost += elementCost(typeAt(w.typ, w.at))
	}
	w.at = append(w.at, s)
	if s.index < 0 && s.key == w.find && w.find != "" && len(w.found) < 10 {
		if w.found == nil {
			w.foundIn = slices.Clone(w.at[:len(w.at)-1])
		}
		w.found = append(w.found, w.path())
	}
	if err := w.walk(depth + 1); err != nil {
		return err
	}
	w.at = w.at[:len(w.at)-1]
	return nil
}

// elementCost is what encoding/json keeps for one element of a value of
// type t (nil: one it skips): a slice's element, a map's entry, an
// interface's value (a boxed number, a map or a slice); nothing for a
// struct's field or an array's element, which are inside. (Decode doubles
// the sum for the slices' growth.)
func elementCost(t reflect.Type) float64 {
	if t == nil {
		return 0
	}
	switch t.Kind() {
	case reflect.Slice:
		return float64(t.Elem().Size())
	case reflect.Map:
		return float64(t.Key().Size()+t.Elem().Size()) + 16
	case reflect.Interface:
		return 64
	}
	return 0
}

// typeAt is the type that encoding/json decodes the value at the steps at
// into, inside a value of type t (nil where it cannot tell).
func typeAt(t reflect.Type, at []step) reflect.Type {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil || len(at) == 0 || t.Kind() == reflect.Interface { // any: any depth
		return t
	}
	switch t.Kind() {
	case reflect.Slice, reflect.Array, reflect.Map:
		return typeAt(t.Elem(), at[1:])
	case reflect.Struct:
		if f, ok := jsonField(t, at[0].key); at[0].index < 0 && ok {
			return typeAt(f.Type, at[1:])
		}
	}
	return nil
}

// jsonField is the field of the struct type t that encoding/json fills
// from the key name (by tag or name, without regard to case; embedded
// structs are searched too).
func jsonField(t reflect.Type, name string) (reflect.StructField, bool) {
	for i := range t.NumField() {
		f := t.Field(i)
		tag, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if tag == "-" || !f.IsExported() && !f.Anonymous {
			continue
		}
		if f.Anonymous && tag == "" {
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				if g, ok := jsonField(ft, name); ok {
					return g, true
				}
				continue
			}
		}
		if tag == "" {
			tag = f.Name
		}
		if strings.EqualFold(tag, name) {
			return f, true
		}
	}
	return reflect.StructField{}, false
}

func clip(b []byte) string { return textclip.Cut(string(b), 40) }

// mismatch says why a JSON value does not fit its field: a number outside
// the range of the field's type is named as such (encoding/json reports
// 1e400 as "number 1e400" for a float64), others by the kind wanted.
func mismatch(typ *json.UnmarshalTypeError, ranges map[string]IntRange) string {
	want := kindOf(typ.Type)
	num, ok := strings.CutPrefix(typ.Value, "number ")
	if !ok {
		return fmt.Sprintf("%s, want %s", typ.Value, want)
	}
	t := typ.Type
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	f, err := strconv.ParseFloat(num, 64)
	switch k := t.Kind(); {
	case (k == reflect.Float64 || k == reflect.Float32) && errors.Is(err, strconv.ErrRange):
		return fmt.Sprintf("%s is outside %s's range, want %s of magnitude at most %.4g", typ.Value, k, want, maxFloat(k))
	case isInt(k) && err == nil && f == math.Trunc(f) && beyond(f, ranges, typ.Field):
		return fmt.Sprintf("%s is outside the field's range, want an integer %s%v", typ.Value, map[bool]string{true: "", false: "in "}[ranges[typ.Field].Max == math.MaxInt64], ranges[typ.Field])
	case isInt(k) && num == "-0": // an unsigned field's (probe 31: "outside the field's range")
		return fmt.Sprintf("%s, a negative zero: want an integer without a sign, e.g. 0 (or leave the field out for its default)", typ.Value)
	case isInt(k) && err == nil && f == math.Trunc(f) && strings.ContainsAny(num, ".eE") && inIntRange(f, t):
		// 10.0 or 1e3: a whole number in range, written as a float.
		return fmt.Sprintf("%s is not written as an integer: want %s", typ.Value, strconv.FormatFloat(f+0, 'f', -1, 64)) // f+0: -0.0 wants 0
	case isInt(k) && err == nil && f == math.Trunc(f) && f < 0 && k < reflect.Uint: // round 123 B1: -1e20 was told "at most …"
		return fmt.Sprintf("%s is outside the field's range, want %s, at least %d", typ.Value, want, -int64(maxInt(t))-1)
	case isInt(k) && err == nil && f == math.Trunc(f):
		return fmt.Sprintf("%s is outside the field's range, want %s, at most %d", typ.Value, want, maxInt(t))
	}
	return fmt.Sprintf("%s, want %s", typ.Value, want)
}

// beyond says whether f lies outside the range given for the field.
func beyond(f float64, ranges map[string]IntRange, field string) bool {
	r, ok := ranges[field]
	return ok && (f < float64(r.Min) || f > float64(r.Max))
}

// maxFloat is the largest finite value of a float kind.
func maxFloat(k reflect.Kind) float64 {
	if k == reflect.Float32 {
		return math.MaxFloat32
	}
	return math.MaxFloat64
}

// isInt reports whether k is a signed or unsigned integer kind.
func isInt(k reflect.Kind) bool {
	return k >= reflect.Int && k <= reflect.Uint64
}

// inIntRange reports whether the whole number f is a value of the integer
// type t.
func inIntRange(f float64, t reflect.Type) bool {
	hi := float64(maxInt(t))
	lo := -hi - 1
	if t.Kind() >= reflect.Uint {
		lo = 0
	}
	return f >= lo && f < hi+1
}

// maxInt is the largest value of the integer type t.
func maxInt(t reflect.Type) uint64 {
	if t.Kind() >= reflect.Uint {
		return math.MaxUint64 >> (64 - t.Bits())
	}
	return math.MaxInt64 >> (64 - t.Bits())
}

// kindOf names a Go type as a JSON value.
func kindOf(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return "an integer"
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer ≥ 0"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Slice, reflect.Array:
		return "a list"
	case reflect.Map, reflect.Struct:
		return "an object"
	case reflect.Pointer:
		return kindOf(t.Elem())
	}
	return t.String()
}
