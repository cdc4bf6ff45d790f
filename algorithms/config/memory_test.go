package config

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/flowebm/flowebm/algorithms/experiments"
	"github.com/flowebm/flowebm/internal/sysmem"
)

// resolveJSON resolves the run configuration js on two-modes under the
// default memory limit.
func resolveJSON(t *testing.T, js string) error {
	t.Helper()
	defer func(f func() float64) { memoryLimit = f }(memoryLimit)
	memoryLimit = func() float64 { return sysmem.DefaultLimit }
	var cfg Run
	if err := json.Unmarshal([]byte(js), &cfg); err != nil {
		t.Fatal(err)
	}
	exp, err := experiments.ByName("two-modes")
	if err != nil {
		t.Fatal(err)
	}
	if err := cfg.Validate(); err != nil {
		return err
	}
	return cfg.Resolve(exp)
}

// The graphs' intermediate values are counted for the batches the trainer
// builds them on: coopflow's pretraining batch (1e8 rows grew to 22.7 GB
// and was killed) and the chains of batch_size (ULA at 400,000 needs about
// 10 GB: 26 KB a row measured); the same configurations at sizes that fit
// are accepted.
func TestMemoryCountsTrainingBatches(t *testing.T) {
	const eval = `"grid_size": 20, "rhat_chains": 8, "log_z_samples": 64`
	for _, c := range []struct{ json, want string }{
		{`{"experiment": "two-modes", "data_size": 256, "train": {"algorithm": "coopflow", "iterations": 2, "batch_size": 16, "persistent": 32,
			"pretrain": {"steps": 2, "batch_size": 100000000}}, ` + eval + `}`,
			"the flow's intermediate values for pretrain.batch_size 100000000 points"},
		{`{"experiment": "two-modes", "data_size": 400000, "train": {"algorithm": "ula", "iterations": 2, "batch_size": 400000, "persistent": 400000,
			"sampler": {"steps": 2}}, ` + eval + `}`,
			"the EBM's intermediate values for batch_size 400000 points"},
		{`{"experiment": "two-modes", "data_size": 150000, "train": {"algorithm": "nt", "iterations": 2, "batch_size": 150000, "persistent": 150000,
			"sampler": {"steps": 2}}, ` + eval + `}`,
			"the flow's intermediate values for 3 × batch_size 150000 chains (NT-EBM's MALA through the flow) points"},
		{`{"experiment": "two-modes", "data_size": 256, "train": {"algorithm": "coopflow", "iterations": 2, "batch_size": 16, "persistent": 32,
			"pretrain": {"steps": 2, "batch_size": 200000}}, ` + eval + `}`, ""},
		{`{"experiment": "two-modes", "data_size": 50000, "train": {"algorithm": "ula", "iterations": 2, "batch_size": 50000, "persistent": 50000,
			"sampler": {"steps": 2}}, ` + eval + `}`, ""},
	} {
		err := resolveJSON(t, c.json)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%.150s: %v", c.json, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), "algorithms: the configuration needs about") || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%.150s: %v, want the memory message naming %q", c.json, err, c.want)
		}
	}
}
