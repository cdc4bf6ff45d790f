package experiments

import (
	"fmt"
	"math/rand/v2"

	"github.com/flowebm/flowebm/io/data"
	"gonum.org/v1/gonum/mat"
)

// MNIST is the image experiment at a scale 2 CPU cores can train (App. C.6
// trains on CIFAR-10 with models of millions of parameters): MNIST's
// training images average-pooled by pool×pool blocks (pool = 4: 7×7 = 49
// pixels), dequantised and scaled to [−1, 1] as App. C.6 does, in a fixed
// shuffled order; held-out data are the test images. The classes are the
// digits, with MNIST's own unequal frequencies (0.090 to 0.112) as true
// weights; generated images are classified by 5 nearest neighbours among
// 10,000 training images. dir holds the IDX files ("" finds them with
// MNISTDir). Reading and pooling the 70,000 images takes a few seconds:
// keep the experiment rather than looking it up again.
func MNIST(dir string, pool int) (*Experiment, error) {
	if dir == "" {
		var err error
		if dir, err = MNISTDir(); err != nil {
			return nil, err
		}
	}
	train, err := data.ReadMNIST(dir, false)
	if err != nil {
		return nil, err
	}
	test, err := data.ReadMNIST(dir, true)
	if err != nil {
		return nil, err
	}
	e, err := imageExperiment("mnist", fmt.Sprintf("App. C.6 scaled: MNIST pooled %d×%d to %d×%d, dequantised to [-1, 1]", pool, pool, 28/pool, 28/pool), train, test, pool)
	if err != nil {
		return nil, err
	}
	return e, nil
}

// imageExperiment builds a data-set experiment from labelled images.
func imageExperiment(name, desc string, train, test *data.Images, pool int) (*Experiment, error) {
	rng := rand.New(rand.NewPCG(0x1ab, 0xe15)) // fixed: the data set is part of the experiment
	prep := func(im *data.Images) (*data.Images, *mat.Dense, error) {
		p, err := im.Pool(pool)
		if err != nil {
			return nil, nil, err
		}
		perm := rng.Perm(len(p.Labels))
		p = p.Subset(perm)
		return p, p.Dequantize(rng, -1, 1), nil
	}
	tr, x, err := prep(train)
	if err != nil {
		return nil, err
	}
	te, hx, err := prep(test)
	if err != nil {
		return nil, err
	}
	nRef := min(10000, len(tr.Labels))
	_, c := x.Dims()
	knn, err := data.NewKNN(5, mat.DenseCopyOf(x.Slice(0, nRef, 0, c)), tr.Labels[:nRef], tr.Classes)
	if err != nil {
		return nil, err
	}
	names := make([]string, tr.Classes)
	for k := range names {
		names[k] = fmt.Sprint(k)
	}
	return &Experiment{Name: name, Kind: KindImages, Description: desc, Weights: tr.ClassWeights(),
		TrainSet: x, HeldOutSet: hx, HeldOutLabels: te.Labels, Classify: knn.Classify, ClassNames: names,
		Image: &ImageShape{Channels: tr.Channels, Height: tr.Height, Width: tr.Width}}, nil
}
