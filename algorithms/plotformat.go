package algorithms

import (
	"fmt"
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

// PlotFormat is the file format of a plot. The zero value is PNG.
type PlotFormat int

// The plot formats gonum/plot writes.
const (
	PNG PlotFormat = iota // raster, 96 dpi
	SVG                   // vector
	PDF                   // vector
)

var plotFormatNames = []string{PNG: "png", SVG: "svg", PDF: "pdf"}

// String returns the format's name: "png", "svg" or "pdf".
func (f PlotFormat) String() string {
	if f < 0 || int(f) >= len(plotFormatNames) {
		return fmt.Sprintf("PlotFormat(%d)", int(f))
	}
	return plotFormatNames[f]
}

// Ext returns the format's file extension with its dot (".png").
func (f PlotFormat) Ext() string { return "." + f.String() }

// Set parses a format name, case-insensitively (it implements flag.Value).
func (f *PlotFormat) Set(s string) error {
	for k, n := range plotFormatNames {
		if strings.EqualFold(s, n) {
			*f = PlotFormat(k)
			return nil
		}
	}
	return fmt.Errorf("plot format %q, want png, svg or pdf", s)
}

// Type names the flag's value type in help texts.
func (f *PlotFormat) Type() string { return "png|svg|pdf" }

// UnmarshalText is Set for encoding packages.
func (f *PlotFormat) UnmarshalText(b []byte) error { return f.Set(string(b)) }

// MarshalText writes the format's name.
func (f PlotFormat) MarshalText() ([]byte, error) { return []byte(f.String()), nil }

// plotFormatOf returns the format that path's extension names.
func plotFormatOf(path string) (PlotFormat, error) {
	var f PlotFormat
	ext := strings.TrimPrefix(filepath.Ext(path), ".")
	if err := f.Set(ext); err != nil {
		return 0, fmt.Errorf("%s: extension %q, want .png, .svg or .pdf", path, filepath.Ext(path))
	}
	return f, nil
}

// newCanvas returns a w × h canvas of format f.
func newCanvas(f PlotFormat, w, h vg.Length) vg.CanvasWriterTo {
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
	f, err := plotFormatOf(path)
	if err != nil {
		return err
	}
	c := newCanvas(f, w, h)
	paint(draw.New(c))
	return safefile.Write(path, func(wr io.Writer) error { _, err := c.WriteTo(wr); return err })
}
