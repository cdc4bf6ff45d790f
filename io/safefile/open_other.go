//go:build !unix

package safefile

// openNonblock: no non-blocking open here (Open's check follows it).
const openNonblock = 0
