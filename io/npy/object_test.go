package npy

import (
	"strings"
	"testing"
)

// Probe 56 A3: an object array ("|O") was told to want "a NumPy type
// string such as '<f8'", which "|O" is; it is told to hold numbers.
func TestObjectArrayMessage(t *testing.T) {
	if _, err := parseDtype("|O"); err == nil || !strings.Contains(err.Error(), "not an object array") {
		t.Errorf("%v", err)
	}
}
