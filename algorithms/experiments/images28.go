package experiments

import (
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"

	"gonum.org/v1/gonum/mat"

	"github.com/flowebm/flowebm/io/data"
)

// imageSpec says how buildImageExperiment builds an image experiment.
type imageSpec struct {
	name, desc string
	// pool average-pools the images by pool×pool blocks (1: none).
	pool int
	// classNames name the classes (nil: "0", "1", …).
	classNames []string
	// refs is the number of training images (the first ones of the
	// shuffled set) the k-NN classifier compares with (0: all).
	refs int
	// knn configures the classifier.
	knn KNNOptions
	// side, if not 0, is the only size (side×side) of the images taken,
	// those of source, the data set the experiment is made of.
	side   int
	source string
}

// The classifiers of generated images. mnist's (7×7) is its original 5-NN
// among 10,000 training images, in the pixels. The others use every
// training image, 4 neighbours whose votes are weighted by the inverse of
// their distance, and distances in the span of 50 principal components
// (of the images pooled 2×2 for CIFAR-10); the numbers of components and
// neighbours and the weighting were chosen on a validation split of
// MNIST's and Fashion-MNIST's training sets (docs/data.md).
var (
	knnMNIST7  = KNNOptions{K: knnNeighbours}
	knnMNIST28 = KNNOptions{K: 4, Weighted: true, Components: 50}
	knnFashion = knnMNIST28
	knnCIFAR10 = KNNOptions{K: 4, Weighted: true, Components: 50, Pool: 2}
)

// cifarRequired are the files of CIFAR-10's binary version.
// cifarURL is where CIFAR-10's binary version is published.
const cifarURL = "https://www.cs.toronto.edu/~kriz/cifar-10-binary.tar.gz"

var cifarRequired = []string{"data_batch_1.bin", "data_batch_2.bin", "data_batch_3.bin", "data_batch_4.bin", "data_batch_5.bin", "test_batch.bin"}

// FashionMNISTClasses are Fashion-MNIST's class names by label.
var FashionMNISTClasses = []string{"T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot"}

// FashionMNISTDebianDir is where Debian's dataset-fashion-mnist package
// installs Fashion-MNIST's four IDX files.
const FashionMNISTDebianDir = "/usr/share/datasets/fashion-mnist"

// Environment variables naming data folders, read when an experiment's
// folder is not given: FLOWEBM_MNIST (see MNISTDir), and these.
const (
	FashionMNISTEnv = "FLOWEBM_FASHION_MNIST"
	CIFAR10Env      = "FLOWEBM_CIFAR10"
)

// ByNameIn is ByName with the image experiments' files read from dataDir
// (a --data-dir flag): the folder of MNIST's IDX files for mnist and
// mnist28, of Fashion-MNIST's for fashion-mnist, CIFAR-10's
// cifar-10-batches-bin for cifar10. An empty dataDir is ByName; a dataDir
// for another experiment is an error.
func ByNameIn(name, dataDir string) (*Experiment, error) {
	if dataDir == "" {
		return ByName(name)
	}
	switch name {
	case "mnist":
		return MNIST(dataDir, 4)
	case "mnist28":
		return MNIST28(dataDir)
	case "fashion-mnist":
		return FashionMNIST(dataDir)
	case "cifar10":
		return CIFAR10(dataDir)
	}
	if _, err := ByName(name); err != nil {
		return nil, err
	}
	return nil, fmt.Errorf("experiments: %s reads no data folder (%s given): only mnist, mnist28, fashion-mnist and cifar10 do", name, dataDir)
}

// MNIST28 is the image experiment at MNIST's full size: the 60,000
// training images, 28×28 = 784 pixels (IDX files of other sizes are
// refused from their headers), dequantised and scaled to [−1, 1]
// as App. C.6 does, in a fixed shuffled order; held-out data are the
// 10,000 test images. The classes are the digits, with MNIST's own
// frequencies as true weights; generated images are classified by their 4
// nearest neighbours (votes weighted by inverse distance) among all 60,000
// training images, in the span of their 50 leading principal components:
// 9,771 of the 10,000 test images right, 97.7% ± 0.15% (measured
// 2026-11-27). No horizontal flips: digits are not symmetric. dir holds the IDX files ("" finds them with MNISTDir).
// Reading the images and building the classifier takes about 7 s on 2
// busy cores: keep the experiment rather than looking it up again.
func MNIST28(dir string) (*Experiment, error) {
	hint := "want the folder of train-images-idx3-ubyte.gz and its three siblings"
	if dir == "" {
		var err error
		if dir, err = MNISTDir(); err != nil {
			return nil, err
		}
		if os.Getenv("FLOWEBM_MNIST") != "" {
			hint += " (the folder that FLOWEBM_MNIST names)" // probe 45: the variable not named
		} else {
			hint = "" // GoMNIST's module folder
		}
	}
	return idxExperiment(dir, imageSpec{name: "mnist28", pool: 1, knn: knnMNIST28, side: 28, source: "MNIST",
		desc: "App. C.6 scaled: MNIST at 28×28, dequantised to [-1, 1]"}, hint)
}

// FashionMNIST is MNIST28's experiment on Fashion-MNIST (Zalando's 28×28
// grey images of clothes in 10 equal classes, named FashionMNISTClasses),
// read from dir, or ("") from the folder named by FLOWEBM_FASHION_MNIST,
// else from FashionMNISTDebianDir (apt-get install dataset-fashion-mnist).
// The classifier, MNIST28's (4 nearest neighbours among the 60,000
// training images in the span of 50 principal components), gets 8,584 of
// the 10,000 test images right, 85.8% ± 0.35% (measured 2026-11-27): class
// weights of generated images are measured with that much confusion,
// mostly among shirts, T-shirts, pullovers and coats (37% of the shirts
// are called something else).
func FashionMNIST(dir string) (*Experiment, error) {
	hint := "want the folder of Fashion-MNIST's train-images-idx3-ubyte.gz and its three siblings"
	if dir == "" {
		var err error
		if dir, err = FashionMNISTDir(); err != nil {
			return nil, err
		}
		if os.Getenv(FashionMNISTEnv) == "" { // Debian's folder, not one the user named
			hint = "install Debian's dataset-fashion-mnist (apt-get install dataset-fashion-mnist: " + FashionMNISTDebianDir + "), or name a folder holding train-images-idx3-ubyte.gz and its three siblings with " + FashionMNISTEnv
		} else {
			hint += " (the folder that " + FashionMNISTEnv + " names)" // probe 45: the variable not named
		}
	}
	return idxExperiment(dir, imageSpec{name: "fashion-mnist", pool: 1, knn: knnFashion, classNames: FashionMNISTClasses, side: 28, source: "Fashion-MNIST",
		desc: "App. C.6 scaled: Fashion-MNIST at 28×28, dequantised to [-1, 1]"}, hint)
}

// FashionMNISTDir locates Fashion-MNIST's IDX files: the folder named by
// FLOWEBM_FASHION_MNIST if set, otherwise FashionMNISTDebianDir if it
// holds them.
func FashionMNISTDir() (string, error) {
	if d := os.Getenv(FashionMNISTEnv); d != "" {
		if err := checkEnvPath(FashionMNISTEnv, d); err != nil {
			return "", err
		}
		if !isFolder(d) {
			return "", fmt.Errorf("data: %s=%s is not a folder: want the folder holding Fashion-MNIST's train-images-idx3-ubyte.gz and its three siblings", FashionMNISTEnv, d)
		}
		return d, nil
	}
	if _, _, err := data.MNISTFiles(FashionMNISTDebianDir, false); err != nil {
		return "", fmt.Errorf("data: Fashion-MNIST not found in %s: apt-get install dataset-fashion-mnist (Debian, Ubuntu) puts it there; or set %s to a folder holding train-images-idx3-ubyte.gz and its three siblings (%v)", FashionMNISTDebianDir, FashionMNISTEnv, err)
	}
	return FashionMNISTDebianDir, nil
}

// idxExperiment builds an image experiment from the IDX files in dir;
// hint, if not empty, is added to the error when files are missing.
func idxExperiment(dir string, spec imageSpec, hint string) (*Experiment, error) {
	wrap := func(err error) error {
		if hint != "" {
			return fmt.Errorf("%w: %s", err, hint)
		}
		return err
	}
	for _, test := range []bool{false, true} {
		images, _, err := data.MNISTFiles(dir, test)
		if err != nil {
			return nil, wrap(err)
		}
		if err := checkIDXSide(images, spec); err != nil {
			return nil, err
		}
	}
	train, trainFile, err := readMNIST(dir, false)
	if err != nil {
		return nil, err
	}
	test, testFile, err := readMNIST(dir, true)
	if err != nil {
		return nil, err
	}
	if err := checkImages(train, test, trainFile, testFile, spec.pool, spec.knn.K); err != nil {
		return nil, err
	}
	return buildImageExperiment(spec, train, test)
}

// checkIDXSide refuses, from its header alone (before the images are read
// and the classifier built), an IDX image file whose images are not
// spec.side×spec.side.
func checkIDXSide(images string, spec imageSpec) error {
	if spec.side == 0 {
		return nil
	}
	_, rows, cols, err := data.IDXImageSize(images)
	if err != nil {
		return err
	}
	if rows != spec.side || cols != spec.side {
		return fmt.Errorf("%s: images are %d×%d, want %d×%d (%s is %s at full size)", images, rows, cols, spec.side, spec.side, spec.name, spec.source)
	}
	return nil
}

// CIFAR10 is App. C.6's own data set: CIFAR-10's 50,000 training images,
// 3×32×32 = 3,072 values, dequantised and scaled to [−1, 1], in a fixed
// shuffled order; held-out data are the 10,000 test images. dir is the
// folder of CIFAR-10's binary version (cifar-10-batches-bin, from
// https://www.cs.toronto.edu/~kriz/cifar-10-binary.tar.gz), holding
// data_batch_1.bin … data_batch_5.bin and test_batch.bin; "" takes the
// folder named by FLOWEBM_CIFAR10, and is an error without it: CIFAR-10 is
// not downloaded. Generated images are classified by their 4 nearest
// neighbours among the training images in the span of 50 principal
// components (of the images pooled 2×2): k-NN classifiers of CIFAR-10's
// pixels are right on only about 35–40% of its test images (published
// results; not measured here, where CIFAR-10 is not available), so class
// weights measured with it are rough. Horizontal flips,
// App. C.6's augmentation, are valid for these images (FlipHorizontally),
// but the training loop has no augmentation step: the experiment trains on
// the images as they are.
func CIFAR10(dir string) (*Experiment, error) {
	var err error
	if dir == "" {
		dir, err = CIFAR10Dir()
	} else if !isFolder(dir) {
		err = notCIFARFolder(dir)
	}
	if err != nil {
		return nil, err
	}
	if err := cifarFilesIn(dir); err != nil {
		return nil, err
	}
	train, err := data.ReadCIFAR10Dir(dir, false)
	if err != nil {
		return nil, err
	}
	test, err := data.ReadCIFAR10Dir(dir, true)
	if err != nil {
		return nil, err
	}
	spec := imageSpec{name: "cifar10", pool: 1, knn: knnCIFAR10, classNames: data.CIFAR10Classes,
		desc: "App. C.6: CIFAR-10, 3×32×32, dequantised to [-1, 1] (no flips)"}
	if err := checkImages(train, test, filepath.Join(dir, cifarRequired[0]), filepath.Join(dir, cifarRequired[5]), 1, spec.knn.K); err != nil {
		return nil, err
	}
	return buildImageExperiment(spec, train, test)
}

// FlipHorizontally mirrors each row of x, images of shape s laid out
// channel-major, left to right with probability ½: App. C.6's
// augmentation of CIFAR-10 (not of digits, which are not symmetric).
func FlipHorizontally(x *mat.Dense, s ImageShape, rng *rand.Rand) {
	r, c := x.Dims()
	if c != s.Channels*s.Height*s.Width {
		panic(fmt.Sprintf("experiments: flipping rows of %d values as %d×%d×%d images", c, s.Channels, s.Height, s.Width))
	}
	for i := 0; i < r; i++ {
		if rng.IntN(2) == 0 {
			continue
		}
		row := x.RawRowView(i)
		for line := 0; line < s.Channels*s.Height; line++ {
			l := row[line*s.Width : (line+1)*s.Width]
			for a, b := 0, len(l)-1; a < b; a, b = a+1, b-1 {
				l[a], l[b] = l[b], l[a]
			}
		}
	}
}

// preparedImages are an image experiment's data, pooled, shuffled and
// dequantised.
type preparedImages struct {
	trainLabels, testLabels []int
	train, test             *mat.Dense
	classes                 int
	shape                   ImageShape
}

// prepareImages pools the images by spec.pool, shuffles them in a fixed
// order and dequantises them to [−1, 1]. It releases the pixels of train
// and test (their X is set to nil) as soon as their dequantised copies are
// made, so that a training set is held twice only while it is converted.
func prepareImages(spec imageSpec, train, test *data.Images) (*preparedImages, error) {
	rng := rand.New(rand.NewPCG(0x1ab, 0xe15)) // fixed: the data set is part of the experiment
	// prep gives the same values, in the same order of draws from rng, as
	// Pool, Subset(rng.Perm(n)) and Dequantize(rng, −1, 1) in turn, without
	// the intermediate copies.
	prep := func(im *data.Images) ([]int, *mat.Dense, error) {
		p := im
		if spec.pool != 1 {
			var err error
			if p, err = im.Pool(spec.pool); err != nil {
				return nil, nil, err
			}
		}
		n, c := p.X.Dims()
		perm := rng.Perm(len(p.Labels))
		labels := make([]int, n)
		x := mat.NewDense(n, c, nil)
		lo, hi, levels := -1.0, 1.0, float64(p.Levels)
		for k, i := range perm {
			labels[k] = p.Labels[i]
			dst := x.RawRowView(k)
			for j, v := range p.X.RawRowView(i) {
				dst[j] = lo + (hi-lo)*(v+rng.Float64())/levels
			}
		}
		im.X, p.X = nil, nil
		return labels, x, nil
	}
	out := &preparedImages{classes: train.Classes, shape: ImageShape{Channels: train.Channels, Height: train.Height / spec.pool, Width: train.Width / spec.pool}}
	var err error
	if out.trainLabels, out.train, err = prep(train); err != nil {
		return nil, err
	}
	if out.testLabels, out.test, err = prep(test); err != nil {
		return nil, err
	}
	return out, nil
}

// buildImageExperiment builds an image experiment from labelled images
// (see prepareImages) and its classifier.
func buildImageExperiment(spec imageSpec, train, test *data.Images) (*Experiment, error) {
	p, err := prepareImages(spec, train, test)
	if err != nil {
		return nil, err
	}
	n, c := p.train.Dims()
	nRef := n
	if spec.refs > 0 {
		nRef = min(spec.refs, n)
	}
	ref := p.train.Slice(0, nRef, 0, c).(*mat.Dense)
	if spec.knn.Components == 0 {
		ref = mat.DenseCopyOf(ref) // the classifier keeps it: not an alias of TrainSet
	}
	opt := spec.knn
	if opt.Pool > 1 {
		opt.Shape = &p.shape
	}
	// Images smaller than the data sets' (tests) have fewer values than
	// components: keep them all.
	opt.Components = min(opt.Components, c/(max(opt.Pool, 1)*max(opt.Pool, 1)))
	knn, err := NewKNNClassifier(ref, p.trainLabels[:nRef], p.classes, opt)
	if err != nil {
		return nil, err
	}
	names := spec.classNames
	if names == nil {
		names = make([]string, p.classes)
		for k := range names {
			names[k] = fmt.Sprint(k)
		}
	}
	return &Experiment{Name: spec.name, Kind: KindImages, Description: spec.desc, Weights: data.LabelWeights(p.trainLabels, p.classes),
		TrainSet: p.train, HeldOutSet: p.test, HeldOutLabels: p.testLabels, Classify: knn.Classify, ClassNames: names,
		Image: &p.shape}, nil
}

// ReadsFolder reports whether experiment name reads its data from a folder
// of files (the image experiments: mnist, mnist28, fashion-mnist, cifar10).
func ReadsFolder(name string) bool {
	switch name {
	case "mnist", "mnist28", "fashion-mnist", "cifar10":
		return true
	}
	return false
}

// DataFiles lists the files image experiment name reads from the folder
// dir (MNIST's or Fashion-MNIST's four IDX files, CIFAR-10's six
// batches), for their checksums; nil for experiments that read no folder.
func DataFiles(name, dir string) ([]string, error) {
	switch name {
	case "mnist", "mnist28", "fashion-mnist":
		var files []string
		for _, test := range []bool{false, true} {
			images, labels, err := data.MNISTFiles(dir, test)
			if err != nil {
				return nil, err
			}
			files = append(files, images, labels)
		}
		return files, nil
	case "cifar10":
		var files []string
		for _, test := range []bool{false, true} {
			for _, n := range data.CIFAR10BatchNames(test) {
				files = append(files, filepath.Join(dir, n))
			}
		}
		return files, nil
	}
	return nil, nil
}

// cifarFilesIn refuses a folder dir without CIFAR-10's batches, naming
// those it lacks (or holds compressed).
func cifarFilesIn(dir string) error {
	var missing []string
	for _, f := range cifarRequired {
		if _, err := os.Stat(filepath.Join(dir, f)); errors.Is(err, fs.ErrNotExist) {
			if _, errGz := os.Stat(filepath.Join(dir, f+".gz")); errGz == nil {
				return fmt.Errorf("experiments: cifar10: %s is compressed: gunzip %s (the batches are read by their names, *.bin)", filepath.Join(dir, f+".gz"), filepath.Join(dir, "*.gz"))
			}
			missing = append(missing, f)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("experiments: cifar10: %s lacks %s: want the folder of CIFAR-10's binary version (cifar-10-batches-bin, from %s) with %s",
			dir, strings.Join(missing, ", "), cifarURL, strings.Join(cifarRequired, ", "))
	}
	return nil
}

// CIFAR10Dir is the folder named by FLOWEBM_CIFAR10, checked to be one.
func CIFAR10Dir() (string, error) {
	d := os.Getenv(CIFAR10Env)
	switch {
	case d == "":
		return "", cifarNotGiven()
	case checkEnvPath(CIFAR10Env, d) != nil:
		return "", checkEnvPath(CIFAR10Env, d)
	case !isFolder(d): // probe 28: "… lacks data_batch_1.bin" of no folder at all
		return "", notCIFARFolder(CIFAR10Env + "=" + d)
	}
	return d, nil
}

func isFolder(dir string) bool {
	fi, err := os.Stat(dir)
	return err == nil && fi.IsDir()
}

// notCIFARFolder is cifar10's error for a folder, named as given, that is
// none.
func notCIFARFolder(named string) error {
	return fmt.Errorf("experiments: cifar10: %s is not a folder: want the folder of CIFAR-10's binary version (cifar-10-batches-bin, from %s) with %s",
		named, cifarURL, strings.Join(cifarRequired, ", "))
}

// cifarNotGiven is cifar10's error without a folder.
func cifarNotGiven() error {
	return &FolderNotGivenError{Experiment: "cifar10", Env: CIFAR10Env,
		Want: fmt.Sprintf("the folder of CIFAR-10's binary version (cifar-10-batches-bin: %s), which is not downloaded (from %s, unpacked)", strings.Join(cifarRequired, ", "), cifarURL)}
}

// FindDataDir is the folder that ByName reads image experiment name's
// files from (MNISTDir, FashionMNISTDir, FLOWEBM_CIFAR10), checked to hold
// them (DataFiles) without reading them: what a process that trains
// nothing (reproduce --plan) needs to know. "" for an experiment that
// reads no folder.
func FindDataDir(name string) (string, error) {
	var dir string
	var err error
	switch name {
	case "mnist", "mnist28":
		dir, err = MNISTDir()
	case "fashion-mnist":
		dir, err = FashionMNISTDir()
	case "cifar10":
		if dir, err = CIFAR10Dir(); err == nil {
			err = cifarFilesIn(dir) // probe 31: a bare stat error
		}
	default:
		return "", nil
	}
	if err != nil {
		return "", err
	}
	files, err := DataFiles(name, dir)
	if err != nil {
		return "", err
	}
	for _, f := range files {
		if _, err := os.Stat(f); err != nil {
			return "", fmt.Errorf("experiments: %s: %w", name, err)
		}
	}
	return dir, nil
}

// FolderNotGivenError says that an experiment's data folder was given
// neither as an argument (flowebm train --data-dir) nor in its environment
// variable, and there is no default folder to look in.
type FolderNotGivenError struct {
	Experiment string // the experiment's name
	Env        string // the environment variable that names the folder
	Want       string // what the folder holds, and where it comes from
}

func (e *FolderNotGivenError) Error() string {
	return fmt.Sprintf("experiments: %s needs %s: give it with flowebm train --data-dir DIR, or set %s=DIR", e.Experiment, e.Want, e.Env)
}
