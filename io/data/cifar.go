package data

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"

	"gonum.org/v1/gonum/mat"
)

// CIFAR-10's binary format: each record is 1 label byte (0..9) then 3,072
// pixel bytes, the 1,024 red values first, then green, then blue, each
// channel in row-major order over 32×32.
const (
	cifarSide   = 32
	cifarPixels = 3 * cifarSide * cifarSide
	cifarRecord = 1 + cifarPixels
)

// CIFAR10Classes are CIFAR-10's class names by label.
var CIFAR10Classes = []string{"airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck"}

// ReadCIFAR10 reads one CIFAR-10 binary batch (data_batch_k.bin or
// test_batch.bin of the "binary version"; 10,000 records each, though any
// whole number of records is accepted), gzip-compressed or not.
func ReadCIFAR10(r io.Reader, name string) (*Images, error) {
	br, err := maybeGzip(r, name)
	if err != nil {
		return nil, err
	}
	im := &Images{Channels: 3, Height: cifarSide, Width: cifarSide, Levels: 256, Classes: 10}
	var x []float64
	rec := make([]byte, cifarRecord)
	for i := 0; ; i++ {
		n, err := io.ReadFull(br, rec)
		if err == io.EOF {
			break
		}
		if err != nil {
			if errors.Is(err, io.ErrUnexpectedEOF) {
				return nil, &FormatError{File: name, Field: fmt.Sprintf("record %d", i), Got: fmt.Sprintf("%d bytes", n), Want: fmt.Sprintf("%d bytes (1 label + 3×32×32 pixels); the file is truncated or not CIFAR-10 binary", cifarRecord)}
			}
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		if rec[0] > 9 {
			return nil, &FormatError{File: name, Field: fmt.Sprintf("record %d label", i), Got: fmt.Sprint(rec[0]), Want: "a class 0..9 (CIFAR-100 files have two label bytes and are not supported)"}
		}
		im.Labels = append(im.Labels, int(rec[0]))
		for _, b := range rec[1:] {
			x = append(x, float64(b))
		}
	}
	if len(im.Labels) == 0 {
		return nil, &FormatError{File: name, Field: "records", Got: "none", Want: "at least one 3,073-byte record"}
	}
	im.X = mat.NewDense(len(im.Labels), cifarPixels, x)
	return im, nil
}

// ReadCIFAR10Dir reads CIFAR-10's binary version from dir (the
// cifar-10-batches-bin folder): data_batch_1.bin … data_batch_5.bin for the
// training set, test_batch.bin for the test set.
func ReadCIFAR10Dir(dir string, test bool) (*Images, error) {
	names := []string{"data_batch_1.bin", "data_batch_2.bin", "data_batch_3.bin", "data_batch_4.bin", "data_batch_5.bin"}
	if test {
		names = []string{"test_batch.bin"}
	}
	var all *Images
	for _, n := range names {
		var im *Images
		err := openFile(filepath.Join(dir, n), func(r io.Reader, name string) error {
			var err error
			im, err = ReadCIFAR10(r, name)
			return err
		})
		if err != nil {
			return nil, err
		}
		if all == nil {
			all = im
			continue
		}
		all.Labels = append(all.Labels, im.Labels...)
		x := mat.NewDense(len(all.Labels), cifarPixels, nil)
		x.Stack(all.X, im.X)
		all.X = x
	}
	return all, nil
}
