// Package nd holds differentiable N-dimensional tensor operations for
// Gorgonia graphs: elementwise functions, NumPy-broadcast binary operations,
// reductions, indexing, convolution and pooling, as ONNX defines them. They
// are what io/onnx builds imported models from, beside Gorgonia's own
// Reshape and matrix product.
//
// Every operation is a Gorgonia Op value (a struct whose fields are its
// attributes) that works on float64 and float32 dense tensors of rank ≥ 1:
// a result that ONNX would give rank 0 has shape (1) here, and callers that
// track ONNX's shapes reshape accordingly. Each Op implements Do and
// UsePreallocDo (so flowebm's executor writes into its previous result) and,
// where the operation is differentiable, SymDiff with first-order gradient
// operations of its own (gradients are not differentiated again). Inputs
// that carry no gradient (masks, indices) say so through DiffWRT.
//
// Because an Op's Do works on plain tensors, the same code folds constant
// subgraphs at build time: see Eval.
package nd
