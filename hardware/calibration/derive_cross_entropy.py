"""Derive dgx-b200.yaml's measured cross-entropy rates (memory_bound.unfused_cross_entropy_gbps,
te_cross_entropy_gbps) from SimuMax's B200 system file.

Source: MooreThreads/SimuMax configs/system/b200_bf16_ceperm.json @4dcaae51 (the copy in
dgx-b200/sources/), accelerator.bandwidth.ce and .ce_fusion. SimuMax's
simu_tools/efficency_test/test_ce_permute_efficiency.py times, with CUDA events on its B200,
Megatron's vocab_parallel_cross_entropy ("ce", with --measure-nonfusion-ce) and Transformer
Engine's parallel_cross_entropy ("ce_fusion") forward and backward over seven cases at b 1, s 4096
(CE_CASES: Llama-3's vocabulary shards at tp 1-8, Llama-3-8B's padded vocabulary, two DeepSeek
vocabularies), and stores the cases' total bytes (`ce_theoretical_bytes`) over their total time
as a fraction of its 8000 GiB/s, after setting 30 us apart for each of a case's two launches
(`weighted_efficiency`, launches=2). Bytes and the set-apart time being known, the total time is
recovered exactly; the rate here is the bytes simsp/model/blocks/loss.py counts for the same seven
cases over that time, the launches included.

    python hardware/calibration/derive_cross_entropy.py   # prints the two YAML lines
"""

import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
from simsp.model.blocks.loss import CROSS_ENTROPY  # noqa: E402

SIMUMAX_SYSTEM = (
    REPO / "hardware" / "calibration" / "dgx-b200" / "sources" / "simumax_b200_bf16_ceperm.json"
)
GIB = 2**30
"""SimuMax's gbps are GiB/s (efficiency_from_bytes_time: gbps * 1024**3)."""
CE_CASES = (102400, 129280, 128256, 64128, 32128, 16128, 128512)
"""The vocabulary (shard) of each case, batch 1 and s 4096 (test_ce_permute_efficiency.py
`ce_cases`: ds236_tp1, ds671_tp1, llama_tp1, _tp2, _tp4, _tp8, llama8b_tp1_padded)."""
TOKENS = 4096
LAUNCH_S = 2 * 30e-6
"""What SimuMax set apart a case: two launches of its bandwidth entry's latency_us (30)."""
SIMUMAX_KEY = {"unfused": "ce", "te": "ce_fusion"}


def simumax_bytes(key: str, vocab: int) -> int:
    """test_ce_permute_efficiency.py ce_theoretical_bytes, forward + backward, b 1, bf16."""
    logits, tokens = TOKENS * vocab, TOKENS
    if key == "ce_fusion":
        return 2 * (2 * logits * 2 + tokens * 4)
    fwd = logits * 4 + logits * 2 + (logits + tokens) * 4 + (2 * logits + tokens) * 4
    fwd += 2 * logits * 4 + (logits + 1) * 4 + (2 * logits + 1) * 4
    bwd = (2 * logits + 1) * 4 + logits * 4 + logits * 2
    return fwd + bwd


def simumax_seconds(entry: dict, total_bytes: int, launches_s: float) -> float:
    """The time SimuMax measured, recovered from one of its bandwidth entries: the bytes it
    counted over its fraction of its GiB/s, plus the launch time it had set apart."""
    return total_bytes / (entry["gbps"] * GIB * entry["efficient_factor"]) + launches_s


def cross_entropy_gbps(path: Path = SIMUMAX_SYSTEM) -> dict[str, float]:
    """{implementation: GB/s of loss.py's bytes, launches included} on SimuMax's B200."""
    bandwidth = json.loads(path.read_text())["accelerator"]["bandwidth"]
    out = {}
    for name, key in SIMUMAX_KEY.items():
        total = sum(simumax_bytes(key, v) for v in CE_CASES)
        seconds = simumax_seconds(bandwidth[key], total, LAUNCH_S * len(CE_CASES))
        ce = CROSS_ENTROPY[name]
        simsp = sum(TOKENS * v for v in CE_CASES) * (ce.forward_bytes + ce.backward_bytes)
        out[name] = round(simsp / seconds / 1e9, 1)
    return out


def main() -> None:
    path = Path(sys.argv[1]) if len(sys.argv) > 1 else SIMUMAX_SYSTEM
    for name, gbps in cross_entropy_gbps(path).items():
        print(f"  {name}_cross_entropy_gbps: {gbps:g}")


if __name__ == "__main__":
    main()
