package main

import (
	"testing"

	"github.com/flowebm/flowebm/internal/crosscheck"
)

// cross reports the cross-checks skipped for lack of a peer tool, in one
// line when the tests end.
var cross crosscheck.Recorder

func TestMain(m *testing.M) { cross.Main(m) }
