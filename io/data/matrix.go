package data

import (
	"archive/zip"
	"bufio"
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/flowebm/flowebm/io/npy"
	"github.com/flowebm/flowebm/io/npz"
	"gonum.org/v1/gonum/mat"
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
		f, err := os.Open(path)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		return ReadCSV(f, path)
	}
	return nil, fmt.Errorf("%s: unknown data format %q, want .npy, .npz or .csv", path, ext)
}

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

// PointsShape returns the shape of the array ReadPoints would read from an
// .npy or .npz file, from its header alone (nothing is decoded), so that
// callers can check the memory a data set needs first; nil for a .csv,
// whose size its text bounds.
func PointsShape(path, key string) ([]int, error) {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".npy":
		f, err := os.Open(path)
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
		zr, err := zip.OpenReader(path)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		defer zr.Close()
		for _, f := range zr.File {
			name := strings.TrimSuffix(f.Name, ".npy")
			if key == "" || name == key {
				h, err := npz.MemberHeader(f)
				if err != nil {
					return nil, fmt.Errorf("%s: member %q: %w", path, name, err)
				}
				return h.Shape, nil
			}
		}
		return nil, nil // ReadPoints names the missing member
	}
	return nil, nil
}

// npzMember reads the member key of an .npz archive (the first if key is
// empty) and names it for errors.
func npzMember(path, key string) (*npy.Array, string, error) {
	arc, err := npz.ReadFile(path)
	if err != nil {
		return nil, "", err
	}
	if len(arc.Names) == 0 {
		return nil, "", &FormatError{File: path, Field: "members", Got: "none", Want: "at least one array"}
	}
	if key == "" {
		key = arc.Names[0]
	}
	a, err := arc.Get(key)
	if err != nil {
		return nil, "", fmt.Errorf("%s: %w", path, err)
	}
	return a, fmt.Sprintf("member %q", key), nil
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
// A first row that is not all numbers is taken as a header and skipped.
// Every row must have as many fields as the first data row.
func ReadCSV(r io.Reader, name string) (*mat.Dense, error) {
	// A UTF-8 byte-order mark (Excel's "CSV UTF-8") is not part of the
	// first field: left in, it made a header-less file's first row look
	// like a header and lose it.
	br := bufio.NewReader(r)
	if b, err := br.Peek(3); err == nil && string(b) == "\uFEFF" {
		br.Discard(3)
	}
	cr := csv.NewReader(br)
	cr.FieldsPerRecord = -1
	cr.ReuseRecord = true
	cr.TrimLeadingSpace = true
	var vals []float64
	d, rows := 0, 0
	for line := 1; ; line++ {
		rec, err := cr.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			var pe *csv.ParseError
			if errors.As(err, &pe) {
				return nil, &FormatError{File: name, Field: fmt.Sprintf("line %d", pe.Line), Got: pe.Err.Error(), Want: "valid CSV"}
			}
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		if len(rec) == 1 && strings.TrimSpace(rec[0]) == "" {
			continue // blank line
		}
		row := make([]float64, len(rec))
		bad := -1
		for j, s := range rec {
			v, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
			if err != nil {
				bad = j
				break
			}
			row[j] = v
		}
		if bad >= 0 {
			if rows == 0 && line == 1 {
				continue // header
			}
			return nil, &FormatError{File: name, Field: fmt.Sprintf("line %d, column %d", line, bad+1), Got: strconv.Quote(clip(rec[bad])), Want: "a number"}
		}
		if rows == 0 {
			d = len(row)
		} else if len(row) != d {
			return nil, &FormatError{File: name, Field: fmt.Sprintf("line %d", line), Got: fmt.Sprintf("%d fields", len(row)), Want: fmt.Sprintf("%d (as in the first data row)", d)}
		}
		vals = append(vals, row...)
		rows++
	}
	if rows == 0 {
		return nil, &FormatError{File: name, Field: "rows", Got: "none", Want: "at least one row of numbers"}
	}
	return mat.NewDense(rows, d, vals), nil
}

// CSVColumns returns the column names of a CSV file's header row, or nil
// when its first row is data (all numbers) or the file has no rows. The
// names are trimmed; a UTF-8 byte-order mark is dropped.
func CSVColumns(r io.Reader) ([]string, error) {
	br := bufio.NewReader(r)
	if b, err := br.Peek(3); err == nil && string(b) == "\uFEFF" {
		br.Discard(3)
	}
	cr := csv.NewReader(br)
	cr.FieldsPerRecord = -1
	cr.TrimLeadingSpace = true
	for {
		rec, err := cr.Read()
		if err == io.EOF {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		if len(rec) == 1 && strings.TrimSpace(rec[0]) == "" {
			continue // blank line
		}
		names := make([]string, len(rec))
		header := false
		for j, f := range rec {
			names[j] = strings.TrimSpace(f)
			if _, err := strconv.ParseFloat(names[j], 64); err != nil {
				header = true
			}
		}
		if !header {
			return nil, nil
		}
		return names, nil
	}
}

func clip(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}

// WriteCSV writes the rows of x as comma-separated values with full float64
// precision, under a header naming the columns x1, x2, ….
func WriteCSV(w io.Writer, x mat.Matrix) error {
	r, c := x.Dims()
	var b bytes.Buffer
	for j := 0; j < c; j++ {
		if j > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "x%d", j+1)
	}
	b.WriteByte('\n')
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
