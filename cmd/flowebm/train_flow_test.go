package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flowebm/flowebm/io/checkpoint"
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
	// Probe 24: the checkpoint's ONNX flow (its trained weights) was not
	// in the sums a sample checkpoint records: a changed flow resumed.
	ck := filepath.Join(dir, "s.npz")
	if code, stderr := outputsChild(t, "sample-checkpoint", "KILL", "sample", "--model", out, "--sampler", "flowmc", "--chains", "4", "--steps", "20", "--warmup", "2", "--checkpoint", ck, "--checkpoint-every", "5", "--out", filepath.Join(dir, "y.npy")); code != -1 {
		t.Fatalf("child exit %d: %s", code, stderr)
	}
	flowFile := filepath.Join(out, "checkpoint", "flow_sample.onnx")
	src, err := os.ReadFile(flowFile)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(flowFile, append(src, 0x12, 1, 'x'), 0o644); err != nil { // producer_name "x": another file
		t.Fatal(err)
	}
	if err := checkpoint.WriteManifest(filepath.Join(out, "checkpoint")); err != nil { // rewritten whole, as a new flow would be
		t.Fatal(err)
	}
	se.Reset()
	if code := run([]string{"sample", "--resume", ck}, &so, &se); code != 2 || !strings.Contains(se.String(), "has changed since the checkpoint was written") {
		t.Errorf("resume on a changed flow: exit %d, %q", code, se.String())
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
	out := trainFromFlow(t, dir)
	var so, se bytes.Buffer
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
	f, out := pytorchFlow, trainFromFlow(t, dir)
	var so, se bytes.Buffer
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

// Round-11 probe: train --seeds checks every seed's folder against the
// inputs before training any (a later seed's refusal came after earlier
// seeds were replaced); a .lock that is a link is refused, not written
// through; sample's draws and trained flow are put in place as one set (a
// kill while writing them leaves the old ones).
func TestRound11Outputs(t *testing.T) {
	dir := t.TempDir()
	f := "../../io/onnx/testdata/flows/realnvp2_f64"
	sd := filepath.Join(dir, "sd")
	var so, se bytes.Buffer
	if code := run([]string{"train", "--iterations", "2", "--seeds", "1-2", "--quiet", "--out", sd}, &so, &se); code != 0 {
		t.Fatal(se.String())
	}
	before, _ := os.ReadFile(filepath.Join(sd, "s1", "metrics.csv"))
	for _, n := range []string{"s.onnx", "d.onnx"} {
		src := f + map[string]string{"s.onnx": "_sample.onnx", "d.onnx": "_density.onnx"}[n]
		b, _ := os.ReadFile(src)
		os.WriteFile(filepath.Join(sd, "s2", n), b, 0o644)
	}
	se.Reset()
	args := []string{"train", "--iterations", "2", "--seeds", "1-2", "--quiet", "--force", "--flow", filepath.Join(sd, "s2", "s.onnx"), "--flow-density", filepath.Join(sd, "s2", "d.onnx"), "--out", sd}
	if code := run(args, &so, &se); code == 0 || !strings.Contains(se.String(), "nothing was trained") {
		t.Errorf("--seeds with a flow inside a seed's folder: exit %d, %q", code, se.String())
	}
	if after, _ := os.ReadFile(filepath.Join(sd, "s1", "metrics.csv")); !bytes.Equal(after, before) {
		t.Error("seed 1 was retrained before the refusal")
	}
	// A .lock that is a link.
	victim := filepath.Join(dir, "victim.txt")
	os.WriteFile(victim, []byte("keep"), 0o644)
	pl := filepath.Join(dir, "pl")
	os.MkdirAll(pl, 0o755)
	os.Symlink(victim, filepath.Join(pl, ".lock"))
	if _, errOut, status := runCLI("diagnose", "--plots", pl, filepath.Join("testdata", "diagnose", "iid_4x500_f4.npy")); status == 0 || !strings.Contains(errOut, "/.lock is a symbolic link, want a regular file") {
		t.Errorf("a .lock link: status %d, %q", status, errOut)
	}
	if b, _ := os.ReadFile(victim); string(b) != "keep" {
		t.Errorf("the file the .lock pointed to holds %q", b)
	}
	// Draws and flow as one set.
	model := "../../io/onnx/testdata/flows/bimodal_energy.onnx"
	fo, out := filepath.Join(dir, "fo"), filepath.Join(dir, "o.npy")
	base := []string{"sample", "--model", model, "--sampler", "flowmc", "--chains", "4", "--steps", "10", "--warmup", "20", "--flow-out", fo, "--out", out}
	if code := run(base, &so, &se); code != 0 {
		t.Fatal(se.String())
	}
	old := map[string][]byte{}
	for _, p := range []string{out, filepath.Join(fo, "flow_sample.onnx"), filepath.Join(fo, "flow_density.onnx")} {
		old[p], _ = os.ReadFile(p)
	}
	t.Setenv("FLOWEBM_CHILD_SKIP", "2") // killed staging the last of the three
	if code, stderr := outputsChild(t, "output-writing", "KILL", append(base, "--seed", "9", "--force")...); code != -1 {
		t.Fatalf("child exit %d: %s", code, stderr)
	}
	for p, b := range old {
		if got, _ := os.ReadFile(p); !bytes.Equal(got, b) {
			t.Errorf("%s changed though the new set was not complete", filepath.Base(p))
		}
	}
}

// pytorchFlow is the RealNVP trained in PyTorch on the two-modes data (its
// files are pytorchFlow+"_sample.onnx" and +"_density.onnx").
const pytorchFlow = "../../io/onnx/testdata/flows/realnvp2_f64"

// trainFromFlow trains flowMC-EBM 2 iterations from pytorchFlow into
// dir/run and returns the run's folder.
func trainFromFlow(t *testing.T, dir string) string {
	t.Helper()
	out := filepath.Join(dir, "run")
	var so, se bytes.Buffer
	if code := run([]string{"train", "--iterations", "2", "--quiet", "--flow", pytorchFlow + "_sample.onnx", "--flow-density", pytorchFlow + "_density.onnx", "--out", out}, &so, &se); code != 0 {
		t.Fatal(se.String())
	}
	return out
}
