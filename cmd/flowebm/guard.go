package main

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/signal"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/flowebm/flowebm/algorithms/config"
	"github.com/flowebm/flowebm/algorithms/training"
	"github.com/flowebm/flowebm/internal/pathcheck"
	"github.com/flowebm/flowebm/io/npz"
	"github.com/flowebm/flowebm/io/safefile"
)

// maxTextBytes bounds the small text files flowebm writes and reads back
// (error.txt, a lock's holder): more is not one of them.
const maxTextBytes = 1 << 20

// checkOutput checks, before any work, that the output file out of flag
// can be written: its folder exists, it is not a folder itself, and it is
// none of the inputs and inside no input folder (a model or run folder):
// a command never overwrites what it reads.
func checkOutput(flag, out string, inputs ...string) error {
	if out == "" {
		return nil
	}
	if fi, err := os.Stat(out); err == nil && fi.IsDir() {
		for _, in := range inputs {
			switch { // probe 59: "give a file name in it" was then refused
			case in == "":
			case sameFile(out, in):
				return fmt.Errorf("%s %s is the input folder %s: give a file name outside it", flag, out, in)
			case within(out, in):
				return fmt.Errorf("%s %s is a folder inside the input folder %s: give a file name outside it", flag, out, in)
			}
		}
		return fmt.Errorf("%s %s is a folder: give a file name in it", flag, out)
	}
	if err := pathcheck.DotDot(out); err != nil {
		return fmt.Errorf("%s %s: %w", flag, out, err)
	}
	if strings.HasSuffix(out, string(filepath.Separator)) { // probes 35, 36: "the folder s.npy does not exist"
		return fmt.Errorf("%s %s ends in %c, which names a folder, not a file: give a file name", flag, out, filepath.Separator)
	}
	if last := lastPart(out); last == "." || last == ".." { // probe 37: "ends in /" for s.npy/.
		return fmt.Errorf("%s %s names a folder, not a file (its last part is %q): give a file name", flag, out, last)
	}
	dir := filepath.Dir(out)
	if fi, err := os.Stat(dir); err == nil && !fi.IsDir() {
		return fmt.Errorf("%s %s: %s is a file, not a folder", flag, out, dir)
	} else if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		if why := blockedFolder(dir); why != nil { // a file above it, a link to nothing, named (probe 34: "stat …: not a directory")
			return fmt.Errorf("%s %s: %w", flag, out, why)
		}
		return fmt.Errorf("%s %s: the folder %s does not exist", flag, out, dir)
	} else if err != nil { // probe 26: a folder it may not enter, a link loop, "did not exist"
		return fmt.Errorf("%s %s: the folder %s: %w", flag, out, dir, err)
	}
	if err := unix.Access(dir, unix.W_OK|unix.X_OK); err != nil { // probe 47: "open nox: permission denied", after the work
		return fmt.Errorf("%s %s: the folder %s cannot be written into (%v)", flag, out, dir, err)
	}
	for _, in := range inputs {
		if in != "" && sameFile(out, in) {
			return fmt.Errorf("%s %s is also an input (%s): write the output elsewhere", flag, out, in)
		}
		if run, file := runDataFile(in, out); file != "" { // round 127 B3: a model run's data replaced with --force, the run then refused by plot and --resume
			return fmt.Errorf("%s %s is %s of %s, an input of this command: the run's plot and --resume read it (and check its SHA-256); write the output elsewhere", flag, out, file, run)
		}
		if fi, err := os.Stat(in); err == nil && fi.IsDir() && within(dir, in) {
			return fmt.Errorf("%s %s is inside the input folder %s (a model or run): write the output elsewhere", flag, out, in)
		}
	}
	if run := inRunCheckpoint(dir); run != "" {
		return fmt.Errorf("%s %s is inside the checkpoint folders of the run %s, whose next checkpoint deletes it: write the output elsewhere", flag, out, run)
	}
	return checkNotInRun(flag, out, dir)
}

// runDataFile returns, where in is a training run, or a checkpoint
// folder (of a run, or a copy of one: round 128 A1), whose configuration
// names out as its data file or its mode centres, what in is and which of
// them out is; "" otherwise.
func runDataFile(in, out string) (what, which string) {
	if in == "" {
		return "", ""
	}
	var cfg config.Run
	var err error
	switch run := runOfCheckpoint(in); {
	case run != "":
		what = "the run " + run
		cfg, err = training.ReadRunConfig(run)
	case isTrainingRun(in):
		what = "the run " + in
		cfg, err = training.ReadRunConfig(in)
	case exists(filepath.Join(in, "run-config.json")):
		what = "the checkpoint " + in + " (its run-config.json)"
		cfg, err = config.ReadAsWritten(filepath.Join(in, "run-config.json"))
	default:
		return "", ""
	}
	if err != nil || cfg.Data == nil {
		return "", ""
	}
	switch {
	case cfg.Data.File != "" && sameFile(out, cfg.Data.File):
		return what, "the data file (data.file)"
	case cfg.Data.Modes != "" && sameFile(out, cfg.Data.Modes):
		return what, "the mode centres (data.modes)"
	}
	return "", ""
}

// checkNotInRun refuses an output out (in the existing folder dir) inside
// a training run, whose files are the run's own (another command's file
// there would mix with them, or replace one: compare and plot read them
// back), or inside a folder that another process holds locked.
func checkNotInRun(flag, out, dir string) error {
	if isTrainingRun(dir) {
		return fmt.Errorf("%s %s is in the training run %s: its files are the run's own; write the output elsewhere", flag, out, dir)
	}
	if run := trainingRunAbove(dir); run != "" {
		return fmt.Errorf("%s %s is inside the training run %s: its files are the run's own; write the output elsewhere", flag, out, run)
	}
	if lockedByOther(dir) {
		return fmt.Errorf("%s %s: %s: write the output elsewhere", flag, out, busyFolder(dir))
	}
	if err := checkHeldFile(flag, out, "write the output elsewhere"); err != nil {
		return err
	}
	if exists(filepath.Join(dir, "spec.json")) {
		return fmt.Errorf("%s %s is in the model folder %s (spec.json, weights.npz), which convert --force replaces whole: write the output elsewhere", flag, out, dir)
	}
	return nil
}

// writeOutput writes the output file out of flag atomically (removing the
// temporary files of an earlier, killed write first). Unless force, it
// never replaces a file: one that another process wrote since checkNew
// makes it fail and write nothing.
func writeOutput(flag, out string, force bool, write func(io.Writer) error) error {
	if err := safefile.RemoveStale(out); err != nil {
		return fmt.Errorf("%s %s: %w", flag, out, err)
	}
	err := safefile.WriteOptions(out, safefile.Options{NoReplace: !force}, func(w io.Writer) error {
		hook("output-writing")
		return write(w)
	})
	if ex := (*safefile.ExistsError)(nil); errors.As(err, &ex) {
		return existsMeanwhile(flag, out)
	}
	return err
}

// existsMeanwhile is the error of an output that was absent when the
// command started and exists when it is to be put in place.
func existsMeanwhile(flag, out string) error {
	return &takenError{flag: flag, path: out}
}

// takenError is existsMeanwhile's error: the output of flag, at path,
// was written by another process while the command ran.
type takenError struct{ flag, path string }

func (e *takenError) Error() string {
	return fmt.Sprintf("%s %s exists (another process wrote it meanwhile?): nothing was written; give another name, or replace it with --force", e.flag, e.path)
}

// testHook, if not nil, is called at points of the commands' writes:
// "output-writing" (an output's temporary file exists), "convert-written"
// (a new checkpoint complete beside the one it replaces),
// "convert-swapped" (in place, the old one beside it), "compare-drawn"
// (the figures drawn in their staging folder). Tests signal or kill the
// process there.
var testHook func(point string)

func hook(point string) {
	if testHook != nil {
		testHook(point)
	}
}

// ignoreBrokenPipes keeps a command running when what reads its output
// is gone: a write to it then fails instead of killing the process with
// SIGPIPE, before its cleanup (probe 34: train 2>&1 | tee, stopped by
// Ctrl-C, died as it said it was stopping, before writing its
// checkpoint; probe 35: sample | head left its lock file, diagnose | true
// the folders it made).
func ignoreBrokenPipes() { signal.Ignore(syscall.SIGPIPE) }

// removeTempsOnSignal makes SIGINT, SIGTERM and SIGHUP remove the
// temporary files and folders being written (safefile.Track) and exit
// with status 130, 143 or 129, saying so; stop undoes it.
func removeTempsOnSignal() (stop func()) { return removeTempsOnSignalNoting(nil) }

// removeTempsOnSignalNoting is removeTempsOnSignal whose message adds
// note's text (what stands and how to go on), when note is not nil.
func removeTempsOnSignalNoting(note func() string) (stop func()) {
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP) // SIGHUP: the terminal closed
	ignoreBrokenPipes()
	done, finished := make(chan struct{}), make(chan struct{})
	handle := func(s os.Signal) {
		safefile.RemoveTemps() // after a Hold under way (energy's pair of outputs)
		more := ""
		if note != nil {
			more = note()
		}
		fmt.Fprintf(os.Stderr, "flowebm: interrupted (%v): the partial files being written were removed; outputs already in place are complete%s\n", s, more)
		os.Exit(128 + int(s.(syscall.Signal))) // 130, 143, 129 as the shell reports them
	}
	go func() {
		select {
		case s := <-sigs:
			handle(s)
		case <-done:
			select {
			case s := <-sigs: // received before stop's signal.Stop
				handle(s)
			default:
			}
		}
		close(finished)
	}()
	// stop waits for the handler: one that took a signal exits the process
	// before the command's end can exit 0 (probe 35: once in 111, the
	// message said interrupted, the status was 0).
	return func() {
		signal.Stop(sigs)
		close(done)
		<-finished
	}
}

// placedNote is a signal message's note on the output path: written and
// the path once a new file is in place there (another file than the one
// there at the call: probe 31 saw mtimes of one second mislead), notYet
// before.
func placedNote(path, written, notYet string) func() string {
	before, _ := os.Stat(path) // nil if none
	return func() string {
		if fi, err := os.Stat(path); err == nil && (before == nil || !os.SameFile(before, fi)) {
			return "; " + written + path
		}
		return "; " + notYet
	}
}

// within reports whether the existing folder (or file) dir is folder or
// inside it: whether folder is dir or one of the folders above it, by
// identity (device and inode: probe 47, a bind mount of folder is folder
// under another path), symbolic links resolved however long their
// targets (resolvedPath, pathcheck.Walk).
func within(dir, folder string) bool {
	fi, err := os.Stat(folder)
	if err != nil || !exists(dir) {
		return false
	}
	in := false
	pathcheck.Walk(resolvedPath(dir), func(_, open string) bool {
		if a, err := os.Stat(open); err == nil && os.SameFile(a, fi) {
			in = true
		}
		return !in
	})
	return in
}

// sameFile reports whether a and b name the same file: the same inode
// when both exist, else the same absolute path.
func sameFile(a, b string) bool {
	if a == "" || b == "" { // a flag not given names no file (probe 34: the working folder)
		return false
	}
	fa, errA := os.Stat(a)
	fb, errB := os.Stat(b)
	if errA == nil && errB == nil {
		return os.SameFile(fa, fb)
	}
	pa, err1 := filepath.Abs(a)
	pb, err2 := filepath.Abs(b)
	return err1 == nil && err2 == nil && pa == pb
}

// isRun reports whether dir holds a training run or a checkpoint (what a
// new run or a conversion would replace). A checkpoint.new alone is not
// one: a run stopped before its first checkpoint was complete (config.json
// is written before a first checkpoint is put in place).
func isRun(dir string) bool {
	for _, f := range []string{"config.json", "spec.json", "checkpoint", "checkpoint.old", "metrics.csv"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err == nil {
			return true
		}
	}
	return false
}

// lockRun takes an exclusive lock on the run folder dir (creating it), so
// that two processes never train in one folder; the lock lasts until the
// process exits or release is called. A folder that lockRun made and that
// holds nothing but the lock at release (the command failed) is removed.
// The lock file names the command holding it (this process's subcommand).
func lockRun(dir string) (release func(), err error) {
	return lockRunAs(dir, commandName())
}

// folderGuards returns check, a check that the folder dir is still the
// one whose lock this process has just taken (dir/.lock is the same
// file), and anchor, which opens the folder, checks through the open
// folder that its .lock is the file locked, and returns a path naming
// that folder whatever happens to dir's path meanwhile (/proc/self/fd/N)
// and the release of it. A run checks before each write into its folder
// and writes its outputs through the anchor (training.Run's Guard and
// Anchor; probe 47: a link on dir's path re-pointed while it trained made
// it write into another run's folder, and a folder moved away was made
// again at its next checkpoint and trained in unlocked; probe 49:
// re-pointed while the figures were drawn, after the check).
func folderGuards(dir string, held os.FileInfo) (check func() error, anchor training.Anchor) {
	lock := filepath.Join(dir, ".lock")
	if held == nil { // no lock to compare with (its checks failed already)
		return func() error { return nil }, func() (string, func(), error) { return dir, func() {}, nil }
	}
	// The folder holding the lock, as it is now (probe 51: named when
	// the error was made, it was the folder a link led to then).
	at, _ := whereIs(held)
	if at == "" {
		at = resolvedPath(dir)
	}
	folder, _ := os.Stat(at)
	changed := func() error {
		now, deleted := whereIs(held)
		return &folderChangedError{dir: dir, at: at, now: now, here: resolvedPath(dir), deleted: deleted, folder: folder}
	}
	check = func() error {
		if now, err := os.Stat(lock); err == nil && os.SameFile(now, held) {
			return nil
		}
		return changed()
	}
	return check, anchorIn(dir, ".lock", held, changed)
}

// anchorIn is a training.Anchor for the folder dir, in which this
// process holds the lock file named lock (held): it opens dir, checks
// through the open folder that its lock is the file held, and returns
// /proc/self/fd/N, a path naming that folder whatever happens to dir's
// path meanwhile, or changed's error.
func anchorIn(dir, lock string, held os.FileInfo, changed func() error) training.Anchor {
	return anchorChecked(dir, func(fd int) bool {
		var st unix.Stat_t
		return unix.Fstatat(fd, lock, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && sameInode(&st, held)
	}, changed)
}

// folderAnchor is the folder dir reached through a descriptor opened on
// it, once that is found to be the folder want (as stat'd before); where
// it is not, changed gives the error.
func folderAnchor(dir string, want os.FileInfo, changed func() error) training.Anchor {
	return anchorChecked(dir, func(fd int) bool {
		var st unix.Stat_t
		return unix.Fstat(fd, &st) == nil && sameInode(&st, want)
	}, changed)
}

// anchorChecked opens the folder dir and returns /proc/self/fd/N for it
// once ok(N) holds, or changed's error. Without /proc (a chroot, a
// sandbox) the path is dir itself, just checked (probe 51: written into
// an empty /proc).
func anchorChecked(dir string, ok func(fd int) bool, changed func() error) training.Anchor {
	return func() (string, func(), error) {
		fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			return "", nil, changed()
		}
		release := func() { unix.Close(fd) }
		if !ok(fd) {
			release()
			return "", nil, changed()
		}
		hook("anchor-checked")
		if at := fmt.Sprintf("/proc/self/fd/%d", fd); sameFolder(at, fd) {
			return at, release, nil
		}
		return dir, release, nil
	}
}

// sameInode reports whether st is the file fi describes.
func sameInode(st *unix.Stat_t, fi os.FileInfo) bool {
	h, ok := fi.Sys().(*syscall.Stat_t)
	return ok && st.Dev == h.Dev && st.Ino == h.Ino
}

// linkTarget is path with its last part's symbolic links followed (at
// most 40, as the system does), as far as they lead; the folders above
// are left as given.
func linkTarget(path string) string {
	for range 40 {
		fi, err := os.Lstat(path)
		if err != nil || fi.Mode()&fs.ModeSymlink == 0 {
			return path
		}
		t, err := os.Readlink(path)
		if err != nil {
			return path
		}
		if !filepath.IsAbs(t) {
			t = filepath.Join(filepath.Dir(path), t)
		}
		path = t
	}
	return path
}

// sameFolder reports whether path leads to the folder open as fd.
func sameFolder(path string, fd int) bool {
	var a, b unix.Stat_t
	return unix.Stat(path, &a) == nil && unix.Fstat(fd, &b) == nil && a.Dev == b.Dev && a.Ino == b.Ino
}

// whereIs finds the lock file held among this process's open files and
// returns the folder it is in now, or deleted where the file was removed
// (with its folder, or alone); now is empty where it is not found.
func whereIs(held os.FileInfo) (now string, deleted bool) {
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return "", false
	}
	for _, e := range entries {
		link := "/proc/self/fd/" + e.Name()
		if fi, err := os.Stat(link); err != nil || !os.SameFile(fi, held) {
			continue
		}
		path, err := os.Readlink(link)
		if err != nil {
			return "", false
		}
		if gone, ok := strings.CutSuffix(path, " (deleted)"); ok {
			return filepath.Dir(gone), true
		}
		return filepath.Dir(path), false
	}
	return "", false
}

// folderChangedError stops a run whose folder is no longer the one it
// locked; at is the folder as resolved when it was locked, and folder
// its identity then; here is where dir's path leads now, and now where
// the folder locked is now (empty: unknown),
// deleted says that its lock was removed (with the folder, or alone), and
// noCheckpoint that the run had written none.
type folderChangedError struct {
	dir, at, now, here    string // here: where dir leads now
	folder                os.FileInfo
	deleted, noCheckpoint bool
}

func (e *folderChangedError) Error() string {
	lock := filepath.Join(e.dir, ".lock")
	switch {
	case e.deleted && e.lockAloneRemoved():
		return fmt.Sprintf("the lock %s of the run folder %s was removed while it trained (by another program?), so this process cannot keep others out: the run stopped without writing there. %s",
			filepath.Join(e.now, ".lock"), e.dir, e.next("Its last checkpoint is in that folder: continue it with flowebm train --resume "+shellQuote(e.now)))
	case e.deleted: // probe 50: "continue it there" of a folder deleted
		return fmt.Sprintf("the run folder %s was deleted while it trained (its lock %s went with it; a folder there now is another): the run stopped without writing there. %s", e.dir, lock, e.next("Its checkpoints went with it: start the run again"))
	case e.now != "" && e.now == e.here: // probe 51: said "moved" of a folder made unreadable, or mounted over
		return fmt.Sprintf("the run folder %s is still at its path, but %s there is no longer the file this process locked (the folder's permissions changed, or another folder was mounted over it): the run stopped without writing there. %s",
			e.dir, lock, e.next("Once the folder is as it was, continue it with flowebm train --resume "+shellQuote(e.dir)))
	case e.now != "":
		return fmt.Sprintf("the run folder %s is no longer the folder this process locked when it started (%s): %s is gone or is another file, so the folder was moved or replaced, or a link on its path now leads elsewhere; the run stopped without writing there. %s",
			e.dir, e.at, lock, e.next("Its last checkpoint is in the folder it locked, which is now "+e.now+": continue it there with flowebm train --resume "+shellQuote(e.now)))
	}
	return fmt.Sprintf("the run folder %s is no longer the folder this process locked when it started (%s): %s is gone or is another file, so the folder was moved or replaced, or a link on its path now leads elsewhere; the run stopped without writing there. %s",
		e.dir, e.at, lock, e.next("Its last checkpoint is in the folder it locked, wherever that is now: continue it there with flowebm train --resume FOLDER"))
}

// lockAloneRemoved reports whether the folder where the removed lock was
// is the run folder locked (its lock removed, the folder left), not one
// made again at its path (probe 51).
func (e *folderChangedError) lockAloneRemoved() bool {
	fi, err := os.Stat(e.now)
	return err == nil && e.folder != nil && os.SameFile(fi, e.folder)
}

// next is how to go on from a checkpoint (resume), or, where the run
// had written none, starting again.
func (e *folderChangedError) next(resume string) string {
	if e.noCheckpoint { // probe 49: --resume was advised where there was nothing to resume
		return "It had written no checkpoint: start it again"
	}
	return resume
}

// withoutCheckpoint is err, a folderChangedError saying that the run had
// written no checkpoint where it is one.
func withoutCheckpoint(err error) error {
	if ch := (*folderChangedError)(nil); errors.As(err, &ch) {
		c := *ch
		c.noCheckpoint = true
		return &c
	}
	return err
}

// lockingCommands are the subcommands that lock a folder or a file.
var lockingCommands = []string{"reproduce", "compare", "convert", "plot", "sample", "energy", "train", "diagnose"}

// commandName is the flowebm subcommand this process runs ("train" when
// it is not one, as in tests).
func commandName() string {
	if len(os.Args) > 1 && slices.Contains(lockingCommands, os.Args[1]) {
		return os.Args[1]
	}
	return "train"
}

// lockHolder is the command that the lock file path names, or "" when it
// names none: what another program wrote there is not repeated (probe 23:
// a megabyte of text and terminal escapes in the refusal).
func lockHolder(path string) string {
	text, _ := safefile.ReadFile(path, 64)
	if name := strings.TrimSpace(string(text)); slices.Contains(lockingCommands, name) {
		return name
	}
	return ""
}

// holderWords is " (flowebm CMD)" for the command that the lock file
// path names, or "".
func holderWords(path string) string { return holderPhrase(lockHolder(path)) }

// holderPhrase is " (flowebm CMD)" for a lock's holder CMD, "" for none.
func holderPhrase(holder string) string {
	if holder == "" {
		return ""
	}
	return " (flowebm " + holder + ")"
}

// mkdirAll is os.MkdirAll saying what stands in the way where there is
// something (see blockedFolder): MkdirAll says "mkdir …: file exists" of
// a link that loops or leads nowhere (probes 27–29).
func mkdirAll(dir string) error {
	err := os.MkdirAll(dir, 0o755)
	if err != nil {
		if why := blockedFolder(dir); why != nil {
			return why
		}
	}
	return err
}

// blockedFolder says why the folder dir cannot be made, or be one, where
// something on its path is in the way: a file ("X is a file, not a
// folder"), a link to nothing, a link that loops; nil otherwise.
func blockedFolder(dir string) error {
	for p := filepath.Clean(dir); ; p = filepath.Dir(p) {
		fi, err := os.Lstat(p)
		if err == nil {
			return blockingEntry(p, fi)
		}
		if !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR) && !errors.Is(err, syscall.ELOOP) { // up to the entry at fault
			return err // permission denied, …: said as is
		}
		if p == filepath.Dir(p) {
			return nil
		}
	}
}

// blockingEntry is what keeps the existing entry p (fi its Lstat) from
// being a folder, or nil if it is one.
func blockingEntry(p string, fi fs.FileInfo) error {
	if fi.Mode()&fs.ModeSymlink != 0 {
		target, _ := os.Readlink(p)
		followed, err := os.Stat(p)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return fmt.Errorf("%s is a symbolic link to %s, which does not exist: create that folder, or remove the link", p, target)
		case err != nil:
			return err // a link that loops: "too many levels of symbolic links"
		}
		fi = followed
	}
	if !fi.IsDir() {
		return fmt.Errorf("%s is a file, not a folder", p)
	}
	return nil
}

// lockRunAs is lockRun recording command as the lock's holder, which the
// folderBusyError of another process names.
func lockRunAs(dir, command string) (release func(), err error) {
	release, _, _, err = makeAndLock(dir, command, false)
	return release, err
}

// lockRunHeld is lockRunAs that also returns the lock file held, as
// locked (for folderGuards).
func lockRunHeld(dir, command string) (release func(), held os.FileInfo, err error) {
	release, _, held, err = makeAndLock(dir, command, false)
	return release, held, err
}

// lockOutputFolder is lockRunAs for a folder of outputs (figures, a
// converted checkpoint): a signal before keep is called (the outputs in
// place) removes the lock and the folders made, while they hold nothing
// else (probe 33: a signal between making and registering them left an
// empty folder, or one holding .lock; probe 34: removed whole, they took
// with them what other processes had put there).
func lockOutputFolder(dir, command string) (release, keep func(), err error) {
	release, keep, _, err = makeAndLock(dir, command, true)
	return release, keep, err
}

// lockOutputFolderHeld is lockOutputFolder that also returns the lock
// file held, as locked (for folderGuards).
func lockOutputFolderHeld(dir, command string) (release func(), held os.FileInfo, err error) {
	release, _, held, err = makeAndLock(dir, command, true)
	return release, held, err
}

// makeAndLock makes dir and locks it, registering what it made for a
// signal's cleanup when track; release removes a folder made that holds
// only the lock. held is the lock file, as locked.
func makeAndLock(dir, command string, track bool) (release, keep func(), held os.FileInfo, err error) {
	keep = func() {}
	var top, path string
	var f *os.File
	var created bool
	err = safefile.Hold(func() error { // a signal's cleanup waits: made, locked and registered as one step
		var undo func()
		var err error
		// Made again where the lock's last holder removed the folder (it
		// had made it) between our making and our locking (probe 36:
		// "open DIR/.lock: no such file or directory").
		for tries := 0; tries == 0 || errors.Is(err, fs.ErrNotExist) && tries < 5; tries++ {
			if top, undo, err = makeFolder(dir); err != nil {
				return &folderMakeError{dir: dir, err: err}
			}
			f, path, created, err = takeLock(dir, command)
		}
		if err != nil {
			undo() // the folders made, left empty
			return unwritableFolder(dir, command, err)
		}
		if held, err = f.Stat(); err != nil {
			f.Close()
			undo()
			return err
		}
		if track && (created || top != "") {
			keep = safefile.OnRemoveTemps(func() {
				if isHeldFile(f, path) {
					removeLoneLock(dir, path, top)
				}
			})
		}
		return nil
	})
	if err != nil {
		return nil, nil, nil, err
	}
	hook("lock-held")
	return func() {
		if (created || top != "") && isHeldFile(f, path) { // not another folder's, put in its place meanwhile (probe 48)
			removeLoneLock(dir, path, top)
		}
		keep()
		syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, keep, held, nil
}

// unwritableFolder is err, the failure to take dir's lock, said of the
// folder where it is read-only for this process (round 81 B4: "open
// …/.lock: read-only file system", without the command or a way on).
func unwritableFolder(dir, command string, err error) error {
	why := ""
	switch {
	case errors.Is(err, syscall.EROFS):
		why = "on a read-only file system"
	case errors.Is(err, fs.ErrPermission):
		why = "not writable by this user"
	default:
		return err
	}
	return fmt.Errorf("%s is %s (%w), and %s writes there (its lock first, then its outputs): copy the folder somewhere writable (cp -r %s COPY) and give the copy", dir, why, err, command, shellQuote(dir))
}

// folderMakeError is a folder of outputs that could not be made; flag,
// once known (namingFlag), names the option that gave it.
type folderMakeError struct {
	flag, dir string
	err       error
}

func (e *folderMakeError) Error() string {
	if e.flag == "" {
		return fmt.Sprintf("cannot make the folder %s: %v", e.dir, e.err)
	}
	return fmt.Sprintf("%s %s: cannot make this folder: %v", e.flag, e.dir, e.err)
}

func (e *folderMakeError) Unwrap() error { return e.err }

// namingFlag is err naming flag where it is a folder of outputs that
// could not be made (probe 48: "cannot make the folder ro/c: mkdir …"
// did not say which option gave it).
func namingFlag(flag string, err error) error {
	if m := (*folderMakeError)(nil); errors.As(err, &m) {
		named := *m
		named.flag = flag
		return &named
	}
	return err
}

// takeLock locks the folder dir with its file .lock (created says it was
// made), writing command into it as the holder.
func takeLock(dir, command string) (f *os.File, path string, created bool, err error) {
	hook("lock-taking")
	path = filepath.Join(dir, ".lock")
	for tries := 0; f == nil && err == nil; tries++ {
		if tries == 100 { // each try saw the lock file removed or replaced meanwhile
			return nil, "", false, fmt.Errorf("%s: %s was replaced 100 times as it was being locked: another program is removing it", dir, path)
		}
		f, created, err = lockOnce(dir, path)
	}
	if err != nil {
		return nil, "", false, err
	}
	if f.Truncate(0) == nil {
		f.WriteAt([]byte(command+"\n"), 0)
	}
	return f, path, created, nil
}

// foreignLock says, of another user's lock file path in dir that this
// user may read, whether a process holds it and, where none does and
// this user may remove it, to remove it; "" where it cannot be told.
func foreignLock(dir, path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	owner := "another user's"
	if fi, err := f.Stat(); err == nil {
		if st, ok := fi.Sys().(*syscall.Stat_t); ok {
			owner = fmt.Sprintf("user %d's", st.Uid)
		}
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB); err != nil {
		return fmt.Sprintf("the lock is %s, and a process holds it: wait for it to end, or give another folder", owner)
	}
	syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	if unix.Access(dir, unix.W_OK|unix.X_OK) != nil {
		return fmt.Sprintf("the lock is %s, and no process holds it: ask its owner to remove it, or give a folder of your own", owner)
	}
	return fmt.Sprintf("the lock is %s, and no process holds it (left by a command run as that user in this folder?): remove it (rm %s) and give the command again", owner, shellQuote(path))
}

// lockOnce opens and locks dir's lock file path; f is nil (and err nil)
// when the file locked is no longer path, removed by its holder between
// the open and the lock (probe 35: two commands then wrote one folder,
// one holding a deleted .lock): the caller tries again.
func lockOnce(dir, path string) (f *os.File, created bool, err error) {
	fi, statErr := os.Lstat(path)
	created = errors.Is(statErr, fs.ErrNotExist)
	if statErr == nil && !fi.Mode().IsRegular() {
		return nil, false, fmt.Errorf("%w: flowebm locks the folder %s with it and writes into it; remove it", safefile.Regular(path, fi), dir) // its kind named (probe 24: a FIFO was "a link or a folder")
	}
	// O_NOFOLLOW: a link put there meanwhile is not written through.
	f, err = os.OpenFile(path, os.O_CREATE|os.O_RDWR|syscall.O_NOFOLLOW, 0o644)
	if errors.Is(err, fs.ErrPermission) {
		what, next := "open its lock", "give a folder of your own"
		if created {
			what = "make its lock"
			if fi, e := os.Stat(dir); e == nil && ownedByMe(fi) { // round 118 B3: a cp -r of a read-only run, "give a folder of your own", copied again the same
				next = fmt.Sprintf("the folder is this user's but not writable (mode %#o): make it writable with chmod -R u+w %s", fi.Mode().Perm(), shellQuote(dir))
			}
		} else if fi, e := os.Lstat(path); e == nil && ownedByMe(fi) { // probe 49: said of the user's own folder
			next = fmt.Sprintf("the lock is this user's (mode %v): if no flowebm process works in the folder, remove it or make it readable and writable with chmod u+rw", fi.Mode().Perm())
			if errors.Is(syscall.Access(dir, 2), fs.ErrPermission) { // round 119 B4: the folder read-only too, its files next refused unexplained
				next = fmt.Sprintf("the lock and the folder are this user's but not writable: make them writable with chmod -R u+w %s", shellQuote(dir))
			}
		} else if why := foreignLock(dir, path); why != "" { // probe 50: another user's stale lock in this user's own folder
			next = why
		}
		return nil, false, fmt.Errorf("%s: this user may not %s %s (%v), which flowebm writes to lock the folder: %s", dir, what, path, err, next)
	}
	if err != nil {
		return nil, false, err
	}
	readableByAll(f)
	if err := checkLockFile(f, path); err != nil {
		f.Close()
		return nil, false, fmt.Errorf("%w: flowebm locks the folder %s with it and writes into it; remove it", err, dir)
	}
	hook("lock-opened")
	links := linkCount(f)
	hook("lock-counted")
	if err := flockPastChecks(f); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) && links > 1 { // probe 36: a copy made with cp -al shares it
			return nil, false, fmt.Errorf("%s: another flowebm process holds %s, which has %d hard links (a copy of the folder made with cp -al or rsync --link-dest shares it): it may be working in the copy; once no flowebm process works in %s, remove %s", dir, path, links, dir, path)
		}
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, false, folderBusyError{dir: dir, lock: path, holder: lockHolder(path)}
		}
		return nil, false, fmt.Errorf("%s: locking %s: %w", dir, path, err)
	}
	inPlace, err := settleLock(f, path)
	if err != nil { // probe 37: retried for ever, signals held off
		return nil, false, fmt.Errorf("%s has %d hard links (a copy of the folder made with cp -al or rsync --link-dest shares it) and cannot be replaced by the folder's own (%v): remove it, or give the command where it can", path, links, err)
	}
	if !inPlace {
		return nil, false, nil
	}
	return f, created, nil
}

// flockPastChecks takes the exclusive flock of the open lock file f
// without waiting for a holder, but past another process's check of it
// (lockedByOther holds a shared flock for a moment): EWOULDBLOCK is tried
// again for 200 ms before it stands (probe 43: train --resume was refused
// as "another flowebm process is training in this folder" while
// reproduce --plan checked the run).
func flockPastChecks(f *os.File) error {
	for tries := 0; ; tries++ {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if !errors.Is(err, syscall.EWOULDBLOCK) || tries == 40 {
			return err
		}
		hook("lock-busy")
		time.Sleep(5 * time.Millisecond)
	}
}

// settleLock finishes the taking of the lock file lock, whose flock f
// holds. A lock
// removed or replaced by its holder meanwhile is let go. A lock in place
// with other hard links, held by none, is a copy's (cp -al): it is
// removed, so that the next try makes one of its own, and the copy keeps
// the old one; err is why it could not be. Only the file in place is
// removed, compared under the flock, which no other process then holds
// (probe 43: a count of links read before the flock removed the lock that
// another process had just made in its place, and both held one). inPlace
// reports whether f is the lock now in place; f is closed otherwise.
func settleLock(f *os.File, lock string) (inPlace bool, err error) {
	held, errH := f.Stat()
	now, errN := os.Lstat(lock)
	if errH != nil || errN != nil || !os.SameFile(held, now) {
		f.Close()
		return false, nil
	}
	if nlink(held, nil) > 1 {
		err := os.Remove(lock)
		f.Close()
		return false, err
	}
	return true, nil
}

// checkLockFile refuses the lock file f (at path) unless it is a regular
// file (probe 35: a FIFO) and, where it has other hard links, holds a
// lock's text (nothing, or a flowebm command's name), as in a copy of a
// run made with cp -al or rsync --link-dest (probe 35). Writing the
// holder's name into a link of another file would overwrite it (probe 34:
// a .lock linked to an input turned it into "diagnose").
func checkLockFile(f *os.File, path string) error {
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return safefile.Regular(path, fi)
	}
	links := linkCount(f)
	if links <= 1 {
		return nil
	}
	text := make([]byte, 64)
	n, _ := f.ReadAt(text, 0)
	if name := strings.TrimSpace(string(text[:n])); slices.Contains(lockingCommands, name) {
		return nil
	}
	if n == 0 { // probe 36: a DONE marker linked as .lock; probe 37: it was said to hold other text
		return fmt.Errorf("%s has %d hard links and is empty: it is also another file, which a lock would write into", path, links)
	}
	return fmt.Errorf("%s has %d hard links and holds other text than a lock's (it is also another file)", path, links)
}

// linkCount is the number of names of the open file f (1 if unknown).
func linkCount(f *os.File) uint64 {
	fi, err := f.Stat()
	return nlink(fi, err)
}

// linkCountOf is the number of names of the file path, not following a
// link (1 if unknown).
func linkCountOf(path string) uint64 {
	fi, err := os.Lstat(path)
	return nlink(fi, err)
}

// nlink is the number of names of the file fi describes (1 if err, or
// unknown).
func nlink(fi fs.FileInfo, err error) uint64 {
	if err == nil {
		if st, ok := fi.Sys().(*syscall.Stat_t); ok {
			return uint64(st.Nlink)
		}
	}
	return 1
}

// lockFile locks the output file path (given as flag) against another
// flowebm process writing it, with a lock file .NAME.lock beside it that
// release removes. A lock file removed by its holder meanwhile is not
// held: the lock is taken again on the one now in place.
func lockFile(flag, path, command string) (release func(), err error) {
	release, _, err = lockFileAnchored(flag, path, command)
	return release, err
}

// lockFileAnchored is lockFile that also returns an anchor for the
// file's folder (anchorIn): the file written through it goes into the
// folder in which it was locked, or is refused where that folder is no
// longer at its path (probe 50: sample's folder swapped for another's
// mid-run, and its next checkpoint replaced that other run's).
func lockFileAnchored(flag, path, command string) (release func(), anchor training.Anchor, err error) {
	lock := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".lock")
	if err := safefile.NameFits(path); err != nil { // its staging name is longer than its lock's (probe 27: "1 bytes", then "10 bytes")
		return nil, nil, fmt.Errorf("%s %w", flag, err)
	}
	// Taken and registered for a signal's cleanup as one step (probe 34:
	// a signal left the lock file).
	var held os.FileInfo
	err = safefile.Hold(func() error {
		var err error
		release, held, err = takeFileLock(flag, path, lock, command)
		return err
	})
	if err != nil {
		return nil, nil, err
	}
	changed := func() error {
		now, deleted := whereIs(held)
		return &fileFolderChangedError{flag: flag, path: path, now: now, here: resolvedPath(filepath.Dir(path)), deleted: deleted}
	}
	return release, anchorIn(filepath.Dir(path), filepath.Base(lock), held, changed), nil
}

// removeHeldLock removes the lock file held, at lock or, where its folder
// was moved meanwhile, where it is now; never another file at lock
// (probe 50: a folder swapped in at the path lost nothing, but the moved
// folder kept a stale lock).
func removeHeldLock(lock string, held os.FileInfo) {
	if fi, err := os.Lstat(lock); err == nil && os.SameFile(fi, held) {
		os.Remove(lock)
		return
	}
	if now, deleted := whereIs(held); now != "" && !deleted {
		p := filepath.Join(now, filepath.Base(lock))
		if fi, err := os.Lstat(p); err == nil && os.SameFile(fi, held) {
			os.Remove(p)
		}
	}
}

// fileFolderChangedError stops a command whose output file's folder is
// no longer the one in which it locked the file (lockFileAnchored); now
// is where that folder is (empty: unknown), deleted says its lock was
// removed.
type fileFolderChangedError struct {
	flag, path, now, here string // here: where the file's folder path leads now
	deleted, noCheckpoint bool
	// extra is added to the resume advice (sample: --out NEW.npy where
	// --out was in the folder moved; probe 53).
	extra string
}

func (e *fileFolderChangedError) Error() string {
	dir := filepath.Dir(e.path)
	lock := filepath.Join(dir, "."+filepath.Base(e.path)+".lock")
	where := "wherever that is now"
	switch {
	case e.noCheckpoint: // probe 51: --resume was advised of a checkpoint never written
		where = "which holds no checkpoint yet: start the command again"
	case e.deleted:
		where = "if it is left"
	case e.now != "":
		where = "now " + e.now + " (continue with: flowebm sample --resume " + shellQuote(filepath.Join(e.now, filepath.Base(e.path))) + e.extra + ")"
	}
	if e.now != "" && e.now == e.here && !e.deleted { // probe 52: "moved", of a folder made unreadable or mounted over
		next := "once the folder is as it was, continue with: flowebm sample --resume " + shellQuote(e.path)
		if e.noCheckpoint {
			next = "it had written no checkpoint: start the command again"
		}
		return fmt.Sprintf("%s %s: the folder %s is still at its path, but %s there is no longer the file this process locked (the folder's permissions changed, or another folder was mounted over it); it stopped without writing there: %s", e.flag, e.path, dir, lock, next)
	}
	return fmt.Sprintf("%s %s: the folder %s is no longer the folder in which this process locked it (%s is gone or is another file: the folder was moved, replaced or deleted, or a link on its path now leads elsewhere); it stopped without writing there. What it wrote last is in the folder it locked, %s", e.flag, e.path, dir, lock, where)
}

// readableByAll makes the lock file f readable by every user whatever the
// umask (where this user owns it), so that another user's checks can see
// it held (probe 47: a 0600 lock, made under umask 077, was taken for
// none, and outputs were written where its holder wrote).
func readableByAll(f *os.File) { f.Chmod(0o644) }

// takeFileLock is lockFile's locking with the lock file lock, which a
// signal's cleanup removes until release.
func takeFileLock(flag, path, lock, command string) (release func(), held os.FileInfo, err error) {
	for tries := 0; ; tries++ {
		if tries == 100 { // as takeLock (probe 37: a retry for ever holds the signals off)
			return nil, nil, fmt.Errorf("%s %s: %s was replaced 100 times as it was being locked: another program is removing it", flag, path, lock)
		}
		f, err := os.OpenFile(lock, os.O_CREATE|os.O_RDWR|syscall.O_NOFOLLOW, 0o644)
		if errors.Is(err, syscall.ELOOP) { // probe 24: "too many levels of symbolic links"
			return nil, nil, fmt.Errorf("%s %s: %s is a symbolic link: flowebm locks the file with it and writes into it; remove it", flag, path, lock)
		}
		if err != nil {
			return nil, nil, fmt.Errorf("%s %s: locking it with %s: %w", flag, path, lock, err)
		}
		readableByAll(f)
		if err := checkLockFile(f, lock); err != nil {
			f.Close()
			return nil, nil, fmt.Errorf("%s %s: %w: flowebm locks the file with it and writes into it; remove it", flag, path, err)
		}
		links := linkCount(f)
		hook("file-lock-counted")
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
			f.Close()
			return nil, nil, fileLockBusy(flag, path, lock, links, err)
		}
		inPlace, err := settleLock(f, lock)
		if err != nil {
			return nil, nil, fmt.Errorf("%s %s: %s has %d hard links (a copy of its folder made with cp -al or rsync --link-dest shares it) and cannot be replaced by the file's own (%v): remove it, or give the command where it can", flag, path, lock, links, err)
		}
		if !inPlace {
			continue
		}
		if f.Truncate(0) == nil {
			f.WriteAt([]byte(command+"\n"), 0)
		}
		if held, err = f.Stat(); err != nil {
			f.Close()
			return nil, nil, fmt.Errorf("%s %s: %w", flag, path, err)
		}
		unregister := safefile.OnRemoveTemps(func() { os.Remove(lock) })
		return func() {
			removeHeldLock(lock, held)
			unregister()
			syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
			f.Close()
		}, held, nil
	}
}

// fileLockBusy is takeFileLock's error when flock on lock (with links
// names) failed with err: another process holds it, here or, through a
// hard link, in a copy of the folder (probe 37: said to be writing this
// file).
func fileLockBusy(flag, path, lock string, links uint64, err error) error {
	switch {
	case errors.Is(err, syscall.EWOULDBLOCK) && links > 1:
		return fmt.Errorf("%s %s: another flowebm process holds %s, which has %d hard links (a copy of its folder made with cp -al or rsync --link-dest shares it): it may be writing the copy's file; once no flowebm process writes %s, remove %s", flag, path, lock, links, path, lock)
	case errors.Is(err, syscall.EWOULDBLOCK) && flag == "--resume":
		return fmt.Errorf("%s %s: another flowebm process (flowebm %s) is continuing it (it holds %s): one process continues a checkpoint at a time; wait for it to finish", flag, path, cmp.Or(lockHolder(lock), "?"), lock)
	case errors.Is(err, syscall.EWOULDBLOCK):
		return fmt.Errorf("%s %s: another flowebm process (flowebm %s) is writing it (it holds %s): wait for it, or give another file", flag, path, cmp.Or(lockHolder(lock), "?"), lock)
	}
	return fmt.Errorf("%s %s: locking %s: %w", flag, path, lock, err)
}

// removeLoneLock removes the lock file path that a command made in dir
// when dir holds nothing else (the command failed, or wrote nothing), and
// then, while they are empty, the folders made for it: dir up to top, the
// first that was missing ("" when dir existed, which stays).
func removeLoneLock(dir, path, top string) {
	if entries, err := os.ReadDir(dir); err != nil || len(entries) != 1 {
		return
	}
	os.Remove(path)
	removeEmptyFolders(dir, top)
}

// ownedByMe reports whether this user owns the file of fi.
func ownedByMe(fi fs.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && int(st.Uid) == os.Geteuid()
}

// lockUnreadable reports whether the lock of the folder dir exists and
// this user may not read it.
func lockUnreadable(dir string) bool {
	f, err := safefile.Open(filepath.Join(dir, ".lock"))
	if err == nil {
		f.Close()
	}
	return errors.Is(err, fs.ErrPermission)
}

// isHeldFile reports whether path is the open file f.
func isHeldFile(f *os.File, path string) bool {
	held, err1 := f.Stat()
	now, err2 := os.Lstat(path)
	return err1 == nil && err2 == nil && os.SameFile(held, now)
}

// folderBusyError is lockRun's error when another process holds the lock;
// holder is the command that the lock file names ("" if none).
type folderBusyError struct{ dir, lock, holder string }

func (e folderBusyError) Error() string {
	if e.holder == "train" {
		return fmt.Sprintf("%s: another flowebm process is training in this folder (it holds %s)", e.dir, e.lock)
	}
	return fmt.Sprintf("%s: another flowebm process%s is writing into this folder (it holds %s)", e.dir, holderPhrase(e.holder), e.lock)
}

// busyFolder says that another process holds the lock of dir: it writes
// into the folder, or, where the lock has other hard links, into it or a
// copy of it (cp -al).
func busyFolder(dir string) string { return busyFolderAs(dir, dir) }

// busyFolderAs is busyFolder for the folder named dir and opened by the
// path open (see pathcheck.Walk).
func busyFolderAs(dir, open string) string {
	lock := filepath.Join(dir, ".lock")
	if lockUnreadable(open) {
		return fmt.Sprintf("this user may not read %s, so whether another flowebm process is writing into the folder %s cannot be told (if none is, the lock's owner can remove it, or make it readable with chmod a+r)", lock, dir)
	}
	if n := lockLinks(open); n > 1 {
		return fmt.Sprintf("another flowebm process holds %s, which has %d hard links (a copy of the folder made with cp -al or rsync --link-dest shares it): it is writing into the folder %s or into the copy", lock, n, dir)
	}
	return fmt.Sprintf("another flowebm process is writing into the folder %s (it holds %s)", dir, lock)
}

// lockLinks is the number of names of the lock file of the folder dir (1
// where it has none or cannot be read).
func lockLinks(dir string) uint64 { return linkCountOf(filepath.Join(dir, ".lock")) }

// irregular says that path, described by fi, is neither a regular file
// nor a folder (a pipe given as <(cat m.onnx), a device), naming its mode.
func irregular(path string, fi fs.FileInfo) string {
	return fmt.Sprintf("%s is neither a regular file nor a folder (mode %v)", path, fi.Mode().Type())
}

// sharedLockNote is "" where the lock of dir has one name, else words
// saying that a copy of the folder shares it, to follow the lock's path:
// the holder may work in the copy, and dir is then not being written
// (probe 43: a cp -al copy was said to be trained).
func sharedLockNote(dir string) string {
	if n := lockLinks(dir); n > 1 {
		return fmt.Sprintf(", which has %d hard links: a copy of the folder made with cp -al or rsync --link-dest shares it, and the process may work in the copy", n)
	}
	return ""
}

// lockedByOther reports whether another process holds the lock of dir.
// A symbolic link is no folder's lock (flowebm never locks through one:
// probe 41 saw a parent folder said to be written into). A lock with
// other hard links may be held for this folder or for a copy made with
// cp -al: it counts as held (probe 42: not counting it let energy --out
// write into a run being trained), and busyFolder's words say which.
func lockedByOther(dir string) bool {
	lock := filepath.Join(dir, ".lock")
	if fi, err := os.Lstat(lock); err != nil || !fi.Mode().IsRegular() || isOwnLock(lock) {
		return false
	}
	f, err := safefile.Open(lock)
	if errors.Is(err, fs.ErrPermission) {
		return true // whether a process holds it cannot be told: taken for held (probe 48: a 0600 lock was taken for free)
	}
	if err != nil {
		return false
	}
	defer f.Close()
	return errors.Is(syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB), syscall.EWOULDBLOCK)
}

// notYetARun says why the folder dir, which holds no run's files, is not
// a run yet ("" if it is neither of these): a run being set up by another
// process (reading its data: only its lock there), or a run killed as it
// started (only its lock left). Round 72 B6: sample, energy and convert
// said "neither a checkpoint nor a training run", plot "not a run folder".
func notYetARun(dir, command string) string {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return ""
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	reproduced := slices.Equal(names, []string{".lock", "log.txt"}) // a reproduce run's (round 97 B3: "not a run folder")
	if !reproduced && !slices.Equal(names, []string{".lock"}) {
		return ""
	}
	if lockedByOther(dir) {
		return fmt.Sprintf("%s: the run is being set up (another flowebm process holds %s%s): %s it once it has written its first checkpoint", dir, filepath.Join(dir, ".lock"), sharedLockNote(dir), command)
	}
	if reproduced {
		return fmt.Sprintf("%s holds only a run's lock and log.txt: a reproduce run stopped as it started leaves them (log.txt's last lines say why); the same flowebm reproduce command trains it again", dir)
	}
	if note := otherCommandsLock(dir); note != "" {
		return note
	}
	return fmt.Sprintf("%s holds only a run's lock: a run killed before its first checkpoint leaves only its lock; start it again with the command that started it, its flags included (flowebm train … --out %s)", dir, shellQuote(dir))
}

// otherCommandsLock says, of a folder holding only its lock, left by a
// command other than train and reproduce (a convert killed before it wrote
// its checkpoint), which command left it and the ways on; "" for any
// other folder (round 103 B1: called a run, train advised).
func otherCommandsLock(dir string) string {
	entries, err := os.ReadDir(dir)
	if err != nil || len(entries) != 1 || entries[0].Name() != ".lock" {
		return ""
	}
	holder := lockHolder(filepath.Join(dir, ".lock"))
	if holder == "" || holder == "train" || holder == "reproduce" {
		return ""
	}
	return fmt.Sprintf("%s holds only the lock of a flowebm %s killed before it wrote there: nothing in it is a run's; give that command again (flowebm %s … %s), or remove the folder", dir, holder, holder, shellQuote(dir))
}

// shortPath is the absolute path p or, where p is too long for the
// system (PATH_MAX, in a working folder deeper than it), its path from the
// working folder, to name it in a message.
func shortPath(p string) string {
	const pathMax = 4096
	if len(p) < pathMax {
		return p
	}
	if wd, err := os.Getwd(); err == nil {
		if rel, err := filepath.Rel(wd, p); err == nil && len(rel) < len(p) {
			return rel
		}
	}
	return p
}

// resolvedPath is path made absolute, the links of its longest existing
// part resolved (what is below it does not exist yet), however long the
// result (pathcheck.Resolve; probe 46: filepath.EvalSymlinks failed where
// a link led deeper than PATH_MAX, and a later link into a held run was
// not followed). Where even that fails (no working folder), it is the
// path as given, cleaned.
func resolvedPath(path string) string {
	if r, err := pathcheck.Resolve(path); err == nil {
		return r
	}
	return filepath.Clean(path)
}

// holderWrites reports whether the process holding the folder held
// writes first there, by the command its lock names (probe 44: the
// names of a run and of a train --seeds' summary for train, of its
// report for reproduce; probe 47: a train --seeds' sSEED, a reproduce's
// runs/; any name for another command or a lock that names none). The
// holder's own runs there do not count it as another process
// (ownlocks.go).
func holderWrites(held, first string) bool {
	switch lockHolder(filepath.Join(held, ".lock")) {
	case "train":
		return slices.Contains(append(runNames(), "seeds.json"), first) || seedRunName.MatchString(first)
	case "reproduce":
		return slices.Contains(append(reportNames(), "runs"), first)
	}
	return true // compare, diagnose, convert, … fill their folder with names of their own (probe 45), and a lock naming none may be any
}

// checkHeldFolder refuses an output folder path of flag (existing or to
// be made) inside a folder that another process holds, where that
// process writes it: a name that a training run writes directly in its
// folder (probe 42: compare --out H/checkpoint, in a run H setting up,
// before its config.json, which its first checkpoint replaces), a train
// --seeds' summary, a reproduce's report (probe 44). Elsewhere in a held
// folder (reproduce's OUT/runs, train --seeds' OUT/sSEED) nothing
// replaces it; the held folder itself is refused by its lock. Every held
// folder above is checked (probe 44: reproduce's own OUT hid a run
// setting up above it).
func checkHeldFolder(flag, path, advice string) error {
	return checkHeld(flag, path, resolvedPath(path), advice)
}

// checkHeldFile is checkHeldFolder for an output file: its own name is
// not resolved, since the output replaces a link there (probe 44).
func checkHeldFile(flag, path, advice string) error {
	return checkHeld(flag, path, filepath.Join(resolvedPath(filepath.Dir(path)), filepath.Base(path)), advice)
}

// checkHeld walks the folders of resolved from / down (opened name by
// name, so that a path deeper than PATH_MAX is walked too; probes 44–46)
// and refuses it under the deepest one whose lock another process holds
// and whose holder writes the name resolved goes through below it.
func checkHeld(flag, path, resolved, advice string) error {
	var err error
	pathcheck.Walk(filepath.Dir(resolved), func(dir, open string) bool {
		rel, relErr := filepath.Rel(dir, resolved)
		if relErr != nil || rel == "." || !lockedByOther(open) {
			return true
		}
		first, _, _ := strings.Cut(rel, string(filepath.Separator))
		if holderWrites(open, first) {
			held := shortPath(dir)
			if lockUnreadable(open) { // no holder known (probe 49: "the process holding F writes" of a stale lock)
				err = fmt.Errorf("%s %s is in %s, and %s: %s", flag, path, filepath.Join(held, first), busyFolderAs(held, open), advice)
			} else {
				err = fmt.Errorf("%s %s is in %s, which the process holding %s writes, and %s: %s", flag, path, filepath.Join(held, first), held, busyFolderAs(held, open), advice)
			}
		}
		return true
	})
	return err
}

// runsWithin says, for a folder that is not a run, which of its
// subfolders are (train --seeds' s1, s2, …; reproduce's runs/NAME, probe
// 67 B4), as the way out of a refusal (probe 64: "not a run folder" of the
// folder train --seeds wrote).
func runsWithin(dir string) string {
	runs := runFolders(dir)
	by := "train --seeds writes them"
	switch {
	case len(runs) > 0 && filepath.Base(dir) == "runs" && exists(filepath.Join(filepath.Dir(dir), "report.md")):
		by = "reproduce writes them"
	case len(runs) == 0 && filepath.Base(dir) != "runs":
		if runs = runFolders(filepath.Join(dir, "runs")); len(runs) > 0 {
			return fmt.Sprintf("; it is a folder that reproduce wrote, and its runs/ holds the runs %s: give those, e.g. %s", listRuns(runs), shellQuote(filepath.Join(dir, "runs", runs[0])))
		}
	}
	if len(runs) == 0 {
		return ""
	}
	return fmt.Sprintf("; it holds the runs %s (as %s): give those, e.g. %s", listRuns(runs), by, shellQuote(filepath.Join(dir, runs[0])))
}

// isReproduceFolder says whether dir is a folder that reproduce wrote or
// writes: its runs/ folder, with report.md beside it or runs inside it
// (a reproduce under way has written no report yet).
func isReproduceFolder(dir string) bool {
	runs := filepath.Join(dir, "runs")
	return isDir(runs) && (exists(filepath.Join(dir, "report.md")) || len(runFolders(runs)) > 0)
}

// runFolders are the names of dir's subfolders that hold training runs.
func runFolders(dir string) []string {
	entries, _ := os.ReadDir(dir)
	var runs []string
	for _, e := range entries {
		if e.IsDir() && isTrainingRun(filepath.Join(dir, e.Name())) {
			runs = append(runs, e.Name())
		}
	}
	return runs
}

// listRuns names the first 5 runs.
func listRuns(runs []string) string {
	if len(runs) > 5 { // round 86 B5: cut at 5 without a word
		return strings.Join(runs[:5], ", ") + fmt.Sprintf(", … (%d in all)", len(runs))
	}
	return strings.Join(runs, ", ")
}

// checkpointOfRun says, of a checkpoint folder dir inside a run folder,
// to give the run instead ("" if dir is not one).
func checkpointOfRun(dir string) string {
	parent := filepath.Dir(filepath.Clean(dir))
	if !exists(filepath.Join(dir, "spec.json")) || !isTrainingRun(parent) {
		return ""
	}
	return "; it is the checkpoint folder of the run " + parent + ": give the run, e.g. " + shellQuote(parent)
}

// checkpointOfEditedRun is checkpointOfRun for plot, which refuses a run
// whose config.json was edited after its checkpoint: it says so, with the
// cp that restores it, instead of sending the user back to the run
// (round 80 B9: a loop between the two refusals).
func checkpointOfEditedRun(dir string) string {
	hint := checkpointOfRun(dir)
	if hint == "" {
		return ""
	}
	parent := filepath.Dir(filepath.Clean(dir))
	var edited *training.ConfigEditedError
	if cfg, err := training.ReadRunConfig(parent); err == nil && errors.As(training.ConfigEdited(parent, cfg), &edited) {
		if edited.Foreign { // round 114 B3: the cp would make it another run
			return fmt.Sprintf("; it is the checkpoint folder of the run %s, whose checkpoint is another run's (field %q is %s in its config.json, %s in the checkpoint, whose evaluations are not those of its metrics.csv): %s", parent, edited.Field, edited.Now, edited.Was, edited.Remedy())
		}
		return fmt.Sprintf("; it is the checkpoint folder of the run %s, whose config.json was edited after it was written (field %q is %s, was %s): plot draws a run under the configuration its checkpoint was trained with: cp %s %s restores it", parent, edited.Field, edited.Now, edited.Was, shellQuote(edited.Checkpoint), shellQuote(edited.Path))
	}
	return hint
}

// fileOfRun says, for a file that is one of a training run's own files
// (its config.json, metrics.csv…), which run folder to give instead
// (round 80 B9: sample and plot of RUN/config.json said "a file"); "" for
// another file.
func fileOfRun(path string) string {
	parent := filepath.Dir(filepath.Clean(path))
	if !isTrainingRun(parent) {
		return ""
	}
	return fmt.Sprintf("; it is the %s of the run %s: give the run folder, %s", filepath.Base(path), parent, shellQuote(parent))
}

// isTrainingRun reports whether dir holds a training run (not only a
// checkpoint that convert wrote). It needs the run's configuration and
// something only a run writes: its metrics, a checkpoint of models, or its
// lock (a config.json alone, or a Go package named checkpoint, is not a
// run).
func isTrainingRun(dir string) bool {
	if fi, err := os.Stat(filepath.Join(dir, "config.json")); err != nil || !fi.Mode().IsRegular() {
		return false
	}
	for _, f := range []string{"metrics.csv", filepath.Join("checkpoint", "spec.json"), filepath.Join("checkpoint.old", "spec.json"), "checkpoint.new"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err == nil {
			return true
		}
	}
	// A run stopped as it started holds its config.json and .lock alone;
	// another program's config.json beside a lock of flowebm's (sample
	// --out there) is not one (round 85 B4).
	return exists(filepath.Join(dir, ".lock")) && flowebmConfig(filepath.Join(dir, "config.json"))
}

// flowebmConfig says whether the file at path reads as a run
// configuration that flowebm wrote: a JSON object with the fields
// "experiment" and "train" (config.Run). A file past 1 MiB is not read.
func flowebmConfig(path string) bool {
	b, err := safefile.ReadFile(path, 1<<20)
	if err != nil {
		return false
	}
	var fields map[string]json.RawMessage
	if json.Unmarshal(b, &fields) != nil {
		return false
	}
	_, e := fields["experiment"]
	_, t := fields["train"]
	return e && t
}

// makeFolder creates dir (and its parents) before any work, so that an
// output folder that cannot exist fails at once; top is the outermost
// folder made ("" if dir existed), and undo removes what it created if it
// is still empty. Run it in safefile.Hold with what registers top for a
// signal's cleanup, so that a signal cannot come in between (probe 33).
func makeFolder(dir string) (top string, undo func(), err error) {
	if err := pathcheck.DotDot(dir); err != nil {
		return "", nil, err
	}
	dir = filepath.Clean(dir) // probe 36: new/../e/x made new, left after a failure
	missing := firstMissing(dir)
	if err := mkdirAll(dir); err != nil {
		removeEmptyFolders(dir, missing) // those made before it failed (probe 34)
		return "", nil, err
	}
	hook("folder-made")
	return missing, func() { removeEmptyFolders(dir, missing) }, nil
}

// removeEmptyFolders removes dir and the folders above it up to top while
// they are empty; nothing when top is "".
func removeEmptyFolders(dir, top string) {
	if top == "" {
		return
	}
	for p := filepath.Clean(dir); ; p = filepath.Dir(p) {
		// Not there, or a name too long: passed over. A link (to
		// nothing) is not a folder made.
		fi, err := os.Lstat(p)
		if err == nil && (!fi.IsDir() || os.Remove(p) != nil) {
			return
		}
		if p == filepath.Clean(top) || p == filepath.Dir(p) {
			return
		}
	}
}

// lastPart is what follows the last separator of path: "" for a/, "."
// for a/. (filepath.Base cleans it away).
func lastPart(path string) string {
	return path[strings.LastIndexByte(path, filepath.Separator)+1:]
}

// firstMissing returns the outermost folder of path that does not exist
// (path itself when only it is missing), or "" when path exists.
func firstMissing(path string) string {
	missing := ""
	for p := filepath.Clean(path); ; p = filepath.Dir(p) {
		if _, err := os.Stat(p); err == nil {
			return missing
		}
		missing = p
		if filepath.Dir(p) == p {
			return missing
		}
	}
}

// trainingRunAbove returns the training run that dir is inside (dir itself
// excluded), or "". Links are resolved (a link to a run's checkpoint is
// inside the run) however long their targets, and the folders above are
// opened name by name (pathcheck.Walk; probe 46).
func trainingRunAbove(dir string) string {
	run := ""
	pathcheck.Walk(filepath.Dir(resolvedPath(dir)), func(d, open string) bool {
		if d != filepath.Dir(d) && isTrainingRun(open) {
			run = d // the deepest
		}
		return true
	})
	return run
}

// isTrainingRunAt is isTrainingRun for a resolved path, however long.
func isTrainingRunAt(abs string) bool {
	is := false
	pathcheck.Walk(abs, func(d, open string) bool {
		if d == abs {
			is = isTrainingRun(open)
		}
		return true
	})
	return is
}

// runOutputs are what a training run writes into its folder; plotNames
// its figures, in any plot format.
var (
	// config.json last: a kill while clearing leaves a folder that
	// --resume says has no checkpoint, and --force clears again.
	runOutputs = []string{"checkpoint", "checkpoint.new", "checkpoint.old", "metrics.json", "metrics.csv",
		"samples.npy", "image-samples.npz", "error.txt", "config.json"}
	plotNames = []string{"density", "samples", "weights", "rhat", "acceptance", "samples-512", "energies"}
)

// seedRunName matches the name of a train --seeds' run folder, sSEED.
var seedRunName = regexp.MustCompile(`^s[0-9]+$`)

// heldRunOutputs refuses a run folder dir in which a folder that the run
// writes (and --force, or its first checkpoint, replaces) is held by
// another process (probe 47: compare --out R/checkpoint was writing its
// figures, and train --out R --force deleted the folder under it).
func heldRunOutputs(dir string) error {
	for _, name := range runOutputs {
		p := filepath.Join(dir, name)
		if fi, err := os.Lstat(p); err == nil && fi.IsDir() && lockedByOther(p) {
			return fmt.Errorf("--out %s: %s, which this run replaces: wait for it to end, or give another --out", dir, busyFolder(p))
		}
	}
	return nil
}

// irregularOrFile words what fi, not a folder, is.
func irregularOrFile(fi fs.FileInfo) string {
	if fi.Mode().IsRegular() {
		return "a file"
	}
	return fmt.Sprintf("of mode %v", fi.Mode().Type())
}

// checkpointFileNames are the files a run's checkpoint folder holds.
var checkpointFileNames = []string{"COMPLETE", "evals.csv", "run-config.json", "spec.json", "state.json", "state.npz", "weights.npz", "window.json", "flow_sample.onnx", "flow_density.onnx"}

// foreignInCheckpointNew is, where dir holds no run (no config.json) and a
// checkpoint.new/ that is not a run's (a folder, or a file no checkpoint
// holds, in it), the first such entry; "" otherwise. A run killed before
// its first checkpoint leaves checkpoint.new/ with checkpoint files (and
// temporary ones), which the same command replaces.
func foreignInCheckpointNew(dir string) string {
	if exists(filepath.Join(dir, "config.json")) {
		return ""
	}
	p := filepath.Join(dir, checkpointPrefix+".new")
	if fi, err := os.Lstat(p); err == nil && !fi.IsDir() { // probe 49: a file of that name was deleted
		return checkpointPrefix + ".new itself, " + irregularOrFile(fi)
	}
	entries, err := os.ReadDir(p)
	if err != nil {
		return ""
	}
	for _, e := range entries {
		if e.IsDir() || !strings.HasPrefix(e.Name(), ".") && !slices.Contains(checkpointFileNames, e.Name()) {
			return e.Name()
		}
	}
	return ""
}

// runNames are the files and folders that a training run writes into its
// folder, its figures in every plot format.
func runNames() []string {
	return append(figureNames(plotNames...), runOutputs...)
}

// figureNames are the files of the figures names in every plot format.
func figureNames(names ...string) []string {
	var files []string
	for _, n := range names {
		for _, ext := range []string{".png", ".svg", ".pdf"} {
			files = append(files, n+ext)
		}
	}
	return files
}

// clearRun removes the outputs of the run in dir, which --force replaces:
// left in place, a replacement killed early (or writing fewer figures)
// would sit beside the old run's metrics and plots. samples.npy, which a
// run writes last, goes first: killed part way, the old run is not taken
// for finished, and --resume completes its outputs (probe 51: its
// density.png gone, --resume said there was nothing to do).
func clearRun(dir string) error {
	for _, n := range clearOrder() {
		if err := os.RemoveAll(filepath.Join(dir, n)); err != nil {
			return err
		}
	}
	return removeStaleTemps(dir, runNames()...)
}

// clearOrder is the order in which clearRun removes a run's files:
// samples.npy first, then runNames.
func clearOrder() []string { return append([]string{"samples.npy"}, runNames()...) }

// removeStaleTemps removes the temporary files (.NAME.tmpN) that a killed
// process left in dir while writing one of the files names atomically;
// those whose writer lives (it holds their lock) are kept.
func removeStaleTemps(dir string, names ...string) error {
	return safefile.RemoveStaleIn(dir, names...)
}

// presentIn returns those of names that exist in dir.
func presentIn(dir string, names []string) []string {
	var found []string
	for _, n := range names {
		if _, err := os.Lstat(filepath.Join(dir, n)); err == nil {
			found = append(found, n)
		}
	}
	return found
}

// checkNoRunFiles refuses, unless force, a folder dir of flag that is not
// a run but holds files that a run writes there (which it would replace
// or, starting, delete): results of sample, a user's error.txt. A
// checkpoint.new/ alone is a run's, killed before its first checkpoint
// was complete, which the same command starts again.
func checkNoRunFiles(flag, dir string, force bool) error {
	if ev := seedsEvidence(dir); ev != "" && !isRun(dir) { // probe 26: a run was started among the seed runs
		return fmt.Errorf("%s %s holds the seed runs of train --seeds (%s): give another folder (--force replaces a run's files, not a set of runs: move the folder away first to reuse its name)", flag, dir, ev)
	}
	if runs := runFolders(dir); len(runs) > 0 && !isRun(dir) { // round 85 B5: a reproduce folder (or its runs/) taken for a new run's
		return fmt.Errorf("%s %s holds the runs %s: give a folder of its own to this run (--force would mix it among them)", flag, dir, listRuns(runs))
	}
	if isReproduceFolder(dir) && !isRun(dir) {
		return fmt.Errorf("%s %s is a folder that reproduce wrote (report.md, runs/): give a folder of its own to this run", flag, dir)
	}
	if force || isRun(dir) {
		return nil
	}
	names := slices.DeleteFunc(runNames(), func(n string) bool { return n == checkpointPrefix+".new" })
	if found := presentIn(dir, names); len(found) > 0 {
		return fmt.Errorf("%s %s is not a run but holds %s, which a run writes there: give another folder, or replace them with --force", flag, dir, strings.Join(found, ", "))
	}
	if others := visibleEntries(dir); len(others) > 0 { // round 85 B7: --out . (or /) scattered a run among a folder's files
		return fmt.Errorf("%s %s holds other files (%s): a run writes config.json, its metrics, figures and checkpoint/ there; give a new or empty folder, or --force to write among them", flag, dir, listNames(others, 3))
	}
	return nil
}

// visibleEntries are the names in dir that do not begin with a dot (a
// lock, a temporary file), sorted, but for log.txt, which reproduce (and
// its plan's lines, by a shell redirection) open before the run starts,
// and a run's own files, which other checks judge.
func visibleEntries(dir string) []string {
	entries, _ := os.ReadDir(dir)
	own := runNames()
	var names []string
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), ".") && e.Name() != "log.txt" && !slices.Contains(own, e.Name()) {
			names = append(names, e.Name())
		}
	}
	return names
}

// listNames is the first n names, quoted where they need it, and how
// many there are in all beyond them.
func listNames(names []string, n int) string {
	shown := make([]string, 0, n+1)
	for i, name := range names {
		if i == n {
			shown = append(shown, fmt.Sprintf("… %d in all", len(names)))
			break
		}
		shown = append(shown, shellQuote(name))
	}
	return strings.Join(shown, ", ")
}

// seedsEvidence is what makes dir look like the folder of train --seeds,
// or "": its seeds.json, or (interrupted before writing it: probe 27) a
// run named sN as it names them, or such a folder holding flowebm's lock
// (killed before its run's config.json was in place: probe 28).
func seedsEvidence(dir string) string {
	if exists(filepath.Join(dir, "seeds.json")) {
		return "seeds.json"
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		n, ok := strings.CutPrefix(e.Name(), "s")
		if !ok || !e.IsDir() || n == "" || strings.Trim(n, "0123456789") != "" {
			continue
		}
		sub := filepath.Join(dir, e.Name())
		switch {
		case isRun(sub):
			return e.Name() + "/, a run named as train --seeds names them" // probe 28: a user's own s1 run
		case exists(filepath.Join(sub, ".lock")):
			return e.Name() + "/, a run folder named as train --seeds names them, holding flowebm's .lock (a run stopped as it started)"
		}
	}
	return ""
}

// inRunCheckpoint returns the training run whose checkpoint folders
// (checkpoint/, .new, .old) the existing folder dir is inside, or "": a
// file written there is deleted by the run's next checkpoint replacement.
func inRunCheckpoint(dir string) string {
	run := trainingRunAbove(dir)
	if run == "" {
		return ""
	}
	rel, err := filepath.Rel(run, resolvedPath(dir))
	if err != nil || !strings.HasPrefix(strings.Split(rel, string(filepath.Separator))[0], checkpointPrefix) {
		return ""
	}
	return run
}

const checkpointPrefix = "checkpoint"

// checkNew refuses to replace an existing output file unless force, and
// anything but a file or a link (a device, a pipe, a socket) even then.
func checkNew(flag, out string, force bool) error {
	if out == "" {
		return nil
	}
	fi, err := os.Lstat(out) // a link, even to nothing, is not replaced unasked
	switch {
	case err != nil:
		return nil
	case fi.Mode()&(fs.ModeDevice|fs.ModeCharDevice|fs.ModeNamedPipe|fs.ModeSocket|fs.ModeIrregular) != 0:
		// --force replaces files, never a device (/dev/null as root) or a pipe.
		return fmt.Errorf("%s %s is not a regular file (mode %v): an output replaces only files, even with --force: give a file name", flag, out, fi.Mode().Type())
	case force:
		return nil
	case fi.Mode()&fs.ModeSymlink != 0:
		target, _ := os.Readlink(out)
		return fmt.Errorf("%s %s is a symbolic link (to %s): give another name, or --force (which replaces the link, not what it points to)", flag, out, target)
	}
	return fmt.Errorf("%s %s exists: give another name, or replace it with --force", flag, out)
}

// checkResumable says why dir holds no run to resume, or returns nil.
func checkResumable(dir string) error {
	fi, err := os.Stat(dir)
	switch {
	case err != nil:
		return fmt.Errorf("--resume %s: %w", dir, err)
	case !fi.IsDir():
		return fmt.Errorf("--resume %s is not a folder: give a run folder", dir)
	case exists(filepath.Join(dir, "spec.json")) && !exists(filepath.Join(dir, "config.json")):
		return fmt.Errorf("--resume %s is a checkpoint folder (a model, or a run's checkpoint/), not a run: give a run folder", dir)
	case isRun(dir) && !exists(filepath.Join(dir, "config.json")) && !exists(filepath.Join(dir, "checkpoint", "spec.json")) && !exists(filepath.Join(dir, "checkpoint.old", "spec.json")) && !exists(filepath.Join(dir, "checkpoint.new")):
		// probe 47: compare's figures in DIR/checkpoint gave "open DIR/config.json: no such file"
		return fmt.Errorf("--resume %s holds no run: it has %s, which a run writes, but no config.json nor a checkpoint's spec.json", dir, strings.Join(presentIn(dir, runOutputs), ", "))
	case isRun(dir):
		return nil
	}
	if ev := seedsEvidence(dir); ev != "" {
		return fmt.Errorf("--resume %s holds the seed runs of train --seeds (%s), not one run: resume one of them (flowebm train --resume %s), or run the same train --seeds command again, which continues them", dir, ev, shellQuote(filepath.Join(dir, "sN")))
	}
	if _, err := os.Stat(filepath.Join(dir, "checkpoint.new")); err == nil {
		return fmt.Errorf("--resume %s: the run there stopped before its first checkpoint was complete, so there is nothing to resume: start it again (the same command without --resume)", dir)
	}
	if hint := runsWithin(dir); hint != "" { // round 85 B5: a reproduce folder was advised train --out, which then made it a run's
		return fmt.Errorf("--resume %s holds no run itself%s (each resumes with flowebm train --resume RUN)", dir, hint)
	}
	if filepath.Base(filepath.Dir(filepath.Clean(dir))) == "runs" { // round 86 B3: a reproduce run folder killed as it started was advised train --out with train's defaults, which reproduce then refused
		return fmt.Errorf("--resume %s holds no run (a run killed as it started leaves only its lock and log): nothing to resume; if reproduce made it, give the same reproduce command again (or write its --plan again), which starts it with reproduce's settings", dir)
	}
	if note := otherCommandsLock(dir); note != "" { // round 103 B1
		return fmt.Errorf("--resume %s", note)
	}
	return fmt.Errorf("--resume %s holds no run (no config.json or checkpoint: a run killed before its first checkpoint, every checkpoint_every iterations, leaves only its lock, and nothing of it to resume): start it again with the command that started it, its flags included (flowebm train … --out %s; --force if the folder is not empty)", dir, shellQuote(dir)) // round 98 B2: "killed as it started", and train --out alone ran other settings
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// isDir reports whether path is a folder (or a link to one).
func isDir(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.IsDir()
}

// namedInput is err, where it is the refusal of a flag's input path that
// does not exist, said of the flag (round 79 B4: "open /…/missing.npy: no
// such file" named no flag, for --data, --modes and --config alike); a
// link whose target is missing is said to be one. Other errors are
// returned as they are. folderOK: the flag takes a folder too.
func namedInput(err error, flag, path string, folderOK bool) error {
	var pe *fs.PathError
	if path == "" || err == nil {
		return err
	}
	if !errors.As(err, &pe) || !errors.Is(err, fs.ErrNotExist) || !samePathName(pe.Path, path) {
		return flaggedPath(err, flag, path)
	}
	if target, lerr := os.Readlink(path); lerr == nil {
		return fmt.Errorf("%s %s is a link to %s, which does not exist", flag, path, target)
	}
	if folderOK {
		return fmt.Errorf("%s %s: no such file or folder", flag, path)
	}
	return fmt.Errorf("%s %s: no such file", flag, path)
}

// flaggedPath is err said of the flag where its message starts with the
// flag's path, as given or made absolute (round 80 B2: "/abs/x.npy is a
// named pipe (FIFO)", "/abs/d.npz: zip: …" named no flag); other errors
// are returned as they are.
func flaggedPath(err error, flag, path string) error {
	msg := err.Error()
	names := []string{path}
	if abs, aerr := filepath.Abs(path); aerr == nil && abs != path {
		names = append(names, abs)
	}
	for _, name := range names {
		for _, sep := range []string{": ", " is "} {
			if strings.HasPrefix(msg, name+sep) {
				return &flaggedError{msg: flag + " " + path + msg[len(name):], err: err}
			}
		}
	}
	return err
}

// missingKey is err said of --key where it is the refusal of the member
// key that the .npz file data (the flag and its path; "" for the run's
// data file) lacks (round 80 B2: the refusal named the file alone).
func missingKey(err error, key, data string) error {
	var mm *npz.MissingMemberError
	if key == "" || !errors.As(err, &mm) || mm.Name != key {
		return err
	}
	of := "the data file"
	if data != "" {
		of = data
	}
	return &flaggedError{msg: fmt.Sprintf("--key %s: %s has no member %q: give one of %s", key, of, key, mm.Members()), err: err}
}

// configDataError is err said of the field of the --config file path
// that named its data (round 82 B8: "open …/nope.npy: no such file", and
// "…/x.npz: no member "zz"", named neither the file nor the field), where
// err is a missing data or modes file, or a missing member that no --key
// (key) chose; other errors are returned as they are.
func configDataError(err error, path, key string) error {
	var pe *fs.PathError
	var mm *npz.MissingMemberError
	missing := errors.As(err, &pe) && errors.Is(err, fs.ErrNotExist)
	noMember := errors.As(err, &mm) && key == ""
	if !missing && !noMember {
		return err
	}
	cfg, rerr := config.Read(path)
	if rerr != nil || cfg.Data == nil {
		return err
	}
	d := cfg.Data
	switch {
	case missing && samePathName(pe.Path, d.File):
		return &flaggedError{msg: fmt.Sprintf("--config %s: data.file %s: no such file", path, d.File), err: err}
	case missing && d.Modes != "" && samePathName(pe.Path, d.Modes):
		return &flaggedError{msg: fmt.Sprintf("--config %s: data.modes %s: no such file", path, d.Modes), err: err}
	case noMember && mm.Name == d.Key:
		return &flaggedError{msg: fmt.Sprintf("--config %s: data.key %q: %s has no member %q: give one of %s", path, d.Key, d.File, d.Key, mm.Members()), err: err}
	}
	return err
}

// flaggedError is an error's message rewritten to name a flag, wrapping
// the error.
type flaggedError struct {
	msg string
	err error
}

func (e *flaggedError) Error() string { return e.msg }
func (e *flaggedError) Unwrap() error { return e.err }

// samePathName reports whether a and b name one path (as given, or made
// absolute).
func samePathName(a, b string) bool {
	if a == b {
		return true
	}
	aa, err1 := filepath.Abs(a)
	bb, err2 := filepath.Abs(b)
	return err1 == nil && err2 == nil && aa == bb
}
