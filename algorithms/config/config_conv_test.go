package config

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/flowebm/flowebm/algorithms"
	"github.com/flowebm/flowebm/algorithms/experiments"
	"github.com/flowebm/flowebm/internal/sysmem"
	"github.com/flowebm/flowebm/layers"
	"gonum.org/v1/gonum/mat"
)

// fakeImages is an image experiment of n random 1×h×w images.
func fakeImages(n, h, w int) *experiments.Experiment {
	x := mat.NewDense(n, h*w, nil)
	for i := range x.RawMatrix().Data {
		x.RawMatrix().Data[i] = float64(i%7)/3 - 1
	}
	return &experiments.Experiment{Name: "fake-images", Kind: experiments.KindImages, Image: &experiments.ImageShape{Channels: 1, Height: h, Width: w},
		TrainSet: x, HeldOutSet: x, Weights: []float64{1}}
}

// model.ebm "conv" and model.flow "conv-realnvp" build the image models
// from the experiment's image shape, with model.ebm_channels and the conv
// RealNVP's flow_blocks (couplings of each kind per scale) and
// flow_hidden (one width); an old configuration (no model.ebm) reads as
// before and writes no new field back.
func TestConvModelConfig(t *testing.T) {
	cfg, _, err := readJSON(t, `{"experiment": "mnist28", "seed": 1, "model": {"ebm": "conv", "ebm_channels": [8, 16], "flow": "conv-realnvp", "flow_blocks": 1, "flow_hidden": [12]}, `+splineTrain+`}`)
	if err != nil {
		t.Fatal(err)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	im := &experiments.ImageShape{Channels: 1, Height: 8, Width: 8}
	e, err := cfg.Model.EnergyNet(64, im)
	if err != nil {
		t.Fatal(err)
	}
	wantE := layers.ImageEnergy{Name: "net", Image: layers.ImageShape{C: 1, H: 8, W: 8}, Channels: []int{8, 16}}
	if !reflect.DeepEqual(e, wantE) {
		t.Errorf("EBM %#v, want %#v", e, wantE)
	}
	f, err := cfg.Model.FlowNetFor(64, im)
	if err != nil {
		t.Fatal(err)
	}
	wantF := layers.ImageRealNVP{Image: layers.ImageShape{C: 1, H: 8, W: 8}, Checkerboard: 1, ChannelWise: 1, Hidden: 12}
	if !reflect.DeepEqual(f, wantF) {
		t.Errorf("flow %#v, want %#v", f, wantF)
	}
	if _, err := cfg.Model.EnergyNet(64, nil); err == nil || !strings.Contains(err.Error(), `model.ebm "conv" and model.flow "conv-realnvp" need an image experiment`) {
		t.Errorf("conv models without images: %v", err)
	}
	// Defaults: the layers' own, and no MLP widths for the conv EBM.
	m := Model{EBM: EBMConv, Flow: FlowConvRealNVP}.WithDefaults()
	if !reflect.DeepEqual(m.EBMChannels, []int{32, 64, 64}) || m.EBMHidden != nil || m.EBMSlope != 0 || m.FlowBlocks != 2 || !reflect.DeepEqual(m.FlowHidden, []int{32}) {
		t.Errorf("conv defaults %+v", m)
	}
	if m := (Model{}).WithDefaults(); m.EBM != EBMMLP || m.EBMChannels != nil || !reflect.DeepEqual(m.EBMHidden, []int{32, 64, 64, 64}) {
		t.Errorf("MLP defaults %+v", m)
	}
	old, _, err := readJSON(t, `{"experiment": "two-modes", "seed": 1, "model": {"ebm_hidden": [8, 8], "ebm_slope": 0.1}, `+splineTrain+`}`)
	if err != nil {
		t.Fatal(err)
	}
	if err := old.Validate(); err != nil || old.Model.EBM != "" || old.Model.Conv() {
		t.Fatalf("old configuration: %v, %+v", err, old.Model)
	}
	b, _ := json.Marshal(old.Model)
	if strings.Contains(string(b), `"ebm"`) || strings.Contains(string(b), `"ebm_channels"`) {
		t.Errorf("an old configuration is written back with the conv fields: %s", b)
	}
	if net, err := old.Model.EnergyNet(2, nil); err != nil || net.Dim() != 2 {
		t.Errorf("old configuration's EBM %#v, %v", net, err)
	}
}

// Fields that do not apply to the chosen families are refused naming
// them, and so are conv models outside the image experiments (where the
// run is resolved) or on images they do not fit.
func TestConvModelRefused(t *testing.T) {
	for _, c := range []struct {
		model, want string
	}{
		{`{"ebm": "cnn"}`, `model.ebm "cnn", want "mlp" or "conv"`},
		{`{"ebm": "conv", "ebm_hidden": [8]}`, `model.ebm_hidden applies to model.ebm "mlp", not "conv"`},
		{`{"ebm": "conv", "ebm_slope": 0.2}`, `model.ebm_slope applies to model.ebm "mlp"`},
		{`{"ebm_channels": [8]}`, `model.ebm_channels applies to model.ebm "conv", not "mlp"`},
		{`{"ebm": "conv", "ebm_channels": [8, 0]}`, `model.ebm_channels holds 0`},
		{`{"ebm": "conv", "ebm_channels": []}`, `model.ebm_channels has 0 widths`},
		{`{"ebm": "conv", "ebm_channels": [1, 1, 1, 1, 1, 1, 1, 1, 1]}`, `model.ebm_channels has 9 widths, want 1 to 8 stages`},
		{`{"flow": "conv-realnvp", "flow_mask": "checkerboard"}`, `model.flow_mask applies to model.flow "realnvp" and "spline", not "conv-realnvp"`},
		{`{"flow": "conv-realnvp", "flow_init": "small"}`, `model.flow_init applies to model.flow "realnvp" and "spline"`},
		{`{"flow": "conv-realnvp", "flow_bins": 8}`, `model.flow_bins applies to model.flow "spline", not "conv-realnvp"`},
		{`{"flow": "conv-realnvp", "flow_hidden": [8, 8]}`, `model.flow "conv-realnvp" takes one width`},
		{`{"flow": "conv-realnvp", "flow_blocks": 100}`, `model.flow_blocks 100`},
		{`{"flow": "glow"}`, `model.flow "glow", want "realnvp" or "spline" (unset: "realnvp"), or "conv-realnvp"`},
	} {
		cfg, path, err := readJSON(t, `{"experiment": "mnist28", "seed": 1, "model": `+c.model+`, `+splineTrain+`}`)
		if err == nil {
			err = cfg.Validate()
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s (%s): %v, want %q", c.model, path, err, c.want)
		}
	}
	resolve := func(m Model, exp *experiments.Experiment) error {
		cfg := Run{Experiment: exp.Name, Seed: 1, DataSize: 64, Model: m, Train: algorithms.TrainConfig{Algorithm: algorithms.FlowMC, Iterations: 2, BatchSize: 8, Persistent: 16}}
		if err := cfg.Validate(); err != nil {
			return err
		}
		return cfg.Resolve(exp)
	}
	if err := resolve(Model{EBM: EBMConv}, experiments.TwoModes()); err == nil || !strings.Contains(err.Error(), `model.ebm "conv" needs an image experiment`) || !strings.Contains(err.Error(), "two-modes has no images") {
		t.Errorf("conv EBM on two-modes: %v", err)
	}
	if err := resolve(Model{Flow: FlowConvRealNVP}, fakeImages(64, 7, 7)); err == nil || !strings.Contains(err.Error(), `model.flow "conv-realnvp" on fake-images's 1×7×7 images`) {
		t.Errorf("conv RealNVP on 7×7 images: %v", err)
	}
	if err := resolve(Model{EBM: EBMConv, EBMChannels: []int{4, 8}, Flow: FlowConvRealNVP, FlowHidden: []int{4}, FlowBlocks: 1}, fakeImages(64, 8, 8)); err != nil {
		t.Errorf("conv models on 8×8 images: %v", err)
	}
}

// The memory estimate counts the conv models' parameters and their
// graphs' values per row (layers' GraphValues) for the largest batches:
// 2,048 chains' i-SIR proposals of a default conv RealNVP on CIFAR-10's
// 3×32×32 images need far more than the default MLP flow's.
func TestConvMemoryTerms(t *testing.T) {
	cfg := Run{Experiment: "cifar10", LogZSamples: 64, RHatChains: 2, RHatSteps: 4, DataSize: 100,
		Model: Model{EBM: EBMConv, Flow: FlowConvRealNVP},
		Train: algorithms.TrainConfig{Algorithm: algorithms.FlowMC, Iterations: 10, BatchSize: 128, Persistent: 1024,
			Sampler: algorithms.SamplerConfig{Particles: 128, Steps: 3, GlobalSteps: 1, LocalSteps: 32, Stacked: true}}}
	tc, err := cfg.Train.Resolved()
	if err != nil {
		t.Fatal(err)
	}
	im := &layers.ImageShape{C: 3, H: 32, W: 32}
	terms := cfg.memoryTermsFor(tc, 3072, im)
	var ebmParams, flowValues float64
	for _, tm := range terms {
		switch {
		case strings.Contains(tm.What, `model.ebm "conv"`) && strings.Contains(tm.What, "parameters"):
			ebmParams = tm.Bytes
		case strings.Contains(tm.What, `model.flow "conv-realnvp"`) && strings.Contains(tm.What, "sampler.particles 128"):
			flowValues = tm.Bytes
		}
	}
	e := layers.ImageEnergy{Image: layers.ImageShape{C: 3, H: 32, W: 32}}
	f := layers.ImageRealNVP{Image: layers.ImageShape{C: 3, H: 32, W: 32}}
	if want := float64(e.ParamCount()) * 8 * 5; ebmParams != want || e.ParamCount() < 200_000 {
		t.Errorf("conv EBM parameters term %v bytes, want %v", ebmParams, want)
	}
	if want := 128 * 128 * f.GraphValues(true) * 8; flowValues != want || want < 1e11 {
		t.Errorf("conv flow values term %v bytes, want %v; terms %v", flowValues, want, terms)
	}
	if err := sysmem.Check(terms, 64<<30); err == nil || !strings.Contains(err.Error(), "sampler.particles 128") {
		t.Errorf("App. C.6's i-SIR with the conv RealNVP on 64 GiB: %v", err)
	}
}
