package main

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/binary"
	"encoding/csv"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/flowebm/flowebm/algorithms/training"

	"github.com/flowebm/flowebm/internal/sysmem"
	"github.com/flowebm/flowebm/internal/textclip"
	"github.com/flowebm/flowebm/io/data"
	"github.com/flowebm/flowebm/io/npy"
	"github.com/flowebm/flowebm/io/npz"
	"github.com/flowebm/flowebm/io/safefile"
)

// chainsData is the draws diagnose reads: chains × draws × dims, row-major,
// with the dimensions' names where the format has them.
type chainsData struct {
	data                 []float64
	chains, draws, dims  int
	names                []string // nil: dimensions are numbered
	chainLabels          []string // nil: chains are numbered (chainName); a CSV's chain numbers, or CmdStan's files, otherwise
	source, dtype, shape string
}

// readChains reads the chains of paths: one .npy or .npz (member key), one
// CSV with a chain column, or CmdStan's output CSV files, one per chain.
func readChains(paths []string, key string) (_ *chainsData, err error) {
	key = strings.TrimSuffix(key, ".npy") // NumPy names a member either way
	ext := strings.ToLower(filepath.Ext(paths[0]))
	for _, p := range paths {
		if err := runRecordRefusal(p); err != nil {
			return nil, err
		}
	}
	if len(paths) > 1 {
		for _, p := range paths { // the first too (probe 47: c0.txt c1.csv blamed c1.csv)
			if fi, err := os.Stat(p); err == nil && fi.IsDir() { // probe 48: a folder was "several files are CmdStan …"
				return nil, fmt.Errorf("%s is a folder: diagnose reads one .npy or .npz file, or CmdStan output CSV files, one per chain", p)
			}
			if e := strings.ToLower(filepath.Ext(p)); e != ".csv" {
				return nil, fmt.Errorf("%s: several files are CmdStan output CSV files, one per chain, named .csv (this one is %s; a file of comma-separated draws under a header reads as .csv: rename it); a .npy or .npz holds every chain alone", p, cmp.Or(strconv.Quote(e), "without an extension"))
			}
		}
	}

	if key != "" && ext != ".npz" {
		return nil, fmt.Errorf("--key %s names a member of an .npz file, not of %s", key, paths[0])
	}
	if ext == ".csv" {
		return readCSVChains(paths)
	}
	if ext == ".npz" && key == "" {
		if err := checkpointRefusal(paths[0]); err != nil {
			return nil, err
		}
	}
	if err := checkDiagnoseMemory(paths[0], key); err != nil {
		return nil, err
	}
	var a *npy.Array
	name := paths[0]
	if ext == ".npz" {
		if note := data.MemberNote(paths[0], key); note != "" { // round 77 B3: a refusal of the first member left the others unsaid
			defer func() {
				if err != nil {
					err = fmt.Errorf("%w; %s", err, note)
				}
			}()
		}
		a, name, err = readNpzMember(paths[0], key)
	} else {
		a, err = npy.ReadFile(paths[0])
	}
	if fe := (*npy.FormatError)(nil); errors.As(err, &fe) && fe.Field == npy.MagicField && ext != ".npy" { // probe 63: "magic string is \"mu,tau\""
		advice := "a file of comma-separated draws under a header reads as .csv (rename it)"
		if strings.Contains(fe.Got, `\t`) { // probe 64: renamed, a tab-separated file was refused for its tabs
			advice = "this one holds tabs: write the draws with commas, under a header, as a .csv (pandas' to_csv, numpy.savetxt(..., delimiter=\",\"), or tr '\\t' ',')"
		}
		return nil, fmt.Errorf("%s: not a .npy file (it begins %s): diagnose reads .npz and .csv files by their extension and any other file as .npy; %s", paths[0], cmp.Or(fe.Got, "with fewer than 8 bytes"), advice)
	}
	if fe := (*npy.FormatError)(nil); errors.As(err, &fe) && fe.Field == npy.DtypeField { // probe 62: the reader's list of types, which diagnose then refused
		advice := "convert with a.astype(np.float64) if they are draws"
		got := "dtype " + fe.Got
		switch {
		case strings.Contains(fe.Got, "structured"): // round 81 B12: astype refuses a structured array
			got = "a structured dtype (named fields)"
			advice = "one field per parameter: numpy.lib.recfunctions.structured_to_unstructured(a) stacks them into a last axis of parameters"
		case strings.Contains(fe.Want, "float16"):
			advice = "float16 is not supported; convert with a.astype(np.float32)"
		case strings.Contains(fe.Want, "object array"):
			advice = "not an object array of pickled Python objects: save np.asarray(x, dtype=np.float64)"
		}
		return nil, fmt.Errorf("%s: %s, want float32 ('<f4') or float64 ('<f8'): diagnose reads draws of real parameters (%s)", name, got, advice)
	}
	if err != nil {
		return nil, err
	}
	return arrayChains(a, name)
}

// checkDistinct refuses a file given twice: it would count as two chains.
func checkDistinct(paths []string) error {
	for i, p := range paths {
		for _, q := range paths[:i] {
			if sameFile(p, q) {
				return fmt.Errorf("%s and %s are the same file: give each chain's file once", q, p)
			}
		}
	}
	return nil
}

// readNpzMember decodes member key of the archive at path (the first if
// key is empty), and no other: they may be large or broken. name is the
// file and member, for the table and errors.
func readNpzMember(path, key string) (a *npy.Array, name string, err error) {
	zr, err := npz.OpenReader(path)
	if err != nil {
		return nil, "", err
	}
	defer zr.Close()
	if key == "" {
		if len(zr.Names) == 0 {
			return nil, "", fmt.Errorf("%s: the archive holds no array", path)
		}
		key = zr.Names[0]
	}
	a, err = zr.Get(key)
	return a, fmt.Sprintf("%s member %q", path, key), err
}

// arrayChains checks a (chains, draws) or (chains, draws, dims) array.
func arrayChains(a *npy.Array, name string) (*chainsData, error) {
	if len(a.Dtype) < 3 || a.Dtype[1] == 'b' {
		// Other readers take bools: say why this one does not (probe 27:
		// the two refusals contradicted each other).
		return nil, fmt.Errorf("%s: dtype %q, want float32 ('<f4'), float64 ('<f8') or integers: diagnose reads draws of parameters, not bool arrays (convert with a.astype(np.float64) if they are draws of an indicator)", name, a.Dtype)
	}
	if k := a.Dtype[1]; k == 'i' || k == 'u' { // draws of discrete parameters, as ArviZ reads them (round 98 A4: refused)
		const exact = 1 << 53 // float64 holds every integer up to it
		for i, v := range a.Data {
			if math.Abs(v) >= exact {
				return nil, fmt.Errorf("%s: dtype %q: value %d (counting from 1) is beyond ±2^53, where float64, in which diagnose computes, no longer holds every integer: subtract a common offset first", name, a.Dtype, i+1)
			}
		}
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
	warmup int   // CmdStan warm-up draws dropped (save_warmup = 1)
	// warmupUnsure: warm-up saved without adaptation, rows that do not
	// add up to the header's counts (kept)
	warmupUnsure bool
	// warmupCut: warm-up saved without adaptation, fewer rows than the
	// header's warm-up and draws (its warm-up dropped)
	warmupCut bool
}

// chainColumns are the names of a chain column (posterior's draws_df,
// ArviZ's and the common "chain"); drawColumns those of the draw's index.
var (
	chainColumns = []string{"chain", ".chain", "chain__"}
	drawColumns  = []string{"draw", ".draw", "iteration", ".iteration", "iter"}
)

// csvNeed estimates the memory that diagnosing the CSV files at paths
// takes: every column read as a float64 twice (the rows and their parse),
// the parameter columns (not the sampler's name__ nor the chain and draw
// columns) held about diagnoseCopies times, each file's rows and columns
// counted in a pass over it (csvShape). Probe 70 B1: 2 bytes of text per
// value assumed, 6 to 17 times the need; round 71 B1, B4: rows estimated
// from the first file's first 64 KiB, so a set accepted in one order died
// out of memory, and files whose header passed 64 KiB were refused at the
// old bound. A file that cannot be read is counted at the old bound (its
// reader then names what is wrong).
func csvNeed(paths []string) float64 {
	need := 0.0
	for _, p := range paths {
		rows, header, err := csvShape(p)
		if err != nil || header == nil {
			if fi, err := os.Stat(p); err == nil {
				need += float64(fi.Size()) / 2 * 8 * diagnoseCopies
			}
			continue
		}
		t := csvTable{header: header}
		all, kept := float64(len(header)), float64(len(parameterColumns(&t)))
		need += float64(rows) * 8 * (2*all + diagnoseCopies*kept)
	}
	return need
}

// maxHeaderBytes bounds the header line csvShape reads (a header of a
// million columns of 60 characters).
const maxHeaderBytes = 64 << 20

// csvShape reads a CSV file's header (its first line that is neither
// empty nor a comment) and counts the data lines after it, without holding
// more than the header.
func csvShape(path string) (rows int64, header []string, err error) {
	f, err := safefile.Open(path)
	if err != nil {
		return 0, nil, err
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 64<<10)
	var line []byte // the header line, while it is read
	start, inHeader := true, false
	for {
		piece, rerr := r.ReadSlice('\n')
		if len(piece) > 0 {
			ends := piece[len(piece)-1] == '\n'
			switch {
			case inHeader:
				if line = append(line, piece...); len(line) > maxHeaderBytes {
					return 0, nil, fmt.Errorf("%s: a header line longer than %d bytes", path, maxHeaderBytes)
				}
			case start:
				text := bytes.TrimSpace(bytes.TrimPrefix(piece, []byte("\ufeff")))
				switch {
				case len(text) == 0 || text[0] == '#':
				case header == nil:
					inHeader, line = true, append(line, piece...)
				default:
					rows++
				}
			}
			if inHeader && (ends || rerr == io.EOF) {
				if header, err = csvHeader(line); err != nil {
					return 0, nil, err
				}
				inHeader, line = false, nil
			}
			start = ends
		}
		if rerr == io.EOF {
			return rows, header, nil
		}
		if rerr != nil && rerr != bufio.ErrBufferFull {
			return 0, nil, rerr
		}
	}
}

// csvHeader parses a header line, its names trimmed.
func csvHeader(line []byte) ([]string, error) {
	text := strings.TrimSpace(strings.TrimPrefix(string(line), "\ufeff"))
	h, err := csv.NewReader(strings.NewReader(text)).Read()
	for i := range h {
		h[i] = strings.TrimSpace(h[i])
	}
	return h, err
}

// readCSVChains reads one CSV with a chain column, or CmdStan's files (one
// per chain; comment lines and the sampler's columns name__ dropped).
func readCSVChains(paths []string) (*chainsData, error) {
	if err := checkDistinct(paths); err != nil {
		return nil, err
	}
	var tables []*csvTable
	total := int64(0)
	for _, p := range paths {
		fi, err := os.Stat(p)
		if err != nil {
			return nil, err
		}
		total += fi.Size()
	}
	if need, limit := csvNeed(paths), sysmem.Limit(8<<30); need > limit {
		files := paths[0]
		if len(paths) > 1 {
			files += fmt.Sprintf(" and %d more", len(paths)-1)
		}
		return nil, fmt.Errorf("%s: %d bytes of CSV may need about %.3g GB to diagnose, over the limit of %.3g GB: keep every k-th draw of each chain (thin it) or fewer parameter columns, and diagnose again", files, total, need/1e9, limit/1e9)
	}
	for _, p := range paths {
		t, err := readCSVTable(p)
		if err != nil {
			return nil, err
		}
		tables = append(tables, t)
	}
	for _, t := range tables { // any of them (probe 59: a second file's was read as a CmdStan chain)
		if chainCol := indexOfAny(t.header, t.chainNames()); chainCol >= 0 && len(tables) > 1 {
			return nil, fmt.Errorf("%s has a chain column %q: give that one file, not several", t.path, t.header[chainCol])
		}
	}
	if chainCol := indexOfAny(tables[0].header, tables[0].chainNames()); chainCol >= 0 {
		return groupByChain(tables[0], chainCol)
	}
	for _, p := range paths { // one file without a chain column: one chain (round 131 A1: refused, CmdStan's output of a one-chain run)
		if err := endsWithLineBreak(p); err != nil {
			return nil, err
		}
	}
	return stackChains(tables)
}

// endsWithLineBreak refuses a CmdStan output file that does not end with a
// line break: CmdStan ends every line with one, so the file was cut, and
// its last draw may have been read shortened (probe 18: a number cut in
// the middle was accepted).
func endsWithLineBreak(path string) error {
	f, err := safefile.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || fi.Size() == 0 {
		return err
	}
	tail := make([]byte, min(fi.Size(), 64<<10))
	if _, err := f.ReadAt(tail, fi.Size()-int64(len(tail))); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	last := tail[bytes.LastIndexByte(tail, '\n')+1:]
	if t := bytes.TrimSpace(last); len(t) > 0 && t[0] == '#' && len(last) < len(tail) { // a comment, whole (round 74 B2: CmdStan's timings without their line break)
		return nil
	}
	if tail[len(tail)-1] != '\n' {
		return fmt.Errorf("%s does not end with a line break: CmdStan ends every line with one, so the file was cut short (its last draw may be shortened); give the whole file", path)
	}
	return nil
}

// readCSVTable reads a CSV file (RFC 4180 quoting; a UTF-8 byte order
// mark skipped): lines starting with # (after spaces) are comments, the
// first other line is the header, the others numbers.
func readCSVTable(path string) (*csvTable, error) {
	f, err := safefile.OpenLimited(path, data.MaxCSVBytes(), data.CSVLimitWhy)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	br := bufio.NewReaderSize(f, 64<<10)
	if b, _ := br.Peek(64 << 10); bytes.IndexByte(b, '\r') >= 0 && bytes.IndexByte(b, '\n') < 0 {
		return nil, fmt.Errorf("%s: its lines end in CR only (classic Mac OS): convert them to LF or CRLF", path)
	}
	if b, _ := br.Peek(2); string(b) == "\xff\xfe" || string(b) == "\xfe\xff" { // round 117 B4: "control characters" in its names
		return nil, fmt.Errorf("%s: UTF-16 (byte-order mark FF FE or FE FF), want UTF-8: convert it, with iconv -f UTF-16 -t UTF-8 say", path)
	}
	skipBOM(br)
	r := csv.NewReader(&indentedComments{r: br, start: true})
	r.Comment, r.FieldsPerRecord, r.TrimLeadingSpace = '#', -1, true
	t := &csvTable{path: path}
	for {
		rec, err := r.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, csvError(path, err)
		}
		line, _ := r.FieldPos(0)
		if err := t.add(rec, line); err != nil {
			return nil, err
		}
	}
	switch {
	case t.header == nil:
		return nil, fmt.Errorf("%s: no header and draws: want a header line of names, then one line per draw", path)
	case len(t.rows) == 0: // probe 51: "no header" of a header alone
		return nil, fmt.Errorf("%s: a header and no draws: want one line per draw after the header", path)
	}
	return t, t.dropWarmup()
}

// dropWarmup removes the warm-up draws CmdStan writes with save_warmup = 1
// (before its "# Adaptation terminated" comment): diagnostics are of the
// draws kept, as posterior's and ArviZ's readers keep warm-up apart.
func (t *csvTable) dropWarmup() error {
	w, err := cmdstanWarmupRows(t.path)
	t.warmupUnsure, t.warmupCut = w.unsure, w.cut
	if err != nil {
		return err
	}
	if w.declared > 0 && len(t.rows)-w.n < w.declared { // round 75 B3: a chain cut short, read unsaid
		t.warmupCut = true
	}
	if w.n == 0 {
		return nil
	}
	if w.n >= len(t.rows) {
		return fmt.Errorf("%s: all %d draws are warm-up (save_warmup = 1, %s): no draws to diagnose", t.path, len(t.rows), w.why)
	}
	t.rows, t.lines, t.warmup = t.rows[w.n:], t.lines[w.n:], w.n
	return nil
}

// warmupRows is what cmdstanWarmupRows finds of a file's warm-up draws.
type warmupRows struct {
	n   int    // the rows of warm-up at the file's start
	why string // how they were counted
	// cut: saved without adaptation, fewer rows than the header's warm-up
	// and draws (a chain interrupted while sampling); unsure: more rows
	// than those (nothing dropped)
	cut, unsure bool
	// declared: the draws the header's num_samples and thin declare (0 if
	// it does not say)
	declared int
}

// cmdstanWarmupRows counts the draws of a CmdStan file written with
// save_warmup on that come before "# Adaptation terminated", or, where
// warm-up ran without adaptation (engaged = 0: no such line), the
// ceil(num_warmup/thin) draws its header declares, as cmdstanpy, cmdstanr
// and ArviZ count them (probe 68 B1: kept, unsaid); 0 for other files.
//
// Without adaptation, a file of more rows than the header's warm-up and
// draws is unsure: nothing is dropped, and the note says so (probe 70); a
// file of fewer, a chain interrupted while sampling, has its warm-up
// first, dropped (round 71: kept, and the mean of its draws was 20 for 0).
func cmdstanWarmupRows(path string) (warmupRows, error) {
	f, err := safefile.Open(path)
	if err != nil {
		return warmupRows{}, err
	}
	defer f.Close()
	br := bufio.NewReader(f)
	saved, header, rows, fixedParam, engaged := false, false, 0, false, false
	numWarmup, numSamples, thin := -1, -1, 1
	for {
		line, err := br.ReadString('\n')
		text := strings.TrimSpace(strings.TrimPrefix(line, "\ufeff"))
		switch {
		case strings.HasPrefix(text, "#"):
			c := strings.Join(strings.Fields(strings.TrimPrefix(text, "#")), " ")
			saved = saved || c == "save_warmup = 1" || c == "save_warmup = true"
			if v, ok := cmdstanSetting(c, "num_warmup"); ok {
				numWarmup = v
			}
			if v, ok := cmdstanSetting(c, "num_samples"); ok {
				numSamples = v
			}
			fixedParam = fixedParam || strings.HasPrefix(c, "algorithm = fixed_param")
			if rest, ok := strings.CutPrefix(c, "engaged = "); ok { // 1, or true from CmdStan 2.33 (round 73 B2)
				v := strings.TrimSuffix(rest, " (Default)")
				engaged = v == "1" || v == "true"
			}
			if v, ok := cmdstanSetting(c, "thin"); ok && v > 0 {
				thin = v
			}
			if strings.HasPrefix(c, "Adaptation terminated") {
				declared := max(0, (numSamples+thin-1)/thin)
				if saved {
					return warmupRows{n: rows, why: `before "# Adaptation terminated"`, declared: declared}, nil
				}
				return warmupRows{declared: declared}, nil
			}
		case text == "":
		case !header:
			header = true
		default:
			rows++
		}
		if err != nil {
			// No adaptation comment: the header's count, where the rows are
			// warm-up and draws as it declares them (probe 69 B1: the
			// fixed_param sampler writes no warm-up rows under a header
			// of num_warmup 1000, and 1000 of its draws were dropped).
			if !saved || !header || numWarmup <= 0 || fixedParam {
				return warmupRows{declared: max(0, (numSamples+thin-1)/thin)}, nil
			}
			w := warmupRows{n: (numWarmup + thin - 1) / thin, why: fmt.Sprintf("the header's num_warmup = %d, thin = %d, and no adaptation", numWarmup, thin)}
			if engaged { // round 72 B4: said "no adaptation" of a chain stopped while adapting
				w.why = fmt.Sprintf("the header's num_warmup = %d, thin = %d, adaptation engaged and no \"# Adaptation terminated\" line: the chain stopped during warm-up", numWarmup, thin)
			}
			switch draws := (numSamples + thin - 1) / thin; {
			case numSamples < 0 || rows == w.n+draws:
			case rows < w.n+draws:
				w.cut = true
			default:
				return warmupRows{unsure: true}, nil
			}
			return w, nil
		}
	}
}

// cmdstanSetting reads an integer setting of a CmdStan header comment c
// ("num_warmup = 1000 (Default)").
func cmdstanSetting(c, name string) (int, bool) {
	rest, ok := strings.CutPrefix(c, name+" = ")
	if !ok {
		return 0, false
	}
	v, err := strconv.Atoi(strings.TrimSuffix(rest, " (Default)"))
	if v > math.MaxInt32 { // no file holds that many rows: ceil(num_warmup/thin) overflowed to a negative count
		return 0, false
	}
	return v, err == nil && v >= 0
}

// indentedComments reads r with its comment lines indented by spaces or
// tabs left empty (their line break kept, so that lines keep their
// numbers): encoding/csv skips only those starting with '#' (round 72 B5:
// refused as a line of other separators). Only the raw line tells a
// comment from a quoted field starting with '#' (round 73 B3: rows
// "#1",5 were dropped, unsaid, and a header "#chain",x skipped).
type indentedComments struct {
	r        *bufio.Reader
	start    bool   // at the start of a line
	dropping bool   // in an indented comment
	pending  []byte // read, not yet given
}

func (f *indentedComments) Read(p []byte) (int, error) {
	for len(f.pending) == 0 {
		piece, err := f.r.ReadSlice('\n')
		if len(piece) > 0 {
			ends := piece[len(piece)-1] == '\n'
			if f.start {
				t := bytes.TrimLeft(piece, " \t")
				f.dropping = len(t) > 0 && t[0] == '#' && len(t) < len(piece)
			}
			switch {
			case !f.dropping:
				f.pending = piece // given before the next ReadSlice
			case ends:
				f.pending = piece[len(piece)-1:]
			}
			f.start = ends
		}
		if err != nil && err != bufio.ErrBufferFull && len(f.pending) == 0 {
			return 0, err
		}
	}
	n := copy(p, f.pending)
	f.pending = f.pending[n:]
	return n, nil
}

// skipBOM skips a UTF-8 byte order mark at the start of br.
func skipBOM(br *bufio.Reader) io.Reader {
	if b, err := br.Peek(3); err == nil && string(b) == "\ufeff" {
		br.Discard(3)
	}
	return br
}

// csvError is a CSV syntax error as one line naming the file, line and
// column.
func csvError(path string, err error) error {
	var pe *csv.ParseError
	if errors.As(err, &pe) && errors.Is(pe.Err, csv.ErrQuote) && pe.StartLine < pe.Line { // probe 59: the line of the end of file was named
		return fmt.Errorf("%s: line %d: a quoted field of the record starting there is not closed as CSV closes it (found at line %d, column %d: %v)", path, pe.StartLine, pe.Line, pe.Column, pe.Err)
	}
	if errors.As(err, &pe) {
		return fmt.Errorf("%s: line %d, column %d: %v", path, pe.Line, pe.Column, pe.Err)
	}
	return fmt.Errorf("%s: %w", path, err)
}

// add takes the record on line: the header if there is none yet, else a
// row of numbers; a blank line is skipped.
func (t *csvTable) add(rec []string, line int) error {
	if len(rec) == 1 && strings.TrimSpace(rec[0]) == "" {
		return nil
	}
	if t.header == nil {
		return t.setHeader(rec, line)
	}
	row, err := t.parseRow(rec, line)
	if err != nil {
		return err
	}
	t.rows, t.lines = append(t.rows, row), append(t.lines, line)
	return nil
}

// setHeader takes the column names: each present and distinct, as the
// dimensions and their plots are named by them.
func (t *csvTable) setHeader(rec []string, line int) error {
	if allNumbers(rec) && !data.ColumnIndices(rec, 0) && !data.ColumnIndices(rec, 1) { // probe 54: a file without a header had its first draw's numbers taken for names
		return fmt.Errorf("%s: line %d holds numbers (%s), want a header of column names: diagnose reads draws under a header line (as Stan, ArviZ and pandas write them); add one (numpy.savetxt writes its header as a comment, \"# a,b\", which is skipped: give comments='')", t.path, line, clipText(strings.Join(rec, ",")))
	}
	seen := map[string]int{}
	for j := range rec {
		name := strings.TrimSpace(rec[j])
		if name == "" {
			return fmt.Errorf("%s: line %d, column %d: empty column name: want %s", t.path, line, j+1, data.EmptyNameAdvice(j, len(rec)))
		}
		if strings.IndexFunc(name, unicode.IsControl) >= 0 {
			hint := ""
			if strings.ContainsRune(name, '\t') && len(rec) == 1 { // a tab-separated file read with commas: one column (probe 68 B9: a quoted name among commas)
				hint = `: the columns are separated by commas, and this header holds tabs: write the file with commas (pandas' to_csv, numpy.savetxt(..., delimiter=","), or tr '\t' ',')`
			}
			return fmt.Errorf("%s: line %d, column %d: the column name %q holds control characters%s", t.path, line, j+1, name, hint)
		}
		if k, dup := seen[name]; dup {
			return fmt.Errorf("%s: line %d: columns %d and %d are both named %q (spaces around a name are not part of it): want distinct column names", t.path, line, k+1, j+1, name)
		}
		seen[name], rec[j] = j, name
	}
	t.header = rec
	return nil
}

func (t *csvTable) parseRow(fields []string, line int) ([]float64, error) {
	if len(fields) != len(t.header) {
		hint := ""
		if len(fields) == 1 && strings.ContainsAny(strings.TrimSpace(fields[0]), " \t;|") { // probe 55: numpy.savetxt's spaces
			hint = `: the columns are separated by commas, and this line has other separators: write the file with commas (numpy.savetxt(..., delimiter=","), pandas' to_csv)`
		}
		return nil, fmt.Errorf("%s: line %d has %d columns, want %d (the header's)%s", t.path, line, len(fields), len(t.header), hint)
	}
	row := make([]float64, len(fields))
	for j, f := range fields {
		v, err := t.parseValue(strings.TrimSpace(f), line, j)
		if err != nil {
			return nil, err
		}
		row[j] = v
	}
	return row, nil
}

// parseValue reads the number in column j of line: decimal as CSV writers
// write them (not Go's digit separators or hex floats), and finite unless
// the column is the sampler's, which is dropped.
func (t *csvTable) parseValue(f string, line, j int) (float64, error) {
	v, err := strconv.ParseFloat(f, 64)
	h := t.header[j]
	chain, draw := slices.Contains(t.chainNames(), h), slices.Contains(t.drawNames(), h)
	switch {
	case err != nil && !errors.Is(err, strconv.ErrRange):
		if before, _, ok := strings.Cut(f, "#"); ok && strings.TrimSpace(before) != "" { // round 73 B5: "1,0.5 # note" was blamed on a space separator
			return 0, fmt.Errorf("%s: %q is not a number: a comment after a value (#) is not read; move it to a line of its own, starting with #", t.at(line, j), clipText(f))
		}
		if sep := strings.IndexAny(strings.TrimSpace(f), ";\t| "); sep >= 0 { // probe 51: as energy's reader says it; probe 55: spaces too (numpy.savetxt's default)
			tf := strings.TrimSpace(f)
			return 0, fmt.Errorf("%s: %q is not a number; the columns are separated by commas, and this field holds %q: write the file with commas (numpy.savetxt(..., delimiter=\",\"), pandas' to_csv)", t.at(line, j), clipText(f), tf[sep:sep+1])
		}
		return 0, fmt.Errorf("%s: %q is not a number", t.at(line, j), clipText(f))
	case strings.ContainsAny(f, "_xX"):
		return 0, fmt.Errorf("%s: %q is not a decimal number (digit separators and hex floats are Go's syntax, not CSV's)", t.at(line, j), clipText(f))
	case chain && !integerText.MatchString(f):
		// As written: 1.0000000000000001 and 2^52 + 0.5 are read as
		// integers, and chains merged (probe 30).
		return 0, fmt.Errorf("%s: chain %s: want an integer chain number, written in digits", t.at(line, j), clipText(f))
	case draw && !integerText.MatchString(f):
		return 0, fmt.Errorf("%s: %s %s: want an integer, written in digits", t.at(line, j), t.header[j], clipText(f))
	case chain && math.Abs(v) >= maxExactInt: // probe 29: two chains above it were merged into one
		return 0, fmt.Errorf("%s: chain %s: want a chain number of magnitude below 2^53 = %d (larger ones are not told apart once read)", t.at(line, j), clipText(f), maxExactInt)
	case draw && math.Abs(v) >= maxExactInt: // as written (probe 31: the rounded number was quoted)
		return 0, fmt.Errorf("%s: %s %s: want a number of magnitude below 2^53 = %d (larger ones are not told apart once read)", t.at(line, j), t.header[j], clipText(f), maxExactInt)
	// After them: a whole number past float64's range is too large there
	// (probe 32: "not finite").
	case (math.IsNaN(v) || math.IsInf(v, 0)) && !samplerColumn(h):
		return 0, fmt.Errorf("%s: %q is not finite: want finite numbers", t.at(line, j), clipText(f))
	}
	return v, nil
}

// integerText matches an integer as CSV writers write one: digits, with
// a sign, or ".0" (pandas' floats).
var integerText = regexp.MustCompile(`^[+-]?[0-9]+(\.0*)?$`)

// at names the file, line and column j (by number and name).
func (t *csvTable) at(line, j int) string {
	return fmt.Sprintf("%s: line %d, column %d (%s)", t.path, line, j+1, t.header[j])
}

func clipText(s string) string { return textclip.Cut(s, 40) } // whole characters (probe 25: "€€\xe2…")

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
func parameterColumns(t *csvTable) []int {
	var cols []int
	for i, h := range t.header {
		if samplerColumn(h) || slices.Contains(t.chainNames(), h) || slices.Contains(t.drawNames(), h) {
			continue
		}
		cols = append(cols, i)
	}
	return cols
}

// chainNames and drawNames are the names of the table's chain and draw
// columns: posterior's dot-prefixed ones where the header has ".chain",
// whose variables may then be named chain, draw or iteration (probe 64: a
// variable named chain was taken for the chain number), else any of
// chainColumns and drawColumns.
func (t *csvTable) chainNames() []string {
	if slices.Contains(t.header, ".chain") {
		return []string{".chain"}
	}
	return chainColumns
}

func (t *csvTable) drawNames() []string {
	if slices.Contains(t.header, ".chain") {
		return []string{".draw", ".iteration"}
	}
	return drawColumns
}

// samplerColumn reports whether the column is the sampler's (name__:
// CmdStan's lp__, accept_stat__, …), which diagnose drops.
func samplerColumn(name string) bool {
	return strings.HasSuffix(name, "__") && !slices.Contains(chainColumns, name)
}

// checkDrawOrder requires each draw column (draw, iteration, …) to
// increase strictly within each chain (column chainCol; -1: the table is
// one chain): rows out of order would give another R-hat.
func checkDrawOrder(t *csvTable, chainCol int) error {
	for j, h := range t.header {
		if !slices.Contains(t.drawNames(), h) {
			continue
		}
		last := map[float64]float64{}
		for i, r := range t.rows {
			id := 0.0
			if chainCol >= 0 {
				id = r[chainCol]
			}
			if prev, ok := last[id]; ok && !(r[j] > prev) {
				return fmt.Errorf("%s: %v follows %v in the same chain: want each chain's rows in draw order (%s strictly increasing)", t.at(t.lines[i], j), r[j], prev, h)
			}
			last[id] = r[j]
		}
	}
	return nil
}

// maxExactInt is 2^53: integers of smaller magnitude are held exactly
// by a float64; larger ones read from text may round to one another.
const maxExactInt = 1 << 53

// checkChainIDs requires the chain column's values to be integers.
func checkChainIDs(t *csvTable, chainCol int) error {
	for i, r := range t.rows {
		if id := r[chainCol]; id != math.Trunc(id) {
			return fmt.Errorf("%s: chain %v: want an integer chain number", t.at(t.lines[i], chainCol), id)
		}
	}
	return nil
}

// splitChains groups rows by their chain column, chains in the order of
// their numbers, whatever the order of the rows (probe 59: --nested
// grouped superchains by the order chains first appeared, and a file
// listing chain 3 before chain 2 gave another nested R-hat).
func splitChains(rows [][]float64, chainCol int) (order []float64, byChain map[float64][][]float64) {
	byChain = map[float64][][]float64{}
	for _, r := range rows {
		id := r[chainCol]
		if _, ok := byChain[id]; !ok {
			order = append(order, id)
		}
		byChain[id] = append(byChain[id], r)
	}
	slices.Sort(order)
	return order, byChain
}

// stackChains makes one chain of each CmdStan file: same columns, same
// number of draws.
func stackChains(tables []*csvTable) (*chainsData, error) {
	first := tables[0]
	cols := parameterColumns(first)
	if len(cols) == 0 {
		return nil, fmt.Errorf("%s: no parameter columns (only the sampler's name__ columns, chain and draw)", first.path)
	}
	for _, t := range tables {
		if err := checkDrawOrder(t, -1); err != nil {
			return nil, err
		}
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
	if len(tables) == 1 {
		c.shape, c.source = "1 file", first.path
	}
	c.chainLabels = fileLabels(tables) // round 117 B3: named by their place among the files given, not the files
	if w := warmupNote(tables); w != "" {
		c.dtype = "CmdStan CSV, " + w
	}
	return c, nil
}

// fileLabels names each chain of a CmdStan set by its file: its base
// name, or the path as given where two files share one.
func fileLabels(tables []*csvTable) []string {
	labels := make([]string, len(tables))
	seen := map[string]int{}
	for i, t := range tables {
		labels[i] = filepath.Base(t.path)
		seen[labels[i]]++
	}
	for i, t := range tables {
		if seen[labels[i]] > 1 {
			labels[i] = t.path
		}
	}
	return labels
}

// warmupNote says how many warm-up draws were dropped from each chain's
// file ("" if none): one count where all files agree, else each file's
// (probe 68 B3: the first file's count was said of all); and which files
// keep warm-up they may hold, or were cut short while sampling.
func warmupNote(tables []*csvTable) string {
	var unsure, cut []string
	for _, t := range tables {
		if t.warmupUnsure {
			unsure = append(unsure, filepath.Base(t.path))
		}
		if t.warmupCut {
			cut = append(cut, filepath.Base(t.path))
		}
	}
	if len(unsure) > 0 { // rows that do not add up: kept, said
		return fmt.Sprintf("%s: saved with warm-up and no adaptation, but with more rows than the header's warm-up and draws: no warm-up dropped, the draws may include it", strings.Join(unsure, ", "))
	}
	note := warmupCounts(tables)
	if len(cut) > 0 {
		note += fmt.Sprintf("; %s: fewer draws than the header's num_samples (a chain interrupted while sampling)", strings.Join(cut, ", "))
	}
	return note
}

// warmupCounts is the count of warm-up draws dropped per chain ("" if
// none), or each file's where they differ.
func warmupCounts(tables []*csvTable) string {
	same, any := true, false
	for _, t := range tables {
		same = same && t.warmup == tables[0].warmup
		any = any || t.warmup > 0
	}
	switch {
	case !any:
		return ""
	case same:
		return fmt.Sprintf("%d warm-up draws per chain dropped", tables[0].warmup)
	}
	counts := make([]string, len(tables))
	for i, t := range tables {
		counts[i] = strconv.Itoa(t.warmup)
	}
	return "warm-up draws dropped per file: " + strings.Join(counts, ", ")
}

// groupByChain splits one table's rows by its chain column, in the order
// of the chain numbers; every chain must have as many draws.
func groupByChain(t *csvTable, chainCol int) (*chainsData, error) {
	cols := parameterColumns(t)
	if len(cols) == 0 {
		return nil, fmt.Errorf("%s: no parameter columns besides the chain and draw columns", t.path)
	}
	if err := checkChainIDs(t, chainCol); err != nil {
		return nil, err
	}
	if err := checkDrawOrder(t, chainCol); err != nil {
		return nil, err
	}
	order, byChain := splitChains(t.rows, chainCol)
	n := len(byChain[order[0]])
	c := &chainsData{chains: len(order), draws: n, dims: len(cols), source: t.path, dtype: "CSV"}
	for _, id := range order {
		c.chainLabels = append(c.chainLabels, strconv.FormatFloat(id, 'f', -1, 64)) // the file's chain numbers (probe 63: by position)
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

// twinGroups returns the groups of two chains or more whose draws are
// identical in every dim, each in order, the groups by their first chain
// (round 125 A6: only the first pair was named).
func (c *chainsData) twinGroups() [][]int {
	n := c.draws * c.dims
	groups := make(map[uint64][][]int, c.chains) // by hash: chains of equal draws
	var order []uint64
	for i := range c.chains {
		h := fnv.New64a()
		var b [8]byte
		for _, v := range c.data[i*n : (i+1)*n] {
			binary.LittleEndian.PutUint64(b[:], math.Float64bits(v))
			h.Write(b[:])
		}
		key, placed := h.Sum64(), false
		for g, group := range groups[key] {
			if j := group[0]; slices.Equal(c.data[j*n:(j+1)*n], c.data[i*n:(i+1)*n]) {
				groups[key][g], placed = append(group, i), true
				break
			}
		}
		if !placed {
			if len(groups[key]) == 0 {
				order = append(order, key)
			}
			groups[key] = append(groups[key], []int{i})
		}
	}
	var twins [][]int
	for _, key := range order {
		for _, group := range groups[key] {
			if len(group) > 1 {
				twins = append(twins, group)
			}
		}
	}
	slices.SortFunc(twins, func(a, b []int) int { return a[0] - b[0] })
	return twins
}

// stillChain reports whether chain i's draws are all one point.
func (c *chainsData) stillChain(i int) bool {
	n := c.draws * c.dims
	x := c.data[i*n : (i+1)*n]
	for k := c.dims; k < n; k++ {
		if x[k] != x[k%c.dims] {
			return false
		}
	}
	return true
}

// chainName names chain i as the input numbers it: its CSV chain label,
// or its index from 1.
func (c *chainsData) chainName(i int) string {
	switch {
	case c.chainLabels != nil && i < len(c.chainLabels):
		return c.chainLabels[i]
	case c.names == nil: // an array's index, as NumPy's (round 116 A2: sample's notes numbered from 1, a user looked at the wrong chains)
		return strconv.Itoa(i)
	}
	return strconv.Itoa(i + 1) // CmdStan's files, in order
}

// chainNames are the chains' names (chainName), for the figures' legends.
func (c *chainsData) chainNames() []string {
	names := make([]string, c.chains)
	for i := range names {
		names[i] = c.chainName(i)
	}
	return names
}

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

// allNumbers reports whether every field of rec, and every part of a
// field separated by spaces or tabs, is a number.
func allNumbers(rec []string) bool {
	for _, f := range rec {
		parts := strings.Fields(f)
		if len(parts) == 0 {
			return false
		}
		for _, p := range parts {
			if _, err := strconv.ParseFloat(p, 64); err != nil {
				return false
			}
		}
	}
	return true
}

// runRecordRefusal refuses a flowebm run's own record given as draws
// (round 109 B2, B3: metrics.csv was refused for its first NaN, with
// CmdStan's advice; metrics.json, config.json and seeds.json were "not a
// .npy file … rename it .csv"): it says what the file is, and how to get
// chains of the run's model.
func runRecordRefusal(path string) error {
	if startsLikeNpy(path) { // NumPy's draws, whatever the name
		return nil
	}
	what := ""
	switch ext := strings.ToLower(filepath.Ext(path)); ext {
	case ".json":
		if exists(path) { // round 134 B1: a missing file was called a record
			what = "a JSON record (flowebm writes a run's settings and results so: config.json, metrics.json, seeds.json), not draws"
		}
	case ".onnx": // round 111 B6: "not a .npy file"
		return fmt.Errorf("%s is an ONNX model, not draws: diagnose reads MCMC chains (.npy, .npz, CSV); flowebm sample --model %s --out chains.npy draws them from an energy network, then flowebm diagnose chains.npy", path, shellQuote(path))
	case ".png", ".svg", ".pdf", ".jpg", ".jpeg":
		what = "a figure, not draws"
	case ".md":
		if exists(path) {
			what = "a Markdown text (a report or summary), not draws"
		}
	case ".csv":
		if header := firstCSVLine(path); training.IsEvalsHeader(header) { // its first line only: csvShape reads the whole file, which csvNeed reads again
			what = "a training run's evaluations table (iter, loss, flow_ll, …: one row per evaluation), not draws of chains"
		}
	}
	if what == "" {
		return nil
	}
	run, dir := "RUN", filepath.Dir(path)
	if filepath.Base(dir) == "checkpoint" {
		dir = filepath.Dir(dir)
	}
	if exists(filepath.Join(dir, "checkpoint")) {
		run = dir
	}
	return fmt.Errorf("%s is %s: diagnose reads MCMC chains (.npy, .npz, CSV); a run's model gives them with flowebm sample --model %s --out chains.npy, then flowebm diagnose chains.npy (flowebm plot draws a run's evaluations)", path, what, run)
}

// checkpointRefusal refuses an .npz checkpoint given as draws without
// --key (left from round 109: a sample checkpoint's first member, the
// chains' gradients, was read as draws): a sample checkpoint names the
// draws it keeps so far or the file its draws went to; a training run's
// state.npz names the command that draws chains of its model.
func checkpointRefusal(path string) error {
	zr, err := npz.OpenReader(path)
	if err != nil {
		return nil // its reader names what is wrong
	}
	defer zr.Close()
	names := zr.Names
	if filepath.Base(path) == "weights.npz" && exists(filepath.Join(filepath.Dir(path), "spec.json")) { // round 111 B6
		return fmt.Errorf("%s is a checkpoint's model weights (its parameters, beside spec.json), not draws: diagnose reads MCMC chains; flowebm sample --model %s --out chains.npy draws them from the model, then flowebm diagnose chains.npy", path, shellQuote(trainRunOf(path)))
	}
	if slices.Contains(names, "bank") && slices.Contains(names, "data_order") {
		return fmt.Errorf("%s is a training run's state (state.npz of its checkpoint), not draws: diagnose reads MCMC chains; flowebm sample --model %s --out chains.npy draws them from the run's model, then flowebm diagnose chains.npy", path, shellQuote(trainRunOf(path)))
	}
	if !slices.Contains(names, "meta") || !slices.ContainsFunc(names, func(n string) bool { return n == "x" || n == "latent_x" }) || slices.ContainsFunc(names, func(n string) bool { return !knownMember(n) }) {
		return nil
	}
	kept := "it keeps no draw yet (written during the warm-up)"
	if h, err := zr.Header("draws"); err == nil && len(h.Shape) == 3 {
		kept = fmt.Sprintf("the %d draws per chain kept so far are member \"draws\" (flowebm diagnose --key draws %s reads them)", h.Shape[1], shellQuote(path))
	}
	out, way := "", "its --out file"
	if meta, err := decodeMeta(zr, path); err == nil {
		out = flagValue(meta.Args, "out")
		way = cmp.Or(shellQuote(out), way)
	}
	if out != "" && exists(out) {
		way = fmt.Sprintf("the run went on to write every draw to %s: diagnose that file", way)
	} else {
		way = fmt.Sprintf("flowebm sample --resume %s finishes the run and writes every draw to %s", shellQuote(path), way)
	}
	return fmt.Errorf("%s is a flowebm sample checkpoint (the chains' state part way through a run, to continue from), not the run's draws: %s; %s", path, kept, way)
}

// flagValue is the value of flag --name in args (--name v or --name=v;
// the last one given), or "".
func flagValue(args []string, name string) string {
	v := ""
	for i, a := range args {
		if a == "--"+name && i+1 < len(args) {
			v = args[i+1]
		} else if s, ok := strings.CutPrefix(a, "--"+name+"="); ok {
			v = s
		}
	}
	return v
}

// startsLikeNpy reports whether the file at path begins with NumPy's
// magic string (a .npy file under another name).
func startsLikeNpy(path string) bool {
	f, err := safefile.Open(path) // a FIFO is not waited on
	if err != nil {
		return false
	}
	defer f.Close()
	b := make([]byte, 6)
	n, _ := io.ReadFull(f, b)
	return string(b[:n]) == npy.Magic
}

// firstCSVLine is the fields of the first line of the CSV file at path
// (up to 64 KiB; flowebm's tables have no comment line above their
// header), nil where it cannot be read.
func firstCSVLine(path string) []string {
	f, err := safefile.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	line, err := bufio.NewReaderSize(f, 64<<10).ReadSlice('\n')
	if err != nil && err != io.EOF {
		return nil
	}
	h, _ := csvHeader(line)
	return h
}
