// Package layers holds the building blocks of flowebm's models: parameter
// descriptions with their initialisers, activations, PyTorch-compatible
// Linear layers and MLPs, RealNVP affine couplings and Gaussian base
// distributions.
//
// A layer does not own values. It describes its parameters (ParamSpecs) and
// adds nodes to a Gorgonia graph through a Binder, which supplies the node
// bound to each named parameter of the graph being built. Package graph
// implements Binder and keeps the values, so one set of parameters serves
// graphs of many batch sizes.
package layers
