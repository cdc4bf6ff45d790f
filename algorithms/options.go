package algorithms

import (
	"errors"
	"fmt"
	"strings"
)

// Algorithm names one of the paper's four ways to draw the negatives.
type Algorithm string

// The algorithms.
const (
	FlowMC   Algorithm = "flowmc"   // flowMC-EBM (Alg. 1): i-SIR from the flow, then MALA
	ULA      Algorithm = "ula"      // ULA-EBM: persistent contrastive divergence with Langevin
	NT       Algorithm = "nt"       // NT-EBM: MALA in the flow's latent space (NeuTra)
	CoopFlow Algorithm = "coopflow" // CoopFlow: short noise-free Langevin from the flow
)

// Algorithms lists the algorithms.
var Algorithms = []Algorithm{FlowMC, ULA, NT, CoopFlow}

// NegativeSelection says which chain states become the negatives.
type NegativeSelection string

// The selections.
const (
	NegativesLast      NegativeSelection = "last"      // the chains' final states
	NegativesAll       NegativeSelection = "all"       // every state of every step
	NegativesSubsample NegativeSelection = "subsample" // evenly spaced states of fewer chains (App. C.4)
)

// GlobalKernel is flowMC's global move.
type GlobalKernel string

// The global kernels.
const (
	ISIR GlobalKernel = "isir" // iterated sampling-importance resampling
	IMH  GlobalKernel = "imh"  // independent Metropolis-Hastings
)

// StartStrategy is how the persistent bank of chains starts.
type StartStrategy string

// The start strategies.
const (
	StartFlow     StartStrategy = "flow"     // samples of the initial flow (of ρ)
	StartUniform  StartStrategy = "uniform"  // uniform on [−StartScale, StartScale]^d
	StartGaussian StartStrategy = "gaussian" // N(0, StartScale² I)
)

// PretrainObjective is what flow pretraining fits.
type PretrainObjective string

// The pretraining objectives.
const (
	ObjectiveData      PretrainObjective = "data"       // maximum likelihood on the training data
	ObjectiveReverseKL PretrainObjective = "reverse-kl" // the reverse KL to the initial EBM
)

// optionValues lists each option type's values, for parsing and messages.
var optionValues = map[string][]string{
	"algorithm":          names(Algorithms),
	"sampler.negatives":  names([]NegativeSelection{NegativesLast, NegativesAll, NegativesSubsample}),
	"sampler.global":     names([]GlobalKernel{ISIR, IMH}),
	"start":              names([]StartStrategy{StartFlow, StartUniform, StartGaussian}),
	"pretrain.objective": names([]PretrainObjective{ObjectiveData, ObjectiveReverseKL}),
}

func names[T ~string](v []T) []string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = string(x)
	}
	return s
}

// checkOption returns an error naming field and its values unless s is
// one of them; "" (the default) is accepted.
// fieldPrefix is what a configuration's field names are nested under in
// errors ("" for a TrainConfig of its own, "train." in a run's config).
type fieldPrefix string

// f is field's name under p.
func (p fieldPrefix) f(field string) string { return string(p) + field }

// checkOption is the package's checkOption naming field under p.
func (p fieldPrefix) checkOption(field, s string) error {
	var e *OptionError
	if err := checkOption(field, s); errors.As(err, &e) {
		e.Field = p.f(field)
		return e
	}
	return nil
}

// OptionError is a value refused for one of the named options (algorithm,
// sampler.negatives, start, …), as JSON decodes it or Resolved checks it.
type OptionError struct {
	Field string // its name in a TrainConfig (a configuration nesting one adds its prefix)
	Value string
	Want  string // the values it takes
}

func (e *OptionError) Error() string {
	return fmt.Sprintf("algorithms: %s %q, want %s", e.Field, e.Value, e.Want)
}

func checkOption(field, s string) error {
	if s == "" {
		return nil
	}
	for _, v := range optionValues[field] {
		if s == v {
			return nil
		}
	}
	return &OptionError{Field: field, Value: s, Want: orList(optionValues[field])}
}

// orList quotes values as `"a", "b" or "c"`.
func orList(values []string) string {
	q := make([]string, len(values))
	for i, v := range values {
		q[i] = fmt.Sprintf("%q", v)
	}
	if len(q) < 2 {
		return strings.Join(q, "")
	}
	return strings.Join(q[:len(q)-1], ", ") + " or " + q[len(q)-1]
}

// UnmarshalText accepts an algorithm's name ("" for the default).
func (a *Algorithm) UnmarshalText(b []byte) error { return setOption("algorithm", string(b), a) }

// Set parses an algorithm's name (it implements the flag.Value of
// --algorithm).
func (a *Algorithm) Set(s string) error {
	var e *OptionError
	if err := a.UnmarshalText([]byte(s)); errors.As(err, &e) {
		return fmt.Errorf("want %s", e.Want) // the flag names itself and the value (round 80: "algorithms: algorithm …" after it)
	} else if err != nil {
		return err
	}
	return nil
}

// String returns the name.
func (a Algorithm) String() string { return string(a) }

// Type names the flag's values in help texts.
func (a *Algorithm) Type() string { return strings.Join(optionValues["algorithm"], "|") }

// UnmarshalText accepts a selection's name ("" for the default).
func (n *NegativeSelection) UnmarshalText(b []byte) error {
	return setOption("sampler.negatives", string(b), n)
}

// UnmarshalText accepts a kernel's name ("" for the default).
func (g *GlobalKernel) UnmarshalText(b []byte) error {
	return setOption("sampler.global", string(b), g)
}

// UnmarshalText accepts a strategy's name ("" for the default).
func (s *StartStrategy) UnmarshalText(b []byte) error { return setOption("start", string(b), s) }

// UnmarshalText accepts an objective's name ("" for the default).
func (o *PretrainObjective) UnmarshalText(b []byte) error {
	return setOption("pretrain.objective", string(b), o)
}

func setOption[T ~string](field, s string, dst *T) error {
	if err := checkOption(field, s); err != nil {
		return err
	}
	*dst = T(s)
	return nil
}
