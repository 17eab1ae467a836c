"""What torchtitan (and NeMo AutoModel) ran by default at the commit a PyTorch-native run
used: the software stack and parallel settings `stack_settings` gives a row of
`data/sources/torch-native-runs/runs.yaml` (torch_native.py turns them into cases), each
setting the row does not state filled from the code its source ran, cited as repository
path@commit (pytorch/torchtitan unless named):

- which code ran: each benchmark page names its torchtitan commit in "Versions and Dates"
  (RUN_COMMITS): benchmarks/llama3_h100_202412_torchtitan.md@820504e2 ran 9dec370a
  (2024-12-26), asyncTP_llama3_h100_2025-06_torchtitan.md@2887250b ran 820504e2 (2025-06-13),
  llama3-8b_h200_202506_trainy-whitefiber.md@4a61bd87 ran e7c0cae9 (2025-06-13). The
  docs/performance.md rows cite d4c86e37, the commit that replaced those tables: they are in
  its parent, written by 395a5262 (Llama 2, 2024-04-18), 1ea476e9 (Llama 3, 2024-04-24) and
  9515a140 (Llama 3.1 405B, 2024-08-22), whose train configs are the defaults taken (DOC_TABLES).
- `stack`: torchtitan. The AutoModel row (NVIDIA-NeMo/Automodel
  examples/llm_pretrain/custom_llama3_1_70b_pretrain_benchmark_8nodes.yaml@2013a4dd, the commit
  that published its table row) is FSDP2 too, with Transformer Engine linears, RoPE and attention
  (BackendConfig defaults, nemo_automodel/components/models/common/utils.py@2013a4dd): stack
  torchtitan, attention_kernel "" (TE's, the hardware file's).
- `elementwise`: parallel.torch_compile true -> compiled, false -> eager; unstated: the train
  config of the table's commit (compile = false in llama2_13b/70b.toml@395a5262,
  llama3_8b/70b.toml@1ea476e9 and llama3_405b.toml@9515a140^: the commit that published the 405B
  table turned compile on together with float8 and async TP for its optimised rows, so its
  "Optimizations: None" row is the config before it). AutoModel: compiled (its yaml's
  `enable_compile: True`; RMSNorm `torch_fp32`, a torch op, not TE's).
- `attention_kernel`: torchtitan calls SDPA; before PR #1776 (6a3a9da9, 2025-10-09, cuDNN first)
  every run here took FlashAttention-2: PyTorch's own priority (flash first) for the 2024 runs,
  torchtitan/utils.py@9dec370a get_train_context [FLASH, EFFICIENT] under CP, and
  torchtitan/models/attention.py@820504e2 / @e7c0cae9 [FLASH, EFFICIENT, MATH] off B200
  (PR #1196, 3b85aa31). So "fa2" (a kernel of the A100 and H100 flash_attention tables).
- `cross_entropy`: torch_fp32: torchtitan's loss is F.cross_entropy on fp32 logits
  (train.py@9dec370a `pred.flatten(0, 1).float()`; torchtitan/components/loss.py@e7c0cae9; in
  2024-04 the model's `self.output(h).float()`, torchtitan/models/llama/model.py@1ea476e9);
  AutoModel's MaskedCrossEntropy upcasts too (fp32_upcast=True,
  nemo_automodel/components/loss/masked_ce.py@2013a4dd).
- `fp8_recipe`: tensorwise: torchao Float8Linear with dynamic tensorwise scaling
  (torchtitan/config_manager.py@9dec370a float8.scaling_type_* default "dynamic";
  torchtitan/components/quantization/float8.py@e7c0cae9: recipe_name None -> Float8LinearConfig()).
- `fsdp_impl`: fsdp2 (fully_shard) for both frameworks; parallel.fsdp on, sharded over dp x cp
  (fsdp_shard only where the FSDP degree is below dp x cp: HSDP).
- `recompute`: selective / selective(op) / selective(per-op) -> op (torchtitan's per-op SAC;
  the 2024-12 tables' "selective" is llama3_8b.toml@9dec370a selective_ac_option 'op');
  selective(layer) -> full on every other layer (selective_ac_option default "2",
  config_manager.py@1ea476e9), i.e. recompute_num_layers half a chunk's layers; full; none.
  AutoModel: full (activation_checkpointing: True; under compile each layer's self_attn and mlp
  are checkpoint_wrapper'd, nemo_automodel/components/distributed/parallelizer.py@2013a4dd).
- TP: sequence-parallel style (sequence_parallel when tp > 1); async_tp -> tp_comm_overlap.
- PP (the 2024-12 405B rows): n_microbatches = the pp degree
  (torchtitan/parallelisms/pipelining_utils.py@9dec370a build_pipeline_schedule), so the micro
  batch is local_batch / pp; Interleaved1F1B with 2 stages per rank (generate_split_points),
  whose split gives the first and last stage one layer fewer when the layers do not divide
  (pipeline_layout).

`stack_settings` returns these as keyword arguments of TrainingSpec and ParallelSpec, with the
notes that say where each came from.
"""

from pathlib import Path

from simsp.errors import InputError
from simsp.validate.published_model import cell_int

RUNS = Path("sources") / "torch-native-runs" / "runs.yaml"
"""The runs file whose rows these defaults complete (errors name it)."""

TT = "pytorch/torchtitan"
RUN_COMMITS = {
    # torchtitan benchmark page commit -> (torchtitan commit its runs used, date), as the page's
    # "Versions and Dates" table states
    "820504e20d1149fbf0b98c567af24c4b0433b22d": (
        "9dec370ad26b5f8e9a7333a0e36165018262644b",
        "2024-12-26",
    ),
    "2887250bbd9103d0bc997ea2efb3a525b5e5dbc0": (
        "820504e20d1149fbf0b98c567af24c4b0433b22d",
        "2025-06-13",
    ),
    "4a61bd87d3c7e92bcfeb5d5464d9e6bd13ef440a": (
        "e7c0cae934df78d6e9c2835f42ff1f757dc3fddc",
        "2025-06-13",
    ),
}
DOC_TABLES = {
    # docs/performance.md@d4c86e37 table -> (the commit that wrote it, date, its train config's
    # compile setting and where): d4c86e37 replaced these tables, its parent holds them
    "Llama 2": (
        "395a526276eed4000c038a37d9b4859d0813af7c",
        "2024-04-18",
        False,
        "train_configs/llama2_13b.toml, llama2_70b.toml@1ea476e9 compile = false "
        "(llama_13b/70b.toml@395a5262 the same)",
    ),
    "Llama 3": (
        "1ea476e9f24be439eda358aa864f45c1c37a8a88",
        "2024-04-24",
        False,
        "train_configs/llama3_8b.toml, llama3_70b.toml@1ea476e9 compile = false",
    ),
    "Llama 3.1": (
        "9515a140b02f3b178ea0de7cf7f0d93c14b35a94",
        "2024-08-22",
        False,
        "train_configs/llama3_405b.toml@9515a140^ (b029b739) compile = false; 9515a140, which "
        "published the table, set compile = true with float8 and async TP for its optimised "
        "rows, not this 'Optimizations: None' row",
    ),
}
AUTOMODEL = "NVIDIA-NeMo/Automodel"
AUTOMODEL_YAML = (
    f"{AUTOMODEL} examples/llm_pretrain/custom_llama3_1_70b_pretrain_benchmark_8nodes.yaml"
    "@2013a4dd6e932c4e4f48ca6b4a3fc295cdd64e33"
)
FA2_BEFORE_1776 = (
    "fa2: SDPA's flash backend, before torchtitan PR #1776 (6a3a9da9, 2025-10-09) put cuDNN first"
)


def is_automodel(row: dict) -> bool:
    return row["id"].startswith("automodel")


def _commit(row: dict) -> str:
    return row["source"].split("@", 1)[1].split()[0] if "@" in row["source"] else ""


def run_commit(row: dict) -> tuple[str, str, str]:
    """(torchtitan commit the run used, its date, where that is stated) of a torchtitan row."""
    commit = _commit(row)
    if commit in RUN_COMMITS:
        run, date = RUN_COMMITS[commit]
        page = row["source"].split()[1]
        return run, date, f"{page}@{commit[:8]} 'Versions and Dates'"
    table = _doc_table(row)
    if table:
        run, date, _, _ = DOC_TABLES[table]
        return run, date, f"docs/performance.md '{table} performance numbers', written by {run[:8]}"
    raise InputError(RUNS, "source", row["source"], "names no torchtitan commit simsp knows")


def _doc_table(row: dict) -> str:
    for table in sorted(DOC_TABLES, key=len, reverse=True):
        if f"({table} performance numbers)" in row["source"]:
            return table
    return ""


def _elementwise(row: dict) -> tuple[str, str]:
    """(elementwise, why) of a row."""
    compiled = row.get("parallel.torch_compile")
    if compiled in ("true", "false"):
        value = "compiled" if compiled == "true" else "eager"
        return value, f"elementwise {value} (torch_compile {compiled}, as stated)"
    if is_automodel(row):
        return "compiled", (
            f"elementwise compiled ({AUTOMODEL_YAML} enable_compile: True; TE linears and RoPE, "
            "RMSNorm torch_fp32 under Inductor)"
        )
    table = _doc_table(row)
    if table:
        commit, _, compiled, source = DOC_TABLES[table]
        value = "compiled" if compiled else "eager"
        return value, f"elementwise {value} (unstated: {TT} {source})"
    raise InputError(RUNS, "parallel.torch_compile", "", f"{row['id']}: unstated, no default")


def _recompute(row: dict, layers_per_chunk: int) -> tuple[dict, str]:
    """(ParallelSpec recompute kwargs, why) of a row."""
    stated = (row["parallel.recompute"] or "").split()[0] if row["parallel.recompute"] else ""
    if not stated:
        if is_automodel(row):
            return {"recompute": "full"}, (
                f"recompute full (unstated: {AUTOMODEL_YAML} activation_checkpointing: True; "
                f"{AUTOMODEL} nemo_automodel/components/distributed/parallelizer.py@2013a4dd "
                "checkpoint_wrapper on each layer's self_attn and mlp under compile)"
            )
        raise InputError(RUNS, "parallel.recompute", "", f"{row['id']}: unstated, no default")
    if stated in ("selective", "selective(op)", "selective(per-op)"):
        why = "torchtitan per-op SAC"
        if stated == "selective":
            run, _, _ = run_commit(row)
            why += (
                f"; the table says selective: {TT} train_configs/llama3_8b.toml@{run[:8]} "
                "selective_ac_option 'op'"
            )
        return {"recompute": "op"}, f"recompute op ({stated}: {why})"
    if stated == "selective(layer)":
        half = layers_per_chunk // 2
        return {"recompute": "full", "recompute_num_layers": half}, (
            f"recompute full on {half} of {layers_per_chunk} layers (selective(layer): torchtitan "
            f"selective_ac_option default '2', every 2nd layer, {TT} torchtitan/config_manager.py"
            "@1ea476e9)"
        )
    if stated in ("full", "none"):
        return {"recompute": stated}, f"recompute {stated} (as stated)"
    raise InputError(RUNS, "parallel.recompute", stated, "must be selective(...), full or none")


def _pipeline(row: dict, notes: list[str]) -> dict:
    """A PP row's schedule, virtual stages, layer split and micro batch (torchtitan's defaults at
    the run's commit: n_microbatches = pp degree, 2 stages a rank for looped schedules, the
    split of generate_split_points)."""
    pp = cell_int(row["parallel.pp"], 1)
    if pp == 1:
        return {}
    run, _, _ = run_commit(row)
    src = f"{TT} torchtitan/parallelisms/pipelining_utils.py@{run[:8]}"
    interleaved = "interleaved" in row["parallel.pp_schedule"].lower()
    vp = cell_int(row["parallel.virtual_stages"], 0) or (2 if interleaved else 1)
    layers = cell_int(row["model.layers"])
    stages = pp * vp
    base, extra = divmod(layers, stages)
    counts = [base] + [base + 1 if i < extra else base for i in range(stages - 2)]
    counts.append(layers - sum(counts))
    layout = "|".join(
        ("E" if i == 0 else "") + f"t*{n}" + ("L" if i == stages - 1 else "")
        for i, n in enumerate(counts)
    )
    local = cell_int(row["parallel.local_batch"]) or cell_int(row["parallel.micro_batch"])
    n_micro = pp
    micro = local // n_micro
    notes.append(
        f"pp {pp} {'interleaved' if interleaved else '1f1b'}"
        + (f" vp {vp} (unstated: generate_split_points 2 stages a rank, {src})" if vp > 1 else "")
        + f", layers {'/'.join(map(str, counts))} a virtual stage (generate_split_points), "
        f"{n_micro} microbatches of {micro} (unstated: n_microbatches = pp degree, "
        f"build_pipeline_schedule, {src})"
    )
    return {
        "schedule": "interleaved" if vp > 1 else "1f1b",
        "virtual_stages": vp,
        "pipeline_layout": layout,
        "micro_batch": micro,
    }


FLOAT8_DEFAULTS = {
    # torchtitan commit a run used -> where its float8 default is tensorwise dynamic scaling
    "9dec370ad26b5f8e9a7333a0e36165018262644b": "torchtitan/config_manager.py@9dec370a "
    "float8.scaling_type_input/weight/grad_output default 'dynamic' (torchtitan/float8.py "
    "CastConfig per tensor)",
    "820504e20d1149fbf0b98c567af24c4b0433b22d": "torchtitan/config_manager.py@820504e2 "
    "Float8.recipe_name default None: Float8LinearConfig(), tensorwise "
    "(torchtitan/components/quantization/float8.py)",
    "e7c0cae934df78d6e9c2835f42ff1f757dc3fddc": "torchtitan/config_manager.py@e7c0cae9 "
    "Float8.recipe_name default None: Float8LinearConfig(), tensorwise "
    "(torchtitan/components/quantization/float8.py)",
}
"""The torchtitan float8 default of each commit an FP8 row ran."""


def _float8_source(row: dict) -> str:
    run, _, _ = run_commit(row)
    if run not in FLOAT8_DEFAULTS:
        raise InputError(RUNS, "precision", "fp8", f"{row['id']}: no float8 default for {run}")
    return f"{TT} {FLOAT8_DEFAULTS[run]}"


def stack_settings(row: dict) -> tuple[dict, dict, list[str]]:
    """(TrainingSpec kwargs, ParallelSpec kwargs, notes) of a row's software stack and the
    settings its source leaves unstated, each note saying where a value came from."""
    notes: list[str] = []
    automodel = is_automodel(row)
    training: dict = {"stack": "torchtitan", "fsdp_impl": "fsdp2"}
    if automodel:
        notes.append(
            "stack torchtitan (NeMo AutoModel: FSDP2 like torchtitan, with Transformer Engine "
            f"linears, RoPE and attention, BackendConfig defaults in {AUTOMODEL} "
            "nemo_automodel/components/models/common/utils.py@2013a4dd)"
        )
    else:
        run, date, where = run_commit(row)
        notes.append(f"stack torchtitan ({TT}@{run[:8]}, {date}: {where})")
    elementwise, why = _elementwise(row)
    training["elementwise"] = elementwise
    notes.append(why)
    if automodel:
        training["attention_kernel"] = ""
        notes.append("attention kernel TE's (the hardware file's)")
    else:
        training["attention_kernel"] = "fa2"
        notes.append(f"attention kernel {FA2_BEFORE_1776}")
    training["cross_entropy"] = "torch_fp32"
    notes.append(
        "cross-entropy torch_fp32 ("
        + (
            f"{AUTOMODEL} nemo_automodel/components/loss/masked_ce.py@2013a4dd fp32_upcast=True"
            if automodel
            else "torchtitan's F.cross_entropy on fp32 logits"
        )
        + ")"
    )
    if row["precision"] == "fp8":
        training["fp8_recipe"] = "tensorwise"
        notes.append(
            f"fp8 tensorwise (torchao Float8Linear dynamic scaling: {_float8_source(row)})"
        )
        if row.get("parallel.fsdp_float8_all_gather") == "true":
            training["fp8_param_gather"] = True
            notes.append("float8 FSDP all-gather (as stated): fp8_param_gather")

    tp, pp, cp, dp = (cell_int(row[f"parallel.{k}"], 1) for k in ("tp", "pp", "cp", "dp"))
    parallel: dict = {"fsdp": True}
    shard = cell_int(row["parallel.fsdp"], 0)
    if shard and shard < dp:
        parallel["fsdp_shard"] = shard
        notes.append(f"HSDP: sharded over {shard} of dp x cp {dp * cp}")
    notes.append("fsdp2, sharded over dp x cp")
    parallel["sequence_parallel"] = tp > 1
    if tp > 1:
        notes.append("sp on (torchtitan TP is sequence-parallel style)")
    if row.get("parallel.async_tp") == "true":
        parallel["tp_comm_overlap"] = True
        notes.append("tp_comm_overlap (async TP)")
    pipe = _pipeline(row, notes)
    vp = pipe.get("virtual_stages", 1)
    layers_per_chunk = cell_int(row["model.layers"]) // (pp * vp)
    recompute, why = _recompute(row, layers_per_chunk)
    parallel.update(recompute)
    notes.append(why)
    if pipe:
        training["micro_batch"] = pipe.pop("micro_batch")
        parallel.update(pipe)
    return training, parallel, notes
