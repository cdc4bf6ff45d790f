//go:build unix

package safefile

import (
	"io/fs"
	"syscall"
)

// openNonblock opens a FIFO without waiting for a writer (Open then
// refuses it); it changes nothing for a regular file. openNoFollow
// refuses a symbolic link as the last part of the path.
const (
	openNonblock = syscall.O_NONBLOCK
	openNoFollow = syscall.O_NOFOLLOW
)

// links is the number of names of the file that fi describes (1 when
// unknown).
func links(fi fs.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && st.Nlink > 1 {
		return uint64(st.Nlink)
	}
	return 1
}
