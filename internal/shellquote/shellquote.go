// Package shellquote writes a path or word as a POSIX shell reads it back
// as one word: the commands flowebm advises can be pasted as they are.
package shellquote

import "strings"

// Quote is s as one shell word: as it is where it holds only characters
// the shell takes literally, else in single quotes (a quote inside
// written '\”); ” for the empty string.
func Quote(s string) string {
	if s == "" {
		return "''"
	}
	if strings.IndexFunc(s, func(c rune) bool {
		return !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("_@%+:,./-", c))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
