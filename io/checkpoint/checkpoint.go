// Package checkpoint stores models as a folder holding spec.json (the
// architecture) and weights.npz (parameters with PyTorch-style names), so
// that a model can be rebuilt and reloaded, by flowebm or by a few lines of
// NumPy/PyTorch.
//
// spec.json, format "flowebm-checkpoint/1":
//
//	{
//	  "format": "flowebm-checkpoint/1",
//	  "dtype": "float64",                       // or "float32"
//	  "base_sigma": [1.5, 1.5],                 // σ of the base ρ = N(0, diag σ²), the EBM's tilt
//	  "ebm": {"sizes": [2, 32, 64, 64, 64, 1],  // MLP energy d→…→1
//	          "activation": "leaky_relu(0.05)",
//	          "layout": "sequential",           // names net.0, net.2, … ("modulelist": net.0, net.1, …)
//	          "name": "net"},
//	  "flow": {"dim": 2, "blocks": 4, "block_depth": 1, "hidden": [16],
//	           "activation": "relu", "mask": "half", "name": "couplings"},
//	  "standardization": {"shift": [..], "scale": [..]}  // optional, see below
//	}
//
// Models trained on a user's data set live in standardised coordinates
// z = (x − shift) / scale; "standardization" then gives the map to the
// data's units x, and Models.Energy evaluates the model there.
//
// weights.npz holds "ebm.<name>" and "flow.<name>" members, e.g.
// "ebm.net.0.weight" (32, 2) and "flow.couplings.0.s.0.weight" (16, 2), in
// the spec's dtype. "flow" is omitted for models without a flow.
package checkpoint

import (
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"

	"github.com/flowebm/flowebm/graph"
	"github.com/flowebm/flowebm/io/data"
	"github.com/flowebm/flowebm/io/npy"
	"github.com/flowebm/flowebm/io/npz"
	"github.com/flowebm/flowebm/io/safefile"
	"github.com/flowebm/flowebm/layers"
	"gonum.org/v1/gonum/mat"
	"gorgonia.org/tensor"
)

// Format is the value of spec.json's "format" field.
const Format = "flowebm-checkpoint/1"

// EBMSpec describes an MLP energy network.
type EBMSpec struct {
	Sizes      []int  `json:"sizes"`
	Activation string `json:"activation"`
	Layout     string `json:"layout"`
	Name       string `json:"name"`
}

// FlowSpec describes a RealNVP flow (layers.RealNVP).
type FlowSpec struct {
	Dim        int    `json:"dim"`
	Blocks     int    `json:"blocks"`
	BlockDepth int    `json:"block_depth"`
	Hidden     []int  `json:"hidden"`
	Activation string `json:"activation"`
	Mask       string `json:"mask"`
	MaskWidth  int    `json:"mask_width,omitempty"`
	Name       string `json:"name"`
}

// Spec is the content of spec.json.
type Spec struct {
	Format    string    `json:"format"`
	Dtype     string    `json:"dtype"`
	BaseSigma []float64 `json:"base_sigma"`
	EBM       EBMSpec   `json:"ebm"`
	Flow      *FlowSpec `json:"flow,omitempty"`
	// Standardization maps the models' coordinates to the data's units
	// (absent: they are the data's units).
	Standardization *data.Scaling `json:"standardization,omitempty"`
}

// Models are the models a checkpoint holds.
type Models struct {
	EBM  *graph.EBM
	Flow *graph.Flow // may be nil
	// Scaling maps the models' coordinates to the data's units (nil: the
	// identity).
	Scaling *data.Scaling
}

// Energy writes, for every row of x (in the data's units), minus the log of
// the learned unnormalised density there, tilt and standardisation
// included: E(z) − log ρ(z) + Σ log scale with z the standardised x and ρ
// the normalised base N(0, diag σ²). exp(−energy) thus integrates over the
// data space to the EBM's normaliser Z = ∫ exp(−E) ρ (1 at
// initialisation), and sums over a grid to the model's mass there (× Z).
func (m Models) Energy(x mat.Matrix, energy []float64) error {
	return m.EnergyGrad(x, energy, nil)
}

// EnergyGrad is Energy that also writes ∇ₓ of the energy (in the data's
// units) into grad, unless grad is nil.
func (m Models) EnergyGrad(x mat.Matrix, energy []float64, grad *mat.Dense) error {
	z := x
	if m.Scaling != nil {
		z = m.Scaling.FromData(x)
	}
	var err error
	if grad == nil {
		err = m.EBM.LogDensity(z, energy)
	} else {
		err = m.EBM.LogDensityGrad(z, energy, grad)
	}
	if err != nil {
		return err
	}
	logdet := 0.0
	if m.Scaling != nil {
		logdet = m.Scaling.LogDet()
	}
	for i := range energy {
		energy[i] = logdet - energy[i]
	}
	if grad != nil {
		// ∇ₓ = −∇_z log p̃ / scale, coordinate by coordinate.
		r, c := grad.Dims()
		for i := 0; i < r; i++ {
			for j := 0; j < c; j++ {
				s := 1.0
				if m.Scaling != nil {
					s = m.Scaling.Scale[j]
				}
				grad.Set(i, j, -grad.At(i, j)/s)
			}
		}
	}
	return nil
}

// SpecOf describes m. The EBM's network must be a graph.MLPEnergy.
func SpecOf(m Models) (Spec, error) {
	net, ok := m.EBM.Net.(graph.MLPEnergy)
	if !ok {
		return Spec{}, fmt.Errorf("checkpoint: energy network %T cannot be described (only MLP energies can)", m.EBM.Net)
	}
	s := Spec{Format: Format, Dtype: m.EBM.Params.Dtype().String(),
		EBM: EBMSpec{Sizes: net.Sizes, Activation: net.Hidden.String(), Layout: layoutName(net.Layout), Name: net.Name}}
	if m.EBM.Tilt != nil {
		s.BaseSigma = m.EBM.Tilt.Sigma
	}
	if m.Scaling != nil {
		if err := m.Scaling.Validate(); err != nil {
			return Spec{}, fmt.Errorf("checkpoint: standardization: %w", err)
		}
		if m.Scaling.Dim() != m.EBM.Dim() {
			return Spec{}, fmt.Errorf("checkpoint: standardization has %d coordinates, the EBM %d", m.Scaling.Dim(), m.EBM.Dim())
		}
		s.Standardization = m.Scaling
	}
	if m.Flow != nil {
		n := m.Flow.Net
		act := n.Activation
		if act == (layers.Activation{}) {
			act = layers.ReLU
		}
		s.Flow = &FlowSpec{Dim: n.Dim, Blocks: n.Blocks, BlockDepth: max(n.BlockDepth, 1), Hidden: n.Hidden,
			Activation: act.String(), Mask: or(n.Mask, layers.MaskHalf), MaskWidth: n.MaskWidth, Name: or(n.Name, "couplings")}
		if s.BaseSigma == nil {
			s.BaseSigma = m.Flow.Base.Sigma
		}
	}
	return s, nil
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func layoutName(l layers.Layout) string {
	if l == layers.Sequential {
		return "sequential"
	}
	return "modulelist"
}

// Build constructs untrained models from a spec (weights initialised with
// rng, as a fresh model would be). Errors name the offending field.
func (s Spec) Build(rng *rand.Rand) (Models, error) {
	if s.Format != Format {
		return Models{}, fmt.Errorf("spec.json: field \"format\" is %q, want %q", s.Format, Format)
	}
	var dt tensor.Dtype
	switch s.Dtype {
	case "float64":
		dt = tensor.Float64
	case "float32":
		dt = tensor.Float32
	default:
		return Models{}, fmt.Errorf("spec.json: field \"dtype\" is %q, want \"float32\" or \"float64\"", s.Dtype)
	}
	if len(s.EBM.Sizes) < 2 || s.EBM.Sizes[len(s.EBM.Sizes)-1] != 1 {
		return Models{}, fmt.Errorf("spec.json: field \"ebm.sizes\" is %v, want at least [d, 1] ending in 1", s.EBM.Sizes)
	}
	for _, v := range s.EBM.Sizes {
		if v < 1 || v > 1<<20 {
			return Models{}, fmt.Errorf("spec.json: field \"ebm.sizes\" has %d, want sizes in 1..2^20", v)
		}
	}
	act, err := layers.ParseActivation(s.EBM.Activation)
	if err != nil {
		return Models{}, fmt.Errorf("spec.json: field \"ebm.activation\": %w", err)
	}
	var layout layers.Layout
	switch s.EBM.Layout {
	case "sequential":
		layout = layers.Sequential
	case "modulelist":
		layout = layers.ModuleList
	default:
		return Models{}, fmt.Errorf("spec.json: field \"ebm.layout\" is %q, want \"sequential\" or \"modulelist\"", s.EBM.Layout)
	}
	d := s.EBM.Sizes[0]
	if len(s.BaseSigma) != d {
		return Models{}, fmt.Errorf("spec.json: field \"base_sigma\" has %d values, want %d (the dimension)", len(s.BaseSigma), d)
	}
	base := layers.NewDiagonal(s.BaseSigma)
	if err := base.Validate(); err != nil {
		return Models{}, fmt.Errorf("spec.json: field \"base_sigma\": %w", err)
	}
	net := graph.MLPEnergy{MLP: layers.MLP{Name: or(s.EBM.Name, "net"), Sizes: s.EBM.Sizes, Hidden: act, Layout: layout}}
	ebm, err := graph.NewEBM(net, &base, dt, rng)
	if err != nil {
		return Models{}, fmt.Errorf("spec.json: ebm: %w", err)
	}
	m := Models{EBM: ebm}
	if sc := s.Standardization; sc != nil {
		if err := sc.Validate(); err != nil {
			return Models{}, fmt.Errorf("spec.json: field \"standardization\": %w", err)
		}
		if sc.Dim() != d {
			return Models{}, fmt.Errorf("spec.json: field \"standardization\" has %d coordinates, want %d (the dimension)", sc.Dim(), d)
		}
		m.Scaling = sc
	}
	if f := s.Flow; f != nil {
		if f.Dim != d {
			return Models{}, fmt.Errorf("spec.json: field \"flow.dim\" is %d, want %d (the EBM's)", f.Dim, d)
		}
		if f.Blocks < 1 || f.Blocks > 1024 || f.BlockDepth < 0 || f.BlockDepth > 1024 {
			return Models{}, fmt.Errorf("spec.json: fields \"flow.blocks\" %d and \"flow.block_depth\" %d, want 1..1024", f.Blocks, f.BlockDepth)
		}
		for _, v := range f.Hidden {
			if v < 1 || v > 1<<20 {
				return Models{}, fmt.Errorf("spec.json: field \"flow.hidden\" has %d, want sizes in 1..2^20", v)
			}
		}
		fa, err := layers.ParseActivation(f.Activation)
		if err != nil {
			return Models{}, fmt.Errorf("spec.json: field \"flow.activation\": %w", err)
		}
		nvp := layers.RealNVP{Dim: f.Dim, Blocks: f.Blocks, BlockDepth: f.BlockDepth, Hidden: f.Hidden, Activation: fa, Mask: f.Mask, MaskWidth: f.MaskWidth, Name: f.Name}
		if m.Flow, err = graph.NewFlow(nvp, base, dt, rng); err != nil {
			return Models{}, fmt.Errorf("spec.json: flow: %w", err)
		}
	}
	return m, nil
}

// Save writes dir/spec.json and dir/weights.npz, each atomically, creating
// dir if needed.
func Save(dir string, m Models) error {
	spec, err := SpecOf(m)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	arrays := map[string]*npy.Array{}
	add := func(prefix string, p *graph.Params) {
		for _, q := range p.List() {
			arrays[prefix+q.Name] = &npy.Array{Shape: q.Shape, Data: q.Float64s()}
		}
	}
	add("ebm.", m.EBM.Params)
	if m.Flow != nil {
		add("flow.", m.Flow.Params)
	}
	dt := npy.Float64
	if spec.Dtype == "float32" {
		dt = npy.Float32
	}
	if err := npz.WriteFile(filepath.Join(dir, "weights.npz"), arrays, dt); err != nil {
		return err
	}
	return safefile.Write(filepath.Join(dir, "spec.json"), func(w io.Writer) error {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(spec)
	})
}

// Load rebuilds the models of dir/spec.json and sets their weights from
// dir/weights.npz. Every parameter must be present with its shape.
func Load(dir string) (Models, Spec, error) {
	specPath := filepath.Join(dir, "spec.json")
	b, err := os.ReadFile(specPath)
	if err != nil {
		return Models{}, Spec{}, err
	}
	var spec Spec
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&spec); err != nil {
		return Models{}, Spec{}, fmt.Errorf("%s: %w", specPath, err)
	}
	m, err := spec.Build(rand.New(rand.NewPCG(0, 0)))
	if err != nil {
		return Models{}, Spec{}, fmt.Errorf("%s: %w", dir, err)
	}
	wPath := filepath.Join(dir, "weights.npz")
	arc, err := npz.ReadFile(wPath)
	if err != nil {
		return Models{}, Spec{}, err
	}
	set := func(prefix string, p *graph.Params) error {
		for _, q := range p.List() {
			a, err := arc.Get(prefix + q.Name)
			if err != nil {
				return fmt.Errorf("%s: %w", wPath, err)
			}
			if fmt.Sprint(a.Shape) != fmt.Sprint(q.Shape) {
				return fmt.Errorf("%s: member %q has shape %v, want %v", wPath, prefix+q.Name, a.Shape, q.Shape)
			}
			if err := q.SetFloat64s(a.Data); err != nil {
				return fmt.Errorf("%s: member %q: %w", wPath, prefix+q.Name, err)
			}
		}
		return nil
	}
	if err := set("ebm.", m.EBM.Params); err != nil {
		return Models{}, Spec{}, err
	}
	if m.Flow != nil {
		if err := set("flow.", m.Flow.Params); err != nil {
			return Models{}, Spec{}, err
		}
	}
	return m, spec, nil
}
