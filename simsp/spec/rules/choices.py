"""Named settings: each must be one simsp knows (the model's kinds, the precision, the stack
and its kernels, the schedule), and the bound on the layer count. Their lists live with the specs
(spec/model.py, spec/precision.py, spec/stack.py, spec/workload.py, spec/schedules.py)."""

import re
from functools import lru_cache

from simsp.spec.model import (
    ATTENTION_KINDS,
    BIAS_KINDS,
    MLP_KINDS,
    NORM_KINDS,
    NORM_PLACEMENTS,
    POSITION_KINDS,
    QK_NORM_KINDS,
    ModelSpec,
)
from simsp.spec.parallel import SCHEDULES
from simsp.spec.precision import FP8_RECIPES, PRECISIONS
from simsp.spec.stack import ELEMENTWISE, FSDP_IMPLS, STACK_NAMES
from simsp.spec.workload import CROSS_ENTROPIES, Workload

KERNEL_NAME = re.compile(r"[a-z][a-z0-9_.-]*")
"""What a kernel column of a FlashAttention table holds (fa2, fa3, cudnn, trace)."""


MAX_LAYERS = 10_000
"""Most layers a model may have: a run sums over its layer kinds, so a million layers takes
tens of seconds and a billion hangs (issue 32's bound on every input)."""


def bound_rules(w: Workload):
    """(key, value, holds, rule) for the sizes that bound how long a run takes."""
    m = w.model
    yield (
        "model.layers",
        m.layers,
        m.layers <= MAX_LAYERS,
        f"must be at most {MAX_LAYERS:,} (the deepest published model has under 200)",
    )


def rules(w: Workload):
    """(key, value, holds, rule) for the schedule, the model's kinds and the training's named
    settings."""
    m, t, p = w.model, w.training, w.parallel
    yield (
        "parallel.schedule",
        p.schedule,
        p.schedule in SCHEDULES,
        f"must be one of {', '.join(SCHEDULES)}",
    )
    yield from _model_choices(m)
    yield (
        "training.precision",
        t.precision,
        t.precision in PRECISIONS,
        f"must be one of {', '.join(PRECISIONS)}",
    )
    yield (
        "training.stack",
        t.stack,
        t.stack in STACK_NAMES,
        f"must be one of {', '.join(STACK_NAMES)}",
    )
    for key, names in (
        ("fp8_recipe", FP8_RECIPES),
        ("elementwise", ELEMENTWISE),
        ("fsdp_impl", FSDP_IMPLS),
    ):
        value = getattr(t, key)
        yield (
            f"training.{key}",
            value,
            not value or value in names,
            f"must be one of {', '.join(names)}, or empty for the stack's",
        )
    yield (
        "training.fp8_param_gather",
        t.fp8_param_gather,
        not t.fp8_param_gather or t.precision == "fp8",
        "needs training.precision fp8 (Megatron-LM: --fp8-param-gather requires --fp8-format)",
    )
    yield (
        "training.cross_entropy",
        t.cross_entropy,
        not t.cross_entropy or t.cross_entropy in CROSS_ENTROPIES,
        f"must be one of {', '.join(CROSS_ENTROPIES)}, or empty for the stack's",
    )
    yield (
        "training.attention_kernel",
        t.attention_kernel,
        not t.attention_kernel or bool(KERNEL_NAME.fullmatch(t.attention_kernel)),
        "must be a kernel name of the hardware's flash_attention table (fa2, fa3, cudnn, ...)",
    )
    yield (
        "training.attention_kernel",
        t.attention_kernel,
        not t.attention_kernel or m.attention == "flash",
        f"names a fused-attention kernel, which model.attention {m.attention} does not run",
    )
    yield (
        "model.heads",
        m.heads,
        m.head_dim or m.hidden % m.heads == 0,
        f"must divide hidden ({m.hidden}) unless head_dim is set",
    )


@lru_cache(maxsize=256)
def _model_choices(m: ModelSpec) -> tuple:
    """(key, value, holds, rule) for the model's named choices (cached: a sweep checks one model
    many times)."""
    return tuple(_model_choice_rules(m))


def _model_choice_rules(m: ModelSpec):
    for key, kinds in (
        ("mlp", MLP_KINDS),
        ("norm", NORM_KINDS),
        ("position", POSITION_KINDS),
        ("attention", ATTENTION_KINDS),
        ("bias", BIAS_KINDS),
        ("qk_norm", QK_NORM_KINDS),
        ("norm_placement", NORM_PLACEMENTS),
    ):
        value = getattr(m, key)
        names = ", ".join(str(k).lower() for k in kinds)
        yield (
            f"model.{key}",
            value,
            any(value is k or (isinstance(k, str) and value == k) for k in kinds),
            f"must be one of {names}",
        )
