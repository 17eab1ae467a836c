"""The generated pages in a real browser: headless Chromium loads them and reports back.

Skipped only where no Chromium/Chrome binary is found (CI installs Debian's `chromium`). The
speedscope check additionally needs the `speedscope` npm package (`npm install -g speedscope`,
or SPEEDSCOPE_DIR pointing at its dist/release folder) and is skipped without it.
"""

import base64
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from simsp.present.perfetto import chrome_trace_json
from simsp.present.timeline import timeline_html
from tests.browser.chromium import (
    HEAD_SCRIPT,
    dump_dom,
    find_chromium,
    instrument,
    probe_page,
    read_probe,
    screenshot,
)

pytestmark = pytest.mark.slow  # starts headless Chromium: about 30 s


@pytest.fixture(scope="module")
def chromium():
    path = find_chromium()
    if path is None:
        pytest.skip(
            "no Chromium/Chrome binary found (looked for $CHROMIUM, chromium, chromium-browser, "
            "google-chrome); install it with `apt-get install -y chromium` to run the browser "
            "checks"
        )
    return path


@pytest.mark.parametrize("name", ["gpt-22b", "gpt3-175b", "gpt-1t"])
def test_timeline_renders_without_errors(chromium, results, tmp_path, name):
    found = probe_page(
        chromium, timeline_html(results(name)), tmp_path, f"{name}.html", timeout_s=120
    )
    print(
        f"{name}: headless open {found['wall_s']:.2f} s wall (chromium start included), plot drawn "
        f"{found['loaded_ms'] / 1000:.2f} s after navigation, {sum(found['drawn_bars'])} bars drawn"
    )
    assert found["errors"] == [], found["errors"]
    assert found["divs"] >= 1
    assert all(n > 0 for n in found["traces"]), found["traces"]
    assert all(n > 0 for n in found["drawn_bars"]), "bars were not drawn"
    assert all(n > 0 for n in found["drawn_lines"]), "HBM lines were not drawn"
    assert name in found["title"][0]


def test_probe_reports_page_errors(chromium, tmp_path):
    """The harness itself: a broken page must come back with its error and no plot."""
    page = "<html><head></head><body><script>undefinedFunction();</script></body></html>"
    found = probe_page(chromium, page, tmp_path, "broken.html")
    assert found["divs"] == 0
    assert any("undefinedFunction" in e for e in found["errors"]), found


def test_screenshot_of_the_175b_timeline(chromium, results, tmp_path):
    page = tmp_path / "gpt3-175b.html"
    page.write_text(timeline_html(results("gpt3-175b")))
    png = tmp_path / "timeline.png"
    screenshot(chromium, page.resolve().as_uri(), png)
    data = png.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    assert len(data) > 30_000, "a blank page compresses to a few kB"


def _speedscope_dir() -> Path | None:
    env = os.environ.get("SPEEDSCOPE_DIR")
    if env:
        return Path(env) if (Path(env) / "index.html").exists() else None
    npm = shutil.which("npm")
    if npm is None:
        return None
    root = subprocess.run([npm, "root", "-g"], capture_output=True, text=True).stdout.strip()
    release = Path(root) / "speedscope" / "dist" / "release"
    return release if (release / "index.html").exists() else None


SPEEDSCOPE_PROBE = """<script>
window.addEventListener('load', function () {
  setTimeout(function () {
    var out = {title: document.title, errors: window.__probeErrors, warnings: \
window.__probeWarnings,
               canvases: document.querySelectorAll('canvas').length, text: \
document.body.innerText.slice(0, 400)};
    var pre = document.createElement('pre');
    pre.id = 'simsp-probe';
    pre.textContent = JSON.stringify(out);
    document.body.appendChild(pre);
  }, 3000);
});
</script>"""


@pytest.mark.parametrize("name", ["gpt-22b", "gpt3-175b"])
def test_speedscope_imports_the_trace(chromium, results, tmp_path, name):
    """speedscope reads the trace, one profile per thread, and finds every slice properly nested
    (it warns 'Tried to end ... when ... was on the top of the stack' otherwise)."""
    release = _speedscope_dir()
    if release is None:
        pytest.skip("speedscope not installed (npm install -g speedscope, or set SPEEDSCOPE_DIR)")
    app = tmp_path / "speedscope"
    shutil.copytree(release, app)
    trace = chrome_trace_json(results(name))
    loader = app / "profile.js"
    b64 = base64.b64encode(trace.encode()).decode()
    loader.write_text(
        f"speedscope.loadFileFromBase64({json.dumps(name + '.json')}, {json.dumps(b64)})"
    )
    page = app / "probe.html"
    page.write_text(instrument((app / "index.html").read_text(), SPEEDSCOPE_PROBE))
    dom, _ = dump_dom(chromium, f"{page.resolve().as_uri()}#localProfilePath={loader.resolve()}")
    found = read_probe(dom)
    threads = {(e["pid"], e["tid"]) for e in json.loads(trace)["traceEvents"] if e["ph"] == "X"}
    assert found["title"] == f"{name}.json - speedscope", found
    assert found["errors"] == [] and found["warnings"] == [], found
    assert re.search(rf"\(1/{len(threads)}\)", found["text"]) or len(threads) == 1, found["text"]
    assert found["canvases"] > 0


def test_head_script_is_first_in_head():
    page = instrument("<html><head><script>x()</script></head><body></body></html>")
    assert page.index(HEAD_SCRIPT) < page.index("x()")


@pytest.fixture(scope="module")
def reproduction_page(tmp_path_factory):
    from simsp.validate.reproduce import reproduce, write_report

    return write_report(reproduce(), tmp_path_factory.mktemp("reproduce")).read_text()


def test_reproduction_report_renders_every_chart(chromium, reproduction_page, tmp_path):
    found = probe_page(chromium, reproduction_page, tmp_path, "reproduction.html", timeout_s=120)
    assert found["errors"] == [], found["errors"]
    assert found["divs"] == 4 and all(n > 0 for n in found["traces"]), found
    assert all(n > 0 for n in found["drawn_bars"]), "bars were not drawn"


def test_pareto_page_renders(chromium, tmp_path):
    from simsp.sweep import figure_page, pareto_figure

    rows = [
        {
            "hardware": "dgx-a100-80gb",
            "tp": str(t),
            "pp": str(8 // t),
            "dp": "1",
            "sp": "true",
            "recompute": r,
            "micro_batch": "1",
            "global_batch": "64",
            "schedule": "1f1b",
            "virtual_stages": "1",
            "iteration_time_s": str(10.0 / t + i),
            "mfu": "0.5",
            "peak_bytes": str((40 + 10 * t) * 2**30),
            "fits": "true" if t > 1 else "false",
            "capacity_bytes": str(80 * 2**30),
            "tier": "event",
        }
        for i, r in enumerate(("none", "selective", "full"))
        for t in (1, 2, 4, 8)
    ]  # rows as the CSV holds them
    found = probe_page(chromium, figure_page(pareto_figure(rows, "test")), tmp_path, "pareto.html")
    assert found["errors"] == [] and found["divs"] == 1 and found["traces"][0] > 0, found


EVIL = (
    "</title><script>window.__pwned=(window.__pwned||0)+1</script>"
    '<img src=x onerror="window.__pwned=(window.__pwned||0)+10">'
)
PWNED_PROBE = """<script>
window.addEventListener('load', function () {
  setTimeout(function () {
    var pre = document.createElement('pre');
    pre.id = 'simsp-probe';
    pre.textContent = JSON.stringify({pwned: window.__pwned || 0, title: document.title,
                                      errors: window.__probeErrors});
    document.body.appendChild(pre);
  }, 500);
});
</script>"""


def _evil_workload(tmp_path) -> Path:
    import yaml

    root = Path(__file__).resolve().parents[1]
    data = yaml.safe_load((root / "workloads" / "gpt-22b.yaml").read_text())
    data["name"] = EVIL
    path = tmp_path / "evil.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def _pwned(chromium, page: Path) -> dict:
    instrumented = page.with_name("probed-" + page.name)
    instrumented.write_text(instrument(page.read_text(), PWNED_PROBE))
    dom, _ = dump_dom(chromium, instrumented.resolve().as_uri(), timeout_s=120)
    return read_probe(dom)


def test_a_workload_name_runs_no_script_in_any_page(chromium, tmp_path):
    import yaml

    from simsp.cli.main import main

    workload = _evil_workload(tmp_path)
    timeline = tmp_path / "timeline.html"
    assert main(["run", str(workload), "--timeline", str(timeline)]) == 0
    spec = tmp_path / "spec.yaml"
    root = Path(__file__).resolve().parents[1]
    spec.write_text(
        yaml.safe_dump(
            {
                "workload": str(workload),
                "hardware": [str(root / "hardware" / "dgx-a100-80gb.yaml")],
                "gpus": 8,
                "grid": {"tp": [4, 8]},
            }
        )
    )
    pareto = tmp_path / "pareto.html"
    assert main(["sweep", str(spec), "--pareto", str(pareto), "--jobs", "1", "--no-progress"]) == 0
    for page in (timeline, pareto):
        found = _pwned(chromium, page)
        assert found["pwned"] == 0, (page.name, found)
        assert "</title><script>" in found["title"], found["title"]  # shown as text
