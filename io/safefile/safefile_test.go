package safefile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestWriteReplacesOnlyOnSuccess(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "out.txt")
	if err := Write(path, func(w io.Writer) error { _, err := io.WriteString(w, "first"); return err }); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	err := Write(path, func(w io.Writer) error {
		io.WriteString(w, "half-writ")
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("error %v does not wrap the writer's error", err)
	}
	b, err := os.ReadFile(path)
	if err != nil || string(b) != "first" {
		t.Fatalf("after a failed write the file holds %q (%v), want the old content", b, err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Fatalf("temporary files left behind: %v", entries)
	}
}

// WriteNew never replaces a file that exists by its final step (another
// process wrote it meanwhile): it fails with an *ExistsError, leaves the
// file and no temporary file; Write replaces.
func TestWriteNewDoesNotReplace(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "out.txt")
	os.WriteFile(path, []byte("theirs"), 0o644)
	err := WriteNew(path, func(w io.Writer) error { _, err := io.WriteString(w, "mine"); return err })
	var ex *ExistsError
	if !errors.As(err, &ex) || !errors.Is(err, fs.ErrExist) || !strings.Contains(err.Error(), "another process wrote it meanwhile") {
		t.Fatalf("WriteNew over an existing file: %v", err)
	}
	if b, _ := os.ReadFile(path); string(b) != "theirs" {
		t.Errorf("WriteNew replaced the file: %q", b)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("temporary files left behind: %v", entries)
	}
	if err := WriteNew(filepath.Join(dir, "new.txt"), func(w io.Writer) error { return nil }); err != nil {
		t.Error(err)
	}
	if fi, err := os.Stat(filepath.Join(dir, "new.txt")); err != nil || fi.Mode().Perm() != 0o644 {
		t.Errorf("new file: %v %v", fi, err)
	}
}

// RemoveStale removes the temporary files that a killed writer left, and
// keeps those whose writer lives (it holds their lock).
func TestRemoveStaleKeepsLiveWrites(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "a.npy")
	stale := filepath.Join(dir, ".a.npy.tmp123")
	os.WriteFile(stale, []byte("half"), 0o600)
	other := filepath.Join(dir, ".b.npy.tmp1")
	os.WriteFile(other, nil, 0o600)
	live := filepath.Join(dir, ".a.npy.tmp456")
	f, _ := os.Create(live)
	defer f.Close()
	syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
	if err := RemoveStale(path); err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]bool{stale: false, live: true, other: true} {
		if _, err := os.Stat(p); (err == nil) != want {
			t.Errorf("%s: exists %v, want %v", p, err == nil, want)
		}
	}
}

// RemoveTemps (a signal's cleanup) removes the files and folders being
// written, and after it a newly tracked one at once; Hold delays it.
func TestRemoveTemps(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	os.Mkdir(a, 0o755)
	os.WriteFile(filepath.Join(a, "x"), nil, 0o644)
	os.WriteFile(b, nil, 0o644)
	track(a)
	track(b)()
	held := make(chan struct{})
	go Hold(func() error { close(held); time.Sleep(50 * time.Millisecond); os.WriteFile(b, nil, 0o644); return nil })
	<-held
	RemoveTemps()
	if _, err := os.Stat(a); err == nil {
		t.Error("RemoveTemps kept a tracked folder")
	}
	if _, err := os.Stat(b); err != nil {
		t.Error("RemoveTemps removed an untracked file, or ran during Hold")
	}
	c := filepath.Join(dir, "c")
	if _, _, err := createTracked(func() (string, error) { return c, os.WriteFile(c, nil, 0o644) }); !errors.Is(err, errExiting) {
		t.Errorf("a temporary file made after RemoveTemps: %v, want %v", err, errExiting)
	}
	if _, err := os.Stat(c); err == nil {
		t.Error("a temporary file was made after RemoveTemps")
	}
	// The process is exiting: a Hold after RemoveTemps never runs its
	// step (probe 36: a folder the cleanup removed was made again).
	ran := make(chan struct{})
	go Hold(func() error { close(ran); return nil })
	select {
	case <-ran:
		t.Error("Hold ran its step after RemoveTemps")
	case <-time.After(200 * time.Millisecond):
	}
	temps.mu.Lock()
	temps.closed = false
	temps.mu.Unlock()
}

// ReplaceDir swaps a complete folder in, with or without an atomic
// exchange; RestoreAside puts back a folder that a swap without one left
// aside.
func TestReplaceDir(t *testing.T) {
	for _, atomic := range []bool{true, false} {
		dir := t.TempDir()
		ck, tmp, aside := filepath.Join(dir, "ck"), filepath.Join(dir, ".ck.new-1"), filepath.Join(dir, ".ck.old-1")
		os.Mkdir(ck, 0o755)
		os.WriteFile(filepath.Join(ck, "spec.json"), []byte("old"), 0o644)
		os.Mkdir(tmp, 0o755)
		os.WriteFile(filepath.Join(tmp, "spec.json"), []byte("new"), 0o644)
		if !atomic {
			saved := exchange
			exchange = func(a, b string) error { return errNoExchange }
			defer func() { exchange = saved }()
		}
		if err := ReplaceDir(tmp, ck, aside); err != nil {
			t.Fatal(err)
		}
		if b, _ := os.ReadFile(filepath.Join(ck, "spec.json")); string(b) != "new" {
			t.Errorf("atomic %v: ck holds %q", atomic, b)
		}
		if b, _ := os.ReadFile(filepath.Join(tmp, "spec.json")); string(b) != "old" {
			t.Errorf("atomic %v: the old folder is not at tmp: %q", atomic, b)
		}
	}
	dir := t.TempDir()
	ck, aside := filepath.Join(dir, "ck"), filepath.Join(dir, ".ck.old-1")
	os.Mkdir(ck, 0o755)
	os.WriteFile(filepath.Join(ck, ".lock"), []byte("mine"), 0o644)
	os.Mkdir(aside, 0o755)
	for _, n := range []string{"spec.json", "weights.npz", ".lock"} {
		os.WriteFile(filepath.Join(aside, n), []byte("old"), 0o644)
	}
	if err := RestoreAside(aside, ck, "spec.json", ".lock"); err != nil {
		t.Fatal(err)
	}
	for n, want := range map[string]string{"spec.json": "old", "weights.npz": "old", ".lock": "mine"} {
		if b, _ := os.ReadFile(filepath.Join(ck, n)); string(b) != want {
			t.Errorf("restored %s holds %q, want %q", n, b, want)
		}
	}
	if _, err := os.Stat(aside); err == nil {
		t.Error("aside left")
	}
}

// RemoveStale lists the folder itself (a glob of a folder named g[1a]
// removed files in g1 and ga) and removes only .NAME.tmpN, N digits (it
// removed .NAME.tmp-staged, .NAME.tmpl and the like).
func TestRemoveStaleExactNames(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "g[1a]")
	os.Mkdir(dir, 0o755)
	os.Mkdir(filepath.Join(root, "g1"), 0o755)
	keep := []string{filepath.Join(root, "g1", ".a.npy.tmp1"), filepath.Join(dir, ".a.npy.tmpl"), filepath.Join(dir, ".a.npy.tmp-staged"),
		filepath.Join(dir, ".a.npy.tmp12x"), filepath.Join(dir, ".b.npy.tmp3")}
	for _, k := range keep {
		os.WriteFile(k, []byte("k"), 0o644)
	}
	stale := filepath.Join(dir, ".a.npy.tmp42")
	os.WriteFile(stale, nil, 0o600)
	if err := RemoveStale(filepath.Join(dir, "a.npy")); err != nil {
		t.Fatal(err)
	}
	for _, k := range keep {
		if _, err := os.Stat(k); err != nil {
			t.Errorf("%s removed", k)
		}
	}
	if _, err := os.Stat(stale); err == nil {
		t.Error("the stale temporary file was kept")
	}
	if err := RemoveStaleIn(filepath.Join(root, "missing"), "a.npy"); err != nil {
		t.Errorf("a missing folder: %v", err)
	}
}

// A staged file stays locked until Close: another writer's RemoveStale
// keeps it, Place puts it in place, and Close removes one not placed.
func TestStageLockedUntilClosed(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "g.npy")
	s, err := Stage(path, func(w io.Writer) error { _, err := io.WriteString(w, "mine"); return err })
	if err != nil {
		t.Fatal(err)
	}
	if err := RemoveStale(path); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(s.Name()); err != nil {
		t.Fatal("another writer's cleanup removed a staged file")
	}
	if err := s.Place(false); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if b, _ := os.ReadFile(path); string(b) != "mine" {
		t.Errorf("placed: %q", b)
	}
	s2, err := Stage(path, func(w io.Writer) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	if err := s2.Place(false); !errors.Is(err, fs.ErrExist) {
		t.Errorf("Place over an existing file: %v", err)
	}
	s2.Close()
	if _, err := os.Stat(s2.Name()); err == nil {
		t.Error("Close kept a file not placed")
	}
}

// ReadFile refuses a FIFO (which would block), a device reached through a
// link (which never ends), a folder and a file over its bound, before
// reading any of them; a regular file reads whole.
func TestReadFileRefusesNonRegularAndLarge(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	zero := filepath.Join(dir, "zero")
	if err := os.Symlink("/dev/zero", zero); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big")
	if err := os.WriteFile(big, make([]byte, 11), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ path, want string }{
		{fifo, fifo + " is a named pipe (FIFO), want a regular file"},
		{zero, zero + " is a device, want a regular file"},
		{dir, dir + " is a folder, want a regular file"},
		{big, big + ": 11 bytes, want at most 10"},
	} {
		if _, err := ReadFile(c.path, 10); err == nil || err.Error() != c.want {
			t.Errorf("ReadFile(%s): %v, want %q", c.path, err, c.want)
		}
	}
	if b, err := ReadFile(big, 11); err != nil || len(b) != 11 {
		t.Errorf("ReadFile of 11 bytes with a bound of 11: %d bytes, %v", len(b), err)
	}
}

// A failed write names the file being written, not the temporary file the
// system's error carries, which the user never sees on disk (probe 18:
// "--out s/u.npy: s/u.npy: write s/.u.npy.tmp123: file too large").
func TestStageErrorNamesTheFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "out.npy")
	_, err := Stage(path, func(w io.Writer) error {
		return &fs.PathError{Op: "write", Path: filepath.Join(filepath.Dir(path), ".out.npy.tmp123"), Err: syscall.ENOSPC}
	})
	if want := path + ": write: no space left on device"; err == nil || err.Error() != want {
		t.Errorf("%v, want %q", err, want)
	}
	if !errors.Is(err, syscall.ENOSPC) {
		t.Errorf("%v does not wrap ENOSPC", err)
	}
}

// MkdirTemp's folder has the mode os.Mkdir gives under the umask, not
// os.MkdirTemp's 0700 (probe 23), and a name IsTemp knows.
func TestMkdirTempFollowsUmask(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct{ umask, want os.FileMode }{{0o022, 0o755}, {0o027, 0o750}, {0o077, 0o700}} {
		old := syscall.Umask(int(c.umask))
		tmp, err := MkdirTemp(dir, ".out.new-")
		syscall.Umask(old)
		if err != nil {
			t.Fatal(err)
		}
		fi, err := os.Stat(tmp)
		if err != nil || fi.Mode().Perm() != c.want || !fi.IsDir() {
			t.Errorf("umask %04o: %v %v, want a folder of mode %v", c.umask, fi.Mode(), err, c.want)
		}
		if !IsTemp(filepath.Base(tmp), ".out.new-") {
			t.Errorf("%s: IsTemp does not know the name", tmp)
		}
	}
	if names, _ := os.ReadDir(dir); len(names) != 3 {
		t.Errorf("%d folders made, want 3 distinct", len(names))
	}
}

// A file written (Stage, Write) gets the mode a new file gets under the
// umask (probe 24: 0644 under umask 077, readable by every user).
func TestWrittenFileFollowsUmask(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct{ umask, want os.FileMode }{{0o022, 0o644}, {0o077, 0o600}, {0o002, 0o664}} {
		path := filepath.Join(dir, fmt.Sprintf("f%o", c.umask))
		old := syscall.Umask(int(c.umask))
		err := Write(path, func(w io.Writer) error { _, err := io.WriteString(w, "x"); return err })
		syscall.Umask(old)
		if err != nil {
			t.Fatal(err)
		}
		if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != c.want {
			t.Errorf("umask %04o: %v %v, want mode %v", c.umask, fi.Mode(), err, c.want)
		}
	}
}

// Probe 25: a legal name too long for its staging name (.NAME.tmpN) was
// refused as "open: file name too long"; the refusal says by how much.
func TestWriteNameTooLongForStaging(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, strings.Repeat("a", 250)+".npy") // 254 bytes: a legal name
	err := Write(path, func(w io.Writer) error { return nil })
	if err == nil || !strings.Contains(err.Error(), path+": the name is ") || !strings.Contains(err.Error(), "bytes too long: it is written first as .") {
		t.Errorf("%v", err)
	}
	ok := filepath.Join(dir, strings.Repeat("a", 200)+".npy")
	if err := Write(ok, func(w io.Writer) error { return nil }); err != nil {
		t.Errorf("a 204-byte name: %v", err)
	}
}

// Probe 32: Stage made its file, then registered it: an interrupt's
// RemoveTemps and exit in between left an empty .NAME.tmpN behind the
// message "the partial files being written were removed". The file is
// made and registered with temps.mu held, which RemoveTemps needs.
func TestStageCreatesAndTracksAsOneStep(t *testing.T) {
	dir := t.TempDir()
	want := filepath.Join(dir, "x")
	path, untrack, err := createTracked(func() (string, error) {
		if temps.mu.TryLock() {
			temps.mu.Unlock()
			t.Error("RemoveTemps could run between the file's creation and its registration")
		}
		return want, os.WriteFile(want, nil, 0o644)
	})
	if err != nil || path != want {
		t.Fatal(path, err)
	}
	defer untrack()
	s, err := Stage(filepath.Join(dir, "y"), func(w io.Writer) error { _, err := w.Write([]byte("y")); return err })
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	temps.mu.Lock()
	tracked := slices.Collect(maps.Values(temps.paths))
	temps.mu.Unlock()
	for _, p := range []string{want, s.f.Name()} {
		if !slices.Contains(tracked, p) {
			t.Errorf("%s not registered (%v)", p, tracked)
		}
	}
}

// OnRemoveTemps's undos run after the tracked paths are removed, the last
// registered first, not once cancelled, and at once after RemoveTemps.
func TestOnRemoveTemps(t *testing.T) {
	dir := t.TempDir()
	tmp := filepath.Join(dir, ".x.tmp1")
	os.WriteFile(tmp, nil, 0o644)
	track(tmp)
	var order []string
	OnRemoveTemps(func() {
		if _, err := os.Stat(tmp); err == nil {
			t.Error("an undo ran before the tracked paths were removed")
		}
		order = append(order, "first")
	})
	OnRemoveTemps(func() { order = append(order, "second") })
	OnRemoveTemps(func() { order = append(order, "cancelled") })()
	RemoveTemps()
	if !slices.Equal(order, []string{"second", "first"}) {
		t.Errorf("undos ran as %v, want second, first", order)
	}
	OnRemoveTemps(func() { order = append(order, "late") })
	if order[len(order)-1] != "late" {
		t.Error("an undo registered after RemoveTemps did not run at once")
	}
	temps.mu.Lock()
	temps.closed = false
	temps.mu.Unlock()
}

// Probe 38: a file put in a tracked folder as RemoveTemps removed it (a
// figure renamed into compare's staging folder) made RemoveAll fail with
// "directory not empty", and the folder was left; it is removed again.
func TestRemoveTempsRemovesAFolderFilledMeanwhile(t *testing.T) {
	dir := filepath.Join(t.TempDir(), ".compare-1")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	track(dir)
	calls := 0
	removeAll = func(p string) error {
		calls++
		err := os.RemoveAll(p)
		if calls == 1 { // a figure arrives as the folder is emptied
			os.Mkdir(p, 0o755)
			os.WriteFile(filepath.Join(p, "max-rhat.png"), nil, 0o644)
			return &fs.PathError{Op: "unlinkat", Path: p, Err: syscall.ENOTEMPTY}
		}
		return err
	}
	defer func() {
		removeAll = os.RemoveAll
		temps.mu.Lock()
		temps.closed = false
		temps.mu.Unlock()
	}()
	removed := RemoveTemps()
	if _, err := os.Lstat(dir); err == nil || len(removed) != 1 {
		t.Errorf("the folder filled as it was removed is left (removed %v)", removed)
	}
}

// track registers the existing path for RemoveTemps, as createTracked
// does what it makes.
func track(path string) (untrack func()) {
	temps.mu.Lock()
	defer temps.mu.Unlock()
	return register(path)
}

// Probe 43: reproduce appended to a run's log.txt through a symbolic
// link, hung on a FIFO there, and changed in place a log.txt that a cp
// -al copy of the folder shared. OpenAppend refuses the first two and
// gives the third a copy of its own first.
func TestOpenAppend(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "log.txt")
	f, err := OpenAppend(log)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("one\n")
	f.Close()
	shared := filepath.Join(dir, "copy.txt")
	if err := os.Link(log, shared); err != nil {
		t.Fatal(err)
	}
	if f, err = OpenAppend(log); err != nil {
		t.Fatal(err)
	}
	f.WriteString("two\n")
	f.Close()
	if b, _ := os.ReadFile(log); string(b) != "one\ntwo\n" {
		t.Errorf("log.txt holds %q", b)
	}
	if b, _ := os.ReadFile(shared); string(b) != "one\n" {
		t.Errorf("the copy's file, a hard link of log.txt, holds %q, want it kept", b)
	}

	victim := filepath.Join(dir, "victim.txt")
	os.WriteFile(victim, []byte("mine\n"), 0o644)
	link := filepath.Join(dir, "link.txt")
	os.Symlink(victim, link)
	if _, err := OpenAppend(link); err == nil || !strings.Contains(err.Error(), link+" is a symbolic link, want a regular file") {
		t.Errorf("a symbolic link: %v", err)
	}
	if b, _ := os.ReadFile(victim); string(b) != "mine\n" {
		t.Errorf("written through the link: %q", b)
	}
	fifo := filepath.Join(dir, "fifo.txt")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skip("no FIFO here:", err)
	}
	done := make(chan error, 1)
	go func() { _, err := OpenAppend(fifo); done <- err }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), fifo+" is a named pipe (FIFO), want a regular file") {
			t.Errorf("a FIFO: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("OpenAppend of a FIFO with no reader did not return in 10 s")
	}
}
