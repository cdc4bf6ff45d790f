package npz

import (
	"archive/zip"
	"bytes"
	"hash/crc32"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

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

// rawMember writes one stored member with the given content and declared
// uncompressed size (which may lie).
func rawMember(t *testing.T, content []byte, declared uint64) []byte {
	var buf bytes.Buffer
	z := zip.NewWriter(&buf)
	w, err := z.CreateRaw(&zip.FileHeader{Name: "x.npy", Method: zip.Store, CRC32: crc32.ChecksumIEEE(content),
		CompressedSize64: uint64(len(content)), UncompressedSize64: declared})
	if err != nil {
		t.Fatal(err)
	}
	w.Write(content)
	z.Close()
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
