package data

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"gonum.org/v1/gonum/mat"

	"github.com/flowebm/flowebm/internal/sysmem"
	"github.com/flowebm/flowebm/internal/textclip"
	"github.com/flowebm/flowebm/io/npy"
	"github.com/flowebm/flowebm/io/npz"
	"github.com/flowebm/flowebm/io/safefile"
)

// ReadMatrix reads a data set of n points in d dimensions (n × d) from path,
// by extension: .npy (a 2-D float or integer array), .npz (the member key,
// or the archive's first member if key is empty) or .csv (numeric columns,
// comma-separated, with an optional header row of column names). Non-finite
// values are kept (see Finite). Errors name the file and the field at fault.
func ReadMatrix(path, key string) (*mat.Dense, error) {
	ext := strings.ToLower(filepath.Ext(path))
	if key != "" && ext != ".npz" {
		return nil, fmt.Errorf("%s: a key (%q) selects a member of an .npz archive; this file is %s", path, key, ext)
	}
	switch ext {
	case ".npy":
		a, err := npy.ReadFile(path)
		if err != nil {
			return nil, err
		}
		return arrayMatrix(path, "array", a)
	case ".npz":
		a, field, err := npzMember(path, key)
		if err != nil {
			return nil, err
		}
		return arrayMatrix(path, field, a)
	case ".csv":
		f, err := safefile.OpenLimited(path, MaxCSVBytes(), CSVLimitWhy)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		return ReadCSV(f, path)
	}
	return nil, fmt.Errorf("%s: unknown data format %q, want .npy, .npz or .csv", path, ext)
}

// CSVLimitWhy says why MaxCSVBytes bounds a CSV file.
const CSVLimitWhy = "a CSV file's numbers take up to 4 times its size in memory as float64, and a quarter of the memory limit is allowed"

// MaxCSVBytes bounds the CSV files of numbers read whole (data, points,
// draws): each number takes at least 2 bytes of text ("0,") and 8 in
// memory, so a file of S bytes may need 4·S; a quarter of the memory limit
// (sysmem.Limit of 8 GiB) is allowed, refused before reading.
func MaxCSVBytes() int64 { return int64(sysmem.Limit(8<<30) / 4) }

// ReadPoints is ReadMatrix for points of any shape: an .npy or .npz array
// of shape (n, d₁, …, d_k), k ≥ 1 (images (n, C, H, W), say), is read as
// the matrix (n, d₁⋯d_k) of its flattened points, and shape is
// (d₁, …, d_k). CSV files give (n, d) and shape (d).
func ReadPoints(path, key string) (x *mat.Dense, shape []int, err error) {
	ext := strings.ToLower(filepath.Ext(path))
	if ext == ".csv" {
		x, err := ReadMatrix(path, key)
		if err != nil {
			return nil, nil, err
		}
		_, d := x.Dims()
		return x, []int{d}, nil
	}
	var a *npy.Array
	field := "array"
	switch ext {
	case ".npy":
		a, err = npy.ReadFile(path)
	case ".npz":
		a, field, err = npzMember(path, key)
	default:
		return nil, nil, fmt.Errorf("%s: unknown data format %q, want .npy, .npz or .csv", path, ext)
	}
	if err != nil {
		return nil, nil, err
	}
	if len(a.Shape) < 2 {
		return nil, nil, &FormatError{File: path, Field: field + " shape", Got: fmt.Sprint(a.Shape), Want: "(points, dimensions…): at least 2 dimensions"}
	}
	d := 1
	for _, s := range a.Shape[1:] {
		d *= s
	}
	if a.Shape[0] < 1 || d < 1 {
		return nil, nil, &FormatError{File: path, Field: field + " shape", Got: fmt.Sprint(a.Shape), Want: "at least one point and one dimension"}
	}
	return mat.NewDense(a.Shape[0], d, a.Data), append([]int(nil), a.Shape[1:]...), nil
}

// ReadArray reads the .npy array at path, or the .npz member key (default
// the first), whatever its shape; callers check its shape (PointsShape)
// before reading it.
func ReadArray(path, key string) (*npy.Array, error) {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".npy":
		return npy.ReadFile(path)
	case ".npz":
		a, _, err := npzMemberOf(path, key, 0)
		return a, err
	}
	return nil, fmt.Errorf("%s: unknown array format %q, want .npy or .npz", path, filepath.Ext(path))
}

// PointsShape returns the shape of the array ReadPoints would read from an
// .npy or .npz file, from its header alone (nothing is decoded), so that
// callers can check the memory a data set needs first; nil for a .csv,
// whose size its text bounds.
func PointsShape(path, key string) ([]int, error) {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".npy":
		f, err := safefile.Open(path)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		h, err := npy.ReadHeader(f)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		return h.Shape, nil
	case ".npz":
		zr, err := npz.OpenReader(path) // round 80 B2: a cut file got zip's "not a valid zip file" alone
		if err != nil {
			return nil, err
		}
		defer zr.Close()
		if key == "" && len(zr.Names) > 0 {
			key = zr.Names[0]
		}
		if !slices.Contains(zr.Names, key) {
			return nil, nil // ReadPoints names the missing member
		}
		h, err := zr.Header(key)
		if err != nil {
			return nil, err
		}
		return h.Shape, nil
	}
	return nil, nil
}

// NPZNames are the names of the arrays of the .npz archive at path, in
// the archive's order (none decoded).
func NPZNames(path string) ([]string, error) {
	zr, err := npz.OpenReader(path)
	if err != nil {
		return nil, err
	}
	defer zr.Close()
	return zr.Names, nil
}

// FirstMemberRead is how a refusal of an .npz member read without a key
// says so (MemberNote's explanation is then not added again).
const FirstMemberRead = "the archive's first member, read by default"

// npzMember reads the member key of an .npz archive (the first if key is
// empty) and names it for errors.
func npzMember(path, key string) (*npy.Array, string, error) {
	return npzMemberOf(path, key, 2)
}

// npzMemberOf is npzMember for a member of at least dims dimensions.
func npzMemberOf(path, key string, dims int) (*npy.Array, string, error) {
	// Only the member asked for is decoded: the others may be large.
	zr, err := npz.OpenReader(path)
	if err != nil {
		return nil, "", err
	}
	defer zr.Close()
	if len(zr.Names) == 0 {
		return nil, "", &FormatError{File: path, Field: "the archive", Got: "empty (no arrays)", Want: "at least one array"}
	}
	first := key == ""
	if first {
		key = zr.Names[0]
	}
	// Points and matrices have 2 dimensions or more: a member with fewer
	// is refused from its header, undecoded (it may be large).
	if h, err := zr.Header(key); err == nil && len(h.Shape) < dims {
		want := "(points, dimensions…): at least 2 dimensions"
		if first && len(zr.Names) > 1 { // probe 59: labels stored first
			want += fmt.Sprintf("; it is %s (members: %s): choose the points' member with --key (train, energy; data.key in a --config), or store the points first", FirstMemberRead, quoteNames(zr.Names))
		}
		return nil, "", &FormatError{File: path, Field: fmt.Sprintf("member %q shape", key), Got: fmt.Sprint(h.Shape), Want: want}
	}
	a, err := zr.Get(key)
	if err != nil {
		return nil, "", err
	}
	return a, fmt.Sprintf("member %q", key), nil
}

// MemberNote says which member of the .npz archive at path is read where
// key is empty and the archive holds several ("" otherwise): the first,
// silently read before (probe 70 B4; diagnose names it).
func MemberNote(path, key string) string {
	if key != "" || strings.ToLower(filepath.Ext(path)) != ".npz" {
		return ""
	}
	names, err := NPZNames(path)
	if err != nil || len(names) < 2 {
		return ""
	}
	return fmt.Sprintf("%s holds %d arrays (%s): read %q, the first (--key names another)", path, len(names), quoteNames(names), names[0])
}

// quoteNames quotes the first 10 names, then says how many more.
func quoteNames(names []string) string {
	q := make([]string, 0, min(len(names), 10))
	for _, n := range names[:min(len(names), 10)] {
		q = append(q, strconv.Quote(n))
	}
	if len(names) > 10 {
		q = append(q, fmt.Sprintf("and %d more", len(names)-10))
	}
	return strings.Join(q, ", ")
}

func arrayMatrix(file, field string, a *npy.Array) (*mat.Dense, error) {
	if len(a.Shape) != 2 {
		return nil, &FormatError{File: file, Field: field + " shape", Got: fmt.Sprint(a.Shape), Want: "2 dimensions (points, dimensions)"}
	}
	if a.Shape[0] < 1 || a.Shape[1] < 1 {
		return nil, &FormatError{File: file, Field: field + " shape", Got: fmt.Sprint(a.Shape), Want: "at least one point and one dimension"}
	}
	return mat.NewDense(a.Shape[0], a.Shape[1], a.Data), nil
}

// ReadCSV reads numeric comma-separated rows from r (name labels errors).
// The first row is a header of column names, skipped, when none of its
// fields is a number; a first row with any number in it is data, and a
// field of it that is not a number is an error, like anywhere else. A
// header must have one name per column, and every row as many fields as
// the first data row. Blank and whitespace-only lines are skipped; lines
// end in \n or \r\n (a bare \r, classic Mac OS's line ending, is refused).
// A file whose first data row is numbers separated by spaces or tabs (as
// numpy.savetxt writes by default) is read so, header included; a first
// row 0, 1, …, d−1 above rows that are not all integers is pandas' header
// of unnamed columns.
// Errors give the file's line numbers.
func ReadCSV(r io.Reader, name string) (*mat.Dense, error) {
	cr, comments := newCSVReader(r)
	cr.ReuseRecord = true
	var vals []float64
	first, spaced := true, false // spaced: the columns are separated by spaces or tabs
	header, headerLine := 0, 0   // names in the header row, and its line
	var headerText string
	indices, fractional := false, false // a first row 0, 1, …, d−1 (pandas' names of unnamed columns); a later value not an integer
	indicesLine := 0
	d, rows := 0, 0
	for {
		rec, err := cr.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, csvError(name, err)
		}
		if blankRecord(rec) {
			continue
		}
		if err := checkCR(cr, rec, name); err != nil {
			return nil, err
		}
		line, _ := cr.FieldPos(0)
		if comments.isComment(line) { // not a quoted first name "#x" (round 73: a header "#x",y was refused as a comment)
			want := "data or a header row: comment lines (#) are not read; remove them"
			if rows == 0 && len(rec) > 1 { // probe 69 B7: numpy.savetxt's header="a,b" is "# a,b", and removing it lost the names
				want = "data or a header row: comment lines (#) are not read; a header of column names written as a comment (numpy.savetxt's header=, \"# a,b\") is read once its \"# \" is deleted (numpy.savetxt(..., comments=''))"
			}
			return nil, &FormatError{File: name, Field: fmt.Sprintf("line %d", line), Got: strconv.Quote(clip(strings.Join(rec, ","))), Want: want}
		}
		if spacedNumbers(rec) && rows == 0 { // numpy.savetxt's default (probe 54: its first row was taken for a header)
			spaced, first = true, false
			if header == 1 {
				header = len(strings.Fields(headerText))
			}
		}
		if spaced {
			if len(rec) != 1 {
				return nil, &FormatError{File: name, Field: fmt.Sprintf("line %d", line), Got: strconv.Quote(clip(strings.Join(rec, ","))), Want: "columns separated by spaces or tabs, as in the first data row, not commas"}
			}
			rec = strings.Fields(rec[0])
		}
		if first {
			first = false
			if isHeader(rec) {
				if err := checkUTF8(rec, name, line); err != nil {
					return nil, err
				}
				if j := slices.IndexFunc(rec, func(s string) bool { return strings.TrimSpace(s) == "" }); j >= 0 { // probe 62: pandas' index was read as a column of data
					return nil, &FormatError{File: name, Field: fmt.Sprintf("line %d, column %d", line, j+1), Got: "an empty column name",
						Want: EmptyNameAdvice(j, len(rec))}
				}
				header, headerLine = len(rec), line
				headerText = strings.Join(rec, ",")
				continue
			}
		}
		row, err := parseRow(cr, rec, name)
		if err != nil {
			return nil, err
		}
		if rows == 0 && header == 0 {
			indices, indicesLine = len(rec) >= 2 && ColumnIndices(rec, 0), line
		} else if indices && !fractional {
			fractional = slices.ContainsFunc(row, func(v float64) bool { return v != math.Trunc(v) })
		}
		if rows == 0 {
			d = len(row)
			if header > 0 && header != d {
				return nil, &FormatError{File: name, Field: fmt.Sprintf("header (line %d)", headerLine), Want: fmt.Sprintf("one name per column: the header has %d names, the data %d columns", header, d)}
			}
		} else if len(row) != d {
			return nil, &FormatError{File: name, Field: fmt.Sprintf("line %d", line), Got: fmt.Sprintf("%d fields", len(row)), Want: fmt.Sprintf("%d (as in the first data row)", d)}
		}
		vals = append(vals, row...)
		rows++
	}
	if rows == 0 {
		if sep := strings.IndexAny(headerText, ";|"); sep >= 0 && numbersApart(headerText) { // probe 55: one row of "0.5;0.5" was a header
			return nil, &FormatError{File: name, Field: fmt.Sprintf("line %d", headerLine), Got: strconv.Quote(clip(headerText)),
				Want: fmt.Sprintf("numbers separated by commas (or spaces): this line holds %q between them; write the file with commas (numpy.savetxt(..., delimiter=\",\"), pandas' to_csv)", headerText[sep:sep+1])}
		}
		return nil, &FormatError{File: name, Field: "no row of numbers (the file is empty, or holds a header alone)", Want: "at least one"}
	}
	if indices && rows > 1 { // pandas' header of numbered columns (probe 56: read as a point), or the point (0, 1, …): never taken either way unsaid (probes 65, 66)
		idx := make([]string, d)
		for j := range idx {
			idx[j] = strconv.Itoa(j)
		}
		first := strings.Join(idx, ",")
		return nil, &FormatError{File: name, Field: fmt.Sprintf("line %d", indicesLine), Got: strconv.Quote(first),
			Want: fmt.Sprintf("a header of column names or a point, told apart: %s reads as pandas' header of unnamed columns (DataFrame(array).to_csv) and as a point alike; name the columns (x1,x2,…; pandas: columns=[...]), or write the point with decimals (0.0,1.0,…)", first)}
	}
	return mat.NewDense(rows, d, vals), nil
}

// ColumnIndices reports whether rec is from, from + 1, …, written as
// integers: pandas' header of a frame's unnamed columns (0, 1, … from
// to_csv(index=False); 1, 2, … where numbered from 1).
func ColumnIndices(rec []string, from int) bool {
	for j, f := range rec {
		if strings.TrimSpace(f) != strconv.Itoa(from+j) {
			return false
		}
	}
	return true
}

// newCSVReader returns a reader of r's comma-separated records of any
// length, with leading spaces trimmed from the fields, and the record of
// r's comment lines it reads. A UTF-8 byte-order mark (Excel's "CSV UTF-8")
// is dropped: left in the first field, it made a header-less file's first
// row look like a header and lose it.
func newCSVReader(r io.Reader) (*csv.Reader, *commentLines) {
	br := bufio.NewReader(r)
	if b, err := br.Peek(3); err == nil && string(b) == "\uFEFF" {
		br.Discard(3)
	} else if b, err := br.Peek(2); err == nil && (string(b) == "\xff\xfe" || string(b) == "\xfe\xff") {
		return csv.NewReader(&errReader{errUTF16}), &commentLines{}
	}
	comments := &commentLines{r: br, line: 1, start: true}
	cr := csv.NewReader(comments)
	cr.FieldsPerRecord = -1
	cr.TrimLeadingSpace = true
	return cr, comments
}

// commentLines passes r through, noting the lines whose raw text starts
// with '#' after spaces or tabs: only the raw line tells a comment from a
// first field "#x" quoted (a header "#x",y).
type commentLines struct {
	r     io.Reader
	line  int   // the line being read, from 1
	start bool  // in a line's leading spaces and tabs
	lines []int // comment lines not yet asked for, ascending
}

func (c *commentLines) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	for _, b := range p[:n] {
		switch {
		case b == '\n':
			c.line, c.start = c.line+1, true
		case c.start && (b == ' ' || b == '\t'):
		case c.start && b == '#':
			c.lines, c.start = append(c.lines, c.line), false
		default:
			c.start = false
		}
	}
	return n, err
}

// isComment reports whether line is a comment line, forgetting those
// before it (records are asked for in order).
func (c *commentLines) isComment(line int) bool {
	i, found := slices.BinarySearch(c.lines, line)
	c.lines = c.lines[i:]
	return found
}

// csvError reports an error of encoding/csv's reader on the file name.
func csvError(name string, err error) error {
	if errors.Is(err, errUTF16) {
		return &FormatError{File: name, Field: "encoding", Got: "UTF-16 (byte-order mark FF FE or FE FF)", Want: "UTF-8; convert it, with iconv -f UTF-16 -t UTF-8 say"}
	}
	var pe *csv.ParseError
	if errors.As(err, &pe) && errors.Is(pe.Err, csv.ErrQuote) && pe.StartLine < pe.Line { // probe 59: the line of the end of file was named
		return &FormatError{File: name, Field: fmt.Sprintf("line %d", pe.StartLine), Got: fmt.Sprintf("the start of a record whose quoted field is not closed as CSV closes it (the reader stopped at line %d, column %d: %v)", pe.Line, pe.Column, pe.Err), Want: "valid CSV"}
	}
	if errors.As(err, &pe) {
		return &FormatError{File: name, Field: fmt.Sprintf("line %d", pe.Line), Got: pe.Err.Error(), Want: "valid CSV"}
	}
	return fmt.Errorf("%s: %w", name, err)
}

// blankRecord reports whether rec is a blank or whitespace-only line.
func blankRecord(rec []string) bool {
	return len(rec) == 1 && strings.TrimSpace(rec[0]) == ""
}

// checkUTF8 refuses a header rec (on line of the file name) that is not
// UTF-8 text: its bytes would vanish from the names (probe 55: Latin-1's
// "é" dropped from a plot's axis label).
func checkUTF8(rec []string, name string, line int) error {
	for j, f := range rec {
		if !utf8.ValidString(f) {
			return &FormatError{File: name, Field: fmt.Sprintf("line %d, column %d", line, j+1), Got: strconv.Quote(clip(strings.ToValidUTF8(f, "?"))) + ", not UTF-8",
				Want: "UTF-8 text: convert the file (iconv -f latin1 -t utf-8, or numpy.savetxt(..., encoding=\"utf-8\"))"}
		}
	}
	return nil
}

// numbersApart reports whether s is numbers separated by ';' or '|'.
func numbersApart(s string) bool {
	parts := strings.FieldsFunc(s, func(r rune) bool { return r == ';' || r == '|' })
	for _, p := range parts {
		if _, err := parseNumber(p); err != nil {
			return false
		}
	}
	return len(parts) >= 1
}

// spacedNumbers reports whether rec is one field holding two or more
// numbers separated by spaces or tabs.
func spacedNumbers(rec []string) bool {
	if len(rec) != 1 {
		return false
	}
	f := strings.Fields(rec[0])
	if len(f) < 2 {
		return false
	}
	for _, s := range f {
		if _, err := parseNumber(s); err != nil {
			return false
		}
	}
	return true
}

// EmptyNameAdvice says what a header's empty name at column j (from 0) of
// n is likely to be, and what to do: the first, pandas' index or R's row
// names; the last, a trailing comma (probe 63: the index advice was given
// for every column).
func EmptyNameAdvice(j, n int) string {
	switch {
	case j == 0:
		return "a name for every column (pandas' to_csv writes its index so: give index=False; R's write.csv its row names: row.names=FALSE)"
	case j == n-1:
		return "a name for every column (a comma at the end of the header line leaves an empty last name: remove it, and the rows' trailing commas)"
	}
	return "a name for every column"
}

// isHeader reports whether rec, a file's first record, is a header: none
// of its fields is a number. A number out of float64's range (1e400) is a
// number here, so that its row is refused rather than dropped.
func isHeader(rec []string) bool {
	for _, s := range rec {
		if _, err := parseNumber(s); err == nil || errors.Is(err, strconv.ErrRange) {
			return false
		}
	}
	return true
}

// checkCR refuses a record with a carriage return in a field: encoding/csv
// ends lines at \n (dropping the \r of \r\n), so a file whose lines end in
// a bare \r reads as one long record with \r inside its fields.
func checkCR(cr *csv.Reader, rec []string, name string) error {
	for j, s := range rec {
		if strings.ContainsRune(s, '\r') {
			line, _ := cr.FieldPos(j)
			return &FormatError{File: name, Field: fmt.Sprintf("line %d, column %d", line, j+1), Got: strconv.Quote(clip(s)) + ", with a bare carriage return",
				Want: `lines ending in \n or \r\n, not in \r alone (classic Mac OS line endings: convert them, with tr '\r' '\n' say)`}
		}
	}
	return nil
}

// decimal is the number syntax of CSV data: decimal digits with an
// optional fraction and exponent, or nan, inf, infinity (any case), as
// NumPy's loadtxt reads them; Go's own hexadecimal floats (0x1p3) and
// digit separators (0x_1) are not data other programs would read alike.
var decimal = regexp.MustCompile(`^[+-]?(?:(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|(?i:inf|infinity|nan))$`)

// parseNumber parses the CSV field s (trimmed) in the decimal syntax.
func parseNumber(s string) (float64, error) {
	s = strings.TrimSpace(s)
	if !decimal.MatchString(s) {
		return 0, strconv.ErrSyntax
	}
	if strings.EqualFold(strings.TrimLeft(s, "+-"), "nan") { // -nan, as loadtxt reads it
		return math.NaN(), nil
	}
	return strconv.ParseFloat(s, 64)
}

// parseRow returns the numbers of the data record rec.
func parseRow(cr *csv.Reader, rec []string, name string) ([]float64, error) {
	row := make([]float64, len(rec))
	for j, s := range rec {
		v, err := parseNumber(s)
		if err != nil {
			line, _ := cr.FieldPos(j)
			want := "a decimal number (1, -2.5, 3e-4, nan, inf; no comments or hexadecimal)"
			if errors.Is(err, strconv.ErrRange) {
				want = "a number within float64's range (magnitude below 1.8e308)"
			} else if strings.TrimSpace(s) == "" && j == len(rec)-1 && j > 0 { // probe 66: a trailing comma was called a missing value
				want += "; the line ends with a comma, which leaves an empty last field: remove the trailing commas"
			} else if t := strings.TrimSpace(s); t == "" || t == "NA" || t == "<NA>" || t == "N/A" { // probe 65: pandas' and R's missing values
				want += "; this is a missing value as pandas (an empty field) or R (NA) writes it: write missing values as nan (pandas: to_csv(na_rep=\"nan\"); R: write.csv(na=\"nan\")), and train --drop-nonfinite drops their rows"
			} else if sep := strings.IndexAny(s, ";\t|"); sep >= 0 { // probe 50: a ';' file's header was taken for one column
				want += fmt.Sprintf("; the columns are separated by commas, and this field holds %q: write the file with commas (numpy.savetxt(..., delimiter=\",\"), pandas' to_csv)", s[sep:sep+1])
			}
			return nil, &FormatError{File: name, Field: fmt.Sprintf("line %d, column %d", line, j+1), Got: strconv.Quote(clip(s)), Want: want}
		}
		row[j] = v
	}
	return row, nil
}

// CSVColumns returns the column names of a CSV file's header row, or nil
// when its first row is data (has a number in it, see ReadCSV) or the file
// has no rows. The names are trimmed; a UTF-8 byte-order mark is dropped;
// a file whose columns are separated by spaces or tabs has its header so
// separated.
func CSVColumns(r io.Reader) ([]string, error) {
	cr, _ := newCSVReader(r)
	for {
		rec, err := cr.Read()
		if err == io.EOF {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		if blankRecord(rec) {
			continue
		}
		if spacedNumbers(rec) || !isHeader(rec) {
			return nil, nil
		}
		if err := checkUTF8(rec, "", 1); err != nil {
			return nil, err
		}
		names := make([]string, len(rec))
		for j, f := range rec {
			names[j] = strings.TrimSpace(f)
		}
		if len(names) == 1 && spacedData(cr) { // a header of a file separated by spaces (ReadCSV)
			names = strings.Fields(names[0])
		}
		return names, nil
	}
}

// FileColumns is CSVColumns of the CSV file at path (nil for a file of
// another extension).
func FileColumns(path string) ([]string, error) {
	if !strings.EqualFold(filepath.Ext(path), ".csv") {
		return nil, nil
	}
	f, err := safefile.Open(path) // its header only
	if err != nil {
		return nil, err
	}
	defer f.Close()
	names, err := CSVColumns(f)
	if err != nil {
		return nil, fmt.Errorf("%s: header: %w", path, err)
	}
	return names, nil
}

// spacedData reports whether the next record of cr that is not blank
// holds numbers separated by spaces or tabs.
func spacedData(cr *csv.Reader) bool {
	for {
		rec, err := cr.Read()
		if err != nil {
			return false
		}
		if !blankRecord(rec) {
			return spacedNumbers(rec)
		}
	}
}

func clip(s string) string { return textclip.Cut(s, 40) }

// WriteCSV writes the rows of x as comma-separated values with full float64
// precision, under a header naming the columns x1, x2, ….
func WriteCSV(w io.Writer, x mat.Matrix) error { return WriteCSVNamed(w, x, nil) }

// WriteCSVNamed is WriteCSV under a header of the given column names
// (quoted as CSV quotes them), or x1, x2, … where names do not name every
// column.
func WriteCSVNamed(w io.Writer, x mat.Matrix, names []string) error {
	r, c := x.Dims()
	var b bytes.Buffer
	if len(names) != c {
		names = make([]string, c)
		for j := range names {
			names[j] = fmt.Sprintf("x%d", j+1)
		}
	}
	hw := csv.NewWriter(&b)
	if err := hw.Write(names); err != nil {
		return err
	}
	hw.Flush()
	for i := 0; i < r; i++ {
		for j := 0; j < c; j++ {
			if j > 0 {
				b.WriteByte(',')
			}
			b.WriteString(strconv.FormatFloat(x.At(i, j), 'g', -1, 64))
		}
		b.WriteByte('\n')
		if b.Len() > 1<<16 {
			if _, err := w.Write(b.Bytes()); err != nil {
				return err
			}
			b.Reset()
		}
	}
	_, err := w.Write(b.Bytes())
	return err
}

// Finite returns the rows of x whose values are all finite and the number
// of rows dropped.
func Finite(x *mat.Dense) (*mat.Dense, int) {
	r, c := x.Dims()
	keep := make([]float64, 0, r*c)
	dropped := 0
	for i := 0; i < r; i++ {
		row := x.RawRowView(i)
		ok := true
		for _, v := range row {
			ok = ok && !math.IsNaN(v) && !math.IsInf(v, 0)
		}
		if ok {
			keep = append(keep, row...)
		} else {
			dropped++
		}
	}
	if dropped == 0 {
		return x, 0
	}
	if len(keep) == 0 {
		return nil, dropped
	}
	return mat.NewDense(len(keep)/c, c, keep), dropped
}

// errUTF16 is the error of a CSV file that starts with a UTF-16
// byte-order mark.
var errUTF16 = errors.New("UTF-16 byte-order mark")

// errReader fails every read with err.
type errReader struct{ err error }

func (e *errReader) Read([]byte) (int, error) { return 0, e.err }
