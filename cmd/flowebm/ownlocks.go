package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
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
	return func() {
		ownLocks.Lock()
		delete(ownLocks.ids, id)
		ownLocks.Unlock()
	}
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

// parentLocksFromEnv adds the locks that the parent reproduce passed,
// until forget is called.
func parentLocksFromEnv() (forget func()) {
	var ids []lockID
	for _, s := range strings.Fields(os.Getenv(parentLocksEnv)) {
		var id lockID
		if _, err := fmt.Sscanf(s, "%d:%d", &id.dev, &id.ino); err == nil {
			addOwnLock(id)
			ids = append(ids, id)
		}
	}
	return func() {
		ownLocks.Lock()
		for _, id := range ids {
			delete(ownLocks.ids, id)
		}
		ownLocks.Unlock()
	}
}

// ownLocksEnv is the environment entry passing the lock of the folder dir
// to a child process (parentLocksEnv).
func ownLocksEnv(dir string) string {
	id, _ := idOf(filepath.Join(dir, ".lock"))
	return fmt.Sprintf("%s=%d:%d", parentLocksEnv, id.dev, id.ino)
}
