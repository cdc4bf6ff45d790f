package onnx

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/flowebm/flowebm/layers"
)

// Probe 57 A6: an MLP with nn.CELU() (ELU with α = 1) converts as elu;
// CELU(0.5) is refused as no activation a checkpoint's MLP holds.
func TestMLPCeluIsElu(t *testing.T) {
	n, err := ReadFile(filepath.Join("testdata", "pinned", "celu_mlp_f32.onnx"))
	if err != nil {
		t.Fatal(err)
	}
	m, _, err := n.MLP()
	if err != nil || m.Hidden.Kind != layers.ELU.Kind {
		t.Errorf("CELU(1): %+v, %v; want elu", m.Hidden, err)
	}
	n, err = ReadFile(filepath.Join("testdata", "pinned", "celu05_mlp_f32.onnx"))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := n.MLP(); err == nil || !strings.Contains(err.Error(), "is none of relu") {
		t.Errorf("CELU(0.5): %v", err)
	}
}

// Probe 57 A4: what is not supported is said without an explanation of
// the check's batch of 2 (TopK on data, Resize in linear mode); a graph
// that kept len(x) as a constant, failing in a later Gemm at that batch,
// is told how.
func TestDynamicRefusalsSayWhy(t *testing.T) {
	for name, want := range map[string]string{
		"topk_data_dyn":     `(TopK): input 0 ("/Pow_output_0") must be a constant, but it depends on the input or on parameters`,
		"resize_linear_dyn": `(Resize): mode "linear": only "nearest" is supported`,
		"lenview_gemm_dyn":  "kept the export's batch as a constant, as PyTorch traces x.view(len(x), -1)",
	} {
		_, err := ReadFile(filepath.Join("testdata", "pinned", name+".onnx"))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", name, err, want)
			continue
		}
		if batch := strings.Contains(err.Error(), "at a batch of 2 points"); batch != (name == "lenview_gemm_dyn") {
			t.Errorf("%s: %v; the batch explained: %v", name, err, batch)
		}
	}
}
