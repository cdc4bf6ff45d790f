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
// and refused d = 4096; probe 58.) An ellipsis is written out as letters
// of its own, whose axes broadcast (an axis of size 1 is dropped: the
// operand does not vary along it); a letter repeated within one operand
// takes its diagonal first.
func einsumHandler(in *instance, node *Node) ([]*val, error) {
	ops := make([]*val, len(node.Inputs))
	ranks := make([]int, len(node.Inputs))
	for i := range node.Inputs {
		v, err := in.input(node, i)
		if err != nil {
			return nil, err
		}
		ops[i], ranks[i] = v, len(v.shape)
	}
	eq, err := parseEinsum(nodeString(node, "equation", ""), ranks)
	if err != nil {
		return nil, err
	}
	terms, out := eq.terms, eq.out
	size, err := letterSizes(ops, eq)
	if err != nil {
		return nil, err
	}
	for k := range ops {
		if ops[k], terms[k], err = in.einsumOperand(ops[k], terms[k], size); err != nil {
			return nil, err
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

// letterSizes gives each letter its size, the same in every operand
// except for an ellipsis's letters, which broadcast: their size is the
// largest, the others being 1.
func letterSizes(ops []*val, eq einsumEquation) (map[rune]int, error) {
	size := map[rune]int{}
	for k, t := range eq.terms {
		for a, c := range t {
			n := ops[k].shape[a]
			m, seen := size[c]
			switch {
			case !seen || m == n:
			case strings.ContainsRune(string(eq.ellipsis), c) && (m == 1 || n == 1):
				n = max(m, n)
			case strings.ContainsRune(string(eq.ellipsis), c):
				return nil, fmt.Errorf("the ellipsis's axes do not broadcast: sizes %d and %d", m, n)
			default:
				return nil, notSupported("letter %q has size %d in one input and %d in another: ONNX's Einsum does not broadcast", c, m, n)
			}
			size[c] = n
		}
	}
	return size, nil
}

// einsumOperand takes the diagonal of v (letters t) along each repeated
// letter, and drops the axes of size 1 whose letter is larger elsewhere
// (broadcast), and returns v and its letters.
func (in *instance) einsumOperand(v *val, t []rune, size map[rune]int) (*val, []rune, error) {
	t = append([]rune(nil), t...)
	for a := 0; a < len(t); a++ {
		if v.shape[a] == 1 && size[t[a]] > 1 {
			shape := append(append([]int(nil), v.shape[:a]...), v.shape[a+1:]...)
			var err error
			if v, err = in.reshape(v, shape); err != nil {
				return nil, nil, err
			}
			t = append(t[:a], t[a+1:]...)
			a--
		}
	}
	for a := 0; a < len(t); a++ {
		for b := a + 1; b < len(t); b++ {
			if t[a] != t[b] {
				continue
			}
			var err error
			if v, err = in.diagonal(v, a, b); err != nil {
				return nil, nil, err
			}
			t = append(t[:b], t[b+1:]...)
			b--
		}
	}
	return v, t, nil
}

// diagonal takes v's diagonal along axes a < b, of one size: the result
// has b removed. It multiplies by an identity and sums, so that the
// gradient is that of these.
func (in *instance) diagonal(v *val, a, b int) (*val, error) {
	n := v.shape[a]
	mask := make([]int, len(v.shape))
	for i := range mask {
		mask[i] = 1
	}
	mask[a], mask[b] = n, n
	if err := in.reserveConst(n * n); err != nil {
		return nil, err
	}
	eye := make([]float64, n*n)
	for i := 0; i < n; i++ {
		eye[i*n+i] = 1
	}
	y, err := in.binary(nd.Mul, v, ownConst(mask, v.elem, eye))
	if err != nil {
		return nil, err
	}
	return in.reduce(nd.ReduceSum, y, []int64{int64(b)}, false)
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

// einsumEquation is a parsed Einsum equation: one term of letters per
// input, the output's letters, and the letters that stand for the
// ellipsis.
type einsumEquation struct {
	terms    [][]rune
	out      []rune
	ellipsis []rune
}

// parseEinsum parses an Einsum equation for inputs of the given ranks. An
// ellipsis stands for the axes a term's letters leave, aligned on the
// right across the terms; it is written out with letters the equation
// does not use. The implicit output is the ellipsis's letters, then the
// letters that appear once, in alphabetical order. A letter may repeat
// within one input (a diagonal), not in the output.
func parseEinsum(eq string, ranks []int) (einsumEquation, error) {
	var e einsumEquation
	orig := eq
	eq = strings.ReplaceAll(eq, " ", "")
	lhs, rhs, explicit := strings.Cut(eq, "->")
	parts := strings.Split(lhs, ",")
	if len(parts) != len(ranks) {
		return e, fmt.Errorf("equation %q has %d input terms for %d inputs", orig, len(parts), len(ranks))
	}
	dims := 0 // the ellipsis's rank
	for k, p := range parts {
		n, letters, err := ellipsisTerm(p)
		if err != nil {
			return e, fmt.Errorf("equation %q: %w", orig, err)
		}
		if n > 0 {
			if len(letters) > ranks[k] {
				return e, fmt.Errorf("equation %q: term %q has %d letters for input %d of rank %d", orig, p, len(letters), k, ranks[k])
			}
			dims = max(dims, ranks[k]-len(letters))
		}
	}
	fresh, err := unusedLetters(eq, dims)
	if err != nil {
		return e, fmt.Errorf("equation %q: %w", orig, err)
	}
	e.ellipsis = fresh
	count := map[rune]int{}
	for k, p := range parts {
		t := []rune(p)
		if n, letters, _ := ellipsisTerm(p); n > 0 { // its last ranks[k]−len(letters) axes
			t = []rune(strings.Replace(p, "...", string(fresh[dims-(ranks[k]-len(letters)):]), 1))
		}
		if len(t) != ranks[k] {
			return e, fmt.Errorf("equation %q: term %q has %d letters for input %d of rank %d", orig, p, len(t), k, ranks[k])
		}
		for _, c := range t {
			count[c]++
		}
		e.terms = append(e.terms, t)
	}
	if !explicit {
		e.out = append(e.out, fresh...)
		var once []rune
		for c, k := range count {
			if k == 1 && !strings.ContainsRune(string(fresh), c) {
				once = append(once, c)
			}
		}
		sort.Slice(once, func(i, j int) bool { return once[i] < once[j] })
		e.out = append(e.out, once...)
		return e, nil
	}
	n, letters, err := ellipsisTerm(rhs)
	if err != nil {
		return e, fmt.Errorf("equation %q: output: %w", orig, err)
	}
	e.out = []rune(letters)
	if n > 0 {
		e.out = []rune(strings.Replace(rhs, "...", string(fresh), 1))
	}
	seen := map[rune]bool{}
	for _, c := range e.out {
		if count[c] == 0 || seen[c] {
			return e, fmt.Errorf("equation %q: output letter %q appears in no input, or twice", orig, c)
		}
		seen[c] = true
	}
	return e, nil
}

// ellipsisTerm checks a term: letters and at most one ellipsis. It returns
// the number of ellipses and the letters.
func ellipsisTerm(p string) (int, string, error) {
	n := strings.Count(p, "...")
	if n > 1 {
		return 0, "", fmt.Errorf("term %q has more than one ellipsis", p)
	}
	letters := strings.Replace(p, "...", "", 1)
	for _, c := range letters {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			return 0, "", fmt.Errorf("%q is not a letter", c)
		}
	}
	return n, letters, nil
}

// unusedLetters returns n letters that eq does not use.
func unusedLetters(eq string, n int) ([]rune, error) {
	var fresh []rune
	for _, c := range "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz" {
		if len(fresh) == n {
			break
		}
		if !strings.ContainsRune(eq, c) {
			fresh = append(fresh, c)
		}
	}
	if len(fresh) < n {
		return nil, fmt.Errorf("the ellipsis stands for %d axes, more than the letters left", n)
	}
	return fresh, nil
}
