"""The model as data (tier 2): one transformer layer as an ordered list of ops, and the sums over
the model of its parameters and FLOPs.

* `ops` - the op records (GEMM, memory-bound kernel, collective, saved tensor, weight);
* `blocks/` - the blocks a layer is built from: attention, MLP, FP8 casts, the model's two ends
  (embedding, output layer), the loss kernels, and the pieces they share;
* `layer` - `build_layer`: one layer's ops for a workload;
* `params`, `flops` - parameter counts and the paper's Appendix A FLOPs.
"""
