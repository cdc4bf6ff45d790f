//go:build !unix

package safefile

import "io/fs"

// openNonblock, openNoFollow: no such opens here (the checks that follow
// them stand alone).
const (
	openNonblock = 0
	openNoFollow = 0
)

// links: hard links are not counted here.
func links(fs.FileInfo) uint64 { return 1 }
