// Package textclip shortens text quoted in error messages.
package textclip

import "unicode/utf8"

// Cut returns s if it has at most n bytes, else its first whole
// characters within n bytes followed by "…": a cut never splits a UTF-8
// character (which a message would show as \xe2…).
func Cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
