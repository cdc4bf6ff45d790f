//go:build unix

package sysmem

import "syscall"

// addressSpaceLimit returns the process's RLIMIT_AS (ulimit -v) in bytes,
// and false when there is none.
func addressSpaceLimit() (float64, bool) {
	var r syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_AS, &r) != nil || r.Cur == ^uint64(0) { // RLIM_INFINITY
		return 0, false
	}
	return float64(r.Cur), true
}
