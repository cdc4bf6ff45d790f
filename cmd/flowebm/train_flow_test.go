package main

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
)

// train --flow starts flowMC-EBM from a flow trained in PyTorch (a RealNVP
// fitted to the two-modes data, base σ 1.5): the run trains, its
// checkpoint keeps the flow as ONNX, and sample reads the run's flow back
// (flowmc with the run's own trained flow). Half a flow, or a flow with
// ULA-EBM, is refused before any work.
func TestTrainFromONNXFlow(t *testing.T) {
	dir := t.TempDir()
	f := "../../io/onnx/testdata/flows/realnvp2_f64"
	out := filepath.Join(dir, "run")
	var so, se bytes.Buffer
	args := []string{"train", "--iterations", "4", "--quiet", "--flow", f + "_sample.onnx", "--flow-density", f + "_density.onnx", "--out", out}
	if code := run(args, &so, &se); code != 0 {
		t.Fatalf("exit %d: %s", code, se.String())
	}
	for _, name := range []string{"flow_sample.onnx", "flow_density.onnx"} {
		if !exists(filepath.Join(out, "checkpoint", name)) {
			t.Errorf("the checkpoint has no %s", name)
		}
	}
	so.Reset()
	if code := run([]string{"sample", "--model", out, "--sampler", "flowmc", "--chains", "8", "--steps", "10", "--warmup", "2", "--out", filepath.Join(dir, "x.npy")}, &so, &se); code != 0 || !strings.Contains(so.String(), "8 chains × 10 draws") {
		t.Errorf("sample with the run's ONNX flow: exit %d, %q %q", code, so.String(), se.String())
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--flow", f + "_sample.onnx"}, "--flow SAMPLE.onnx and --flow-density DENSITY.onnx"},
		{[]string{"--flow-base-sigma", "2"}, "--flow-base-sigma applies to a flow given with --flow"},
		{[]string{"--algorithm", "ula", "--flow", f + "_sample.onnx", "--flow-density", f + "_density.onnx"}, "which has no flow"},
	} {
		se.Reset()
		o := filepath.Join(dir, "r")
		if code := run(append([]string{"train", "--iterations", "2", "--quiet", "--out", o}, c.args...), &so, &se); code == 0 || !strings.Contains(se.String(), c.want) {
			t.Errorf("%v: exit %d, %q; want %q", c.args, code, se.String(), c.want)
		}
		if exists(filepath.Join(o, "config.json")) {
			t.Errorf("%v: a run was started", c.args)
		}
	}
}

// convert writes the trained graphs of a run started from an ONNX flow
// (round-9 probe: refused with the Go API's advice).
func TestConvertONNXFlowRun(t *testing.T) {
	dir := t.TempDir()
	f := "../../io/onnx/testdata/flows/realnvp2_f64"
	out := filepath.Join(dir, "run")
	var so, se bytes.Buffer
	if code := run([]string{"train", "--iterations", "2", "--quiet", "--flow", f + "_sample.onnx", "--flow-density", f + "_density.onnx", "--out", out}, &so, &se); code != 0 {
		t.Fatal(se.String())
	}
	for _, what := range []string{"flow-sample", "flow-density"} {
		dst := filepath.Join(dir, what+".onnx")
		if code := run([]string{"convert", out, dst, "--what", what}, &so, &se); code != 0 || !exists(dst) {
			t.Errorf("convert --what %s: exit %d, %q", what, code, se.String())
		}
	}
}

// train --force does not replace the flow files it reads from inside
// --out, and the flow flags' errors name the flags (round-10 probe).
func TestTrainFlowInputsProtected(t *testing.T) {
	dir := t.TempDir()
	f := "../../io/onnx/testdata/flows/realnvp2_f64"
	out := filepath.Join(dir, "run")
	var so, se bytes.Buffer
	if code := run([]string{"train", "--iterations", "2", "--quiet", "--flow", f + "_sample.onnx", "--flow-density", f + "_density.onnx", "--out", out}, &so, &se); code != 0 {
		t.Fatal(se.String())
	}
	ck := filepath.Join(out, "checkpoint")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--flow", filepath.Join(ck, "flow_sample.onnx"), "--flow-density", filepath.Join(ck, "flow_density.onnx"), "--out", out, "--force"}, "is inside the run folder"},
		{[]string{"--flow", f + "_sample.onnx", "--flow-density", f + "_density.onnx", "--flow-base-sigma", "-1", "--out", filepath.Join(dir, "r2")}, "--flow-base-sigma -1: want σ in"},
		{[]string{"--flow", f + "_sample.onnx", "--flow-density", f + "_density.onnx", "--algorithm", "ula", "--out", filepath.Join(dir, "r3")}, "--flow with --algorithm ula, which has no flow"},
	} {
		se.Reset()
		if code := run(append([]string{"train", "--iterations", "2", "--quiet"}, c.args...), &so, &se); code == 0 || !strings.Contains(se.String(), c.want) {
			t.Errorf("%v: exit %d, %q; want %q", c.args, code, se.String(), c.want)
		}
	}
	if !exists(filepath.Join(ck, "flow_sample.onnx")) {
		t.Error("the run's flow files were removed")
	}
}
