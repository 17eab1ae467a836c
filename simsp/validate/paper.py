"""The published numbers of Korthikanti et al. 2022 (arXiv 2205.05198 v1) that simsp reproduces.

Values typed from the paper's tables (see reference/paper.md); used by validation and reports.
"""

MODELS = ("gpt-22b", "gpt3-175b", "mt-nlg-530b", "gpt-1t")

TABLE4_22B_MS = {
    # (recompute, sequence_parallel): (forward ms, backward ms), 22B, micro batch 4, TP 8 (Table 4)
    ("none", False): (7.7, 11.9),
    ("none", True): (7.2, 11.8),
    ("full", False): (7.7, 19.5),
    ("selective", False): (7.7, 13.2),
    ("selective", True): (7.2, 13.1),
}
TABLE4_LABELS = {
    ("none", False): "baseline no recompute",
    ("none", True): "sequence parallelism",
    ("full", False): "baseline with full recompute",
    ("selective", False): "selective recompute",
    ("selective", True): "selective + sequence",
}

TABLE5_S = {
    # model: (full recompute without SP, present work = TP + SP + selective) iteration seconds
    # (Table 5)
    "gpt-22b": (1.42, 1.10),
    "gpt3-175b": (18.13, 13.75),
    "mt-nlg-530b": (49.05, 37.83),
    "gpt-1t": (94.42, 71.49),
}
TABLE5_MFU_HFU = {
    "gpt-22b": (0.415, 0.437),
    "gpt3-175b": (0.514, 0.528),
    "mt-nlg-530b": (0.560, 0.570),
    "gpt-1t": (0.563, 0.570),
}

FIGURE7_PCT = {
    # activation memory as % of the TP baseline, read off Figure 7 (reference/paper.md §7, ±0.2 pt):
    # +SP, +selective, +SP +selective, full recompute
    "gpt-22b": (66.8, 49.4, 16.1, 7.5),
    "gpt3-175b": (61.9, 56.6, 18.4, 8.5),
    "mt-nlg-530b": (58.3, 61.9, 20.2, 9.3),
    "gpt-1t": (58.3, 61.9, 20.2, 9.3),
}
