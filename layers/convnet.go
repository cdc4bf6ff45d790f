package layers

import (
	"fmt"

	"github.com/flowebm/flowebm/layers/nd"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// This file holds the convolutional building blocks of the image models
// (ImageEnergy, ImageRealNVP): 2-d convolution, average pooling, a
// residual block, and the reshapes between the (B, C·H·W) matrices that
// graph.EBM and graph.Flow feed and the (B, C, H, W) tensors that
// convolutions take. They are differentiable Gorgonia graph pieces built
// on package nd's Conv, Pool, Reduce and Transpose operations (the ones
// io/onnx imports models with), in float64 or float32, with parameters
// bound through a Binder under PyTorch's names and layouts. The
// activations of Activation are elementwise and apply to tensors of any
// rank, (B, C, H, W) included.

// ImageShape is the layout of one image: C channels of H×W pixels. An
// image is a row of C·H·W coordinates in row-major (C, H, W) order, as
// PyTorch's x.view(B, C, H, W) reads it.
type ImageShape struct {
	C, H, W int
}

// Dim is the number of coordinates C·H·W.
func (s ImageShape) Dim() int { return s.C * s.H * s.W }

// Validate checks that every size is positive.
func (s ImageShape) Validate() error {
	if s.C < 1 || s.H < 1 || s.W < 1 {
		return fmt.Errorf("layers: image shape %d×%d×%d: want positive sizes", s.C, s.H, s.W)
	}
	return nil
}

// String writes the shape as C×H×W.
func (s ImageShape) String() string { return fmt.Sprintf("%d×%d×%d", s.C, s.H, s.W) }

// ToImage reshapes a batch x (B, C·H·W) to images (B, C, H, W).
func ToImage(x *G.Node, s ImageShape) (*G.Node, error) {
	bsz, d, err := batchOf(x)
	if err != nil {
		return nil, err
	}
	if err := s.Validate(); err != nil {
		return nil, err
	}
	if d != s.Dim() {
		return nil, fmt.Errorf("layers: images of shape %v have %d coordinates, input has %d", s, s.Dim(), d)
	}
	return G.Reshape(x, tensor.Shape{bsz, s.C, s.H, s.W})
}

// Flatten reshapes x (B, …) to (B, features), as torch.flatten(x, 1).
func Flatten(x *G.Node) (*G.Node, error) {
	s := x.Shape()
	if len(s) < 1 {
		return nil, fmt.Errorf("layers: cannot flatten a scalar")
	}
	n := 1
	for _, v := range s[1:] {
		n *= v
	}
	if len(s) == 2 {
		return x, nil
	}
	return G.Reshape(x, tensor.Shape{s[0], n})
}

// imageOf checks that x is (B, C, H, W) and returns its shape.
func imageOf(x *G.Node, what string) (tensor.Shape, error) {
	s := x.Shape()
	if len(s) != 4 {
		return nil, fmt.Errorf("layers: %s wants (batch, channels, height, width) images, have shape %v", what, s)
	}
	return s, nil
}

// Conv2d is PyTorch's nn.Conv2d (a cross-correlation) with square kernels,
// equal strides and equal zero padding on every side: weight (Out, In,
// Kernel, Kernel) and bias (Out), parameters Name+".weight" and
// Name+".bias". The default initialisation is PyTorch's:
// U(−1/√fan_in, 1/√fan_in) for weight and bias with fan_in =
// In·Kernel². It maps (B, In, H, W) to (B, Out, H', W') with
// H' = ⌊(H + 2·Padding − Kernel)/Stride⌋ + 1, through nd.Conv.
type Conv2d struct {
	Name            string
	In, Out, Kernel int
	Stride          int // 0 means 1
	Padding         int
	WeightInit      Init // nil means TorchUniform
	BiasInit        Init // nil means TorchUniform
	NoBias          bool
}

func (c Conv2d) stride() int { return max(1, c.Stride) }

// FanIn is In·Kernel², the fan-in of PyTorch's initialisation.
func (c Conv2d) FanIn() int { return c.In * c.Kernel * c.Kernel }

// ParamSpecs lists the weight and, unless NoBias, the bias.
func (c Conv2d) ParamSpecs() []ParamSpec {
	s := []ParamSpec{{Name: c.Name + ".weight", Shape: []int{c.Out, c.In, c.Kernel, c.Kernel}, FanIn: c.FanIn(), Init: c.WeightInit}}
	if !c.NoBias {
		s = append(s, ParamSpec{Name: c.Name + ".bias", Shape: []int{c.Out}, FanIn: c.FanIn(), Init: c.BiasInit})
	}
	return s
}

// OutSize is the output's spatial size for an input of h×w pixels (an
// error if the kernel does not fit).
func (c Conv2d) OutSize(h, w int) (int, int, error) {
	if c.In < 1 || c.Out < 1 || c.Kernel < 1 || c.Stride < 0 || c.Padding < 0 {
		return 0, 0, fmt.Errorf("layers: conv %s: channels %d→%d, kernel %d, stride %d, padding %d", c.Name, c.In, c.Out, c.Kernel, c.Stride, c.Padding)
	}
	oh, ow := h+2*c.Padding-c.Kernel, w+2*c.Padding-c.Kernel
	if oh < 0 || ow < 0 {
		return 0, 0, fmt.Errorf("layers: conv %s: kernel %d larger than the padded %d×%d input", c.Name, c.Kernel, h, w)
	}
	return oh/c.stride() + 1, ow/c.stride() + 1, nil
}

// op is the nd.Conv of the layer.
func (c Conv2d) op() nd.Conv {
	s, p := c.stride(), c.Padding
	return nd.Conv{Strides: []int{s, s}, Dilations: []int{1, 1}, PadsBegin: []int{p, p}, PadsEnd: []int{p, p}, Group: 1, Bias: !c.NoBias}
}

// Apply maps x (B, In, H, W) to (B, Out, H', W').
func (c Conv2d) Apply(b Binder, x *G.Node) (*G.Node, error) {
	s, err := imageOf(x, "conv "+c.Name)
	if err != nil {
		return nil, err
	}
	if s[1] != c.In {
		return nil, fmt.Errorf("layers: conv %s expects %d channels, have %d", c.Name, c.In, s[1])
	}
	if _, _, err := c.OutSize(s[2], s[3]); err != nil {
		return nil, err
	}
	w, err := b.Param(c.Name+".weight", c.Out, c.In, c.Kernel, c.Kernel)
	if err != nil {
		return nil, err
	}
	in := []*G.Node{x, w}
	if !c.NoBias {
		bias, err := b.Param(c.Name+".bias", c.Out)
		if err != nil {
			return nil, err
		}
		in = append(in, bias)
	}
	return nd.Apply(c.op(), in...)
}

// AvgPool2d is PyTorch's nn.AvgPool2d(Kernel, Stride, Padding) with
// count_include_pad = True and floor rounding: the mean of each window,
// padding zeros counted. It has no parameters.
type AvgPool2d struct {
	Kernel  int
	Stride  int // 0 means Kernel, as in PyTorch
	Padding int
}

func (p AvgPool2d) stride() int {
	if p.Stride <= 0 {
		return p.Kernel
	}
	return p.Stride
}

func (p AvgPool2d) op() nd.Pool {
	s, q := p.stride(), p.Padding
	return nd.Pool{Kind: nd.AvgPool, Kernel: []int{p.Kernel, p.Kernel}, Strides: []int{s, s}, Dilations: []int{1, 1},
		PadsBegin: []int{q, q}, PadsEnd: []int{q, q}, CountIncludePad: true}
}

// Apply maps x (B, C, H, W) to (B, C, H', W') with
// H' = ⌊(H + 2·Padding − Kernel)/Stride⌋ + 1.
func (p AvgPool2d) Apply(_ Binder, x *G.Node) (*G.Node, error) {
	s, err := imageOf(x, "average pooling")
	if err != nil {
		return nil, err
	}
	if p.Kernel < 1 || p.Padding < 0 || 2*p.Padding > p.Kernel || s[2]+2*p.Padding < p.Kernel || s[3]+2*p.Padding < p.Kernel {
		return nil, fmt.Errorf("layers: average pooling of kernel %d, padding %d on %d×%d images", p.Kernel, p.Padding, s[2], s[3])
	}
	return nd.Apply(p.op(), x)
}

// GlobalAvgPool maps x (B, C, H, W) to the channel means (B, C), as
// PyTorch's x.mean((2, 3)) or AdaptiveAvgPool2d(1) then flatten.
func GlobalAvgPool(x *G.Node) (*G.Node, error) {
	if _, err := imageOf(x, "global average pooling"); err != nil {
		return nil, err
	}
	return nd.Apply(nd.Reduce{Kind: nd.ReduceMean, Axes: []int{2, 3}, Rank: 4}, x)
}

// ResBlock is a residual block of two 3×3 (Kernel×Kernel, 'same'
// padding) convolutions of Channels channels, pre-activated:
//
//	y = x + conv2(act(conv1(act(x))))
//
// with parameters Name.conv1.{weight,bias} and Name.conv2.{weight,bias}
// and PyTorch's default initialisation (conv2's weight and bias may be
// overridden by LastWeightInit and LastBiasInit).
type ResBlock struct {
	Name       string
	Channels   int
	Kernel     int        // odd; 0 means 3
	Activation Activation // zero value: identity
	// LastWeightInit and LastBiasInit, when set, initialise conv2.
	LastWeightInit, LastBiasInit Init
}

// Convs returns the block's two convolutions.
func (r ResBlock) Convs() (conv1, conv2 Conv2d) {
	k := r.Kernel
	if k == 0 {
		k = 3
	}
	conv1 = Conv2d{Name: r.Name + ".conv1", In: r.Channels, Out: r.Channels, Kernel: k, Padding: k / 2}
	conv2 = conv1
	conv2.Name = r.Name + ".conv2"
	conv2.WeightInit, conv2.BiasInit = r.LastWeightInit, r.LastBiasInit
	return conv1, conv2
}

// ParamSpecs lists conv1's then conv2's parameters.
func (r ResBlock) ParamSpecs() []ParamSpec {
	c1, c2 := r.Convs()
	return append(c1.ParamSpecs(), c2.ParamSpecs()...)
}

// Apply maps x (B, Channels, H, W) to x + conv2(act(conv1(act(x)))).
func (r ResBlock) Apply(b Binder, x *G.Node) (*G.Node, error) {
	if r.Kernel != 0 && r.Kernel%2 == 0 {
		return nil, fmt.Errorf("layers: residual block %s needs an odd kernel, have %d", r.Name, r.Kernel)
	}
	c1, c2 := r.Convs()
	h, err := applyActivation(b, r.Activation, x)
	if err != nil {
		return nil, err
	}
	if h, err = c1.Apply(b, h); err != nil {
		return nil, err
	}
	if h, err = applyActivation(b, r.Activation, h); err != nil {
		return nil, err
	}
	if h, err = c2.Apply(b, h); err != nil {
		return nil, err
	}
	return G.Add(x, h)
}

// squeeze maps x (B, C, H, W) to (B, 4C, H/2, W/2), the space-to-depth
// of RealNVP (Dinh et al. 2017) in Glow's order: output channel
// 4c + 2·dy + dx holds pixel (2i + dy, 2j + dx) of channel c. H and W must
// be even.
func squeeze(x *G.Node) (*G.Node, error) {
	s, err := imageOf(x, "squeeze")
	if err != nil {
		return nil, err
	}
	bsz, c, h, w := s[0], s[1], s[2], s[3]
	if h%2 != 0 || w%2 != 0 {
		return nil, fmt.Errorf("layers: cannot squeeze %d×%d images (odd size)", h, w)
	}
	y, err := G.Reshape(x, tensor.Shape{bsz, c, h / 2, 2, w / 2, 2})
	if err != nil {
		return nil, err
	}
	if y, err = nd.Apply(nd.Transpose{Perm: []int{0, 1, 3, 5, 2, 4}}, y); err != nil {
		return nil, err
	}
	return G.Reshape(y, tensor.Shape{bsz, 4 * c, h / 2, w / 2})
}

// unsqueeze is squeeze's inverse: (B, 4C, H, W) to (B, C, 2H, 2W).
func unsqueeze(x *G.Node) (*G.Node, error) {
	s, err := imageOf(x, "unsqueeze")
	if err != nil {
		return nil, err
	}
	bsz, c, h, w := s[0], s[1], s[2], s[3]
	if c%4 != 0 {
		return nil, fmt.Errorf("layers: cannot unsqueeze %d channels (not a multiple of 4)", c)
	}
	y, err := G.Reshape(x, tensor.Shape{bsz, c / 4, 2, 2, h, w})
	if err != nil {
		return nil, err
	}
	if y, err = nd.Apply(nd.Transpose{Perm: []int{0, 1, 4, 2, 5, 3}}, y); err != nil {
		return nil, err
	}
	return G.Reshape(y, tensor.Shape{bsz, c / 4, 2 * h, 2 * w})
}

// squeezeIndex returns, for images of shape s squeezed q times, the
// index in the unsqueezed (C, H, W) row of each squeezed coordinate:
// squeezed[k] = x[idx[k]].
func squeezeIndex(s ImageShape, q int) ([]int, ImageShape) {
	idx := make([]int, s.Dim())
	for i := range idx {
		idx[i] = i
	}
	for ; q > 0; q-- {
		next := make([]int, len(idx))
		h2, w2 := s.H/2, s.W/2
		for c := 0; c < s.C; c++ {
			for i := 0; i < s.H; i++ {
				for j := 0; j < s.W; j++ {
					oc := 4*c + 2*(i%2) + j%2
					next[(oc*h2+i/2)*w2+j/2] = idx[(c*s.H+i)*s.W+j]
				}
			}
		}
		idx, s = next, ImageShape{4 * s.C, h2, w2}
	}
	return idx, s
}
