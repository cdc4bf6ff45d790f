package onnx

import (
	"fmt"
	"sort"
	"strings"

	"github.com/flowebm/flowebm/layers/nd"
)

// einsumHandler is Einsum (torch.einsum: quadratic forms 'bi,ij,bj->b',
// bilinear maps, batched products, attention scores), contracted a pair
// of operands at a time from the left as batched matrix products: the
// letters both share and a later operand or the output needs are the
// batch, those they share and nothing later needs are summed by the
// product, the others kept; a letter only one operand has and nothing
// later needs is summed first. The gradient is that of these operations.
// (Broadcasting all operands at once took b·i·j values for 'bi,ij,bj->b'
// and refused d = 4096; probe 58.) Ellipses and a letter repeated within
// one operand (a diagonal) are refused.
func einsumHandler(in *instance, node *Node) ([]*val, error) {
	ops := make([]*val, len(node.Inputs))
	for i := range node.Inputs {
		v, err := in.input(node, i)
		if err != nil {
			return nil, err
		}
		ops[i] = v
	}
	terms, out, err := parseEinsum(nodeString(node, "equation", ""), len(ops))
	if err != nil {
		return nil, err
	}
	size := map[rune]int{}
	for k, t := range terms {
		if len(t) != len(ops[k].shape) {
			return nil, fmt.Errorf("equation term %q has %d letters for input %d of shape %v", string(t), len(t), k, ops[k].shape)
		}
		for a, c := range t {
			if n, seen := size[c]; seen && n != ops[k].shape[a] {
				return nil, notSupported("letter %q has size %d in one input and %d in another: ONNX's Einsum does not broadcast", c, n, ops[k].shape[a])
			}
			size[c] = ops[k].shape[a]
		}
	}
	acc, letters := ops[0], terms[0]
	for k := 1; k < len(ops); k++ {
		later := string(out)
		for _, t := range terms[k+1:] {
			later += string(t)
		}
		if acc, letters, err = in.contract(acc, letters, ops[k], terms[k], later, size); err != nil {
			return nil, err
		}
	}
	if acc, letters, err = in.sumOut(acc, letters, string(out)); err != nil {
		return nil, err
	}
	y, err := in.permuteLetters(acc, letters, out, size)
	return []*val{y}, err
}

// contract is the product of a (letters la) and b (letters lb), summed
// over the letters they share that later (the letters still needed) has
// not: the result's letters are the shared ones later needs, then a's
// others, then b's others.
func (in *instance) contract(a *val, la []rune, b *val, lb []rune, later string, size map[rune]int) (*val, []rune, error) {
	var err error
	if a, la, err = in.sumOut(a, la, later+string(lb)); err != nil {
		return nil, nil, err
	}
	if b, lb, err = in.sumOut(b, lb, later+string(la)); err != nil {
		return nil, nil, err
	}
	var batch, sum, onlyA, onlyB []rune
	for _, c := range la {
		switch {
		case !strings.ContainsRune(string(lb), c):
			onlyA = append(onlyA, c)
		case strings.ContainsRune(later, c):
			batch = append(batch, c)
		default:
			sum = append(sum, c)
		}
	}
	for _, c := range lb {
		if !strings.ContainsRune(string(la), c) {
			onlyB = append(onlyB, c)
		}
	}
	prod := func(ls []rune) int {
		p := 1
		for _, c := range ls {
			p *= size[c]
		}
		return p
	}
	at := concatRunes(batch, onlyA, sum)
	if a, err = in.permuteLetters(a, la, at, size); err != nil {
		return nil, nil, err
	}
	if a, err = in.reshape(a, []int{prod(batch), prod(onlyA), prod(sum)}); err != nil {
		return nil, nil, err
	}
	if b, err = in.permuteLetters(b, lb, concatRunes(batch, sum, onlyB), size); err != nil {
		return nil, nil, err
	}
	if b, err = in.reshape(b, []int{prod(batch), prod(sum), prod(onlyB)}); err != nil {
		return nil, nil, err
	}
	y, err := in.matMul(a, b, false, false)
	if err != nil {
		return nil, nil, err
	}
	letters := concatRunes(batch, onlyA, onlyB)
	shape := make([]int, len(letters))
	for i, c := range letters {
		shape[i] = size[c]
	}
	y, err = in.reshape(y, shape)
	return y, letters, err
}

// sumOut sums v (letters ls) over the letters keep lacks.
func (in *instance) sumOut(v *val, ls []rune, keep string) (*val, []rune, error) {
	var axes []int64
	var kept []rune
	for a, c := range ls {
		if strings.ContainsRune(keep, c) {
			kept = append(kept, c)
		} else {
			axes = append(axes, int64(a))
		}
	}
	if len(axes) == 0 {
		return v, ls, nil
	}
	y, err := in.reduce(nd.ReduceSum, v, axes, false)
	return y, kept, err
}

// permuteLetters permutes v's axes (letters ls) into the order of to
// (the same letters).
func (in *instance) permuteLetters(v *val, ls, to []rune, size map[rune]int) (*val, error) {
	perm := make([]int, len(to))
	shape := make([]int, len(to))
	for i, c := range to {
		perm[i] = strings.IndexRune(string(ls), c)
		shape[i] = size[c]
	}
	if len(perm) <= 1 || sort.IntsAreSorted(perm) {
		return v, nil
	}
	return in.op(nd.Transpose{Perm: perm}, shape, v.elem, v)
}

func concatRunes(parts ...[]rune) []rune {
	var r []rune
	for _, p := range parts {
		r = append(r, p...)
	}
	return r
}

// parseEinsum splits an Einsum equation into its n input terms and its
// output (implicit: the letters that appear once, in alphabetical order).
func parseEinsum(eq string, n int) (terms [][]rune, out []rune, err error) {
	eq = strings.ReplaceAll(eq, " ", "")
	if strings.Contains(eq, ".") {
		return nil, nil, notSupported("equation %q: ellipses (...) are not supported; write every axis's letter", eq)
	}
	lhs, rhs, explicit := strings.Cut(eq, "->")
	parts := strings.Split(lhs, ",")
	if len(parts) != n {
		return nil, nil, fmt.Errorf("equation %q has %d input terms for %d inputs", eq, len(parts), n)
	}
	count := map[rune]int{}
	for _, p := range parts {
		t := []rune(p)
		seen := map[rune]bool{}
		for _, c := range t {
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
				return nil, nil, fmt.Errorf("equation %q: %q is not a letter", eq, c)
			}
			if seen[c] {
				return nil, nil, notSupported("equation %q: the letter %q repeats within one input (a diagonal), which is not supported", eq, c)
			}
			seen[c] = true
			count[c]++
		}
		terms = append(terms, t)
	}
	if !explicit {
		for c, k := range count {
			if k == 1 {
				out = append(out, c)
			}
		}
		sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
		return terms, out, nil
	}
	out = []rune(rhs)
	seen := map[rune]bool{}
	for _, c := range out {
		if count[c] == 0 || seen[c] {
			return nil, nil, fmt.Errorf("equation %q: output letter %q appears in no input, or twice", eq, c)
		}
		seen[c] = true
	}
	return terms, out, nil
}
