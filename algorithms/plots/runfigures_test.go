package plots

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/flowebm/flowebm/algorithms"
)

// RunFigures names exactly the figures WriteRun draws (train --resume
// redraws a finished run's missing figures by it: round 97 B1), and
// FigureDamage takes each of them, whole, for whole and the same file
// emptied or cut by a few bytes for damaged.
func TestRunFigures(t *testing.T) {
	for _, alg := range []algorithms.Algorithm{algorithms.FlowMC, algorithms.ULA} {
		r := smallRun(t)
		r.Config.Train.Algorithm = alg
		for _, f := range []Format{PNG, SVG, PDF} {
			r.Dir = t.TempDir()
			if err := WriteRun(r, f); err != nil {
				t.Fatal(err)
			}
			var drawn []string
			entries, _ := os.ReadDir(r.Dir)
			for _, e := range entries {
				drawn = append(drawn, e.Name())
			}
			var want []string
			for _, n := range RunFigures(r) {
				want = append(want, n+f.Ext())
			}
			slices.Sort(want)
			if !slices.Equal(drawn, want) {
				t.Errorf("%s %s: WriteRun drew %q, RunFigures names %q", alg, f, drawn, want)
			}
			for _, name := range drawn {
				path := filepath.Join(r.Dir, name)
				if err := FigureDamage(path, f); err != nil {
					t.Errorf("whole %s: %v", name, err)
				}
				b, _ := os.ReadFile(path)
				if f == PNG { // round 101 B3: a byte flipped in the middle
					flipped := append([]byte(nil), b...)
					flipped[len(b)/2] ^= 0xff
					os.WriteFile(path, flipped, 0o644)
					if err := FigureDamage(path, f); err == nil {
						t.Errorf("%s with a byte flipped at %d: taken for whole", name, len(b)/2)
					}
				}
				for _, cut := range []int{len(b), 8} { // 8 bytes cut into each format's end marker
					if err := os.WriteFile(path, b[:len(b)-cut], 0o644); err != nil {
						t.Fatal(err)
					}
					if err := FigureDamage(path, f); err == nil {
						t.Errorf("%s cut by %d bytes of %d: taken for whole", name, cut, len(b))
					}
				}
			}
		}
	}
	if err := FigureDamage(filepath.Join(t.TempDir(), "density.png"), PNG); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing figure: %v", err)
	}
}
