package layers

// This file sizes the image models for memory estimates made before they
// are built (algorithms.SizesOf, the run configuration's bound): their
// parameter counts, and the values their graphs hold per input row.

// Graph values per feature value of the image models' graphs (the
// feature values: featureValues), measured as peak resident memory per
// row of graph.EBM and graph.Flow on 256 to 1,024 rows (float64, 4
// shards; TestImageGraphValues): the EBM (channels 16, 32, 32) 1.02
// values per feature value for E, 2.04 for E and ∇ₓE and 2.05 for the
// parameters' gradient (LossGrad); the RealNVP (1 coupling of each kind
// per scale, 16 channels) 1.07 for a sample or a density, 2.38 for the
// maximum-likelihood gradient. Every compiled graph keeps its values (one
// per batch size the model has run on); the convolutions' im2col scratch
// is per worker, not per row.
const (
	// imageGradValues bounds the values per feature value while the graph
	// is differentiated (E and ∇ₓE, the parameters' gradient, the flow's
	// maximum likelihood or NeuTra's chains).
	imageGradValues = 2.5
	// imageEvalValues bounds them while it is only evaluated.
	imageEvalValues = 1.25
)

// SpecsSize is the number of parameter values the specs describe.
func SpecsSize(specs []ParamSpec) int {
	n := 0
	for _, s := range specs {
		n += s.Size()
	}
	return n
}

// ParamCount is the number of parameters (0 for an invalid configuration).
func (e ImageEnergy) ParamCount() int { return SpecsSize(e.ParamSpecs()) }

// featureValues is the number of values of the feature maps one image
// makes through the network: the input, the stem's output, per stage its
// downsampling's activation and output and per residual block five maps
// (two activations, two convolutions and the sum), the last activation
// and the pooled features (0 for an invalid configuration).
func (e ImageEnergy) featureValues() float64 {
	l, err := e.Layers()
	if err != nil {
		return 0
	}
	e = e.WithDefaults()
	n := float64(e.Image.Dim())
	last := 0.0
	for i, c := range e.Channels {
		hw := float64(l.Sizes[i][0] * l.Sizes[i][1])
		m := float64(c) * hw
		switch {
		case i == 0:
			n += m // stem
		default:
			p := l.Sizes[i-1]
			n += float64(e.Channels[i-1]*p[0]*p[1]) + m // activation, downsampling
			if e.Downsample == DownAvgPool {
				n += float64(e.Channels[i-1]) * hw
			}
		}
		n += 5 * float64(len(l.Blocks[i])) * m
		last = m
	}
	return n + last + float64(e.Channels[len(e.Channels)-1]) + 2
}

// GraphValues bounds the float64 (or float32) values E's graph holds per
// input row: while E, ∇ₓE and the parameters' gradient are computed
// (grad), or while E alone is (0 for an invalid configuration).
func (e ImageEnergy) GraphValues(grad bool) float64 {
	if grad {
		return imageGradValues * e.featureValues()
	}
	return imageEvalValues * e.featureValues()
}

// ParamCount is the number of parameters (0 for an invalid configuration).
func (r ImageRealNVP) ParamCount() int {
	s, err := r.ParamSpecs()
	if err != nil {
		return 0
	}
	return SpecsSize(s)
}

// featureValues is the number of values one image makes through all the
// couplings of one pass: per coupling its conditioner's maps on the
// squeezed image (the input convolution's, five per residual block, the
// activation's) and about a dozen values per coordinate (the masks'
// products, the heads unsqueezed, s, t, exp(s), y) (0 for an invalid
// configuration).
func (r ImageRealNVP) featureValues() float64 {
	cs, err := r.Couplings()
	if err != nil {
		return 0
	}
	r = r.WithDefaults()
	d := float64(r.Image.Dim())
	n := d
	for _, c := range cs {
		sq := 1 << (2 * c.Squeeze) // the squeezed image has 4^q times fewer pixels
		hw := float64(r.Image.H*r.Image.W) / float64(sq)
		n += float64(2+5*len(c.Blocks))*float64(r.Hidden)*hw + 12*d
	}
	return n
}

// GraphValues bounds the values the flow's graph holds per input row
// while a pass is differentiated (grad: the density's gradient for
// maximum likelihood, or NeuTra's chains), or only evaluated (0 for an
// invalid configuration).
func (r ImageRealNVP) GraphValues(grad bool) float64 {
	if grad {
		return imageGradValues * r.featureValues()
	}
	return imageEvalValues * r.featureValues()
}
