package sysmem

import "math"

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
func (a *Accepted) Raise(limit float64) float64 {
	if a == nil || !(a.Limit > limit) || math.IsInf(a.Limit, 0) || !(a.Limit <= a.Total/2) || (a.Ulimit > 0 && !(a.Limit <= a.Ulimit/2)) {
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
