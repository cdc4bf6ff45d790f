package onnx

import (
	"fmt"
	"sort"
	"strings"

	"github.com/flowebm/flowebm/layers/nd"
)

// einsumHandler is Einsum (torch.einsum: quadratic forms
// 'bi,ij,bj->b', bilinear maps, attention scores) computed by
// broadcasting: each operand's axes are permuted into the order in which
// the equation's letters first appear, with an axis of size 1 for each
// letter it lacks; the operands are multiplied, summed over the letters
// the output lacks, and permuted into the output's order. The gradient is
// that of these operations. Ellipses and a letter repeated within one
// operand (a diagonal) are refused. The product holds every letter's
// axis at once: 'bi,ij,bj->b' takes b·i·j values.
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
	letters, size := []rune{}, map[rune]int{}
	for k, t := range terms {
		if len(t) != len(ops[k].shape) {
			return nil, fmt.Errorf("equation term %q has %d letters for input %d of shape %v", string(t), len(t), k, ops[k].shape)
		}
		for a, c := range t {
			n, seen := size[c]
			if !seen {
				letters = append(letters, c)
				size[c] = ops[k].shape[a]
			} else if n != ops[k].shape[a] {
				return nil, fmt.Errorf("letter %q has size %d in one input and %d in another", c, n, ops[k].shape[a])
			}
		}
	}
	var prod *val
	for k, t := range terms {
		v, err := in.alignEinsum(ops[k], t, letters, size)
		if err != nil {
			return nil, err
		}
		if prod == nil {
			prod = v
		} else if prod, err = in.binary(nd.Mul, prod, v); err != nil {
			return nil, err
		}
	}
	var sumAxes []int64
	var kept []rune
	for a, c := range letters {
		if strings.ContainsRune(string(out), c) {
			kept = append(kept, c)
		} else {
			sumAxes = append(sumAxes, int64(a))
		}
	}
	if len(sumAxes) > 0 {
		if prod, err = in.reduce(nd.ReduceSum, prod, sumAxes, false); err != nil {
			return nil, err
		}
	}
	perm := make([]int, len(out))
	shape := make([]int, len(out))
	for i, c := range out {
		perm[i] = strings.IndexRune(string(kept), c)
		shape[i] = size[c]
	}
	if len(out) <= 1 || sort.IntsAreSorted(perm) {
		return []*val{prod}, nil
	}
	y, err := in.op(nd.Transpose{Perm: perm}, shape, prod.elem, prod)
	return []*val{y}, err
}

// alignEinsum permutes v's axes (letters t) into the order of letters
// and gives it an axis of size 1 for each letter it lacks.
func (in *instance) alignEinsum(v *val, t []rune, letters []rune, size map[rune]int) (*val, error) {
	var order []rune
	for _, c := range letters {
		if strings.ContainsRune(string(t), c) {
			order = append(order, c)
		}
	}
	perm := make([]int, len(order))
	moved := make([]int, len(order))
	for i, c := range order {
		perm[i] = strings.IndexRune(string(t), c)
		moved[i] = size[c]
	}
	var err error
	if len(perm) > 1 && !sort.IntsAreSorted(perm) {
		if v, err = in.op(nd.Transpose{Perm: perm}, moved, v.elem, v); err != nil {
			return nil, err
		}
	}
	full := make([]int, len(letters))
	for i, c := range letters {
		full[i] = 1
		if strings.ContainsRune(string(t), c) {
			full[i] = size[c]
		}
	}
	return in.reshape(v, full)
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
