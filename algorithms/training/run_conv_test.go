package training

import (
	"bytes"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/flowebm/flowebm/algorithms"
	"github.com/flowebm/flowebm/algorithms/config"
	"github.com/flowebm/flowebm/io/checkpoint"
	"github.com/flowebm/flowebm/layers"
)

// fakeCIFAR10 writes a folder of CIFAR-10's binary batches holding
// perBatch training records per batch and test records: 3×32×32 images
// whose classes have patterns of their own.
func fakeCIFAR10(t *testing.T, perBatch, test int) string {
	t.Helper()
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(11, 12))
	write := func(name string, n int) {
		var b bytes.Buffer
		for i := 0; i < n; i++ {
			class := i % 10
			b.WriteByte(byte(class))
			for p := 0; p < 3072; p++ {
				b.WriteByte(byte((p*(class+1)*37+class*91)%200 + rng.IntN(40)))
			}
		}
		if err := os.WriteFile(filepath.Join(dir, name), b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"data_batch_1.bin", "data_batch_2.bin", "data_batch_3.bin", "data_batch_4.bin", "data_batch_5.bin"} {
		write(f, perBatch)
	}
	write("test_batch.bin", test)
	return dir
}

// convConfig is smallConfig's run on cifar10 read from dataDir (fake
// files) with tiny conv models: an EBM of channels 4, 8 and a conv RealNVP
// of one coupling of each kind per scale with 4 channels.
func convConfig(t *testing.T, alg algorithms.Algorithm, iters int, dataDir string) config.Run {
	t.Helper()
	cfg := smallConfig(t, alg, iters)
	cfg.Experiment, cfg.DataDir, cfg.DataSize = "cifar10", dataDir, 60
	cfg.Model = config.Model{EBM: config.EBMConv, EBMChannels: []int{4, 8}, Flow: config.FlowConvRealNVP, FlowBlocks: 1, FlowHidden: []int{4}}
	cfg.Train.BatchSize, cfg.Train.Persistent = 8, 16
	cfg.Train.Sampler.Particles = 4
	cfg.LogZSamples = 32
	cfg.RHatSteps, cfg.RHatEvery = 4, 1000 // R-hat at the last iteration only
	return cfg
}

// With model.ebm "conv" and model.flow "conv-realnvp" on an image
// experiment (cifar10 from fake files through data_dir) a run builds the
// image models from the experiment's 3×32×32 shape, trains both,
// checkpoints them (spec.json's kinds conv and conv-realnvp, data_dir in
// config.json) and, resumed, ends bit for bit where an uninterrupted run
// ends: parameters of both models, the averaged EBM, bank, last
// evaluation. flowMC-EBM samples from the flow; NT-EBM runs its chains
// through it.
func TestConvModelsRunResumes(t *testing.T) {
	data := fakeCIFAR10(t, 12, 20)
	for _, alg := range []algorithms.Algorithm{algorithms.FlowMC, algorithms.NT} {
		t.Run(string(alg), func(t *testing.T) {
			run := func(dir string) *Run {
				r, err := NewRun(convConfig(t, alg, 6, data), dir)
				if err != nil {
					t.Fatal(err)
				}
				return r
			}
			straight := run(t.TempDir())
			e, ok := straight.Trainer.EBM.Net.(layers.ImageEnergy)
			if !ok || e.Image != (layers.ImageShape{C: 3, H: 32, W: 32}) || !slices.Equal(e.Channels, []int{4, 8}) {
				t.Fatalf("the run's EBM is %T %+v, want a conv EBM of channels 4, 8 on 3×32×32 images", straight.Trainer.EBM.Net, straight.Trainer.EBM.Net)
			}
			f, ok := straight.Trainer.Flow.Net.(layers.ImageRealNVP)
			if !ok || f.Image != e.Image || f.Hidden != 4 || f.Checkerboard != 1 || f.ChannelWise != 1 {
				t.Fatalf("the run's flow is %T %+v, want a conv RealNVP", straight.Trainer.Flow.Net, straight.Trainer.Flow.Net)
			}
			initE, initF := straight.Trainer.EBM.Params.Flatten(nil), straight.Trainer.Flow.Params.Flatten(nil)
			stepN(t, straight, 6)
			if slices.Equal(initE, straight.Trainer.EBM.Params.Flatten(nil)) || slices.Equal(initF, straight.Trainer.Flow.Params.Flatten(nil)) {
				t.Error("the conv models did not train")
			}

			dir := t.TempDir()
			spec := checkpointAfter(t, run(dir), dir, 3)
			if spec.EBM.Kind != checkpoint.EBMKindConv || spec.Flow == nil || spec.Flow.Kind != checkpoint.FlowKindConvRealNVP || spec.Dim() != 3072 {
				t.Errorf("checkpoint's spec %+v, flow %+v", spec.EBM, spec.Flow)
			}
			b, err := os.ReadFile(filepath.Join(dir, "config.json"))
			if err != nil || !strings.Contains(string(b), `"ebm": "conv"`) || !strings.Contains(string(b), `"flow": "conv-realnvp"`) || !strings.Contains(string(b), `"data_dir": `) {
				t.Errorf("config.json %s, %v", b, err)
			}
			resumed := mustResume(t, dir)
			if _, ok := resumed.Trainer.EBM.Net.(layers.ImageEnergy); !ok || resumed.Trainer.Iter != 3 {
				t.Fatalf("resumed at iteration %d with an EBM %T", resumed.Trainer.Iter, resumed.Trainer.EBM.Net)
			}
			stepN(t, resumed, 3)
			wantResumedLikeStraight(t, straight, resumed)
			ea, eb := straight.Evals[5], resumed.Evals[5]                           // with R-hat
			same := func(a, b float64) bool { return a == b || (a != a && b != b) } // NaN: none (NT-EBM has no global moves)
			sa, sb := ea.Stats, eb.Stats
			if !same(sa.Loss, sb.Loss) || !same(sa.FlowLL, sb.FlowLL) || !same(sa.LocalAccept, sb.LocalAccept) || !same(sa.GlobalAccept, sb.GlobalAccept) ||
				!same(sa.StepSize, sb.StepSize) || !same(ea.HeldOutLL, eb.HeldOutLL) || !same(ea.MaxRHat, eb.MaxRHat) {
				t.Errorf("last evaluation differs: %+v (held-out %v, R-hat %v) vs %+v (%v, %v)", sa, ea.HeldOutLL, ea.MaxRHat, sb, eb.HeldOutLL, eb.MaxRHat)
			}
		})
	}
}

// Conv models are refused on an experiment without images, naming the
// field, before anything is built.
func TestConvModelsNeedImages(t *testing.T) {
	cfg := smallConfig(t, algorithms.FlowMC, 2)
	cfg.Model = config.Model{EBM: config.EBMConv}
	wantRefused(t, cfg, `model.ebm "conv" needs an image experiment`, "two-modes has no images")
	cfg.Model = config.Model{Flow: config.FlowConvRealNVP}
	wantRefused(t, cfg, `model.flow "conv-realnvp" needs an image experiment`)
	cfg = smallConfig(t, algorithms.FlowMC, 2)
	cfg.DataDir = t.TempDir()
	wantRefused(t, cfg, "two-modes reads no data folder")
}
