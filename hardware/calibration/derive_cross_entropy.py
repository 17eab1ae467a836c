"""Derive dgx-b200.yaml's measured cross-entropy rates (memory_bound.unfused_cross_entropy_gbps,
te_cross_entropy_gbps) from SimuMax's B200 system file.

Source: MooreThreads/SimuMax configs/system/b200_bf16_ceperm.json @4dcaae51 (the copy in
dgx-b200/sources/), accelerator.bandwidth.ce and .ce_fusion. SimuMax's
simu_tools/efficency_test/test_ce_permute_efficiency.py times, with CUDA events on its B200,
Megatron's vocab_parallel_cross_entropy ("ce", with --measure-nonfusion-ce) and Transformer
Engine's parallel_cross_entropy ("ce_fusion") forward and backward at s = 4096 over Llama-3's
vocabulary shards (tp 1-8) and two DeepSeek vocabularies, and stores the total bytes over the
total time as a fraction of its 8000 GiB/s, after taking 30 us off each of the two launches a
case (`weighted_efficiency`, launches=2). The bytes it counts (`ce_theoretical_bytes`) are
simsp/layer/loss.py's for the unfused kernel (38 + 14 a logit) and 4 + 4 for TE's, where
loss.py counts 6 + 4 (the logits are read twice in forward): the same time over loss.py's bytes
is 10/8 of SimuMax's rate. The 60 us a case it set apart is left out (a few per cent of a
tp-8 shard's pass, less for wider ones).

    python hardware/calibration/derive_cross_entropy.py   # prints the two YAML lines
"""

import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SIMUMAX_SYSTEM = REPO / "hardware" / "calibration" / "dgx-b200" / "sources" / "simumax_b200_bf16_ceperm.json"
GIB = 2**30 / 1e9
"""SimuMax's gbps are GiB/s (config.py compute_mem_access_time: gbps * 1024**3)."""
SIMUMAX_BYTES = {"ce": 38.0 + 14.0, "ce_fusion": 4.0 + 4.0}
"""Bytes a logit SimuMax counts, forward + backward (ce_theoretical_bytes)."""
SIMSP = {"unfused": ("ce", 38.0 + 14.0), "te": ("ce_fusion", 6.0 + 4.0)}
"""simsp's implementation: (SimuMax's key, loss.py's bytes a logit, forward + backward)."""


def cross_entropy_gbps(path: Path = SIMUMAX_SYSTEM) -> dict[str, float]:
    """{implementation: GB/s of loss.py's bytes} measured on SimuMax's B200."""
    bandwidth = json.loads(path.read_text())["accelerator"]["bandwidth"]
    out = {}
    for name, (key, simsp_bytes) in SIMSP.items():
        b = bandwidth[key]
        rate = b["gbps"] * GIB * b["efficient_factor"]
        out[name] = round(rate * simsp_bytes / SIMUMAX_BYTES[key], 1)
    return out


def main() -> None:
    path = Path(sys.argv[1]) if len(sys.argv) > 1 else SIMUMAX_SYSTEM
    for name, gbps in cross_entropy_gbps(path).items():
        print(f"  {name}_cross_entropy_gbps: {gbps:g}")


if __name__ == "__main__":
    main()
