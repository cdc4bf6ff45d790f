//go:build !unix

package sysmem

// addressSpaceLimit: no address-space limit is known here.
func addressSpaceLimit() (float64, bool) { return 0, false }
