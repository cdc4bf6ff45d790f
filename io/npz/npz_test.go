package npz

import (
	"archive/zip"
	"bytes"
	"compress/flate"
	"fmt"
	"hash/crc32"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/flowebm/flowebm/io/npy"
)

func sample() map[string]*npy.Array {
	return map[string]*npy.Array{
		"net.0.weight": {Shape: []int{3, 2}, Data: []float64{1, 2, 3, 4, 5, 6}},
		"net.0.bias":   {Shape: []int{3}, Data: []float64{-0.5, 0, 0.5}},
		"step":         {Shape: []int{}, Data: []float64{7}},
	}
}

func TestRoundTrip(t *testing.T) {
	for _, d := range []npy.Dtype{npy.Float64, npy.Float32} {
		var buf bytes.Buffer
		if err := Write(&buf, sample(), d); err != nil {
			t.Fatal(err)
		}
		a, err := Read(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(a.Names, []string{"net.0.bias", "net.0.weight", "step"}) {
			t.Errorf("names %v", a.Names)
		}
		for n, want := range sample() {
			got, err := a.Get(n)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got.Data, want.Data) || len(got.Shape) != len(want.Shape) || got.Dtype != d.String() {
				t.Errorf("%s %v: %+v, want %+v", d, n, got, want)
			}
		}
		if _, err := a.Get("missing"); err == nil || !strings.Contains(err.Error(), "net.0.bias") {
			t.Errorf("missing member: %v", err)
		}
	}
}

// TestNumPyInterop checks numpy.load reads our archives and that we read
// numpy.savez_compressed's. Skipped without NumPy under /usr/bin/python3.
func TestNumPyInterop(t *testing.T) {
	if exec.Command("/usr/bin/python3", "-c", "import numpy").Run() != nil {
		cross.Skip(t, "NumPy interop", "no NumPy under /usr/bin/python3 (apt-get install python3-numpy)")
	}
	dir := t.TempDir()
	ours := filepath.Join(dir, "ours.npz")
	if err := WriteFile(ours, sample(), npy.Float32); err != nil {
		t.Fatal(err)
	}
	theirs := filepath.Join(dir, "theirs.npz")
	script := `import sys, numpy as np
z = np.load(sys.argv[1])
assert sorted(z.files) == ["net.0.bias", "net.0.weight", "step"], z.files
assert z["net.0.weight"].dtype == np.float32 and z["net.0.weight"].shape == (3, 2)
assert (z["net.0.weight"] == np.arange(1, 7).reshape(3, 2)).all()
assert z["step"].shape == () and z["step"] == 7
np.savez_compressed(sys.argv[2], W=np.asfortranarray(np.arange(6.0).reshape(2, 3)), n=np.int32(3))
`
	if out, err := exec.Command("/usr/bin/python3", "-c", script, ours, theirs).CombinedOutput(); err != nil {
		t.Fatalf("NumPy: %v\n%s", err, out)
	}
	a, err := ReadFile(theirs)
	if err != nil {
		t.Fatal(err)
	}
	w, _ := a.Get("W")
	if !reflect.DeepEqual(w.Data, []float64{0, 1, 2, 3, 4, 5}) || !reflect.DeepEqual(w.Shape, []int{2, 3}) {
		t.Errorf("W = %+v", w)
	}
}

func TestReadErrorsNameTheFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bad.npz")
	os.WriteFile(path, []byte("not a zip"), 0o644)
	if _, err := ReadFile(path); err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "not a zip") {
		t.Errorf("error %v", err)
	}
}

// FuzzRead: no archive bytes make Read panic.
func FuzzRead(f *testing.F) {
	var buf bytes.Buffer
	Write(&buf, sample(), npy.Float64)
	f.Add(buf.Bytes())
	f.Add([]byte("PK\x05\x06" + strings.Repeat("\x00", 18)))
	f.Fuzz(func(t *testing.T, b []byte) {
		a, err := Read(bytes.NewReader(b), int64(len(b)))
		if err == nil && len(a.Names) != len(a.Arrays) {
			t.Fatal("names and arrays disagree")
		}
	})
}

// A bit flip in a member's data is caught by its CRC-32, as NumPy catches
// it ("Bad CRC-32"); before, it loaded silently.
func TestReadChecksCRC(t *testing.T) {
	var buf bytes.Buffer
	a := &npy.Array{Shape: []int{4}, Data: []float64{1, 2, 3, 4}}
	if err := Write(&buf, map[string]*npy.Array{"w": a}, npy.Float64); err != nil {
		t.Fatal(err)
	}
	b := buf.Bytes()
	i := bytes.Index(b, []byte{0, 0, 0, 0, 0, 0, 0x08, 0x40}) // 3.0 in little-endian float64
	if i < 0 {
		t.Fatal("value not found")
	}
	b[i+7] ^= 0x01
	_, err := Read(bytes.NewReader(b), int64(len(b)))
	if err == nil || !strings.Contains(err.Error(), `member "w.npy": CRC-32 does not match`) {
		t.Errorf("flipped bit: %v", err)
	}
}

// An encrypted member, and a local header naming another member than the
// central directory does, are refused as Python's zipfile refuses them.
func TestReadRefusesWhatZipfileRefuses(t *testing.T) {
	content := npyBytes(t, &npy.Array{Shape: []int{2}, Data: []float64{1, 2}})
	b := rawArchive(t, raw{"a.npy", zip.Store, content, uint64(len(content))})
	if _, err := Read(bytes.NewReader(b), int64(len(b))); err != nil {
		t.Fatal(err)
	}
	renamed := bytes.Clone(b)
	renamed[30] = 'b' // the local header's name: "b.npy"
	if _, err := Read(bytes.NewReader(renamed), int64(len(renamed))); err == nil || !strings.Contains(err.Error(), `member "a.npy": its local header names it "b.npy"`) {
		t.Errorf("renamed local header: %v", err)
	}
	cd := bytes.LastIndex(b, []byte("PK\x01\x02"))
	for _, bit := range []byte{1, 0x40} { // traditional, strong encryption
		encrypted := bytes.Clone(b)
		encrypted[cd+8] |= bit // the central directory's flags
		if _, err := Read(bytes.NewReader(encrypted), int64(len(encrypted))); err == nil || !strings.Contains(err.Error(), `member "a.npy" is encrypted`) {
			t.Errorf("encrypted flag %#x: %v", bit, err)
		}
	}
}

// A stored CRC-32 of 0 is checked too (archive/zip skips its own check
// then; Python's zipfile refuses the file: "Bad CRC-32").
func TestReadChecksZeroCRC(t *testing.T) {
	content := npyBytes(t, &npy.Array{Shape: []int{2}, Data: []float64{1, 2}})
	var buf bytes.Buffer
	z := zip.NewWriter(&buf)
	w, err := z.CreateRaw(&zip.FileHeader{Name: "x.npy", Method: zip.Store, CRC32: 0,
		CompressedSize64: uint64(len(content)), UncompressedSize64: uint64(len(content))})
	if err != nil {
		t.Fatal(err)
	}
	w.Write(content)
	z.Close()
	b := buf.Bytes()
	if _, err := Read(bytes.NewReader(b), int64(len(b))); err == nil || !strings.Contains(err.Error(), "CRC-32 does not match (stored 00000000") {
		t.Errorf("stored CRC-32 0: %v", err)
	}
}

// rawMember writes one stored member with the given content and declared
// uncompressed size (which may lie).
func rawMember(t *testing.T, content []byte, declared uint64) []byte {
	return rawArchive(t, raw{"x.npy", zip.Store, content, declared})
}

// raw is a member as stored: data is written as it is (already
// compressed for Deflate), with the given declared uncompressed size.
type raw struct {
	name     string
	method   uint16
	data     []byte
	declared uint64
}

// rawArchive writes the members into a zip archive; the CRC-32 is that of
// the data (right for stored members only).
func rawArchive(t *testing.T, members ...raw) []byte {
	var buf bytes.Buffer
	z := zip.NewWriter(&buf)
	for _, m := range members {
		w, err := z.CreateRaw(&zip.FileHeader{Name: m.name, Method: m.method, CRC32: crc32.ChecksumIEEE(m.data),
			CompressedSize64: uint64(len(m.data)), UncompressedSize64: m.declared})
		if err != nil {
			t.Fatal(err)
		}
		w.Write(m.data)
	}
	z.Close()
	return buf.Bytes()
}

// npyBytes is a as a .npy stream of float64.
func npyBytes(t *testing.T, a *npy.Array) []byte {
	var buf bytes.Buffer
	if err := npy.Write(&buf, a, npy.Float64); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// Decompression is bounded by the declared and the actual sizes: a header
// announcing more data than the member declares, a declared size over the
// limit, and a stream longer than declared are refused before the data
// are decoded.
func TestReadBoundsMembers(t *testing.T) {
	var hdr bytes.Buffer
	if err := npy.Write(&hdr, &npy.Array{Shape: []int{2}, Data: []float64{1, 2}}, npy.Float64); err != nil {
		t.Fatal(err)
	}
	small := hdr.Bytes()
	huge := bytes.Replace(small, []byte("(2,)"), []byte("(268435456, 1024)"), 1)
	cases := []struct {
		name string
		b    []byte
		want string
	}{
		{"header lies", rawMember(t, huge, uint64(len(huge))), "more data than the member's declared"},
		{"declared too large", rawMember(t, small, 5<<30), "declared uncompressed size 5368709120 bytes, more than the"},
		{"stream longer than declared", rawMember(t, append(append([]byte(nil), small...), make([]byte, 64)...), uint64(len(small))), "zip"},
	}
	for _, c := range cases {
		_, err := Read(bytes.NewReader(c.b), int64(len(c.b)))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
}

// A Reader decodes only the members asked for: reading 'a' from an archive
// whose 'b' declares 1.6 GB of zeros (a zip bomb, cut short here) does not
// touch 'b', where Read decoded every member (5.5 GB for the real bomb).
func TestReaderDecodesOnlyWhatIsAsked(t *testing.T) {
	a := npyBytes(t, &npy.Array{Shape: []int{2, 2}, Data: []float64{1, 2, 3, 4}})
	bomb := bytes.Replace(npyBytes(t, &npy.Array{Shape: []int{2}, Data: []float64{0, 0}}), []byte("(2,), }        "), []byte("(200000000,), }"), 1)
	var def bytes.Buffer
	fw, _ := flate.NewWriter(&def, flate.BestCompression)
	fw.Write(append(bomb, make([]byte, 1<<16)...)) // the first 64 KiB of 1.6 GB of zeros
	fw.Close()
	b := rawArchive(t, raw{"a.npy", zip.Store, a, uint64(len(a))}, raw{"b.npy", zip.Deflate, def.Bytes(), 1600000128})
	path := filepath.Join(t.TempDir(), "bomb.npz")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	zr, err := OpenReader(path)
	if err != nil {
		t.Fatal(err)
	}
	defer zr.Close()
	if !reflect.DeepEqual(zr.Names, []string{"a", "b"}) {
		t.Errorf("names %v", zr.Names)
	}
	h, err := zr.Header("a")
	if err != nil || !reflect.DeepEqual(h.Shape, []int{2, 2}) {
		t.Errorf("header of a: %+v, %v", h, err)
	}
	got, err := zr.Get("a")
	if err != nil || !reflect.DeepEqual(got.Data, []float64{1, 2, 3, 4}) {
		t.Errorf("a: %+v, %v", got, err)
	}
	if _, err := zr.Get("b"); err == nil || !strings.HasPrefix(err.Error(), path+`: npz: member "b.npy": data end after`) {
		t.Errorf("b: %v, want an error naming the file and member", err)
	}
	if _, err := zr.Get("c"); err == nil || !strings.Contains(err.Error(), path+`: npz: no member "c" (have "a", "b")`) {
		t.Errorf("c: %v", err)
	}
	if _, err := ReadFile(path); err == nil || !strings.Contains(err.Error(), `member "b.npy"`) {
		t.Errorf("ReadFile decodes every member: %v", err)
	}
}

// Decompression stops at the declared size: a deflated member that
// inflates to 1 MB but declares 200 bytes is refused.
func TestReadBoundsInflation(t *testing.T) {
	content := append(npyBytes(t, &npy.Array{Shape: []int{2}, Data: []float64{1, 2}}), make([]byte, 1<<20)...)
	var def bytes.Buffer
	fw, _ := flate.NewWriter(&def, flate.BestCompression)
	fw.Write(content)
	fw.Close()
	b := rawArchive(t, raw{"x.npy", zip.Deflate, def.Bytes(), 200})
	_, err := Read(bytes.NewReader(b), int64(len(b)))
	if err == nil || !strings.Contains(err.Error(), `member "x.npy": decompresses to more than its declared 200 bytes`) {
		t.Errorf("%v", err)
	}
}

// An unsupported dtype is reported as such, not as a size mismatch.
func TestReadNamesUnsupportedDtype(t *testing.T) {
	for _, descr := range []string{"<c16", "<U1"} {
		content := bytes.Replace(npyBytes(t, &npy.Array{Shape: []int{5, 2}, Data: make([]float64, 10)}), []byte("'<f8'"), []byte("'"+descr+"'"), 1)
		content = content[:len(content)-16] // as much data as the file has
		b := rawMember(t, content, uint64(len(content)))
		_, err := Read(bytes.NewReader(b), int64(len(b)))
		want := `member "x.npy": npy: header field 'descr' is "` + descr + `", want float32 or float64`
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", descr, err, want)
		}
	}
}

// A member whose data end before its declared size says so (before:
// "unexpected EOF"), whether the data or the check after them meet the end.
func TestReadNamesShortMember(t *testing.T) {
	content := npyBytes(t, &npy.Array{Shape: []int{2}, Data: []float64{1, 2}})
	for _, c := range []struct {
		name string
		data []byte
		want string
	}{
		{"after the data", content, "data end after 144 bytes, shorter than the member's declared uncompressed size of 4294967280 bytes"},
		{"within the data", content[:136], "data end after 136 bytes, shorter than the member's declared uncompressed size of 4294967280 bytes"},
	} {
		b := rawMember(t, c.data, 0xFFFFFFF0)
		_, err := Read(bytes.NewReader(b), int64(len(b)))
		if err == nil || !strings.Contains(err.Error(), `member "x.npy": `+c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
}

// A missing member's error lists the first few members and their count.
func TestGetClipsMemberList(t *testing.T) {
	arrays := map[string]*npy.Array{}
	for i := range 20 {
		arrays[fmt.Sprintf("m%02d", i)] = &npy.Array{Shape: []int{1}, Data: []float64{0}}
	}
	var buf bytes.Buffer
	if err := Write(&buf, arrays, npy.Float32); err != nil {
		t.Fatal(err)
	}
	a, err := Read(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	if err != nil {
		t.Fatal(err)
	}
	want := `npz: no member "x" (have "m00", "m01", "m02", "m03", "m04", "m05", "m06", "m07", … (20 in all))`
	if _, err := a.Get("x"); err == nil || err.Error() != want {
		t.Errorf("%v, want %s", err, want)
	}
}

// Probe 27: member names quoted in an error were cut mid-character.
func TestQuotedNamesKeepWholeCharacters(t *testing.T) {
	got := quoteList([]string{strings.Repeat("名前", 10)})
	if !utf8.ValidString(got) || !strings.Contains(got, strings.Repeat("名前", 6)+"名…") {
		t.Errorf("%q", got)
	}
}
