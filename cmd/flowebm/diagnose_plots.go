package main

import (
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/flowebm/flowebm/algorithms/plots"
	"github.com/flowebm/flowebm/io/safefile"
	"github.com/flowebm/flowebm/samplers/diagnostics"
)

// plotDimsDefault is how many dimensions --plots draws without --plot-dims.
const plotDimsDefault = 4

// plotFile is one figure --plots writes.
type plotFile struct {
	dim  int
	kind string
	path string
}

var unsafeName = regexp.MustCompile(`[^\p{L}\p{N}._-]+`) // letters of any script kept (round 73 B4: every name in CJK was "_")

// makePlotFolder creates the folder of --plots (and its parents) before
// any work; undo removes what it created.
func (o diagnoseOptions) makePlotFolder() (undo, keep func(), err error) {
	if o.plots == "" {
		return func() {}, func() {}, nil
	}
	if err := checkFigureFolder("--plots", o.plots, nil); err != nil {
		return nil, nil, err
	}
	undo, keep = func() {}, func() {}
	err = safefile.Hold(func() error { // made and registered for a signal as one step (probe 33)
		top, remove, err := makeFolder(o.plots)
		if err != nil {
			return err
		}
		if top != "" { // a signal before the figures are in place removes the folders made, if empty; keep ends that
			keep = safefile.OnRemoveTemps(remove)
		}
		undo = func() { keep(); remove() }
		return nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("--plots %s: cannot create the folder: %v", o.plots, err)
	}
	return undo, keep, nil
}

// maxPlotBase bounds a plot's file name taken from a parameter's name
// (longer ones are cut and given the dimension's index).
const maxPlotBase = 100

// plotFiles lists the files --plots will write, refusing existing ones
// without --force, and any of the inputs even with it, before any work.
func (o diagnoseOptions) plotFiles(c *chainsData, inputs []string) ([]plotFile, error) {
	if o.plots == "" {
		return nil, nil
	}
	dims, err := o.chosenDims(c)
	if err != nil {
		return nil, err
	}
	bases, err := o.plotBases(c, dims)
	if err != nil {
		return nil, err
	}
	kinds := []string{"trace", "rank", "autocorrelation", "ess"}
	if c.draws < 2 {
		return nil, fmt.Errorf("--plots %s: chains of 1 draw have no trace, rank, autocorrelation or ESS to draw: leave --plots out", o.plots)
	}
	if c.draws < 4 { // --nested's short chains: rank, autocorrelation and ESS are not defined
		kinds = kinds[:1]
	}
	var files []plotFile
	for i, d := range dims {
		for _, kind := range kinds {
			p := filepath.Join(o.plots, bases[i]+"-"+kind+o.format.Ext())
			if fi, err := os.Stat(p); err == nil && fi.IsDir() {
				return nil, fmt.Errorf("--plots: %s is a folder: the figure cannot replace it", p)
			}
			for _, in := range inputs { // probe 31: --force replaced an input named like a figure
				if sameFile(p, in) {
					return nil, fmt.Errorf("--plots %s: the figure %s is also an input (%s): give another --plots folder", o.plots, p, in)
				}
			}
			if err := checkNew("--plots", p, o.force); err != nil {
				return nil, err
			}
			files = append(files, plotFile{d, kind, p})
		}
	}
	return files, nil
}

// plotBases are the dimensions' file names, less kind and extension:
// each distinct, even where case is not (macOS, Windows).
func (o diagnoseOptions) plotBases(c *chainsData, dims []int) ([]string, error) {
	seen := map[string]int{}
	bases := make([]string, len(dims))
	for i, d := range dims {
		bases[i] = c.plotBase(d)
		k := strings.ToLower(bases[i])
		if e, dup := seen[k]; dup {
			return nil, fmt.Errorf("--plots %s: dimensions %q and %q would both be drawn to %s-*%s: choose one of them with --plot-dims", o.plots, c.name(e), c.name(d), filepath.Join(o.plots, bases[i]), o.format.Ext())
		}
		seen[k] = d
	}
	return bases, nil
}

// plotBase is dimension d's file name: its name with the characters a
// file name may not hold replaced by _ (and a leading . prefixed, not to
// make a hidden file), or dim and its index.
func (c *chainsData) plotBase(d int) string {
	if c.names == nil {
		return "dim" + strconv.Itoa(d)
	}
	base := unsafeName.ReplaceAllString(c.names[d], "_")
	if strings.HasPrefix(base, ".") {
		base = "_" + base
	}
	if len(base) > maxPlotBase { // file names hold at most 255 bytes
		n := maxPlotBase
		for n > 0 && !utf8.RuneStart(base[n]) { // not within a character
			n--
		}
		base = base[:n] + "_" + strconv.Itoa(d)
	}
	return base
}

// chosenDims are the dimensions of --plot-dims, or the plotDimsDefault
// with the largest R-hat (undefined R-hats last).
func (o diagnoseOptions) chosenDims(c *chainsData) ([]int, error) {
	if o.plotDims == "" {
		return worstDims(c), nil
	}
	var dims []int
	for _, f := range splitDimList(o.plotDims) {
		d := c.dimNamed(f)
		if d < 0 {
			return nil, fmt.Errorf("--plot-dims %s: no dimension %q (%s)", o.plotDims, f, c.dimChoices())
		}
		if slices.Contains(dims, d) {
			return nil, fmt.Errorf("--plot-dims %s: %q names dimension %s again: give each once", o.plotDims, f, c.name(d))
		}
		dims = append(dims, d)
	}
	return dims, nil
}

// splitDimList splits a --plot-dims list at the commas outside brackets,
// so that posterior's and Stan's names of matrix elements (theta[1,2]) are
// one name each (probe 67 B1), and at commas outside double quotes, which
// it drops around a name.
func splitDimList(s string) []string {
	var fields []string
	depth, start, quoted := 0, 0, false
	add := func(f string) {
		f = strings.TrimSpace(f)
		if len(f) >= 2 && f[0] == '"' && f[len(f)-1] == '"' {
			f = f[1 : len(f)-1]
		}
		fields = append(fields, f)
	}
	for i, r := range s {
		switch {
		case r == '"':
			quoted = !quoted
		case quoted:
		case r == '[' || r == '(':
			depth++
		case r == ']' || r == ')':
			depth = max(depth-1, 0)
		case r == ',':
			if depth == 0 {
				add(s[start:i])
				start = i + 1
			}
		}
	}
	add(s[start:])
	return fields
}

// dimNamed is the dimension that f names in --plot-dims (-1 if none): by
// name, by index, or, for unnamed data, as its figures are named (dim0).
func (c *chainsData) dimNamed(f string) int {
	for k := 0; k < c.dims; k++ {
		if c.name(k) == f || c.names == nil && c.plotBase(k) == f {
			return k
		}
	}
	if i, err := strconv.Atoi(f); err == nil && i >= 0 && i < c.dims {
		return i
	}
	return -1
}

// dimChoices says what --plot-dims may name (probe 23: "the names or
// indices" listed no names).
func (c *chainsData) dimChoices() string {
	if c.names == nil {
		return fmt.Sprintf("the data name no dimensions: give indices 0..%d or dim0..dim%d", c.dims-1, c.dims-1)
	}
	const most = 8
	var quoted []string
	for _, n := range c.names[:min(most, len(c.names))] {
		quoted = append(quoted, strconv.Quote(clipText(n))) // a 3,000-character column name was shown whole (probe 24)
	}
	list := strings.Join(quoted, ", ")
	if len(c.names) > most {
		list += fmt.Sprintf(", … (%d in all)", len(c.names))
	}
	return fmt.Sprintf("the names %s, or indices 0..%d; the sampler's name__ columns are not diagnosed", list, c.dims-1)
}

// worstDims are the plotDimsDefault dimensions with the largest R-hat
// (undefined R-hats last).
func worstDims(c *chainsData) []int {
	rhat := make([]float64, c.dims)
	for d := range rhat {
		rhat[d] = diagnostics.RHat(c.dimChains(d))
	}
	idx := make([]int, c.dims)
	for i := range idx {
		idx[i] = i
	}
	key := func(d int) float64 {
		if math.IsNaN(rhat[d]) {
			return math.Inf(-1)
		}
		return rhat[d]
	}
	sort.SliceStable(idx, func(i, j int) bool { return key(idx[i]) > key(idx[j]) })
	return idx[:min(plotDimsDefault, len(idx))]
}

// drawPlots draws the figures as one set (drawStaged): locked against
// another command drawing into the folder, into a staging folder, moved
// into place only when all are drawn.
func (o diagnoseOptions) drawPlots(c *chainsData, files []plotFile, out io.Writer, keep func()) error {
	if len(files) == 0 {
		return nil
	}
	checkNew := func() error {
		for _, f := range files {
			if err := checkNew("--plots", f.path, o.force); err != nil {
				return err
			}
		}
		return nil
	}
	var setNote string
	placed, err := drawStaged(o.plots, "--plots", "diagnose", checkNew, func(tmp string) ([]string, error) { return drawInto(c, files, tmp) }, func([]string) error {
		keep()
		var err error
		setNote, err = o.otherFigures(files)
		return err
	})
	if err != nil {
		return fmt.Errorf("--plots: %w", err)
	}
	if o.asJSON && o.stderr != nil { // stdout holds the JSON alone
		out = o.stderr
	}
	if setNote != "" { // round 115 A2: an earlier input's figures stood beside these, unsaid
		fmt.Fprintln(o.notes(out), setNote)
	}
	var titles []string
	for _, f := range files {
		if t := c.title(f.dim); !slices.Contains(titles, t) {
			titles = append(titles, t)
		}
	}
	if note := blankGlyphsNote(titles, o.format); note != "" {
		w := o.stderr
		if w == nil {
			w = out
		}
		fmt.Fprintln(w, note)
	}
	_, err = fmt.Fprintf(out, "%d plots written to %s\n", len(placed), o.plots)
	return err
}

// figureRecord is the file in a --plots folder that lists the figures
// diagnose last drew there (figureSet).
const figureRecord = ".diagnose-figures"

// otherFigures is figureSet for diagnose's --plots folder and the files
// it draws, and the note that says what it found: the figures it removed
// (--force) or kept of an earlier diagnose's record, or, where there is no
// record, the files named like diagnose's figures it leaves (round 120 A2:
// left unsaid); "" for none.
func (o diagnoseOptions) otherFigures(files []plotFile) (string, error) {
	names := make([]string, len(files))
	for i, f := range files {
		names[i] = filepath.Base(f.path)
	}
	others, recorded, err := figureSet(o.plots, figureRecord, names, diagnoseFigure.MatchString, o.force)
	switch {
	case err != nil:
		return "", err
	case recorded && len(others) > 0 && o.force:
		return fmt.Sprintf("flowebm: note: --force removed from %s the %s of an earlier diagnose that this one does not draw (%s)", o.plots, count(len(others), "figure"), listNames(others, 4)), nil
	case recorded && len(others) > 0:
		return fmt.Sprintf("flowebm: note: %s also holds %s that this diagnose did not draw (%s: an earlier one's, of other draws?); --force replaces the whole set, or give another --plots folder", o.plots, count(len(others), "figure"), listNames(others, 4)), nil
	case recorded || len(others) == 0:
		return "", nil
	}
	return fmt.Sprintf("flowebm: note: %s also holds %s named like diagnose's figures that no diagnose recorded drawing there (%s): left as they are; remove them if they are an earlier diagnose's", o.plots, count(len(others), "file"), listNames(others, 4)), nil
}

// diagnoseFigure matches the names of diagnose's figures: DIM-KIND.EXT.
var diagnoseFigure = regexp.MustCompile(`^.+-(trace|rank|autocorrelation|ess)\.(png|svg|pdf)$`)

// blankGlyphsNote is a note naming the characters of names that figures in
// format draw blank (plots.Undrawable), "" where there are none.
func blankGlyphsNote(names []string, format plots.Format) string {
	if format == plots.SVG {
		return ""
	}
	var missing []rune
	var in []string
	for _, n := range names {
		if m := plots.Undrawable(n); len(m) > 0 {
			shown := strconv.Quote(clipText(n))
			if u, err := strconv.Unquote(n); err == nil && strconv.Quote(u) == n { // quoted by shownName already (round 77 B4: escaped twice)
				shown = n
			}
			in = append(in, shown)
			for _, r := range m {
				if !slices.Contains(missing, r) {
					missing = append(missing, r)
				}
			}
		}
	}
	if len(missing) == 0 {
		return ""
	}
	return fmt.Sprintf("flowebm: note: the figures' font has no glyph for %s (in %s): %s draws them blank; --plot-format svg keeps them (its viewer finds a font)", clipText(string(missing)), listOf(in), strings.ToUpper(format.String()))
}

// drawInto draws the figures of files into the folder tmp, under their
// names, and returns their paths there.
func drawInto(c *chainsData, files []plotFile, tmp string) ([]string, error) {
	figs := map[int][]plots.ChainFigure{}
	var drawn []string
	for _, f := range files {
		if _, ok := figs[f.dim]; !ok {
			figs[f.dim] = plots.ChainFigures(c.dimChains(f.dim), c.title(f.dim), c.chainNames())
		}
		for _, cf := range figs[f.dim] {
			if cf.Kind != f.kind {
				continue
			}
			p := filepath.Join(tmp, filepath.Base(f.path))
			if err := cf.Figure.Save(p); err != nil {
				return nil, err
			}
			drawn = append(drawn, p)
		}
	}
	return drawn, nil
}

// title names dimension d in a figure: the parameter, or "dim d".
func (c *chainsData) title(d int) string {
	if c.names != nil {
		return shownName(c.names[d])
	}
	return "dim " + strconv.Itoa(d)
}
