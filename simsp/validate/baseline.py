"""The naive estimate a user computes by hand, printed beside simsp on the measured sets that
are not the paper's: what the simulation adds is the distance between the two."""

from simsp.spec.workload import Workload


def naive_baseline_s(w: Workload, peak_tflops: float) -> float:
    """llm-analysis's 'literature' estimate: model FLOPs / (0.5 x peak x GPUs), with simsp's
    model FLOPs (flops.model_flops, the run --json `model_flops`) and the 16-bit peak."""
    from simsp.model.flops import model_flops

    flops = model_flops(w.model, w.training.global_batch, w.parallel.tp)
    return flops / (0.5 * peak_tflops * 1e12 * w.parallel.gpus)
