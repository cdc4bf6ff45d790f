package textclip

import "testing"

func TestCut(t *testing.T) {
	for _, c := range []struct {
		s    string
		n    int
		want string
	}{
		{"short", 40, "short"},
		{"abcdef", 3, "abc…"},
		{"€€€", 4, "€…"},        // € is 3 bytes: the second is not cut in two
		{"ä名", 2, "ä…"},         // ä is 2 bytes
		{"名前", 2, "…"},          // nothing whole fits
		{"a\xffb", 2, "a\xff…"}, // invalid bytes count as characters
	} {
		if got := Cut(c.s, c.n); got != c.want {
			t.Errorf("Cut(%q, %d) = %q, want %q", c.s, c.n, got, c.want)
		}
	}
}
