// Package sysmem reads how much memory the machine has, so that readers
// and run configurations can refuse work that would not fit before they
// allocate it.
package sysmem

import (
	"bufio"
	"os"
	"strconv"
	"strings"
)

// Total returns the machine's memory in bytes (MemTotal of /proc/meminfo),
// and false where it cannot be read.
func Total() (float64, bool) {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0, false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 2 && fields[0] == "MemTotal:" {
			kb, err := strconv.ParseFloat(fields[1], 64)
			if err != nil || kb <= 0 {
				return 0, false
			}
			return kb * 1024, true
		}
	}
	return 0, false
}

// Limit returns def, or half the machine's memory, or half the process's
// address-space limit (ulimit -v), if that is less: the most a single job
// should plan to use.
func Limit(def float64) float64 {
	if total, ok := Total(); ok && total/2 < def {
		def = total / 2
	}
	if as, ok := addressSpaceLimit(); ok && as/2 < def {
		def = as / 2
	}
	return def
}
