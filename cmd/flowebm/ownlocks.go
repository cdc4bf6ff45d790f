package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// A train --seeds holds its folder OUT while its runs train in OUT/sSEED,
// and reproduce holds its --out while its train processes train in
// OUT/runs/NAME: those names are the holder's (holderWrites), refused to
// other commands (probe 47: compare --out OUT/s3 and a train into a
// reproduce's run folder were accepted, and the holder failed later), yet
// the holder's own runs write there. The folder locks a process holds for
// its own runs, and those its parent reproduce holds (passed in
// parentLocksEnv), are not another process's: lockedByOther skips them.

// parentLocksEnv passes a reproduce's folder lock to its train processes,
// as DEVICE:INODE of the lock file.
const parentLocksEnv = "FLOWEBM_PARENT_LOCKS"

// lockID is a lock file's identity.
type lockID struct{ dev, ino uint64 }

// ownLocks are the lock files held for this process's own runs. They are
// process state, as the flocks themselves are.
var ownLocks struct {
	sync.Mutex
	ids map[lockID]bool
}

// idOf is the identity of the file at path.
func idOf(path string) (lockID, bool) {
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		return lockID{}, false
	}
	return lockID{uint64(st.Dev), st.Ino}, true
}

// ownLock counts the lock of the folder dir, which this process holds, as
// its own runs' (not another process's) until the returned func is
// called.
func ownLock(dir string) (forget func()) {
	id, ok := idOf(filepath.Join(dir, ".lock"))
	if !ok {
		return func() {}
	}
	addOwnLock(id)
	return func() { forgetOwnLocks(id) }
}

// forgetOwnLocks removes ids from ownLocks.
func forgetOwnLocks(ids ...lockID) {
	ownLocks.Lock()
	for _, id := range ids {
		delete(ownLocks.ids, id)
	}
	ownLocks.Unlock()
}

func addOwnLock(id lockID) {
	ownLocks.Lock()
	if ownLocks.ids == nil {
		ownLocks.ids = map[lockID]bool{}
	}
	ownLocks.ids[id] = true
	ownLocks.Unlock()
}

// isOwnLock reports whether the lock file at path is one of ownLocks.
func isOwnLock(path string) bool {
	id, ok := idOf(path)
	if !ok {
		return false
	}
	ownLocks.Lock()
	defer ownLocks.Unlock()
	return ownLocks.ids[id]
}

// parentLocksFromEnv adds the locks that the parent reproduce passed and
// holds (/proc/locks: probe 48, any command given the variable skipped
// any folder's lock), until forget is called.
func parentLocksFromEnv() (forget func()) {
	var ids []lockID
	for _, s := range strings.Fields(os.Getenv(parentLocksEnv)) {
		var id lockID
		if _, err := fmt.Sscanf(s, "%d:%d", &id.dev, &id.ino); err == nil && heldByParent(id) {
			addOwnLock(id)
			ids = append(ids, id)
		}
	}
	return func() { forgetOwnLocks(ids...) }
}

// ownLocksEnv is the environment entry passing the lock of the folder dir
// to a child process (parentLocksEnv).
func ownLocksEnv(dir string) string {
	id, _ := idOf(filepath.Join(dir, ".lock"))
	return fmt.Sprintf("%s=%d:%d", parentLocksEnv, id.dev, id.ino)
}

// heldByParent reports whether this process's parent holds the exclusive
// flock of the file id, as /proc/locks lists it ("1: FLOCK ADVISORY WRITE
// PID MAJOR:MINOR:INODE 0 EOF", the device numbers in hexadecimal).
func heldByParent(id lockID) bool {
	b, err := os.ReadFile("/proc/locks")
	if err != nil {
		return false
	}
	want := fmt.Sprintf("%02x:%02x:%d", unix.Major(id.dev), unix.Minor(id.dev), id.ino)
	ppid := strconv.Itoa(os.Getppid())
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) >= 6 && f[1] == "FLOCK" && f[3] == "WRITE" && f[4] == ppid && f[5] == want {
			return true
		}
	}
	return false
}
