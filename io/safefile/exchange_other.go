//go:build !linux

package safefile

// exchange reports that this system has no atomic exchange of two paths.
var exchange = func(a, b string) error { return errNoExchange }
