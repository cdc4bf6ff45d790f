package sysmem

import (
	"fmt"
	"math"
)

// Accepted is the memory limit a run was accepted under at its start, with
// what it came from: the machine's memory and the address-space limit
// (ulimit -v; 0 for none). Under one ulimit -v the address space left free
// moves by 64–134 MB between identical processes, with the threads, C
// allocator arenas and heap arenas each has mapped by its check (probe 57:
// 2 of 5 resumes of a train run, and 4 of 8 of a sample run, were refused
// the sizes their starts had accepted, with advice a resume cannot
// follow). A run that has run under a limit is held to it again where
// neither the machine nor the ulimit is smaller (Raise).
type Accepted struct {
	Limit  float64 `json:"limit"`
	Total  float64 `json:"total"`
	Ulimit float64 `json:"ulimit,omitempty"`
}

// MaxDrift is the most Raise raises a limit: twice the drift of the limit
// measured between identical processes under one ulimit -v (67 MB).
const MaxDrift = 128 << 20

// Accept records limit, the limit a run is accepted under now.
func Accept(limit float64) *Accepted {
	a := &Accepted{Limit: limit}
	a.Total, _ = Total()
	a.Ulimit, _ = addressSpaceLimit()
	return a
}

// Raise returns limit, or the limit a was accepted under if that is more
// and neither the machine's memory nor the address-space limit is smaller
// now. A record no limit could have come from (more than half the memory
// or the address space it names, or not finite) changes nothing: it is
// not the run's.
//
// It raises the limit by at most MaxDrift: the limit is half the free
// address space, which moves by up to 134 MB between identical processes
// (measured, probe 57), so a start accepted under a limit at most 67 MB
// above now's; a record raising it further was edited, not measured
// (probe 58: a config.json edited to a limit of 1e12 let a resume run
// into a fatal "out of memory").
func (a *Accepted) Raise(limit float64) float64 {
	if !a.plausible() || !(a.Limit > limit) {
		return limit
	}
	if a.Limit > limit+MaxDrift {
		return limit
	}
	total, _ := Total()
	ulimit, limited := addressSpaceLimit()
	switch {
	case total < a.Total:
		return limit
	case limited && (a.Ulimit == 0 || ulimit < a.Ulimit):
		return limit
	}
	return a.Limit
}

// plausible says whether a limit could have been recorded as a: finite,
// positive, at most half the machine's memory and of the ulimit -v it
// names.
func (a *Accepted) plausible() bool {
	return a != nil && a.Limit > 0 && !math.IsInf(a.Limit, 0) && a.Limit <= a.Total/2 && (a.Ulimit == 0 || a.Limit <= a.Ulimit/2)
}

// Where says where a run accepted under a can resume: under the ulimit -v
// it started under, or a higher one (or none), on a machine as large.
func (a *Accepted) Where() string {
	switch {
	case a == nil:
		return "resume it where more memory is free (a higher ulimit -v, or none)"
	case !a.plausible(): // probe 58: an edited record was repeated as the run's
		return "resume it where more memory is free (a higher ulimit -v, or none); its memory_accepted is not one a start could have recorded (a limit over half the memory or the ulimit -v it names)"
	case a.Ulimit > 0:
		return fmt.Sprintf("it was accepted at its start under a limit of %s (ulimit -v %.0f, in KiB as the shell takes it): resume it under that ulimit -v or a higher one, or none", Bytes(a.Limit), a.Ulimit/1024)
	}
	return fmt.Sprintf("it was accepted at its start under a limit of %s, without ulimit -v: resume it without one", Bytes(a.Limit))
}
