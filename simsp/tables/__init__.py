"""Calibration data in and out: nccl-tests logs and GEMM tables, with their interpolated lookups.

Two kinds of measured table feed the cost model:

* `CollectiveTable` - the time of one collective (all_reduce, all_gather, reduce_scatter,
  send_recv) versus message size, for one group size and link, read from nccl-tests output
  (current and pre-2022 layouts, MPI-prefixed or not) or a vTrain look-up table (`nccl`), and
  written back in the current nccl-tests layout (`nccl_writer`; `simsp profile` emits that);
* `GemmTable` - achieved GEMM throughput by shape (m, n, k, batch, layout), read from and
  written to a small commented CSV;
* `AttentionTable` - achieved fused-attention (FlashAttention) throughput by head size,
  sequence length, causal mask and direction.
"""

from simsp.tables.attention import (
    AttentionPoint,
    AttentionTable,
    read_attention_table,
    write_attention_table,
)
from simsp.tables.gemm import (
    LAYOUTS,
    GemmPoint,
    GemmTable,
    read_gemm_table,
    write_gemm_table,
)
from simsp.tables.nccl import (
    BUSBW_FACTORS,
    COLLECTIVES,
    CollectiveTable,
    merge_tables,
    read_nccl_log,
)
from simsp.tables.nccl_writer import write_nccl_log

__all__ = [
    "AttentionPoint",
    "AttentionTable",
    "read_attention_table",
    "write_attention_table",
    "BUSBW_FACTORS",
    "COLLECTIVES",
    "CollectiveTable",
    "merge_tables",
    "read_nccl_log",
    "write_nccl_log",
    "LAYOUTS",
    "GemmPoint",
    "GemmTable",
    "read_gemm_table",
    "write_gemm_table",
]
