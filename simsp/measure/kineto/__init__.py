"""A PyTorch profiler (Kineto) trace of real iterations, read and laid against simsp's ops.

`reader` reads the trace with HolisticTraceAnalysis (the `trace` extra) into plain `Kernel`
records: GPU kernels with the CPU op that launched them (its recorded input shapes, whether it ran
in autograd's backward, its collective's size and group); a trace with no GPU kernels (torch's CPU
build) gives its aten ops instead, by self time, and says it is a CPU trace. `match` maps each
kernel to an op of the workload's layer (GEMMs by shape, fused attention, norms, element-wise and
NCCL kernels by name) or lists it unmatched. `tables` turns the matched kernels into simsp's
calibration tables (GEMM, FlashAttention, memory-bound rates, collectives, host floor) and a
hardware file; `compare` sets a simulated iteration beside the real one, op kind by op kind and
layer by layer (the overlay page draws it).
"""
