package experiments

import (
	"fmt"
	"os"

	"github.com/flowebm/flowebm/io/data"
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
	named := func(err error) error { return err }
	if dir == "" {
		var err error
		if dir, err = MNISTDir(); err != nil {
			return nil, err
		}
		if os.Getenv("FLOWEBM_MNIST") != "" { // round 83 B6: as MNIST28 says (probe 45)
			named = func(err error) error { return fmt.Errorf("%w (the folder that FLOWEBM_MNIST names)", err) }
		}
	}
	train, trainFile, err := readMNIST(dir, false)
	if err != nil {
		return nil, named(err)
	}
	test, testFile, err := readMNIST(dir, true)
	if err != nil {
		return nil, named(err)
	}
	if err := checkImages(train, test, trainFile, testFile, pool, knnNeighbours); err != nil {
		return nil, err
	}
	desc := fmt.Sprintf("App. C.6 scaled: MNIST pooled %d×%d to %d×%d, dequantised to [-1, 1]", pool, pool, train.Height/pool, train.Width/pool)
	return buildImageExperiment(imageSpec{name: "mnist", desc: desc, pool: pool, refs: 10000, knn: knnMNIST7}, train, test)
}

// readMNIST reads MNIST's training or test set from dir, and returns the
// path of its image file too.
func readMNIST(dir string, test bool) (*data.Images, string, error) {
	images, labels, err := data.MNISTFiles(dir, test)
	if err != nil {
		return nil, "", err
	}
	im, err := data.ReadIDXFiles(images, labels)
	return im, images, err
}

// knnNeighbours is the k of the k-NN classifier of generated images.
const knnNeighbours = 5

// checkImages checks, as the files are read, that the training and test
// images fit the experiment: pool divides the sides of the images, the
// test images are the size of the training images, and there are enough
// training images for the k-NN classifier of k neighbours. Errors name the
// image files.
func checkImages(train, test *data.Images, trainFile, testFile string, pool, k int) error {
	if pool < 1 {
		return fmt.Errorf("experiments: pooling by %d×%d blocks: want a block side of at least 1", pool, pool)
	}
	if train.Height%pool != 0 || train.Width%pool != 0 {
		return fmt.Errorf("%s: images are %d×%d, want sides divisible by %d to pool them by %d×%d blocks (MNIST's are 28×28)", trainFile, train.Height, train.Width, pool, pool, pool)
	}
	if test.Channels != train.Channels || test.Height != train.Height || test.Width != train.Width {
		return fmt.Errorf("%s: images are %d×%d, the training images (%s) %d×%d", testFile, test.Height, test.Width, trainFile, train.Height, train.Width)
	}
	if n := len(train.Labels); n < k {
		return fmt.Errorf("%s: %d images, want at least %d: generated images are classified by their %d nearest training images", trainFile, n, k, k)
	}
	return nil
}
