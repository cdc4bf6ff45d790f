package sysmem

import (
	"os"
	"strconv"
	"strings"
	"testing"
)

// Probe 56: the same run mapped 64 MiB more on resuming than at its start
// (one more thread's C allocator arena, and its stack, by the time of the
// memory check), and a run accepted at start was refused on resuming. The
// listings are /proc/self/maps at that check in the two processes (2
// cores, ulimit -v 5.72 GiB): 6 and 7 arenas (counted independently with
// a Python reading of the same rule). With the arenas counted as threads
// come, what is free differs by less than one thread's stack between
// them; counted only as mapped, it differed by the arena.
func TestArenasCountAsThreadsCome(t *testing.T) {
	free := map[string]float64{}
	for name, want := range map[string]int{"start": 6, "resume": 7} {
		b, err := os.ReadFile("testdata/maps_" + name + ".txt")
		if err != nil {
			t.Fatal(err)
		}
		got := countArenas(string(b))
		if got != want {
			t.Errorf("%s: %d arenas, want %d", name, got, want)
		}
		const cores = 2 // where the listings were taken
		free[name] = -mappedIn(t, string(b)) - threadRoom(cores, got)
	}
	if d := free["start"] - free["resume"]; d > stackBytes || d < -stackBytes {
		t.Errorf("free at start and at resume differ by %s, want less than %s", Bytes(d), Bytes(stackBytes))
	}
}

// mappedIn sums the sizes of the mappings of a /proc/PID/maps listing
// (its VmSize).
func mappedIn(t *testing.T, maps string) float64 {
	sum := 0.0
	for _, line := range strings.Split(strings.TrimSpace(maps), "\n") {
		lo, hi, _ := strings.Cut(strings.Fields(line)[0], "-")
		a, err1 := strconv.ParseUint(lo, 16, 64)
		b, err2 := strconv.ParseUint(hi, 16, 64)
		if err1 != nil || err2 != nil {
			t.Fatalf("line %q", line)
		}
		sum += float64(b - a)
	}
	return sum
}

// What is not an arena: a mapping of a file, one not aligned to 64 MiB, one
// whose two parts are not 64 MiB together, and a read-only one.
func TestCountArenasRefusesLookalikes(t *testing.T) {
	for _, tc := range []struct {
		maps string
		want int
	}{
		{"7f0004000000-7f0004021000 rw-p 00000000 00:00 0\n7f0004021000-7f0008000000 ---p 00000000 00:00 0\n", 1},
		{"7f0004000000-7f0008000000 rw-p 00000000 00:00 0\n", 1}, // an arena grown to its whole reservation
		{"7f0004000000-7f0004021000 rw-p 00000000 08:01 42 /lib/libx.so\n7f0004021000-7f0008000000 ---p 00000000 00:00 0\n", 0},
		{"7f0004001000-7f0004021000 rw-p 00000000 00:00 0\n7f0004021000-7f0008001000 ---p 00000000 00:00 0\n", 0},
		{"7f0004000000-7f0004021000 rw-p 00000000 00:00 0\n7f0004021000-7f000c000000 ---p 00000000 00:00 0\n", 0},
		{"7f0004000000-7f0004021000 r--p 00000000 00:00 0\n7f0004021000-7f0008000000 ---p 00000000 00:00 0\n", 0},
		{"", 0},
	} {
		if got := countArenas(tc.maps); got != tc.want {
			t.Errorf("countArenas(%q) = %d, want %d", tc.maps, got, tc.want)
		}
	}
}

// countArenas reads any text without panicking, and counts at most one
// arena per line.
func FuzzCountArenas(f *testing.F) {
	if b, err := os.ReadFile("testdata/maps_resume.txt"); err == nil {
		f.Add(string(b))
	}
	f.Add("7f0004000000-7f0004021000 rw-p 00000000 00:00 0\n7f0004021000-7f0008000000 ---p 00000000 00:00 0\n")
	f.Add("ffffffffffffffff-0 rw-p 0 0 0\n")
	f.Fuzz(func(t *testing.T, maps string) {
		if n := countArenas(maps); n < 0 || n > strings.Count(maps, "\n")+1 {
			t.Errorf("%d arenas in %d lines", n, strings.Count(maps, "\n")+1)
		}
	})
}
