package main

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/flowebm/flowebm/graph"
	"github.com/flowebm/flowebm/io/checkpoint"
	"github.com/flowebm/flowebm/io/npy"
	"github.com/flowebm/flowebm/layers"
	"gonum.org/v1/gonum/mat"
	"gorgonia.org/tensor"
)

// Finding 13.4: energy's batch comes from the model's graph: energyBatch
// points for a model not sized (an MLP), fewer for a conv EBM whose graph
// would not fit a quarter of the limit in energyBatch rows, at least one.
func TestEnergyRowsFromGraph(t *testing.T) {
	for _, c := range []struct {
		rowBytes, budget float64
		want             int
	}{{0, 1e9, energyBatch}, {100, 1e9, energyBatch}, {1e6, 1e8, 100}, {1e6, 1.5e6, 1}, {1e10, 1e8, 1}} {
		if got := batchRows(c.rowBytes, c.budget); got != c.want {
			t.Errorf("batchRows(%v, %v) = %d, want %d", c.rowBytes, c.budget, got, c.want)
		}
	}
	// The default conv EBM (channels 32, 64, 64 on 28×28): about 6 MB a
	// row with ∇ₓE, so that 4,096 rows would need about 25 GB.
	net := layers.ImageEnergy{}
	ebm, err := graph.NewEBM(net, nil, tensor.Float64, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		t.Fatal(err)
	}
	m := checkpoint.Models{EBM: ebm}
	for _, grad := range []bool{false, true} {
		rowBytes := net.GraphValues(grad) * 8
		got := energyRows(m, grad)
		if got >= energyBatch || float64(got)*rowBytes > energyGraphShare*memoryLimit(maxWorkBytes) || float64(got+1)*rowBytes <= energyGraphShare*memoryLimit(maxWorkBytes) {
			t.Errorf("energyRows(conv EBM, grad %v) = %d for %.3g MB a row, want the most rows in a quarter of %.3g GB", grad, got, rowBytes/1e6, memoryLimit(maxWorkBytes)/1e9)
		}
	}
}

// Finding 13.4: energies and gradients of a conv checkpoint over several
// batches are those of one batch, bit for bit (they are row-wise).
func TestEnergyBatchesBitIdentical(t *testing.T) {
	m, err := modelLoader{}.loadCheckpoint(writeConvCheckpoint(t, t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	n, d := 300, m.EBM.Dim()
	rng := rand.New(rand.NewPCG(5, 6))
	x := mat.NewDense(n, d, nil)
	for i := range x.RawMatrix().Data {
		x.RawMatrix().Data[i] = rng.NormFloat64()
	}
	eval := func(rows int) ([]float64, []float64) {
		e, g := make([]float64, n), mat.NewDense(n, d, nil)
		if err := energyInRows(m, x, e, g, rows); err != nil {
			t.Fatal(err)
		}
		return e, g.RawMatrix().Data
	}
	e1, g1 := eval(n)
	if slices.Min(e1) == slices.Max(e1) {
		t.Fatalf("constant energies %v: the test's model shows nothing", e1)
	}
	for _, rows := range []int{1, 7, 64, 299} {
		if e, g := eval(rows); !slices.Equal(e, e1) || !slices.Equal(g, g1) {
			t.Errorf("batches of %d rows: energies or gradients differ from one batch's (energies equal: %v)", rows, slices.Equal(e, e1))
		}
	}
	e, g := make([]float64, n), mat.NewDense(n, d, nil)
	if err := energyInBatches(m, x, e, g); err != nil || !slices.Equal(e, e1) || !slices.Equal(g.RawMatrix().Data, g1) {
		t.Errorf("energyInBatches: %v, or energies or gradients differ from one batch's", err)
	}
}

// Finding 13.4: energy's memory check counts the model's graph on its
// batches, from the points file's header.
func TestEnergyMemoryCountsGraph(t *testing.T) {
	dir := t.TempDir()
	model := writeConvCheckpoint(t, dir)
	pts := filepath.Join(dir, "huge.npy")
	header := "{'descr': '<f8', 'fortran_order': False, 'shape': (100000000, 1, 8, 8), }"
	header += strings.Repeat(" ", 127-10-len(header)) + "\n"
	if err := os.WriteFile(pts, append([]byte("\x93NUMPY\x01\x00\x76\x00"), header...), 0o644); err != nil {
		t.Fatal(err)
	}
	wantErr(t, "--points "+pts+": 100000000 points of shape [1 8 8] need about", "energy", "--model", model, "--points", pts, "--grad", filepath.Join(dir, "g.npy"))
	wantErr(t, "the model's graph on batches of", "energy", "--model", model, "--points", pts, "--grad", filepath.Join(dir, "g.npy"))
}

// Finding 13.10: a checkpoint takes (n, C, H, W) points whose C·H·W is its
// dimension, flattened as train --data does: the energies are those of the
// flat rows and the gradients come back in the points' shape; other
// shapes are refused with what the model takes.
func TestEnergyCheckpointImagePoints(t *testing.T) {
	dir := t.TempDir()
	model := writeConvCheckpoint(t, dir)
	n, d := 5, tinyConvImage.Dim()
	rng := rand.New(rand.NewPCG(7, 8))
	vals := make([]float64, n*d)
	for i := range vals {
		vals[i] = rng.NormFloat64()
	}
	write := func(name string, shape ...int) string {
		p := filepath.Join(dir, name)
		size := 1
		for _, s := range shape {
			size *= s
		}
		if err := npy.WriteFile(p, &npy.Array{Shape: shape, Data: vals[:size]}, npy.Float64); err != nil {
			t.Fatal(err)
		}
		return p
	}
	flat, img := write("flat.npy", n, d), write("img.npy", n, 1, 8, 8)
	read := func(name string) *npy.Array {
		a, err := npy.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	for _, c := range []struct{ points, out, grad string }{{flat, "ef.npy", "gf.npy"}, {img, "ei.npy", "gi.npy"}} {
		if _, stderr, status := runCLI("energy", "--model", model, "--points", c.points, "--out", filepath.Join(dir, c.out), "--grad", filepath.Join(dir, c.grad)); status != 0 {
			t.Fatalf("energy --points %s: status %d, %s", c.points, status, stderr)
		}
	}
	if ef, ei := read("ef.npy"), read("ei.npy"); !slices.Equal(ef.Data, ei.Data) {
		t.Errorf("energies of (n, 1, 8, 8) points %v, of the flat rows %v", ei.Data, ef.Data)
	}
	if gf, gi := read("gf.npy"), read("gi.npy"); !slices.Equal(gf.Data, gi.Data) || !slices.Equal(gi.Shape, []int{n, 1, 8, 8}) {
		t.Errorf("gradients of (n, 1, 8, 8) points: shape %v, equal to the flat rows' %v", gi.Shape, slices.Equal(gf.Data, gi.Data))
	}
	small := write("small.npy", n, 1, 4, 4)
	wantErr(t, small+": points of shape [1 4 4] each (16 values), the model "+model+" takes 64 values a point: an array of shape (n, 64), or (n, C, H, W)",
		"energy", "--model", model, "--points", small)
}

// Probe 14: a colour model's points stored channels last (n, H, W, C), as
// NumPy and PIL keep images, were flattened as if channels first, giving
// wrong energies silently; they are refused with the transpose to apply.
// Channels first and flat rows are read; one channel has one layout.
func TestEnergyRefusesChannelsLast(t *testing.T) {
	dir := t.TempDir()
	img := layers.ImageShape{C: 3, H: 4, W: 4}
	rng := rand.New(rand.NewPCG(5, 6))
	base := layers.NewIsotropic(img.Dim(), 1)
	ebm, err := graph.NewEBM(layers.ImageEnergy{Image: img, Channels: []int{4}}, &base, tensor.Float64, rng)
	if err != nil {
		t.Fatal(err)
	}
	model := filepath.Join(dir, "ckpt")
	if err := checkpoint.Save(model, checkpoint.Models{EBM: ebm}); err != nil {
		t.Fatal(err)
	}
	write := func(name string, shape ...int) string {
		p := filepath.Join(dir, name)
		if err := npy.WriteFile(p, &npy.Array{Shape: shape, Data: make([]float64, 2*img.Dim())}, npy.Float64); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, c := range []struct {
		points string
		ok     bool
	}{{write("chw.npy", 2, 3, 4, 4), true}, {write("flat.npy", 2, 48), true}, {write("hwc.npy", 2, 4, 4, 3), false}} {
		_, stderr, status := runCLI("energy", "--model", model, "--points", c.points, "--out", c.points+".e.npy")
		switch {
		case c.ok && status != 0:
			t.Errorf("%s: status %d, %s", c.points, status, stderr)
		case !c.ok && (status == 0 || !strings.Contains(stderr, "stored channels last (n, H, W, C), but the model "+model+" takes them channels first (n, C, H, W) = (n, 3, 4, 4): transpose them first (NumPy: x.transpose(0, 3, 1, 2))")):
			t.Errorf("%s: status %d, %q; want a refusal naming the layout", c.points, status, stderr)
		}
	}
}
