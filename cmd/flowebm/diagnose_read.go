package main

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/flowebm/flowebm/internal/sysmem"
	"github.com/flowebm/flowebm/io/npy"
	"github.com/flowebm/flowebm/io/npz"
)

// chainsData is the draws diagnose reads: chains × draws × dims, row-major,
// with the dimensions' names where the format has them.
type chainsData struct {
	data                 []float64
	chains, draws, dims  int
	names                []string // nil: dimensions are numbered
	source, dtype, shape string
}

// readChains reads the chains of paths: one .npy or .npz (member key), one
// CSV with a chain column, or CmdStan's output CSV files, one per chain.
func readChains(paths []string, key string) (*chainsData, error) {
	ext := strings.ToLower(filepath.Ext(paths[0]))
	for _, p := range paths[1:] {
		if strings.ToLower(filepath.Ext(p)) != ".csv" || ext != ".csv" {
			return nil, fmt.Errorf("%s: several files are CmdStan output CSV files, one per chain; a .npy or .npz holds every chain alone", p)
		}
	}
	if key != "" && ext != ".npz" {
		return nil, fmt.Errorf("--key %s names a member of an .npz file, not of %s", key, paths[0])
	}
	if ext == ".csv" {
		return readCSVChains(paths)
	}
	if err := checkDiagnoseMemory(paths[0]); err != nil {
		return nil, err
	}
	var a *npy.Array
	var err error
	if ext == ".npz" {
		a, err = readNpzMember(paths[0], key)
	} else {
		a, err = readNpyFile(paths[0])
	}
	if err != nil {
		return nil, err
	}
	return arrayChains(a, paths[0])
}

func readNpyFile(path string) (*npy.Array, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	a, err := npy.ReadAll(bufio.NewReader(f))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return a, nil
}

func readNpzMember(path, key string) (*npy.Array, error) {
	arch, err := npz.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if key == "" {
		names := arch.Names
		if len(names) == 0 {
			return nil, fmt.Errorf("%s: the archive holds no array", path)
		}
		key = names[0]
	}
	a, err := arch.Get(key)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return a, nil
}

// arrayChains checks a (chains, draws) or (chains, draws, dims) array.
func arrayChains(a *npy.Array, name string) (*chainsData, error) {
	if len(a.Dtype) < 3 || (a.Dtype[1:] != "f4" && a.Dtype[1:] != "f8") {
		return nil, fmt.Errorf("%s: dtype %q, want float32 ('<f4') or float64 ('<f8')", name, a.Dtype)
	}
	c := &chainsData{data: a.Data, source: name, dtype: a.Dtype, shape: shapeString(a.Shape)}
	switch len(a.Shape) {
	case 2:
		c.chains, c.draws, c.dims = a.Shape[0], a.Shape[1], 1
	case 3:
		c.chains, c.draws, c.dims = a.Shape[0], a.Shape[1], a.Shape[2]
	default:
		return nil, fmt.Errorf("%s: shape %s has rank %d, want (chains, draws) or (chains, draws, dims)", name, c.shape, len(a.Shape))
	}
	return c, nil
}

// csvTable is one CSV file: its header and numeric rows.
type csvTable struct {
	path   string
	header []string
	rows   [][]float64
	lines  []int // each row's line number
}

// chainColumns are the names of a chain column (posterior's draws_df,
// ArviZ's and the common "chain"); drawColumns those of the draw's index.
var (
	chainColumns = []string{"chain", ".chain", "chain__"}
	drawColumns  = []string{"draw", ".draw", "iteration", ".iteration", "iter"}
)

// readCSVChains reads one CSV with a chain column, or CmdStan's files (one
// per chain; comment lines and the sampler's columns name__ dropped).
func readCSVChains(paths []string) (*chainsData, error) {
	var tables []*csvTable
	total := int64(0)
	for _, p := range paths {
		fi, err := os.Stat(p)
		if err != nil {
			return nil, err
		}
		total += fi.Size()
	}
	// Each value takes at least 2 bytes of text and 8 as a float64, held
	// about diagnoseCopies times.
	if need, limit := float64(total)/2*8*diagnoseCopies, sysmem.Limit(8<<30); need > limit {
		return nil, fmt.Errorf("%s: %d bytes of CSV may need about %.3g GB to diagnose, over the limit of %.3g GB: thin the chains", paths[0], total, need/1e9, limit/1e9)
	}
	for _, p := range paths {
		t, err := readCSVTable(p)
		if err != nil {
			return nil, err
		}
		tables = append(tables, t)
	}
	if chainCol := indexOfAny(tables[0].header, chainColumns); chainCol >= 0 {
		if len(tables) > 1 {
			return nil, fmt.Errorf("%s has a chain column %q: give that one file, not several", tables[0].path, tables[0].header[chainCol])
		}
		return groupByChain(tables[0], chainCol)
	}
	if len(tables) == 1 {
		return nil, fmt.Errorf("%s: one CSV file without a chain column (%s): give CmdStan's output files, one per chain, or a column naming each row's chain", paths[0], strings.Join(chainColumns, ", "))
	}
	return stackChains(tables)
}

// readCSVTable reads a CSV file: lines starting with # are comments, the
// first other line is the header, the others numbers.
func readCSVTable(path string) (*csvTable, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	t := &csvTable{path: path}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		fields := strings.Split(text, ",")
		if t.header == nil {
			t.header = unquoteAll(fields)
			continue
		}
		row, err := parseRow(fields, t, line)
		if err != nil {
			return nil, err
		}
		t.rows, t.lines = append(t.rows, row), append(t.lines, line)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if t.header == nil || len(t.rows) == 0 {
		return nil, fmt.Errorf("%s: no header and draws: want a header line of names, then one line per draw", path)
	}
	return t, nil
}

func unquoteAll(fields []string) []string {
	out := make([]string, len(fields))
	for i, f := range fields {
		out[i] = strings.Trim(strings.TrimSpace(f), `"`)
	}
	return out
}

func parseRow(fields []string, t *csvTable, line int) ([]float64, error) {
	if len(fields) != len(t.header) {
		return nil, fmt.Errorf("%s: line %d has %d columns, want %d (the header's)", t.path, line, len(fields), len(t.header))
	}
	row := make([]float64, len(fields))
	for j, f := range fields {
		v, err := strconv.ParseFloat(strings.Trim(strings.TrimSpace(f), `"`), 64)
		if err != nil {
			return nil, fmt.Errorf("%s: line %d, column %d (%s): %q is not a number", t.path, line, j+1, t.header[j], clipText(f))
		}
		row[j] = v
	}
	return row, nil
}

func clipText(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}

func indexOfAny(header, names []string) int {
	for i, h := range header {
		if slices.Contains(names, h) {
			return i
		}
	}
	return -1
}

// parameterColumns are the columns that hold parameters: not the sampler's
// (name__, CmdStan's lp__, accept_stat__, …), the chain's or the draw's.
func parameterColumns(header []string) []int {
	var cols []int
	for i, h := range header {
		if strings.HasSuffix(h, "__") || slices.Contains(chainColumns, h) || slices.Contains(drawColumns, h) {
			continue
		}
		cols = append(cols, i)
	}
	return cols
}

// stackChains makes one chain of each CmdStan file: same columns, same
// number of draws.
func stackChains(tables []*csvTable) (*chainsData, error) {
	first := tables[0]
	cols := parameterColumns(first.header)
	if len(cols) == 0 {
		return nil, fmt.Errorf("%s: no parameter columns (only the sampler's name__ columns, chain and draw)", first.path)
	}
	for _, t := range tables[1:] {
		if !slices.Equal(t.header, first.header) {
			return nil, fmt.Errorf("%s: its columns differ from %s's: every chain's file must have the same header", t.path, first.path)
		}
		if len(t.rows) != len(first.rows) {
			return nil, fmt.Errorf("%s: %d draws, %s has %d: every chain must have as many draws", t.path, len(t.rows), first.path, len(first.rows))
		}
	}
	c := &chainsData{chains: len(tables), draws: len(first.rows), dims: len(cols), source: first.path, dtype: "CSV"}
	for _, t := range tables {
		for _, r := range t.rows {
			for _, j := range cols {
				c.data = append(c.data, r[j])
			}
		}
	}
	for _, j := range cols {
		c.names = append(c.names, first.header[j])
	}
	c.shape = fmt.Sprintf("%d files", len(tables))
	c.source = fmt.Sprintf("%s and %d more", first.path, len(tables)-1)
	return c, nil
}

// groupByChain splits one table's rows by its chain column, in the order
// chains first appear; every chain must have as many draws.
func groupByChain(t *csvTable, chainCol int) (*chainsData, error) {
	cols := parameterColumns(t.header)
	if len(cols) == 0 {
		return nil, fmt.Errorf("%s: no parameter columns besides the chain and draw columns", t.path)
	}
	var order []float64
	byChain := map[float64][][]float64{}
	for _, r := range t.rows {
		id := r[chainCol]
		if _, ok := byChain[id]; !ok {
			order = append(order, id)
		}
		byChain[id] = append(byChain[id], r)
	}
	n := len(byChain[order[0]])
	c := &chainsData{chains: len(order), draws: n, dims: len(cols), source: t.path, dtype: "CSV"}
	for _, id := range order {
		rows := byChain[id]
		if len(rows) != n {
			return nil, fmt.Errorf("%s: chain %v has %d draws, chain %v has %d: every chain must have as many", t.path, id, len(rows), order[0], n)
		}
		for _, r := range rows {
			for _, j := range cols {
				c.data = append(c.data, r[j])
			}
		}
	}
	for _, j := range cols {
		c.names = append(c.names, t.header[j])
	}
	c.shape = fmt.Sprintf("%d rows", len(t.rows))
	return c, nil
}

// dimChains is dimension d of c as x[chain][draw].
func (c *chainsData) dimChains(d int) [][]float64 {
	x := make([][]float64, c.chains)
	for i := range x {
		x[i] = make([]float64, c.draws)
		for n := range x[i] {
			x[i][n] = c.data[(i*c.draws+n)*c.dims+d]
		}
	}
	return x
}

// name is dimension d's name: the parameter's, or its index.
func (c *chainsData) name(d int) string {
	if c.names != nil {
		return c.names[d]
	}
	return strconv.Itoa(d)
}
