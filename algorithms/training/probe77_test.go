package training

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/flowebm/flowebm/algorithms/config"
	"github.com/flowebm/flowebm/io/npy"
	"github.com/flowebm/flowebm/io/npz"
)

// Round 77 B2: a run trained on one member of an .npz, resumed on the
// same file with --key naming another member (or with no --key, which
// read the first), went on training on other data, unsaid: the file's
// SHA-256 does not tell its members apart. The member recorded is kept
// without --key, and another is refused.
func TestResumedKey(t *testing.T) {
	dir := t.TempDir()
	ab := filepath.Join(dir, "ab.npz")
	arr := &npy.Array{Shape: []int{2, 2}, Data: []float64{1, 2, 3, 4}}
	if err := npz.WriteFile(ab, map[string]*npy.Array{"first": arr, "second": arr}, npy.Float64); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		recorded, recordedKey, given, want, refused string
	}{
		{ab, "second", "", "second", ""},
		{ab, "second", "second", "second", ""},
		{ab, "second", "first", "", `--key first: the run was trained on the member "second" of its .npz, not "first"`},
		{ab, "", "first", "first", ""}, // the first member, named
		{ab, "", "second", "", `the run was trained on the member "first" of its .npz, not "second"`},
		{filepath.Join(dir, "a.npy"), "", "second", "second", ""}, // another file: its SHA-256 refuses it
	} {
		key, err := resumedKey(&config.Data{File: c.recorded, Key: c.recordedKey}, ResumeOptions{DataFile: ab, DataKey: c.given})
		switch {
		case c.refused != "" && (err == nil || !strings.Contains(err.Error(), c.refused)):
			t.Errorf("%+v: key %q, error %v", c, key, err)
		case c.refused == "" && (err != nil || key != c.want):
			t.Errorf("%+v: key %q, error %v; want %q", c, key, err, c.want)
		}
	}
}
