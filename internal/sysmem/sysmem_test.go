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

// Sizes read with their unit, 1,000 to 1,023 of a unit included (probe
// 20: a 1,000 MiB file read "1e+03 MiB").
func TestBytes(t *testing.T) {
	for b, want := range map[float64]string{512: "512 B", 1000 << 20: "1000 MiB", 1 << 30: "1 GiB", 3.91 * (1 << 30): "3.91 GiB", 1023.9 * (1 << 20): "1024 MiB"} {
		if got := Bytes(b); got != want {
			t.Errorf("Bytes(%g) = %q, want %q", b, got, want)
		}
	}
}
