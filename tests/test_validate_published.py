"""The published modern runs (simsp.validate.published): derivation, provenance, cases, skipped
rows with reasons, the naive baseline and `simsp validate --json`'s published sets.

The accuracy bars are the lead's to judge: the figures are printed (pytest -s), not asserted.
"""

import argparse
import json

import pytest

from simsp import validate as V
from simsp.cli.validate import register
from simsp.validate import published as P
from simsp.validate import published_runs as R
from simsp.validate.moe_runs import read_moe_runs

SOURCES = V.DATA_DIR / "sources"
"""The upstream files, verbatim (sources/README.md), laid out as the shared data folder."""
ROWS = R.read_published()
BY_ID = {r["id"]: r for r in ROWS}


def test_shipped_csv_is_what_derive_published_writes(tmp_path):
    path = R.derive_published(SOURCES, tmp_path)
    assert path.read_bytes() == (V.DATA_DIR / R.RUNS_FILE).read_bytes()


def test_every_row_has_its_provenance():
    text = (V.DATA_DIR / R.RUNS_FILE).read_text()
    assert "runs.yaml" in text.splitlines()[0] + text.splitlines()[1]
    assert len(ROWS) == 64 and len(BY_ID) == 64
    for r in ROWS:
        assert "@" in r["source"] or "docs.nvidia.com" in r["source"], r["id"]
        assert r["inferred_fields"], r["id"]


def _all():
    cases, skipped = [], []
    for name in (*P.PUBLISHED_SETS, P.MOE_SET):
        c, s = P.published_cases(name)
        cases += c
        skipped += s
    return cases, skipped


def test_every_run_is_a_case_or_skipped_with_its_reason():
    cases, skipped = _all()
    dense_and_moe = sorted([c.name for c in cases] + [s.name for s in skipped])
    moe_runs = {r["id"] for r in read_moe_runs()}
    assert len(moe_runs) == 57
    assert dense_and_moe == sorted(set(BY_ID) | moe_runs)
    moe = {r["id"] for r in ROWS if r["model.experts"]}
    assert len(moe) == 13
    for s in skipped:
        assert s.reason, s.name
        if s.name in moe | moe_runs:
            assert s.set == "moe", s.name
    # three MoE runs are skipped, each with its reason: a layout no branch holds (two), and a
    # table row whose EP 64 exceeds the 32 ranks of its PP 8 stages
    moe_skips = {s.name: s.reason for s in skipped if s.set == "moe"}
    assert set(moe_skips) == {
        "mb2511-gb200-deepseekv3-nomtp-mxfp8",
        "mb2604-gb300-kimi-k2",
        "mb2509-gb200-deepseekv3-tokendrop-mxfp8",
    }
    assert "pipeline layout" in moe_skips["mb2604-gb300-kimi-k2"]
    assert "parallel.ep=64" in moe_skips["mb2509-gb200-deepseekv3-tokendrop-mxfp8"]
    for c in cases:
        assert (c.set == "moe") == (c.name in moe | moe_runs), c.name
    assert "offloads" in next(s.reason for s in skipped if s.name == "mb2604-gb200-llama3-70b-fsdp")
    n = {name: sum(c.set == name for c in cases) for name in P.PUBLISHED_SETS}
    print(f"\ncases {n}, skipped {len(skipped)}")
    assert n["published-a100"] == 7  # all seven llm-foundry A100 rows are dense bf16


def test_each_case_names_the_defaults_it_took_and_where_from():
    for c in _all()[0]:
        assert c.notes.startswith("defaults of "), c.name
        assert "recompute" in c.notes and "iteration_s" in c.notes
        if c.workload.training.precision == "fp8":
            assert f"fp8 {c.workload.training.fp8_recipe} (" in c.notes


def test_model_and_parallel_come_from_the_row():
    cases = {c.name: c for c in _all()[0]}
    mpt = cases["foundry-a100-80-mpt-70b-64"].workload
    # llm-foundry's benchmark yamls keep configuration_mpt.py's defaults: learned positions,
    # biases (not the ALiBi / no-bias MPT release the run list names)
    assert (mpt.model.position, mpt.model.mlp, mpt.model.bias) == ("learned", "gelu", True)
    assert mpt.parallel.fsdp and not mpt.parallel.distributed_optimizer
    assert mpt.parallel.recompute == "full" and mpt.model.tied_embeddings
    assert cases["foundry-a100-80-mpt-7b-2k-8"].workload.parallel.recompute == "none"
    for c in cases.values():
        if c.set == P.MOE_SET:
            continue  # test_moe_set_takes_each_releases_recipe
        r = BY_ID[c.name]
        w = c.workload
        assert (w.parallel.tp, w.parallel.pp, w.parallel.dp) == tuple(
            int(r[f"parallel.{k}"]) for k in ("tp", "pp", "dp")
        )
        assert w.model.groups == int(r["model.kv_heads"]) and w.model.vocab == int(r["model.vocab"])
        assert w.parallel.sequence_parallel == (w.parallel.tp > 1)
        assert (w.parallel.schedule == "interleaved") == (w.parallel.virtual_stages > 1)
        arch = r["model.arch"].split()[0]
        assert w.model.mlp == {"llama": "swiglu", "nemotron": "squared_relu"}.get(arch, "gelu")
        assert w.model.position == {"gpt": "learned", "mpt": "learned"}.get(arch, "rope")


def test_precision_enters_through_one_helper():
    t = P.training_spec(128, 1, "fp8", "current")
    assert (t.precision, t.fp8_recipe) == ("fp8", "current")
    assert P.training_spec(128, 1, "bf16", "current").precision == "bf16"
    assert P.RECIPES["NeMo 24.07"].fp8_recipe == "delayed"
    assert P.RECIPES["Megatron-Bridge 25.11"].fp8_recipe == "current"
    c = P.published_case(BY_ID["mb2511-h100-llama3-70b"])
    if isinstance(c, V.Skipped):  # until the H100 file has FP8 rates
        assert "no FP8 rates" in c.reason
    else:
        assert (c.workload.training.precision, c.workload.training.fp8_recipe) == (
            "fp8",
            "current",
        )


def test_iteration_times_follow_from_throughput():
    for r in ROWS:
        t, how = P.measured_iteration_s(r)
        if r["measured.tokens_per_s_per_gpu"]:
            tokens = int(r["parallel.global_batch"]) * int(r["model.seq"])
            rate = float(r["measured.tokens_per_s_per_gpu"]) * int(r["gpus"])
            assert t == pytest.approx(tokens / rate, rel=0.02), r["id"]
        else:
            assert "TFLOP/s" in how and t > 0


def test_the_nemo_llama2_formula_reproduces_nvidias_published_tflops():
    # it derives the long-sequence rows' times; check it where tokens/s are published too
    for rid in ("nemo2407-h100-llama2-7b", "nemo2407-h100-llama2-13b", "nemo2407-h100-llama2-70b"):
        r = BY_ID[rid]
        per_token = P.nemo_llama2_flops(r) / (int(r["parallel.global_batch"]) * int(r["model.seq"]))
        tflops = per_token * float(r["measured.tokens_per_s_per_gpu"]) / 1e12
        assert tflops == pytest.approx(float(r["measured.tflops_per_gpu"]), rel=0.01), rid


def test_naive_baseline_is_model_flops_over_half_the_peak():
    from simsp.api import run
    from simsp.io.config import load_hardware

    c = next(c for c in _all()[0] if c.name == "foundry-a100-80-mpt-7b-2k-8")
    hw = load_hardware(c.hardware)
    flops = run(c.workload, hw).to_dict()["model_flops"]
    assert c.baseline_s == pytest.approx(flops / (0.5 * hw.gpu.peak_tflops * 1e12 * 8))


def test_validate_json_names_the_published_sets(capsys):
    top = argparse.ArgumentParser()
    register(top.add_subparsers())
    args = top.parse_args(["validate", "--json", "--workers", "1", "--set", *P.PUBLISHED_SETS])
    args.func(args)
    out = json.loads(capsys.readouterr().out)["sets"]
    assert list(out) == list(P.PUBLISHED_SETS)
    for name, m in out.items():
        assert {"n", "mape", "max_abs_error", "bias", "skipped"} <= set(m)
        assert m["n"] + m["skipped"] == sum(P._hardware_of(r)[0] == name for r in ROWS)
        if m["n"]:
            assert {"naive_mape", "naive_bias", "naive_max_abs_error"} <= set(m)
    with capsys.disabled():
        v = V.run_validation(P.PUBLISHED_SETS, workers=1)
        print("\n" + V.table(v, verbose=True))


def test_every_case_beyond_the_gap_bound_has_a_written_reason():
    """The issue's bar: no case worse than 30% without a written reason. The reasons are data
    (recipes.KNOWN_GAPS), so a new miss shows as NO WRITTEN REASON and fails here."""
    from simsp.validate.cases import GAP_REPORTED
    from simsp.validate.published import KNOWN_GAPS
    from simsp.validate.runner import run_validation

    v = run_validation(P.PUBLISHED_SETS, workers=1)
    beyond = [r for r in v.results if abs(r.error) > GAP_REPORTED]
    assert all(r.case.known_gap for r in beyond), [r.case.name for r in beyond]
    moe = {c.name for c in P.published_cases(P.MOE_SET)[0]}
    assert set(KNOWN_GAPS) <= {c.name for c in (r.case for r in v.results)} | moe


@pytest.mark.xfail(
    strict=True,
    reason="the MoE issue's bar is not met yet: the moe set reads MAPE 17.6%, bias -16.7% "
    "(naive 33.2%); fine-grained experts (Qwen3-30B-A3B, gpt-oss) run 12-63% slower than "
    "priced on every GPU, for reasons suspected, not measured (recipes.KNOWN_GAPS)",
)
def test_moe_set_meets_the_issues_bar():
    """MAPE <= 15%, |bias| <= 8%, no case past 35% without a written reason, at most half the
    naive baseline's MAPE (which counts active parameters)."""
    from simsp.validate.runner import run_validation

    v = run_validation((P.MOE_SET,), workers=1)
    errors = [r.error for r in v.results]
    naive = [r.case.baseline_s / r.case.measured_s - 1 for r in v.results]
    mape = sum(map(abs, errors)) / len(errors)
    assert mape <= 0.15 and abs(sum(errors) / len(errors)) <= 0.08
    assert all(abs(r.error) <= 0.35 or r.case.known_gap for r in v.results)
    assert mape <= 0.5 * sum(map(abs, naive)) / len(naive)


def test_launcher_releases_run_flash_attention_2():
    """NeMo-Framework-Launcher 24.03.01 and 24.07 set NVTE_FUSED_ATTN=0 (conf/config.yaml), so
    Transformer Engine ran flash-attn 2 there; the NeMo 2 and Megatron-Bridge releases keep
    TE's own choice (the hardware file's cuDNN rows)."""
    cases, _ = P.published_cases("published-h100")
    kernel = {c.name: c.workload.training.attention_kernel for c in cases}
    launcher = [n for n in kernel if n.startswith(("nemo2407-", "nemo-longseq-"))]
    assert len(launcher) == 16  # 12 from the 24.07 summary, 4 from the long-sequence table
    assert all(kernel[n] == "fa2" for n in launcher)
    assert all(kernel[n] == "" for n in kernel if n.startswith(("nemo2502-", "mb25", "mb26")))
    notes = {c.name: c.notes for c in cases}
    assert all("attention kernel fa2" in notes[n] for n in launcher)


def test_llm_foundry_runs_its_triton_attention_priced_as_flashattention_1():
    """sweep.sh passes no --attn_impl and submit_benchmarks.py defaults to triton (b2a43a147,
    5e85bd62d): llm-foundry's pre-MLIR Triton kernel, which its author puts slightly below the
    CUDA FlashAttention (v1) of the time, whose measured rows price it."""
    cases = [c for s in P.PUBLISHED_SETS for c in P.published_cases(s)[0]]
    foundry = [c for c in cases if c.name.startswith("foundry-")]
    assert len(foundry) == 11
    assert all(c.workload.training.attention_kernel == "fa1" for c in foundry)
    assert all("attention kernel fa1" in c.notes for c in foundry)


def test_megatron_bridge_releases_keep_te_s_cached_dummy_wgrads():
    """Megatron-Bridge pins Transformer Engine >= 2.3 (2.6 in v0.1.0rc3 on), whose
    get_dummy_wgrad cache the memory model counts; NeMo's releases, whose TE is not pinned in
    what was read, and FSDP runs do not take it."""
    cases = [c for s in P.PUBLISHED_SETS for c in P.published_cases(s)[0]]
    for c in cases:
        mb = c.framework.startswith("Megatron-Bridge") and not c.workload.parallel.fsdp
        assert c.workload.parallel.cached_dummy_wgrads == mb, c.name
    assert sum(c.workload.parallel.cached_dummy_wgrads for c in cases) >= 4


def test_blackwell_runs_of_2025_price_cudnn_at_their_containers_version():
    """NeMo 25.02 / 25.04 and Megatron-Bridge 25.09 / 25.11 ran 2025 containers (cuDNN <= 9.13):
    on B200 / GB200, whose table holds cuDNN 9.13.0's rows beside 9.19.1's, their attention is
    `cudnn-9.13`; the same releases on H100 keep the hardware file's cuDNN rows."""
    from simsp.cost.compute import ComputeModel
    from simsp.io.config import load_hardware

    b200, _ = P.published_cases("published-b200")
    assert {c.workload.training.attention_kernel for c in b200} == {"cudnn-9.13"}
    assert all("attention kernel cudnn-9.13 (TE's cuDNN" in c.notes for c in b200)
    h100, _ = P.published_cases("published-h100")
    assert all(
        c.workload.training.attention_kernel == ""
        for c in h100
        if c.name.startswith(("nemo2502-", "mb2509-", "mb2511-"))
    )
    cm = ComputeModel(load_hardware("hardware/dgx-b200.yaml"))
    old, new = cm.attention_for("cudnn-9.13"), cm.attention_table
    assert old.lookup_tflops(128, 8192, True, "fwd") == 1168  # FA4 paper, cuDNN 9.13.0
    assert new.lookup_tflops(128, 8192, True, "fwd") == 1430  # same figure, cuDNN 9.19.1


def test_gb200_pairs_of_nemo_25_04_name_the_2025_cudnn():
    from simsp.validate.fp8_pairs import pair_cases

    cases, _ = pair_cases()
    kernel = {c.name: c.workload.training.attention_kernel for c in cases}
    gb200 = [n for n in kernel if "gb200" in n]
    assert gb200 and all(kernel[n] == "cudnn-9.13" for n in gb200)
    assert all(kernel[n] == "" for n in kernel if "h100" in n)


def test_llm_foundry_fsdp_reduces_in_its_tables_mp_mode():
    """Composer's MP Mode: DEFAULT reduces gradients in fp32, PURE in bf16 (two A100 tables)."""
    cases = [c for s in P.PUBLISHED_SETS for c in P.published_cases(s)[0]]
    foundry = {c.name: c for c in cases if c.name.startswith("foundry-")}
    for name, c in foundry.items():
        pure = "MP mode PURE" in BY_ID[name]["notes"]
        assert c.workload.parallel.grad_reduce_in_fp32 == (not pure), name
        assert f"(MP mode {'PURE' if pure else 'DEFAULT'})" in c.notes
    assert sum("MP mode PURE" in BY_ID[n]["notes"] for n in foundry) == 3


def test_errors_group_by_the_release_that_ran_them_and_by_hardware():
    """`validate --by framework` / `--by hardware`: a set's errors by the recipe's release and
    by hardware file, the groups partitioning the set."""
    from simsp.validate.metrics import grouped
    from simsp.validate.runner import run_validation

    rs = run_validation(("published-b200",), workers=1).results
    by_release = grouped(list(rs), "framework")
    releases = {"NeMo 25.02", "NeMo 25.04", "Megatron-Bridge 25.09", "Megatron-Bridge 25.11"}
    assert set(by_release) == releases
    assert sum(m["n"] for m in by_release.values()) == len(rs)
    assert set(grouped(list(rs), "hardware")) == {"dgx-b200", "gb200-nvl72"}
    assert {r.case.framework for r in rs if r.case.name.startswith("nemo2502-")} == {"NeMo 25.02"}


def test_fp8_presets_keep_fp8_primary_weights():
    """NeMo 2 (v2.2.0 fp8_params, v2.3.0 fp8_param_gather) and Megatron-Bridge's FP8 presets keep
    FP8 primary weights; NeMo 25.02's FP8 scripts reduce gradients in bf16. Not under FSDP, not
    for the launcher releases or llm-foundry."""
    cases = [c for s in P.PUBLISHED_SETS for c in P.published_cases(s)[0]]
    on = {c.name for c in cases if c.workload.training.fp8_param_gather}
    for c in cases:
        t, par = c.workload.training, c.workload.parallel
        modern = c.name.startswith(("nemo2502-", "nemo2504-", "mb25", "mb26"))
        assert (c.name in on) == (modern and t.precision == "fp8" and not par.fsdp), c.name
        if c.name.startswith("nemo2502-"):
            assert not par.grad_reduce_in_fp32
    assert "nemo2504-gb200-llama3-70b-fsdp" not in on and "nemo2502-b200-llama3-8b" in on


def test_moe_set_takes_each_releases_recipe():
    """A mixture-of-experts case takes its layout from the row and, where the table is silent,
    its dispatcher and all-to-all overlap from the release's recipe (moe_recipes.py): Qwen3-30B
    on 25.11's H100 overlapped its alltoall, 26.04's GB200 ran HybridEP; Grok-1's dgxc launcher
    states alltoall; every case's notes say which."""
    cases = {c.name: c for c in P.published_cases(P.MOE_SET)[0]}
    h100 = cases["mb2511-h100-qwen3-30b-a3b"].workload.parallel
    assert (h100.moe_dispatcher, h100.moe_a2a_overlap, h100.ep, h100.etp) == (
        "alltoall",
        True,
        8,
        1,
    )
    gb200 = cases["mb2604-gb200-qwen3-30b-a3b"].workload
    assert (gb200.parallel.moe_dispatcher, gb200.parallel.moe_a2a_overlap) == ("flex", False)
    assert (gb200.model.experts, gb200.model.router_topk, gb200.model.moe_ffn) == (128, 8, 768)
    grok = cases["dgxc2504-h100-grok1-bf16-64"].workload
    assert (grok.parallel.tp, grok.parallel.cp, grok.parallel.ep, grok.parallel.etp) == (4, 2, 8, 4)
    assert grok.model.layers == 8 and grok.model.mlp == "geglu"
    assert "(the recipe's)" in cases["mb2604-gb200-qwen3-30b-a3b"].notes
    assert "(as stated)" in cases["dgxc2504-h100-grok1-bf16-64"].notes
    assert all(c.workload.model.experts for c in cases.values())
