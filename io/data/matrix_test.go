package data

import (
	"archive/zip"
	"bytes"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"gonum.org/v1/gonum/mat"

	"github.com/flowebm/flowebm/io/npy"
	"github.com/flowebm/flowebm/io/npz"
)

func TestReadMatrixFormats(t *testing.T) {
	dir := t.TempDir()
	want := []float64{1, 2, 3, 4, 5, 6}
	a := &npy.Array{Shape: []int{3, 2}, Data: want}
	if err := npy.WriteFile(filepath.Join(dir, "x.npy"), a, npy.Float32); err != nil {
		t.Fatal(err)
	}
	other := &npy.Array{Shape: []int{1, 1}, Data: []float64{9}}
	if err := npz.WriteFile(filepath.Join(dir, "x.npz"), map[string]*npy.Array{"a": a, "b": other}, npy.Float64); err != nil {
		t.Fatal(err)
	}
	write := func(name, s string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	write("header.csv", "x,y\n1,2\n3,4\n\n5, 6\n")
	write("plain.csv", "1,2\n3,4\n5,6\n")
	for _, c := range []struct{ file, key string }{{"x.npy", ""}, {"x.npz", ""}, {"x.npz", "a"}, {"header.csv", ""}, {"plain.csv", ""}} {
		x, err := ReadMatrix(filepath.Join(dir, c.file), c.key)
		if err != nil {
			t.Fatalf("%s: %v", c.file, err)
		}
		if r, cols := x.Dims(); r != 3 || cols != 2 || !sameValues(x.RawMatrix().Data, want) {
			t.Errorf("%s %q: got %v", c.file, c.key, mat.Formatted(x))
		}
	}
	x, err := ReadMatrix(filepath.Join(dir, "x.npz"), "b")
	if err != nil || x.At(0, 0) != 9 {
		t.Errorf("member b: %v, %v", x, err)
	}
}

func TestReadMatrixErrors(t *testing.T) {
	dir := t.TempDir()
	vec := &npy.Array{Shape: []int{4}, Data: []float64{1, 2, 3, 4}}
	if err := npy.WriteFile(filepath.Join(dir, "vec.npy"), vec, npy.Float64); err != nil {
		t.Fatal(err)
	}
	if err := npz.WriteFile(filepath.Join(dir, "a.npz"), map[string]*npy.Array{"x": vec}, npy.Float64); err != nil {
		t.Fatal(err)
	}
	write := func(name, s string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("ragged.csv", "1,2\n3\n")
	write("word.csv", "1,2\n3,abc\n")
	write("empty.csv", "x,y\n")
	write("data.txt", "1 2\n")
	write("semicolons.csv", "a;b\n1;2\n")           // probe 50: the header was taken for one column
	write("unclosed.csv", "u,v\n\"1,2\n3,4\n5,6\n") // probe 59: the end of the file was named
	if err := npz.WriteFile(filepath.Join(dir, "none.npz"), map[string]*npy.Array{}, npy.Float64); err != nil {
		t.Fatal(err)
	}
	pts := &npy.Array{Shape: []int{2, 2}, Data: []float64{1, 2, 3, 4}}
	if err := npz.WriteFile(filepath.Join(dir, "labels.npz"), map[string]*npy.Array{"a_labels": vec, "x": pts}, npy.Float64); err != nil {
		t.Fatal(err)
	}
	cases := []struct{ file, key, want string }{
		// Probe 59 B7: labels stored first; the message lists the members.
		{"labels.npz", "", `member "a_labels" shape is [4], want (points, dimensions…): at least 2 dimensions; it is the archive's first member, read by default (members: "a_labels", "x"): choose the points' member with --key`},
		{"a.npz", "", `member "x" shape is [4], want (points, dimensions…): at least 2 dimensions`},
		{"vec.npy", "", "vec.npy: array shape is [4], want 2 dimensions"},
		{"a.npz", "y", `no member "y"`},
		{"vec.npy", "k", "selects a member of an .npz"},
		{"ragged.csv", "", "ragged.csv: line 2 is 1 fields, want 2"},
		{"word.csv", "", `word.csv: line 2, column 2 is "abc", want a decimal number`},
		{"empty.csv", "", "empty.csv: no row of numbers (the file is empty, or holds a header alone): want at least one"},
		{"semicolons.csv", "", `the columns are separated by commas, and this field holds ";"`},
		{"none.npz", "", "none.npz: the archive is empty (no arrays), want at least one array"},
		{"unclosed.csv", "", "unclosed.csv: line 2 is the start of a record whose quoted field is not closed as CSV closes it (the reader stopped at line 4"},
		{"data.txt", "", `unknown data format ".txt"`},
	}
	for _, c := range cases {
		_, err := ReadMatrix(filepath.Join(dir, c.file), c.key)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want it to contain %q", c.file, err, c.want)
		}
	}
}

func TestFinite(t *testing.T) {
	x := mat.NewDense(4, 2, []float64{1, 2, math.NaN(), 0, 3, math.Inf(-1), 5, 6})
	y, dropped := Finite(x)
	if dropped != 2 || !sameValues(y.RawMatrix().Data, []float64{1, 2, 5, 6}) {
		t.Errorf("kept %v, dropped %d; want [1 2 5 6] and 2", y.RawMatrix().Data, dropped)
	}
	if y, dropped := Finite(mat.NewDense(1, 1, []float64{math.NaN()})); y != nil || dropped != 1 {
		t.Errorf("all non-finite: %v, %d", y, dropped)
	}
}

func TestStandardize(t *testing.T) {
	// Columns with means 1 and 10, standard deviations 2 and 6 (n − 1
	// denominator, gonum's stat.Variance).
	x := mat.NewDense(3, 2, []float64{-1, 4, 1, 10, 3, 16})
	s, err := Standardize(x, PerDimension)
	if err != nil {
		t.Fatal(err)
	}
	if !sameValues(s.Shift, []float64{1, 10}) || !sameValues(s.Scale, []float64{2, 6}) {
		t.Fatalf("per dimension: %+v", s)
	}
	z := s.FromData(x)
	if !sameValues(z.RawMatrix().Data, []float64{-1, -1, 0, 0, 1, 1}) {
		t.Errorf("standardised %v", z.RawMatrix().Data)
	}
	if back := s.ToData(z); !mat.EqualApprox(back, x, 1e-12) {
		t.Errorf("ToData(FromData(x)) = %v", mat.Formatted(back))
	}
	if got, want := s.LogDet(), math.Log(12); math.Abs(got-want) > 1e-12 {
		t.Errorf("LogDet %v, want %v", got, want)
	}
	g, err := Standardize(x, Global)
	if err != nil {
		t.Fatal(err)
	}
	if want := math.Sqrt((4 + 36) / 2.0); math.Abs(g.Scale[0]-want) > 1e-12 || g.Scale[1] != g.Scale[0] {
		t.Errorf("global scale %v, want %v in both", g.Scale, want)
	}
	n, err := Standardize(x, NoScaling)
	if err != nil || !sameValues(n.Shift, []float64{0, 0}) || !sameValues(n.Scale, []float64{1, 1}) {
		t.Errorf("none: %+v, %v", n, err)
	}
	if _, err := Standardize(x, "robust"); err == nil || !strings.Contains(err.Error(), `standardize "robust"`) {
		t.Errorf("unknown kind: %v", err)
	}
	c := mat.NewDense(3, 2, []float64{1, 7, 2, 7, 3, 7})
	if _, err := Standardize(c, PerDimension); err == nil || !strings.Contains(err.Error(), "column 2 is constant") {
		t.Errorf("constant column: %v", err)
	}
	if err := (Scaling{Shift: []float64{0}, Scale: []float64{0}}).Validate(); err == nil {
		t.Error("a zero scale validates")
	}
}

func TestFormatErrorIsTyped(t *testing.T) {
	_, err := ReadCSV(strings.NewReader("1,x\n2,y\n"), "f.csv")
	var fe *FormatError
	if !errors.As(err, &fe) || fe.File != "f.csv" || fe.Field != "line 1, column 2" {
		t.Errorf("error %#v", err)
	}
}

// ReadPoints flattens arrays of any rank ≥ 2 to rows and reports the
// per-point shape; ReadMatrix keeps refusing them.
func TestReadPointsImages(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "img.npy")
	v := make([]float64, 3*1*2*2)
	for i := range v {
		v[i] = float64(i)
	}
	if err := npy.WriteFile(p, &npy.Array{Shape: []int{3, 1, 2, 2}, Data: v}, npy.Float32); err != nil {
		t.Fatal(err)
	}
	x, shape, err := ReadPoints(p, "")
	if err != nil {
		t.Fatal(err)
	}
	if r, c := x.Dims(); r != 3 || c != 4 || fmt.Sprint(shape) != "[1 2 2]" || x.At(2, 3) != 11 {
		t.Errorf("read %d×%d, shape %v, x[2,3] = %v", r, c, shape, x.At(2, 3))
	}
	if _, err := ReadMatrix(p, ""); err == nil {
		t.Error("ReadMatrix accepted a 4-D array")
	}
	one := filepath.Join(dir, "one.npy")
	npy.WriteFile(one, &npy.Array{Shape: []int{4}, Data: v[:4]}, npy.Float64)
	if _, _, err := ReadPoints(one, ""); err == nil || !strings.Contains(err.Error(), "at least 2 dimensions") {
		t.Errorf("1-D array: %v", err)
	}
}

// A UTF-8 byte-order mark before a header-less CSV does not cost the
// first row (it made the row look like a header); with a header it is
// skipped too.
func TestReadCSVByteOrderMark(t *testing.T) {
	for _, c := range []struct{ in string }{{"\uFEFF1,2\n3,4\n"}, {"\uFEFFa,b\n1,2\n3,4\n"}} {
		x, err := ReadCSV(strings.NewReader(c.in), "bom.csv")
		if err != nil {
			t.Fatal(err)
		}
		if r, _ := x.Dims(); r != 2 || x.At(0, 0) != 1 || x.At(1, 1) != 4 {
			t.Errorf("%q: %d rows, first %v", c.in, r, x.RawRowView(0))
		}
	}
}

// Standardising columns at the edge of float64's range or with one huge
// outlier computes the spread without overflow; a constant column and one
// whose spread overflows say which is the case.
func TestStandardizeExtremeColumns(t *testing.T) {
	x := mat.NewDense(4, 3, []float64{
		1e300, 1, 1e-300,
		-1e300, 2, 3e-300,
		5e299, 1e200, 2e-300,
		-5e299, 3, 4e-300,
	})
	s, err := Standardize(x, PerDimension)
	if err != nil {
		t.Fatalf("extreme but usable columns refused: %v", err)
	}
	for j, sc := range s.Scale {
		if !(sc > 0) || math.IsInf(sc, 0) {
			t.Errorf("column %d: scale %v", j+1, sc)
		}
	}
	if want := 5e199; math.Abs(s.Scale[1]-want)/want > 0.01 {
		t.Errorf("outlier column: scale %v, want about %v", s.Scale[1], want)
	}
	_, err = Standardize(mat.NewDense(2, 1, []float64{4, 4}), PerDimension)
	if err == nil || !strings.Contains(err.Error(), "column 1 is constant (every value 4)") {
		t.Errorf("constant column: %v", err)
	}
	_, err = Standardize(mat.NewDense(2, 1, []float64{1.7e308, -1.7e308}), PerDimension)
	if err == nil || !strings.Contains(err.Error(), "column 1 spreads beyond what float64 can standardise") {
		t.Errorf("overflowing spread: %v", err)
	}
}

// ReadCSV's first row is a header only when none of its fields is a
// number: a data row with a bad field is refused, not dropped as a header
// (C1). Errors give the file's line numbers, past blank lines and quoted
// line breaks (C2); bare-\r line endings are refused, saying so (C3); a
// header must name every column (C4).
func TestReadCSVRows(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"1.5,2.O\n3,4\n", `f.csv: line 1, column 2 is "2.O", want a decimal number`},
		{"1.5,abc\n3,4\n", `f.csv: line 1, column 2 is "abc", want a decimal number`},
		// Go's hexadecimal floats and digit separators are not CSV data.
		{"1,2\n0x1p3,4\n", `f.csv: line 2, column 1 is "0x1p3", want a decimal number`},
		{"1,2\n3,0x_1\n", `f.csv: line 2, column 2 is "0x_1", want a decimal number`},
		{"1,2\n3,1_000\n", `f.csv: line 2, column 2 is "1_000", want a decimal number`},
		{"# c\n1,2\n", `f.csv: line 1 is "# c", want data or a header row: comment lines (#) are not read`},
		{"1,2\n# end\n", `f.csv: line 2 is "# end", want data or a header row: comment lines`},
		{"1,2\n \t# end\n", `f.csv: line 2 is "# end", want data or a header row: comment lines`},
		{"\"x\n#\",y\n1,2\n# end\n", `f.csv: line 4 is "# end", want data or a header row: comment lines`},
		// Probe 69 B7: numpy.savetxt's header="width,tilt" was to be removed, losing the names.
		{"# width,tilt\n1,2\n", `is read once its "# " is deleted (numpy.savetxt(..., comments=''))`},
		{"\xff\xfe1\x00,\x002\x00\n\x00", "f.csv: encoding is UTF-16 (byte-order mark FF FE or FE FF), want UTF-8"},
		{"1e400,2\n3,4\n", `f.csv: line 1, column 1 is "1e400", want a number within float64's range`},
		{"x,y\n1,2\n-1e400,2\n", `f.csv: line 3, column 1 is "-1e400", want a number within`},
		{"1,2\n\n\n  \n\n3,x\n", `f.csv: line 6, column 2 is "x"`},
		{"x,y\n\"1\n\",2\n3,y\n", `f.csv: line 4, column 2 is "y"`},
		{"1,2\n\n3\n", "f.csv: line 3 is 1 fields, want 2"},
		{"x,y\r1,2\r3,4\r", `f.csv: line 1, column 2 is "y\r1", with a bare carriage return, want lines ending in \n or \r\n`},
		{"1,2\r3,4\r", `line 1, column 2 is "2\r3", with a bare carriage return`},
		{"a,b,c\n1,2\n3,4\n", "f.csv: header (line 1): want one name per column: the header has 3 names, the data 2 columns"},
		{"\n a\n1,2\n", "f.csv: header (line 2): want one name per column: the header has 1 names, the data 2 columns"},
	} {
		_, err := ReadCSV(strings.NewReader(c.in), "f.csv")
		var fe *FormatError
		if !errors.As(err, &fe) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %v, want a FormatError containing %q", c.in, err, c.want)
		}
	}
	// Whitespace-only lines before a header are skipped, \r\n line
	// endings are fine, and so are signs, bare points and exponents.
	// Round 73 (left then): a quoted first name starting with '#' is a
	// name, not a comment.
	for _, in := range []string{"\"#x\",y\n1,2\n3,4\n", " \"# x\",y\n1,2\n3,4\n", "   \nx,y\n1,2\n3,4\n", "+1.,2.0e+0\n.3E1,4\n", "\t\n\n x , y \r\n1,2\r\n3,4\r\n", "1,2\r\n3,4"} {
		x, err := ReadCSV(strings.NewReader(in), "f.csv")
		if err != nil {
			t.Errorf("%q: %v", in, err)
			continue
		}
		if !sameValues(x.RawMatrix().Data, []float64{1, 2, 3, 4}) {
			t.Errorf("%q: read %v", in, x.RawMatrix().Data)
		}
	}
}

// Only the member asked for is decoded: another member, however damaged
// or large (a zip bomb), is not read at all. Decoding every member made a
// 1.5 MB file with a 1.6 GB member take 5.5 GB.
func TestReadMatrixDecodesOnlyItsMember(t *testing.T) {
	var a bytes.Buffer
	if err := npy.Write(&a, &npy.Array{Shape: []int{3, 2}, Data: []float64{1, 2, 3, 4, 5, 6}}, npy.Float64); err != nil {
		t.Fatal(err)
	}
	path := writeZip(t, "two.npz", "a.npy", a.Bytes(), "b.npy", []byte("\x93NUMPY garbage that is no header"))
	m, err := ReadMatrix(path, "a")
	if err != nil {
		t.Fatal(err)
	}
	if r, c := m.Dims(); r != 3 || c != 2 || m.At(2, 1) != 6 {
		t.Errorf("member a read as %d×%d, last %v", r, c, m.At(r-1, c-1))
	}
	if _, err := ReadMatrix(path, "b"); err == nil {
		t.Error("the damaged member b read without error")
	}
}

// A member of fewer than 2 dimensions is refused from its header before
// it is decoded (a 1-D member of 200 million values was decoded first,
// taking 4 GB, then refused).
func TestReadMatrixRefusesFlatMemberUndecoded(t *testing.T) {
	h := "{'descr': '<f8', 'fortran_order': False, 'shape': (200000000,), }"
	h += strings.Repeat(" ", 64-10-len(h)%64-1) + "\n"
	// The header and no data: decoding would fail on their absence.
	member := append([]byte("\x93NUMPY\x01\x00"), byte(len(h)), byte(len(h)>>8))
	path := writeZip(t, "flat.npz", "b.npy", append(member, h...))
	if _, err := ReadMatrix(path, "b"); err == nil || !strings.Contains(err.Error(), "at least 2 dimensions") {
		t.Errorf("error %v, want the shape refused", err)
	}
}

// writeZip writes a zip archive of the members given as name, content
// pairs into a new folder and returns its path.
func writeZip(t *testing.T, name string, members ...any) string {
	t.Helper()
	var buf bytes.Buffer
	z := zip.NewWriter(&buf)
	for i := 0; i+1 < len(members); i += 2 {
		w, err := z.Create(members[i].(string))
		if err != nil {
			t.Fatal(err)
		}
		w.Write(members[i+1].([]byte))
	}
	if err := z.Close(); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// nan with a sign reads as NaN, as NumPy's loadtxt reads "-nan" (refused
// as not a number before; the data's NaN rows are then dropped or refused
// as NaN).
func TestReadCSVSignedNaN(t *testing.T) {
	x, err := ReadCSV(strings.NewReader("1,-nan\n+NaN,4\n"), "f.csv")
	if err != nil {
		t.Fatal(err)
	}
	if d := x.RawMatrix().Data; !math.IsNaN(d[1]) || !math.IsNaN(d[2]) || d[0] != 1 || d[3] != 4 {
		t.Errorf("read %v", d)
	}
}

// Probe 16: a CSV of gigabytes was read whole until the process died of
// memory; a file over MaxCSVBytes is refused from its size, before any
// byte is read (a sparse file: no disk is used).
func TestReadMatrixRefusesHugeCSV(t *testing.T) {
	path := filepath.Join(t.TempDir(), "huge.csv")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(MaxCSVBytes() + 1); err != nil {
		t.Skipf("sparse file: %v", err)
	}
	f.Close()
	_, err = ReadMatrix(path, "")
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("%s: %d bytes, want at most %d (a CSV file's numbers take up to 4 times its size", path, MaxCSVBytes()+1, MaxCSVBytes())) {
		t.Errorf("error %v, want the size refused", err)
	}
}

// Probe 26: a cell quoted in an error was cut in the middle of a UTF-8
// character ("€€\xe2…").
func TestQuotedCellKeepsWholeCharacters(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.csv")
	os.WriteFile(path, []byte("1,2\n3,"+strings.Repeat("€", 30)+"\n"), 0o644)
	_, _, err := ReadPoints(path, "")
	if err == nil || !utf8.ValidString(err.Error()) || !strings.Contains(err.Error(), strings.Repeat("€", 13)+"…") {
		t.Errorf("%q", err)
	}
}
