//go:build race

package layers

// rqRaceDetector says that the race detector is on: its sync.Pool drops
// a share of what is put back, so pooled scratch is allocated again.
const rqRaceDetector = true
