// Package samplers holds MCMC kernels that advance many chains at once:
// ULA, MALA with step-size adaptation, HMC, independent Metropolis–Hastings,
// i-SIR, the flowMC global/local composite, and NeuTra; plus a chain store
// and analytic targets for testing.
//
// Kernels work on plain matrices: a batch of M chains is an M×d *mat.Dense.
// They see a target only through the Target interface and a flow only
// through the Proposal interface, so they run with flowebm's Gorgonia models
// (graph.EBM, graph.Flow, graph.Latent), with the analytic targets here, or
// with a user's own implementation.
//
// Every kernel takes an explicit *rand.Rand for each step and reports the
// step's statistics. A State caches log π, ∇ log π and the proposal's
// log-density at the current points, so no kernel recomputes what the
// previous one already knows; call Invalidate after changing the target (an
// EBM update) and InvalidateProposal after changing the proposal (a flow
// update).
package samplers
