package plots

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"gonum.org/v1/plot/plotter"

	"github.com/flowebm/flowebm/samplers/diagnostics"
)

// ChainFigure is a diagnostic figure of one quantity's chains, with the
// name of its kind ("trace", "rank", "autocorrelation", "ess").
type ChainFigure struct {
	Kind   string
	Figure Figure
}

// Chain figures show at most maxChainCurves chains (shownChains), the
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
// beside the 400 that Vehtari et al. recommend. labels name the chains in
// the legends (nil: chain 1, 2, …; a CSV's chain numbers otherwise).
// Beyond maxChainCurves chains, the chains drawn are those whose ranks
// stray furthest from the others', and the titles say so (probe 63: the
// first 8 of 64 were drawn, with nothing said, and a stuck chain 41 was
// not among them).
func ChainFigures(x [][]float64, name string, labels []string) []ChainFigure {
	c := chainSet{x: x, shown: shownChains(x), labels: labels}
	return []ChainFigure{
		{"trace", c.traceFigure(name)},
		{"rank", c.rankFigure(name)},
		{"autocorrelation", c.acfFigure(name)},
		{"ess", essFigure(x, name)},
	}
}

// chainSet is chains x, the indices of those drawn, and their labels.
type chainSet struct {
	x      [][]float64
	shown  []int
	labels []string
}

// name is chain c's legend entry.
func (s chainSet) name(c int) string {
	if c < len(s.labels) {
		return "chain " + s.labels[c]
	}
	return fmt.Sprintf("chain %d", c+1)
}

// of is the note a title takes where not every chain is drawn.
func (s chainSet) of() string {
	if len(s.shown) == len(s.x) {
		return ""
	}
	return fmt.Sprintf(" (%d of %d chains: those whose ranks stray furthest)", len(s.shown), len(s.x))
}

// constantChains is why the autocorrelation and ESS figures of chains
// may have no point (probe 59: they said "no data yet").
const constantChains = "undefined: every chain is constant"

// shownChains are the indices of the chains drawn, in order: all, or the
// maxChainCurves whose mean rank (bulk) or mean rank of the draws folded
// about the median (tail) lies furthest from the others', as R-hat reads
// them.
func shownChains(x [][]float64) []int {
	idx := make([]int, len(x))
	for i := range idx {
		idx[i] = i
	}
	if len(x) <= maxChainCurves {
		return idx
	}
	bulk, tail := meanRanks(x), meanRanks(diagnostics.Fold(x))
	stray := func(c int) float64 { return math.Max(math.Abs(bulk[c]-0.5), math.Abs(tail[c]-0.5)) }
	slices.SortStableFunc(idx, func(a, b int) int { return cmp.Compare(stray(b), stray(a)) })
	idx = idx[:maxChainCurves]
	slices.Sort(idx)
	return idx
}

// meanRanks is each chain's mean rank among all draws, as a fraction.
func meanRanks(x [][]float64) []float64 {
	r := diagnostics.Ranks(x)
	total := 0
	for _, ch := range x {
		total += len(ch)
	}
	m := make([]float64, len(x))
	for c, rc := range r {
		for _, v := range rc {
			m[c] += v / float64(total) / float64(len(rc))
		}
	}
	return m
}

// traceFigure draws each shown chain's draws, at most maxTracePoints of
// them (a PNG of 20000 draws per chain took 24 s): thinned, each of
// maxTracePoints/2 runs of consecutive draws keeps its smallest and its
// largest, in the order they came, so that a spike or a stuck stretch
// shows whatever its length (probe 59: every k-th draw hid a chain's
// 4-draw excursion to 50 among draws within ±4).
func (s chainSet) traceFigure(name string) Figure {
	f := Figure{Title: "trace of " + name + s.of(), XLabel: "draw", YLabel: name}
	for _, c := range s.shown {
		f.Curves = append(f.Curves, Curve{Name: s.name(c), Points: tracePoints(s.x[c], maxTracePoints), Thin: true})
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
func (s chainSet) rankFigure(name string) Figure {
	x := s.x
	r := diagnostics.Ranks(x)
	total := 0
	for _, ch := range x {
		total += len(ch)
	}
	f := Figure{Title: "rank histograms of " + name + " (uniform when the chains mix)" + s.of(), XLabel: "rank among all draws (bin centre, fraction)", YLabel: "draws in the bin"}
	for _, c := range s.shown {
		counts := make([]float64, rankBins)
		for _, v := range r[c] {
			b := min(int((v-0.5)/float64(total)*rankBins), rankBins-1)
			counts[b]++
		}
		pts := make(plotter.XYs, rankBins)
		for b, n := range counts {
			pts[b] = plotter.XY{X: (float64(b) + 0.5) / rankBins, Y: n}
		}
		f.Curves = append(f.Curves, Curve{Name: s.name(c), Points: pts})
	}
	if len(x) > 0 {
		f.Thresholds = []Threshold{{float64(len(x[0])) / rankBins, "uniform"}}
	}
	return f
}

func (s chainSet) acfFigure(name string) Figure {
	f := Figure{Title: "autocorrelation of " + name + s.of(), XLabel: "lag", YLabel: "autocorrelation", YMin: -1, YMax: 1, Empty: constantChains}
	for _, c := range s.shown {
		acf := diagnostics.Autocorrelation(s.x[c], maxLag)
		pts := make(plotter.XYs, len(acf))
		for t, v := range acf {
			pts[t] = plotter.XY{X: float64(t), Y: v}
		}
		f.Curves = append(f.Curves, Curve{Name: s.name(c), Points: pts})
	}
	if !slices.ContainsFunc(f.Curves, func(c Curve) bool { return !allNaN(c.Points) }) {
		// An empty frame over the lags (round 76 B3: x from -1 to 1).
		lags := 0
		if len(s.x) > 0 {
			lags = min(maxLag, len(s.x[0])-1)
		}
		f.Curves = nil
		f.XMin, f.XMax = 0, float64(max(lags, 1))
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
		if n < 2*diagnostics.MinESSDraws {
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
	if allNaN(tail) && !allNaN(bulk) { // round 85: the tail curve was missing, unsaid
		f.Title += "\ntail ESS undefined: the indicator of the 5% or 95% quantile is constant over all draws"
	}
	if draws < 2*diagnostics.MinESSDraws { // round 93 A1: called constant
		f.Empty = fmt.Sprintf("undefined: %d draws per chain, fewer than %d", draws, 2*diagnostics.MinESSDraws)
	}
	if allNaN(bulk) && allNaN(tail) {
		// An empty frame over the draws, 0 to twice the threshold
		// (probe 67 B5: x from -1 to 1, y from 399 to 401).
		f.Curves = nil
		f.XMin, f.XMax, f.YMin, f.YMax = 0, float64(max(draws, 1)), 0, 800
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
