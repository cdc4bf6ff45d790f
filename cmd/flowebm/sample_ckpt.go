package main

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/gonum/mat"

	"github.com/flowebm/flowebm/algorithms"
	"github.com/flowebm/flowebm/algorithms/config"
	"github.com/flowebm/flowebm/graph"
	"github.com/flowebm/flowebm/internal/jsonfile"
	"github.com/flowebm/flowebm/internal/sysmem"
	"github.com/flowebm/flowebm/io/checkpoint"
	"github.com/flowebm/flowebm/io/data"
	"github.com/flowebm/flowebm/io/npy"
	"github.com/flowebm/flowebm/io/npz"
	"github.com/flowebm/flowebm/io/onnx"
	"github.com/flowebm/flowebm/io/safefile"
	"github.com/flowebm/flowebm/samplers"
)

// A sample checkpoint is one .npz file, written atomically every
// --checkpoint-every steps (an interrupted run keeps its last one): the run's
// state as arrays (chains, their cached densities and gradients, the draws
// kept so far, a trained flow's parameters and optimiser) and "meta", a
// JSON document stored as a uint8 array (NumPy reads it with
// bytes(a).decode()). `sample --resume FILE` continues the run bit for bit.

// sampleCkptFormat names the checkpoint's layout.
const sampleCkptFormat = "flowebm-sample-checkpoint/1"

// sampleMeta is the checkpoint's JSON part.
type sampleMeta struct {
	Format string `json:"format"`
	// Args are the flags that defined the run, as given.
	Args []string `json:"args"`
	// Inputs are the SHA-256 of the model and flow files read, and of
	// --starts and --modes.
	Inputs map[string]string `json:"inputs"`
	// RNG is the PCG generator's state.
	RNG []byte `json:"rng"`
	// Training: adaptive flowMC's training phase (Cycle cycles done).
	Training bool     `json:"training"`
	Cycle    int      `json:"cycle"`
	Best     *float64 `json:"best,omitempty"` // nil: −∞
	// Low is the lowest window's (nil: +∞ before the first window; −∞,
	// the best counted from the start, in a checkpoint written before it
	// was kept).
	Low   *float64 `json:"low,omitempty"`
	Stale int      `json:"stale"`
	// Done steps of the chains' run, with its acceptance sums.
	Done          int     `json:"done"`
	Local, Global float64 `json:"-"`
	LocalSum      string  `json:"local_sum"` // exact: strconv of the float64 bits
	GlobalSum     string  `json:"global_sum"`
	StepSize      float64 `json:"step_size"`
	Frozen        bool    `json:"frozen"`
	// GradUndefined counts the proposals rejected so far for an undefined
	// gradient (samplers.ChainRun.GradUndefined).
	GradUndefined int `json:"grad_undefined,omitempty"`
	// MemoryAccepted is the memory limit the run was accepted under at
	// its start: its resumption is held to it again where the machine and
	// ulimit -v are not smaller (probe 57).
	MemoryAccepted *sysmem.Accepted `json:"memory_accepted,omitempty"`
	// Build is the build that wrote the checkpoint (Go, BLAS, vector
	// math): resumed by another, the run continues at round-off from an
	// uninterrupted one, and says so.
	Build *config.Build `json:"build,omitempty"`
	// Has* say which cached values of the state (and of NeuTra's latent
	// state) are valid.
	Has       [3]bool  `json:"has"`
	LatentHas *[3]bool `json:"latent_has,omitempty"`
	// Sums are the SHA-256 of each array member (memberSum) and MetaSum
	// that of meta itself without MetaSum: an edited step size, generator
	// state or kept draw resumed silently into other draws (round 107
	// B2). Absent from checkpoints written before: not checked.
	Sums    map[string]string `json:"sums,omitempty"`
	MetaSum string            `json:"meta_sha256,omitempty"`
}

// memberSum is the SHA-256 of an array member as the checkpoint holds
// it: its shape and its values' bits.
func memberSum(shape []int, data []float64) string {
	h := sha256.New()
	var b []byte
	b = binary.AppendUvarint(b, uint64(len(shape)))
	for _, n := range shape {
		b = binary.AppendUvarint(b, uint64(n))
	}
	h.Write(b)
	buf := make([]byte, 8)
	for _, v := range data {
		binary.LittleEndian.PutUint64(buf, math.Float64bits(v))
		h.Write(buf)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// metaSum is the SHA-256 of meta's JSON without its MetaSum.
func metaSum(meta sampleMeta) (string, error) {
	meta.MetaSum = ""
	b, err := json.Marshal(meta)
	if err != nil {
		return "", err
	}
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:]), nil
}

// ckptReader reads a checkpoint's members lazily, each after its header
// has the shape expected, and refuses non-finite values and members the
// format does not have.
type ckptReader struct {
	path string
	r    *npz.Reader
	sums map[string]string // meta's Sums (nil: not recorded)
	// again is the way on from a damaged member: the command that
	// started the run, as meta records it (startAgain).
	again string
}

// known reports whether a member name is one a checkpoint holds.
func knownMember(name string) bool {
	switch strings.TrimPrefix(name, "latent_") {
	case "meta", "x", "logp", "grad", "logq", "draws", "flow":
		return true
	}
	return strings.HasPrefix(name, "optim_")
}

// get reads member name, whose shape must be shape.
func (c *ckptReader) get(name string, shape ...int) ([]float64, error) {
	h, err := c.r.Header(name)
	if err != nil { // a member missing or damaged: the way on too (round 108 B1)
		return nil, fmt.Errorf("%w%s", err, c.again)
	}
	if !slices.Equal(h.Shape, shape) {
		return nil, fmt.Errorf("%s: member %q has shape %v, want %v (for the run's flags)", c.path, name, h.Shape, shape)
	}
	a, err := c.r.Get(name)
	if err != nil {
		return nil, fmt.Errorf("%w%s", err, c.again)
	}
	if want, ok := c.sums[name]; c.sums != nil && (!ok || memberSum(a.Shape, a.Data) != want) {
		return nil, fmt.Errorf("%s: member %q is not what the run wrote (its SHA-256 is not the one meta records): edited or damaged, it cannot continue the run bit for bit%s", c.path, name, c.again)
	}
	for i, v := range a.Data {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("%s: member %q holds %v at index %d, want finite values", c.path, name, v, i)
		}
	}
	return a.Data, nil
}

// damaged is why a member of the checkpoint does not read whole (its CRC,
// or the SHA-256 meta records), without the way on (the callers' to say);
// nil where every member does. sample's new start checks it before it
// advises --resume (round 126 B5: --resume, advised, then refused a
// damaged checkpoint), and --resume before it checks --out (round 127 B1).
func (c *ckptReader) damaged() error {
	for _, name := range c.r.Names {
		if !knownMember(name) || name == "meta" {
			continue
		}
		a, err := c.r.Get(name)
		if err != nil {
			return err
		}
		if want, ok := c.sums[name]; c.sums != nil && ok && memberSum(a.Shape, a.Data) != want {
			return fmt.Errorf("%s: member %q is not what the run wrote (its SHA-256 is not the one meta records)", c.path, name)
		}
	}
	return nil
}

// has reports whether the checkpoint has member name.
func (c *ckptReader) has(name string) bool { return slices.Contains(c.r.Names, name) }

// sampleRun is a sampling run a step at a time, with its checkpoint.
type sampleRun interface {
	Step(rng *rand.Rand) error
	Finished() bool
	Result() (draws []float64, local, global float64)
	// save fills the checkpoint's meta and arrays; restore sets them back.
	save(meta *sampleMeta, arrays map[string]*npy.Array)
	restore(meta *sampleMeta, ck *ckptReader) error
	// safe says whether a checkpoint now loses nothing.
	safe() bool
	// state is the chains' current state.
	state() *samplers.State
	// gradUndefined counts the proposals rejected for an undefined
	// gradient (samplers.Stats.GradUndefined).
	gradUndefined() int
}

// chainRun is a run of a kernel (mala, ula, hmc, flowmc with a frozen
// flow, neutra).
type chainRun struct {
	*samplers.ChainRun
	mala   *samplers.MALA
	neutra *samplers.NeuTra
}

func (r *chainRun) safe() bool { return true }

func (r *chainRun) state() *samplers.State { return r.State }

func (r *chainRun) gradUndefined() int { return r.GradUndefined }

func (r *chainRun) save(meta *sampleMeta, arrays map[string]*npy.Array) {
	meta.Done = r.Done
	meta.Local, meta.Global = r.Local, r.Global
	meta.GradUndefined = r.GradUndefined
	saveState("", r.State, &meta.Has, arrays)
	saveDraws(r.Store, arrays)
	if r.mala != nil {
		meta.StepSize, meta.Frozen = r.mala.StepSize, r.mala.Frozen
	}
	if r.neutra != nil && r.neutra.LatentState() != nil {
		meta.LatentHas = new([3]bool)
		saveState("latent_", r.neutra.LatentState(), meta.LatentHas, arrays)
	}
}

func (r *chainRun) restore(meta *sampleMeta, ck *ckptReader) error {
	if meta.Done < 0 || meta.Done > r.Warmup+r.Steps {
		return fmt.Errorf("%s: meta done %d, want 0..%d (warm-up and kept steps)", ck.path, meta.Done, r.Warmup+r.Steps)
	}
	if err := checkAcceptance(ck.path, meta, max(0, meta.Done-r.Warmup), r.Steps); err != nil {
		return err
	}
	if r.mala != nil && meta.Frozen != (meta.Done >= r.Warmup) {
		return fmt.Errorf("%s: meta frozen %v at step %d, want %v (MALA's step size adapts during the %d warm-up steps only)", ck.path, meta.Frozen, meta.Done, meta.Done >= r.Warmup, r.Warmup)
	}
	if err := restoreState(ck, "", r.State, meta.Has); err != nil {
		return err
	}
	if err := restoreDraws(ck, r.Store, max(0, meta.Done-r.Warmup)); err != nil {
		return err
	}
	if meta.GradUndefined < 0 {
		return fmt.Errorf("%s: meta grad_undefined %d, want ≥ 0 (proposals rejected for an undefined gradient)", ck.path, meta.GradUndefined)
	}
	r.Done, r.Local, r.Global, r.GradUndefined = meta.Done, meta.Local, meta.Global, meta.GradUndefined
	if r.mala != nil {
		if !(meta.StepSize > 0) || math.IsInf(meta.StepSize, 0) {
			return fmt.Errorf("%s: meta step_size %v, want a finite step size > 0", ck.path, meta.StepSize)
		}
		r.mala.StepSize, r.mala.Frozen = meta.StepSize, meta.Frozen
	}
	if r.neutra != nil && meta.LatentHas != nil {
		z := samplers.NewState(mat.NewDense(r.State.Chains(), r.State.Dim(), nil))
		if err := restoreState(ck, "latent_", z, *meta.LatentHas); err != nil {
			return err
		}
		r.neutra.SetLatentState(z)
	}
	return nil
}

// checkAcceptance checks the acceptance sums: each of the kept steps done
// adds at most 1/steps (NaN: no such moves).
func checkAcceptance(path string, meta *sampleMeta, kept, steps int) error {
	most := float64(kept)/float64(steps) + 1e-9
	for _, v := range []float64{meta.Local, meta.Global} {
		if !math.IsNaN(v) && !(v >= 0 && v <= most) {
			return fmt.Errorf("%s: meta acceptance sum %v after %d kept steps of %d, want 0..%.4g", path, v, kept, steps, most)
		}
	}
	return nil
}

// adaptiveRun is adaptive flowMC with its flow.
type adaptiveRun struct {
	*algorithms.AdaptiveRun
	flow *graph.Flow
}

func (r *adaptiveRun) safe() bool { return r.AtWindowEnd() }

// gradUndefined counts the production run's rejections (the training
// cycles' are not counted).
func (r *adaptiveRun) gradUndefined() int {
	if r.Production != nil {
		return r.Production.GradUndefined
	}
	return 0
}

func (r *adaptiveRun) state() *samplers.State {
	if r.Production != nil {
		return r.Production.State
	}
	return r.Training
}

func (r *adaptiveRun) save(meta *sampleMeta, arrays map[string]*npy.Array) {
	meta.Training = r.Production == nil
	meta.Cycle, meta.Stale = r.Cycle, r.Stale
	if !math.IsInf(r.Best, -1) {
		b, l := r.Best, r.Low
		meta.Best, meta.Low = &b, &l
	}
	meta.StepSize, meta.Frozen = r.MALA.StepSize, r.MALA.Frozen
	arrays["flow"] = &npy.Array{Shape: []int{r.flow.Params.Count()}, Data: r.flow.Params.Flatten(nil)}
	for k, v := range r.Optimizer.State() {
		arrays["optim_"+k] = &npy.Array{Shape: []int{len(v)}, Data: append([]float64(nil), v...)}
	}
	if meta.Training {
		saveState("", r.Training, &meta.Has, arrays)
		return
	}
	(&chainRun{ChainRun: r.Production}).save(meta, arrays)
}

func (r *adaptiveRun) restore(meta *sampleMeta, ck *ckptReader) error {
	cycles, every := r.TrainingCycles(), r.WindowCycles()
	if meta.Cycle < 0 || meta.Cycle > cycles || meta.Stale < 0 || (meta.Training && meta.Cycle == cycles) {
		return fmt.Errorf("%s: meta cycle %d (stale %d), want 0..%d training cycles (--warmup)", ck.path, meta.Cycle, meta.Stale, cycles)
	}
	if meta.Training && meta.Cycle%every != 0 {
		return fmt.Errorf("%s: meta cycle %d, want a multiple of %d (a checkpoint ends a window of training cycles)", ck.path, meta.Cycle, every)
	}
	if p := r.Patience(); p > 0 && meta.Stale > p {
		return fmt.Errorf("%s: meta stale %d, want at most %d (--patience)", ck.path, meta.Stale, p)
	}
	theta, err := ck.get("flow", r.flow.Params.Count())
	if err != nil {
		return err
	}
	r.flow.Params.SetFlat(theta)
	st := map[string][]float64{}
	for k, v := range r.Optimizer.State() {
		if st[k], err = ck.get("optim_"+k, len(v)); err != nil {
			return err
		}
	}
	if err := r.Optimizer.SetState(st); err != nil {
		return fmt.Errorf("%s: optimiser state: %w", ck.path, err)
	}
	r.Cycle, r.Stale, r.Best, r.Low = meta.Cycle, meta.Stale, math.Inf(-1), math.Inf(1)
	if meta.Best != nil {
		r.Best, r.Low = *meta.Best, math.Inf(-1) // an earlier build's count, kept
		if meta.Low != nil {
			r.Low = *meta.Low
		}
		if math.IsNaN(r.Low) || r.Low > r.Best {
			return fmt.Errorf("%s: meta low %v above best %v, want the lowest window's global acceptance, at most the best", ck.path, r.Low, r.Best)
		}
	}
	if !(meta.StepSize > 0) || math.IsInf(meta.StepSize, 0) {
		return fmt.Errorf("%s: meta step_size %v, want a finite step size > 0", ck.path, meta.StepSize)
	}
	r.MALA.StepSize, r.MALA.Frozen = meta.StepSize, meta.Frozen
	if err := restoreState(ck, "", r.Training, meta.Has); err != nil || meta.Training {
		return err
	}
	if err := r.StartProduction(); err != nil {
		return err
	}
	return (&chainRun{ChainRun: r.Production}).restore(meta, ck)
}

// saveState stores a State's points and the cached values it holds.
func saveState(prefix string, s *samplers.State, has *[3]bool, arrays map[string]*npy.Array) {
	m, d := s.X.Dims()
	arrays[prefix+"x"] = &npy.Array{Shape: []int{m, d}, Data: mat.DenseCopyOf(s.X).RawMatrix().Data}
	*has = [3]bool{s.HasLogP, s.HasGrad, s.HasLogQ}
	if s.HasLogP {
		arrays[prefix+"logp"] = &npy.Array{Shape: []int{m}, Data: append([]float64(nil), s.LogP...)}
	}
	if s.HasGrad {
		arrays[prefix+"grad"] = &npy.Array{Shape: []int{m, d}, Data: mat.DenseCopyOf(s.Grad).RawMatrix().Data}
	}
	if s.HasLogQ {
		arrays[prefix+"logq"] = &npy.Array{Shape: []int{m}, Data: append([]float64(nil), s.LogQ...)}
	}
}

// restoreState sets a State (of the checkpoint's shape) back.
func restoreState(ck *ckptReader, prefix string, s *samplers.State, has [3]bool) error {
	m, d := s.X.Dims()
	x, err := ck.get(prefix+"x", m, d)
	if err != nil {
		return err
	}
	s.X.Copy(mat.NewDense(m, d, x))
	s.Invalidate()
	if has[0] {
		if s.LogP, err = ck.get(prefix+"logp", m); err != nil {
			return err
		}
	}
	if has[1] {
		g, err := ck.get(prefix+"grad", m, d)
		if err != nil {
			return err
		}
		s.Grad = mat.NewDense(m, d, g)
	}
	if has[2] {
		if s.LogQ, err = ck.get(prefix+"logq", m); err != nil {
			return err
		}
	}
	s.HasLogP, s.HasGrad, s.HasLogQ = has[0], has[1], has[2]
	return nil
}

// saveDraws stores the draws kept so far (chains × draws × d).
func saveDraws(st *samplers.Store, arrays map[string]*npy.Array) {
	n := st.Len()
	if n == 0 {
		return
	}
	m := len(st.Chains(0))
	draws := st.Draws()
	arrays["draws"] = &npy.Array{Shape: []int{m, n, len(draws) / (m * n)}, Data: draws}
}

// restoreDraws records the n saved draws into st, in order.
func restoreDraws(ck *ckptReader, st *samplers.Store, n int) error {
	if n == 0 {
		if ck.has("draws") {
			return fmt.Errorf("%s: member \"draws\" before any kept step", ck.path)
		}
		return nil
	}
	m, d := st.Shape()
	data, err := ck.get("draws", m, n, d)
	if err != nil {
		return err
	}
	x := mat.NewDense(m, d, nil)
	for k := 0; k < n; k++ {
		for i := 0; i < m; i++ {
			x.SetRow(i, data[(i*n+k)*d:(i*n+k+1)*d])
		}
		st.Record(x)
	}
	return nil
}

// folderSum is the SHA-256 of the files a checkpoint folder's models
// were loaded from (spec its spec.json), read by name (probe 24: a folder
// its reader may enter but not list was listed, and files so named in its
// subfolders were hashed): the flow's ONNX graphs, which hold its weights,
// where spec names them (probe 25: stray ones were hashed too).
func folderSum(dir string, spec checkpoint.Spec) (string, error) {
	files := []string{filepath.Join(dir, "spec.json"), filepath.Join(dir, "weights.npz")}
	if o := spec.FlowONNX; o != nil {
		files = append(files, filepath.Join(dir, o.Sample), filepath.Join(dir, o.Density))
	}
	return hashFiles(files...)
}

// hashFiles is the SHA-256 of the files' contents one after the other,
// streamed (a model file of a GiB is not held in memory to be hashed).
func hashFiles(files ...string) (string, error) {
	h := sha256.New()
	for _, p := range files {
		f, err := safefile.OpenLimited(p, onnx.MaxFileBytes, "protobuf's limit on an ONNX file")
		if err != nil {
			return "", err
		}
		_, err = io.Copy(h, f)
		f.Close()
		if err != nil {
			return "", fmt.Errorf("%s: %w", p, err)
		}
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// writeSampleCheckpoint writes the run's checkpoint to path, atomically.
func writeSampleCheckpoint(path string, replace bool, args []string, inputs map[string]string, accepted *sysmem.Accepted, pcg *rand.PCG, r sampleRun) error {
	build := config.CurrentBuild()
	meta := sampleMeta{Format: sampleCkptFormat, Args: args, Inputs: inputs, MemoryAccepted: accepted, Build: &build}
	var err error
	if meta.RNG, err = pcg.MarshalBinary(); err != nil {
		return err
	}
	arrays := map[string]*npy.Array{}
	r.save(&meta, arrays)
	meta.LocalSum = strconv.FormatFloat(meta.Local, 'g', -1, 64)
	meta.GlobalSum = strconv.FormatFloat(meta.Global, 'g', -1, 64)
	meta.Sums = map[string]string{}
	for name, a := range arrays {
		meta.Sums[name] = memberSum(a.Shape, a.Data)
	}
	if meta.MetaSum, err = metaSum(meta); err != nil {
		return err
	}
	b, err := json.Marshal(meta)
	if err != nil {
		return err
	}
	raw := make([]float64, len(b))
	for i, c := range b {
		raw[i] = float64(c)
	}
	arrays["meta"] = &npy.Array{Shape: []int{len(raw)}, Data: raw}
	return writeOutput("--checkpoint", path, replace, func(w io.Writer) error { return npz.Write(w, arrays, npy.Float64) })
}

// editedCheckpointAdvice is the way on from an edited or damaged sample
// checkpoint.
const editedCheckpointAdvice = "; start the run again: the command that started it, without --resume (with --force to replace its outputs)"

// startAgain is the way on from a sample checkpoint that cannot continue
// its run, meta intact: the command that started it, from the flags meta
// records, with --force to replace the checkpoint and outputs (round 110
// B4: "the command that started it", unsaid).
func startAgain(args []string) string {
	if len(args) == 0 {
		return editedCheckpointAdvice
	}
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = shellQuote(a)
		switch name, v, ok := strings.Cut(a, "="); {
		case !ok || !strings.HasPrefix(name, "--"):
		case v == "true" || v == "false": // a bool flag's stays one word (round 111 B1: --train-flow true)
			q[i] = shellQuote(name) + "=" + v
		default: // recorded --name=value
			q[i] = shellQuote(name) + " " + shellQuote(v)
		}
	}
	return "; start the run again (--force replaces its checkpoint and outputs): flowebm sample " + strings.Join(q, " ") + " --force"
}

// maxMetaBytes bounds a checkpoint's meta member (its JSON text).
const maxMetaBytes = 1 << 20

// readSampleCheckpoint opens a checkpoint written by writeSampleCheckpoint
// and reads its meta; the arrays are read later, each checked.
func readSampleCheckpoint(path string) (*sampleMeta, *ckptReader, error) {
	if fi, err := os.Stat(path); err == nil && fi.IsDir() { // round 111 B8: "start the run again", of a run no sample started
		if isTrainingRun(path) {
			return nil, nil, fmt.Errorf("--resume %s is a training run's folder, not a sample checkpoint (the .npz that sample --checkpoint writes): continue its training with flowebm train --resume %s, or sample its model with flowebm sample --model %s --out chains.npy", path, shellQuote(path), shellQuote(path))
		}
		return nil, nil, fmt.Errorf("--resume %s is a folder: give the .npz that sample --checkpoint wrote", path)
	}
	r, err := npz.OpenReader(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) { // cut short or damaged: the way on (round 108 B1)
		return nil, nil, fmt.Errorf("--resume %s: %w%s", path, err, editedCheckpointAdvice)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("--resume %s: %w", path, err)
	}
	for _, name := range r.Names {
		if !knownMember(name) {
			r.Close()
			if slices.Contains(r.Names, "bank") && slices.Contains(r.Names, "data_order") { // a training run's state.npz (probe 65)
				return nil, nil, fmt.Errorf("--resume %s is a training run's state (state.npz of a train checkpoint), not a sample checkpoint: continue that run with flowebm train --resume %s", path, shellQuote(trainRunOf(path)))
			}
			return nil, nil, fmt.Errorf("--resume %s: member %q is not part of a sample checkpoint", path, name)
		}
	}
	meta, err := readMeta(r, path)
	if err != nil {
		r.Close()
		return nil, nil, err
	}
	for _, name := range r.Names {
		if _, ok := meta.Sums[name]; meta.Sums != nil && name != "meta" && !ok { // a member added (round 108 B4)
			r.Close()
			return nil, nil, fmt.Errorf("%s: member %q is not one the run wrote (meta records no SHA-256 for it)%s", path, name, startAgain(meta.Args))
		}
	}
	return meta, &ckptReader{path: path, r: r, sums: meta.Sums, again: startAgain(meta.Args)}, nil
}

func readMeta(r *npz.Reader, path string) (*sampleMeta, error) {
	meta, err := decodeMeta(r, path)
	if err == nil && len(meta.Args) == 0 {
		err = fmt.Errorf("%s: meta records no flags (args): not a checkpoint this command wrote", path)
	}
	return meta, err
}

func decodeMeta(r *npz.Reader, path string) (*sampleMeta, error) {
	h, err := r.Header("meta")
	if err != nil {
		return nil, fmt.Errorf("%s: not a sample checkpoint (no member meta): %w", path, err)
	}
	if len(h.Shape) != 1 || h.Shape[0] > maxMetaBytes {
		return nil, fmt.Errorf("%s: member meta has shape %v, want at most %d bytes of text", path, h.Shape, maxMetaBytes)
	}
	a, err := r.Get("meta")
	if err != nil {
		return nil, err
	}
	b := make([]byte, len(a.Data))
	for i, v := range a.Data {
		if v < 0 || v > 255 || v != math.Trunc(v) {
			return nil, fmt.Errorf("%s: member meta is not text", path)
		}
		b[i] = byte(v)
	}
	var meta sampleMeta
	if err := jsonfile.Decode(b, &meta, jsonfile.Options{}); err != nil { // the field at fault named, in the file's terms
		return nil, fmt.Errorf("%s: member meta: %w", path, err)
	}
	if meta.Format != sampleCkptFormat {
		return nil, fmt.Errorf("%s: format %q, want %q", path, meta.Format, sampleCkptFormat)
	}
	if meta.MetaSum == "" && meta.Sums != nil { // sums without meta's own: meta edited (round 108 B2; round 109 B4: said to differ)
		return nil, fmt.Errorf("%s: member meta records its members' SHA-256 (sums) but not its own (meta_sha256), which the run writes: it was edited, and the run cannot continue bit for bit%s", path, editedCheckpointAdvice)
	}
	if meta.MetaSum != "" {
		if sum, err := metaSum(meta); err != nil || sum != meta.MetaSum {
			return nil, fmt.Errorf("%s: member meta is not what the run wrote (its SHA-256 is not the one it records): a field was edited, and the run cannot continue bit for bit%s", path, editedCheckpointAdvice)
		}
	}
	if meta.Local, err = strconv.ParseFloat(meta.LocalSum, 64); err != nil {
		return nil, fmt.Errorf("%s: meta local_sum %q: %w", path, meta.LocalSum, err)
	}
	if meta.Global, err = strconv.ParseFloat(meta.GlobalSum, 64); err != nil {
		return nil, fmt.Errorf("%s: meta global_sum %q: %w", path, meta.GlobalSum, err)
	}
	return &meta, nil
}

// cacheTolerance bounds the relative difference between a checkpoint's
// cached log-densities and gradients and their values computed again at
// its points: they differ only by round-off (another batch, another
// blocking of the matrix products), while an edited state differs by far
// more.
const cacheTolerance = 1e-6

// verifyCache recomputes the cached log π, ∇ log π and log λ of a restored
// state at its points and refuses a checkpoint whose cache does not match
// them (the chains would move by the wrong densities).
func verifyCache(path string, s *samplers.State, t samplers.Target, p samplers.Proposal) error {
	m, d := s.X.Dims()
	lp, g := make([]float64, m), mat.NewDense(m, d, nil)
	if s.HasLogP || s.HasGrad {
		if err := t.LogDensityGrad(s.X, lp, g); err != nil {
			return err
		}
	}
	if s.HasLogP && !closeAll(s.LogP, lp) {
		return fmt.Errorf("%s: member \"logp\" is not the model's log-density at the chains' points (member \"x\"): the checkpoint was altered", path)
	}
	if s.HasGrad && !closeAll(s.Grad.RawMatrix().Data, g.RawMatrix().Data) {
		return fmt.Errorf("%s: member \"grad\" is not the model's gradient at the chains' points (member \"x\"): the checkpoint was altered", path)
	}
	if s.HasLogQ && p != nil {
		lq := make([]float64, m)
		if err := p.LogDensity(s.X, lq); err != nil {
			return err
		}
		if !closeAll(s.LogQ, lq) {
			return fmt.Errorf("%s: member \"logq\" is not the flow's log-density at the chains' points (member \"x\"): the checkpoint was altered", path)
		}
	}
	return nil
}

func closeAll(a, b []float64) bool {
	for i := range a {
		if !(math.Abs(a[i]-b[i]) <= cacheTolerance*math.Max(1, math.Abs(b[i]))) {
			return false
		}
	}
	return true
}

// trainRunOf is the run folder of a train checkpoint's file path
// (RUN/checkpoint/state.npz), or the file's folder.
func trainRunOf(path string) string {
	dir := filepath.Dir(path)
	if b := filepath.Base(dir); b == "checkpoint" || b == "checkpoint.old" {
		return filepath.Dir(dir)
	}
	return dir
}

// checkpointDamage reads the file at path as a sample checkpoint: ok
// where it is one (an .npz holding meta), with damage nil where every
// member reads whole, else why not (round 126 B5, 128 A5, 129 A1).
func checkpointDamage(path string) (ok bool, damage error) {
	_, r, err := readSampleCheckpoint(path)
	if err != nil {
		return hasMeta(path), err
	}
	defer r.r.Close()
	return true, r.damaged()
}

// notACheckpoint says what the file at path, which is no sample
// checkpoint (hasMeta false), is: its arrays where it is an .npz archive.
func notACheckpoint(path string) string {
	if names, err := data.NPZNames(path); err == nil && len(names) > 0 {
		return fmt.Sprintf("not a sample checkpoint but an .npz of other arrays: %s", strings.Join(names[:min(len(names), 10)], ", "))
	}
	return "not a sample checkpoint"
}

// hasMeta reports whether path is an .npz archive holding a member meta,
// as every sample checkpoint does: one that does not read as a checkpoint
// is then a damaged one (round 129 A1), not another kind of file.
func hasMeta(path string) bool {
	names, err := data.NPZNames(path)
	return err == nil && slices.Contains(names, "meta")
}
