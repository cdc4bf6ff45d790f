package training

import (
	"fmt"
	"testing"

	"github.com/flowebm/flowebm/algorithms"
	"github.com/flowebm/flowebm/algorithms/config"
	"github.com/flowebm/flowebm/algorithms/settings"
)

// BenchmarkTrainStep times one flowMC-EBM training iteration with each
// benchmarked experiment's default configuration (bench/ compares the same
// iteration with PyTorch), whole batches (shards=1) and split into the
// default number of blocks; -cpu 1,2 sets the workers.
func BenchmarkTrainStep(b *testing.B) {
	for _, exp := range []string{"two-modes", "four-modes", "four-gaussians-64"} {
		for _, f32 := range []bool{false, true} {
			for _, shards := range []int{1, config.DefaultShards} {
				dtype := "float64"
				if f32 {
					dtype = "float32"
				}
				b.Run(fmt.Sprintf("%s/%s/shards=%d", exp, dtype, shards), func(b *testing.B) {
					benchStep(b, exp, f32, shards)
				})
			}
		}
	}
}

func benchStep(b *testing.B, exp string, f32 bool, shards int) {
	cfg, _, err := settings.Defaults(exp, algorithms.FlowMC)
	if err != nil {
		b.Fatal(err)
	}
	cfg.Model.Float32, cfg.Model.Shards = f32, shards
	r, err := NewRun(cfg, "")
	if err != nil {
		b.Fatal(err)
	}
	for i := 0; i < 3; i++ { // compile every graph outside the timer
		if _, err := r.Trainer.Step(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := r.Trainer.Step(); err != nil {
			b.Fatal(err)
		}
	}
}
