package checkpoint

import (
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/flowebm/flowebm/graph"
	"github.com/flowebm/flowebm/layers"
	"gonum.org/v1/gonum/mat"
	"gorgonia.org/tensor"
)

// convModels are a small conv EBM and conv RealNVP on 2×8×8 images, every
// parameter moved to random values (the EBM off its zero last layer, the
// flow off the identity).
func convModels(t *testing.T, dt tensor.Dtype) Models {
	t.Helper()
	im := layers.ImageShape{C: 2, H: 8, W: 8}
	rng := rand.New(rand.NewPCG(5, 6))
	m := buildModels(t, layers.ImageEnergy{Name: "net", Image: im, Channels: []int{4, 6}, Downsample: layers.DownAvgPool},
		layers.ImageRealNVP{Image: im, Hidden: 5, Checkerboard: 1, ChannelWise: 1}, layers.NewIsotropic(im.Dim(), 0.7), dt, rng)
	for _, p := range []*graph.Params{m.EBM.Params, m.Flow.Params} {
		theta := p.Flatten(nil)
		for i := range theta {
			theta[i] = 0.2 * rng.NormFloat64()
		}
		p.SetFlat(theta)
	}
	return m
}

// Conv models are saved with their kinds and sizes in spec.json and load
// with the same parameters, by name and value, and the same energies,
// gradients and flow log-densities, bit for bit.
func TestConvSaveLoadRoundTrip(t *testing.T) {
	for _, dt := range []tensor.Dtype{tensor.Float64, tensor.Float32} {
		m := convModels(t, dt)
		got, spec := saveLoad(t, m)
		if e := spec.EBM; e.Kind != EBMKindConv || !slices.Equal(e.Image, []int{2, 8, 8}) || !slices.Equal(e.Channels, []int{4, 6}) || e.Blocks != 1 ||
			e.Downsample != layers.DownAvgPool || e.Activation != "silu" || e.Sizes != nil || e.Layout != "" {
			t.Errorf("%v: EBM spec %+v", dt, e)
		}
		if f := spec.Flow; f == nil || f.Kind != FlowKindConvRealNVP || f.Dim != 128 || f.Scales != 2 || f.Checkerboard != 1 || f.Channel != 1 ||
			f.ResBlocks != 1 || f.Dt != 0.5 || f.InitScale != 1e-6 || !slices.Equal(f.Hidden, []int{5}) || f.Blocks != 0 || f.Mask != "" {
			t.Errorf("%v: flow spec %+v", dt, spec.Flow)
		}
		if spec.Dim() != 128 {
			t.Errorf("%v: spec dimension %d", dt, spec.Dim())
		}
		for _, c := range []struct {
			name     string
			saved, p *graph.Params
		}{{"EBM", m.EBM.Params, got.EBM.Params}, {"flow", m.Flow.Params, got.Flow.Params}} {
			if !slices.Equal(c.saved.Names(), c.p.Names()) {
				t.Fatalf("%v: %s parameters %v, saved %v", dt, c.name, c.p.Names(), c.saved.Names())
			}
			if !slices.Equal(c.saved.Flatten(nil), c.p.Flatten(nil)) {
				t.Errorf("%v: %s parameters differ after loading", dt, c.name)
			}
		}
		if n, err := spec.ParamCount(); err != nil || n != m.EBM.Params.Count()+m.Flow.Params.Count() {
			t.Errorf("%v: ParamCount %d, %v; the models have %d", dt, n, err, m.EBM.Params.Count()+m.Flow.Params.Count())
		}
		rng := rand.New(rand.NewPCG(7, 8))
		x := mat.NewDense(5, 128, nil)
		for i := 0; i < 5; i++ {
			for j := 0; j < 128; j++ {
				x.Set(i, j, 2*rng.Float64()-1)
			}
		}
		e1, e2 := make([]float64, 5), make([]float64, 5)
		g1, g2 := mat.NewDense(5, 128, nil), mat.NewDense(5, 128, nil)
		if err := m.EnergyGrad(x, e1, g1); err != nil {
			t.Fatal(err)
		}
		if err := got.EnergyGrad(x, e2, g2); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(e1, e2) || !slices.Equal(g1.RawMatrix().Data, g2.RawMatrix().Data) {
			t.Errorf("%v: energies %v and %v (or their gradients) differ after loading", dt, e1, e2)
		}
		l1, l2 := make([]float64, 5), make([]float64, 5)
		if err := m.Flow.LogDensity(x, l1); err != nil {
			t.Fatal(err)
		}
		if err := got.Flow.LogDensity(x, l2); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(l1, l2) {
			t.Errorf("%v: flow log-densities %v, loaded %v", dt, l1, l2)
		}
		if e1[0] == 0 || l1[0] == 0 {
			t.Errorf("%v: the models were not moved off their start (energy %v, log-density %v)", dt, e1[0], l1[0])
		}
	}
}

// A spec.json describing conv models wrongly is refused naming the field,
// before anything is allocated (huge widths included).
func TestConvSpecRefused(t *testing.T) {
	m := convModels(t, tensor.Float64)
	good, err := SpecOf(m)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := json.Marshal(good)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		edit func(s *Spec)
		want string
	}{
		{"sizes", func(s *Spec) { s.EBM.Sizes = []int{128, 1} }, `"ebm.sizes" is an MLP's`},
		{"kind", func(s *Spec) { s.EBM.Kind = "cnn" }, `"ebm.kind" is "cnn"`},
		{"image", func(s *Spec) { s.EBM.Image = []int{2, 8} }, `"ebm.image" is [2 8]`},
		{"huge image", func(s *Spec) { s.EBM.Image = []int{1 << 10, 1 << 10, 1 << 10} }, `"ebm.image"`},
		{"channels", func(s *Spec) { s.EBM.Channels = []int{4, 0} }, `"ebm.channels" has 0`},
		{"huge channels", func(s *Spec) { s.EBM.Channels = []int{1 << 20, 1 << 20} }, `parameters, want at most`},
		{"too many stages", func(s *Spec) { s.EBM.Channels = []int{4, 4, 4, 4, 4, 4} }, `"ebm"`},
		{"downsample", func(s *Spec) { s.EBM.Downsample = "max" }, `"ebm.downsample" is "max"`},
		{"mlp with channels", func(s *Spec) { s.EBM.Kind, s.EBM.Sizes = "", []int{128, 1} }, `"ebm.image" is a conv EBM's`},
		{"flow scales", func(s *Spec) { s.Flow.Scales = 4 }, `"flow.image" is [2 8 8]: 4 scales`},
		{"flow hidden", func(s *Spec) { s.Flow.Hidden = []int{5, 5} }, `"flow.hidden" is [5 5], want one width`},
		{"flow huge hidden", func(s *Spec) { s.Flow.Hidden = []int{1 << 20} }, `flow parameters, want at most`},
		{"flow couplings", func(s *Spec) { s.Flow.Checkerboard, s.Flow.Channel = 0, 0 }, `no couplings`},
		{"flow too many convolutions", func(s *Spec) { s.Flow.Checkerboard, s.Flow.Channel, s.Flow.ResBlocks = 64, 64, 10 }, `imply 256 couplings of 24 convolutions`},
		{"flow checkerboard", func(s *Spec) { s.Flow.Checkerboard = 65 }, `"flow.checkerboard" is 65, want 0..64`},
		{"flow dt", func(s *Spec) { s.Flow.Dt = -1 }, `"flow.dt" is -1`},
		{"flow mask", func(s *Spec) { s.Flow.Mask = "half" }, `"flow.mask" is not a conv RealNVP's`},
		{"flow image", func(s *Spec) { s.Flow.Image = []int{2, 4, 16} }, `"flow.image" is [2 4 16], "ebm.image" [2 8 8]`},
		{"realnvp with scales", func(s *Spec) { s.Flow.Kind = ""; s.Flow.Blocks = 1 }, `"flow.image" is a conv RealNVP's`},
	} {
		var s Spec
		if err := json.Unmarshal(raw, &s); err != nil {
			t.Fatal(err)
		}
		c.edit(&s)
		_, err := s.Build(rand.New(rand.NewPCG(1, 1)))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error with %s", c.name, err, c.want)
		}
	}
	// On disk too: Load names the folder's spec.json.
	dir := t.TempDir()
	if err := Save(dir, m); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(filepath.Join(dir, "spec.json"))
	if err := os.WriteFile(filepath.Join(dir, "spec.json"), []byte(strings.Replace(string(b), `"channels": [`, `"channels": [0, `, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := Load(dir); err == nil || !strings.Contains(err.Error(), `"ebm.channels" has 0`) {
		t.Errorf("Load of a bad conv spec: %v", err)
	}
}
