package data

import (
	"errors"
	"fmt"
	"io"
	"os"
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
	// cifarBatch is the number of records in each of CIFAR-10's batch
	// files; a batch holding more is not CIFAR-10, and is refused before
	// its records are held in memory.
	cifarBatch = 10_000
)

// CIFAR10Classes are CIFAR-10's class names by label.
var CIFAR10Classes = []string{"airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck"}

// ReadCIFAR10 reads one CIFAR-10 binary batch (data_batch_k.bin or
// test_batch.bin of the "binary version"; 10,000 records each, though any
// whole number of records from 1 to 10,000 is accepted), gzip-compressed or
// not.
func ReadCIFAR10(r io.Reader, name string) (*Images, error) {
	labels, px, err := readCIFAR10(r, name, nil, nil)
	if err != nil {
		return nil, err
	}
	return cifarImages(labels, px), nil
}

// readCIFAR10 reads one CIFAR-10 binary batch, appending its labels and
// pixel bytes to labels and px.
func readCIFAR10(r io.Reader, name string, labels []int, px []byte) ([]int, []byte, error) {
	br, err := maybeGzip(r, name)
	if err != nil {
		return nil, nil, err
	}
	rec := make([]byte, cifarRecord)
	for i := 0; ; i++ {
		n, err := io.ReadFull(br, rec)
		if err == io.EOF {
			if i == 0 {
				return nil, nil, &FormatError{File: name, Field: "no records", Want: "at least one 3,073-byte record (1 label + 3×32×32 pixels)"}
			}
			return labels, px, nil
		}
		if err != nil {
			if errors.Is(err, io.ErrUnexpectedEOF) {
				return nil, nil, &FormatError{File: name, Field: fmt.Sprintf("record %d", i), Got: fmt.Sprintf("%d bytes", n), Want: fmt.Sprintf("%d bytes (1 label + 3×32×32 pixels); the file is truncated or not CIFAR-10 binary", cifarRecord)}
			}
			return nil, nil, fmt.Errorf("%s: %w", name, err)
		}
		if i == cifarBatch {
			return nil, nil, &FormatError{File: name, Field: "records", Got: "more than 10,000", Want: cifarBatchWant}
		}
		if rec[0] > 9 {
			return nil, nil, &FormatError{File: name, Field: fmt.Sprintf("record %d label", i), Got: fmt.Sprint(rec[0]), Want: "a class 0..9 (CIFAR-100 files have two label bytes and are not supported)"}
		}
		labels = append(labels, int(rec[0]))
		px = append(px, rec[1:]...)
	}
}

// cifarImages makes CIFAR-10 images of labels and their pixel bytes,
// converted to float64 in one allocation.
func cifarImages(labels []int, px []byte) *Images {
	return &Images{Channels: 3, Height: cifarSide, Width: cifarSide, Levels: 256, Classes: 10,
		Labels: labels, X: mat.NewDense(len(labels), cifarPixels, bytesToFloats(px))}
}

// ReadCIFAR10Dir reads CIFAR-10's binary version from dir (the
// cifar-10-batches-bin folder): data_batch_1.bin … data_batch_5.bin for the
// training set, test_batch.bin for the test set. The batches' bytes are
// gathered first and converted to float64 once (1.2 GB for the training
// set), so that no partial copies are held beside it.
func ReadCIFAR10Dir(dir string, test bool) (*Images, error) {
	names := CIFAR10BatchNames(test)
	var labels []int
	var px []byte
	for _, n := range names {
		if err := checkCIFARSize(filepath.Join(dir, n)); err != nil {
			return nil, err
		}
		err := openFile(filepath.Join(dir, n), func(r io.Reader, name string) error {
			var err error
			labels, px, err = readCIFAR10(r, name, labels, px)
			return err
		})
		if err != nil {
			return nil, err
		}
	}
	return cifarImages(labels, px), nil
}

// cifarBatchWant says what a CIFAR-10 batch file holds.
const cifarBatchWant = "at most 10,000 records of 3,073 bytes (30,730,000 bytes), CIFAR-10's batch size"

// checkCIFARSize refuses a batch file larger than CIFAR-10's batches before
// it is read (a gzip-compressed batch is smaller still); the reader also
// counts the records, for compressed files.
func checkCIFARSize(path string) error {
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	if fi.Mode().IsRegular() && fi.Size() > cifarBatch*cifarRecord {
		return &FormatError{File: path, Field: "size", Got: fmt.Sprintf("%d bytes", fi.Size()), Want: cifarBatchWant}
	}
	return nil
}

// CIFAR10BatchNames are the files of CIFAR-10's binary version: the five
// training batches, or the test batch.
func CIFAR10BatchNames(test bool) []string {
	if test {
		return []string{"test_batch.bin"}
	}
	return []string{"data_batch_1.bin", "data_batch_2.bin", "data_batch_3.bin", "data_batch_4.bin", "data_batch_5.bin"}
}
