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
// the check's batch of 2 (TopK's indices of data; Resize in linear mode,
// supported since session 38, see TestResizeRefusalsSayWhy); a graph
// that kept len(x) as a constant, failing in a later Gemm at that batch,
// is told how.
func TestDynamicRefusalsSayWhy(t *testing.T) {
	for name, want := range map[string]string{
		"topk_indices_dyn": `output 1 (the indices) of node "/TopK" (TopK) is not supported where TopK takes values computed from the input`,
		"lenview_gemm_dyn": "kept the export's batch as a constant, as PyTorch traces x.view(len(x), -1)",
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

// Einsum equations: explicit and implicit outputs, ellipses written out
// with unused letters (aligned on the right), diagonals kept as repeated
// letters; malformed ones refused.
func TestParseEinsum(t *testing.T) {
	for _, c := range []struct {
		eq              string
		ranks           []int
		terms, out, err string
	}{
		{"bi,ij,bj->b", []int{2, 2, 2}, "bi ij bj", "b", ""},
		{"ij,bj", []int{2, 2}, "ij bj", "bi", ""},
		{"bi,bi", []int{2, 2}, "bi bi", "", ""},
		{"b i , b i -> b", []int{2, 2}, "bi bi", "b", ""},
		{"...i,...i->...", []int{3, 2}, "ABi Bi", "AB", ""},
		{"...i,ij", []int{3, 2}, "ABi ij", "ABj", ""},
		{"bi,...ij->b...j", []int{2, 2}, "bi ij", "bj", ""},
		{"A...,...->...A", []int{2, 0}, "AB ", "BA", ""},
		{"ii->i", []int{2}, "ii", "i", ""},
		{"ii", []int{2}, "ii", "", ""},
		{"bii->b", []int{3}, "bii", "b", ""},
		{"...i->i", []int{0}, "", "", "has 1 letters for input 0 of rank 0"},
		{"i...i...->i", []int{4}, "", "", "more than one ellipsis"},
		{"i..j->i", []int{2}, "", "", "'.' is not a letter"},
		{"bi,bj->bk", []int{2, 2}, "", "", `output letter 'k' appears in no input`},
		{"bi->bb", []int{2}, "", "", `output letter 'b' appears in no input, or twice`},
		{"bi,ij", []int{2}, "", "", "has 2 input terms for 1 inputs"},
		{"b1->b", []int{2}, "", "", "'1' is not a letter"},
		{"bij->b", []int{2}, "", "", `term "bij" has 3 letters for input 0 of rank 2`},
	} {
		e, err := parseEinsum(c.eq, c.ranks)
		var terms []string
		for _, t := range e.terms {
			terms = append(terms, string(t))
		}
		switch {
		case c.err == "" && (err != nil || string(e.out) != c.out || strings.Join(terms, " ") != c.terms):
			t.Errorf("%q: terms %q, output %q, %v; want %q, %q", c.eq, terms, string(e.out), err, c.terms, c.out)
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("%q: %v; want %q", c.eq, err, c.err)
		}
	}
}

// parseEinsum reads any equation without panicking; what it accepts has
// one term per input, of the input's rank, and an output of letters from
// them, none twice.
func FuzzParseEinsum(f *testing.F) {
	for _, s := range []string{"bi,ij,bj->b", "ij,bj", "...i->i", "ii", "a->", "->", ",", "bqd,bkd->bqk", "...ij,...jk->...ik"} {
		f.Add(s, 2, 3)
	}
	f.Fuzz(func(t *testing.T, eq string, n, r int) {
		if n < 0 || n > 8 || r < 0 || r > 60 {
			return
		}
		ranks := make([]int, n)
		for i := range ranks {
			ranks[i] = r
		}
		e, err := parseEinsum(eq, ranks)
		if err != nil {
			return
		}
		if len(e.terms) != n {
			t.Fatalf("%q: %d terms for %d inputs", eq, len(e.terms), n)
		}
		for k, term := range e.terms {
			if len(term) != r {
				t.Fatalf("%q: term %d has %d letters, rank %d", eq, k, len(term), r)
			}
		}
		seen := map[rune]bool{}
		for _, c := range e.out {
			found := false
			for _, term := range e.terms {
				found = found || strings.ContainsRune(string(term), c)
			}
			if !found || seen[c] {
				t.Fatalf("%q: output letter %q in no input, or twice", eq, c)
			}
			seen[c] = true
		}
	})
}
