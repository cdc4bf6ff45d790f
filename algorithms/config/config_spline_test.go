package config

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/flowebm/flowebm/layers"
)

// readJSON writes js to a file and reads it as a configuration file.
func readJSON(t *testing.T, js string) (Run, string, error) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "config.json")
	if err := os.WriteFile(path, []byte(js), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := Read(path)
	return cfg, path, err
}

const splineTrain = `"train": {"algorithm": "flowmc", "iterations": 10}`

// A configuration without model.flow (every run before the spline flow)
// reads and builds the RealNVP exactly as before, and writes no new
// field back; model.flow "spline" builds the spline flow with
// flow_blocks, flow_hidden, flow_mask, flow_bins and flow_tail_bound.
func TestFlowFamilyConfig(t *testing.T) {
	old := `{"experiment": "two-modes", "seed": 1, "model": {"flow_blocks": 2, "flow_hidden": [8, 8], "flow_mask": "checkerboard", "flow_init": "small-last"}, ` + splineTrain + `}`
	cfg, _, err := readJSON(t, old)
	if err != nil {
		t.Fatal(err)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	if cfg.Model.Flow != "" || cfg.Model.FlowBins != 0 || cfg.Model.FlowTailBound != 0 {
		t.Errorf("an old configuration read as %+v", cfg.Model)
	}
	want := layers.RealNVP{Dim: 2, Blocks: 2, Hidden: []int{8, 8}, Init: layers.InitSmallLast, Mask: layers.MaskCheckerboard}
	if got := cfg.Model.FlowNet(2); !reflect.DeepEqual(got, want) {
		t.Errorf("old configuration's flow %#v, want %#v", got, want)
	}
	b, _ := json.Marshal(cfg.Model)
	for _, f := range []string{`"flow"`, `"flow_bins"`, `"flow_tail_bound"`} {
		if strings.Contains(string(b), f) {
			t.Errorf("an old configuration is written back with %s: %s", f, b)
		}
	}
	// The defaults: the RealNVP of App. C.2, no spline fields.
	if m := (Model{}).WithDefaults(); m.Flow != FlowRealNVP || m.FlowBins != 0 || m.FlowTailBound != 0 {
		t.Errorf("defaults %+v", m)
	}
	if m := (Model{Flow: FlowSpline}).WithDefaults(); m.FlowBins != 8 || m.FlowTailBound != 5 {
		t.Errorf("spline defaults %+v, want 8 bins on [−5, 5]", m)
	}

	spline := `{"experiment": "two-modes", "seed": 1, "model": {"flow": "spline", "flow_blocks": 3, "flow_hidden": [12], "flow_mask": "checkerboard", "flow_bins": 10, "flow_tail_bound": 4.5}, ` + splineTrain + `}`
	if cfg, _, err = readJSON(t, spline); err != nil {
		t.Fatal(err)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	wantSpline := layers.SplineFlow{Dim: 4, Blocks: 3, Hidden: []int{12}, Mask: layers.MaskCheckerboard, Spline: layers.RQSpline{Bins: 10, TailBound: 4.5}}
	if got := cfg.Model.FlowNet(4); !reflect.DeepEqual(got, wantSpline) {
		t.Errorf("spline flow %#v, want %#v", got, wantSpline)
	}
	got := Model{Flow: FlowSpline}.FlowNet(2)
	if sf, ok := got.(layers.SplineFlow); !ok || sf.Spline != (layers.RQSpline{Bins: 8, TailBound: 5}) || sf.Blocks != 4 || !slices.Equal(sf.Hidden, []int{16}) {
		t.Errorf("default spline flow %#v", got)
	}
	b, _ = json.Marshal(cfg.Model)
	if !strings.Contains(string(b), `"flow":"spline"`) || !strings.Contains(string(b), `"flow_bins":10`) || !strings.Contains(string(b), `"flow_tail_bound":4.5`) {
		t.Errorf("written back as %s", b)
	}
	var again Run
	if err := json.Unmarshal([]byte(`{"model": `+string(b)+`}`), &again); err != nil || !reflect.DeepEqual(again.Model, cfg.Model) {
		t.Errorf("read back as %+v, %v", again.Model, err)
	}
	var f FlowFamily
	if err := f.Set("spline"); err != nil || f != FlowSpline || f.Type() != "realnvp|spline" {
		t.Errorf("Set(spline): %v, %v", f, err)
	}
}

// A family other than realnvp and spline is refused when the file is
// read; the fields of one family are refused with the other (and with
// model.flow_onnx), and the spline's out of range, each naming the field
// and what it wants.
func TestFlowFamilyValidation(t *testing.T) {
	cfg, path, err := readJSON(t, `{"model": {"flow": "glow"}, `+splineTrain+`}`)
	if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), `model.flow "glow", want "realnvp" or "spline"`) {
		t.Errorf("flow glow: %v (%+v)", err, cfg.Model)
	}
	for _, c := range []struct {
		model string
		want  []string
	}{
		{`{"flow_bins": 12}`, []string{`model.flow_bins applies to model.flow "spline", not "realnvp"`}},
		{`{"flow": "realnvp", "flow_tail_bound": 3}`, []string{`model.flow_tail_bound applies to model.flow "spline", not "realnvp"`}},
		{`{"flow": "spline", "flow_init": "small"}`, []string{`model.flow_init "small" applies to model.flow "realnvp", not "spline"`}},
		{`{"flow": "spline", "flow_bins": 1}`, []string{"model.flow_bins 1, want 2 to 999 bins", "default 8"}},
		{`{"flow": "spline", "flow_bins": 1000}`, []string{"model.flow_bins 1000, want 2 to 999 bins"}},
		{`{"flow": "spline", "flow_bins": -3}`, []string{"model.flow_bins -3"}},
		{`{"flow": "spline", "flow_tail_bound": -1}`, []string{"model.flow_tail_bound -1, want a bound B in (0, 1e150]", "default 5"}},
		{`{"flow": "spline", "flow_mask": "diagonal"}`, []string{`model.flow_mask "diagonal"`}},
		{`{"flow": "spline", "flow_onnx": {"sample": "s.onnx", "density": "d.onnx"}}`, []string{"model.flow and model.flow_onnx", "drop model.flow"}},
		{`{"flow": "realnvp", "flow_onnx": {"sample": "s.onnx", "density": "d.onnx"}}`, []string{"model.flow and model.flow_onnx"}},
		{`{"flow_bins": 8, "flow_onnx": {"sample": "s.onnx", "density": "d.onnx"}}`, []string{"model.flow_bins and model.flow_onnx"}},
		{`{"flow_tail_bound": 2, "flow_onnx": {"sample": "s.onnx", "density": "d.onnx"}}`, []string{"model.flow_tail_bound and model.flow_onnx"}},
	} {
		cfg, _, err := readJSON(t, `{"model": `+c.model+`, `+splineTrain+`}`)
		if err == nil {
			err = cfg.Validate()
		}
		if err == nil {
			t.Errorf("%s: accepted", c.model)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %v, want it to name %q", c.model, err, w)
			}
		}
	}
	for _, ok := range []string{`{"flow": "spline", "flow_bins": 2, "flow_tail_bound": 0.5}`, `{"flow": "spline", "flow_bins": 999}`, `{"flow": "realnvp", "flow_init": "small"}`} {
		cfg, _, err := readJSON(t, `{"model": `+ok+`, `+splineTrain+`}`)
		if err == nil {
			err = cfg.Validate()
		}
		if err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
}

// A 0 in a spline field stands for its default and is refused as other
// zeros are; with an algorithm that has no flow, the spline's fields are
// reported unused (and their zeros ignored).
func TestFlowFamilyZerosAndUnused(t *testing.T) {
	for _, c := range []struct{ model, want string }{
		{`{"flow": "spline", "flow_bins": 0}`, "model.flow_bins 0: 0 stands for the default here, 8"},
		{`{"flow": "spline", "flow_tail_bound": 0}`, "model.flow_tail_bound 0: 0 stands for the default here, 5"},
	} {
		if _, _, err := readJSON(t, `{"model": `+c.model+`, `+splineTrain+`}`); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.model, err, c.want)
		}
	}
	cfg, _, err := readJSON(t, `{"model": {"flow": "spline", "flow_bins": 0, "flow_tail_bound": 3}, "train": {"algorithm": "ula", "iterations": 10}}`)
	if err != nil {
		t.Fatal(err)
	}
	unused := cfg.Unused()
	for _, f := range []string{"model.flow", "model.flow_tail_bound"} {
		if !slices.Contains(unused, f) {
			t.Errorf("ula: unused %v, want %s in it", unused, f)
		}
	}
	if cfg, _, err = readJSON(t, `{"model": {"flow": "spline", "flow_bins": 6}, `+splineTrain+`}`); err != nil || len(cfg.Unused()) != 0 {
		t.Errorf("flowmc with a spline: unused %v, %v", cfg.Unused(), err)
	}
}
