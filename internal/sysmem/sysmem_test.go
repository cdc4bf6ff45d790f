package sysmem

import "testing"

// On Linux the total is read and plausible (64 MiB to 64 TiB), and Limit
// is at most both its default and half the total.
func TestTotalAndLimit(t *testing.T) {
	total, ok := Total()
	if !ok {
		t.Skip("no /proc/meminfo")
	}
	if total < 64<<20 || total > 64<<40 {
		t.Errorf("total %v bytes", total)
	}
	if l := Limit(1 << 62); l != total/2 {
		t.Errorf("Limit(huge) = %v, want half of %v", l, total)
	}
	if l := Limit(1 << 20); l != 1<<20 {
		t.Errorf("Limit(1 MiB) = %v", l)
	}
}
