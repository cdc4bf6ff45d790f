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

// Einsum equations: explicit and implicit outputs; ellipses and
// diagonals refused as not supported; malformed ones refused.
func TestParseEinsum(t *testing.T) {
	for _, c := range []struct {
		eq       string
		n        int
		out, err string
	}{
		{"bi,ij,bj->b", 3, "b", ""},
		{"ij,bj", 2, "bi", ""},
		{"bi,bi", 2, "", ""},
		{"b i , b i -> b", 2, "b", ""},
		{"...i,...i->...", 2, "", "ellipses (...) are not supported"},
		{"ii->i", 1, "", "repeats within one input (a diagonal)"},
		{"bi,bj->bk", 2, "", `output letter 'k' appears in no input`},
		{"bi->bb", 1, "", `output letter 'b' appears in no input, or twice`},
		{"bi,ij", 1, "", "has 2 input terms for 1 inputs"},
		{"b1->b", 1, "", "'1' is not a letter"},
	} {
		_, out, err := parseEinsum(c.eq, c.n)
		switch {
		case c.err == "" && (err != nil || string(out) != c.out):
			t.Errorf("%q: output %q, %v; want %q", c.eq, string(out), err, c.out)
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("%q: %v; want %q", c.eq, err, c.err)
		}
	}
}

// parseEinsum reads any equation without panicking; what it accepts has
// one term per input, of letters, and an output of letters from them.
func FuzzParseEinsum(f *testing.F) {
	for _, s := range []string{"bi,ij,bj->b", "ij,bj", "...i->i", "ii", "a->", "->", ",", "bqd,bkd->bqk"} {
		f.Add(s, 2)
	}
	f.Fuzz(func(t *testing.T, eq string, n int) {
		if n < 0 || n > 8 {
			return
		}
		terms, out, err := parseEinsum(eq, n)
		if err != nil {
			return
		}
		if len(terms) != n {
			t.Fatalf("%q: %d terms for %d inputs", eq, len(terms), n)
		}
		for _, c := range out {
			found := false
			for _, term := range terms {
				found = found || strings.ContainsRune(string(term), c)
			}
			if !found {
				t.Fatalf("%q: output letter %q in no input", eq, c)
			}
		}
	})
}
