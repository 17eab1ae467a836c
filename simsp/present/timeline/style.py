"""How a timeline names and colours what it draws: the rows' order and labels, each kind's legend
label and colour (Tableau 10 family: distinct, colour-blind safer), and the colours of kinds
beyond them."""

ROW_ORDER = ("compute", "tp_comm", "ep_comm", "cp_comm", "fsdp_comm", "pp_comm", "dp_comm")
STREAM_LABELS = {
    "compute": "compute",
    "tp_comm": "TP comm",
    "ep_comm": "EP comm",
    "cp_comm": "CP comm",
    "fsdp_comm": "FSDP comm",
    "pp_comm": "PP send/recv",
    "dp_comm": "DP comm",
}
KIND_STYLE = {  # legend label, colour (Tableau 10 family: distinct, colour-blind safer)
    "forward": ("forward", "#4C78A8"),
    "backward": ("backward", "#F58518"),
    "backward_input": ("backward, input gradient (I)", "#E15759"),
    "backward_weight": ("backward, weight gradient (W)", "#FF9DA7"),
    "recompute": ("recompute", "#E45756"),
    "mixed": ("forward + backward (merged)", "#A0799A"),
    "embedding": ("embedding / output layer", "#72B7B2"),
    "loss": ("loss", "#FF9DA6"),
    "tp_comm": ("TP comm", "#B279A2"),
    "pp_send": ("PP send", "#54A24B"),
    "pp_recv": ("PP recv", "#8CD17D"),
    "dp_allreduce": ("DP gradient reduction", "#EECA3B"),
    "param_gather": ("parameter all-gather", "#B6992D"),
    "cp_comm": ("CP ring / all-to-all (alongside compute)", "#D37295"),
    "ep_comm": ("EP dispatch / combine (mixture of experts)", "#9C755F"),
    "fsdp_comm": ("FSDP gathers / reduce-scatters (alongside compute)", "#79706E"),
    "optimizer": ("optimizer", "#9D755D"),
    "host_wait": ("waiting for the host (framework floor)", "#C7C7C7"),
    "idle": ("idle / bubble", "#D9D9D9"),
}
FALLBACK_COLOURS = ("#BAB0AC", "#79706E", "#D37295", "#FABFD2", "#B6992D")
"""Colours of kinds KIND_STYLE does not name, in turn."""
