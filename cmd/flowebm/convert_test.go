package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// convert exports each model kind of a trained run, and refuses what it
// cannot do with the reason.
func TestConvertExportsCheckpoint(t *testing.T) {
	dir := t.TempDir()
	run0 := filepath.Join(dir, "run")
	var out, errb bytes.Buffer
	if code := run([]string{"train", "--iterations", "2", "--quiet", "--out", run0}, &out, &errb); code != 0 {
		t.Fatalf("train: %s", errb.String())
	}
	for _, what := range []string{"ebm", "energy", "flow-sample", "flow-density"} {
		dst := filepath.Join(dir, what+".onnx")
		errb.Reset()
		if code := run([]string{"convert", "--what", what, "--float32", run0, dst}, &out, &errb); code != 0 {
			t.Fatalf("convert --what %s: %s", what, errb.String())
		}
		b, err := os.ReadFile(dst)
		if err != nil || len(b) < 1000 {
			t.Errorf("%s: %d bytes, %v", what, len(b), err)
		}
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"convert", filepath.Join(dir, "ebm.onnx"), filepath.Join(dir, "ck")}, "importing ONNX models is not available yet"},
		{[]string{"convert", run0, filepath.Join(dir, "x.npz")}, "want an output file ending in .onnx"},
		{[]string{"convert", "--what", "grad", run0, filepath.Join(dir, "y.onnx")}, `--what "grad", want ebm, energy, flow-sample or flow-density`},
		{[]string{"convert", "--float32", "--float64", run0, filepath.Join(dir, "z.onnx")}, "Float32 and Float64 both set"},
		{[]string{"convert", filepath.Join(dir, "nothing"), filepath.Join(dir, "w.onnx")}, "spec.json"},
	} {
		errb.Reset()
		if code := run(c.args, &out, &errb); code != 2 || !strings.Contains(errb.String(), c.want) {
			t.Errorf("%v: exit %d, %q; want 2 and %q", c.args, code, errb.String(), c.want)
		}
	}
	for _, f := range []string{"y.onnx", "z.onnx", "w.onnx"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err == nil {
			t.Errorf("%s written despite the error", f)
		}
	}
}
