package plots

import (
	"fmt"
	"image/color"
	"io"
	"path/filepath"
	"strings"

	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgpdf"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/flowebm/flowebm/io/safefile"
)

// Format is the file format of a plot. The zero value is PNG.
type Format int

// The plot formats gonum/plot writes.
const (
	PNG Format = iota // raster, 96 dpi
	SVG               // vector
	PDF               // vector
)

var formatNames = []string{PNG: "png", SVG: "svg", PDF: "pdf"}

// String returns the format's name: "png", "svg" or "pdf".
func (f Format) String() string {
	if f < 0 || int(f) >= len(formatNames) {
		return fmt.Sprintf("Format(%d)", int(f))
	}
	return formatNames[f]
}

// Ext returns the format's file extension with its dot (".png").
func (f Format) Ext() string { return "." + f.String() }

// Set parses a format name, case-insensitively (it implements flag.Value).
func (f *Format) Set(s string) error {
	for k, n := range formatNames {
		if strings.EqualFold(s, n) {
			*f = Format(k)
			return nil
		}
	}
	return fmt.Errorf("plot format %q, want png, svg or pdf", s)
}

// Type names the flag's value type in help texts.
func (f *Format) Type() string { return "png|svg|pdf" }

// UnmarshalText is Set for encoding packages.
func (f *Format) UnmarshalText(b []byte) error { return f.Set(string(b)) }

// MarshalText writes the format's name.
func (f Format) MarshalText() ([]byte, error) { return []byte(f.String()), nil }

// plotFormatOf returns the format that path's extension names.
func formatOf(path string) (Format, error) {
	var f Format
	ext := strings.TrimPrefix(filepath.Ext(path), ".")
	if err := f.Set(ext); err != nil {
		return 0, fmt.Errorf("%s: extension %q, want .png, .svg or .pdf", path, filepath.Ext(path))
	}
	return f, nil
}

// newCanvas returns a w × h canvas of format f.
func newCanvas(f Format, w, h vg.Length) vg.CanvasWriterTo {
	switch f {
	case SVG:
		return vgsvg.New(w, h)
	case PDF:
		return vgpdf.New(w, h)
	}
	return vgimg.PngCanvas{Canvas: vgimg.New(w, h)}
}

// writePlotFile draws a w × h figure with paint and writes it to path
// atomically, in the format that path's extension names.
func writePlotFile(path string, w, h vg.Length, paint func(draw.Canvas)) error {
	f, err := formatOf(path)
	if err != nil {
		return err
	}
	c := newCanvas(f, w, h)
	dc := draw.New(c)
	// The whole canvas white: a plot paints its own panel only, and an
	// SVG's or PDF's legend column beside it was transparent, unreadable
	// on a dark viewer (probe 67 B3).
	dc.SetColor(color.White)
	dc.Fill(dc.Rectangle.Path())
	paint(dc)
	return safefile.Write(path, func(wr io.Writer) error { _, err := c.WriteTo(wr); return err })
}
