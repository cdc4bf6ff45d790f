package data

import (
	"bytes"
	"errors"
	"testing"
)

// The fuzz targets check that no input makes a reader panic, and that what
// a reader accepts is consistent.

func FuzzReadCIFAR10(f *testing.F) {
	f.Add(cifarRecords(1))
	f.Add(gz(cifarRecords(2)))
	f.Add([]byte{0x1f, 0x8b, 8, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		im, err := ReadCIFAR10(bytes.NewReader(b), "f")
		if err != nil {
			return
		}
		if r, c := im.X.Dims(); r != len(im.Labels) || c != 3072 {
			t.Fatalf("%d×%d for %d labels", r, c, len(im.Labels))
		}
	})
}

func FuzzReadIDX(f *testing.F) {
	ib, lb := idxFiles(2, 2, 3)
	f.Add(ib, lb)
	f.Add(gz(ib), gz(lb))
	f.Add(ib[:9], lb[:3])
	f.Add(ib, append(gz(lb), 0x1f, 0x8b))
	f.Add(append(ib, 1), lb)
	f.Fuzz(func(t *testing.T, ib, lb []byte) {
		im, err := ReadIDX(bytes.NewReader(ib), "i", bytes.NewReader(lb), "l")
		if err != nil {
			var fe *FormatError
			if !errors.As(err, &fe) {
				t.Fatalf("error %v is not a FormatError", err)
			}
			return
		}
		if r, c := im.X.Dims(); r != len(im.Labels) || c != im.Height*im.Width {
			t.Fatalf("%d×%d for %d labels of %d×%d", r, c, len(im.Labels), im.Height, im.Width)
		}
	})
}

func FuzzReadDigits(f *testing.F) {
	f.Add([]byte("0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,0,1,2,3,4,5,6,7,8,9,10,11,12,7\n"))
	f.Add([]byte("1,2\n\"x"))
	f.Fuzz(func(t *testing.T, b []byte) {
		im, err := ReadDigits(bytes.NewReader(b), "d")
		if err != nil {
			return
		}
		if r, _ := im.X.Dims(); r != len(im.Labels) {
			t.Fatal("rows and labels differ")
		}
		for _, v := range im.X.RawMatrix().Data {
			if v < 0 || v > 16 {
				t.Fatalf("pixel %v", v)
			}
		}
	})
}

// What ReadCSV accepts is a full rectangle of numbers, and writing it back
// with WriteCSV and reading again gives the same values.
func FuzzReadCSV(f *testing.F) {
	f.Add([]byte("a,b\n1,2\n3.5,-4e3\n"))
	f.Add([]byte("1,2\n3\n"))
	f.Add([]byte("1, NaN\n\n2,Inf\n"))
	f.Add([]byte("\"1\",\"x\n"))
	f.Add([]byte("1.5,2.O\n3,4\n"))
	f.Add([]byte("  \n\nx,y,z\n1,2\n"))
	f.Add([]byte("x,y\r1,2\r"))
	f.Fuzz(func(t *testing.T, b []byte) {
		names, nerr := CSVColumns(bytes.NewReader(b))
		x, err := ReadCSV(bytes.NewReader(b), "f.csv")
		if err == nil && nerr != nil {
			t.Fatalf("ReadCSV reads the file, CSVColumns fails: %v", nerr)
		}
		if err != nil {
			var fe *FormatError
			if !errors.As(err, &fe) {
				t.Fatalf("error %v is not a FormatError", err)
			}
			return
		}
		if names != nil && len(names) != x.RawMatrix().Cols {
			t.Fatalf("header of %d names %q for %d columns", len(names), names, x.RawMatrix().Cols)
		}
		var buf bytes.Buffer
		if err := WriteCSV(&buf, x); err != nil {
			t.Fatal(err)
		}
		if cols, err := CSVColumns(bytes.NewReader(buf.Bytes())); err != nil || len(cols) != x.RawMatrix().Cols || cols[0] != "x1" {
			t.Fatalf("CSVColumns of WriteCSV's output: %q, %v", cols, err)
		}
		y, err := ReadCSV(&buf, "again.csv")
		if err != nil {
			t.Fatalf("re-reading what WriteCSV wrote: %v", err)
		}
		if !sameValues(x.RawMatrix().Data, y.RawMatrix().Data) {
			t.Fatalf("round trip changed the values: %v → %v", x.RawMatrix().Data, y.RawMatrix().Data)
		}
	})
}

func sameValues(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] && !(a[i] != a[i] && b[i] != b[i]) {
			return false
		}
	}
	return true
}
