package layers

import (
	"fmt"
	"strconv"

	G "gorgonia.org/gorgonia"
)

// Downsampling between the stages of an ImageEnergy.
const (
	// DownConv downsamples by a 3×3 convolution of stride 2 (padding 1).
	DownConv = "conv"
	// DownAvgPool downsamples by 2×2 average pooling followed by a 3×3
	// convolution of stride 1 (padding 1).
	DownAvgPool = "avgpool"
)

// ImageEnergy is a convolutional energy E(x) for images, in the style of
// Du & Mordatch (2019) and Nijkamp et al. (2020) scaled to a CPU: a 3×3
// stem convolution, then stages of residual blocks, the stages separated
// by downsampling convolutions that change the width, a last activation,
// the global average over pixels and a linear layer to one output:
//
//	h = stem(x)                                   C → Channels[0]
//	for each stage i:
//	    if i > 0: h = down.(i−1)(act(h))          Channels[i−1] → Channels[i], half size
//	    repeat Blocks times: h = blocks.k(h)      h + conv2(act(conv1(act(h))))
//	E(x) = out(mean over pixels of act(h))        Channels[last] → 1
//
// Inputs are rows of C·H·W coordinates (graph.EBM's (B, Dim) batches),
// reshaped to (B, C, H, W) inside the graph. Parameters are named as the
// state_dict of a PyTorch module with attributes stem (Conv2d), down
// (ModuleList of Conv2d), blocks (ModuleList of residual blocks with
// conv1 and conv2) and out (Linear), all prefixed by Name + "." when Name
// is set; every layer has PyTorch's default initialisation except out,
// which is zero so that E ≡ 0 at start (Algorithm 1 of the paper).
//
// The zero value is the default model for 1×28×28 images (MNIST,
// Fashion-MNIST): channels 32, 64, 64, one residual block per stage,
// stride-2 convolutions (28 → 14 → 7), SiLU (Swish) activations (one
// fused operation each, layers/silu.go), 222,017 parameters. It implements
// graph.EnergyNet; ParamCount and GraphValues size it (image_sizes.go).
type ImageEnergy struct {
	Name  string     // parameter prefix; "" means none
	Image ImageShape // zero value means 1×28×28
	// Channels are the widths of the stages; nil means [32, 64, 64].
	Channels []int
	// Blocks is the number of residual blocks per stage: 0 means 1, a
	// negative number none.
	Blocks int
	// Activation is the non-linearity; the zero value means SiLU (Swish).
	// LeakyReLU(0.2) is Du & Mordatch's.
	Activation Activation
	// Downsample is DownConv (default: "") or DownAvgPool.
	Downsample string
	// OutInit initialises the weight and bias of the last (linear) layer;
	// nil means Zeros, so that E ≡ 0 at start.
	OutInit Init
}

// WithDefaults returns e with every zero field set to its default.
func (e ImageEnergy) WithDefaults() ImageEnergy {
	if e.Image == (ImageShape{}) {
		e.Image = ImageShape{C: 1, H: 28, W: 28}
	}
	if e.Channels == nil {
		e.Channels = []int{32, 64, 64}
	}
	if e.Blocks == 0 {
		e.Blocks = 1
	}
	if e.Blocks < 0 {
		e.Blocks = -1
	}
	if e.Activation.Kind == "" {
		e.Activation = SiLU
	}
	if e.Downsample == "" {
		e.Downsample = DownConv
	}
	if e.OutInit == nil {
		e.OutInit = Zeros
	}
	return e
}

// Dim is the number of coordinates of an image, C·H·W.
func (e ImageEnergy) Dim() int { return e.WithDefaults().Image.Dim() }

func (e ImageEnergy) name(s string) string {
	if e.Name == "" {
		return s
	}
	return e.Name + "." + s
}

// ImageEnergyLayers are the layers of an ImageEnergy in the order they
// apply: Stem, then per stage i > 0 Down[i−1], then that stage's Blocks.
type ImageEnergyLayers struct {
	Stem   Conv2d
	Down   []Conv2d
	Blocks [][]ResBlock // per stage
	Out    Linear
	// Sizes are the (height, width) of the feature maps of each stage.
	Sizes [][2]int
}

// Layers returns the model's layers with their names and initialisers, or
// an error for an invalid configuration (images too small for the number
// of stages, widths not positive).
func (e ImageEnergy) Layers() (ImageEnergyLayers, error) {
	e = e.WithDefaults()
	var l ImageEnergyLayers
	if err := e.Image.Validate(); err != nil {
		return l, err
	}
	if len(e.Channels) == 0 {
		return l, fmt.Errorf("layers: image energy needs at least one stage")
	}
	for _, c := range e.Channels {
		if c < 1 {
			return l, fmt.Errorf("layers: image energy channels %v: want positive widths", e.Channels)
		}
	}
	if e.Downsample != DownConv && e.Downsample != DownAvgPool {
		return l, fmt.Errorf("layers: image energy downsampling %q, want %q or %q", e.Downsample, DownConv, DownAvgPool)
	}
	l.Stem = Conv2d{Name: e.name("stem"), In: e.Image.C, Out: e.Channels[0], Kernel: 3, Padding: 1}
	h, w := e.Image.H, e.Image.W
	l.Sizes = append(l.Sizes, [2]int{h, w})
	k := 0
	for i, c := range e.Channels {
		if i > 0 {
			d := Conv2d{Name: e.name("down." + strconv.Itoa(i-1)), In: e.Channels[i-1], Out: c, Kernel: 3, Stride: 2, Padding: 1}
			if e.Downsample == DownAvgPool {
				d.Stride = 1
				if h < 2 || w < 2 {
					return l, fmt.Errorf("layers: image energy: %d×%d feature maps of stage %d cannot be pooled (too many stages for %v images)", h, w, i, e.Image)
				}
				h, w = h/2, w/2
			}
			var err error
			if h, w, err = d.OutSize(h, w); err != nil {
				return l, err
			}
			l.Down = append(l.Down, d)
			l.Sizes = append(l.Sizes, [2]int{h, w})
		}
		var bs []ResBlock
		for r := 0; r < e.Blocks; r++ {
			bs = append(bs, ResBlock{Name: e.name("blocks." + strconv.Itoa(k)), Channels: c, Activation: e.Activation})
			k++
		}
		l.Blocks = append(l.Blocks, bs)
	}
	l.Out = Linear{Name: e.name("out"), In: e.Channels[len(e.Channels)-1], Out: 1, WeightInit: e.OutInit, BiasInit: e.OutInit}
	return l, nil
}

// ParamSpecs lists the parameters in the order of Layers: stem, then per
// stage its downsampling and residual blocks, then out. It is empty for an
// invalid configuration (Energy reports the error).
func (e ImageEnergy) ParamSpecs() []ParamSpec {
	l, err := e.Layers()
	if err != nil {
		return nil
	}
	s := l.Stem.ParamSpecs()
	for i, bs := range l.Blocks {
		if i > 0 {
			s = append(s, l.Down[i-1].ParamSpecs()...)
		}
		for _, b := range bs {
			s = append(s, b.ParamSpecs()...)
		}
	}
	return append(s, l.Out.ParamSpecs()...)
}

// Energy maps x (B, C·H·W) to the energies (B).
func (e ImageEnergy) Energy(b Binder, x *G.Node) (*G.Node, error) {
	l, err := e.Layers()
	if err != nil {
		return nil, err
	}
	e = e.WithDefaults()
	act := e.Activation
	h, err := ToImage(x, e.Image)
	if err != nil {
		return nil, err
	}
	if h, err = l.Stem.Apply(b, h); err != nil {
		return nil, err
	}
	for i, bs := range l.Blocks {
		if i > 0 {
			if h, err = applyActivation(b, act, h); err != nil {
				return nil, err
			}
			if e.Downsample == DownAvgPool {
				if h, err = (AvgPool2d{Kernel: 2}).Apply(b, h); err != nil {
					return nil, err
				}
			}
			if h, err = l.Down[i-1].Apply(b, h); err != nil {
				return nil, err
			}
		}
		for _, blk := range bs {
			if h, err = blk.Apply(b, h); err != nil {
				return nil, err
			}
		}
	}
	if h, err = applyActivation(b, act, h); err != nil {
		return nil, err
	}
	if h, err = GlobalAvgPool(h); err != nil {
		return nil, err
	}
	if h, err = l.Out.Apply(b, h); err != nil {
		return nil, err
	}
	return G.Sum(h, 1)
}
