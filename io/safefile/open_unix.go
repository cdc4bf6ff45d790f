//go:build unix

package safefile

import "syscall"

// openNonblock opens a FIFO without waiting for a writer (Open then
// refuses it); it changes nothing for a regular file.
const openNonblock = syscall.O_NONBLOCK
