"""Record a Kineto trace of one training step of a small GPT, the way a user's run would have
one: `torch.profiler` with `record_shapes=True` around a `ProfilerStep`.

The model is built from a workload's model section (layers, hidden, heads, seq_len, vocab,
GeLU MLP, layer-norm, learned positions, biases, no dropout, unfused causal attention, tied
embeddings) as Megatron-LM's GPT runs it per rank with tp = 1: layer-norm, one fused QKV linear,
QKᵀ as a batched GEMM, masked softmax, attention over V, projection, residual, layer-norm, h->4h,
GeLU, 4h->h, residual; final norm, logits against the word embeddings, cross-entropy; backward;
no optimizer step. On a GPU (device cuda) the trace holds its kernels; on the CPU its aten ops.
"""

from pathlib import Path

from simsp.errors import InputError
from simsp.measure.profiler._torch import require_torch, resolve_device


def _model(torch, m, micro_batch: int, device: str):
    """(module, token ids) for model spec m."""
    F = torch.nn.functional
    h, a, s, b, v = m.hidden, m.heads, m.seq_len, micro_batch, m.vocab
    d, f = h // a, m.ffn

    class Layer(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.ln1, self.ln2 = torch.nn.LayerNorm(h), torch.nn.LayerNorm(h)
            self.qkv, self.proj = torch.nn.Linear(h, 3 * h), torch.nn.Linear(h, h)
            self.fc1, self.fc2 = torch.nn.Linear(h, f), torch.nn.Linear(f, h)

        def forward(self, x):  # x: [s*b, h]
            q, k, vv = self.qkv(self.ln1(x)).view(s, b * a, 3 * d).split(d, dim=-1)
            q, k, vv = (t.transpose(0, 1) for t in (q, k, vv))  # [b*a, s, d]
            scores = torch.bmm(q, k.transpose(1, 2)) * d**-0.5
            mask = torch.triu(torch.ones(s, s, dtype=torch.bool, device=x.device), 1)
            probs = torch.softmax(scores.masked_fill(mask, -1e4), -1)
            ctx = torch.bmm(probs, vv).transpose(0, 1).reshape(s * b, h)
            x = x + self.proj(ctx)
            return x + self.fc2(F.gelu(self.fc1(self.ln2(x)), approximate="tanh"))

    class Gpt(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.wte, self.wpe = torch.nn.Embedding(v, h), torch.nn.Embedding(s, h)
            self.layers = torch.nn.ModuleList(Layer() for _ in range(m.layers))
            self.ln_f = torch.nn.LayerNorm(h)

        def forward(self, ids):  # ids: [s, b]
            pos = torch.arange(s, device=ids.device)
            x = (self.wte(ids) + self.wpe(pos)[:, None, :]).reshape(s * b, h)
            for layer in self.layers:
                x = layer(x)
            logits = F.linear(self.ln_f(x), self.wte.weight)
            return F.cross_entropy(logits.float(), ids.reshape(-1))

    torch.manual_seed(0)
    return Gpt().to(device), torch.randint(0, v, (s, b), device=device)


def _check(w) -> None:
    """The recorder builds one model family; say which key it cannot follow."""
    m, p = w.model, w.parallel
    rules = [
        ("model.mlp", m.mlp, m.mlp == "gelu", "the recorded GPT has a GeLU MLP"),
        ("model.norm", m.norm, m.norm == "layernorm", "the recorded GPT uses layer-norm"),
        ("model.attention", m.attention, m.attention == "unfused", "needs attention: unfused"),
        ("model.dropout", m.dropout, m.dropout == 0, "the recorded GPT has no dropout"),
        ("model.kv_heads", m.groups, m.groups == m.heads, "the recorded GPT has no GQA"),
        ("parallel.tp", p.tp, p.gpus == 1, "the recorder runs one process (tp=pp=dp=1)"),
    ]
    for key, value, holds, rule in rules:
        if not holds:
            raise InputError(w.name, key, value, rule)


def record(w, out, device: str = "cpu", warmup: int = 2) -> Path:
    """Run `warmup` steps, then trace one step of workload w's model into `out` (.json or
    .json.gz); return the path. Single-threaded on the CPU, as one training rank's host is."""
    torch = require_torch()
    _check(w)
    device = resolve_device(torch, device)
    if device == "cpu":
        torch.set_num_threads(1)
    model, ids = _model(torch, w.model, w.training.micro_batch, device)
    for _ in range(warmup):
        model(ids).backward()
    acts = [torch.profiler.ProfilerActivity.CPU]
    if device.startswith("cuda"):
        acts.append(torch.profiler.ProfilerActivity.CUDA)
    with torch.profiler.profile(activities=acts, record_shapes=True) as prof:
        with torch.profiler.record_function("ProfilerStep#0"):
            model.zero_grad(set_to_none=True)
            model(ids).backward()
            if device.startswith("cuda"):
                torch.cuda.synchronize()
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    prof.export_chrome_trace(str(out))
    return out
