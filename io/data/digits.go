package data

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"strconv"

	"gonum.org/v1/gonum/mat"
)

// DigitsPath is where Debian's python3-sklearn installs the 8×8 digits
// (UCI "Optical Recognition of Handwritten Digits", CC BY 4.0).
const DigitsPath = "/usr/lib/python3/dist-packages/sklearn/datasets/data/digits.csv.gz"

// ReadDigits reads scikit-learn's digits.csv(.gz): one image per line, 64
// pixel values 0..16 (8×8, row-major) then the label 0..9.
func ReadDigits(r io.Reader, name string) (*Images, error) {
	br, err := maybeGzip(r, name)
	if err != nil {
		return nil, err
	}
	cr := csv.NewReader(br)
	cr.FieldsPerRecord = -1
	cr.ReuseRecord = true
	im := &Images{Channels: 1, Height: 8, Width: 8, Levels: 17, Classes: 10}
	var x []float64
	for line := 1; ; line++ {
		rec, err := cr.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			var pe *csv.ParseError
			if errors.As(err, &pe) {
				return nil, &FormatError{File: name, Field: fmt.Sprintf("line %d", pe.Line), Got: pe.Err.Error(), Want: "comma-separated numbers"}
			}
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		if len(rec) != 65 {
			return nil, &FormatError{File: name, Field: fmt.Sprintf("line %d", line), Got: fmt.Sprintf("%d fields", len(rec)), Want: "65 fields: 64 pixels 0..16, then the label"}
		}
		for j, s := range rec {
			v, err := strconv.ParseFloat(s, 64)
			hi := 16.0
			if j == 64 {
				hi = 9
			}
			if err != nil || v < 0 || v > hi || v != float64(int(v)) {
				field := fmt.Sprintf("line %d, pixel %d", line, j)
				if j == 64 {
					field = fmt.Sprintf("line %d, label", line)
				}
				return nil, &FormatError{File: name, Field: field, Got: strconv.Quote(s), Want: fmt.Sprintf("an integer 0..%g", hi)}
			}
			if j == 64 {
				im.Labels = append(im.Labels, int(v))
			} else {
				x = append(x, v)
			}
		}
	}
	if len(im.Labels) == 0 {
		return nil, &FormatError{File: name, Field: "lines", Got: "none", Want: "at least one image"}
	}
	im.X = mat.NewDense(len(im.Labels), 64, x)
	return im, nil
}

// ReadDigitsFile reads the digits from path (DigitsPath on Debian with
// python3-sklearn).
func ReadDigitsFile(path string) (*Images, error) {
	var im *Images
	err := openFile(path, func(r io.Reader, name string) error {
		var err error
		im, err = ReadDigits(r, name)
		return err
	})
	return im, err
}
