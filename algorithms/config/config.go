// Package config is the schema of a training run's configuration (what
// config files and a run's config.json hold): the experiment or data set,
// seed, models, training and evaluation settings. It reads configuration
// files strictly, validates every field, resolves the defaults once into
// the value a run and its trainer share, and bounds the memory a run will
// need before anything is allocated. The paper's settings, and their
// scaling to 2 CPU cores, are in package settings.
package config

import (
	"bytes"
	"cmp"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"runtime"
	"slices"
	"strings"

	"github.com/flowebm/flowebm/algorithms"
	"github.com/flowebm/flowebm/algorithms/experiments"
	"github.com/flowebm/flowebm/graph"
	"github.com/flowebm/flowebm/internal/jsonfile"
	"github.com/flowebm/flowebm/internal/pathcheck"
	"github.com/flowebm/flowebm/internal/shapes"
	"github.com/flowebm/flowebm/internal/sysmem"
	"github.com/flowebm/flowebm/io/data"
	"github.com/flowebm/flowebm/io/safefile"
	"github.com/flowebm/flowebm/layers"
)

// Model describes the EBM and flow of a run.
type Model struct {
	// EBM is the energy network's family: "mlp" (EBMMLP, the default:
	// the MLP of ebm_hidden and ebm_slope) or "conv" (EBMConv:
	// layers.ImageEnergy, a convolutional ResNet energy of stage widths
	// ebm_channels, for the image experiments alone). Fields of the other
	// family are refused.
	EBM EBMFamily `json:"ebm,omitempty"`
	// EBMHidden are the hidden widths of the energy MLP (default the toy
	// EBM's 32, 64, 64, 64) with LeakyReLU(EBMSlope) (default 0.05).
	EBMHidden []int   `json:"ebm_hidden,omitempty"`
	EBMSlope  float64 `json:"ebm_slope,omitempty"`
	// EBMChannels are the conv EBM's stage widths, each stage after the
	// first halving the image (default 32, 64, 64: layers.ImageEnergy's,
	// 222,017 parameters on 28×28 images). Conv only.
	EBMChannels []int `json:"ebm_channels,omitempty"`
	// Flow is the flow's family: "realnvp" (FlowRealNVP, the default:
	// layers.RealNVP, the paper's), "spline" (FlowSpline:
	// rational-quadratic neural spline couplings, layers.SplineFlow) or
	// "conv-realnvp" (FlowConvRealNVP: layers.ImageRealNVP, for the image
	// experiments alone). flow_blocks and flow_hidden size each;
	// flow_mask is the MLP flows', flow_init the RealNVP's alone,
	// flow_bins and flow_tail_bound the spline's alone (given for another
	// family, they are refused).
	Flow FlowFamily `json:"flow,omitempty"`
	// FlowBlocks and FlowHidden size the flow (defaults 4 blocks of
	// couplings with hidden width 16: App. C.2's [d, 16, d] RealNVP
	// couplings; the spline's conditioners map the conditioning half
	// through the same hidden widths to its splines' parameters). For
	// "conv-realnvp", FlowBlocks is the number of checkerboard and of
	// channel couplings per scale (default 2: 8 couplings over 2 scales)
	// and FlowHidden one width, the conditioners' channels (default 32).
	FlowBlocks int   `json:"flow_blocks,omitempty"`
	FlowHidden []int `json:"flow_hidden,omitempty"`
	// FlowInit is the RealNVP's initialisation: "small" (default, the
	// paper's: every layer ~1e-6) or "small-last" (only the output layers
	// ~1e-6, hidden layers PyTorch's default). Both start at the identity;
	// see layers.RealNVP.Init. The spline flow starts as the identity
	// exactly (its conditioners' last layers zero) and has no flow_init.
	FlowInit string `json:"flow_init,omitempty"`
	// FlowMask is the couplings' mask: "half" (default, the reference
	// code's: first half of the coordinates, then the second) or
	// "checkerboard" (even, then odd coordinates); see layers.RealNVP.
	FlowMask string `json:"flow_mask,omitempty"`
	// FlowBins is the spline flow's number of bins K (default 8,
	// layers.DefaultSplineBins) and FlowTailBound its tail bound B
	// (default 5, layers.DefaultSplineTailBound): each spline maps
	// [−B, B] onto itself and is the identity outside, in the EBM's
	// coordinates (the standardised data, with data.standardize). Spline
	// only.
	FlowBins      int     `json:"flow_bins,omitempty"`
	FlowTailBound float64 `json:"flow_tail_bound,omitempty"`
	// BaseSigma is σ of the base ρ = N(0, σ²I); 0 means App. C.5's rule:
	// σ² = the largest per-dimension variance of the training data.
	BaseSigma float64 `json:"base_sigma,omitempty"`
	// Float32 builds float32 models (default float64).
	Float32 bool `json:"float32,omitempty"`
	// FlowONNX starts the flow from one exported as ONNX (its sampling and
	// density graphs; io/onnx.ReadFlow, io/onnx/crosscheck/export_flow.py)
	// instead of the identity flow of model.flow, for the algorithms that
	// have a flow. The flow's base is then the tilt ρ of the EBM:
	// base_sigma and the fields of the flow built otherwise (flow,
	// flow_blocks, flow_hidden, flow_init, flow_mask, flow_bins,
	// flow_tail_bound) do not apply, and are refused. The flow works in the
	// EBM's coordinates: the data standardised, if data.standardize.
	FlowONNX *FlowFiles `json:"flow_onnx,omitempty"`
	// Shards is the number of row blocks each batch is split into, the
	// blocks evaluated concurrently by as many goroutines as GOMAXPROCS
	// allows (graph.Parallel; default DefaultShards). Results depend on
	// the number of shards, never on the number of cores.
	Shards int `json:"shards,omitempty"`
}

// DefaultShards is model.shards' default: 4 blocks keep 1, 2 or 4 cores
// evenly busy.
const DefaultShards = 4

// FlowFiles are the two ONNX graphs of a flow; relative paths are taken
// from the configuration file's folder.
type FlowFiles struct {
	Sample  string `json:"sample"`
	Density string `json:"density"`
	// BaseSigma is the flow's base σ, when its files do not declare it
	// (metadata flowebm.base_sigma); 0: theirs, else 1.
	BaseSigma float64 `json:"base_sigma,omitempty"`
	// SampleSHA256 and DensitySHA256 are the files' checksums, recorded
	// when a run starts from them; a configuration that gives them starts
	// only from the same files (round 100 B2: a run's config.json trained
	// from other flow files put in their place, unsaid). A resumed run's
	// flow is its checkpoint's.
	SampleSHA256  string `json:"sample_sha256,omitempty"`
	DensitySHA256 string `json:"density_sha256,omitempty"`
}

// WithSums is a copy of f with its files' SHA-256 recorded, or checked
// against those f records (RecordSums).
func (f FlowFiles) WithSums() (*FlowFiles, error) {
	return &f, f.RecordSums()
}

// RecordSums records the SHA-256 of the flow's files, or checks them
// against those recorded.
func (f *FlowFiles) RecordSums() error {
	for _, c := range []struct {
		field, path string
		sum         *string
	}{{"sample", f.Sample, &f.SampleSHA256}, {"density", f.Density, &f.DensitySHA256}} {
		*c.sum = strings.ToLower(*c.sum)
		if *c.sum != "" && !sha256Hex.MatchString(*c.sum) {
			return fmt.Errorf("model.flow_onnx.%s_sha256 %q: want 64 hexadecimal digits (the SHA-256 flowebm recorded), or leave it out", c.field, *c.sum)
		}
		sum, err := safefile.SHA256(c.path)
		if errors.Is(err, fs.ErrNotExist) {
			continue // the flow's load names the file and the flag
		} else if err != nil {
			return fmt.Errorf("model.flow_onnx.%s: %w", c.field, err)
		}
		if *c.sum != "" && *c.sum != sum {
			return fmt.Errorf("%s: SHA-256 %s, but model.flow_onnx.%s_sha256 records %s, the flow the run (or configuration) was made with: give that file, or leave model.flow_onnx.%s_sha256 out to start from this one", c.path, sum[:16]+"…", c.field, (*c.sum)[:16]+"…", c.field)
		}
		*c.sum = sum
	}
	return nil
}

// WithDefaults is m with its unset fields at their defaults: the toy
// EBM's hidden widths 32, 64, 64, 64 with LeakyReLU slope 0.05, and 4
// RealNVP blocks of couplings with hidden width 16 (App. C.2); for the
// spline flow, 8 bins on [−5, 5]; for the conv EBM, channels 32, 64, 64
// (and no MLP fields); for the conv RealNVP, 2 couplings of each kind per
// scale with 32 channels.
func (m Model) WithDefaults() Model {
	m.Flow = cmp.Or(m.Flow, FlowRealNVP)
	m.EBM = cmp.Or(m.EBM, EBMMLP)
	if m.Flow == FlowSpline {
		m.FlowBins = cmp.Or(m.FlowBins, layers.DefaultSplineBins)
		m.FlowTailBound = cmp.Or(m.FlowTailBound, layers.DefaultSplineTailBound)
	}
	if m.EBM == EBMConv {
		if m.EBMChannels == nil {
			m.EBMChannels = layers.ImageEnergy{}.WithDefaults().Channels
		}
	} else {
		if m.EBMHidden == nil {
			m.EBMHidden = []int{32, 64, 64, 64}
		}
		m.EBMSlope = cmp.Or(m.EBMSlope, 0.05)
	}
	if m.Flow == FlowConvRealNVP {
		d := layers.ImageRealNVP{}.WithDefaults()
		if m.FlowHidden == nil {
			m.FlowHidden = []int{d.Hidden}
		}
		m.FlowBlocks = cmp.Or(m.FlowBlocks, d.Checkerboard)
	}
	if m.FlowHidden == nil {
		m.FlowHidden = []int{16}
	}
	m.FlowBlocks = cmp.Or(m.FlowBlocks, 4)
	m.Shards = cmp.Or(m.Shards, DefaultShards)
	return m
}

// Data names a user's data set to train on instead of one of the
// paper's experiments (see experiments.DataSet).
type Data struct {
	// File is the data: .npy (n, d), .npz (member Key, or the first) or
	// .csv (numeric columns, optional header row). A relative path in a
	// configuration file is relative to that file's folder (see Read); a
	// run records the absolute path in its config.json.
	File string `json:"file"`
	Key  string `json:"key,omitempty"`
	// HoldOut is the held-out fraction (default 0.1).
	HoldOut float64 `json:"holdout,omitempty"`
	// Standardize is "dimension" (default: each coordinate centred and
	// scaled to unit variance), "global" (centred, one common scale) or
	// "none".
	Standardize string `json:"standardize,omitempty"`
	// Modes optionally names a .npy/.npz/.csv file of k mode centres
	// (k, d) in the data's units, whose nearest-centre zones give mode
	// weights (a relative path as File's).
	Modes string `json:"modes,omitempty"`
	// DropNonFinite drops rows with NaN or Inf instead of refusing them.
	DropNonFinite bool `json:"drop_nonfinite,omitempty"`
	// SHA256 is the file's checksum, recorded when a run starts; a run
	// resumed on a file with another checksum (other data) is refused.
	SHA256 string `json:"sha256,omitempty"`
	// ModesSHA256 is the checksum of the Modes file, recorded and checked
	// as SHA256 (round 80 B7: centres overwritten in place were taken).
	ModesSHA256 string `json:"modes_sha256,omitempty"`
}

// Member is the .npz member the data read: Key, or, where none is given
// and File is an .npz archive, the first member of the archive at path
// (File, or a copy of it given elsewhere); "" for other files and where
// the archive cannot be read (its reader says why).
func (c *Data) Member(path string) string {
	if c.Key != "" || !strings.EqualFold(filepath.Ext(c.File), ".npz") {
		return c.Key
	}
	if names, err := data.NPZNames(path); err == nil && len(names) > 0 {
		return names[0]
	}
	return ""
}

// checkDataDirSums records the SHA-256 of each file the image experiment
// reads from DataDir, or checks them against the recorded ones.
func (cfg *Run) checkDataDirSums() error {
	files, err := experiments.DataFiles(cfg.Experiment, cfg.DataDir)
	if err != nil {
		return fmt.Errorf("data_dir %s: %w", cfg.DataDir, err)
	}
	sums := make(map[string]string, len(files))
	for _, f := range files {
		sum, err := safefile.SHA256(f)
		if err != nil {
			return err
		}
		name := filepath.Base(f)
		want, ok := cfg.DataDirSHA256[name]
		switch {
		case ok && !isSHA256(want):
			return fmt.Errorf("algorithms: data_dir_sha256[%q] %.80q, want 64 hexadecimal digits (a SHA-256, as sha256sum prints it)", name, want)
		case cfg.DataDirSHA256 != nil && !ok:
			return cfg.otherFileError(f)
		case cfg.DataDirSHA256 != nil && !strings.EqualFold(want, sum): // sha256sum -c reads upper-case sums too (probe 19)
			return fmt.Errorf("%s: SHA-256 %s, but data_dir_sha256 records %s for %s, the data the run was made with: %w; give the run's files (--data-dir DIR with a copy of them), or start a new run", f, sum[:16]+"…", want, name, ErrOtherData)
		}
		sums[name] = sum
	}
	if len(sums) > 0 {
		cfg.DataDirSHA256 = sums
	}
	return nil
}

// isSHA256 reports whether s is a SHA-256 in hexadecimal.
func isSHA256(s string) bool {
	if len(s) != 64 {
		return false
	}
	_, err := hex.DecodeString(s)
	return err == nil
}

// otherFileError says that the data folder now yields the file f, which
// the run was not made with: typically a .gz beside the recorded raw file
// (or the other way round), which is read in its place.
func (cfg *Run) otherFileError(f string) error {
	name := filepath.Base(f)
	recorded := slices.Sorted(maps.Keys(cfg.DataDirSHA256))
	for _, twin := range []string{strings.TrimSuffix(name, ".gz"), name + ".gz"} {
		if twin == name || cfg.DataDirSHA256[twin] == "" {
			continue
		}
		if _, err := os.Stat(filepath.Join(filepath.Dir(f), twin)); err != nil {
			// Decompressed (or compressed) since: the checksums are of the
			// files as they were read, which are gone.
			return fmt.Errorf("%s: the run was made with %s (data_dir_sha256 records its SHA-256), which this folder no longer holds: %s is not checked against it; give the run's own files back (--data-dir DIR with a copy of them), or start a new run", f, twin, name)
		}
		return fmt.Errorf("%s: the run was made with %s (data_dir_sha256 records it), but this folder now also holds %s, which is read in its place: move %s away so that the recorded file is read, or start a new run", f, twin, name, f)
	}
	return fmt.Errorf("%s: the run was made with other files (data_dir_sha256 records %s): %w; give the run's files (--data-dir DIR with a copy of them), or start a new run", f, strings.Join(recorded, ", "), ErrOtherData)
}

// recordFile makes the data's paths absolute and records the file's
// SHA-256, or checks it against the recorded one.
func (c *Data) recordFile() error {
	if err := c.absolute(); err != nil {
		return err
	}
	return c.checkSum()
}

// checkSum records the data file's SHA-256, or checks it against the
// recorded one.
func (c *Data) checkSum() error {
	if c.File == "" {
		return fmt.Errorf("data.file is empty: want the data file's path")
	}
	c.SHA256 = strings.ToLower(c.SHA256) // hexadecimal digits of either case
	if c.SHA256 != "" && !sha256Hex.MatchString(c.SHA256) {
		return fmt.Errorf("data.sha256 %q: want 64 hexadecimal digits (the SHA-256 flowebm recorded), or leave it out", c.SHA256)
	}
	sum, err := safefile.SHA256(c.File)
	if err != nil {
		return err
	}
	if c.SHA256 != "" && c.SHA256 != sum {
		return fmt.Errorf("%s: SHA-256 %s, but data.sha256 records %s, the file the run (or configuration) was made with: %w; give that file, or leave data.sha256 out to start a new run on this one", c.File, sum[:16]+"…", c.SHA256[:min(16, len(c.SHA256))]+"…", ErrOtherData)
	}
	c.SHA256 = sum
	return c.checkModesSum()
}

// checkModesSum records the SHA-256 of the file of mode centres, or checks
// it against the recorded one.
func (c *Data) checkModesSum() error {
	c.ModesSHA256 = strings.ToLower(c.ModesSHA256)
	switch {
	case c.ModesSHA256 != "" && !sha256Hex.MatchString(c.ModesSHA256):
		return fmt.Errorf("data.modes_sha256 %q: want 64 hexadecimal digits (the SHA-256 flowebm recorded), or leave it out", c.ModesSHA256)
	case c.Modes == "" && c.ModesSHA256 != "":
		return fmt.Errorf("data.modes_sha256 without data.modes: it records the file of mode centres a run read, and this configuration names none; give data.modes (--modes FILE), or leave data.modes_sha256 out")
	case c.Modes == "":
		return nil
	}
	sum, err := safefile.SHA256(c.Modes)
	if errors.Is(err, fs.ErrNotExist) {
		return nil // the load names the field and how to record where the file went (round 80 B7)
	}
	if err != nil {
		return err
	}
	if c.ModesSHA256 != "" && c.ModesSHA256 != sum {
		return fmt.Errorf("%s: SHA-256 %s, but data.modes_sha256 records %s, the mode centres the run (or configuration) was made with: its mode weights would be measured against other centres; put that file back, or leave data.modes_sha256 out to measure against these (a run resumed so keeps the weights it measured against the recorded ones)", c.Modes, sum[:16]+"…", c.ModesSHA256[:16]+"…")
	}
	c.ModesSHA256 = sum
	return nil
}

// Load reads the data set and builds its experiment; rng shuffles the rows
// before the held-out split. Arrays of images (n, C, H, W) are read as
// their flattened rows (n, C·H·W), the layout imported image models take.
func (c Data) Load(rng *rand.Rand) (*experiments.Experiment, []string, error) {
	return c.load(rng, false)
}

// load is Load; flowGiven says that the run's flow is an ONNX file (the
// refusal of 1-D data then says so).
func (c Data) load(rng *rand.Rand, flowGiven bool) (*experiments.Experiment, []string, error) {
	if c.Key != "" && strings.ToLower(filepath.Ext(c.File)) != ".npz" {
		return nil, nil, fmt.Errorf("data.key %q selects a member of an .npz file; %s is not one", c.Key, c.File)
	}
	if err := c.checkMemory(); err != nil {
		return nil, nil, err
	}
	if err := c.checkModes(); err != nil {
		return nil, nil, err
	}
	x, shape, err := data.ReadPoints(c.File, c.Key)
	if err != nil {
		return nil, nil, err
	}
	opt := experiments.DataSetOptions{HoldOut: c.HoldOut, Standardize: c.Standardize, DropNonFinite: c.DropNonFinite, ModesName: c.Modes, FlowGiven: flowGiven, PointShape: shape}
	if opt.Columns, err = data.FileColumns(c.File); err != nil {
		return nil, nil, err
	}
	if c.Modes != "" {
		var modeShape []int
		if opt.Modes, modeShape, err = data.ReadPoints(c.Modes, ""); err != nil {
			return nil, nil, cmp.Or(modesMissing(err), err)
		}
		if err := sameArrangement(modeShape, shape); err != nil { // round 122 A5: (k, C, H, W) centres were refused for (n, C, H, W) data
			return nil, nil, fmt.Errorf("%s: data.modes: %w", c.Modes, err)
		}
	}
	e, notes, err := experiments.DataSet(c.File, x, opt, rng)
	if n := data.MemberNote(c.File, c.Key); n != "" {
		notes = append([]string{n}, notes...)
	}
	return e, notes, err
}

// sameArrangement refuses mode centres of shape modes (each) for data
// points of shape points where both have two axes or more and differ but
// for axes of size 1: their values would be compared in another order.
// Flat centres, or flat data, are taken as they are.
func sameArrangement(modes, points []int) error {
	if len(modes) < 2 || len(points) < 2 || slices.Equal(shapes.Squeezed(modes), shapes.Squeezed(points)) {
		return nil
	}
	return fmt.Errorf("centres of shape %v each, the data's points are of shape %v: give the centres in that shape, or flattened in its order", modes, points)
}

// dataCopies is about how many float64 copies of a data set a run holds
// while it reads, splits and standardises it, with the garbage collector's
// headroom: measured peak resident memory above a run without data, 3.4×
// the data's float64 size for 4,000,000 × 4 and 4.8× for a 3 GiB array.
const dataCopies = 5

// checkMemory refuses, from the file's header alone, a data set whose
// copies would need more memory than a run may use (an .npz of a few
// megabytes can hold gigabytes).
func (c Data) checkMemory() error {
	shape, err := data.PointsShape(c.File, c.Key)
	if err != nil || len(shape) == 0 {
		return err
	}
	need, limit := arrayMemory(shape), memoryLimit()
	if need > limit {
		return fmt.Errorf("%s: the data set of shape %v needs about %s of memory (its float64 values held about %d times while it is read, split and standardised), over the limit of %s (%s): train on a subset of the rows",
			c.File, shape, sysmem.Bytes(need), dataCopies, sysmem.Bytes(limit), sysmem.Why(sysmem.DefaultLimit))
	}
	return nil
}

// arrayMemory is the memory (bytes) an array of the shape needs, its
// float64 values held dataCopies times.
func arrayMemory(shape []int) float64 {
	n := 1.0
	for _, s := range shape {
		n *= float64(max(s, 0))
	}
	return n * 8 * dataCopies
}

// MaxModes bounds the centres of data.modes: far more than any mixture's
// modes (a run has at most as many as training rows).
const MaxModes = 1_000_000

// checkModes refuses, from the header of data.modes alone, more than
// MaxModes centres or more memory than a run may use (a small .npz can
// declare 1e8 rows); a .csv's text bounds its size.
// modesMissing is the refusal of a data.modes file that does not exist,
// naming the field and how to record where it went (round 80 B7: "open
// …/m.npy: no such file", and no way forward), or nil for other errors.
// It wraps err: a flag's input is named from it (cmd/flowebm).
func modesMissing(err error) error {
	if !errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return fmt.Errorf("data.modes: %w: if the file of mode centres moved, write where it is now into the configuration's data.modes (a run's config.json takes the edit)", err)
}

func (c Data) checkModes() error {
	if c.Modes == "" {
		return nil
	}
	shape, err := data.PointsShape(c.Modes, "")
	if err := modesMissing(err); err != nil {
		return err
	}
	if err != nil || len(shape) == 0 {
		return err
	}
	if names, _ := data.NPZNames(c.Modes); len(names) > 1 && strings.EqualFold(filepath.Ext(c.Modes), ".npz") { // round 130 B1: the first read as the centres, unsaid (a weights array, or the data's rows)
		return fmt.Errorf("%s: data.modes holds %d arrays (%s): give a file of the centres alone (numpy.save, or numpy.savez with one array)", c.Modes, len(names), strings.Join(names, ", "))
	}
	need, limit := arrayMemory(shape), memoryLimit()
	if shape[0] > MaxModes || need > limit {
		return fmt.Errorf("%s: data.modes of shape %v (%d centres, about %s of memory): want at most %d centres and %s (%s)",
			c.Modes, shape, shape[0], sysmem.Bytes(need), MaxModes, sysmem.Bytes(limit), sysmem.Why(sysmem.DefaultLimit))
	}
	return nil
}

var sha256Hex = regexp.MustCompile(`^[0-9a-f]{64}$`)

// Run is a whole training job: experiment, seed, models, training and
// evaluation settings. It is what config files hold (JSON).
type Run struct {
	// Experiment names one of the paper's experiments
	// (experiments.Names), or is "data" with Data set.
	Experiment string `json:"experiment"`
	Data       *Data  `json:"data,omitempty"`
	// DataDir is the folder an image experiment reads its files from
	// (experiments.ByNameIn: MNIST's IDX files for mnist and mnist28,
	// Fashion-MNIST's for fashion-mnist, CIFAR-10's cifar-10-batches-bin
	// for cifar10; the command line's --data-dir); "" finds them as
	// experiments.ByName does. Other experiments, and data sets, take none.
	DataDir string `json:"data_dir,omitempty"`
	// DataDirSHA256 holds the SHA-256 of each file the experiment reads
	// from DataDir, by file name, recorded when a run starts; a run
	// resumed on a folder whose files differ (other data) is refused.
	DataDirSHA256 map[string]string `json:"data_dir_sha256,omitempty"`
	Seed          uint64            `json:"seed"`
	DataSize      int               `json:"data_size,omitempty"` // training points (default 16384; for Data, all)
	// Epochs, when positive, sets train.iterations to this many passes
	// over the training points at train.batch_size (the schedules are
	// stretched as SetIterations does) once the data are loaded.
	Epochs int                    `json:"epochs,omitempty"`
	Model  Model                  `json:"model"`
	Train  algorithms.TrainConfig `json:"train"`
	// EvalEvery is the number of iterations between evaluations (default
	// Iterations/50); CheckpointEvery between checkpoints (default
	// Iterations/10).
	EvalEvery       int `json:"eval_every,omitempty"`
	CheckpointEvery int `json:"checkpoint_every,omitempty"`
	// GridSize is the 2D quadrature grid's points per side (default 200).
	GridSize int `json:"grid_size,omitempty"`
	// PlotFormat is the figures' file format, svg or pdf ("": png), as
	// train --plot-format gave it: --resume draws in it (round 91 B1: a
	// resumed svg run drew its figures in png). Not a setting of the
	// training: runs that differ in it alone are the same run.
	PlotFormat string `json:"plot_format,omitempty"`
	// RHatChains chains (default 128, or the bank's size if smaller; 64
	// above HighDim dimensions) of
	// the negative-sample kernel, run for RHatSteps steps (default the
	// iteration's MCMC steps, at least 8; for flowMC a step is a whole
	// cycle, see Trainer.SampleChains; Defaults keeps the paper's length
	// where it shortens the training chains) from the persistent bank, give the
	// mixing diagnostic of paper Table 2 every RHatEvery iterations
	// (default Iterations/10) and at the end.
	RHatChains int `json:"rhat_chains,omitempty"`
	RHatSteps  int `json:"rhat_steps,omitempty"`
	RHatEvery  int `json:"rhat_every,omitempty"`
	// LogZSamples is the number of draws of the importance-sampling
	// estimate of log Z behind the held-out log-likelihood (default 4096;
	// 512 above HighDim dimensions).
	LogZSamples int `json:"log_z_samples,omitempty"`
	// MemoryAccepted is the memory limit the run was accepted under at its
	// start (Resolve records it; a new run ignores a --config file's): its
	// resumption is held to it again where the machine and ulimit -v are
	// not smaller (sysmem.Accepted).
	MemoryAccepted *sysmem.Accepted `json:"memory_accepted,omitempty"`
	// Build is the build that started the run (Go, BLAS, vector math: the
	// same seed gives the same numbers only with the same build). NewRun
	// sets it; it is recorded in the run's config.json, and a run resumed
	// on another build says so.
	Build *Build `json:"build,omitempty"`
}

// EBMWeight returns the EBM's weight of mode (or class) k, NaN where the
// Source names the run's data: its experiment or its data file.
func (cfg Run) Source() string {
	if cfg.Data != nil {
		return "data file " + cfg.Data.File
	}
	return "experiment " + cfg.Experiment
}

// Resolve turns --epochs into iterations and fills every default of the
// run and its trainer (but the σ of a gaussian start, which the trainer
// takes from the models), checking each field and the memory the run needs.
func (cfg *Run) Resolve(exp *experiments.Experiment) error {
	if cfg.DataSize == 0 {
		cfg.DataSize = 16384
	}
	rows := cfg.DataSize
	if exp.Kind != experiments.KindDensity {
		rows = min(rows, exp.TrainSet.RawMatrix().Rows)
	}
	batch := cmp.Or(cfg.Train.BatchSize, 64) // the trainer's default
	if cfg.Epochs > 0 {
		it := float64(cfg.Epochs) * float64(rows) / float64(max(1, batch))
		if it > algorithms.MaxIterations {
			return fmt.Errorf("algorithms: epochs %d of %d rows at batch %d make %.3g iterations, want at most %d", cfg.Epochs, rows, batch, it, algorithms.MaxIterations)
		}
		cfg.Train.SetIterations(max(1, int(math.Ceil(it)))) // N whole passes at least (probe 68 B4: 37 iterations made 2.92 of 3)
	}
	tc, err := cfg.Train.ResolvedAs("train.")
	if err != nil {
		return err
	}
	cfg.Train = tc
	if err := cfg.fillDefaults(exp.Dim()); err != nil {
		return err
	}
	if cfg.RHatChains > cfg.Train.Persistent && cfg.Train.PersistentChains() {
		return fmt.Errorf("algorithms: rhat_chains %d exceeds the persistent bank (%d)", cfg.RHatChains, cfg.Train.Persistent)
	}
	if err := cfg.Model.CheckImage(exp); err != nil {
		return err
	}
	limit := cfg.MemoryAccepted.Raise(memoryLimit())
	if err := cfg.checkRunMemory(exp, limit); err != nil { // a sysmem.OverError: cfg is resolved (--print-config prints it)
		return err
	}
	if cfg.MemoryAccepted == nil {
		cfg.MemoryAccepted = sysmem.Accept(limit)
	}
	return cfg.checkRows(exp, rows, batch)
}

// TooFewRowsError is Resolve's refusal of data with fewer training rows
// than a batch takes; the configuration is resolved all the same, so that
// --print-config can print it to edit (round 89 A4: refused, nothing to
// edit).
type TooFewRowsError struct{ msg string }

func (e *TooFewRowsError) Error() string { return e.msg }

// checkRows refuses fewer training rows than a batch of batch takes.
func (cfg *Run) checkRows(exp *experiments.Experiment, rows, batch int) error {
	if rows >= max(2, batch) {
		return nil
	}
	if cfg.Data != nil && cfg.DataSize >= exp.TrainSet.RawMatrix().Rows {
		msg := fmt.Sprintf("%s: %d training rows (after holding out %d), fewer than the batch size %d: give more data or a smaller train.batch_size",
			cfg.Data.File, rows, exp.HeldOutSet.RawMatrix().Rows, max(2, batch))
		if n := data.MemberNote(cfg.Data.File, cfg.Data.Key); n != "" { // round 71 B2: which member was read
			msg += " (" + n + ")"
		}
		return &TooFewRowsError{msg}
	}
	return &TooFewRowsError{fmt.Sprintf("algorithms: %s gives %d training rows (data_size %d): want at least %d, as each training batch takes train.batch_size = %d rows of them (and at least 2): give more data, or a smaller train.batch_size", cfg.Source(), rows, cfg.DataSize, max(2, batch), batch)}
}

// ErrOtherData is wrapped by the refusals of data other than a run's
// recorded checksums name.
var ErrOtherData = errors.New("other data would not continue it")

// CheckData checks, without loading them, that the data the run reads are
// those its configuration records (data.sha256, data_dir_sha256), as
// LoadExperiment does: a step that waits first (a resume finishing an
// interrupted checkpoint replacement) refuses other data before it.
func (cfg Run) CheckData() error {
	switch {
	case cfg.Data != nil && cfg.Data.File != "":
		d := *cfg.Data // the caller's stays as it is
		return d.recordFile()
	case cfg.DataDir != "":
		return cfg.recordDataDir()
	}
	return nil
}

// recordDataDir makes DataDir absolute and records its files' SHA-256,
// or checks them against the recorded ones.
func (cfg *Run) recordDataDir() error {
	abs, err := filepath.Abs(cfg.DataDir)
	if err != nil {
		return fmt.Errorf("data_dir: %w", err)
	}
	cfg.DataDir = abs
	return cfg.checkDataDirSums()
}

// build splits the data, builds the models (unless given) and the trainer
// that it has a batch's rows) or looks up its experiment; it sets
// cfg.Experiment and, for a data set, cfg.DataSize.
func (cfg *Run) LoadExperiment(dataRNG *rand.Rand) (*experiments.Experiment, []string, error) {
	var exp *experiments.Experiment
	var err error
	var notes []string
	if err := cfg.Model.absoluteFlow(); err != nil {
		return nil, nil, err
	}
	if cfg.DataDir != "" {
		if cfg.Data != nil {
			return nil, nil, fmt.Errorf("algorithms: data_dir %s and a data file %s: data_dir is an image experiment's folder, drop it", cfg.DataDir, cfg.Data.File)
		}
		if err := cfg.recordDataDir(); err != nil {
			return nil, nil, err
		}
	} else if cfg.DataDirSHA256 != nil {
		return nil, nil, fmt.Errorf("algorithms: data_dir_sha256 without data_dir: it records the files a run read from its data_dir, and this configuration reads none; give data_dir (--data-dir DIR) with those files, or drop data_dir_sha256")
	}
	if cfg.Data != nil {
		if cfg.Data.File == "" {
			return nil, nil, fmt.Errorf("algorithms: the data section has no file: give data.file (or --data FILE), or leave the data section out to train on an experiment")
		}
		if cfg.Experiment != "data" && cfg.Experiment != "" {
			return nil, nil, fmt.Errorf("algorithms: experiment %q and a data file %s: give one", cfg.Experiment, cfg.Data.File)
		}
		cfg.Experiment = "data"
		if exp, notes, err = cfg.loadData(dataRNG); err != nil {
			if n := data.MemberNote(cfg.Data.File, cfg.Data.Key); n != "" && !strings.Contains(err.Error(), data.FirstMemberRead) { // round 71 B2: said only of data accepted; round 81: not twice
				err = fmt.Errorf("%w (%s)", err, n)
			}
			return nil, nil, err
		}
	} else if cfg.Experiment == "data" {
		return nil, nil, fmt.Errorf("algorithms: experiment \"data\" without a data section: give data.file (or --data FILE)")
	} else if exp, err = experiments.ByNameIn(cfg.Experiment, cfg.DataDir); err != nil {
		return nil, nil, err
	}
	return exp, notes, nil
}

// loadData loads the data section's file as an experiment and checks its
// rows against data_size.
func (cfg *Run) loadData(dataRNG *rand.Rand) (*experiments.Experiment, []string, error) {
	if err := cfg.Data.recordFile(); err != nil {
		return nil, nil, err
	}
	exp, notes, err := cfg.Data.load(dataRNG, cfg.Model.FlowONNX != nil)
	if err != nil {
		return nil, nil, err
	}
	n, _ := exp.TrainSet.Dims()
	if cfg.DataSize == 0 {
		cfg.DataSize = n
	}
	if cfg.DataSize > n {
		return nil, nil, fmt.Errorf("data_size %d, but %s has %d training rows (after holding out %d): want at most %d, or leave the field out for all", cfg.DataSize, cfg.Data.File, n, exp.HeldOutSet.RawMatrix().Rows, n)
	}
	if cfg.DataSize < n { // probe 65: the note above said all n were trained on
		notes = append(notes, fmt.Sprintf("data_size %d: the models train on %d of these %d training rows (the data were standardised on all %d)", cfg.DataSize, cfg.DataSize, n, n))
	}
	return exp, notes, nil // rows against the batch size: checked by Resolve
}

// HighDim is the most dimensions at which a run's diagnostics default to
// the paper's sizes (rhat_chains 128, log_z_samples 4096; its toy
// experiments have at most 64). Above it they default to the image
// experiments' (64 and 512): train --data on 784 columns with the paper's
// sizes needed 12.5 GiB, 7.2 GiB of it the flow's values on 128 × 32
// i-SIR proposals and 4096 log Z draws, and was refused on every machine
// under 25 GiB.
const HighDim = 64

// fillDefaults fills the run's own fields (grid, evaluation schedule,
// R-hat and log Z sizes) and checks them; the trainer's are filled.
func (cfg *Run) fillDefaults(dim int) error {
	if cfg.GridSize == 0 {
		cfg.GridSize = 200
	}
	if cfg.Train.Iterations <= 0 {
		return fmt.Errorf("algorithms: train.iterations %d, want > 0", cfg.Train.Iterations)
	}
	if cfg.EvalEvery == 0 {
		cfg.EvalEvery = max(1, cfg.Train.Iterations/50)
	}
	if cfg.CheckpointEvery == 0 {
		cfg.CheckpointEvery = max(1, cfg.Train.Iterations/10)
	}
	rhatChains, logZSamples := 128, 4096
	if dim > HighDim { // the image experiments' diagnostics (settings' scaling)
		rhatChains, logZSamples = 64, 512
	}
	if cfg.RHatChains == 0 {
		cfg.RHatChains = rhatChains
		if cfg.Train.Persistent > 0 {
			cfg.RHatChains = min(rhatChains, cfg.Train.Persistent)
		}
	}
	if cfg.RHatEvery == 0 {
		cfg.RHatEvery = max(1, cfg.Train.Iterations/10)
	}
	if cfg.LogZSamples == 0 {
		cfg.LogZSamples = logZSamples
	}
	if cfg.RHatSteps == 0 {
		cfg.RHatSteps = cfg.Train.DiagnosticSteps()
	}
	return cfg.checkDiagnostics()
}

// minRHatSteps is the fewest draws per chain rhat_steps takes (split
// R-hat halves them).
const minRHatSteps = 4

// checkDiagnostics refuses R-hat and log Z sizes too small to estimate
// anything, naming only the fields at fault.
func (cfg Run) checkDiagnostics() error {
	var bad []string
	for _, f := range []struct {
		name     string
		v, least int
		want     string
	}{{"rhat_chains", cfg.RHatChains, 2, "≥ 2"}, {"rhat_steps", cfg.RHatSteps, minRHatSteps, fmt.Sprintf("%d..%d", minRHatSteps, MaxRHatSteps)}, {"log_z_samples", cfg.LogZSamples, 2, "≥ 2"}} {
		if f.v < f.least {
			bad = append(bad, fmt.Sprintf("%s %d (want %s)", f.name, f.v, f.want))
		}
	}
	if len(bad) > 0 {
		return fmt.Errorf("algorithms: %s", strings.Join(bad, ", "))
	}
	return nil
}

// checkRunMemory bounds the memory of the resolved run cfg before anything
// is allocated.
func (cfg Run) checkRunMemory(exp *experiments.Experiment, limit float64) error {
	est := cfg
	if exp.Kind != experiments.KindDensity {
		// A data set's run trains on its rows, at most data_size.
		est.DataSize = min(est.DataSize, exp.TrainSet.RawMatrix().Rows)
	}
	var image *layers.ImageShape
	if cfg.Model.Conv() {
		s, err := cfg.Model.imageShape(exp)
		if err != nil {
			return err
		}
		image = &s
	}
	return sysmem.Check(est.memoryTermsFor(cfg.Train, exp.Dim(), image), limit)
}

// ReadAsWritten decodes the configuration file at path strictly, as Read
// does, but takes its fields as written: no path resolved, no zero
// checked (a checkpoint's copy of its run's configuration).
func ReadAsWritten(path string) (Run, error) {
	var cfg Run
	if err := jsonfile.Read(path, &cfg, jsonfile.Options{MaxBytes: MaxFileBytes, IntRanges: intRanges()}); err != nil {
		if e := (*algorithms.OptionError)(nil); errors.As(err, &e) { // the options are the trainer's: named as the file nests them
			return cfg, fmt.Errorf("%s: %w", path, &algorithms.OptionError{Field: "train." + e.Field, Value: e.Value, Want: e.Want})
		}
		return cfg, err
	}
	return cfg, nil
}

// intRanges are the fixed ranges of a configuration's integer fields,
// for the decoder's refusal of numbers beyond Go's int (Validate and the
// trainer's checks refuse the rest, with the same ranges).
func intRanges() map[string]jsonfile.IntRange {
	return map[string]jsonfile.IntRange{
		"grid_size":                    {Min: 2, Max: MaxGridSize, Unset: "the default 200"},
		"rhat_steps":                   {Min: minRHatSteps, Max: MaxRHatSteps, Unset: "the default"},
		"train.iterations":             {Min: 1, Max: algorithms.MaxIterations},
		"train.flow_steps":             {Min: 1, Max: algorithms.MaxFlowSteps, Unset: "the default 1"},
		"train.sampler.steps":          {Min: 1, Max: algorithms.MaxChainSteps, Unset: "the algorithm's default"},
		"train.sampler.global_steps":   {Min: 1, Max: algorithms.MaxChainSteps, Unset: "the default 1, with local_steps"},
		"train.sampler.local_steps":    {Min: 1, Max: algorithms.MaxChainSteps, Unset: "the default 4, with global_steps"},
		"train.pretrain.steps":         {Min: 0, Max: algorithms.MaxIterations, Unset: "0, no pretraining"},
		"train.average_window":         {Min: 0, Max: algorithms.MaxIterations, Unset: "the experiment's"},
		"train.freeze_flow":            {Min: 0, Max: algorithms.MaxIterations, Unset: "0"},
		"train.ebm_optim.decay_every":  {Min: 1, Max: algorithms.MaxIterations, Unset: "the experiment's"},
		"train.flow_optim.decay_every": {Min: 1, Max: algorithms.MaxIterations, Unset: "the experiment's"},
		// Bounded below only here: the memory a run needs bounds them.
		"checkpoint_every":          {Min: 1, Max: math.MaxInt64, Unset: "the default"},
		"eval_every":                {Min: 1, Max: math.MaxInt64, Unset: "the default"},
		"rhat_every":                {Min: 1, Max: math.MaxInt64, Unset: "the default"},
		"rhat_chains":               {Min: 2, Max: math.MaxInt64, Unset: "the default"},
		"log_z_samples":             {Min: 2, Max: math.MaxInt64, Unset: "the default"},
		"data_size":                 {Min: 1, Max: math.MaxInt64, Unset: "the default"},
		"train.batch_size":          {Min: 1, Max: math.MaxInt64, Unset: "the experiment's"},
		"train.persistent":          {Min: 1, Max: math.MaxInt64, Unset: "the experiment's"},
		"train.pretrain.batch_size": {Min: 1, Max: math.MaxInt64, Unset: "train.batch_size"},
		"train.sampler.particles":   {Min: 2, Max: math.MaxInt64, Unset: "the experiment's"},
		"model.shards":              {Min: 1, Max: MaxShards, Unset: fmt.Sprintf("%d", DefaultShards)},
		"model.flow_bins":           {Min: 2, Max: int64(MaxFlowBins), Unset: fmt.Sprintf("the default %d", layers.DefaultSplineBins)},
	}
}

// MaxFileBytes bounds a configuration file: kilobytes are written (a
// run's config.json is about 2 KB), and walking 256 MiB took 38 s and
// 0.9 GB before the refusal (probe 29).
const MaxFileBytes = 16 << 20

// Read reads a run configuration file (the fields of config.json),
// strictly: unknown fields and data after the object are errors naming
// the file and field; an explicit 0 for a field whose default is not 0 is
// refused when the run is resolved (Resolve), 0 standing for the default.
// Relative data.file and data.modes paths are taken relative to the
// file's folder (ResolvePaths).
func Read(path string) (Run, error) {
	cfg, err := ReadAsWritten(path)
	if err != nil {
		return cfg, err
	}
	b, err := safefile.ReadFile(path, MaxFileBytes)
	if err != nil {
		return cfg, err
	}
	var raw map[string]any
	dec := json.NewDecoder(bytes.NewReader(bytes.TrimPrefix(b, []byte("\uFEFF"))))
	dec.UseNumber()
	if err := dec.Decode(&raw); err != nil {
		return cfg, fmt.Errorf("%s: %w", path, err)
	}
	if err := cfg.checkZeros(zeroPaths(raw, "")); err != nil {
		return cfg, fmt.Errorf("%s: %w", path, err)
	}
	if err := cfg.stepsTogether(raw); err != nil {
		return cfg, fmt.Errorf("%s: %w", path, err)
	}
	if err := cfg.checkPaths(filepath.Dir(path)); err != nil {
		return cfg, fmt.Errorf("%s: %w", path, err)
	}
	cfg.ResolvePaths(filepath.Dir(path))
	return cfg, nil
}

// checkPaths refuses a file path of the configuration (relative ones
// taken from dir) whose .. the system reads differently from Go's path
// functions, which ResolvePaths and the readers use (probe 39: data.file
// L/../d.npy trained on ./d.npy, while the system's L/../d.npy is
// another file).
func (cfg *Run) checkPaths(dir string) error {
	paths := map[string]string{"data_dir": cfg.DataDir}
	if f := cfg.Model.FlowONNX; f != nil {
		paths["model.flow_onnx.sample"], paths["model.flow_onnx.density"] = f.Sample, f.Density
	}
	if d := cfg.Data; d != nil {
		paths["data.file"], paths["data.modes"] = d.File, d.Modes
	}
	for _, field := range slices.Sorted(maps.Keys(paths)) {
		p := paths[field]
		if p == "" {
			continue
		}
		sys := p
		if !filepath.IsAbs(p) {
			sys = dir + string(filepath.Separator) + p // not joined: Join would clean the .. away
		}
		if err := pathcheck.DotDot(sys); err != nil {
			return fmt.Errorf("%s %s: %w", field, p, err)
		}
	}
	return nil
}

// ResolvePaths takes the relative file paths (data.file, data.modes,
// data_dir, model.flow_onnx's) as relative to the folder dir, that of the
// configuration file that names them, rather than to the working
// directory.
func (cfg *Run) ResolvePaths(dir string) {
	if cfg.DataDir != "" && !filepath.IsAbs(cfg.DataDir) {
		cfg.DataDir = filepath.Join(dir, cfg.DataDir)
	}
	if f := cfg.Model.FlowONNX; f != nil {
		g := *f
		for _, p := range []*string{&g.Sample, &g.Density} {
			if *p != "" && !filepath.IsAbs(*p) {
				*p = filepath.Join(dir, *p)
			}
		}
		cfg.Model.FlowONNX = &g
	}
	if cfg.Data == nil {
		return
	}
	d := *cfg.Data
	for _, p := range []*string{&d.File, &d.Modes} {
		if *p != "" && !filepath.IsAbs(*p) {
			*p = filepath.Join(dir, *p)
		}
	}
	cfg.Data = &d
}

// absolute makes the data's file paths absolute, so that the run's
// config.json names them from any working directory.
// absoluteFlow makes model.flow_onnx's paths absolute, for the run's
// config.json.
func (m *Model) absoluteFlow() error {
	if m.FlowONNX == nil {
		return nil
	}
	g := *m.FlowONNX
	for _, p := range []*string{&g.Sample, &g.Density} {
		abs, err := filepath.Abs(*p)
		if err != nil {
			return fmt.Errorf("model.flow_onnx: %s: %w", *p, err)
		}
		*p = abs
	}
	m.FlowONNX = &g
	return nil
}

func (c *Data) absolute() error {
	for _, p := range []*string{&c.File, &c.Modes} {
		if *p == "" {
			continue
		}
		abs, err := filepath.Abs(*p)
		if err != nil {
			return fmt.Errorf("%s: %w", *p, err)
		}
		*p = abs
	}
	return nil
}

// zeroPaths lists the dotted paths of the numbers written as 0 in the
// decoded JSON object m, sorted.
func zeroPaths(m map[string]any, prefix string) []string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		switch v := m[k].(type) {
		case map[string]any:
			out = append(out, zeroPaths(v, prefix+k+".")...)
		case json.Number:
			if f, err := v.Float64(); err == nil && f == 0 {
				out = append(out, prefix+k)
			}
		}
	}
	return out
}

// checkZeros refuses the fields written as 0 in a configuration file
// (paths) whose default is not 0: 0 stands for the default there, which is
// rarely what "0" meant (a batch of 0 points). The defaults are those that
// need no data; a configuration whose fields do not resolve is left to
// Validate and Resolve to explain.
func (cfg Run) checkZeros(paths []string) error {
	if len(paths) == 0 {
		return nil
	}
	resolved, ok := cfg.withUseDefaults()
	if !ok {
		return nil
	}
	unused := cfg.unused(true) // a zero there is ignored, as the run's notes say
	for _, path := range paths {
		switch {
		case slices.ContainsFunc(unused, func(u string) bool {
			return strings.EqualFold(u, path) || strings.HasPrefix(strings.ToLower(path), strings.ToLower(u)+".")
		}):
			continue
		case strings.EqualFold(path, "train.iterations"): // Validate explains a 0 (epochs, or none)
			continue
		case strings.EqualFold(path, "data_size") && cfg.Data != nil: // 0: every row of the data
			continue
		}
		v := jsonPath(resolved, path)
		switch rv := reflect.ValueOf(v); rv.Kind() {
		case reflect.Int, reflect.Int64, reflect.Uint64, reflect.Float64:
			if strings.EqualFold(path, "data_size") { // its default is another with --data (probe 54: "16384" where it is every row)
				return fmt.Errorf("algorithms: data_size 0: 0 stands for the default here: leave the field out for the default (%v points of an experiment's distribution, every row of a data set), or give another value", v)
			}
			if !rv.IsZero() {
				return fmt.Errorf("algorithms: %s 0: 0 stands for the default here, %v: leave the field out for the default, or give another value", path, v)
			}
		}
	}
	return nil
}

// withUseDefaults is cfg, as JSON, with every default that needs no data
// filled in: the trainer's and the run's, and those the models and
// optimisers take where they are built (false if cfg does not resolve).
func (cfg Run) withUseDefaults() (map[string]any, bool) {
	if cfg.Train.Iterations <= 0 { // epochs or a flag set it later: defaults as for a run of 1000
		cfg.Train.Iterations = 1000
	}
	tc, err := cfg.Train.ResolvedAs("train.")
	if err != nil {
		return nil, false
	}
	cfg.Train = tc
	cfg.DataSize = cmp.Or(cfg.DataSize, 16384)
	if cfg.fillDefaults(0) != nil { // the dimension is the data's: not known here
		return nil, false
	}
	if cfg.Data != nil {
		d := *cfg.Data
		d.HoldOut = cmp.Or(d.HoldOut, 0.1) // experiments.DataSet's default
		cfg.Data = &d
	}
	cfg.Train.EBMOptim, cfg.Train.FlowOptim = cfg.Train.EBMOptim.WithDefaults(), cfg.Train.FlowOptim.WithDefaults()
	if t := &cfg.Train; t.Start == algorithms.StartGaussian && t.StartScale == 0 {
		t.StartScale = 1 // the base's σ, known once the models are
	}
	cfg.Model = cfg.Model.WithDefaults()
	resolved, _ := jsonfile.Safe(cfg).(map[string]any)
	return resolved, true
}

// lookupFold is m[k], matched without regard to case as encoding/json
// matches field names.
// stepsTogether refuses a flowMC-EBM train.sampler that gives one of
// global_steps and local_steps without the other, or one as 0: the one
// left out would be 0 (the defaults, 1 and 4, are taken only when both
// are), so that "global_steps": 2 alone meant no MALA step at all (probe
// 15), and a 0 is not kept in config.json (a resumed run would read it as
// left out).
func (cfg Run) stepsTogether(raw map[string]any) error {
	if cfg.Train.Algorithm != "" && cfg.Train.Algorithm != algorithms.FlowMC {
		return nil // unused: a note says so
	}
	train, _ := lookupFold(raw, "train").(map[string]any)
	sampler, _ := lookupFold(train, "sampler").(map[string]any)
	if lookupFold(sampler, "global_steps") == nil && lookupFold(sampler, "local_steps") == nil {
		return nil
	}
	if g, l := cfg.Train.Sampler.GlobalSteps, cfg.Train.Sampler.LocalSteps; g == 0 || l == 0 {
		return fmt.Errorf("algorithms: train.sampler.global_steps %d and local_steps %d (0 where left out): a flowMC cycle takes both, give each ≥ 1 (i-SIR moves and MALA steps per cycle), or leave both out for the defaults 1 and 4", g, l)
	}
	return nil
}

func lookupFold(m map[string]any, k string) any {
	for key, v := range m {
		if strings.EqualFold(key, k) {
			return v
		}
	}
	return nil
}

// Build describes the build that computed a run.
type Build struct {
	Go         string `json:"go"`
	BLAS       string `json:"blas"`
	VectorMath string `json:"vector_math"`
}

// String names the build in one line.
func (b Build) String() string {
	return fmt.Sprintf("%s, BLAS %s, vector math %s", b.Go, b.BLAS, b.VectorMath)
}

// CurrentBuild is the build of this process.
func CurrentBuild() Build {
	return Build{Go: runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH, BLAS: graph.BLAS(), VectorMath: layers.VectorMath()}
}
