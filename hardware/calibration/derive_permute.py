"""Derive dgx-b200.yaml's measured MoE permute rates (memory_bound.permute_fwd_gbps,
permute_bwd_gbps) from SimuMax's B200 system file.

Source: MooreThreads/SimuMax configs/system/b200_bf16_ceperm.json @4dcaae51 (the copy in
dgx-b200/sources/), accelerator.bandwidth.permute_fwd and .permute_bwd. SimuMax's
simu_tools/efficency_test/test_ce_permute_efficiency.py times, with CUDA events on its B200,
Transformer Engine's moe_permute_with_probs followed by moe_unpermute (the fused kernels
Megatron-Core runs with --moe-permute-fusion), forward, then their backward (with the `.sum()`
that starts it), over two cases (`permute_cases`: DeepSeek-V2, 4,096 tokens of hidden 5,120 to
160 experts top-6; DeepSeek-V3, 4,096 tokens of 7,168 to 256 experts top-8; capacity factor 1),
and stores the cases' total bytes (`permute_theoretical_bytes`: input + 3 permuted for the
permute, 3 permuted + input for the unpermute) over their total time as a fraction of its
8000 GiB/s, after setting 30 us apart for each of a case's four launches (`weighted_efficiency`,
launches=4). Bytes and the set-apart time being known, the total time is recovered exactly; the
rate here is the bytes simsp/model/blocks/moe.py counts for the permute and unpermute of the same
two cases over that time, the launches included.

    python hardware/calibration/derive_permute.py   # prints the two YAML lines
"""

import json
import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from derive_cross_entropy import SIMUMAX_SYSTEM, simumax_seconds  # noqa: E402

CASES = ((4096, 5120, 160, 6), (4096, 7168, 256, 8))
"""(tokens, hidden, experts, top-k) of test_ce_permute_efficiency.py's `permute_cases`."""
LAUNCH_S = 4 * 30e-6
"""What SimuMax set apart a case: four launches of its bandwidth entry's latency_us (30)."""
BYTES = 2
"""bf16."""


def _sizes(tokens: int, hidden: int, experts: int, topk: int) -> tuple[int, int]:
    """(input, permuted) elements: the permuted rows padded to capacity factor 1."""
    capacity = math.ceil(tokens * topk / experts)
    return tokens * hidden, capacity * experts * hidden


def simumax_bytes(case) -> int:
    """test_ce_permute_efficiency.py permute_theoretical_bytes (the same forward and backward)."""
    inp, permuted = _sizes(*case)
    return BYTES * ((inp + 3 * permuted) + (3 * permuted + inp))


def simsp_bytes(case, backward: bool) -> int:
    """The permute and unpermute ops' bytes in simsp/model/blocks/moe.py: forward, permute
    reads the tokens and writes their copies, unpermute reads the copies and writes the tokens;
    backward, the unpermute's gradient also reads the saved copies for the probabilities."""
    inp, permuted = _sizes(*case)
    return BYTES * (2 * inp + (3 if backward else 2) * permuted)


def permute_gbps(path: Path = SIMUMAX_SYSTEM) -> dict[str, float]:
    """{fwd, bwd: GB/s of moe.py's bytes, launches included} on SimuMax's B200."""
    bandwidth = json.loads(path.read_text())["accelerator"]["bandwidth"]
    out = {}
    for direction in ("fwd", "bwd"):
        total = sum(simumax_bytes(c) for c in CASES)
        seconds = simumax_seconds(bandwidth[f"permute_{direction}"], total, LAUNCH_S * len(CASES))
        simsp = sum(simsp_bytes(c, direction == "bwd") for c in CASES)
        out[direction] = round(simsp / seconds / 1e9, 1)
    return out


def main() -> None:
    path = Path(sys.argv[1]) if len(sys.argv) > 1 else SIMUMAX_SYSTEM
    for direction, gbps in permute_gbps(path).items():
        print(f"  permute_{direction}_gbps: {gbps:g}")


if __name__ == "__main__":
    main()
