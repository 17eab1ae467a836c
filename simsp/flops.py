"""FLOPs per iteration: the paper's Appendix A, for MFU and HFU."""

from simsp.model import ModelSpec


def model_flops(model: ModelSpec, global_batch: int) -> float:
    """Eq. 7: 72 B L s h² (1 + s/6h + v/12hL), B the sequences per iteration (paper App. A)."""
    B, L, s, h, v = global_batch, model.layers, model.seq_len, model.hidden, model.vocab
    return 72 * B * L * s * h * h * (1 + s / (6 * h) + v / (12 * h * L))


def hardware_flops(model: ModelSpec, global_batch: int, recompute: str) -> float:
    """FLOPs the GPUs execute, recompute included.

    selective: Eq. 8 as printed, 72 B L s h² (1 + s/3h + v/12hL) (reproduces Table 5's HFU);
    full: one extra forward of every layer, 96 B L s h² (1 + s/6h + v/16hL) (reference/paper.md §6);
    none: the model FLOPs.
    """
    B, L, s, h, v = global_batch, model.layers, model.seq_len, model.hidden, model.vocab
    if recompute == "selective":
        return 72 * B * L * s * h * h * (1 + s / (3 * h) + v / (12 * h * L))
    if recompute == "full":
        return 96 * B * L * s * h * h * (1 + s / (6 * h) + v / (16 * h * L))
    return model_flops(model, global_batch)


def utilization(flops: float, seconds: float, gpus: int, peak_tflops: float) -> float:
    """FLOPs over time x GPUs x peak, as a fraction."""
    return flops / (seconds * gpus * peak_tflops * 1e12)
