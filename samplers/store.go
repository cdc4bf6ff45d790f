package samplers

import (
	"fmt"
	"math/rand/v2"

	"gonum.org/v1/gonum/mat"
)

// Store keeps the last Capacity recorded draws of M chains in d dimensions
// (a ring buffer), recording every Thin-th call, so memory stays bounded
// however long the chains run.
type Store struct {
	m, d, capacity, thin int
	buf                  []float64 // capacity × m × d
	calls, n             int       // Record calls, draws recorded
}

// NewStore makes a store for m chains in d dimensions keeping capacity
// draws; thin ≤ 1 records every call.
func NewStore(m, d, capacity, thin int) (*Store, error) {
	if m < 1 || d < 1 || capacity < 1 {
		return nil, fmt.Errorf("samplers: store needs positive chains, dimension and capacity, have %d, %d, %d", m, d, capacity)
	}
	return &Store{m: m, d: d, capacity: capacity, thin: max(thin, 1), buf: make([]float64, capacity*m*d)}, nil
}

// Record stores x (M × d) if this call is a multiple of the thinning.
func (st *Store) Record(x mat.Matrix) {
	r, c := x.Dims()
	if r != st.m || c != st.d {
		panic(fmt.Sprintf("samplers: Store.Record of %d×%d, store is %d×%d", r, c, st.m, st.d))
	}
	st.calls++
	if (st.calls-1)%st.thin != 0 {
		return
	}
	slot := st.n % st.capacity
	off := slot * st.m * st.d
	for i := 0; i < st.m; i++ {
		for j := 0; j < st.d; j++ {
			st.buf[off+i*st.d+j] = x.At(i, j)
		}
	}
	st.n++
}

// Shape returns the chains and the dimension the store records.
func (st *Store) Shape() (m, d int) { return st.m, st.d }

// Len is the number of draws held (at most the capacity).
func (st *Store) Len() int { return min(st.n, st.capacity) }

// slot returns the ring slot of the t-th held draw in chronological order.
func (st *Store) slot(t int) int {
	if st.n <= st.capacity {
		return t
	}
	return (st.n + t) % st.capacity
}

// Chains returns dimension j of the held draws as x[chain][draw],
// chronological, ready for the diagnostics package.
func (st *Store) Chains(j int) [][]float64 {
	out := make([][]float64, st.m)
	for i := range out {
		out[i] = make([]float64, st.Len())
		for t := range out[i] {
			out[i][t] = st.buf[st.slot(t)*st.m*st.d+i*st.d+j]
		}
	}
	return out
}

// Draws returns the held draws as a chains × draws × d row-major array (the
// layout `flowebm diagnose` reads).
func (st *Store) Draws() []float64 {
	t := st.Len()
	out := make([]float64, st.m*t*st.d)
	for i := 0; i < st.m; i++ {
		for k := 0; k < t; k++ {
			src := st.buf[st.slot(k)*st.m*st.d+i*st.d:][:st.d]
			copy(out[(i*t+k)*st.d:], src)
		}
	}
	return out
}

// RunChains runs kernel on the chains of x0 (m × d, moved in place): warmup
// steps first, then afterWarmup (if not nil; e.g. to freeze a step size),
// then steps more whose states are returned laid out chains × steps × d
// (the layout of Store.Draws and `flowebm diagnose`), with the mean local
// and global acceptance over the kept steps (NaN where the kernel has no
// such moves). ChainRun is the same, a step at a time.
func RunChains(rng *rand.Rand, kernel Kernel, x0 *mat.Dense, warmup, steps int, afterWarmup func()) (draws []float64, local, global float64, err error) {
	r, err := NewChainRun(kernel, x0, warmup, steps, afterWarmup)
	if err != nil {
		return nil, 0, 0, err
	}
	for !r.Finished() {
		if err := r.Step(rng); err != nil {
			return nil, 0, 0, err
		}
	}
	draws, local, global = r.Result()
	return draws, local, global, nil
}

// ChainRun is RunChains one step at a time, so that a caller can show
// progress and checkpoint between steps: State, Done and the draws kept so
// far (Store) are the whole of its progress.
type ChainRun struct {
	Kernel        Kernel
	State         *State
	Warmup, Steps int
	// Done counts the steps run, warm-up first.
	Done int
	// Store holds the kept steps' states.
	Store *Store
	// Local and Global accumulate the kept steps' mean acceptances (each
	// step's divided by Steps).
	Local, Global float64
	// GradUndefined counts the proposals of every step, warm-up included,
	// rejected for an undefined gradient (Stats.GradUndefined).
	GradUndefined int
	afterWarmup   func()
}

// NewChainRun prepares RunChains' run of kernel on x0.
func NewChainRun(kernel Kernel, x0 *mat.Dense, warmup, steps int, afterWarmup func()) (*ChainRun, error) {
	m, d := x0.Dims()
	if steps < 1 || warmup < 0 {
		return nil, fmt.Errorf("samplers: %d steps after %d of warm-up, want ≥ 1 and ≥ 0", steps, warmup)
	}
	store, err := NewStore(m, d, steps, 1)
	if err != nil {
		return nil, err
	}
	if warmup == 0 && afterWarmup != nil {
		afterWarmup()
	}
	return &ChainRun{Kernel: kernel, State: NewState(x0), Warmup: warmup, Steps: steps, Store: store, afterWarmup: afterWarmup}, nil
}

// Finished says whether every step has run.
func (r *ChainRun) Finished() bool { return r.Done >= r.Warmup+r.Steps }

// Step runs the next step (after the last warm-up step, afterWarmup).
func (r *ChainRun) Step(rng *rand.Rand) error {
	if r.Finished() {
		return fmt.Errorf("samplers: the run has finished its %d steps", r.Warmup+r.Steps)
	}
	s, err := r.Kernel.Step(rng, r.State)
	r.GradUndefined += s.GradUndefined
	if r.Done < r.Warmup {
		if err != nil {
			return fmt.Errorf("warm-up step %d: %w", r.Done+1, err)
		}
		if r.Done++; r.Done == r.Warmup && r.afterWarmup != nil {
			r.afterWarmup()
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("step %d: %w", r.Done-r.Warmup+1, err)
	}
	r.Local += s.Local / float64(r.Steps)
	r.Global += s.Global / float64(r.Steps)
	r.Store.Record(r.State.X)
	r.Done++
	return nil
}

// Result returns the kept draws (chains × steps × d) and the mean local
// and global acceptance over the kept steps.
func (r *ChainRun) Result() (draws []float64, local, global float64) {
	return r.Store.Draws(), r.Local, r.Global
}
