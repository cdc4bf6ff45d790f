package sysmem

import (
	"fmt"
	"sort"
	"strings"
)

// DefaultLimit is the most memory (bytes) the largest buffers of a run may
// need, as estimated from its configuration, unless the machine has less:
// then Limit(DefaultLimit) is half of /proc/meminfo's MemTotal.
const DefaultLimit = 8 << 30

// Term is one buffer of a memory estimate: the fields that size it and its
// size in bytes (a float, so that absurd configurations do not overflow).
type Term struct {
	What  string
	Bytes float64
}

// Check refuses an estimate whose buffers (terms, summed) need more than
// limit bytes, naming the largest, before any is allocated. The terms are
// reordered.
func Check(terms []Term, limit float64) error {
	total := 0.0
	for _, t := range terms {
		total += t.Bytes
	}
	if !(total > limit) {
		return nil
	}
	sort.SliceStable(terms, func(i, j int) bool { return terms[i].Bytes > terms[j].Bytes })
	var names []string
	sum := 0.0
	for _, t := range terms {
		// The terms that make up most of the estimate.
		names = append(names, fmt.Sprintf("%s = %s", t.What, Bytes(t.Bytes)))
		sum += t.Bytes
		if sum >= total/2 || len(names) == 3 {
			break
		}
	}
	need, have := Bytes(total), Bytes(limit)
	if need == have { // probe 57: "about 950 MiB of memory, over the limit of 950 MiB"
		need, have = fmt.Sprintf("%.0f B", total), fmt.Sprintf("%.0f B", limit)
	}
	return &OverError{fmt.Sprintf("algorithms: the configuration needs about %s of memory, over the limit of %s (%s): %s; lower these fields",
		need, have, Why(DefaultLimit), strings.Join(names, "; "))}
}

// OverError is Check's refusal of an estimate over its limit: a
// configuration that would not fit, which --print-config still prints
// (probe 54: refused, the file to lower the fields in could not be had).
type OverError struct{ msg string }

func (e *OverError) Error() string { return e.msg }

// Bytes writes a size in bytes with a binary unit (3 significant digits).
func Bytes(b float64) string {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"}
	i := 0
	for b >= 1024 && i < len(units)-1 {
		b /= 1024
		i++
	}
	if b >= 999.5 { // 1000–1023: %.3g would write 1e+03
		return fmt.Sprintf("%.0f %s", b, units[i])
	}
	return fmt.Sprintf("%.3g %s", b, units[i])
}
