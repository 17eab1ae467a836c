"""The blocks a transformer layer is built from, one role a file: `attention`, `mlp`, `fp8` (the
casts Transformer Engine adds), `ends` (embedding and output layer), `loss` (the cross-entropy
kernels) and `shared` (the pre-norm, TP linear layers and TP/SP collectives every block uses)."""
