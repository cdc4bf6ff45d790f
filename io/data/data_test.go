package data

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"
)

// cifarRecords builds n CIFAR-10 records whose pixel (c, i, j) of record k is
// (k + 3c + 5i + 7j) mod 256 and whose label is k mod 10.
func cifarRecords(n int) []byte {
	var b []byte
	for k := 0; k < n; k++ {
		b = append(b, byte(k%10))
		for c := 0; c < 3; c++ {
			for i := 0; i < 32; i++ {
				for j := 0; j < 32; j++ {
					b = append(b, byte((k+3*c+5*i+7*j)%256))
				}
			}
		}
	}
	return b
}

func gz(b []byte) []byte {
	var buf bytes.Buffer
	w := gzip.NewWriter(&buf)
	w.Write(b)
	w.Close()
	return buf.Bytes()
}

func TestReadCIFAR10Layout(t *testing.T) {
	for _, compress := range []bool{false, true} {
		raw := cifarRecords(3)
		if compress {
			raw = gz(raw)
		}
		im, err := ReadCIFAR10(bytes.NewReader(raw), "batch.bin")
		if err != nil {
			t.Fatal(err)
		}
		if r, c := im.X.Dims(); r != 3 || c != 3072 || im.Channels != 3 || im.Height != 32 || im.Width != 32 {
			t.Fatalf("shape %d×%d, %d×%d×%d", r, c, im.Channels, im.Height, im.Width)
		}
		for k := 0; k < 3; k++ {
			if im.Labels[k] != k {
				t.Errorf("record %d label %d", k, im.Labels[k])
			}
			for _, p := range [][3]int{{0, 0, 0}, {1, 2, 3}, {2, 31, 31}, {2, 0, 17}} {
				c, i, j := p[0], p[1], p[2]
				want := float64((k + 3*c + 5*i + 7*j) % 256)
				if got := im.X.At(k, c*1024+i*32+j); got != want {
					t.Errorf("record %d pixel %v = %v, want %v", k, p, got, want)
				}
			}
		}
	}
}

func TestReadCIFAR10Dir(t *testing.T) {
	dir := t.TempDir()
	for b := 1; b <= 5; b++ {
		os.WriteFile(filepath.Join(dir, fmt.Sprintf("data_batch_%d.bin", b)), cifarRecords(b), 0o644)
	}
	os.WriteFile(filepath.Join(dir, "test_batch.bin"), cifarRecords(4), 0o644)
	train, err := ReadCIFAR10Dir(dir, false)
	if err != nil {
		t.Fatal(err)
	}
	if r, _ := train.X.Dims(); r != 15 || len(train.Labels) != 15 {
		t.Errorf("training set has %d images, want 1+2+3+4+5 = 15", r)
	}
	// Batch 3's first record follows batches 1 and 2 (3 records).
	if train.X.At(3, 0) != 0 || train.Labels[3] != 0 || train.X.At(4, 0) != 1 {
		t.Error("batches not stacked in order")
	}
	test, err := ReadCIFAR10Dir(dir, true)
	if err != nil || len(test.Labels) != 4 {
		t.Fatalf("test set: %v, %v", test, err)
	}
	os.Remove(filepath.Join(dir, "data_batch_4.bin"))
	if _, err := ReadCIFAR10Dir(dir, false); err == nil || !strings.Contains(err.Error(), "data_batch_4.bin") {
		t.Errorf("missing batch: %v", err)
	}
}

func TestReadCIFAR10Errors(t *testing.T) {
	bad := cifarRecords(2)
	bad[cifarRecord] = 11 // second record's label
	for _, c := range []struct {
		name  string
		data  []byte
		field string
	}{
		{"truncated", cifarRecords(2)[:cifarRecord+100], "record 1"},
		{"label", bad, "record 1 label"},
		{"empty", nil, "no records"},
		{"bad gzip", []byte{0x1f, 0x8b, 0, 0}, "gzip header"},
	} {
		_, err := ReadCIFAR10(bytes.NewReader(c.data), "x.bin")
		var fe *FormatError
		if !errors.As(err, &fe) || fe.File != "x.bin" || fe.Field != c.field {
			t.Errorf("%s: error %v, want a FormatError on field %q of x.bin", c.name, err, c.field)
		}
	}
}

// idxFiles builds an IDX image file of n rows×cols images with pixel
// (k, p) = (k·7 + p) mod 256 and its label file with labels k mod 10.
func idxFiles(n, rows, cols int) (images, labels []byte) {
	var ib, lb bytes.Buffer
	binary.Write(&ib, binary.BigEndian, [4]uint32{idxImages, uint32(n), uint32(rows), uint32(cols)})
	binary.Write(&lb, binary.BigEndian, [2]uint32{idxLabels, uint32(n)})
	for k := 0; k < n; k++ {
		for p := 0; p < rows*cols; p++ {
			ib.WriteByte(byte((k*7 + p) % 256))
		}
		lb.WriteByte(byte(k % 10))
	}
	return ib.Bytes(), lb.Bytes()
}

func TestReadIDX(t *testing.T) {
	ib, lb := idxFiles(5, 3, 4)
	for _, compress := range []bool{false, true} {
		i, l := ib, lb
		if compress {
			i, l = gz(ib), gz(lb)
		}
		im, err := ReadIDX(bytes.NewReader(i), "img", bytes.NewReader(l), "lab")
		if err != nil {
			t.Fatal(err)
		}
		if r, c := im.X.Dims(); r != 5 || c != 12 || im.Height != 3 || im.Width != 4 || im.Levels != 256 {
			t.Fatalf("shape %d×%d", r, c)
		}
		if im.X.At(4, 11) != float64((4*7+11)%256) || im.Labels[4] != 4 {
			t.Error("wrong pixel or label")
		}
	}
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "t10k-images-idx3-ubyte.gz"), gz(ib), 0o644)
	os.WriteFile(filepath.Join(dir, "t10k-labels-idx1-ubyte"), lb, 0o644)
	if im, err := ReadMNIST(dir, true); err != nil || len(im.Labels) != 5 {
		t.Errorf("ReadMNIST: %v", err)
	}
	if _, err := ReadMNIST(dir, false); err == nil || !strings.Contains(err.Error(), "train-images-idx3-ubyte") {
		t.Errorf("missing training files: %v", err)
	}
}

func TestReadIDXErrors(t *testing.T) {
	ib, lb := idxFiles(5, 3, 4)
	badMagic := append([]byte{0, 0, 8, 1}, ib[4:]...)
	_, shortLabels := idxFiles(4, 3, 4)
	for _, c := range []struct {
		name     string
		img, lab []byte
		file     string
		field    string
	}{
		{"magic", badMagic, lb, "img", "magic number"},
		{"truncated images", ib[:len(ib)-1], lb, "img", "image 4"},
		{"short header", ib[:10], lb, "img", "header"},
		{"count", ib, shortLabels, "lab", "label count"},
		{"huge", append([]byte{0, 0, 8, 3, 0xff, 0xff, 0xff, 0xff}, ib[8:]...), lb, "img", "dimensions"},
	} {
		_, err := ReadIDX(bytes.NewReader(c.img), "img", bytes.NewReader(c.lab), "lab")
		var fe *FormatError
		if !errors.As(err, &fe) || fe.File != c.file || fe.Field != c.field {
			t.Errorf("%s: error %v, want a FormatError on field %q of %s", c.name, err, c.field, c.file)
		}
	}
}

func TestReadDigits(t *testing.T) {
	line := func(v, label int) string {
		f := make([]string, 65)
		for j := 0; j < 64; j++ {
			f[j] = fmt.Sprintf("%d.0", (v+j)%17)
		}
		f[64] = fmt.Sprint(label)
		return strings.Join(f, ",")
	}
	csv := line(0, 3) + "\n" + line(5, 9) + "\n"
	im, err := ReadDigits(bytes.NewReader(gz([]byte(csv))), "digits.csv.gz")
	if err != nil {
		t.Fatal(err)
	}
	if r, c := im.X.Dims(); r != 2 || c != 64 || im.Labels[1] != 9 || im.X.At(1, 63) != float64((5+63)%17) || im.Levels != 17 {
		t.Errorf("read %d×%d, labels %v", r, c, im.Labels)
	}
	for _, c := range []struct{ name, data, field string }{
		{"fields", "1,2,3\n", "line 1"},
		{"pixel", strings.Replace(line(0, 3), "0.0", "17", 1) + "\n", "line 1, pixel 0"},
		{"label", line(0, 3) + "\n" + line(1, 3)[:len(line(1, 3))-1] + "10\n", "line 2, label"},
		{"empty", "", "lines"},
		{"quote", "\"1,2\n", "line 1"},
	} {
		_, err := ReadDigits(strings.NewReader(c.data), "d.csv")
		var fe *FormatError
		if !errors.As(err, &fe) || fe.File != "d.csv" || fe.Field != c.field {
			t.Errorf("%s: error %v, want a FormatError on field %q", c.name, err, c.field)
		}
	}
}

// TestDebianDigits reads the real file when python3-sklearn is installed.
func TestDebianDigits(t *testing.T) {
	if _, err := os.Stat(DigitsPath); err != nil {
		cross.Skip(t, "Debian's digits file", "python3-sklearn's digits.csv.gz not installed (apt-get install python3-sklearn)")
	}
	im, err := ReadDigitsFile(DigitsPath)
	if err != nil {
		t.Fatal(err)
	}
	if r, c := im.X.Dims(); r != 1797 || c != 64 {
		t.Fatalf("%d×%d, want 1797×64", r, c)
	}
	for k, w := range im.ClassWeights() {
		if math.Abs(w-0.1) > 0.005 { // the classes hold 174 to 183 images each
			t.Errorf("class %d weight %.4f", k, w)
		}
	}
}

// TestDequantize checks the range and the mean of dequantised pixels: a
// pixel of value v becomes lo + (hi−lo)(v + U)/Levels, of mean
// lo + (hi−lo)(v + 1/2)/Levels.
func TestDequantize(t *testing.T) {
	im, err := ReadCIFAR10(bytes.NewReader(cifarRecords(200)), "b")
	if err != nil {
		t.Fatal(err)
	}
	x := im.Dequantize(rand.New(rand.NewPCG(1, 2)), -1, 1)
	var sum, want float64
	for i, v := range x.RawMatrix().Data {
		p := im.X.RawMatrix().Data[i]
		lo, hi := -1+2*p/256, -1+2*(p+1)/256
		if v < lo || v >= hi {
			t.Fatalf("pixel %v dequantised to %v, outside [%v, %v)", p, v, lo, hi)
		}
		sum += v
		want += -1 + 2*(p+0.5)/256
	}
	n := float64(len(x.RawMatrix().Data))
	// Each value's noise has sd (2/256)/√12; the mean's is that over √n.
	if se := 2.0 / 256 / math.Sqrt(12*n); math.Abs(sum/n-want/n) > 4.5*se {
		t.Errorf("mean %v, want %v ± %v", sum/n, want/n, 4.5*se)
	}
}

func TestSubsetAndWeights(t *testing.T) {
	im, _ := ReadCIFAR10(bytes.NewReader(cifarRecords(20)), "b")
	s := im.Subset([]int{3, 13, 5})
	if len(s.Labels) != 3 || s.Labels[1] != 3 || s.X.At(2, 0) != im.X.At(5, 0) {
		t.Errorf("subset labels %v", s.Labels)
	}
	w := s.ClassWeights()
	if w[3] != 2.0/3 || w[5] != 1.0/3 {
		t.Errorf("weights %v", w)
	}
}

// CSVColumns gives a header's names (trimmed, without a byte-order mark)
// and nil for a file whose first row is data.
func TestCSVColumns(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []string
	}{
		{"\uFEFFheight, weight\n1,2\n", []string{"height", "weight"}},
		{"\n\na,b,c\n", []string{"a", "b", "c"}},
		{"1,2\n3,4\n", nil},
		{"\uFEFF1,2\n", nil},
		{"", nil},
		{"1,x\n", nil}, // data with a bad field, which ReadCSV refuses
		{"x,1e400\n", nil},
		{"  \n\t\nx,y\n", []string{"x", "y"}},
	} {
		got, err := CSVColumns(strings.NewReader(c.in))
		if err != nil || strings.Join(got, "|") != strings.Join(c.want, "|") || (got == nil) != (c.want == nil) {
			t.Errorf("CSVColumns(%q) = %q, %v, want %q", c.in, got, err, c.want)
		}
	}
}

// A corrupt or truncated gzip stream is refused: ReadIDX reads each file
// to its end, which verifies the gzip checksum (I1); and so is anything
// after the declared images or labels, or after the gzip member (I2).
func TestReadIDXEnd(t *testing.T) {
	ib, lb := idxFiles(5, 3, 4)
	badCRC := gz(lb)
	badCRC[len(badCRC)-8] ^= 0xff // the CRC-32 of the trailer
	badImgCRC := gz(ib)
	badImgCRC[len(badImgCRC)-5] ^= 0x01
	_, more := idxFiles(6, 3, 4) // a sixth label, and a sixth image below
	extraLabels := append(append([]byte(nil), lb...), make([]byte, 50)...)
	cat := func(a, b []byte) []byte { return append(append([]byte(nil), a...), b...) }
	for _, c := range []struct {
		name, want string
		img, lab   []byte
	}{
		{"label CRC", "lab: gzip stream is gzip: invalid checksum", gz(ib), badCRC},
		{"image CRC", "img: gzip stream is gzip: invalid checksum", badImgCRC, gz(lb)},
		{"truncated trailer", "lab: gzip stream is unexpected EOF", gz(ib), gz(lb)[:len(gz(lb))-4]},
		{"label bytes", "lab: data is 50 more bytes after the 5 labels of the header, want the file to end there", ib, extraLabels},
		{"gzipped label bytes", "lab: data is 50 more bytes after the 5 labels", ib, gz(extraLabels)},
		{"label count", "lab: label count is 6", ib, more},
		{"extra image", "img: data is 12 more bytes after the 5 images of the header", cat(ib, ib[16:28]), lb},
		{"garbage after gzip", "lab: gzip stream is gzip: invalid header", ib, cat(gz(lb), []byte("garbage after the member"))},
		{"short garbage", "lab: gzip stream is unexpected EOF", ib, cat(gz(lb), []byte{0})},
	} {
		_, err := ReadIDX(bytes.NewReader(c.img), "img", bytes.NewReader(c.lab), "lab")
		var fe *FormatError
		if !errors.As(err, &fe) || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%s: error %v, want a FormatError starting %q", c.name, err, c.want)
		}
	}
	// ReadMNIST names the file at fault.
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "train-images-idx3-ubyte"), ib, 0o644)
	os.WriteFile(filepath.Join(dir, "train-labels-idx1-ubyte.gz"), badCRC, 0o644)
	if _, err := ReadMNIST(dir, false); err == nil || !strings.Contains(err.Error(), filepath.Join(dir, "train-labels-idx1-ubyte.gz")+": gzip stream") {
		t.Errorf("ReadMNIST: %v", err)
	}
}

// A header declaring more images than memory holds is refused before the
// data are read (a 896 KB gzip of zeros declared 1.2 million images and
// took 4 GB).
func TestReadIDXRefusesHugeCount(t *testing.T) {
	var img bytes.Buffer
	binary.Write(&img, binary.BigEndian, [4]uint32{0x803, 9_000_000, 28, 28})
	var lab bytes.Buffer
	binary.Write(&lab, binary.BigEndian, [2]uint32{0x801, 9_000_000})
	_, err := ReadIDX(&img, "imgs", &lab, "labs")
	if err == nil || !strings.Contains(err.Error(), "imgs") || !strings.Contains(err.Error(), "GB as float64") {
		t.Errorf("error %v, want the image file and the memory it would take", err)
	}
}

// Probe 54 A13: a folder holding an IDX file and its .gz read the .gz
// silently, though they held different images; the same data twice (as
// gunzip -k leaves) is read, two data sets are refused.
func TestMNISTFileAndItsGz(t *testing.T) {
	dir := t.TempDir()
	ib, lb := idxFiles(5, 4, 4)
	os.WriteFile(filepath.Join(dir, "t10k-images-idx3-ubyte"), ib, 0o644)
	os.WriteFile(filepath.Join(dir, "t10k-images-idx3-ubyte.gz"), gz(ib), 0o644)
	os.WriteFile(filepath.Join(dir, "t10k-labels-idx1-ubyte.gz"), gz(lb), 0o644)
	if im, err := ReadMNIST(dir, true); err != nil || len(im.Labels) != 5 {
		t.Fatalf("the same data twice: %v", err)
	}
	blank := append([]byte(nil), ib...)
	for i := 16; i < len(blank); i++ {
		blank[i] = 0
	}
	os.WriteFile(filepath.Join(dir, "t10k-images-idx3-ubyte.gz"), gz(blank), 0o644)
	if _, err := ReadMNIST(dir, true); err == nil || !strings.Contains(err.Error(), "t10k-images-idx3-ubyte and t10k-images-idx3-ubyte.gz in "+dir+" hold different data") {
		t.Errorf("two data sets: %v", err)
	}
	os.WriteFile(filepath.Join(dir, "t10k-images-idx3-ubyte.gz"), gz(append(ib, 7)), 0o644) // one byte longer
	if _, err := ReadMNIST(dir, true); err == nil || !strings.Contains(err.Error(), "hold different data") {
		t.Errorf("a longer .gz: %v", err)
	}
}

// Probe 54 A9: numpy.savetxt's default writes columns separated by
// spaces: its first row was taken for a header and lost, and the second
// refused. Such files are read, with a header so separated too, and tabs
// alike; a comma row among them is refused.
func TestSpaceSeparatedRows(t *testing.T) {
	for _, c := range []struct {
		text  string
		names []string
	}{
		{"6.401e-01 1.04e+00\n-2.5e-01 3\n", nil},
		{"a b\n6.401e-01 1.04e+00\n-2.5e-01 3\n", []string{"a", "b"}},
		{"a\tb\n6.401e-01\t1.04e+00\n\n-2.5e-01\t3\n", []string{"a", "b"}},
	} {
		x, err := ReadCSV(strings.NewReader(c.text), "s.txt")
		if err != nil {
			t.Fatalf("%q: %v", c.text, err)
		}
		if r, k := x.Dims(); r != 2 || k != 2 || x.At(0, 0) != 0.6401 || x.At(1, 1) != 3 {
			t.Errorf("%q: %v", c.text, x.RawMatrix().Data)
		}
		if names, err := CSVColumns(strings.NewReader(c.text)); err != nil || !slices.Equal(names, c.names) {
			t.Errorf("%q: columns %q, %v", c.text, names, err)
		}
	}
	if _, err := ReadCSV(strings.NewReader("1 2\n3,4\n"), "s.txt"); err == nil || !strings.Contains(err.Error(), "columns separated by spaces or tabs, as in the first data row") {
		t.Errorf("a comma row: %v", err)
	}
	if _, err := ReadCSV(strings.NewReader("1 2\n3 4 5\n"), "s.txt"); err == nil || !strings.Contains(err.Error(), "3 fields") {
		t.Errorf("a longer row: %v", err)
	}
}

// Probe 54 A12: the global scale of columns at 1e±300 was +Inf or 0 (the
// mean of their variances left float64's range); it is their root mean
// square.
func TestGlobalScaleAtTheEdges(t *testing.T) {
	for _, c := range []float64{1e300, 1e-300} {
		x := mat.NewDense(4, 2, []float64{-c, 2 * c, c, -2 * c, -c, 2 * c, c, -2 * c})
		s, err := Standardize(x, Global)
		if err != nil {
			t.Fatal(err)
		}
		want := math.Sqrt(2.5) * c * 2 / math.Sqrt(3) // sds c·√(4/3) and 2c·√(4/3)
		if r := math.Abs(s.Scale[0]-want) / want; !(r < 1e-14) {
			t.Errorf("scale %g: %g, want %g", c, s.Scale[0], want)
		}
	}
}

// Probe 55 A6: a one-row file of numbers separated by ';' (one start for
// every chain) was "a header alone", without the separator's hint.
func TestOneRowOtherSeparator(t *testing.T) {
	for _, text := range []string{"0.5;0.5\n", "0.5|0.25\n"} {
		if _, err := ReadCSV(strings.NewReader(text), "s.csv"); err == nil || !strings.Contains(err.Error(), "numbers separated by commas (or spaces): this line holds") {
			t.Errorf("%q: %v", text, err)
		}
	}
	if _, err := ReadCSV(strings.NewReader("a;b\n"), "h.csv"); err == nil || !strings.Contains(err.Error(), "holds a header alone") {
		t.Errorf("a header alone: %v", err)
	}
}

// Probe 55 A9: a header that is not UTF-8 (Latin-1's é) was taken, its
// byte dropped from the names; it is refused, with the way to convert.
func TestHeaderNotUTF8(t *testing.T) {
	text := "vitesse_\xe9,dur\xe9e\n1,2\n3,4\n"
	if _, err := ReadCSV(strings.NewReader(text), "l.csv"); err == nil || !strings.Contains(err.Error(), "not UTF-8") {
		t.Errorf("ReadCSV: %v", err)
	}
	if _, err := CSVColumns(strings.NewReader(text)); err == nil || !strings.Contains(err.Error(), "iconv -f latin1 -t utf-8") {
		t.Errorf("CSVColumns: %v", err)
	}
}

// Probe 56 A4: pandas' header of unnamed columns, "0,1,2,3", was read as
// a point: energy gave 4 energies for 3 rows, train one row too many. It
// is a header above rows that are not all integers; integer data keep it.
//
// Probes 65, 66: such a row is as likely the point (0, 1, …): over decimals
// it was dropped, over integers read as a point, each unsaid; both are
// refused, saying how to tell them apart.
func TestPandasNumberedHeader(t *testing.T) {
	for _, text := range []string{"0,1,2,3\n0.5,1,2,3\n1.5,2,3,4\n2.5,3,4,5\n", "0,1\n2,3\n4,5\n", "0,1,2\n5,6,7\n8,9,10\n"} {
		_, err := ReadCSV(strings.NewReader(text), "p.csv")
		if err == nil || !strings.Contains(err.Error(), "reads as pandas' header of unnamed columns") {
			t.Errorf("%q: %v", text, err)
		}
	}
	x, err := ReadCSV(strings.NewReader("x0,x1\n0,1\n2,3\n"), "p.csv")
	if err != nil || x.RawMatrix().Rows != 2 {
		t.Errorf("named header: %v", err)
	}
}

// Probe 62 B1: pandas' to_csv with its index (",x1,x2" above "0,…") was
// read with the row numbers as a column of data: train --data trained a
// 3-D model at exit 0. An empty column name is refused, saying so (R's
// write.csv writes its row names under "" alike).
func TestIndexColumnRefused(t *testing.T) {
	for text, advice := range map[string]string{",x1,x2\n0,0.5,1.5\n1,-0.5,2.5\n": "index=False", "\"\",\"x1\",\"x2\"\n\"1\",0.5,1.5\n\"2\",-0.5,2.5\n": "row.names=FALSE",
		// Probe 63 B6: the index advice was given for any column.
		"x1,x2,\n0.5,1.5,\n-0.5,2.5,\n": "a comma at the end of the header line", "x1,,x3\n0.5,1.5,1\n-0.5,2.5,1\n": "column 2"} {
		_, err := ReadCSV(strings.NewReader(text), "p.csv")
		if err == nil || !strings.Contains(err.Error(), "an empty column name") || !strings.Contains(err.Error(), advice) ||
			(advice != "index=False" && advice != "row.names=FALSE" && strings.Contains(err.Error(), "index=False")) {
			t.Errorf("%q: %v", text, err)
		}
	}
}

// Probe 65 B1: a header-less file whose first point is (0, 1) lost it, read
// as pandas' header of unnamed columns (energy wrote 2 energies for 3
// points, each beside the wrong point); at d = 2 the two readings are
// told apart by the file or refused, never dropped unsaid.
func TestZeroOneFirstRowAtTwoColumns(t *testing.T) {
	_, err := ReadCSV(strings.NewReader("0,1\n0.5,0.5\n2,2\n"), "p.csv")
	if err == nil || !strings.Contains(err.Error(), "write the point with decimals (0.0,1.0,…)") {
		t.Errorf("0,1 first: %v", err)
	}
	for text, rows := range map[string]int{"0.0,1.0\n0.5,0.5\n2,2\n": 3, "x1,x2\n0,1\n0.5,0.5\n": 2} {
		x, err := ReadCSV(strings.NewReader(text), "p.csv")
		if err != nil || x.RawMatrix().Rows != rows {
			t.Errorf("%q: %v", text, err)
		}
	}
}

// Probe 65 B4: pandas' missing values (empty fields) and R's (NA) were
// refused as "want a decimal number" even where --drop-nonfinite drops
// rows with NaN; the message says what they are and how to write them.
func TestMissingValuesMessage(t *testing.T) {
	for _, text := range []string{"x1,x2\n0.5,1\n,2\n", "x1,x2\n0.5,1\nNA,2\n"} {
		_, err := ReadCSV(strings.NewReader(text), "p.csv")
		if err == nil || !strings.Contains(err.Error(), `this is a missing value`) || !strings.Contains(err.Error(), `na_rep="nan"`) {
			t.Errorf("%q: %v", text, err)
		}
	}
}

// Probe 65 (cosmetic): MNIST files named the Kaggle way
// (train-images.idx3-ubyte) were not found, and the message did not say
// they were seen; they are read.
func TestMNISTFilesKaggleNames(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []string{"train-images.idx3-ubyte", "train-labels.idx1-ubyte"} {
		if err := os.WriteFile(filepath.Join(dir, n), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	images, labels, err := MNISTFiles(dir, false)
	if err != nil || filepath.Base(images) != "train-images.idx3-ubyte" || filepath.Base(labels) != "train-labels.idx1-ubyte" {
		t.Errorf("%s %s %v", images, labels, err)
	}
	if _, _, err := MNISTFiles(dir, true); err == nil || !strings.Contains(err.Error(), "t10k-images.idx3-ubyte (Kaggle's name)") {
		t.Errorf("test set: %v", err)
	}
}

// Probe 66 B5: a comma at the end of every row was called a missing value,
// with advice that would add a column or drop every row.
func TestTrailingCommaRows(t *testing.T) {
	_, err := ReadCSV(strings.NewReader("1,2,\n3,4,\n"), "p.csv")
	if err == nil || !strings.Contains(err.Error(), "remove the trailing commas") || strings.Contains(err.Error(), "missing value") {
		t.Errorf("%v", err)
	}
}
