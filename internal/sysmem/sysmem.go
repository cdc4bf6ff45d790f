// Package sysmem reads how much memory the machine has, so that readers
// and run configurations can refuse work that would not fit before they
// allocate it.
package sysmem

import (
	"bufio"
	"fmt"
	"os"
	"runtime"
	"runtime/metrics"
	"strconv"
	"strings"
)

// Total returns the machine's memory in bytes (MemTotal of /proc/meminfo),
// and false where it cannot be read.
func Total() (float64, bool) {
	kb, ok := procKB("/proc/meminfo", "MemTotal:")
	return kb * 1024, ok && kb > 0
}

// procKB reads the field key (with its colon) of a /proc file in kB, and
// false where it cannot.
func procKB(path, key string) (float64, bool) {
	f, err := os.Open(path)
	if err != nil {
		return 0, false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 2 && fields[0] == key {
			kb, err := strconv.ParseFloat(fields[1], 64)
			return kb, err == nil && kb >= 0
		}
	}
	return 0, false
}

// Limit returns def, or half the machine's memory, or half the address
// space that ulimit -v leaves (AddressSpaceFree), if that is less: the
// most a single job should plan to use.
func Limit(def float64) float64 {
	if total, ok := Total(); ok && total/2 < def {
		def = total / 2
	}
	if free, ok := AddressSpaceFree(); ok && free/2 < def {
		def = max(free/2, 0)
	}
	return def
}

// AddressSpaceFree returns the address space (bytes) that the process's
// limit (ulimit -v) leaves for its work, and false when there is no limit:
// the limit less what the process has mapped already (VmSize: code,
// libraries, the Go runtime's reservations) and less threadsToCome (the
// C allocator arenas and stacks of the threads still to come). Under
// ulimit -v, a failed mapping stops a Go process with a fatal "out of
// memory" (or leaves OpenBLAS retrying for ever), however little memory
// it uses: measured on a 2-core machine, energy on a conv model maps
// 1.45 GB before its first evaluation and 2.0 GB at the end of one with
// 10 points.
func AddressSpaceFree() (float64, bool) {
	as, ok := addressSpaceLimit()
	if !ok {
		return 0, false
	}
	runtime.GC() // what is no longer used counts as free in the heap (goHeapReusable)
	used, _ := mapped()
	return as - used + goHeapReusable() - threadsToCome(), true
}

// goHeapReusable is the Go heap's mapped memory that holds nothing
// (free, or released to the system) and that the heap reuses before it
// maps more: mapped, but not spent (probe 54: the graphs the ONNX load
// checks had built left 5 GB mapped, and a one-point evaluation was
// refused under ulimit -v for the 190 MB said to be left).
func goHeapReusable() float64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/free:bytes"}, {Name: "/memory/classes/heap/released:bytes"}}
	metrics.Read(s)
	var b float64
	for _, v := range s {
		if v.Value.Kind() == metrics.KindUint64 {
			b += float64(v.Value.Uint64())
		}
	}
	return b
}

// glibc gives a thread that allocates an arena of arenaBytes of address
// space (mostly reserved, not used), up to 8 per core (M_ARENA_MAX's
// default on 64-bit systems); a thread started by C code (OpenBLAS, or
// the Go runtime where cgo is linked) has a stack of stackBytes. A
// process makes far fewer arenas than glibc allows: measured on 2 cores,
// train (d = 2) and sample (a convolutional ONNX energy) peaked at 7
// arenas and 9 threads. arenasPerCore is how many a run is expected to
// make in all.
const (
	arenaBytes    = 64 << 20
	arenasPerCore = 4
	stackBytes    = 8 << 20
)

// threadsToCome is the address space set aside for the threads not yet
// started: an arena and a stack for each arena still expected. The
// arenas mapped already are part of VmSize; counting them again made the
// free space depend on how many threads had started (probe 56: a run
// accepted at start was refused on resuming, which had started one more
// thread, 64 MiB more, by the time of its check).
func threadsToCome() float64 {
	have := 0
	if b, err := os.ReadFile("/proc/self/maps"); err == nil {
		have = countArenas(string(b))
	}
	return threadRoom(runtime.NumCPU(), have)
}

// threadRoom is the room kept for threads on cores cores once arenas
// arenas are mapped.
func threadRoom(cores, arenas int) float64 {
	return float64(max(arenasPerCore*cores-arenas, 0)) * (arenaBytes + stackBytes)
}

// countArenas counts glibc's thread arenas in a /proc/PID/maps listing:
// anonymous mappings that start at a multiple of arenaBytes and are
// arenaBytes long in all, a read-write part (the arena's heap so far)
// followed by an inaccessible one (the rest of its reservation). A Go heap
// still within one 64 MiB reservation looks the same: counted, it sets
// aside one thread fewer.
func countArenas(maps string) int {
	type region struct {
		start, end uint64
		perms      string
		anonymous  bool
	}
	var rs []region
	for _, line := range strings.Split(maps, "\n") {
		f := strings.Fields(line)
		if len(f) < 5 {
			continue
		}
		lo, hi, ok := strings.Cut(f[0], "-")
		start, err1 := strconv.ParseUint(lo, 16, 64)
		end, err2 := strconv.ParseUint(hi, 16, 64)
		if !ok || err1 != nil || err2 != nil || end < start {
			continue
		}
		rs = append(rs, region{start, end, f[1], len(f) == 5})
	}
	n := 0
	for i, r := range rs {
		if !r.anonymous || r.perms != "rw-p" || r.start%arenaBytes != 0 {
			continue
		}
		size := r.end - r.start
		if next := i + 1; next < len(rs) && rs[next].start == r.end && rs[next].anonymous && rs[next].perms == "---p" {
			size += rs[next].end - rs[next].start
		}
		if size == arenaBytes {
			n++
		}
	}
	return n
}

// mapped returns the process's mapped address space (VmSize of
// /proc/self/status) in bytes, and false where it cannot be read.
func mapped() (float64, bool) {
	kb, ok := procKB("/proc/self/status", "VmSize:")
	return kb * 1024, ok
}

// Why says how Limit(def) came about, for messages: "8 GiB, or half the
// machine's memory (12 GiB) if less", plus, under ulimit -v, what the limit
// leaves free once the process's own mappings are counted.
func Why(def float64) string {
	s := Bytes(def)
	if total, ok := Total(); ok {
		s += fmt.Sprintf(", or half the machine's memory (%s)", Bytes(total))
	}
	if as, ok := addressSpaceLimit(); ok {
		used, _ := mapped()
		free, _ := AddressSpaceFree()
		s += fmt.Sprintf(", or half of the %s that ulimit -v %s leaves free (the process maps %s already, %s of it free in the Go heap, and keeps %s for the threads still to come)",
			Bytes(max(free, 0)), Bytes(as), Bytes(used), Bytes(goHeapReusable()), Bytes(threadsToCome()))
	}
	return s + ", whichever is least"
}

// GCLimit is the soft memory limit for the Go runtime (debug.SetMemoryLimit):
// under ulimit -v, what the process's Go memory uses now (goNow) plus 60%
// of the address space the limit leaves free (the rest is for the
// runtime's reservations beyond the heap, C allocations and threads);
// otherwise three quarters of the machine's memory. With none, the Go
// heap grows to twice its live size before a collection, and a run whose
// live memory fit its estimate died with a fatal "out of memory" at that
// peak (probe 51: sample, 310 chains of a conv EBM under ulimit -v). It
// returns false where neither is known.
func GCLimit(goNow float64) (float64, bool) {
	if free, ok := AddressSpaceFree(); ok {
		return goNow + 0.6*max(free, 0), true
	}
	if total, ok := Total(); ok {
		return 0.75 * total, true
	}
	return 0, false
}
