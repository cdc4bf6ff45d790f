package training

import (
	"testing"

	"github.com/flowebm/flowebm/algorithms"
	"github.com/flowebm/flowebm/algorithms/settings"
)

// BenchmarkTrainStep times one flowMC-EBM training iteration with each
// benchmarked experiment's default configuration (bench/ compares the same
// iteration with PyTorch).
func BenchmarkTrainStep(b *testing.B) {
	for _, exp := range []string{"two-modes", "four-modes", "four-gaussians-64"} {
		for _, f32 := range []bool{false, true} {
			name := exp + "/float64"
			if f32 {
				name = exp + "/float32"
			}
			b.Run(name, func(b *testing.B) {
				cfg, _, err := settings.Defaults(exp, algorithms.FlowMC)
				if err != nil {
					b.Fatal(err)
				}
				cfg.Model.Float32 = f32
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
			})
		}
	}
}
