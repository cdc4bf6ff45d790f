// Package graph holds flowebm's models as Gorgonia graphs: the parameter set
// with stable PyTorch-style names, the energy-based model (EBM), the
// normalizing flow, and their composition for NeuTra. It is the only package
// that runs Gorgonia machines.
//
// Every evaluation (energy, x-gradient, training gradient, flow pass) is
// compiled once per batch size: graph, gradient and tape machine are built
// on first use and cached; later calls copy the batch into the bound input,
// run the machine and copy the requested outputs out. Parameter values live
// in the Params set and are shared, not copied, by every compiled graph, so
// an optimiser that updates them in place is seen by all of them.
//
// Gradients are symbolic (gorgonia.Grad) and read through gorgonia.Read into
// preallocated values; no machine binds dual values, so a parameter gradient
// never accumulates across calls (the trap of REFERENCE §6).
//
// Models are not safe for concurrent use.
package graph
