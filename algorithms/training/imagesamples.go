package training

import (
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"

	"gonum.org/v1/gonum/mat"

	"github.com/flowebm/flowebm/algorithms"
	"github.com/flowebm/flowebm/algorithms/experiments"
	"github.com/flowebm/flowebm/io/npy"
	"github.com/flowebm/flowebm/io/npz"
)

// The image experiments' final figures follow App. C.6: the last state of
// ImageChains chains of ImageChainSteps gradient steps started from the
// persistent state (paper Fig. 8; CoopFlow's start from its flow and are
// as long as its training chains, see ImageKernelSteps), and the energies
// of those samples against the data's (Fig. 7).
const (
	ImageChains     = 64
	ImageChainSteps = 512
	// ImageSamplesFile holds them in a run folder (see ImageSamples).
	ImageSamplesFile = "image-samples.npz"
)

// ImageSamples are the data of the image experiments' final figures.
type ImageSamples struct {
	// Chains are the final states of the ImageChains chains, in the data's
	// units (rows × d).
	Chains *mat.Dense
	// DataEnergy, BankEnergy and ChainEnergy are −log p̃_θ (the energy
	// with the base ρ of the tilt, up to log Z) of the held-out images, of
	// the persistent bank (the last negatives for CoopFlow) and of Chains.
	DataEnergy, BankEnergy, ChainEnergy []float64
}

// ImageKernelSteps is how many steps of the algorithm's kernel make the
// figure's chains: ImageChainSteps gradient steps, so that a flowMC-EBM
// chain, whose step is a cycle of one global move and LocalSteps MALA
// steps, runs ImageChainSteps/LocalSteps cycles (rounded up) and every
// algorithm's chains cost about as many gradients of the EBM. CoopFlow's
// chains are as long as its training chains (Sampler.Steps, at least 1):
// they are noise-free Langevin runs from the flow, which over
// ImageChainSteps steps would descend to the EBM's modes and show
// minimisers instead of what CoopFlow samples.
func ImageKernelSteps(t algorithms.TrainConfig) int {
	switch {
	case t.Algorithm == algorithms.CoopFlow:
		return max(1, t.Sampler.Steps)
	case t.Algorithm == algorithms.FlowMC && t.Sampler.LocalSteps > 1:
		return (ImageChainSteps + t.Sampler.LocalSteps - 1) / t.Sampler.LocalSteps
	}
	return ImageChainSteps
}

// NewImageSamples runs the figure's chains with the algorithm's kernel
// from the averaged EBM (as the evaluations do) and computes the energies.
// It draws from its own stream keyed by the seed, so that it changes
// nothing in training and a resumed run repeats it.
func (r *Run) NewImageSamples() (*ImageSamples, error) {
	if r.Experiment.Kind != experiments.KindImages {
		return nil, fmt.Errorf("training: %s is not an image experiment", r.Experiment.Name)
	}
	var s ImageSamples
	steps := ImageKernelSteps(r.Config.Train)
	err := r.Trainer.WithAveraged(func() error {
		rng := rand.New(rand.NewPCG(r.Config.Seed^0xf168, uint64(r.Trainer.Iter)))
		x, err := r.Trainer.FinalStates(rng, min(ImageChains, r.bankRows()), steps)
		if err != nil {
			return err
		}
		energy := func(x mat.Matrix) ([]float64, error) {
			n, _ := x.Dims()
			e := make([]float64, n)
			if err := inChunks(r.Trainer.EBM.LogDensity)(x, e); err != nil {
				return nil, err
			}
			for i := range e {
				e[i] = -e[i]
			}
			return e, nil
		}
		if s.DataEnergy, err = energy(r.heldOut); err != nil {
			return err
		}
		if s.BankEnergy, err = energy(r.Trainer.Samples()); err != nil {
			return err
		}
		if s.ChainEnergy, err = energy(x); err != nil {
			return err
		}
		s.Chains = mat.DenseCopyOf(inDataUnits(r.Experiment, x))
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("the image figures' %d chains of %d steps: %w", ImageChains, steps, err)
	}
	return &s, nil
}

// bankRows is the number of chains the figure can start: the persistent
// bank's rows (CoopFlow's chains start from the flow, any number).
func (r *Run) bankRows() int {
	if !r.Trainer.Config.PersistentChains() {
		return ImageChains
	}
	return r.Trainer.Config.Persistent
}

// WriteImageSamples computes the image figures' data and writes them to
// the run folder's ImageSamplesFile, atomically: members chains (rows × d,
// data units), energy_data, energy_bank and energy_chains. Experiments
// other than images write nothing.
func WriteImageSamples(r *Run) error {
	if r.Experiment.Kind != experiments.KindImages {
		return nil
	}
	s, err := r.NewImageSamples()
	if err != nil {
		return err
	}
	n, d := s.Chains.Dims()
	vec := func(v []float64) *npy.Array { return &npy.Array{Shape: []int{len(v)}, Data: v} }
	return npz.WriteFile(filepath.Join(r.Dir, ImageSamplesFile), map[string]*npy.Array{
		"chains":        {Shape: []int{n, d}, Data: s.Chains.RawMatrix().Data},
		"energy_data":   vec(s.DataEnergy),
		"energy_bank":   vec(s.BankEnergy),
		"energy_chains": vec(s.ChainEnergy),
	}, npy.Float64)
}

// ReadImageSamples reads a run folder's ImageSamplesFile: chains of at
// least one row and column, and one energy_chains value per chain.
func ReadImageSamples(dir string) (*ImageSamples, error) {
	path := filepath.Join(dir, ImageSamplesFile)
	a, err := npz.ReadFile(path)
	if err != nil {
		return nil, err
	}
	get := func(key string, rank int) (*npy.Array, error) {
		m, err := a.Get(key)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if len(m.Shape) != rank {
			return nil, fmt.Errorf("%s: member %q has shape %v: want an array of rank %d", path, key, m.Shape, rank)
		}
		return m, nil
	}
	var s ImageSamples
	c, err := get("chains", 2)
	if err != nil {
		return nil, err
	}
	if c.Shape[0] == 0 || c.Shape[1] == 0 {
		return nil, fmt.Errorf("%s: member \"chains\" has shape %v: want at least one chain of at least one value", path, c.Shape)
	}
	s.Chains = mat.NewDense(c.Shape[0], c.Shape[1], c.Data)
	for key, dst := range map[string]*[]float64{"energy_data": &s.DataEnergy, "energy_bank": &s.BankEnergy, "energy_chains": &s.ChainEnergy} {
		m, err := get(key, 1)
		if err != nil {
			return nil, err
		}
		*dst = m.Data
	}
	if len(s.ChainEnergy) != c.Shape[0] {
		return nil, fmt.Errorf("%s: member \"energy_chains\" has %d values, want one for each of the %d chains", path, len(s.ChainEnergy), c.Shape[0])
	}
	return &s, nil
}

// ReadImageSamplesOf reads a run folder's ImageSamplesFile as
// ReadImageSamples does and checks that its chains are images of shape:
// C·H·W columns.
func ReadImageSamplesOf(dir string, shape experiments.ImageShape) (*ImageSamples, error) {
	s, err := ReadImageSamples(dir)
	if err != nil {
		return nil, err
	}
	d := shape.Channels * shape.Height * shape.Width
	if _, c := s.Chains.Dims(); c != d {
		return nil, fmt.Errorf("%s: member \"chains\" has %d columns, want %d (%d×%d×%d)", filepath.Join(dir, ImageSamplesFile), c, d, shape.Channels, shape.Height, shape.Width)
	}
	return s, nil
}

// CheckImageSamples checks a finished image run's ImageSamplesFile
// against what the run computes again from its final checkpoint
// (NewImageSamples, from its own seeded stream): another seed's file, or
// one with edited energies, was drawn as the run's (round 106 B5). Nil
// where they are equal.
func (r *Run) CheckImageSamples() error {
	got, err := ReadImageSamplesOf(r.Dir, *r.Experiment.Image)
	if err != nil {
		return err
	}
	want, err := r.NewImageSamples()
	if err != nil {
		return err
	}
	path := filepath.Join(r.Dir, ImageSamplesFile)
	if !r.Trainer.Config.PersistentChains() && r.Trainer.Negatives() == nil { // CoopFlow's last negatives, which a checkpoint written before they were kept lacks (round 107 A1)
		want.BankEnergy = got.BankEnergy
	}
	for _, c := range []struct {
		member    string
		got, want []float64
	}{
		{"chains", got.Chains.RawMatrix().Data, want.Chains.RawMatrix().Data},
		{"energy_data", got.DataEnergy, want.DataEnergy},
		{"energy_bank", got.BankEnergy, want.BankEnergy},
		{"energy_chains", got.ChainEnergy, want.ChainEnergy},
	} {
		if !slices.EqualFunc(c.got, c.want, func(a, b float64) bool { return a == b || math.IsNaN(a) && math.IsNaN(b) }) {
			return fmt.Errorf("%s: member %q is not the run's (as its final checkpoint gives it): another run's, or edited", path, c.member)
		}
	}
	return nil
}
