package nd

import (
	"fmt"

	"gorgonia.org/tensor"
)

// Ranked returns op with the fields its Type needs besides its attributes
// set from the shapes of the inputs it will be applied to: Concat's Rank
// and N; the Rank of Gather and GatherElements; the Rank, IndicesRank and
// IndexDepth of GatherND and ScatterND; MatMul's RankA and RankB; and
// the Bias of Conv and ConvTranspose (whether there is a third input).
// Other operations come back unchanged. Type and InferShape need these
// fields (InferShape checks them, so that Apply fails with an error rather
// than building a node whose type and shape disagree); Do and Eval ignore
// them.
func Ranked(op Op, in ...tensor.Shape) Op {
	rank := func(i int) int {
		if i >= len(in) {
			return 0
		}
		return max(1, len(in[i]))
	}
	depth := 0
	if len(in) > 1 && len(in[1]) > 0 {
		depth = in[1][len(in[1])-1]
	}
	switch o := op.(type) {
	case Concat:
		o.Rank, o.N = rank(0), len(in)
		return o
	case Gather:
		o.Rank = rank(0)
		return o
	case GatherElements:
		o.Rank = rank(0)
		return o
	case GatherND:
		o.Rank, o.IndicesRank, o.IndexDepth = rank(0), rank(1), depth
		return o
	case ScatterND:
		o.Rank, o.IndicesRank, o.IndexDepth = rank(0), rank(1), depth
		return o
	case MatMul:
		o.RankA, o.RankB = rank(0), rank(1)
		return o
	case Binary:
		o.RankA, o.RankB = rank(0), rank(1)
		return o
	case Where:
		o.RankCond, o.RankA, o.RankB = rank(0), rank(1), rank(2)
		return o
	case Reduce:
		o.Rank = rank(0)
		return o
	case Det:
		o.Rank = rank(0)
		return o
	case Expand:
		o.Rank = rank(0)
		return o
	case Conv:
		o.Bias = len(in) == 3
		return o
	case ConvTranspose:
		o.Bias = len(in) == 3
		return o
	}
	return op
}

// checkFields returns an error unless op's fields describing its inputs
// (have) agree with its inputs' shapes (want).
func checkFields(op fmt.Stringer, in []tensor.Shape, have, want []int) error {
	for i := range have {
		if have[i] != want[i] {
			return fmt.Errorf("nd: %v does not describe inputs of shapes %v (see Ranked)", op, in)
		}
	}
	return nil
}
