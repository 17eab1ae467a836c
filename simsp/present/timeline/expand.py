"""Op-level expansion of chunk spans: a forward or backward chunk span laid out as its layers'
ops (the plan's LayerTime entries), TP collectives on their own row, the embedding / output layer
as the remainder of the first / last chunk. Pure data over trace records; the timeline page and
the Perfetto writer both use it."""

from simsp.sim.trace import Span


def _virtual_stage(plan, span: Span) -> int:
    return span.chunk * plan.p + span.stage


def _lay_out(entries, t0: float, span: Span, layer: int) -> tuple[list[Span], float]:
    """One pass of one layer from t0: entries back to back on the critical path; a (partly)
    hidden TP collective starts with the GEMM before it, as `layer_time` overlaps them."""
    out, cursor, prev_start = [], t0, t0
    for e in entries:
        start = prev_start if e.stream == "comm" and e.busy_s > e.seconds else cursor
        if e.busy_s > 0:
            stream, kind = (
                (e.kind, e.kind)
                if e.kind in ("cp_comm", "ep_comm")
                else ("tp_comm", "tp_comm")
                if e.stream == "comm"
                else ("compute", "host_wait" if e.kind == "host" else e.phase)
            )
            out.append(
                Span(
                    span.stage,
                    stream,
                    kind,
                    e.op,
                    start,
                    e.busy_s,
                    span.microbatch,
                    span.chunk,
                    layer,
                    1,
                )
            )
        cursor += e.seconds
        prev_start = start
    return out, cursor


def _extras(plan, span: Span, remainder_s: float, embedding_share: float) -> tuple[float, float]:
    """(embedding, output layer) seconds of a chunk's remainder beyond its layers."""
    if remainder_s <= 1e-12 * max(span.dur_s, 1e-30):
        return 0.0, 0.0
    vs, last = _virtual_stage(plan, span), plan.p * plan.v - 1
    if vs == 0 and vs == last:
        return remainder_s * embedding_share, remainder_s * (1 - embedding_share)
    return (remainder_s, 0.0) if vs == 0 else (0.0, remainder_s)


def _extra_piece(span: Span, name: str, start: float, dur: float) -> list[Span]:
    if dur <= 0:
        return []
    return [
        Span(
            span.stage, "compute", "embedding", name, start, dur, span.microbatch, span.chunk, -1, 0
        )
    ]


def expand_span(plan, span: Span, embedding_share: float = 0.5) -> list[Span]:
    """A forward or backward chunk span as op spans: forward entries per layer in order; for a
    backward, per layer in reverse, its recompute entries then its backward entries. The part
    of the span the layers do not explain is the embedding (first chunk) or the output layer
    and loss (last chunk); `embedding_share` splits it where one chunk is both."""
    forward = span.kind == "forward"
    phases = ("forward",) if forward else ("recompute", "backward")
    paired = _overlapped(plan, span, forward)

    kept: dict = {}  # each distinct layer's entries of this pass, listed once

    def entries(layer: int) -> list:
        lt = plan.layer_at(layer)
        if id(lt) not in kept:
            listed = lt.paired if paired and lt.paired else lt.entries
            kept[id(lt)] = [e for e in listed if e.phase in phases]
        return kept[id(lt)]

    layers = range(span.first_layer, span.first_layer + span.layers)
    if plan.layers:  # layers that differ: each its own entries
        explained = sum(e.seconds for layer in layers for e in entries(layer))
    else:
        explained = span.layers * sum(e.seconds for e in entries(span.first_layer))
    emb, out = _extras(plan, span, span.dur_s - explained, embedding_share)
    first, last = (
        (("embedding", emb), ("output layer + loss", out))
        if forward
        else (("output layer + loss grad", out), ("embedding grad", emb))
    )
    pieces = _extra_piece(span, first[0], span.start_s, first[1])
    t = span.start_s + first[1]
    for layer in layers if forward else reversed(layers):
        laid, t = _lay_out(entries(layer), t, span, layer)
        pieces += laid
    return pieces + _extra_piece(span, last[0], t, last[1])


def _overlapped(plan, span: Span, forward: bool) -> bool:
    """Whether a pass ran as one half of an overlapped pair (EP overlap's steady state): it took
    its chunk's paired time rather than its time alone, and its ops are the layers' paired
    entries (LayerTime.paired)."""
    if not plan.paired:
        return False
    chunk = plan.chunks[_virtual_stage(plan, span)]
    alone = chunk.forward_s if forward else chunk.backward_s
    return abs(span.dur_s - alone) > 1e-9 * max(alone, 1e-30)


def expandable(plan, span: Span) -> bool:
    return (
        plan.layer is not None
        and span.stream == "compute"
        and span.kind in ("forward", "backward")
        and span.layers > 0
    )


def expanded_count(plan, spans) -> int:
    """How many spans `expand` would return, without building them (at most: each chunk span is
    counted with both an embedding and an output piece)."""
    if plan.layer is None:
        return len(spans)
    per_pass = {  # the more of a layer's entries alone and paired
        k: max(
            sum(1 for e in listed if e.phase in ph and e.busy_s > 0)
            for listed in (plan.layer.entries, plan.layer.paired)
        )
        for k, ph in (("forward", ("forward",)), ("backward", ("recompute", "backward")))
    }
    return sum(per_pass[s.kind] * s.layers + 2 if expandable(plan, s) else 1 for s in spans)


def embedding_share(result) -> float:
    """The embedding's share of the extra time of a chunk holding both embedding and output
    layer."""
    w = result.workload
    if result.plan.p * result.plan.v != 1:
        return 0.5
    from simsp.cost import cost_model
    from simsp.cost import stage_time as st
    from simsp.spec.layout import layout

    cost, place = cost_model(result.hardware), layout(w.parallel, result.hardware.node.gpus)
    (ef, _), (of, _) = st.embedding_s(w, cost, place), st.output_s(w, cost, place)
    return ef / (ef + of) if ef + of > 0 else 0.5


def expand(plan, spans, embedding_share: float = 0.5) -> list[Span]:
    """Every forward/backward chunk span replaced by its op spans; other spans kept."""
    out: list[Span] = []
    for s in spans:
        out += expand_span(plan, s, embedding_share) if expandable(plan, s) else [s]
    return out
