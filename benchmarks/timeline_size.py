"""Size and speed of the timeline page and the Chrome/Perfetto trace for the paper's four runs.

    python benchmarks/timeline_size.py [--keep DIR] [--no-browser]

Simulates each workload, writes `NAME.html` (timeline) and `NAME.json` (trace) into a temporary
folder (or DIR), and prints their sizes, the seconds to simulate and to render each, and, when a
Chromium binary is found, how long headless Chromium takes to open the page: wall seconds of the
whole process (browser start included) and milliseconds from navigation until plotly had drawn.
Targets: the 1T page under 20 MB and open in under 10 s.
"""

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # for tests.browser, the headless-Chromium helper

from simsp.api import run  # noqa: E402
from simsp.io.config import load_hardware, load_workload  # noqa: E402
from simsp.present.perfetto import chrome_trace_json  # noqa: E402
from simsp.present.timeline import choose_view, timeline_html  # noqa: E402

WORKLOADS = ("gpt-22b", "gpt3-175b", "mt-nlg-530b", "gpt-1t")


def _timed(fn, *args):
    t0 = time.perf_counter()
    out = fn(*args)
    return out, time.perf_counter() - t0


def measure(name: str, hw, out_dir: Path, chromium: str | None) -> dict:
    """One workload's row."""
    result, sim_s = _timed(run, load_workload(ROOT / "workloads" / f"{name}.yaml"), hw)
    html, html_s = _timed(timeline_html, result)
    trace, trace_s = _timed(chrome_trace_json, result)
    (out_dir / f"{name}.html").write_text(html)
    (out_dir / f"{name}.json").write_text(trace)
    row = {
        "workload": name,
        "spans": len(result.sim.spans),
        "level": choose_view(result).level,
        "sim_s": sim_s,
        "html_mb": len(html.encode()) / 1e6,
        "html_s": html_s,
        "trace_mb": len(trace.encode()) / 1e6,
        "trace_s": trace_s,
    }
    if chromium:
        from tests.browser.chromium import probe_page

        found = probe_page(chromium, html, out_dir, f"{name}.probe.html", timeout_s=120)
        row.update(
            open_wall_s=found["wall_s"],
            drawn_s=found["loaded_ms"] / 1000,
            js_errors=len(found["errors"]),
        )
    return row


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--keep", metavar="DIR", help="write the files here instead of a temporary folder"
    )
    ap.add_argument("--no-browser", action="store_true", help="skip the headless Chromium timing")
    args = ap.parse_args()
    chromium = None
    if not args.no_browser:
        from tests.browser.chromium import find_chromium

        chromium = find_chromium()
        if chromium is None:
            print("no Chromium binary found: open times not measured", file=sys.stderr)
    hw = load_hardware(ROOT / "hardware" / "dgx-a100-80gb.yaml")
    with tempfile.TemporaryDirectory(prefix="simsp-timeline-") as tmp:
        out_dir = Path(args.keep or tmp)
        out_dir.mkdir(parents=True, exist_ok=True)
        print(
            f"{'workload':12s} {'spans':>7s} {'level':>10s} {'sim s':>6s} {'html MB':>8s} "
            f"{'html s':>7s} {'trace MB':>9s} {'trace s':>8s} {'open s':>7s} {'drawn s':>8s} "
            f"{'JS errors':>9s}"
        )
        for name in WORKLOADS:
            r = measure(name, hw, out_dir, chromium)
            browser = (
                f"{r['open_wall_s']:7.2f} {r['drawn_s']:8.2f} {r['js_errors']:9d}"
                if chromium
                else f"{'-':>7s} {'-':>8s} {'-':>9s}"
            )
            print(
                f"{r['workload']:12s} {r['spans']:7d} {r['level']:>10s} {r['sim_s']:6.2f} "
                f"{r['html_mb']:8.2f} {r['html_s']:7.2f} {r['trace_mb']:9.2f} {r['trace_s']:8.2f} "
                f"{browser}",
                flush=True,
            )
        if args.keep:
            print(f"files in {out_dir}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
