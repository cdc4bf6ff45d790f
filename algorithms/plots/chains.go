package plots

import (
	"fmt"
	"math"

	"github.com/flowebm/flowebm/samplers/diagnostics"
	"gonum.org/v1/plot/plotter"
)

// ChainFigure is a diagnostic figure of one quantity's chains, with the
// name of its kind ("trace", "rank", "autocorrelation", "ess").
type ChainFigure struct {
	Kind   string
	Figure Figure
}

// Chain figures show at most maxChainCurves chains (the first ones), the
// autocorrelation up to maxLag, and rank histograms of rankBins bins.
const (
	maxChainCurves = 8
	maxLag         = 100
	rankBins       = 20
	essPoints      = 10
	maxTracePoints = 2000
)

// ChainFigures returns the diagnostic figures of the chains x[chain][draw]
// of the quantity name: trace plots, rank histograms (Vehtari et al. 2021:
// each chain's ranks among all draws, uniform when the chains mix), each
// chain's autocorrelation, and the bulk and tail ESS as the chains grow,
// beside the 400 that Vehtari et al. recommend.
func ChainFigures(x [][]float64, name string) []ChainFigure {
	return []ChainFigure{
		{"trace", traceFigure(x, name)},
		{"rank", rankFigure(x, name)},
		{"autocorrelation", acfFigure(x, name)},
		{"ess", essFigure(x, name)},
	}
}

// constantChains is why the autocorrelation and ESS figures of chains
// may have no point (probe 59: they said "no data yet").
const constantChains = "undefined: every chain is constant"

func shownChains(x [][]float64) int { return min(len(x), maxChainCurves) }

func chainName(c int) string { return fmt.Sprintf("chain %d", c+1) }

// traceFigure draws each shown chain's draws, at most maxTracePoints of
// them (a PNG of 20000 draws per chain took 24 s): thinned, each of
// maxTracePoints/2 runs of consecutive draws keeps its smallest and its
// largest, in the order they came, so that a spike or a stuck stretch
// shows whatever its length (probe 59: every k-th draw hid a chain's
// 4-draw excursion to 50 among draws within ±4).
func traceFigure(x [][]float64, name string) Figure {
	f := Figure{Title: "trace of " + name, XLabel: "draw", YLabel: name}
	for c := 0; c < shownChains(x); c++ {
		f.Curves = append(f.Curves, Curve{Name: chainName(c), Points: tracePoints(x[c], maxTracePoints)})
	}
	return f
}

// tracePoints is the draws of ch, at most most of them: all where they fit,
// else the extremes of each run (traceFigure).
func tracePoints(ch []float64, most int) plotter.XYs {
	if len(ch) <= most {
		pts := make(plotter.XYs, len(ch))
		for n, v := range ch {
			pts[n] = plotter.XY{X: float64(n + 1), Y: v}
		}
		return pts
	}
	run := (len(ch) + most/2 - 1) / (most / 2)
	pts := make(plotter.XYs, 0, most)
	for start := 0; start < len(ch); start += run {
		lo, hi := start, start
		for n := start; n < min(start+run, len(ch)); n++ {
			if ch[n] < ch[lo] {
				lo = n
			}
			if ch[n] > ch[hi] {
				hi = n
			}
		}
		first, second := min(lo, hi), max(lo, hi)
		pts = append(pts, plotter.XY{X: float64(first + 1), Y: ch[first]})
		if second != first {
			pts = append(pts, plotter.XY{X: float64(second + 1), Y: ch[second]})
		}
	}
	return pts
}

// rankFigure draws each chain's histogram of ranks as a line over the
// bins, with the count a uniform histogram has.
func rankFigure(x [][]float64, name string) Figure {
	r := diagnostics.Ranks(x)
	total := 0
	for _, ch := range x {
		total += len(ch)
	}
	f := Figure{Title: "rank histograms of " + name + " (uniform when the chains mix)", XLabel: "rank among all draws (bin centre, fraction)", YLabel: "draws in the bin"}
	for c := 0; c < shownChains(x); c++ {
		counts := make([]float64, rankBins)
		for _, v := range r[c] {
			b := min(int((v-0.5)/float64(total)*rankBins), rankBins-1)
			counts[b]++
		}
		pts := make(plotter.XYs, rankBins)
		for b, n := range counts {
			pts[b] = plotter.XY{X: (float64(b) + 0.5) / rankBins, Y: n}
		}
		f.Curves = append(f.Curves, Curve{Name: chainName(c), Points: pts})
	}
	if len(x) > 0 {
		f.Thresholds = []Threshold{{float64(len(x[0])) / rankBins, "uniform"}}
	}
	return f
}

func acfFigure(x [][]float64, name string) Figure {
	f := Figure{Title: "autocorrelation of " + name, XLabel: "lag", YLabel: "autocorrelation", YMin: -1, YMax: 1, Empty: constantChains}
	for c := 0; c < shownChains(x); c++ {
		acf := diagnostics.Autocorrelation(x[c], maxLag)
		pts := make(plotter.XYs, len(acf))
		for t, v := range acf {
			pts[t] = plotter.XY{X: float64(t), Y: v}
		}
		f.Curves = append(f.Curves, Curve{Name: chainName(c), Points: pts})
	}
	return f
}

// essFigure computes the bulk and tail ESS of the first n draws of every
// chain for essPoints values of n.
func essFigure(x [][]float64, name string) Figure {
	f := Figure{Title: "effective sample size of " + name + " as the chains grow", XLabel: "draws per chain", YLabel: "ESS", Empty: constantChains}
	var bulk, tail plotter.XYs
	draws := 0
	if len(x) > 0 {
		draws = len(x[0])
	}
	for k := 1; k <= essPoints; k++ {
		n := draws * k / essPoints
		if n < 4 {
			continue
		}
		head := make([][]float64, len(x))
		for c := range x {
			head[c] = x[c][:n]
		}
		bulk = append(bulk, plotter.XY{X: float64(n), Y: diagnostics.BulkESS(head)})
		tail = append(tail, plotter.XY{X: float64(n), Y: diagnostics.TailESS(head)})
	}
	f.Curves = []Curve{{Name: "bulk ESS", Points: bulk}, {Name: "tail ESS", Points: tail}}
	f.Thresholds = []Threshold{{400, "400 (Vehtari et al. 2021)"}}
	if allNaN(bulk) && allNaN(tail) {
		f.Curves = nil
	}
	return f
}

func allNaN(pts plotter.XYs) bool {
	for _, p := range pts {
		if !math.IsNaN(p.Y) {
			return false
		}
	}
	return true
}
