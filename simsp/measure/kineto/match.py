"""Which of a workload's ops each kernel of a real iteration ran.

GEMMs by shape: the launching op's recorded input dims (aten::mm [m,k]x[k,n], addmm with its
bias first, bmm / baddbmm batched) give C[m,n] = A[m,k] B[k,n]; the workload's GEMMs in every
layout (`profiler.shapes.workload_shapes`: each linear's forward TN, dgrad NN and wgrad NT, the
attention GEMMs and their gradients, the logits) are looked up by (m, n, k, batch), forward ones
for a forward kernel and gradient ones for a backward kernel. Where a framework splits one of
simsp's GEMMs (Hugging Face's separate query, key and value projections for simsp's fused QKV),
2 to 4 consecutive GEMMs equal in two dimensions whose third sums to a workload GEMM's count
as that GEMM. Other kernels by name (their own or their op's): fused attention, norms, softmax,
activations, dropout, rotary, residual adds, embedding, loss, optimizer, NCCL collectives
(their op and size from `record_param_comms`). A kernel is matched when the workload has an op
of its kind; the rest are listed by name and time.

Layers: the i-th call of an op in forward order belongs to layer i, in backward to layer L-1-i;
calls past the workload's layers (a final norm, a model's extra head) are outside the layers.
"""

from dataclasses import dataclass, field

from simsp.measure.kineto.reader import Kernel, Profile
from simsp.measure.profiler.shapes import attention_shapes, linear_shapes, logits_gemm
from simsp.model.layer import Gemm, build_layer
from simsp.spec.workload import Workload

GEMM_OPS = ("aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm")
GEMM_NAMES = ("gemm", "cutlass", "cublas", "xmma", "nvjet", "sgemm", "hgemm", "Cijk")
NAME_KINDS = (
    ("comm", ("nccl", "rccl", "multimem_all_reduce", "c10d::")),
    ("flash_attention", ("flash", "fmha", "scaled_dot_product", "efficient_attention")),
    ("loss", ("log_softmax", "nll_loss", "cross_entropy")),
    ("layernorm", ("layer_norm", "layernorm")),
    ("rmsnorm", ("rms_norm", "rmsnorm")),
    ("softmax", ("softmax", "masked_fill")),
    ("gelu", ("gelu",)),
    ("swiglu", ("silu", "swiglu")),
    ("squared_relu", ("relu",)),
    ("dropout", ("dropout", "bernoulli")),
    ("rope", ("rotary", "rope")),
    ("embedding", ("index_select", "indexselect", "embedding")),
    ("optimizer", ("adam", "multi_tensor_apply", "_foreach")),
    ("residual_add", ("aten::add", "functor_add")),
    ("copy", ("aten::copy_", "direct_copy", "aten::to ", "_to_copy", "catarraybatchedcopy")),
)
"""(simsp kind, name fragments), tried in order on the kernel's and its op's lower-cased names."""
OUTSIDE = ("embedding", "loss", "optimizer", "comm")
"""Kinds simsp costs outside the layer's op list (embedding, output layer and loss, optimizer,
collectives): matched whenever found."""
COLLECTIVE_NAMES = (
    ("all_reduce", ("allreduce", "all_reduce")),
    ("all_gather", ("allgather", "all_gather")),
    ("reduce_scatter", ("reducescatter", "reduce_scatter")),
    ("all_to_all", ("alltoall", "all_to_all")),
    ("send_recv", ("sendrecv", "send", "recv")),
)


@dataclass(frozen=True)
class Match:
    """One kernel and the workload op it ran ('' kind: unmatched)."""

    kernel: Kernel
    kind: str
    op: str = ""
    """The simsp op name (qkv, logits, softmax, ...) or the collective ('all_reduce')."""
    phase: str = "forward"
    layout: str = ""
    gemm: Gemm | None = None
    """The workload GEMM it ran (for a split GEMM, the whole one, on its group's first kernel)."""
    share: float = 1.0
    """Its part of that GEMM's FLOPs (1 unless split)."""
    layer: int = -1
    why: str = ""
    """For an unmatched kernel: what it looked like."""


@dataclass(frozen=True)
class Matching:
    """Every kernel of a profile, matched or not."""

    profile: Profile
    workload: Workload
    matches: tuple[Match, ...]
    calls: dict = field(default_factory=dict, compare=False)

    @property
    def total_s(self) -> float:
        return sum(m.kernel.dur_s for m in self.matches)

    @property
    def matched_s(self) -> float:
        return sum(m.kernel.dur_s for m in self.matches if m.kind)

    @property
    def matched_fraction(self) -> float:
        return self.matched_s / self.total_s if self.total_s else 0.0

    def unmatched(self) -> list[tuple[str, float, int]]:
        """(name, seconds, kernels) of the unmatched, by name, longest first."""
        by: dict[str, list] = {}
        for m in self.matches:
            if not m.kind:
                entry = by.setdefault(m.why or m.kernel.name, [0.0, 0])
                entry[0] += m.kernel.dur_s
                entry[1] += 1
        return sorted(((n, t, c) for n, (t, c) in by.items()), key=lambda x: (-x[1], x[0]))


def gemm_of(k: Kernel) -> Gemm | None:
    """C[m,n] = A[m,k] B[k,n] of a GEMM op from its input dims."""
    d = [x for x in k.dims if x]
    try:
        if k.op == "aten::mm" and len(d) >= 2:
            (m, kk), (_, n) = d[0], d[1]
            return Gemm(m, n, kk)
        if k.op == "aten::addmm" and len(d) >= 3:
            (m, kk), (_, n) = d[1], d[2]
            return Gemm(m, n, kk)
        if k.op == "aten::bmm" and len(d) >= 2:
            (b, m, kk), (_, _, n) = d[0], d[1]
            return Gemm(m, n, kk, b)
        if k.op == "aten::baddbmm" and len(d) >= 3:
            (b, m, kk), (_, _, n) = d[1], d[2]
            return Gemm(m, n, kk, b)
    except (ValueError, TypeError):
        return None
    return None


def is_gemm(k: Kernel) -> bool:
    """A GEMM op's kernel, or a kernel named as a GEMM library's whose op is not a known other
    kind (FlashAttention kernels carry cutlass in their template names)."""
    if k.op in GEMM_OPS:
        return True
    return not name_kind(k) and any(s.lower() in k.name.lower() for s in GEMM_NAMES)


def _first_named(text: str, table) -> str:
    """The first label of (label, name parts) whose parts appear in text, or ''."""
    text = text.lower()
    return next((label for label, parts in table if any(p in text for p in parts)), "")


def name_kind(k: Kernel) -> str:
    """The simsp kind a non-GEMM kernel's names say, or ''."""
    return _first_named(f"{k.name} {k.op}", NAME_KINDS)


def collective_op(k: Kernel) -> str:
    """The collective an NCCL kernel's names say, or ''."""
    return _first_named(f"{k.name} {k.comm.name if k.comm else ''}", COLLECTIVE_NAMES)


def _expected(w: Workload) -> dict:
    """(m, n, k, batch) -> [(op name, layout, backward)] of every workload GEMM (one shape can
    be several ops' and passes': attention over V's forward is QKᵀ's first gradient)."""
    shapes = []
    for op in build_layer(w.model, w.parallel, w.training.micro_batch):
        if op.kind == "gemm":
            shapes += [(op.name, s) for s in linear_shapes(op.name, op.gemm)]
        elif op.kind == "attention_gemm":
            shapes += [(op.name, s) for s in attention_shapes(op.name, op.gemm)]
    shapes += [("logits", s) for s in linear_shapes("logits", logits_gemm(w))]
    out: dict = {}
    for name, sh in shapes:
        backward = sh.name != name
        g = sh.gemm
        out.setdefault((g.m, g.n, g.k, g.batch), []).append((name, sh.layout, backward))
    return out


def _pick(cands: list, backward: bool):
    """The candidate of the kernel's pass (forward shapes for forward kernels), else any."""
    same = [c for c in cands if c[2] == backward]
    return (same or cands)[0]


def _split_group(gemms: list[tuple[int, Gemm]], i: int, expected: dict):
    """(length, whole GEMM) when gemms[i:i+n] (n = 3, 2, 4) sum to a workload GEMM along one
    dimension with the other two equal; None otherwise."""
    for n in (3, 2, 4):  # a fused QKV split in three is the common case
        run = [g for _, g in gemms[i : i + n]]
        if len(run) < n or len({g.batch for g in run}) != 1:
            continue
        for axis in ("m", "n", "k"):
            others = [a for a in ("m", "n", "k") if a != axis]
            if all(len({getattr(g, a) for g in run}) == 1 for a in others):
                whole = {a: getattr(run[0], a) for a in others}
                whole[axis] = sum(getattr(g, axis) for g in run)
                g = Gemm(whole["m"], whole["n"], whole["k"], run[0].batch)
                if (g.m, g.n, g.k, g.batch) in expected:
                    return n, g
    return None


def _layer_kinds(w: Workload) -> dict[str, list[str]]:
    """kind -> the layer's op names of that kind, in order."""
    ops: dict[str, list[str]] = {}
    for op in build_layer(w.model, w.parallel, w.training.micro_batch):
        ops.setdefault(op.kind, []).append(op.name)
    return ops


def match_profile(profile: Profile, w: Workload) -> Matching:
    """Match every kernel of the profile to the workload's ops."""
    expected, kinds = _expected(w), _layer_kinds(w)
    out: dict[int, Match] = {}
    _match_gemms(profile.kernels, expected, out)
    _match_named(profile.kernels, w, kinds, out)
    matches = tuple(out[i] for i in range(len(profile.kernels)))
    return Matching(profile, w, _with_layers(matches, w, kinds))


def _match_gemms(kernels, expected: dict, out: dict) -> None:
    gemms = [(i, gemm_of(k)) for i, k in enumerate(kernels) if is_gemm(k)]
    shaped = [(i, g) for i, g in gemms if g is not None]
    for i, g in gemms:
        if g is None:
            out[i] = Match(kernels[i], "", why=f"GEMM without recorded shapes: {kernels[i].name}")
    j = 0
    while j < len(shaped):
        i, g = shaped[j]
        k = kernels[i]
        group = _split_group(shaped, j, expected)
        if group is not None:
            n, whole = group
            op, layout, _ = _pick(expected[(whole.m, whole.n, whole.k, whole.batch)], k.backward)
            for idx, part in shaped[j : j + n]:
                out[idx] = Match(
                    kernels[idx],
                    _gemm_kind(op),
                    op,
                    "backward" if k.backward else "forward",
                    layout,
                    whole if idx == i else None,
                    part.flops / whole.flops,
                )
            j += n
            continue
        key = (g.m, g.n, g.k, g.batch)
        if key in expected:
            op, layout, _ = _pick(expected[key], k.backward)
            phase = "backward" if k.backward else "forward"
            out[i] = Match(k, _gemm_kind(op), op, phase, layout, g)
        else:
            out[i] = Match(k, "", why=f"{k.op or 'GEMM'} m={g.m} n={g.n} k={g.k} batch={g.batch}")
        j += 1


def _gemm_kind(op: str) -> str:
    return "attention_gemm" if op in ("qk^T", "attention over V") else "gemm"


def _match_named(kernels, w: Workload, kinds: dict, out: dict) -> None:
    for i, k in enumerate(kernels):
        if i in out:
            continue
        kind = name_kind(k)
        phase = "backward" if k.backward else "forward"
        if kind == "residual_add" and k.backward:
            kind = "residual_grad"
        if kind == "residual_add" and "residual_add" not in kinds:
            kind = "bias_dropout_add" if "bias_dropout_add" in kinds else kind
        if kind == "comm":
            op = collective_op(k)
            out[i] = Match(k, "comm" if op else "", op, phase, why=k.name if not op else "")
        elif kind in OUTSIDE or kind in kinds:
            out[i] = Match(k, kind, (kinds.get(kind) or [kind])[0], phase)
        else:
            out[i] = Match(k, "", why=k.name if not kind else f"{kind} (not in {w.name}): {k.op}")


def _with_layers(matches: tuple[Match, ...], w: Workload, kinds: dict) -> tuple[Match, ...]:
    """Each matched layer op's call numbered among its kind's calls in its pass: a layer runs
    n ops of a kind forward (a GEMM kind: 2n backward, the data and the weight gradient), so call
    c is in layer c // n forward and L - 1 - c // n backward. A split GEMM's parts share the
    layer of its first part."""
    layers, seen, calls = w.model.layers, {}, {}
    out, head_layer = [], -1
    for m in matches:
        if not m.kind or m.kind in OUTSIDE or m.op == "logits":
            out.append(m)
            continue
        gemm = m.kind in ("gemm", "attention_gemm")
        if gemm and m.share < 1 and m.gemm is None:
            out.append(Match(**{**m.__dict__, "layer": head_layer}))
            continue
        key = (m.kind, m.phase)
        call = m.kernel.call if m.kernel.call >= 0 else id(m)
        if (key, call) not in calls:
            calls[(key, call)] = seen.get(key, 0)
            seen[key] = seen.get(key, 0) + 1
        n = calls[(key, call)]
        per = max(1, len(kinds.get(m.kind, [1]))) * (2 if gemm and m.phase == "backward" else 1)
        i = n // per
        layer = (i if m.phase == "forward" else layers - 1 - i) if i < layers else -1
        op = m.op if gemm else kinds[m.kind][n % per]
        head_layer = layer
        out.append(Match(**{**m.__dict__, "layer": layer, "op": op}))
    return tuple(out)
