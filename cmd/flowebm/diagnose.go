package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/spf13/cobra"
	"golang.org/x/text/width"

	"github.com/flowebm/flowebm/algorithms/plots"
	"github.com/flowebm/flowebm/internal/sysmem"
	"github.com/flowebm/flowebm/io/data"
	"github.com/flowebm/flowebm/io/npy"
	"github.com/flowebm/flowebm/io/npz"
	"github.com/flowebm/flowebm/samplers/diagnostics"
)

// diagnoseOptions are diagnose's flags.
type diagnoseOptions struct {
	asJSON    bool
	key       string
	quantiles string // as written: "0.05,0.5"
	nested    int    // superchains for nested R-hat (0: none)
	plots     string // folder for the diagnostic figures
	plotDims  string // dimensions to draw (names or indices); "": the worst by R-hat
	format    plots.Format
	force     bool
	changed   func(name string) bool // whether a flag was given
	stderr    io.Writer              // where --plots reports under --json
}

// notes is where diagnose's notes go: stderr where the command has one,
// else the report's writer w.
func (o diagnoseOptions) notes(w io.Writer) io.Writer {
	if o.stderr == nil {
		return w
	}
	return o.stderr
}

func diagnoseCmd() *cobra.Command {
	var o diagnoseOptions
	cmd := &cobra.Command{
		Use:   "diagnose [--json] [--quantiles P,…] [--nested K] CHAINS.npy|CHAINS.npz|DRAWS.csv|CHAIN1.csv CHAIN2.csv …",
		Short: "Convergence diagnostics (R-hat, ESS, MCSE) of MCMC chains from NumPy, CmdStan or a CSV",
		Long: `diagnose reads MCMC draws and prints for each dimension (parameter):

  rhat          rank-normalised split R-hat (Vehtari et al. 2021)
  rhat_classic  unsplit Gelman–Rubin R-hat
  rhat_nested   nested R-hat with --nested K superchains (Margossian et al. 2024)
  ess_bulk      bulk effective sample size
  ess_tail      tail effective sample size (5% and 95% quantiles)
  ess_mean      ESS of the mean; mcse_mean its Monte Carlo standard error
  mean, sd      pooled mean and standard deviation

with the definitions of Stan's posterior package 1.x and ArviZ 0.21. --json
prints a JSON array with one object per dimension: dim (and name, where the
format names parameters), rhat, rhat_classic, ess_bulk, ess_tail, mean, sd,
ess_mean, ess_sd, ess_median, ess_raw, mcse_mean, mcse_sd, mcse_median;
--quantiles 0.05,0.95 adds ess_quantile and mcse_quantile, objects keyed by
each quantile as written; --nested K adds rhat_nested. null marks a value
that is undefined (the ESS of a constant chain) or infinite (the R-hat of
chains each constant but differing, +Inf in the table).

Inputs:
  .npy          shape (chains, draws) or (chains, draws, dims), float32/float64
                or integers (a discrete parameter's draws) (NumPy, PyTorch's
                tensor.numpy(), JAX, flowebm sample)
  .npz          the same, member --key (default the first)
  CmdStan CSV   one output file per chain: comment lines (#) skipped, the
                sampler's columns (lp__, accept_stat__, …: names ending in __)
                dropped, parameters named by the header
  CSV           one file with a chain column (chain, .chain: posterior's
                draws_df, ArviZ; integers; chains in the order of their
                numbers) and draw/iteration columns, which must increase
                within each chain and are then dropped
CSV files may be quoted (RFC 4180) and start with a UTF-8 byte order mark;
column names must be distinct and not empty; numbers are decimal.

Files with another rank, fewer than 2 chains or 4 draws, a NaN or infinite
draw, ragged rows, chains of different lengths or a file given twice are
refused with a one-line error naming the file (and line and column) and
exit status 2. Chains of fewer than 10 draws get no ESS or MCSE (—): too
short to estimate their autocorrelation.
The verdict names the dimensions with R-hat above 1.01 or bulk or tail ESS
below 400, the thresholds Vehtari et al. recommend.

--plots DIR draws, for the 4 dimensions with the largest R-hat (or those of
--plot-dims), a trace plot, rank histograms (Vehtari et al.: uniform when
the chains mix), each chain's autocorrelation, and the bulk and tail ESS as
the chains grow: DIR/NAME-trace.png and so on (--plot-format png, svg or
pdf; existing files are replaced only with --force).`,
		Args: positional(1, -1, "the draws: a .npy or .npz of chains × draws × dims, or CSV files", ""),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.changed, o.stderr = cmd.Flags().Changed, cmd.ErrOrStderr()
			return o.run(args, cmd.OutOrStdout())
		},
	}
	fl := cmd.Flags()
	fl.BoolVar(&o.asJSON, "json", false, "print a JSON array instead of a table")
	fl.StringVar(&o.key, "key", "", "member of an .npz file (default the first)")
	fl.StringVar(&o.quantiles, "quantiles", "", "quantiles whose ESS and MCSE --json adds, e.g. 0.05,0.5,0.95")
	fl.IntVar(&o.nested, "nested", 0, "nested R-hat with this many superchains of consecutive chains (it must divide the chains)")
	fl.StringVar(&o.plots, "plots", "", "folder for trace, rank, autocorrelation and ESS plots")
	markPathFlags(fl, "plots")
	fl.StringVar(&o.plotDims, "plot-dims", "", "dimensions to plot, by name or index, e.g. mu,tau,theta[1,2] (commas inside brackets are part of a name; dim0 or 0 for unnamed data; default the 4 with the largest R-hat)")
	fl.Var(&o.format, "plot-format", "format of the plots: png, svg or pdf")
	fl.BoolVar(&o.force, "force", false, "replace existing plot files")
	return cmd
}

// run diagnoses the chains of paths, writing to w; the folder of --plots
// is made first, and removed again if it was made and nothing is drawn.
func (o diagnoseOptions) run(paths []string, w io.Writer) (err error) {
	if err := o.checkFlags(); err != nil {
		return err
	}
	if o.plots != "" {
		defer removeTempsOnSignal()()
	}
	undo, keep, err := o.makePlotFolder()
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			undo()
		}
	}()
	c, err := readChains(paths, o.key)
	if err != nil {
		var mm *npz.MissingMemberError
		if errors.As(err, &mm) && len(paths) == 1 {
			return missingKey(err, o.key, paths[0])
		}
		return err // several files: the message names the one without the member
	}
	if note := data.MemberNote(paths[0], o.key); note != "" { // round 76 B2: an ArviZ/NumPy export of several variables was diagnosed on its first, unsaid
		fmt.Fprintf(o.notes(w), "flowebm: note: %s; the others are not diagnosed\n", note)
	}
	hook("diagnose-read")
	files, err := o.plotFiles(c, paths)
	if err != nil {
		return err
	}
	out := bufio.NewWriter(w)
	if err := report(c, out, o); err != nil {
		return err
	}
	if err := out.Flush(); err != nil {
		return err
	}
	return o.drawPlots(c, files, w, keep)
}

// checkFlags refuses, before any work, a flag that applies only with
// another and bad --quantiles.
func (o diagnoseOptions) checkFlags() error {
	for _, name := range []string{"plot-dims", "plot-format", "force"} {
		if o.plots == "" && o.changed != nil && o.changed(name) {
			return fmt.Errorf("--%s applies to --plots DIR", name)
		}
	}
	if o.plotDims != "" && o.plots == "" {
		return fmt.Errorf("--plot-dims applies to --plots DIR")
	}
	if _, err := parseQuantiles(o.quantiles); err != nil {
		return err
	}
	if o.quantiles != "" && !o.asJSON {
		return fmt.Errorf("--quantiles %s applies to --json: the table has no quantile columns", o.quantiles)
	}
	return nil
}

// diagnoseCopies is about how many float64 copies of a dimension's draws
// the diagnostics hold at once (rank normalisation, folding, the FFT's
// padded buffers): measured peak 1 GB for a 64 MB file.
const diagnoseCopies = 16

// checkDiagnoseMemory refuses, from its header, a chains file (the
// member key of an .npz) whose diagnostics would need more memory than
// 8 GiB or half the machine's, and a folder given as the file.
func checkDiagnoseMemory(path, key string) error {
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		return fmt.Errorf("%s is a folder: give a .npy file of chains", path)
	}
	shape, err := data.PointsShape(path, key)
	if err != nil || len(shape) == 0 {
		return nil // the reader reports what is wrong
	}
	n := 1.0
	for _, s := range shape {
		n *= float64(max(s, 0))
	}
	if key != "" {
		path = fmt.Sprintf("%s member %q", path, key)
	}
	if need, limit := n*8*diagnoseCopies, sysmem.Limit(8<<30); need > limit {
		return fmt.Errorf("%s: draws of shape %v need about %.3g GB to diagnose (about %d float64 copies), over the limit of %.3g GB (%s): thin the chains or split the dimensions", path, shape, need/1e9, diagnoseCopies, limit/1e9, sysmem.Why(8<<30))
	}
	return nil
}

// diagnose reads a chains array in .npy format from r, which must end with
// the array's data (as npy.ReadFile requires), and writes its
// per-dimension diagnostics to w. Errors name the file.
func diagnose(r io.Reader, name string, w io.Writer, asJSON bool) error {
	a, err := npy.ReadAll(r)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	c, err := arrayChains(a, name)
	if err != nil {
		return err
	}
	return report(c, w, diagnoseOptions{asJSON: asJSON})
}

// dimReport is one dimension's diagnostics with the extras the flags ask.
type dimReport struct {
	diagnostics.Summary
	name       string
	named      bool
	hasNested  bool
	nested     float64
	essQ, mseQ map[string]float64 // by quantile as written
	qOrder     []string
}

// report computes and writes c's diagnostics.
func report(c *chainsData, w io.Writer, o diagnoseOptions) error {
	qs, err := parseQuantiles(o.quantiles)
	if err != nil {
		return err
	}
	if o.nested != 0 && (o.nested < 2 || c.chains%o.nested != 0) {
		return fmt.Errorf("--nested %d: want a number of superchains ≥ 2 that divides the %d chains", o.nested, c.chains)
	}
	if twins := c.twinGroups(); c.draws > 1 && c.dims > 0 { // round 98 A3: empty chains are no twins; round 85 B13: a copied file or a seed given twice passed as two chains
		if len(twins) > 0 {
			fmt.Fprintln(o.notes(w), twinsNote(c, twins))
		}
		if note := stillNote(c, twins); note != "" {
			fmt.Fprintln(o.notes(w), note)
		}
	}
	summarize := diagnostics.Summarize
	if o.nested > 0 && c.draws < 4 { // round 83 A1: nested R-hat's many short chains were refused
		summarize = diagnostics.SummarizeShort
		fmt.Fprintf(o.notes(w), "flowebm: note: chains of %s: only rhat_nested, the mean and the sd are computed (the other diagnostics need at least 4 draws per chain)\n", count(c.draws, "draw"))
	}
	s, err := summarize(c.data, c.chains, c.draws, c.dims)
	if err != nil {
		hint := ""
		if c.dims == 1 && c.draws < 4 && c.chains > 100 { // probe 70: a (1024, 2) samples.npy of points
			hint = fmt.Sprintf("; a 2-D array is read as (chains, draws) of one dimension, and %d rows of %d values look like points (flowebm sample writes chains × draws × dims; train's samples.npy holds the persistent chains' last states, a point each)", c.chains, c.draws)
		}
		if c.draws < 4 && o.nested == 0 && c.chains >= 2 { // round 132 A3: advised for one chain, which it refuses
			hint += "; nested R-hat (--nested K superchains) takes chains of 1 to 3 draws"
		}
		shape := "shape " + c.shape + ": "
		if !strings.HasPrefix(c.shape, "(") { // CSV files (round 132 A3: "shape 1 file")
			shape = ""
		}
		return fmt.Errorf("%s: %s%s%s", c.source, shape, strings.TrimPrefix(err.Error(), "diagnostics: "), hint)
	}
	if c.names == nil && o.nested == 0 && c.chains > c.draws && c.draws > 1 { // round 115 A1: a (draws, chains) array read as 1000 chains of 4 draws, unsaid
		fmt.Fprintf(o.notes(w), "flowebm: note: %s holds more chains (%d) than draws per chain (%d): an array is read as (chains, draws[, dims]); if it is (draws, chains[, dims]), as posterior's extract_variable_matrix and some samplers write it, save it transposed first: np.save(OUT, np.swapaxes(a, 0, 1))\n", c.source, c.chains, c.draws)
	}
	rows := make([]dimReport, len(s))
	for d := range s {
		rows[d] = dimReport{Summary: s[d], name: c.name(d), named: c.names != nil, nested: math.NaN(), qOrder: qs.written}
		if o.nested > 0 || len(qs.p) > 0 {
			rows[d].extras(c.dimChains(d), o.nested, qs)
		}
	}
	if o.asJSON {
		return writeReportJSON(w, rows)
	}
	return writeTable(w, c, rows, o.nested)
}

// extras computes nested R-hat and the quantiles' ESS and MCSE.
func (r *dimReport) extras(x [][]float64, nested int, qs quantiles) {
	if nested > 0 {
		r.hasNested, r.nested = true, diagnostics.NestedRHat(x, nested)
	}
	r.essQ, r.mseQ = map[string]float64{}, map[string]float64{}
	for i, p := range qs.p {
		r.essQ[qs.written[i]] = diagnostics.ESSQuantile(x, p)
		r.mseQ[qs.written[i]] = diagnostics.MCSEQuantile(x, p)
	}
}

// quantiles are --quantiles' values and their text.
type quantiles struct {
	p       []float64
	written []string
}

func parseQuantiles(s string) (quantiles, error) {
	var q quantiles
	if strings.TrimSpace(s) == "" {
		return q, nil
	}
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		p, err := strconv.ParseFloat(f, 64)
		if err != nil || !(p >= 0 && p <= 1) || strings.ContainsAny(f, "_xXpP") { // not Go's hex or 1_000 forms; 0 and 1 as posterior takes them (probe 64)
			return q, fmt.Errorf("--quantiles %s: %q is not a probability from 0 to 1", s, f)
		}
		if i := slices.Index(q.p, p); i >= 0 {
			return q, fmt.Errorf("--quantiles %s: %s is %s again: give each quantile once", s, f, q.written[i])
		}
		q.p, q.written = append(q.p, p), append(q.written, f)
	}
	return q, nil
}

// writeReportJSON writes one object per dimension: Detailed's keys, name
// where the format names parameters, and the flags' extras.
func writeReportJSON(w io.Writer, rows []dimReport) error {
	var b bytes.Buffer
	b.WriteString("[\n")
	for i, r := range rows {
		obj, err := json.Marshal(diagnostics.Detailed(r.Summary))
		if err != nil {
			return err
		}
		obj = obj[:len(obj)-1] // reopen the object
		if r.named {
			obj = append(obj, fmt.Sprintf(",%q:%s", "name", mustJSON(r.name))...)
		}
		obj = append(obj, r.extrasJSON()...)
		obj = append(obj, '}')
		b.WriteString("  ")
		if err := json.Indent(&b, obj, "  ", "  "); err != nil {
			return err
		}
		if i < len(rows)-1 {
			b.WriteString(",")
		}
		b.WriteString("\n")
	}
	b.WriteString("]\n")
	_, err := w.Write(b.Bytes())
	return err
}

// extrasJSON is r's rhat_nested, ess_quantile and mcse_quantile members.
func (r dimReport) extrasJSON() string {
	var sb strings.Builder
	if len(r.qOrder) > 0 {
		for _, k := range []struct {
			key string
			m   map[string]float64
		}{{"ess_quantile", r.essQ}, {"mcse_quantile", r.mseQ}} {
			parts := make([]string, len(r.qOrder))
			for i, q := range r.qOrder {
				parts[i] = fmt.Sprintf("%q:%s", q, jsonNumber(k.m[q]))
			}
			fmt.Fprintf(&sb, ",%q:{%s}", k.key, strings.Join(parts, ","))
		}
	}
	if r.hasNested {
		fmt.Fprintf(&sb, ",%q:%s", "rhat_nested", jsonNumber(r.nested))
	}
	return sb.String()
}

func jsonNumber(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "null"
	}
	return mustJSON(v)
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v) // strings and finite floats always marshal
	return string(b)
}

// meanText writes a mean to the digit its Monte Carlo standard error
// reaches, and one more; with 4 significant digits where the MCSE says
// nothing (not finite, 0) or the digits would run past 16 (probe 63: a
// mean of 1e8 printed "1e+08" beside an MCSE of 0.095).
func meanText(mean, mcse float64) string {
	if !(mcse > 0) || math.IsInf(mcse, 0) || math.IsNaN(mean) || math.IsInf(mean, 0) {
		return fmt.Sprintf("%.4g", mean)
	}
	mag := int(math.Floor(math.Log10(mcse)))
	s := strconv.FormatFloat(mean, 'f', max(0, 1-mag), 64)
	if mcse < 1e5 && len(strings.TrimLeft(s, "-")) <= 16 {
		if strings.Trim(s, "-0.") == "" { // round 75 B2: "-0"
			s = strings.TrimPrefix(s, "-")
		}
		return s // trailing zeros kept: they are digits the MCSE vouches for (probe 65: 4.99995 printed as 5)
	}
	if mean == 0 {
		return "0"
	}
	// To the MCSE's digit in exponent form, at most 17 significant digits
	// (round 73 B1: 387293 beside an MCSE of 5e+05; round 74 B1: 1.235e+12
	// beside 0.0010, 4e11 MCSEs off).
	digits := int(math.Floor(math.Log10(math.Abs(mean)))) - mag + 1
	if digits < 0 { // below the MCSE's second digit: 0 there (round 75 B1: -3e-30 beside an MCSE of 5.0e-20)
		return "0"
	}
	return strconv.FormatFloat(mean, 'e', min(16, digits), 64)
}

// mcseText is an MCSE to two significant digits, to the decimal the mean
// beside it is printed to, trailing zeros kept (round 72 B3: 0.010360 was
// "0.01" beside a mean of three decimals); below 1e-4 and from 1e5 in
// exponent form, its two digits kept (round 73 B1: "1e-05", "5e+05").
func mcseText(mcse float64) string {
	if !(mcse > 0) || math.IsInf(mcse, 0) {
		return fmt.Sprintf("%.2g", mcse)
	}
	r, _ := strconv.ParseFloat(strconv.FormatFloat(mcse, 'e', 1, 64), 64) // two significant digits
	if r < 1e-4 || r >= 1e5 {
		return strconv.FormatFloat(r, 'e', 1, 64)
	}
	return strconv.FormatFloat(r, 'f', max(0, 1-int(math.Floor(math.Log10(r)))), 64)
}

// writeTable writes the table and the verdict.
func writeTable(w io.Writer, c *chainsData, rows []dimReport, nestedK int) error {
	nested := nestedK > 0
	fmt.Fprintf(w, "%s: %s × %s × %s (%s)\n\n", c.source, count(c.chains, "chain"), count(c.draws, "draw"), count(c.dims, "dim"), c.dtype)
	head := []string{"dim", "rhat", "rhat_classic"}
	if nested {
		head = append(head, "rhat_nested")
	}
	table := [][]string{append(head, "ess_bulk", "ess_tail", "ess_mean", "mean", "mcse_mean", "sd")}
	for _, d := range rows {
		row := []string{shownName(d.name), fmt.Sprintf("%.4f", d.RHat), fmt.Sprintf("%.4f", d.RHatClassic)}
		if nested {
			row = append(row, fmt.Sprintf("%.4f", d.nested))
		}
		row = append(row, fmt.Sprintf("%.0f", d.ESSBulk), fmt.Sprintf("%.0f", d.ESSTail), fmt.Sprintf("%.0f", d.ESSMean), meanText(d.Mean, d.MCSEMean), mcseText(d.MCSEMean), fmt.Sprintf("%.4g", d.SD))
		table = append(table, row)
	}
	if c.draws < 4 { // nested R-hat of short chains: the others are not computed (not "NaN", and no verdict on them)
		for _, row := range table[1:] {
			for j, v := range row {
				if v == "NaN" {
					row[j] = "—"
				}
			}
		}
		if err := writeRightAligned(w, table); err != nil {
			return err
		}
		return writeNestedVerdict(w, c, rows, nestedK)
	}
	if c.chains == 1 { // round 130 A5: refused, where posterior and ArviZ compare its halves
		dashNotComputed(table, "rhat_classic")
	}
	short := c.draws < 2*diagnostics.MinESSDraws
	if short { // round 93 A1: an ESS of three times the draws was printed
		dashNotComputed(table, "ess_bulk", "ess_tail", "ess_mean", "mcse_mean")
	}
	if err := writeRightAligned(w, table); err != nil {
		return err
	}
	if c.chains == 1 {
		fmt.Fprintf(w, "\none chain: rhat compares its two halves only (rhat_classic, between whole chains, needs two); chains started apart show what one chain cannot, a mode it never left: run several\n")
		if strings.EqualFold(filepath.Ext(c.source), ".csv") {
			fmt.Fprintf(w, "(a CSV file without a chain column is one chain; for several, give a column naming each row's chain (%s), or CmdStan's output files, one per chain)\n", strings.Join(chainColumns, ", "))
		}
	}
	if short {
		fmt.Fprintf(w, "\ness and mcse not computed: chains of %d draws are too short to estimate their autocorrelation (split halves of at least %d draws: give chains of at least %d)\n", c.draws, diagnostics.MinESSDraws, 2*diagnostics.MinESSDraws)
	}
	s := make([]diagnostics.Summary, len(rows))
	for i := range rows {
		s[i] = rows[i].Summary
	}
	if err := writeVerdict(w, s, c.chains); err != nil {
		return err
	}
	return writeThresholds(w, rows)
}

// dashNotComputed writes "—" for NaN in the table's columns named cols.
func dashNotComputed(table [][]string, cols ...string) {
	for j, h := range table[0] {
		if slices.Contains(cols, h) {
			for _, row := range table[1:] {
				if row[j] == "NaN" {
					row[j] = "—"
				}
			}
		}
	}
}

// writeRightAligned writes rows of cells right-aligned in columns two
// spaces apart, by the width each cell takes in a terminal: CJK characters
// take two columns, combining marks none (round 73: text/tabwriter, which
// counts characters, let CJK names stick out of the table).
func writeRightAligned(w io.Writer, rows [][]string) error {
	var widths []int
	for _, r := range rows {
		for j, c := range r {
			if j == len(widths) {
				widths = append(widths, 0)
			}
			widths[j] = max(widths[j], shownWidth(c))
		}
	}
	var b strings.Builder
	for _, r := range rows {
		for j, c := range r {
			b.WriteString(strings.Repeat(" ", widths[j]+2-shownWidth(c)))
			b.WriteString(c)
		}
		b.WriteByte('\n')
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// shownWidth is the number of terminal columns s takes: two for East Asian
// wide and full-width characters, none for combining marks, one otherwise.
func shownWidth(s string) int {
	n := 0
	for _, r := range s {
		switch k := width.LookupRune(r).Kind(); {
		case unicode.In(r, unicode.Mn, unicode.Me):
		case k == width.EastAsianWide || k == width.EastAsianFullwidth:
			n += 2
		default:
			n++
		}
	}
	return n
}

// writeThresholds names the dimensions above R-hat 1.01 and below ESS 400.
func writeThresholds(w io.Writer, rows []dimReport) error {
	var highR, lowESS []string
	for _, r := range rows {
		name := r.name
		if !r.named { // "dim0", as --plot-dims and the plots name it (probe 29: "rhat above 1.01: 0" read as a count)
			name = "dim" + r.name
		}
		name = shownName(name)
		if r.RHat > 1.01 || math.IsInf(r.RHatClassic, 1) {
			highR = append(highR, name)
		}
		if r.ESSBulk < 400 || r.ESSTail < 400 {
			lowESS = append(lowESS, fmt.Sprintf("%s (bulk %.0f, tail %.0f)", name, r.ESSBulk, r.ESSTail))
		}
	}
	if len(highR) > 0 {
		fmt.Fprintf(w, "rhat above 1.01: %s\n", listOf(highR))
	}
	if len(lowESS) > 0 {
		fmt.Fprintf(w, "ess below 400: %s\n", listOf(lowESS))
	}
	return nil
}

// shownName is name as printed or drawn: quoted where it holds a character
// that does not show, or shows as another (round 74 B3: "x y" and
// "x\u00a0y" read alike in the verdict; round 75 B4: in the table and the
// figures' titles).
func shownName(name string) string {
	if strings.ContainsFunc(name, invisible) {
		return strconv.Quote(name)
	}
	return name
}

// invisible reports a character that does not show, or shows as another:
// spaces other than ' ', and what Go does not print.
func invisible(r rune) bool {
	return r != ' ' && (unicode.IsSpace(r) || !unicode.IsPrint(r))
}

// listOf joins names, the first 10 and a count of the rest.
func listOf(names []string) string {
	if len(names) <= 10 {
		return strings.Join(names, ", ")
	}
	return strings.Join(names[:10], ", ") + fmt.Sprintf(" and %d more", len(names)-10)
}

// writeVerdict writes what the table's R-hats say: the dimensions whose
// chains are each constant but apart (not mixed at all: R-hat infinite),
// those without R-hat (the draws do not vary), and the largest R-hat (of
// chains chains).
func writeVerdict(w io.Writer, s []diagnostics.Summary, chains int) error {
	worst, undefined, apart := math.Inf(-1), 0, 0
	for _, d := range s {
		switch {
		case math.IsInf(d.RHatClassic, 1): // within-chain variance 0, between > 0
			apart++
			worst = math.Inf(1)
		case math.IsNaN(d.RHat):
			undefined++
		default:
			worst = max(worst, d.RHat)
		}
	}
	if apart > 0 {
		fmt.Fprintf(w, "\n%d dim(s) whose chains are each constant but differ from one another: not mixed at all (R-hat infinite: +Inf in the table's rhat_classic, and in its rhat unless the folded draws are all equal, NaN as posterior gives it; null in --json)\n", apart)
	}
	if undefined > 0 {
		fmt.Fprintf(w, "\n%d dim(s) without rhat: the draws, or their distances to the median, do not vary (every draw equal, or two values symmetric about the median)\n", undefined)
	}
	if undefined == len(s) {
		return nil
	}
	verdict := "below 1.01: no sign of non-convergence"
	if worst >= 1.01 {
		verdict = "not below 1.01: the chains have not mixed"
		if chains == 1 {
			verdict = "not below 1.01: the chain's halves disagree, it has not mixed"
		}
	}
	_, err := fmt.Fprintf(w, "\nmax rhat %.4f, %s (Vehtari et al. 2021)\n", worst, verdict)
	return err
}

// writeNestedVerdict says, for chains too short for the other
// diagnostics, what their nested R-hat shows (round 84 A3: 2.03 without a
// word), or why it is undefined everywhere (A2: a table of dashes).
func writeNestedVerdict(w io.Writer, c *chainsData, rows []dimReport, k int) error {
	worst := math.Inf(-1)
	for _, r := range rows {
		if !math.IsNaN(r.nested) {
			worst = math.Max(worst, r.nested)
		}
	}
	switch {
	case math.IsInf(worst, -1) && c.draws == 1 && c.chains == k:
		_, err := fmt.Fprintf(w, "\nrhat_nested is undefined with one chain of one draw per superchain: give fewer superchains (--nested K with K < %d), each of several chains\n", c.chains)
		return err
	case math.IsInf(worst, -1):
		_, err := fmt.Fprintf(w, "\nrhat_nested is undefined in every dim: the draws do not vary\n")
		return err
	case worst >= 1.01:
		_, err := fmt.Fprintf(w, "\nmax rhat_nested (Margossian et al. 2024) %.4f, not below 1.01: the superchains disagree, the chains have not mixed\n", worst)
		return err
	}
	_, err := fmt.Fprintf(w, "\nmax rhat_nested (Margossian et al. 2024) %.4f, below 1.01: no sign of non-convergence among the superchains\n", worst)
	return err
}

func shapeString(shape []int) string {
	parts := make([]string, len(shape))
	for i, s := range shape {
		parts[i] = strconv.Itoa(s)
	}
	if len(parts) == 1 {
		return "(" + parts[0] + ",)"
	}
	return "(" + strings.Join(parts, ", ") + ")"
}

// twinsNote says which chains are identical, draw for draw, each group
// named with why that may be: chains that never moved (every draw one
// point: stuck where they started), or the same seed twice or a file
// copied (round 126 A6: one reason for every group).
func twinsNote(c *chainsData, twins [][]int) string {
	var parts []string
	for _, group := range twins {
		names := make([]string, len(group))
		still := true
		for k, i := range group {
			names[k] = c.chainName(i)
			still = still && c.stillChain(i)
		}
		why := "the same seed twice, or a file copied?"
		if still {
			why = "they never moved, every draw the same point: stuck where they started, every proposal rejected?"
		}
		parts = append(parts, fmt.Sprintf("%s (%s)", strings.Join(names[:len(names)-1], ", ")+" and "+names[len(names)-1], why))
	}
	return fmt.Sprintf("flowebm: note: chains %s%s are identical, draw for draw: R-hat and ESS count each as a chain of its own, and so look better than they are", strings.Join(parts, "; chains "), numberedFrom(c))
}

// numberedFrom says how an array's chains are numbered ("" for files
// whose chains are named).
func numberedFrom(c *chainsData) string {
	if c.names == nil && c.chainLabels == nil {
		return " (numbered from 0, as the array's first axis)"
	}
	return ""
}

// stillNote names the chains, in no twin group, that never moved: every
// draw one point (round 126 A6: a lone constant chain was said nothing
// of); "" where there are none.
func stillNote(c *chainsData, twins [][]int) string {
	var names []string
	for i := range c.chains {
		if c.stillChain(i) && !slices.ContainsFunc(twins, func(g []int) bool { return slices.Contains(g, i) }) {
			names = append(names, c.chainName(i))
		}
	}
	if len(names) == 0 {
		return ""
	}
	which := "chain " + names[0]
	if len(names) > 1 {
		which = "chains " + strings.Join(names, ", ")
	}
	return fmt.Sprintf("flowebm: note: %s%s never moved: every draw is the same point (stuck where it started, every proposal rejected?), so R-hat and ESS are not those of a chain exploring the target", which, numberedFrom(c))
}
