package shellquote

import "testing"

func TestQuote(t *testing.T) {
	for in, want := range map[string]string{
		"":                   "''",
		"run1/metrics.csv":   "run1/metrics.csv",
		"run x3/metrics.csv": "'run x3/metrics.csv'",
		"it's":               `'it'\''s'`,
		"é":                  "'é'",
	} {
		if got := Quote(in); got != want {
			t.Errorf("Quote(%q) = %s, want %s", in, got, want)
		}
	}
}
