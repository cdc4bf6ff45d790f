package plots

import (
	"bytes"
	"errors"
	"fmt"
	"image/png"
	"io"
	"os"
	"path/filepath"

	"github.com/flowebm/flowebm/algorithms/experiments"
	"github.com/flowebm/flowebm/algorithms/training"
	"github.com/flowebm/flowebm/io/safefile"
)

// RunFigures are the names (without extension) of the figures that
// WriteRun draws for r: density where r has a quadrature grid, the image
// figures of an image experiment, and the history's acceptance, rhat and
// weights where its evaluations give them.
func RunFigures(r *training.Run) []string {
	var names []string
	if r.Grid() != nil {
		names = append(names, "density")
	}
	if r.Experiment.Kind == experiments.KindImages {
		names = append(names, "samples")
		if _, err := os.Stat(filepath.Join(r.Dir, training.ImageSamplesFile)); err == nil {
			names = append(names, ChainsFigure, EnergiesFigure)
		}
	}
	if len(r.Evals) == 0 {
		return names
	}
	return append(names, runHistory(r).names()...)
}

// names are the figures that Write draws.
func (p History) names() []string {
	var names []string
	if p.acceptance() != nil {
		names = append(names, "acceptance")
	}
	rhat, weights := p.figures()
	if rhat != nil {
		names = append(names, "rhat")
	}
	if weights != nil {
		names = append(names, "weights")
	}
	return names
}

// runHistory is the History of r's evaluations.
func runHistory(r *training.Run) History {
	return History{Experiment: r.Experiment, Algorithm: r.Config.Train.Algorithm, RHatChains: r.Config.RHatChains, Evals: r.Evals}
}

// figureEnds are the bytes that end a whole figure file of each format
// (PNG's IEND chunk, SVG's closing tag, PDF's end-of-file marker, which
// may be followed by a line end).
var figureEnds = map[Format][]byte{
	PNG: {0, 0, 0, 0, 'I', 'E', 'N', 'D', 0xae, 0x42, 0x60, 0x82},
	SVG: []byte("</svg>"),
	PDF: []byte("%%EOF"),
}

// FigureDamage is why the figure file at path, of format f, is not whole:
// missing (an error wrapping fs.ErrNotExist), empty, cut before its
// format's end, or for PNG not decoding (a chunk's checksum, its image
// data); nil where it is whole.
func FigureDamage(path string, f Format) error {
	file, err := safefile.Open(path) // refuses a FIFO or folder there without waiting on it
	if err != nil {
		return err
	}
	defer file.Close()
	fi, err := file.Stat()
	if err != nil {
		return err
	}
	if fi.Size() == 0 {
		return fmt.Errorf("%s is empty", path)
	}
	const tail = 64 // room for the line ends after the marker
	at := max(fi.Size()-tail, 0)
	buf := make([]byte, fi.Size()-at)
	if _, err := file.ReadAt(buf, at); err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	if !bytes.Contains(buf, figureEnds[f]) {
		return fmt.Errorf("%s is cut short (it does not end as a %s file does)", path, f)
	}
	if f == PNG { // its chunks' checksums and image data (round 101 B3: a flipped byte inside passed)
		if _, err := file.Seek(0, io.SeekStart); err != nil {
			return err
		}
		if _, err := png.Decode(file); err != nil {
			return fmt.Errorf("%s is damaged (%v)", path, err)
		}
	}
	return nil
}
