package sysmem

import (
	"math"
	"strings"
	"syscall"
	"testing"

	"github.com/flowebm/flowebm/internal/childtest"
)

// A run is held to the limit its start was accepted under where the
// machine and ulimit -v are what they were; not where either is smaller,
// nor where a limit is set that was not.
func TestAcceptedRaise(t *testing.T) {
	a := Accept(100)
	if got := (&Accepted{Limit: 50 + MaxDrift + 1, Total: a.Total, Ulimit: a.Ulimit}).Raise(50); got != 50 && a.Total/2 > 50+MaxDrift {
		t.Errorf("a record over the drift measured: %v, want 50", got)
	}
	if got := a.Raise(50); got != 100 {
		t.Errorf("same machine: Raise(50) = %v, want the 100 accepted", got)
	}
	if got := a.Raise(200); got != 200 {
		t.Errorf("Raise(200) = %v, want 200", got)
	}
	if got := (*Accepted)(nil).Raise(50); got != 50 {
		t.Errorf("none accepted: %v", got)
	}
	bigger := *a
	bigger.Total *= 2
	if got := bigger.Raise(50); got != 50 {
		t.Errorf("accepted on a machine twice this one: %v, want 50", got)
	}
	for _, l := range []float64{a.Total, math.Inf(1), math.NaN()} { // edited: no limit is over half the memory
		forged := *a
		forged.Limit = l
		if got := forged.Raise(50); got != 50 {
			t.Errorf("a recorded limit of %v on a machine of %v: %v, want 50", l, a.Total, got)
		}
	}
}

// The same under ulimit -v, in a child process whose limit alone is
// lowered: a record made without a limit, or under a higher one, is not
// honoured.
func TestAcceptedRaiseUnderUlimit(t *testing.T) {
	if !childtest.Run(t, "TestAcceptedRaiseUnderUlimit", "FLOWEBM_TEST_ACCEPTED_CHILD") {
		return
	}
	used, ok := mapped()
	if !ok {
		t.Skip("no /proc/self/status")
	}
	none := Accept(100) // no ulimit -v
	if err := syscall.Setrlimit(syscall.RLIMIT_AS, &syscall.Rlimit{Cur: uint64(used) + 8<<30, Max: ^uint64(0)}); err != nil {
		t.Skipf("setrlimit: %v", err)
	}
	if got := none.Raise(50); got != 50 {
		t.Errorf("accepted without ulimit -v, now under one: %v, want 50", got)
	}
	under := Accept(100)
	if got := under.Raise(50); got != 100 {
		t.Errorf("the same ulimit -v: %v, want 100", got)
	}
	forged := *under
	forged.Limit = forged.Ulimit
	if got := forged.Raise(50); got != 50 {
		t.Errorf("a recorded limit of the whole ulimit -v: %v, want 50", got)
	}
	if err := syscall.Setrlimit(syscall.RLIMIT_AS, &syscall.Rlimit{Cur: uint64(used) + 4<<30, Max: ^uint64(0)}); err != nil {
		t.Skipf("setrlimit: %v", err)
	}
	if got := under.Raise(50); got != 50 {
		t.Errorf("a lower ulimit -v: %v, want 50", got)
	}
}

// Where cites the record it was given only if a start could have made it
// (probe 58: an edited limit of 931 GiB was repeated as the run's).
func TestAcceptedWhere(t *testing.T) {
	ok := &Accepted{Limit: 1 << 30, Total: 1 << 34, Ulimit: 6000000 << 10}
	if w := ok.Where(); !strings.Contains(w, "accepted at its start under a limit of 1 GiB (ulimit -v 6000000") {
		t.Errorf("%s", w)
	}
	forged := &Accepted{Limit: 1e12, Total: 1 << 34, Ulimit: 2400000 << 10}
	if w := forged.Where(); strings.Contains(w, "931 GiB") || !strings.Contains(w, "not one a start could have recorded") {
		t.Errorf("%s", w)
	}
}
