"""`simsp plan`'s search: every layout of a model on N GPUs in closed form, the best event-
simulated, ranked, each with the `simsp run` command that reproduces it.

Every valid layout of sweep/layouts.py's space is bounded below by closed_form.floor_s; taken
in that order, each is checked for HBM and priced in closed form until the `simulate` fastest
that fit are known and the next bound is past them (branch and bound: the answer evaluating
every layout would give). Those are then simulated as events, exactly as `simsp run` would
simulate them (sweep.execute's event tier), and ranked by that time. A printed row is always
an event row, so its command reproduces its time to the bit.
"""

import shlex
from dataclasses import dataclass

from simsp.errors import InputError
from simsp.sim.budget import DEFAULT_MAX_ACTIONS
from simsp.spec.hardware import HardwareSpec
from simsp.spec.knobs import KNOBS
from simsp.spec.workload import Workload
from simsp.sweep.configs import Counts, admit
from simsp.sweep.execute import evaluate_analytic, executor_rows
from simsp.sweep.layouts import SEARCHED, Space, grid_points, space
from simsp.sweep.rows import ranked, row_key

DEFAULT_SIMULATE = 32
"""Layouts event-simulated after screening: the fastest that fit in closed form."""
BY_COLUMN = {k.short: k for k in KNOBS}
"""Knobs by their row column (the short name: `sp`)."""


@dataclass(frozen=True)
class Search:
    """What a plan searched and found."""

    space: Space
    counts: Counts
    evaluated: list[dict]
    """Closed-form rows of the layouts evaluated, in enumeration order: every valid one with
    `every`, else those a lower bound could not rule out."""
    simulated: list[dict]
    """Event rows of the best that fit in closed form, fastest first (those that fit)."""
    fitting: int
    """Evaluated layouts that fit, by the closed form."""
    over_hbm: int = 0
    """Layouts ruled out by their peak HBM and reserve alone, their time not evaluated."""


def layouts(w: Workload, hw: HardwareSpec, gpus: int, s: Space, max_actions: int, source: str):
    """The valid, distinct layouts of the space, and the counts of what was dropped."""
    counts, seen, configs = Counts(), set(), []
    for values, dropped in grid_points(s):
        if dropped:
            counts.grid_points += dropped
            counts.invalid += dropped
            continue
        counts.grid_points += 1
        outcome, found = admit(w, values, gpus, hw, source, max_actions)
        if isinstance(found, str):
            counts.invalid += outcome == "invalid"
            counts.too_big += outcome == "too_big"
            counts.reason = counts.reason or found
        elif found.key in seen:  # SP at tp 1, interleaving of one chunk: another's run
            counts.duplicates += 1
        else:
            seen.add(found.key)
            configs.append(found)
    counts.configs = len(configs)
    return configs, counts


def search(
    w: Workload,
    hw: HardwareSpec,
    gpus: int,
    fixed: dict,
    simulate: int = DEFAULT_SIMULATE,
    jobs: int | None = None,
    max_actions: int = DEFAULT_MAX_ACTIONS,
    source: str = "plan",
    every: bool = False,
) -> Search:
    """Every valid layout of w's model on `gpus` GPUs of hw, the `simulate` fastest that fit in
    closed form event-simulated; InputError when no layout is valid.

    Branch and bound: layouts are taken in the order of closed_form.floor_s, a lower bound of
    their time, and evaluated until `simulate` fit and the next one's bound is past the slowest
    of them, so the answer is the one evaluating all would give (`every` evaluates all, for
    --out and --pareto)."""
    from simsp.sim.closed_form import floor_s

    s = space(w, hw, gpus, fixed)
    configs, counts = layouts(w, hw, gpus, s, max_actions, source)
    if not configs:
        raise InputError(
            source,
            "layout",
            f"{gpus} GPUs",
            f"no valid layout ({counts.grid_points:,} searched); the first: {counts.reason}",
        )
    floors = [0.0 if every else floor_s(c.workload, c.hardware) for c in configs]
    order = sorted(range(len(configs)), key=lambda i: (floors[i], configs[i].key))
    rows, best, over_hbm = {}, [], 0
    for i in order:
        if len(best) >= simulate and floors[i] * (1 - SLACK) > best[-1][0]:
            break
        c = configs[i]
        if not every and not _may_fit(c.workload, c.hardware):
            over_hbm += 1  # does not fit: its time is not needed
            continue
        row = rows[i] = evaluate_analytic((c.key, c.workload, c.hardware))
        if row["fits"] == "true":
            best.append((float(row["iteration_time_s"]), c.key, i))
            best.sort()
            del best[simulate:]
    evaluated = [rows[i] for i in sorted(rows)]
    chosen = ranked([rows[i] for _, _, i in best])
    by_key = {c.key: c for c in configs}
    tasks = [(k, by_key[k].workload, by_key[k].hardware) for k in map(row_key, chosen)]
    simulated = ranked(list(executor_rows(tasks, "local", jobs)))
    fitting = sum(r["fits"] == "true" for r in evaluated)
    return Search(s, counts, evaluated, simulated, fitting, over_hbm)


def _may_fit(w: Workload, hw: HardwareSpec) -> bool:
    """Whether the layout's peak and reserve fit: first by the weights and optimizer state
    alone (a lower bound of the peak, cheap), then by the peak itself."""
    from simsp.sim.memory import peak_bytes, peak_candidates, static_bytes

    static = max(static_bytes(w, s) for s in peak_candidates(w.parallel.pp))
    return hw.free_bytes(static) >= 0 and hw.free_bytes(peak_bytes(w)) >= 0


SLACK = 1e-9
"""A bound is compared with a little room below it, for the rounding of its own sum."""


def flag(key: str, value: str) -> list[str]:
    """A row's value of a knob (its column name) as `simsp run` flags (`--tp 8`, `--no-sp`)."""
    name = BY_COLUMN[key].flag
    if value in ("true", "false"):
        return [name] if value == "true" else ["--no-" + name[2:]]
    return [name, value]


def command(base: list[str], row: dict, searched: tuple[str, ...] = SEARCHED) -> str:
    """The `simsp run` command that reproduces a row: the plan's own inputs (`base`), then dp
    and every searched key as the row has them."""
    args = ["simsp", "run", *base]
    for key in (*searched[:3], "dp", *searched[3:]):
        args += flag(key, row[key])
    return shlex.join(args)
