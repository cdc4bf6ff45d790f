package nd

import (
	"fmt"

	"gorgonia.org/tensor"
)

// The convolution machinery shared by Conv and ConvTranspose. A
// convolution relates an "image" tensor (N, G·cImg, img…) and a "grid"
// tensor (N, G·cGrid, grid…) through weights (G·cGrid, cImg, kernel…):
// grid position o and kernel tap t meet image position o·stride − pad +
// t·dilation along each spatial axis. Conv computes the grid from the
// image (im2col, then one gemm per sample and group); ConvTranspose, like
// Conv's gradient with respect to its input, computes the image from the
// grid (a gemm, then col2im). Spatial axes are padded to three (leading
// axes of size 1) so that one code serves 1, 2 and 3 of them.

// convGeom is the spatial geometry of a convolution, on three axes.
type convGeom struct {
	img, grid, k, s, d, p [3]int
}

// convDims is a convolution's full geometry: n samples, G groups of cImg
// image and cGrid grid channels, and dims spatial axes.
type convDims struct {
	n, groups, cImg, cGrid, dims int
	geom                         convGeom
}

func (g *convGeom) imgVol() int  { return g.img[0] * g.img[1] * g.img[2] }
func (g *convGeom) gridVol() int { return g.grid[0] * g.grid[1] * g.grid[2] }
func (g *convGeom) kVol() int    { return g.k[0] * g.k[1] * g.k[2] }

// identity says whether im2col would copy the image: a 1×1 kernel at
// stride 1 without padding.
func (g *convGeom) identity() bool {
	return g.kVol() == 1 && g.s == [3]int{1, 1, 1} && g.p == [3]int{} && g.img == g.grid
}

// span returns the grid positions [lo, hi) along axis a whose tap t falls
// inside the image.
func (g *convGeom) span(a, t int) (int, int) {
	off := t*g.d[a] - g.p[a]
	lo := 0
	if off < 0 {
		lo = (-off + g.s[a] - 1) / g.s[a]
	}
	last := g.img[a] - 1 - off
	if last < 0 {
		return 0, 0
	}
	hi := min(g.grid[a], last/g.s[a]+1)
	return min(lo, hi), hi
}

// pad3 right-aligns v (one value per spatial axis) in three, filling with
// def.
func pad3(v []int, def int) [3]int {
	r := [3]int{def, def, def}
	copy(r[3-len(v):], v)
	return r
}

// spatial returns the three-axis geometry's sizes as a shape of dims axes.
func spatial(v [3]int, dims int) []int { return append([]int(nil), v[3-dims:]...) }

// imgShape, gridShape and wShape are the shapes of the image, the grid
// and the weights.
func (c *convDims) imgShape() tensor.Shape {
	return append(tensor.Shape{c.n, c.groups * c.cImg}, spatial(c.geom.img, c.dims)...)
}

func (c *convDims) gridShape() tensor.Shape {
	return append(tensor.Shape{c.n, c.groups * c.cGrid}, spatial(c.geom.grid, c.dims)...)
}

func (c *convDims) wShape() tensor.Shape {
	return append(tensor.Shape{c.groups * c.cGrid, c.cImg}, spatial(c.geom.k, c.dims)...)
}

// rows is the number of rows of a column matrix: cImg·kVol.
func (c *convDims) rows() int { return c.cImg * c.geom.kVol() }

// work is the number of multiply-adds of one of the convolution's gemms
// over all samples and groups.
func (c *convDims) work() int { return c.n * c.groups * c.cGrid * c.rows() * c.geom.gridVol() }

// checkShape returns an error unless t has the given shape.
func checkShape(what string, t *tensor.Dense, want tensor.Shape) error {
	if !shapeOf(t).Eq(want) {
		return fmt.Errorf("%s of shape %v, want %v", what, t.Shape(), want)
	}
	return nil
}

// im2col sets the ch·kVol rows of col (row r at col[r·ld:], gridVol
// long) to the image patches of img (ch planes): row (c, t) holds, for
// each grid position, the image element tap t meets, or 0 in the padding.
func im2col[T fp](col []T, ld int, img []T, ch int, g *convGeom) {
	patches(col, ld, img, ch, g, false)
}

// col2im is im2col's adjoint: it adds each column element to the image
// element it came from (and may overwrite col).
func col2im[T fp](img, col []T, ld, ch int, g *convGeom) {
	patches(col, ld, img, ch, g, true)
}

func patches[T fp](col []T, ld int, img []T, ch int, g *convGeom, back bool) {
	gv, iv := g.gridVol(), g.imgVol()
	r := 0
	for c := 0; c < ch; c++ {
		plane := img[c*iv : (c+1)*iv]
		for kz := 0; kz < g.k[0]; kz++ {
			for ky := 0; ky < g.k[1]; ky++ {
				for kx := 0; kx < g.k[2]; kx++ {
					patchRow(col[r*ld:r*ld+gv], plane, g, [3]int{kz, ky, kx}, back)
					r++
				}
			}
		}
	}
}

// patchRow fills one column row (tap t) from plane, or adds it back.
func patchRow[T fp](row, plane []T, g *convGeom, t [3]int, back bool) {
	if g.s[1] == 1 && g.s[2] == 1 && g.grid[2] == g.img[2] {
		patchRowShift(row, plane, g, t, back)
		return
	}
	lo, hi := g.span(2, t[2])
	w, sx := g.grid[2], g.s[2]
	x0 := lo*sx + t[2]*g.d[2] - g.p[2]
	i := 0
	for oz := 0; oz < g.grid[0]; oz++ {
		iz := oz*g.s[0] - g.p[0] + t[0]*g.d[0]
		for oy := 0; oy < g.grid[1]; oy++ {
			iy := oy*g.s[1] - g.p[1] + t[1]*g.d[1]
			seg := row[i : i+w]
			i += w
			if iz < 0 || iz >= g.img[0] || iy < 0 || iy >= g.img[1] || lo == hi {
				if !back {
					clear(seg)
				}
				continue
			}
			line := plane[(iz*g.img[1]+iy)*g.img[2]:][:g.img[2]]
			if back {
				addStrided(line[x0:], seg[lo:hi], sx)
				continue
			}
			clear(seg[:lo])
			clear(seg[hi:])
			takeStrided(seg[lo:hi], line[x0:], sx)
		}
	}
}

// patchRowShift is patchRow when the grid and image lines have one width
// and the strides of the last two axes are 1: then the image lines a tap
// meets are consecutive and form one run, shifted by a constant, with the
// columns that wrap round to a neighbouring line zeroed.
func patchRowShift[T fp](row, plane []T, g *convGeom, t [3]int, back bool) {
	lo, hi := g.span(2, t[2])
	ylo, yhi := g.span(1, t[1])
	w, lines := g.grid[2], g.grid[1]
	for oz := 0; oz < g.grid[0]; oz++ {
		seg := row[oz*lines*w : (oz+1)*lines*w]
		iz := oz*g.s[0] - g.p[0] + t[0]*g.d[0]
		if iz < 0 || iz >= g.img[0] || ylo == yhi || lo == hi {
			if !back {
				clear(seg)
			}
			continue
		}
		run := seg[ylo*w : yhi*w]
		src := (iz*g.img[1]+ylo+t[1]*g.d[1]-g.p[1])*w + t[2]*g.d[2] - g.p[2]
		a, b := max(0, -src), min(len(run), len(plane)-src)
		if back {
			zeroWrapped(run, w, lo, hi)
			addTo(plane[src+a:src+b], run[a:b])
			continue
		}
		clear(seg[:ylo*w])
		clear(seg[yhi*w:])
		copy(run[a:b], plane[src+a:src+b])
		zeroWrapped(run, w, lo, hi)
	}
}

// zeroWrapped zeroes columns [0, lo) and [hi, w) of each line of run.
func zeroWrapped[T fp](run []T, w, lo, hi int) {
	if lo == 0 && hi == w {
		return
	}
	for l := 0; l < len(run); l += w {
		line := run[l : l+w]
		for j := 0; j < lo; j++ {
			line[j] = 0
		}
		for j := hi; j < w; j++ {
			line[j] = 0
		}
	}
}

// takeStrided sets dst[j] = src[j·s].
func takeStrided[T fp](dst, src []T, s int) {
	if s == 1 {
		copy(dst, src)
		return
	}
	for j := range dst {
		dst[j] = src[j*s]
	}
}

// addStrided adds src[j] to dst[j·s].
func addStrided[T fp](dst, src []T, s int) {
	if s == 1 {
		addTo(dst, src)
		return
	}
	for j, v := range src {
		dst[j*s] += v
	}
}

// block returns the i-th of consecutive blocks of size n.
func block[T fp](s []T, i, n int) []T { return s[i*n : (i+1)*n] }

// panelWidth is the number of columns wanted in a gemm: samples are
// taken together in panels of about this many grid positions.
const panelWidth = 256

// panelSize is the number of samples whose columns share one gemm.
func (c *convDims) panelSize() int {
	gv := c.geom.gridVol()
	if c.geom.identity() || gv >= panelWidth {
		return 1
	}
	return max(1, min(c.n, (panelWidth+gv-1)/gv))
}

// convScratch holds one goroutine's buffers for panels of up to sb
// samples of one group: the column matrix (cImg·kVol × sb·gridVol; none
// when im2col is the identity) and a grid panel (cGrid × sb·gridVol).
type convScratch[T fp] struct {
	c         *convDims
	col, wide *[]T
}

func newConvScratch[T fp](c *convDims, sb int) convScratch[T] {
	s := convScratch[T]{c: c, wide: getScratch[T](c.cGrid * sb * c.geom.gridVol())}
	if !c.geom.identity() {
		s.col = getScratch[T](c.rows() * sb * c.geom.gridVol())
	}
	return s
}

func (s convScratch[T]) release() {
	putScratch(s.wide)
	if s.col != nil {
		putScratch(s.col)
	}
}

// columns returns the column matrix of nb samples from s0 of group gr of
// img, side by side (leading dimension nb·gridVol).
func (s convScratch[T]) columns(img []T, s0, nb, gr int) []T {
	c := s.c
	iv, gv := c.geom.imgVol(), c.geom.gridVol()
	if s.col == nil {
		return block(img, s0*c.groups+gr, c.cImg*iv)
	}
	col := (*s.col)[:c.rows()*nb*gv]
	for j := 0; j < nb; j++ {
		im2col(col[j*gv:], nb*gv, block(img, (s0+j)*c.groups+gr, c.cImg*iv), c.cImg, &c.geom)
	}
	return col
}

// panel returns group gr of nb samples from s0 of grid side by side
// (cGrid × nb·gridVol): grid's own block for one sample, else the
// scratch panel, filled from grid if load.
func (s convScratch[T]) panel(grid []T, s0, nb, gr int, load bool) []T {
	c := s.c
	gv := c.geom.gridVol()
	if nb == 1 {
		return block(grid, s0*c.groups+gr, c.cGrid*gv)
	}
	p := (*s.wide)[:c.cGrid*nb*gv]
	if load {
		movePanel(p, grid, s0, nb, gr, c, false)
	}
	return p
}

// movePanel copies between a grid panel and grid's blocks: into the
// panel, or out of it (store).
func movePanel[T fp](p, grid []T, s0, nb, gr int, c *convDims, store bool) {
	gv := c.geom.gridVol()
	for j := 0; j < nb; j++ {
		b := block(grid, (s0+j)*c.groups+gr, c.cGrid*gv)
		for m := 0; m < c.cGrid; m++ {
			pm := p[m*nb*gv+j*gv : m*nb*gv+(j+1)*gv]
			if store {
				copy(b[m*gv:(m+1)*gv], pm)
			} else {
				copy(pm, b[m*gv:(m+1)*gv])
			}
		}
	}
}

// convPanels runs f(scratch, s0, nb) over panels of the samples, split
// between goroutines (w numbering them).
func convPanels[T fp](c *convDims, f func(w int, s convScratch[T], s0, nb int)) {
	sb := c.panelSize()
	parallelFor(c.n, c.work(), func(w, lo, hi int) {
		s := newConvScratch[T](c, sb)
		defer s.release()
		for s0 := lo; s0 < hi; s0 += sb {
			f(w, s, s0, min(sb, hi-s0))
		}
	})
}

// convGrid computes grid = w ⊛ img (Conv's forward, ConvTranspose's input
// gradient): per panel of samples and group, grid (cGrid × nb·gridVol) =
// W_g (cGrid × cImg·kVol) · im2col(img).
func convGrid[T fp](grid, img, w []T, c *convDims) {
	rows, gv := c.rows(), c.geom.gridVol()
	convPanels(c, func(_ int, s convScratch[T], s0, nb int) {
		for gr := 0; gr < c.groups; gr++ {
			col := s.columns(img, s0, nb, gr)
			p := s.panel(grid, s0, nb, gr, false)
			gemm(false, false, c.cGrid, nb*gv, rows, block(w, gr, c.cGrid*rows), rows, col, nb*gv, 0, p, nb*gv)
			if nb > 1 {
				movePanel(p, grid, s0, nb, gr, c, true)
			}
		}
	})
}

// convImg computes img = wᵀ ⊛ grid (Conv's input gradient,
// ConvTranspose's forward): per panel of samples and group,
// col2im(W_gᵀ · grid).
func convImg[T fp](img, grid, w []T, c *convDims) {
	rows, gv, iv := c.rows(), c.geom.gridVol(), c.geom.imgVol()
	convPanels(c, func(_ int, s convScratch[T], s0, nb int) {
		for gr := 0; gr < c.groups; gr++ {
			p := s.panel(grid, s0, nb, gr, true)
			wg := block(w, gr, c.cGrid*rows)
			if s.col == nil { // nb is 1
				gemm(true, false, rows, gv, c.cGrid, wg, rows, p, gv, 0, block(img, s0*c.groups+gr, c.cImg*iv), gv)
				continue
			}
			col := (*s.col)[:rows*nb*gv]
			gemm(true, false, rows, nb*gv, c.cGrid, wg, rows, p, nb*gv, 0, col, nb*gv)
			for j := 0; j < nb; j++ {
				x := block(img, (s0+j)*c.groups+gr, c.cImg*iv)
				clear(x)
				col2im(x, col[j*gv:], nb*gv, c.cImg, &c.geom)
			}
		}
	})
}

// convFilter computes dw = Σ_samples grid · im2col(img)ᵀ per group (the
// weights' gradient of both convolutions), each goroutine summing its
// samples into a buffer of its own.
func convFilter[T fp](dw, img, grid []T, c *convDims) {
	rows, gv := c.rows(), c.geom.gridVol()
	p := chunks(c.n, c.work())
	pp := getScratch[T]((p - 1) * len(dw))
	defer putScratch(pp)
	partial := *pp
	clear(dw)
	clear(partial)
	convPanels(c, func(w int, s convScratch[T], s0, nb int) {
		acc := dw
		if w > 0 {
			acc = block(partial, w-1, len(dw))
		}
		for gr := 0; gr < c.groups; gr++ {
			col := s.columns(img, s0, nb, gr)
			y := s.panel(grid, s0, nb, gr, true)
			gemm(false, true, c.cGrid, rows, nb*gv, y, nb*gv, col, nb*gv, 1, block(acc, gr, c.cGrid*rows), rows)
		}
	})
	for w := 1; w < p; w++ {
		addTo(dw, block(partial, w-1, len(dw)))
	}
}

// addBias adds b[m] to every element of channel m of out (n, len(b), vol).
func addBias[T fp](out, b []T, vol int) {
	for i := 0; i < len(out)/vol; i++ {
		v := b[i%len(b)]
		row := out[i*vol : (i+1)*vol]
		for j := range row {
			row[j] += v
		}
	}
}

// channelSums sets b[m] to the sum of channel m of g (n, len(b), vol).
func channelSums[T fp](b, g []T, vol int) {
	clear(b)
	for i := 0; i < len(g)/vol; i++ {
		var s T
		for _, v := range g[i*vol : (i+1)*vol] {
			s += v
		}
		b[i%len(b)] += s
	}
}
