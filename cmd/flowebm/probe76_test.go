package main

import (
	"fmt"
	"math"
	"testing"
)

// Round 75 B5 (left then): a header " h",h was refused as two columns
// both named "h", where the file holds " h": the message now says that
// spaces around a name are not part of it.
func TestDuplicateNamesBySpaces(t *testing.T) {
	dir := t.TempDir()
	row := func(ch, d int) string { return plainRow(ch, d) + fmt.Sprintf(",%.4f,%.4f", math.Sin(float64(ch*d)), math.Cos(float64(ch+d))) }
	refused(t, `spaced.csv: line 1: columns 3 and 4 are both named "h" (spaces around a name are not part of it)`,
		writeFile(t, dir, "spaced.csv", drawsCSV(`chain,draw," h",h`, row)))
}
