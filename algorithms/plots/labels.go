package plots

import (
	"slices"
	"strings"
	"unicode"

	"golang.org/x/image/font/sfnt"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
)

// fitText is s, or s with its middle replaced by "…" where s is wider than
// width in style sty: the start and the end of a name (a model's parameter
// r_subject__Intercept[...], a column's header) both stay readable. Round
// 72 B1, B2: names of 90 to 156 characters as axis labels squeezed the
// plot to a strip, or to nothing.
func fitText(s string, sty text.Style, width vg.Length) string {
	if lines := strings.Split(s, "\n"); len(lines) > 1 { // each line of a title of several (round 83 B1: a second line's note was cut)
		for i, l := range lines {
			lines[i] = fitText(l, sty, width)
		}
		return strings.Join(lines, "\n")
	}
	if sty.Width(s) <= width {
		return s
	}
	runes := []rune(s)
	for keep := len(runes) - 1; keep > 1; keep-- {
		head := (keep + 1) / 2
		t := string(runes[:head]) + "…" + string(runes[len(runes)-(keep-head):])
		if sty.Width(t) <= width {
			return t
		}
	}
	return string(runes[0]) + "…" // s is wider than width: not empty
}

// wrapText is the title s with each line wider than width in style sty
// broken at spaces into lines that fit, a word wider than width shortened
// in its middle (fitText). Round 100 A2: a title's note was cut in its
// middle beside a wide legend.
func wrapText(s string, sty text.Style, width vg.Length) string {
	var out []string
	for _, line := range strings.Split(s, "\n") {
		cur := ""
		for _, word := range strings.Fields(line) {
			switch next := strings.TrimSpace(cur + " " + word); {
			case sty.Width(next) <= width:
				cur = next
			case cur == "":
				out = append(out, fitText(word, sty, width))
			default:
				out = append(out, cur)
				cur = fitText(word, sty, width)
			}
		}
		if cur != "" || line == "" {
			out = append(out, cur)
		}
	}
	return strings.Join(out, "\n")
}

// fitLabels wraps p's title and shortens its axis labels to fit a plot area of the
// given size, each along the side it is drawn on.
func fitLabels(p *plot.Plot, w, h vg.Length) {
	p.Title.Text = wrapText(p.Title.Text, p.Title.TextStyle, w)
	p.X.Label.Text = fitText(p.X.Label.Text, p.X.Label.TextStyle, w)
	p.Y.Label.Text = fitText(p.Y.Label.Text, p.Y.Label.TextStyle, h)
}

// Undrawable returns the distinct characters of s, in order, that the
// figures' font has no glyph for: PNG and PDF draw them blank (an SVG names
// the font and leaves the text to its viewer, which finds another). Spaces
// and characters that do not print are not counted. Round 73: names in CJK
// were drawn as blanks, unsaid.
func Undrawable(s string) []rune {
	face := font.DefaultCache.Lookup(plot.DefaultFont, 12).Face
	var buf sfnt.Buffer
	var missing []rune
	for _, r := range s {
		if unicode.IsSpace(r) || !unicode.IsPrint(r) || slices.Contains(missing, r) {
			continue
		}
		if g, err := face.GlyphIndex(&buf, r); err != nil || g == 0 {
			missing = append(missing, r)
		}
	}
	return missing
}
