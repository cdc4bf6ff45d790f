package training

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/flowebm/flowebm/algorithms"
	"github.com/flowebm/flowebm/io/npy"
	"github.com/flowebm/flowebm/io/npz"
)

var errCrash = errors.New("simulated crash")

// crashAt makes the next Checkpoint stop at point as a kill would; the
// hook is removed when the test ends.
func crashAt(t *testing.T, point string) {
	t.Helper()
	crashHook = func(p string) error {
		if p == point {
			return errCrash
		}
		return nil
	}
	t.Cleanup(func() { crashHook = nil })
}

// wantOnly fails unless, of checkpoint/, checkpoint.new/ and
// checkpoint.old/, exactly those named exist in dir.
func wantOnly(t *testing.T, dir string, names ...string) {
	t.Helper()
	for _, n := range []string{"checkpoint", "checkpoint.new", "checkpoint.old"} {
		want := false
		for _, m := range names {
			want = want || m == n
		}
		if got := exists(filepath.Join(dir, n)); got != want {
			t.Errorf("%s exists: %v, want %v", n, got, want)
		}
	}
}

func sameParams(t *testing.T, a, b *Run) {
	t.Helper()
	x, y := a.Trainer.EBM.Params.Flatten(nil), b.Trainer.EBM.Params.Flatten(nil)
	for i := range x {
		if x[i] != y[i] {
			t.Fatalf("EBM parameter %d: %v uninterrupted, %v resumed", i, x[i], y[i])
		}
	}
	x, y = averaged(t, a), averaged(t, b)
	for i := range x {
		if x[i] != y[i] {
			t.Fatalf("averaged EBM parameter %d: %v uninterrupted, %v resumed", i, x[i], y[i])
		}
	}
}

type crashCase struct {
	point  string
	latest string
	isNew  bool
}

// resumedAt is the iteration a run checkpointed at 4 and crashed at the
// point of its checkpoint at 7 (crashedRun) resumes at.
func (c crashCase) resumedAt() int {
	if c.isNew {
		return 7
	}
	return 4
}

// crashPoints are the steps of a checkpoint replacement a kill can fall
// between, with where the newest complete checkpoint then is (relative to
// the run folder) and whether it is the interrupted write's.
var crashPoints = []crashCase{
	{"begin", "checkpoint", false},        // before writing checkpoint.new/
	{"models", "checkpoint", false},       // checkpoint.new/ half written (models only)
	{"unmarked", "checkpoint", false},     // all files but the marker
	{"complete", "checkpoint.new", true},  // complete, before the first rename
	{"moved-old", "checkpoint.new", true}, // between the two renames
	{"moved-new", "checkpoint", true},     // before removing checkpoint.old/
}

// A kill at any step of a checkpoint replacement leaves a run that resumes
// from the newest complete checkpoint, continues bit for bit as an
// uninterrupted run, and checkpoints again.
func TestResumeAfterCrashInCheckpoint(t *testing.T) {
	const alg, total = algorithms.FlowMC, 12
	straight := smallRun(t, alg, total, t.TempDir())
	stepN(t, straight, total)
	for _, c := range crashPoints {
		t.Run(c.point, func(t *testing.T) {
			dir, _ := crashedRun(t, alg, total, c.point)
			switch c.point {
			case "begin":
				wantOnly(t, dir, "checkpoint")
			case "models", "unmarked", "complete":
				wantOnly(t, dir, "checkpoint", "checkpoint.new")
			case "moved-old":
				wantOnly(t, dir, "checkpoint.old", "checkpoint.new")
			case "moved-new":
				wantOnly(t, dir, "checkpoint", "checkpoint.old")
			}
			latest, err := LatestCheckpoint(dir)
			if err != nil {
				t.Fatal(err)
			}
			if want := filepath.Join(dir, c.latest); latest != want {
				t.Errorf("LatestCheckpoint: %s, want %s", latest, want)
			}

			resumed, err := Resume(dir)
			if err != nil {
				t.Fatal(err)
			}
			want := c.resumedAt()
			if resumed.Trainer.Iter != want || len(resumed.Evals) != want {
				t.Fatalf("resumed at iteration %d with %d evaluations, want %d", resumed.Trainer.Iter, len(resumed.Evals), want)
			}
			wantOnly(t, dir, "checkpoint")
			if _, err := os.Stat(filepath.Join(dir, "checkpoint", completeMarker)); err != nil {
				t.Error(err)
			}

			stepN(t, resumed, total-want)
			sameParams(t, straight, resumed)
			sameParams(t, straight, checkpointAndResume(t, resumed, dir, total))
		})
	}
}

// The next checkpoint after a crash (without a resume in between, e.g. a
// new process that retrains) recovers first and keeps a checkpoint on disk
// throughout.
func TestCheckpointAfterCrashInCheckpoint(t *testing.T) {
	for _, c := range crashPoints {
		t.Run(c.point, func(t *testing.T) {
			dir, r := crashedRun(t, algorithms.FlowMC, 12, c.point)
			stepN(t, r, 2)
			// A crash early in this write still finds the recovered
			// checkpoint.
			crashAt(t, "models")
			if err := r.Checkpoint(); !errors.Is(err, errCrash) {
				t.Fatalf("Checkpoint: %v, want the simulated crash", err)
			}
			crashHook = nil
			wantOnly(t, dir, "checkpoint", "checkpoint.new")
			resumed, err := Resume(dir)
			if err != nil {
				t.Fatal(err)
			}
			want := c.resumedAt()
			if resumed.Trainer.Iter != want {
				t.Fatalf("resumed at iteration %d, want %d", resumed.Trainer.Iter, want)
			}
			checkpointAndResume(t, r, dir, 9)
		})
	}
}

// A crash in a run's first checkpoint: before checkpoint.new/ is complete
// there is nothing to resume (and a clear error); from then on the run
// resumes from it.
func TestCrashInFirstCheckpoint(t *testing.T) {
	for _, c := range crashPoints {
		t.Run(c.point, func(t *testing.T) {
			dir := t.TempDir()
			r := smallRun(t, algorithms.FlowMC, 12, dir)
			stepN(t, r, 3)
			crashAt(t, c.point)
			if err := r.Checkpoint(); !errors.Is(err, errCrash) {
				t.Fatalf("Checkpoint: %v, want the simulated crash", err)
			}
			crashHook = nil
			resumed, err := Resume(dir)
			if !c.isNew {
				if err == nil {
					t.Fatalf("resumed at iteration %d from an incomplete checkpoint", resumed.Trainer.Iter)
				}
				if !errors.Is(err, fs.ErrNotExist) {
					t.Errorf("Resume: %v, want a missing-file error", err)
				}
				// Training again from the start writes a checkpoint.
				r = smallRun(t, algorithms.FlowMC, 12, dir)
				stepN(t, r, 2)
				checkpointAndResume(t, r, dir, 2)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if resumed.Trainer.Iter != 3 {
				t.Fatalf("resumed at iteration %d, want 3", resumed.Trainer.Iter)
			}
			wantOnly(t, dir, "checkpoint")
			stepN(t, resumed, 1)
			if err := resumed.Checkpoint(); err != nil {
				t.Fatal(err)
			}
			wantOnly(t, dir, "checkpoint")
		})
	}
}

// Folder states no crash of the replacement makes, built by hand: a
// damaged checkpoint/ falls back to checkpoint.old/; a checkpoint.new/
// without the marker is never used; a checkpoint/ without the marker
// (written by an earlier version) is; with nothing complete, Resume fails
// and removes nothing but a half-written checkpoint.new/.
func TestCheckpointFolderStates(t *testing.T) {
	build := func(t *testing.T) (string, *Run) {
		dir := t.TempDir()
		r := smallRun(t, algorithms.FlowMC, 12, dir)
		stepN(t, r, 2)
		if err := r.Checkpoint(); err != nil {
			t.Fatal(err)
		}
		return dir, r
	}
	ck := func(dir, name string) string { return filepath.Join(dir, name) }
	resumeAt := func(t *testing.T, dir string, want int) {
		t.Helper()
		r, err := Resume(dir)
		if err != nil {
			t.Fatal(err)
		}
		if r.Trainer.Iter != want {
			t.Fatalf("resumed at iteration %d, want %d", r.Trainer.Iter, want)
		}
		wantOnly(t, dir, "checkpoint")
	}

	t.Run("damaged checkpoint, complete old", func(t *testing.T) {
		dir := crashThenRemove(t, build, "moved-new", "checkpoint/weights.npz") // checkpoint/ at 3, checkpoint.old/ at 2
		// Round 131 B1-B3: checkpoint/ was finished (its marker) and
		// damaged since: it was removed, and its iteration lost, unsaid.
		_, err := Resume(dir)
		if !errors.As(err, new(*OutOfOrderError)) || !strings.Contains(err.Error(), "checkpoint/ is complete") || !strings.Contains(err.Error(), "of iteration 3, newer than checkpoint.old/ (iteration 2)") {
			t.Fatalf("Resume: %v, want checkpoint/ named as newer and damaged", err)
		}
		wantOnly(t, dir, "checkpoint", "checkpoint.old")
		if err := os.Rename(ck(dir, "checkpoint"), ck(t.TempDir(), "kept")); err != nil { // the way on
			t.Fatal(err)
		}
		resumeAt(t, dir, 2)
	})
	t.Run("unmarked new", func(t *testing.T) {
		dir := crashThenRemove(t, build, "complete", "checkpoint.new/"+completeMarker)
		resumeAt(t, dir, 2)
	})
	t.Run("marked new damaged since", func(t *testing.T) {
		// Completed after checkpoint/ and damaged since: passing over it
		// (and recovery removing it) lost its iterations unsaid.
		dir := crashThenRemove(t, build, "complete", "checkpoint.new/weights.npz")
		_, err := Resume(dir)
		if !errors.As(err, new(*OutOfOrderError)) || !strings.Contains(err.Error(), "checkpoint.new/ is complete") ||
			!strings.Contains(err.Error(), "of iteration 3, newer than checkpoint/ (iteration 2)") || !strings.Contains(err.Error(), "weights.npz") {
			t.Fatalf("Resume: %v, want checkpoint.new/ named as newer and damaged", err)
		}
		if _, err := LatestCheckpoint(dir); !errors.As(err, new(*OutOfOrderError)) {
			t.Errorf("LatestCheckpoint: %v, want the same refusal", err)
		}
		wantOnly(t, dir, "checkpoint", "checkpoint.new")
		// The way on it gives: moved out, the run goes on from checkpoint/.
		if err := os.Rename(ck(dir, "checkpoint.new"), ck(t.TempDir(), "kept")); err != nil {
			t.Fatal(err)
		}
		resumeAt(t, dir, 2)
	})
	t.Run("read only", func(t *testing.T) {
		// Round 131 B1: plot, a reader, recovered the folders as a
		// resume does, and removed a damaged checkpoint/.
		readAt := func(t *testing.T, dir string, want int, only ...string) {
			t.Helper()
			r, err := ResumeWith(dir, ResumeOptions{ReadOnly: true})
			if err != nil {
				t.Fatal(err)
			}
			if r.Trainer.Iter != want {
				t.Errorf("read at iteration %d, want %d", r.Trainer.Iter, want)
			}
			wantOnly(t, dir, only...)
		}
		dir := crashThenRemove(t, build, "complete", "checkpoint/"+completeMarker) // checkpoint.new/ at 3 complete; checkpoint/ at 2, unmarked
		readAt(t, dir, 3, "checkpoint", "checkpoint.new")
		dir = crashThenRemove(t, build, "moved-new", "checkpoint/"+completeMarker) // checkpoint/ at 3 unmarked, checkpoint.old/ at 2
		readAt(t, dir, 2, "checkpoint", "checkpoint.old")
	})
	t.Run("legacy checkpoint without marker", func(t *testing.T) {
		dir, _ := build(t)
		if err := os.Remove(ck(dir, "checkpoint/"+completeMarker)); err != nil {
			t.Fatal(err)
		}
		// Neither window.json nor run-config.json was written then
		// (run-config.json came after the marker: one without the
		// marker is refused, round 81 B1).
		for _, f := range []string{"window.json", runConfigName} {
			if err := os.Remove(ck(dir, "checkpoint/"+f)); err != nil {
				t.Fatal(err)
			}
		}
		resumeAt(t, dir, 2)
	})
	t.Run("nothing complete", func(t *testing.T) {
		dir := crashThenRemove(t, build, "models", "checkpoint/spec.json")
		_, err := Resume(dir)
		if !errors.Is(err, ErrNoCheckpoint) || !strings.Contains(err.Error(), "no complete checkpoint") {
			t.Fatalf("Resume: %v, want no complete checkpoint", err)
		}
		wantOnly(t, dir, "checkpoint")
		if _, err := os.Stat(ck(dir, "checkpoint/weights.npz")); err != nil {
			t.Errorf("the damaged checkpoint was removed: %v", err)
		}
	})
}

// A divergence names the last good checkpoint only once one was written.
func TestDivergedMessageNamesCheckpoint(t *testing.T) {
	dir := t.TempDir()
	r := smallRun(t, algorithms.FlowMC, 12, dir)
	r.Trainer.Config.MaxEnergy = 1e-300
	err := r.Train(nil)
	if !errors.Is(err, algorithms.ErrDiverged) {
		t.Fatalf("Train: %v, want divergence", err)
	}
	if !strings.Contains(err.Error(), "it diverged before its first checkpoint (due after iteration") || strings.Contains(err.Error(), filepath.Join(dir, "checkpoint")) {
		t.Errorf("divergence before the first checkpoint: %q", err)
	}

	dir = t.TempDir()
	r = smallRun(t, algorithms.FlowMC, 12, dir)
	r.Config.CheckpointEvery = 2
	err = r.Train(func(it int) {
		if it == 2 {
			r.Trainer.Config.MaxEnergy = 1e-300
		}
	})
	if !errors.Is(err, algorithms.ErrDiverged) {
		t.Fatalf("Train: %v, want divergence", err)
	}
	ck := filepath.Join(dir, "checkpoint")
	if !strings.Contains(err.Error(), "the last good checkpoint is in "+ck) {
		t.Errorf("divergence after a checkpoint: %q", err)
	}
	if _, err := os.Stat(filepath.Join(ck, "spec.json")); err != nil {
		t.Error(err)
	}
}

// Resume checks config.json as --config files are checked: an explicit 0
// where 0 only means the default is refused naming the field.
func TestResumeChecksConfigLikeConfigFiles(t *testing.T) {
	dir, _ := checkpointedRun(t, 4, 2)
	path := filepath.Join(dir, "config.json")
	b, _ := os.ReadFile(path)
	os.WriteFile(path, bytes.Replace(b, []byte(`"batch_size": 16`), []byte(`"batch_size": 0`), 1), 0o644)
	if _, err := Resume(dir); err == nil || !strings.Contains(err.Error(), "train.batch_size 0") {
		t.Errorf("resume with batch_size 0: %v", err)
	}
}

// A corrupt checkpoint is named with what is wrong in it, not only "no
// complete checkpoint".
func TestCorruptCheckpointSaysWhy(t *testing.T) {
	dir, _ := checkpointedRun(t, 4, 2)
	os.WriteFile(filepath.Join(dir, "checkpoint", "state.json"), []byte(`{"iter": "x"}`), 0o644)
	_, err := Resume(dir)
	if err == nil || !strings.Contains(err.Error(), "checkpoint/ is incomplete") || !strings.Contains(err.Error(), "state.json") {
		t.Errorf("%v", err)
	}
}

// Absurd state values are refused on resume, each naming its field: they
// were taken as given (a step of 1e308, iteration 0 with the state of
// iteration 2, a NaN chain, a negative Adam moment).
func TestResumeRefusesAbsurdState(t *testing.T) {
	base, _ := checkpointedRun(t, 4, 2)
	state, _ := os.ReadFile(filepath.Join(base, "checkpoint", "state.json"))
	var st map[string]any
	json.Unmarshal(state, &st)
	edit := func(k string, v any) []byte {
		m := map[string]any{}
		for a, b := range st {
			m[a] = b
		}
		m[k] = v
		if v == "delete" {
			delete(m, k)
		}
		b, _ := json.Marshal(m)
		return b
	}
	for _, c := range []struct {
		name  string
		state []byte
		want  string
	}{
		{"huge step", edit("step_size", 1e308), `field "step_size" is 1e+308`},
		{"negative step", edit("step_size", -1), `field "step_size" is -1`},
		{"null iter", edit("iter", nil), `field "iter" is missing or null`},
		{"iter 0", edit("iter", 0), "holds an evaluation at iteration 2"},
		{"unknown key", edit("extra", 1), `unknown field "extra"`},
	} {
		dir := filepath.Join(t.TempDir(), "run")
		copyDir(t, base, dir)
		os.WriteFile(filepath.Join(dir, "checkpoint", "state.json"), c.state, 0o644)
		resign(t, dir) // the readers' own checks (see wantResumeError)
		if _, err := Resume(dir); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
}

// crashedRun is a run of algorithm alg and total iterations in a new
// folder, checkpointed at iteration 4, stepped to 7 and crashed at point
// of its next checkpoint.
func crashedRun(t *testing.T, alg algorithms.Algorithm, total int, point string) (string, *Run) {
	t.Helper()
	dir := t.TempDir()
	r := smallRun(t, alg, total, dir)
	stepN(t, r, 4)
	if err := r.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	stepN(t, r, 3)
	crashAt(t, point)
	if err := r.Checkpoint(); !errors.Is(err, errCrash) {
		t.Fatalf("Checkpoint: %v, want the simulated crash", err)
	}
	crashHook = nil
	return dir, r
}

// checkpointAndResume checkpoints r in dir, wants a clean folder and a
// resume at iteration want, and returns the resumed run.
func checkpointAndResume(t *testing.T, r *Run, dir string, want int) *Run {
	t.Helper()
	if err := r.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	wantOnly(t, dir, "checkpoint")
	resumed, err := Resume(dir)
	if err != nil {
		t.Fatal(err)
	}
	if resumed.Trainer.Iter != want {
		t.Fatalf("resumed at iteration %d, want %d", resumed.Trainer.Iter, want)
	}
	return resumed
}

// checkpointedRun is a flowMC-EBM run of iters iterations in a new
// folder, stepped steps times (each evaluated) and checkpointed.
func checkpointedRun(t *testing.T, iters, steps int) (string, *Run) {
	t.Helper()
	dir := t.TempDir()
	r := smallRun(t, algorithms.FlowMC, iters, dir)
	stepN(t, r, steps)
	if err := r.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	return dir, r
}

// crashThenRemove builds a run checkpointed at iteration 2, steps it once,
// crashes its next checkpoint at point and removes the file rel of the
// run folder; it returns the folder.
func crashThenRemove(t *testing.T, build func(*testing.T) (string, *Run), point, rel string) string {
	t.Helper()
	dir, r := build(t)
	stepN(t, r, 1)
	crashAt(t, point)
	if err := r.Checkpoint(); !errors.Is(err, errCrash) {
		t.Fatal(err)
	}
	crashHook = nil
	if err := os.Remove(filepath.Join(dir, rel)); err != nil {
		t.Fatal(err)
	}
	return dir
}

func copyDir(t *testing.T, from, to string) {
	t.Helper()
	err := filepath.WalkDir(from, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(to, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(to, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// Absurd arrays in state.npz, a malformed random stream and a key given
// twice in state.json are refused on resume, each naming the member or
// field: a NaN or fractional data_order index panicked or was truncated,
// a NaN current EBM was blamed on training as a divergence.
func TestResumeRefusesAbsurdStateArrays(t *testing.T) {
	base, r := checkpointedRun(t, 4, 2)
	if r.Config.Train.AverageWindow == 0 {
		t.Fatal("the run does not average: ebm_current is not saved")
	}
	ck := filepath.Join(base, "checkpoint")
	setMember := func(dir, name string, edit func([]float64)) {
		arc, err := npz.ReadFile(filepath.Join(dir, "checkpoint", "state.npz"))
		if err != nil {
			t.Fatal(err)
		}
		arrays := map[string]*npy.Array{}
		for _, n := range arc.Names {
			a, err := arc.Get(n)
			if err != nil {
				t.Fatal(err)
			}
			arrays[n] = a
		}
		if arrays[name] == nil {
			arrays[name] = &npy.Array{Shape: []int{1}, Data: []float64{0}}
		}
		edit(arrays[name].Data)
		if err := npz.WriteFile(filepath.Join(dir, "checkpoint", "state.npz"), arrays, npy.Float64); err != nil {
			t.Fatal(err)
		}
	}
	state, err := os.ReadFile(filepath.Join(ck, "state.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		edit func(dir string)
		want string
	}{
		{"NaN order", func(dir string) { setMember(dir, "data_order", func(v []float64) { v[3] = math.NaN() }) }, `"data_order" holds NaN at index 3`},
		{"fractional order", func(dir string) { setMember(dir, "data_order", func(v []float64) { v[0] = 2.5 }) }, `"data_order" holds 2.5 at index 0, want a permutation`},
		{"repeated row", func(dir string) { setMember(dir, "data_order", func(v []float64) { v[1] = v[0] }) }, "each row once"},
		{"NaN current EBM", func(dir string) { setMember(dir, "ebm_current", func(v []float64) { v[0] = math.NaN() }) }, `"ebm_current" holds NaN at index 0`},
		{"extra member", func(dir string) { setMember(dir, "zz", func([]float64) {}) }, `state.npz holds the member "zz"`},
		{"bad base64", func(dir string) {
			var m map[string]any
			json.Unmarshal(state, &m)
			m["rng"].(map[string]any)["bank"] = "@@@"
			b, _ := json.Marshal(m)
			os.WriteFile(filepath.Join(dir, "checkpoint", "state.json"), b, 0o644)
		}, `field "rng.bank": illegal base64`},
		{"a stream missing", func(dir string) { // probe 18: said "invalid PCG encoding"
			var m map[string]any
			json.Unmarshal(state, &m)
			delete(m["rng"].(map[string]any), "bank")
			b, _ := json.Marshal(m)
			os.WriteFile(filepath.Join(dir, "checkpoint", "state.json"), b, 0o644)
		}, `field "rng.bank" is missing`},
		{"an unknown stream", func(dir string) { // probe 19: accepted unread
			var m map[string]any
			json.Unmarshal(state, &m)
			m["rng"].(map[string]any)["zzz"] = "AAAA"
			b, _ := json.Marshal(m)
			os.WriteFile(filepath.Join(dir, "checkpoint", "state.json"), b, 0o644)
		}, `field "rng.zzz" names no random stream of this run`},
		{"key twice", func(dir string) {
			s := strings.Replace(string(state), `"iter": 2`, `"iter": 2, "iter": 1`, 1)
			os.WriteFile(filepath.Join(dir, "checkpoint", "state.json"), []byte(s), 0o644)
		}, `field "iter" given twice`},
	} {
		dir := filepath.Join(t.TempDir(), "run")
		copyDir(t, base, dir)
		c.edit(dir)
		resign(t, dir)
		if _, err := Resume(dir); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
}

// A new run's first checkpoint never promotes the checkpoint of a run it
// replaces: killed while writing config.json after its checkpoint.new/
// was complete, then started again and killed in its own first
// checkpoint, the folder held the first run's checkpoint/ without a
// config.json, which neither --resume nor a fresh start could use.
func TestFirstCheckpointDropsReplacedRunsCheckpoint(t *testing.T) {
	dir := t.TempDir()
	r := smallRun(t, algorithms.FlowMC, 12, dir)
	stepN(t, r, 3)
	crashAt(t, "complete")
	if err := r.Checkpoint(); !errors.Is(err, errCrash) {
		t.Fatalf("Checkpoint: %v, want the simulated crash", err)
	}
	os.Remove(filepath.Join(dir, "config.json")) // the kill came during its rename
	wantOnly(t, dir, "checkpoint.new")
	r = smallRun(t, algorithms.FlowMC, 12, dir)
	stepN(t, r, 2)
	crashAt(t, "models")
	if err := r.Checkpoint(); !errors.Is(err, errCrash) {
		t.Fatalf("Checkpoint: %v, want the simulated crash", err)
	}
	if ck, err := LatestCheckpoint(dir); err == nil {
		t.Fatalf("the second run left %s, a complete checkpoint that is not its own", ck)
	}
	crashHook = nil
	r = smallRun(t, algorithms.FlowMC, 12, dir)
	stepN(t, r, 2)
	if err := r.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	if resumed, err := Resume(dir); err != nil || resumed.Trainer.Iter != 2 {
		t.Fatalf("Resume: %v, want the third run at iteration 2", err)
	}
}

// A run resumed from its final checkpoint trains nothing but completes
// what a kill after that checkpoint left undone: metrics.csv is written
// again and the density grid is the final model's (it was left empty, and
// density.png blank).
func TestResumeFinishedRunCompletesOutputs(t *testing.T) {
	dir := t.TempDir()
	r := smallRun(t, algorithms.FlowMC, 4, dir)
	if err := r.Train(nil); err != nil {
		t.Fatal(err)
	}
	metrics := filepath.Join(dir, "metrics.csv")
	want, err := os.ReadFile(metrics)
	if err != nil {
		t.Fatal(err)
	}
	os.Remove(metrics)
	resumed, err := Resume(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := resumed.Train(nil); err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(metrics); err != nil || !bytes.Equal(got, want) {
		t.Errorf("metrics.csv after resuming the finished run: %v, equal to the original: %v", err, bytes.Equal(got, want))
	}
	if !slices.Equal(resumed.Grid().LogDensity, r.Grid().LogDensity) {
		t.Error("the resumed run's density grid differs from the final model's")
	}
}

// A checkpoint/ whose evaluations fall short of window.json's count is
// incomplete: the run resumes from checkpoint.old/ rather than deleting it
// and failing.
func TestShortEvalsFallBackToOldCheckpoint(t *testing.T) {
	dir := t.TempDir()
	r := smallRun(t, algorithms.FlowMC, 12, dir)
	stepN(t, r, 2) // evaluated at iterations 1 and 2
	if err := r.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	copyDir(t, filepath.Join(dir, "checkpoint"), filepath.Join(dir, "checkpoint.old"))
	stepN(t, r, 2)
	copyDir(t, filepath.Join(dir, "checkpoint.old"), filepath.Join(dir, "checkpoint.keep"))
	if err := r.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	os.Rename(filepath.Join(dir, "checkpoint.keep"), filepath.Join(dir, "checkpoint.old"))
	evals := filepath.Join(dir, "checkpoint", "evals.csv")
	b, _ := os.ReadFile(evals)
	lines := strings.SplitAfter(string(b), "\n")
	os.WriteFile(evals, []byte(strings.Join(lines[:2], "")), 0o644) // one of two evaluations
	// Finished and damaged since, checkpoint/ is named and kept (round
	// 131 B2); moved out, as the refusal says, the run goes on from
	// checkpoint.old/.
	if _, err := Resume(dir); !errors.As(err, new(*OutOfOrderError)) || !strings.Contains(err.Error(), "evals.csv") {
		t.Fatalf("Resume: %v, want checkpoint/'s evals.csv named", err)
	}
	if err := os.Rename(filepath.Join(dir, "checkpoint"), filepath.Join(t.TempDir(), "kept")); err != nil {
		t.Fatal(err)
	}
	resumed, err := Resume(dir)
	if err != nil {
		t.Fatalf("Resume: %v, want checkpoint.old/", err)
	}
	if resumed.Trainer.Iter != 2 || len(resumed.Evals) != 2 {
		t.Errorf("resumed at iteration %d with %d evaluations, want checkpoint.old's 2 and 2", resumed.Trainer.Iter, len(resumed.Evals))
	}
}

// A checkpoint.new/ of another run (another configuration) is never
// promoted over the run's own checkpoint: a failed resume had replaced the
// run's checkpoint with it.
func TestForeignCheckpointNewIgnored(t *testing.T) {
	dir, _ := checkpointedRun(t, 12, 2)
	other := t.TempDir()
	r := smallRun(t, algorithms.FlowMC, 8, other) // another length: another configuration
	stepN(t, r, 3)
	if err := r.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	copyDir(t, filepath.Join(other, "checkpoint"), filepath.Join(dir, "checkpoint.new"))
	resumed, err := Resume(dir)
	if err != nil {
		t.Fatalf("Resume: %v, want the run's own checkpoint", err)
	}
	if resumed.Trainer.Iter != 2 {
		t.Errorf("resumed at iteration %d, want the run's own 2", resumed.Trainer.Iter)
	}
}

// A checkpoint whose writing really fails (config.json cannot be
// replaced; a full disk is the same) leaves no half-written folder and no
// complete checkpoint.new/ beside a missing config.json (resume said the
// run had stopped before its first checkpoint); written again once the
// cause is gone, it resumes.
func TestFailedCheckpointWriteLeavesNoMess(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	r := smallRun(t, algorithms.FlowMC, 8, dir)
	stepN(t, r, 2)
	os.MkdirAll(filepath.Join(dir, "config.json", "x"), 0o755) // a folder in its place
	if err := r.Checkpoint(); err == nil || !strings.Contains(err.Error(), "config.json") {
		t.Fatalf("Checkpoint: %v, want an error naming config.json", err)
	}
	wantOnly(t, dir, "config.json")
	os.RemoveAll(filepath.Join(dir, "config.json"))
	if err := r.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	if _, err := Resume(dir); err != nil {
		t.Fatal(err)
	}
}

// A damaged checkpoint/ beside a complete checkpoint.old/ resumes from the
// latter, and the run's notes say so (it was silent).
func TestResumeFallbackIsNoted(t *testing.T) {
	dir := checkpointAt(t, 12, 2, 4, true)
	copyDir(t, filepath.Join(dir, checkpointName), filepath.Join(dir, checkpointName+oldSuffix))
	spec := filepath.Join(dir, checkpointName, "spec.json")
	b, _ := os.ReadFile(spec)
	os.WriteFile(spec, append(b, ' '), 0o644)
	r, err := Resume(dir)
	if err != nil {
		t.Fatal(err)
	}
	if notes := strings.Join(r.Notes, "\n"); !strings.Contains(notes, "using the previous checkpoint, checkpoint.old") {
		t.Errorf("notes %q", notes)
	}
}

// A reader of a run being trained (energy, sample, convert, compare on the
// run folder) holds its checkpoint folders still: one that starts while a
// replacement is between its renames waits for the end of it and then
// reads the new checkpoint whole (probe 18: 24 of 897 energy --model RUN
// during training failed, telling the user to restore a healthy run).
func TestReaderWaitsForCheckpointReplacement(t *testing.T) {
	dir := t.TempDir()
	r := smallRun(t, algorithms.FlowMC, 12, dir)
	stepN(t, r, 4)
	if err := r.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	stepN(t, r, 3)
	type result struct {
		ck   string
		iter int
		err  error
	}
	done := make(chan result, 1)
	blocked := false
	crashHook = func(p string) error {
		if p != "moved-old" { // checkpoint/ renamed, checkpoint.new/ not yet
			return nil
		}
		go func() {
			var res result
			res.err = ReadLatest(dir, func(ck string) error {
				res.ck = ck
				var st struct {
					Iter int `json:"iter"`
				}
				b, err := os.ReadFile(filepath.Join(ck, "state.json"))
				if err == nil {
					err = json.Unmarshal(b, &st)
				}
				res.iter = st.Iter
				return err
			})
			done <- res
		}()
		select {
		case <-done:
		case <-time.After(300 * time.Millisecond):
			blocked = true
		}
		return nil
	}
	t.Cleanup(func() { crashHook = nil })
	if err := r.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	crashHook = nil
	if !blocked {
		t.Fatal("a reader ran in the middle of a checkpoint replacement, want it to wait for the end of it")
	}
	res := <-done
	if res.err != nil || res.ck != filepath.Join(dir, "checkpoint") || res.iter != 7 {
		t.Errorf("the waiting reader read %s (iteration %d, %v), want the new checkpoint/ at iteration 7", res.ck, res.iter, res.err)
	}
}

// Readers looping over a run while it checkpoints at every iteration all
// read a whole checkpoint (its manifest matches, its models and evaluations
// load).
func TestReadersDuringTraining(t *testing.T) {
	dir := t.TempDir()
	cfg := smallConfig(t, algorithms.FlowMC, 40)
	cfg.CheckpointEvery, cfg.EvalEvery = 1, 1
	r, err := NewRun(cfg, dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	trained := make(chan error, 1)
	go func() { trained <- r.Train(nil) }()
	reads, failures, failed := 0, 0, []string{}
	for running := true; running; reads++ {
		select {
		case err := <-trained:
			if err != nil {
				t.Fatal(err)
			}
			running = false
		default:
		}
		err := ReadLatest(dir, func(ck string) error { return checkComplete(ck, true) })
		if err != nil {
			if failures++; len(failed) < 3 {
				failed = append(failed, err.Error())
			}
		}
	}
	if failures > 0 {
		t.Errorf("%d of %d reads during training failed, e.g. %q", failures, reads, failed)
	}
}

// A reader that holds the lock for longer than writerPatience (a process
// stopped with Ctrl-Z in the middle of its read) does not stall the
// training for as long: the replacement goes on without it (probe 19: the
// trainer, and its Ctrl-C, waited until the reader went).
func TestCheckpointDoesNotWaitForeverForAReader(t *testing.T) {
	dir, r := checkpointedRun(t, 12, 2)
	defer func(p, n time.Duration) { writerPatience, waitingNote = p, n }(writerPatience, waitingNote)
	writerPatience, waitingNote = 300*time.Millisecond, 100*time.Millisecond
	release, _, err := holdFolders(dir, false, wait{patience: time.Second}) // the stopped reader
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	var said []string
	r.Waiting = func(msg string) { said = append(said, msg) }
	for k := 0; k < 2; k++ {
		stepN(t, r, 2)
		start := time.Now()
		done := make(chan error, 1)
		go func() { done <- r.Checkpoint() }()
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(20 * time.Second):
			t.Fatal("the checkpoint waited 20 s for a reader that holds the lock, want writerPatience (300 ms)")
		}
		// Once a reader has outlasted the patience, the next checkpoint
		// waits only stuckPatience (probe 19: 2 × 20 s per checkpoint):
		// it says no "waiting up to" again (told after waitingNote of a
		// wait). Its time is not asserted: writing a checkpoint on a
		// loaded machine took 335 ms, more than the 300 ms patience.
		if waits := strings.Count(strings.Join(said, "\n"), "waiting up to"); k == 1 && waits != 1 {
			t.Errorf("the second checkpoint (%v) waited again for the same stopped reader: told %q", time.Since(start), said)
		}
	}
	if latest, err := LatestCheckpoint(dir); err != nil || latest != filepath.Join(dir, "checkpoint") {
		t.Errorf("after the replacement: %s, %v", latest, err)
	}
	if msgs := strings.Join(said, "\n"); !strings.Contains(msgs, "waiting up to") || !strings.Contains(msgs, "replaced without waiting for it") {
		t.Errorf("told %q, want the wait and the going on", said)
	}
	// A reader gives up on a writer that holds the lock, with a message.
	defer func(p time.Duration) { readerPatience = p }(readerPatience)
	readerPatience = 200 * time.Millisecond
	release()
	hold, _, err := holdFolders(dir, true, wait{patience: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer hold()
	if err := ReadRun(dir, func() error { return nil }); err == nil || !strings.Contains(err.Error(), "another process has held its checkpoint folders for") {
		t.Errorf("a reader behind a stuck writer: %v", err)
	}
}

// Readers that follow one another with overlapping reads do not starve a
// checkpoint replacement (probe 20: six reader loops slowed training
// tenfold; three overlapping 0.3 s readers stopped it for 12 s and were
// taken for a stuck one): a waiting writer closes the gate to new readers.
func TestOverlappingReadersDoNotStarveTheTrainer(t *testing.T) {
	dir, r := checkpointedRun(t, 12, 2)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for k := 0; k < 4; k++ {
		wg.Add(1)
		go func(k int) {
			defer wg.Done()
			time.Sleep(time.Duration(k) * 40 * time.Millisecond) // reads overlap: the folder is never free
			for {
				select {
				case <-stop:
					return
				default:
				}
				ReadRun(dir, func() error { time.Sleep(150 * time.Millisecond); return nil })
			}
		}(k)
	}
	defer func() { close(stop); wg.Wait() }()
	time.Sleep(100 * time.Millisecond)
	for k := 0; k < 3; k++ {
		stepN(t, r, 1)
		start := time.Now()
		if err := r.Checkpoint(); err != nil {
			t.Fatal(err)
		}
		if took := time.Since(start); took > 5*time.Second || r.readerStuck {
			t.Fatalf("checkpoint %d took %v with overlapping readers (stuck reader assumed: %v), want well under writerPatience", k, took, r.readerStuck)
		}
	}
}

// An interrupted run (Ctrl-C) waits at most interruptedPatience for a
// reader that holds the lock before writing its checkpoint (probe 20: the
// interrupt took effect only after the 20 s patience).
func TestInterruptDoesNotWaitOutThePatience(t *testing.T) {
	dir, r := checkpointedRun(t, 12, 2)
	// Probe 25: interrupted just after a checkpoint, the run does not
	// write that checkpoint again.
	before, err := os.Stat(filepath.Join(dir, "checkpoint"))
	if err != nil {
		t.Fatal(err)
	}
	done, stop := context.WithCancel(context.Background())
	stop()
	if err := r.TrainContext(done, nil); !errors.Is(err, algorithms.ErrInterrupted) {
		t.Fatalf("%v, want the interruption", err)
	}
	if after, err := os.Stat(filepath.Join(dir, "checkpoint")); err != nil || !os.SameFile(before, after) {
		t.Errorf("the checkpoint of iteration 2 was written again (%v)", err)
	}
	stepN(t, r, 1)                                                          // a checkpoint is due at the interrupt
	release, _, err := holdFolders(dir, false, wait{patience: time.Second}) // a stopped reader
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var said []string
	r.Waiting = func(msg string) { said = append(said, msg) }
	start := time.Now()
	if err := r.TrainContext(ctx, nil); !errors.Is(err, algorithms.ErrInterrupted) {
		t.Fatalf("%v, want the interruption", err)
	}
	if took := time.Since(start); took > writerPatience/2 {
		t.Errorf("the interrupted run took %v to write its checkpoint, want about %v", took, interruptedPatience)
	}
	// Probe 24: the note blamed a reader stopped with Ctrl-Z for a wait
	// that the interrupt cut short.
	if msgs := strings.Join(said, "\n"); strings.Count(msgs, "the interrupt ended, after") != 1 || strings.Contains(msgs, "Ctrl-Z") {
		t.Errorf("told %q, want the interrupt named, once, as what ended the wait", said)
	}
	// Probe 25: the run's later writes waited 1 s each again, each with
	// the note.
	if !r.readerStuck {
		t.Error("the reader that the interrupt stopped waiting for is not remembered")
	}
}

// A FIFO in RUN/checkpoint's place does not block the lock's open for ever
// (probe 21: every reader of the run hung, and train --resume ignored
// SIGTERM): the readers get to say what is wrong.
func TestLockOpensNoFIFO(t *testing.T) {
	dir := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(dir, "checkpoint"), 0o644); err != nil {
		t.Skip(err)
	}
	done := make(chan error, 1)
	go func() { done <- ReadLatest(dir, func(string) error { return nil }) }()
	select {
	case err := <-done:
		if err == nil {
			t.Error("a FIFO as checkpoint/ read as a checkpoint")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("ReadLatest blocked on a FIFO as checkpoint/")
	}
}

// Probe 22: RUN/checkpoint as a link to the run folder made a writer wait
// its whole patience for its own lock (the gate and the folder were one);
// a resume with nothing to rename waited 20 s for a stopped reader.
func TestLockGateIsARealFolder(t *testing.T) {
	dir := t.TempDir()
	if err := os.Symlink(".", filepath.Join(dir, "checkpoint")); err != nil {
		t.Skip(err)
	}
	start := time.Now()
	release, timedOut, err := holdFolders(dir, true, wait{patience: 3 * time.Second})
	if err != nil || timedOut || time.Since(start) > time.Second {
		t.Errorf("a link to the run folder as the gate: %v, timed out %v, after %v", err, timedOut, time.Since(start))
	}
	if release != nil {
		release()
	}

	run, _ := checkpointedRun(t, 12, 2)
	hold, _, err := holdFolders(run, false, wait{patience: time.Second}) // a stopped reader
	if err != nil {
		t.Fatal(err)
	}
	defer hold()
	start = time.Now()
	if _, err := Resume(run); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > writerPatience/2 {
		t.Errorf("resume with nothing to recover took %v beside a stopped reader", took)
	}
}

// Probe 23: a resume that finishes a replacement a crash interrupted
// (checkpoint.new/ left complete between the two renames) waited 20 s for
// a stopped reader, silent and deaf to Ctrl-C, and the first checkpoint
// then 20 s more. It now waits as a checkpoint does: told, the stuck
// reader remembered; an interrupt ends the wait and renames nothing under
// the reader (probe 24: it did, and blamed a stopped reader).
func TestResumeRecoveryWaitsAsACheckpointDoes(t *testing.T) {
	dir, r := checkpointedRun(t, 12, 2)
	stepN(t, r, 2)
	crashAt(t, "moved-old")
	if err := r.Checkpoint(); !errors.Is(err, errCrash) {
		t.Fatalf("%v, want the simulated crash", err)
	}
	crashHook = nil
	wantOnly(t, dir, "checkpoint.new", "checkpoint.old")
	hold, _, err := holdFolders(dir, false, wait{patience: time.Second}) // a stopped reader
	if err != nil {
		t.Fatal(err)
	}
	defer hold()
	defer func(n, p time.Duration) { waitingNote, writerPatience = n, p }(waitingNote, writerPatience)
	waitingNote = 100 * time.Millisecond

	ctx, cancel := context.WithCancel(context.Background())
	var said []string
	opt := ResumeOptions{Context: ctx, Waiting: func(msg string) {
		said = append(said, msg)
		cancel() // Ctrl-C once told
	}}
	start := time.Now()
	if _, err := ResumeWith(dir, opt); !errors.Is(err, algorithms.ErrInterrupted) || !strings.Contains(err.Error(), "its folders are left as they are") {
		t.Errorf("resume interrupted during its wait: %v, want the interruption", err)
	}
	if took := time.Since(start); took > writerPatience/2 {
		t.Errorf("resume interrupted during its wait took %v, want about %v", took, waitingNote+interruptedPatience)
	}
	if msgs := strings.Join(said, "\n"); !strings.Contains(msgs, "waiting up to") || strings.Contains(msgs, "stopped with Ctrl-Z") {
		t.Errorf("told %q, want the wait, and no stopped reader blamed", said)
	}
	wantOnly(t, dir, "checkpoint.new", "checkpoint.old")

	writerPatience, said = 300*time.Millisecond, nil
	resumed, err := ResumeWith(dir, ResumeOptions{Waiting: func(msg string) { said = append(said, msg) }})
	if err != nil {
		t.Fatal(err)
	}
	if msgs := strings.Join(said, "\n"); !strings.Contains(msgs, "waiting up to") || !strings.Contains(msgs, "replaced without waiting for it") {
		t.Errorf("told %q, want the wait and the going on", said)
	}
	if resumed.Trainer.Iter != 4 || !resumed.readerStuck {
		t.Errorf("resumed at iteration %d (want 4), stuck reader remembered: %v", resumed.Trainer.Iter, resumed.readerStuck)
	}
	wantOnly(t, dir, "checkpoint")
	// The first checkpoint does not wait for the same reader again.
	writerPatience = 20 * time.Second
	start = time.Now()
	stepN(t, resumed, 1)
	if err := resumed.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > writerPatience/2 {
		t.Errorf("the first checkpoint after the resume took %v beside the same stopped reader", took)
	}
}

// Probe 26: a reader whose checkpoint a trainer replaced under it (after
// waiting writerPatience for it) was told the checkpoint was incomplete,
// to restore it or start a new run; it is told what happened.
func TestReaderToldOfReplacementUnderIt(t *testing.T) {
	dir, r := checkpointedRun(t, 12, 2)
	defer func(p time.Duration) { writerPatience = p }(writerPatience)
	writerPatience = 100 * time.Millisecond
	failed := errors.New("checkpoint/ is incomplete (…): restore it, or start a new run")
	err := ReadRun(dir, func() error { return failed })
	if err != failed {
		t.Errorf("a failed read with nothing replaced: %v, want its own error", err)
	}
	err = ReadRun(dir, func() error {
		stepN(t, r, 1)
		if err := r.Checkpoint(); err != nil { // goes on without this stopped reader
			t.Error(err)
		}
		return failed
	})
	if err == nil || !strings.Contains(err.Error(), "the run replaced its checkpoint while this process was reading it") || strings.Contains(err.Error(), "start a new run") {
		t.Errorf("a read under a replacement: %v", err)
	}
}
