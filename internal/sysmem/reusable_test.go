package sysmem

import (
	"syscall"
	"testing"

	"github.com/flowebm/flowebm/internal/childtest"
)

// sink keeps an allocation from being optimised away.
var sink []byte

// Probe 54 A3: memory the Go heap had used and freed stayed mapped, and
// under ulimit -v it was counted as spent: after an ONNX graph's load
// checks, a one-point evaluation was refused. Under a limit (in a child
// process, whose limit alone is lowered), 1 GiB allocated and dropped
// leaves AddressSpaceFree within 256 MiB of what it was before.
func TestFreedHeapCountsAsFree(t *testing.T) {
	if !childtest.Run(t, "TestFreedHeapCountsAsFree", "FLOWEBM_TEST_REUSABLE_CHILD") {
		return
	}
	used, ok := mapped()
	if !ok {
		t.Skip("no /proc/self/status")
	}
	if err := syscall.Setrlimit(syscall.RLIMIT_AS, &syscall.Rlimit{Cur: uint64(used) + 4<<30, Max: ^uint64(0)}); err != nil {
		t.Skipf("setrlimit: %v", err)
	}
	before, _ := AddressSpaceFree()
	sink = make([]byte, 1<<30)
	for i := range sink {
		sink[i] = 1
	}
	sink = nil
	after, _ := AddressSpaceFree()
	if after < before-256<<20 {
		t.Errorf("AddressSpaceFree %s before 1 GiB was allocated and dropped, %s after", Bytes(before), Bytes(after))
	}
}
