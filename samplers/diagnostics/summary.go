package diagnostics

import (
	"encoding/json"
	"fmt"
	"math"
	"runtime"
	"sync"

	"gonum.org/v1/gonum/stat"
)

// Summary holds the convergence diagnostics of one scalar quantity.
type Summary struct {
	// Dim is the index of the quantity (the last axis of the draws).
	Dim int
	// RHat is the rank-normalised split R-hat (RHat).
	RHat float64
	// RHatClassic is the unsplit Gelman–Rubin R-hat (ClassicRHat).
	RHatClassic float64
	// ESSBulk and ESSTail are BulkESS and TailESS.
	ESSBulk float64
	ESSTail float64
	// Mean and SD are the mean and standard deviation (divisor n − 1) of
	// all draws pooled over chains.
	Mean float64
	SD   float64
	// ESSMean, ESSSD, ESSMedian and ESSRaw are ESSMean, ESSSD, ESSMedian
	// and ESS (unsplit, on the draws' own scale).
	ESSMean   float64
	ESSSD     float64
	ESSMedian float64
	ESSRaw    float64
	// MCSEMean, MCSESD and MCSEMedian are the Monte Carlo standard errors
	// of Mean, SD and the median (MCSEMean, MCSESD, MCSEMedian), in the
	// units of the draws.
	MCSEMean   float64
	MCSESD     float64
	MCSEMedian float64
}

// Summarize computes the Summary of each of dims quantities from draws laid
// out chains × draws × dims in row-major order (the layout of a NumPy array
// of that shape, and of samplers.Store.Draws). It returns an error, rather
// than NaN diagnostics, for no chain or fewer than 4 draws, a data length
// that does not match the shape, or a NaN or infinite draw (reporting the
// first one's position).
func Summarize(data []float64, chains, draws, dims int) ([]Summary, error) {
	if draws < 4 && chains >= 1 {
		return nil, fmt.Errorf("diagnostics: %d draw%s per chain, need at least 4", draws, plural(draws))
	}
	if err := checkDraws(data, chains, draws, dims); err != nil {
		return nil, err
	}
	out := make([]Summary, dims)
	eachDim(data, chains, draws, dims, func(d int, x [][]float64) {
		scale := rescale(x) // first: squares of draws near 1e-160 lose digits as subnormals (probe 50: sd off by 1.2e-4)
		// Ranks and quantiles from the draws as given (probe 61: centred,
		// two draws tied about the median were no longer, or the other way
		// round, and R-hat moved by up to 0.07 at 3 × 5); moments from the
		// centred draws (centre).
		s := Summary{Dim: d, RHat: RHat(x), ESSBulk: BulkESS(x), ESSTail: TailESS(x), ESSMedian: essQuantile(x, 0.5)}
		s.MCSEMedian = scale * mcseQuantile(x, 0.5, s.ESSMedian)
		shift := centre(x)
		mean, sd := meanSD(x, float64(chains*draws))
		s.Mean, s.SD = (shift+mean)*scale, sd*scale
		s.RHatClassic = ClassicRHat(x)
		addMomentEfficiency(&s, x, scale)
		out[d] = s
	})
	return out, nil
}

// SummarizeShort is Summarize for chains of at least one draw, too short
// for the other diagnostics (nested R-hat's regime of many short chains):
// only Mean and SD are computed, the rest NaN.
func SummarizeShort(data []float64, chains, draws, dims int) ([]Summary, error) {
	if err := checkDraws(data, chains, draws, dims); err != nil {
		return nil, err
	}
	nan := math.NaN()
	out := make([]Summary, dims)
	eachDim(data, chains, draws, dims, func(d int, x [][]float64) {
		scale := rescale(x)
		shift := centre(x)
		mean, sd := meanSD(x, float64(chains*draws))
		out[d] = Summary{Dim: d, Mean: (shift + mean) * scale, SD: sd * scale,
			RHat: nan, RHatClassic: nan, ESSBulk: nan, ESSTail: nan, ESSMean: nan, ESSSD: nan, ESSMedian: nan, ESSRaw: nan,
			MCSEMean: nan, MCSESD: nan, MCSEMedian: nan}
	})
	return out, nil
}

// checkDraws refuses no chain or no draw, a data length that
// does not match the shape, or a NaN or infinite draw (naming the first).
func checkDraws(data []float64, chains, draws, dims int) error {
	switch {
	case chains < 1:
		return fmt.Errorf("diagnostics: no chains, need at least 1")
	case draws < 1:
		return fmt.Errorf("diagnostics: no draws per chain, need at least 1")
	case dims < 1:
		return fmt.Errorf("diagnostics: %d dimensions, need at least 1", dims)
	case len(data) != chains*draws*dims:
		return fmt.Errorf("diagnostics: %d values for %d chains × %d draws × %d dims", len(data), chains, draws, dims)
	}
	for i, v := range data {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			c, rest := i/(draws*dims), i%(draws*dims)
			return fmt.Errorf("diagnostics: non-finite value %v at chain %d, draw %d, dim %d (numbered from 0, as the array's axes)", v, c, rest/dims, rest%dims) // round 135 B3: the base unsaid, where other messages count rows from 1
		}
	}
	return nil
}

// plural is "s" but for 1.
func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// MaxRHat is the largest rank-normalised R-hat (RHat) over the dims
// dimensions of data (chains × draws × dims, row-major, finite), computed
// on every core: sample prints it, and the whole Summarize took 0.5 s a
// dimension (probe 54: more than 15 minutes at d = 784 after the draws
// were written).
func MaxRHat(data []float64, chains, draws, dims int) float64 {
	r := make([]float64, dims)
	eachDim(data, chains, draws, dims, func(d int, x [][]float64) { r[d] = RHat(x) })
	worst := math.Inf(-1)
	for _, v := range r {
		worst = math.Max(worst, v)
	}
	return worst
}

// RHatBytes is about the most memory MaxRHat (and Summarize) hold at once
// for draws of chains × draws × dims values: each of Workers(dims)
// goroutines holds about 37 bytes a value of its dimension at peak
// (measured: 1000 chains × 4000 draws), 96 with the collector's garbage
// and a margin (probe 55: R-hat at the end of sample ran out of memory
// at a chain count said to fit, at 340 bytes a value then).
func RHatBytes(chains, draws, dims int) float64 {
	return float64(Workers(dims)) * float64(chains) * float64(draws) * 96
}

// Workers is how many dimensions MaxRHat and Summarize work on at once.
func Workers(dims int) int { return max(1, min(runtime.GOMAXPROCS(0), dims)) }

// eachDim calls f with each dimension d of data (chains × draws × dims)
// as draws per chain, on GOMAXPROCS goroutines at once, each with its own
// x (which f may change); f writes only what belongs to d, so that the
// results do not depend on the number of cores.
func eachDim(data []float64, chains, draws, dims int, f func(d int, x [][]float64)) {
	workers := Workers(dims)
	var wg sync.WaitGroup
	next := make(chan int)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			x := make([][]float64, chains)
			for c := range x {
				x[c] = make([]float64, draws)
			}
			for d := range next {
				for c := range x {
					for n := range x[c] {
						x[c][n] = data[(c*draws+n)*dims+d]
					}
				}
				f(d, x)
			}
		}()
	}
	for d := range dims {
		next <- d
	}
	close(next)
	wg.Wait()
}

// addMomentEfficiency fills in the ESS and MCSE fields of s of the mean
// and SD from x, the draws divided by scale and centred (MCSEs are
// multiplied back), computing each ESS once.
func addMomentEfficiency(s *Summary, x [][]float64, scale float64) {
	sq := centredSquares(x)
	s.ESSMean = ess(Split(x))
	s.ESSSD = ess(Split(sq))
	s.ESSRaw = ess(x)
	s.MCSEMean = scale * stat.StdDev(flatten(x), nil) / math.Sqrt(s.ESSMean)
	s.MCSESD = scale * mcseSD(sq, s.ESSSD)
}

// meanSD returns the mean and standard deviation (divisor n − 1) of the
// n draws of x; draws whose plain sums overflow (finite values near
// ±1e308) or whose squares underflow (subnormal values) are summed scaled
// by their largest magnitude.
func meanSD(x [][]float64, n float64) (mean, sd float64) {
	scale := 1.0
	for pass := 0; pass < 2; pass++ {
		var sum, ss float64
		for _, ch := range x {
			for _, v := range ch {
				sum += v / scale
			}
		}
		mean = sum / n
		for _, ch := range x {
			for _, v := range ch {
				ss += (v/scale - mean) * (v/scale - mean)
			}
		}
		mean, sd = mean*scale, scale*math.Sqrt(ss/(n-1))
		if !math.IsInf(sum, 0) && !math.IsInf(ss, 0) && (ss > 0 || !spread(x)) {
			return mean, sd
		}
		scale = 0
		for _, ch := range x {
			for _, v := range ch {
				scale = math.Max(scale, math.Abs(v))
			}
		}
		if scale == 0 || math.IsInf(scale, 0) || math.IsNaN(scale) {
			return mean, sd // infinite draws: infinite or NaN moments
		}
	}
	return mean, sd
}

// centre subtracts from the draws of x their mean, the plain mean
// corrected by the mean of the residuals, and returns it: every
// diagnostic but the mean itself is computed from the centred draws. A
// plain running sum of 4000 draws at 273.15 ± 1e-12 was 1.2e-11 off
// (probe 59), and the SD around it came out 12 times too large, the ESS
// 5% too small. x holds finite draws of magnitude at most 1e150 (rescale).
func centre(x [][]float64) float64 {
	sum, n := 0.0, 0
	for _, ch := range x {
		for _, v := range ch {
			sum += v
		}
		n += len(ch)
	}
	m := sum / float64(n)
	r := 0.0
	for _, ch := range x {
		for _, v := range ch {
			r += v - m
		}
	}
	m += r / float64(n)
	for _, ch := range x {
		for i := range ch {
			ch[i] -= m
		}
	}
	return m
}

// rescale divides the draws of x by their largest magnitude where it is
// beyond 1e±150: R-hat and ESS do not depend on the scale, but their sums
// of squares overflow near 1e308 and underflow among subnormals (R-hat
// came out NaN, and diagnose called such draws all equal). It returns the
// divisor, 1 where it left x alone.
func rescale(x [][]float64) float64 {
	scale := 0.0
	for _, ch := range x {
		for _, v := range ch {
			scale = math.Max(scale, math.Abs(v))
		}
	}
	if scale == 0 || math.IsInf(scale, 0) || math.IsNaN(scale) || (scale < 1e150 && scale > 1e-150) {
		return 1
	}
	for _, ch := range x {
		for i := range ch {
			ch[i] /= scale
		}
	}
	return scale
}

// spread reports whether the draws of x are not all equal (squares of
// subnormal differences underflow to 0: a standard deviation of 0 must
// mean equal draws).
func spread(x [][]float64) bool {
	for _, ch := range x {
		for _, v := range ch {
			if v != x[0][0] {
				return true
			}
		}
	}
	return false
}

// finite encodes NaN and ±Inf as JSON null, which JSON has no numbers for.
type finite float64

func (v finite) MarshalJSON() ([]byte, error) {
	f := float64(v)
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return []byte("null"), nil
	}
	return json.Marshal(f)
}

// MarshalJSON encodes s as an object with the keys dim, rhat, rhat_classic,
// ess_bulk, ess_tail, mean and sd; undefined (NaN) values become null.
// Detailed encodes the ESS and MCSE fields as well.
func (s Summary) MarshalJSON() ([]byte, error) { return json.Marshal(s.basic()) }

// summaryJSON is Summary's seven keys.
type summaryJSON struct {
	Dim         int    `json:"dim"`
	RHat        finite `json:"rhat"`
	RHatClassic finite `json:"rhat_classic"`
	ESSBulk     finite `json:"ess_bulk"`
	ESSTail     finite `json:"ess_tail"`
	Mean        finite `json:"mean"`
	SD          finite `json:"sd"`
}

func (s Summary) basic() summaryJSON {
	return summaryJSON{s.Dim, finite(s.RHat), finite(s.RHatClassic), finite(s.ESSBulk), finite(s.ESSTail), finite(s.Mean), finite(s.SD)}
}

// Detailed is a Summary whose JSON encoding has every field: Summary's
// seven keys and ess_mean, ess_sd, ess_median, ess_raw, mcse_mean, mcse_sd
// and mcse_median (null where undefined). Summary's own encoding keeps the
// seven keys that existing readers (diagnose --json) expect.
type Detailed Summary

// MarshalJSON encodes d with all fourteen keys.
func (d Detailed) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		summaryJSON
		ESSMean    finite `json:"ess_mean"`
		ESSSD      finite `json:"ess_sd"`
		ESSMedian  finite `json:"ess_median"`
		ESSRaw     finite `json:"ess_raw"`
		MCSEMean   finite `json:"mcse_mean"`
		MCSESD     finite `json:"mcse_sd"`
		MCSEMedian finite `json:"mcse_median"`
	}{Summary(d).basic(), finite(d.ESSMean), finite(d.ESSSD), finite(d.ESSMedian), finite(d.ESSRaw), finite(d.MCSEMean), finite(d.MCSESD), finite(d.MCSEMedian)})
}
