package data

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"gonum.org/v1/gonum/mat"

	"github.com/flowebm/flowebm/internal/sysmem"
	"github.com/flowebm/flowebm/io/safefile"
)

// IDX magic numbers: 0x00000803 is an unsigned-byte array of rank 3
// (images), 0x00000801 of rank 1 (labels).
const (
	idxImages = 0x00000803
	idxLabels = 0x00000801
)

// maxIDXItems bounds the item count a header may claim (MNIST has 60,000):
// a corrupt header must not make the reader allocate gigabytes.
const maxIDXItems = 10_000_000

// ReadIDX reads an IDX image file and its IDX label file (MNIST's format:
// big-endian header, then unsigned bytes), gzip-compressed or not.
// imagesName and labelsName name the streams in errors.
func ReadIDX(images io.Reader, imagesName string, labels io.Reader, labelsName string) (*Images, error) {
	r, n, rows, cols, err := readIDXHeader(images, imagesName)
	if err != nil {
		return nil, err
	}
	im := &Images{Channels: 1, Height: rows, Width: cols, Levels: 256}
	// The bytes grow as data arrive: a header that lies about the count
	// meets a truncation error, not a huge allocation. They are converted
	// to float64 once read, in one allocation of the exact size (growing
	// float64s would hold up to twice the data set while copying).
	raw := make([]byte, 0, min(n*rows*cols, 1<<25))
	for i := 0; i < n; i++ {
		raw = slices.Grow(raw, rows*cols)
		buf := raw[len(raw) : len(raw)+rows*cols]
		if _, err := io.ReadFull(r, buf); err != nil {
			return nil, &FormatError{File: imagesName, Field: fmt.Sprintf("image %d", i), Want: fmt.Sprintf("%d bytes (%s)", rows*cols, readProblem(err))}
		}
		raw = raw[:len(raw)+rows*cols]
	}
	im.X = mat.NewDense(n, rows*cols, bytesToFloats(raw))
	if err := checkEnd(r, imagesName, fmt.Sprintf("the %d images of the header", n)); err != nil {
		return nil, err
	}

	lr, err := maybeGzip(labels, labelsName)
	if err != nil {
		return nil, err
	}
	var lh [2]uint32
	if err := binary.Read(lr, binary.BigEndian, &lh); err != nil {
		return nil, &FormatError{File: labelsName, Field: "header", Want: "8 bytes: magic, count (" + err.Error() + ")"}
	}
	if lh[0] != idxLabels {
		return nil, &FormatError{File: labelsName, Field: "magic number", Got: fmt.Sprintf("%#08x", lh[0]), Want: "0x00000801 (IDX unsigned bytes, rank 1)"}
	}
	if int(lh[1]) != n {
		return nil, &FormatError{File: labelsName, Field: "label count", Got: fmt.Sprint(lh[1]), Want: fmt.Sprintf("%d, the number of images in %s", n, imagesName)}
	}
	lb := make([]byte, n)
	if _, err := io.ReadFull(lr, lb); err != nil {
		return nil, &FormatError{File: labelsName, Field: "labels", Want: fmt.Sprintf("%d bytes (%s)", n, readProblem(err))}
	}
	if err := checkEnd(lr, labelsName, fmt.Sprintf("the %d labels of the header", n)); err != nil {
		return nil, err
	}
	im.Labels = make([]int, n)
	for i, b := range lb {
		if b > 9 {
			return nil, &FormatError{File: labelsName, Field: fmt.Sprintf("label %d", i), Got: fmt.Sprint(b), Want: "a class 0..9"}
		}
		im.Labels[i] = int(b)
	}
	im.Classes = 10
	return im, nil
}

// readIDXHeader reads the header of an IDX image file from images (named
// imagesName in errors), decompressing it if it is gzip-compressed, and
// checks its dimensions. It returns the reader of the pixels that follow.
func readIDXHeader(images io.Reader, imagesName string) (r io.Reader, n, rows, cols int, err error) {
	if r, err = maybeGzip(images, imagesName); err != nil {
		return nil, 0, 0, 0, err
	}
	var h [4]uint32
	if err := binary.Read(r, binary.BigEndian, &h); err != nil {
		return nil, 0, 0, 0, &FormatError{File: imagesName, Field: "header", Want: "16 bytes: magic, count, rows, columns (" + err.Error() + ")"}
	}
	if h[0] != idxImages {
		return nil, 0, 0, 0, &FormatError{File: imagesName, Field: "magic number", Got: fmt.Sprintf("%#08x", h[0]), Want: "0x00000803 (IDX unsigned bytes, rank 3)"}
	}
	n, rows, cols = int(h[1]), int(h[2]), int(h[3])
	if n < 1 || n > maxIDXItems || rows < 1 || cols < 1 || rows > 1<<20 || cols > 1<<20 || rows*cols > 1<<20 {
		return nil, 0, 0, 0, &FormatError{File: imagesName, Field: "dimensions", Got: fmt.Sprintf("%d × %d × %d", n, rows, cols), Want: fmt.Sprintf("1 to %d images of at most 2^20 pixels", maxIDXItems)}
	}
	// Decoded as float64, with the copies that pooling and dequantising
	// make: a small gzip of zeros can declare gigabytes.
	if need, limit := float64(n)*float64(rows*cols)*8*3, sysmem.Limit(8<<30); need > limit {
		return nil, 0, 0, 0, &FormatError{File: imagesName, Field: "dimensions", Got: fmt.Sprintf("%d × %d × %d (%.3g GB as float64, with copies)", n, rows, cols, need/1e9),
			Want: fmt.Sprintf("at most %.3g GB (%s)", limit/1e9, sysmem.Why(8<<30))}
	}
	return r, n, rows, cols, nil
}

// IDXImageSize reads only the header of the IDX image file at path and
// returns the number of images and their rows and columns, so that a
// caller can refuse images of the wrong size before reading them. Errors
// are those of ReadIDXFiles on a bad header.
func IDXImageSize(path string) (n, rows, cols int, err error) {
	err = openFile(path, func(f io.Reader, name string) error {
		_, n, rows, cols, err = readIDXHeader(f, name)
		return err
	})
	return n, rows, cols, err
}

// readProblem describes err, met while reading the content of a file.
func readProblem(err error) string {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return "file truncated: " + err.Error()
	}
	return "corrupt or unreadable file: " + err.Error()
}

// maxTrailing bounds how much trailing data checkEnd reads to count it.
const maxTrailing = 1 << 20

// checkEnd checks that nothing follows the declared content of an IDX
// file in r (content names it for errors). Reading a gzip stream to its
// end also verifies the checksum and length in its trailer and refuses
// bytes after the gzip member.
func checkEnd(r io.Reader, name, content string) error {
	n, err := io.Copy(io.Discard, io.LimitReader(r, maxTrailing+1))
	if err != nil {
		if _, ok := r.(*gzip.Reader); ok {
			return &FormatError{File: name, Field: "gzip stream", Got: err.Error(), Want: "a gzip stream that ends with its checksum and nothing after it (the file is corrupt or truncated)"}
		}
		return fmt.Errorf("%s: %w", name, err)
	}
	if n > 0 {
		more := fmt.Sprintf("%d more bytes", n)
		if n > maxTrailing {
			more = fmt.Sprintf("more than %d bytes", maxTrailing)
		}
		return &FormatError{File: name, Field: "data", Got: more + " after " + content, Want: "the file to end there"}
	}
	return nil
}

// ReadMNIST reads MNIST or Fashion-MNIST from dir, which holds the canonical
// files train-images-idx3-ubyte[.gz], train-labels-idx1-ubyte[.gz] and the
// t10k-* pair (test set).
func ReadMNIST(dir string, test bool) (*Images, error) {
	ip, lp, err := MNISTFiles(dir, test)
	if err != nil {
		return nil, err
	}
	return ReadIDXFiles(ip, lp)
}

// checkTwin refuses a file.gz read (MNISTFiles prefers it) beside a file
// that holds other data than it decompresses to (probe 54: the .gz was
// read silently); the same data twice, as gunzip -k leaves, is read.
func checkTwin(gz string) error {
	plain, ok := strings.CutSuffix(gz, ".gz")
	if !ok {
		return nil
	}
	if _, err := os.Stat(plain); err != nil {
		return nil
	}
	same, err := sameData(plain, gz)
	if err != nil {
		return fmt.Errorf("data: %s and %s are both in %s: %w", filepath.Base(plain), filepath.Base(gz), filepath.Dir(gz), err)
	}
	if !same {
		return fmt.Errorf("data: %s and %s in %s hold different data: remove the one that is not the data set", filepath.Base(plain), filepath.Base(gz), filepath.Dir(gz))
	}
	return nil
}

// MNISTFiles returns the paths of the image and label files of MNIST's
// training or test set in dir (see ReadMNIST), the compressed ones if both
// are there (ReadIDXFiles checks that they hold the same data).
func MNISTFiles(dir string, test bool) (images, labels string, err error) {
	prefix := "train"
	if test {
		prefix = "t10k"
	}
	find := func(base string) (string, error) {
		kaggle := strings.Replace(base, "-idx", ".idx", 1) // train-images.idx3-ubyte: Kaggle's copy (probe 65)
		for _, p := range []string{base + ".gz", base, kaggle + ".gz", kaggle} {
			if _, err := os.Stat(filepath.Join(dir, p)); err == nil {
				return filepath.Join(dir, p), nil
			}
		}
		return "", fmt.Errorf("data: none of %s, %s.gz, %s (Kaggle's name) in %s", base, base, kaggle, dir)
	}
	if images, err = find(prefix + "-images-idx3-ubyte"); err != nil {
		return "", "", err
	}
	if labels, err = find(prefix + "-labels-idx1-ubyte"); err != nil {
		return "", "", err
	}
	return images, labels, nil
}

// ReadIDXFiles is ReadIDX on the image and label files at the given paths;
// errors name them. A file.gz beside a file of other data is refused
// (checkTwin).
func ReadIDXFiles(images, labels string) (*Images, error) {
	for _, gz := range []string{images, labels} {
		if err := checkTwin(gz); err != nil {
			return nil, err
		}
	}
	var im *Images
	err := openFile(images, func(ir io.Reader, iname string) error {
		return openFile(labels, func(lr io.Reader, lname string) error {
			var err error
			im, err = ReadIDX(ir, iname, lr, lname)
			return err
		})
	})
	return im, err
}

// bytesToFloats returns the bytes as float64 values.
func bytesToFloats(b []byte) []float64 {
	x := make([]float64, len(b))
	for i, v := range b {
		x[i] = float64(v)
	}
	return x
}

// sameData reports whether the file plain holds what the gzip file gz
// decompresses to (read up to plain's size and a byte more).
func sameData(plain, gz string) (bool, error) {
	p, err := safefile.Open(plain)
	if err != nil {
		return false, err
	}
	defer p.Close()
	fi, err := p.Stat()
	if err != nil {
		return false, err
	}
	g, err := safefile.Open(gz)
	if err != nil {
		return false, err
	}
	defer g.Close()
	zr, err := gzip.NewReader(g)
	if err != nil {
		return false, fmt.Errorf("%s: %w", gz, err)
	}
	z := io.LimitReader(zr, fi.Size()+1)
	a, b := make([]byte, 1<<16), make([]byte, 1<<16)
	for {
		n, errA := io.ReadFull(p, a)
		m, errB := io.ReadFull(z, b)
		if n != m || !bytes.Equal(a[:n], b[:m]) {
			return false, nil
		}
		if errA != nil || errB != nil { // equal counts short of a buffer: both ended here, or a read failed
			for _, e := range []struct {
				err  error
				path string
			}{{errA, plain}, {errB, gz}} {
				if e.err != io.EOF && e.err != io.ErrUnexpectedEOF {
					return false, fmt.Errorf("%s: %w", e.path, e.err)
				}
			}
			return true, nil
		}
	}
}
