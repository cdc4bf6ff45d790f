// Package graph holds flowebm's models as Gorgonia graphs: the parameter set
// with stable PyTorch-style names, the energy-based model (EBM), the
// normalizing flow, and their composition for NeuTra. It is the only package
// that evaluates Gorgonia graphs.
//
// Every evaluation (energy, x-gradient, training gradient, flow pass) is
// compiled once per batch size: graph and symbolic gradient are built on
// first use and cached; later calls copy the batch into the bound input,
// run the graph's operations and copy the requested outputs out. Parameter
// values live in the Params set and are shared, not copied, by every
// compiled graph, so an optimiser that updates them in place is seen by all
// of them.
//
// The operations run on a small executor (exec.go) instead of Gorgonia's
// TapeMachine: it runs the same operations in the same order, bit for bit
// (tested), but keeps each node's value between calls and writes into it,
// on the calling goroutine, where the TapeMachine reallocates every
// intermediate on every call. Matrix products go to OpenBLAS when it can be
// loaded (see BLAS and BLASEnv), else to gonum's pure-Go BLAS.
//
// Gradients are symbolic (gorgonia.Grad) and read from their nodes' values;
// nothing binds dual values, so a parameter gradient never accumulates
// across calls (the trap of REFERENCE §6).
//
// Models are not safe for concurrent use.
package graph
