package data

import (
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"gonum.org/v1/gonum/mat"
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
	r, err := maybeGzip(images, imagesName)
	if err != nil {
		return nil, err
	}
	var h [4]uint32
	if err := binary.Read(r, binary.BigEndian, &h); err != nil {
		return nil, &FormatError{File: imagesName, Field: "header", Want: "16 bytes: magic, count, rows, columns (" + err.Error() + ")"}
	}
	if h[0] != idxImages {
		return nil, &FormatError{File: imagesName, Field: "magic number", Got: fmt.Sprintf("%#08x", h[0]), Want: "0x00000803 (IDX unsigned bytes, rank 3)"}
	}
	n, rows, cols := int(h[1]), int(h[2]), int(h[3])
	if n < 1 || n > maxIDXItems || rows < 1 || cols < 1 || rows > 1<<20 || cols > 1<<20 || rows*cols > 1<<20 {
		return nil, &FormatError{File: imagesName, Field: "dimensions", Got: fmt.Sprintf("%d × %d × %d", n, rows, cols), Want: fmt.Sprintf("1 to %d images of at most 2^20 pixels", maxIDXItems)}
	}
	im := &Images{Channels: 1, Height: rows, Width: cols, Levels: 256}
	// The slice grows as data arrive: a header that lies about the count
	// meets a truncation error, not a huge allocation.
	x := make([]float64, 0, min(n*rows*cols, 1<<22))
	buf := make([]byte, rows*cols)
	for i := 0; i < n; i++ {
		if _, err := io.ReadFull(r, buf); err != nil {
			return nil, &FormatError{File: imagesName, Field: fmt.Sprintf("image %d", i), Want: fmt.Sprintf("%d bytes (file truncated: %v)", rows*cols, err)}
		}
		for _, b := range buf {
			x = append(x, float64(b))
		}
	}
	im.X = mat.NewDense(n, rows*cols, x)

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
		return nil, &FormatError{File: labelsName, Field: "labels", Want: fmt.Sprintf("%d bytes (file truncated: %v)", n, err)}
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

// ReadMNIST reads MNIST or Fashion-MNIST from dir, which holds the canonical
// files train-images-idx3-ubyte[.gz], train-labels-idx1-ubyte[.gz] and the
// t10k-* pair (test set).
func ReadMNIST(dir string, test bool) (*Images, error) {
	prefix := "train"
	if test {
		prefix = "t10k"
	}
	find := func(base string) (string, error) {
		for _, p := range []string{base + ".gz", base} {
			if _, err := os.Stat(filepath.Join(dir, p)); err == nil {
				return filepath.Join(dir, p), nil
			}
		}
		return "", fmt.Errorf("data: neither %s nor %s.gz in %s", base, base, dir)
	}
	ip, err := find(prefix + "-images-idx3-ubyte")
	if err != nil {
		return nil, err
	}
	lp, err := find(prefix + "-labels-idx1-ubyte")
	if err != nil {
		return nil, err
	}
	var im *Images
	err = openFile(ip, func(ir io.Reader, iname string) error {
		return openFile(lp, func(lr io.Reader, lname string) error {
			var err error
			im, err = ReadIDX(ir, iname, lr, lname)
			return err
		})
	})
	return im, err
}
