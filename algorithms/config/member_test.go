package config

import (
	"path/filepath"
	"testing"

	"github.com/flowebm/flowebm/io/npy"
	"github.com/flowebm/flowebm/io/npz"
)

// Member is the key given, or an .npz's first member, read from the path
// given (a moved copy); "" for other files and unreadable archives.
func TestDataMember(t *testing.T) {
	dir := t.TempDir()
	a := &npy.Array{Shape: []int{2, 2}, Data: []float64{1, 2, 3, 4}}
	ab, bc := filepath.Join(dir, "ab.npz"), filepath.Join(dir, "bc.npz")
	if err := npz.WriteFile(ab, map[string]*npy.Array{"a": a, "b": a}, npy.Float64); err != nil {
		t.Fatal(err)
	}
	if err := npz.WriteFile(bc, map[string]*npy.Array{"b": a, "c": a}, npy.Float64); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		d    Data
		path string
		want string
	}{
		{Data{File: ab}, ab, "a"},
		{Data{File: ab}, bc, "b"}, // the file given is read
		{Data{File: ab, Key: "b"}, ab, "b"},
		{Data{File: ab}, filepath.Join(dir, "missing.npz"), ""},
		{Data{File: filepath.Join(dir, "x.npy")}, ab, ""},
		{Data{File: filepath.Join(dir, "x.npy"), Key: "k"}, ab, "k"},
	} {
		if got := c.d.Member(c.path); got != c.want {
			t.Errorf("%+v.Member(%s) = %q, want %q", c.d, c.path, got, c.want)
		}
	}
}
