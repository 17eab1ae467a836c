"""Drive headless Chromium from a test: find it, load a page, read back what the page saw.

No new dependencies and no DevTools client: a copy of the page gets two small scripts, one at
the top of <head> that records JavaScript errors (window 'error', unhandled rejections,
console.error) and one at the end of <body> that, once the page has loaded and plotly has
drawn, writes its findings as JSON into a <pre id="simsp-probe">. `chromium --headless
--dump-dom` prints the DOM after load (with a virtual time budget for pending timers), and the
test parses the JSON out of it.
"""

import json
import os
import re
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

CANDIDATES = (
    "chromium",
    "chromium-browser",
    "google-chrome",
    "google-chrome-stable",
    "chrome",
    "headless_shell",
)
FLAGS = (
    "--headless",
    "--disable-gpu",
    "--no-sandbox",
    "--no-first-run",
    "--no-default-browser-check",
    "--disable-extensions",
    "--disable-dev-shm-usage",
    "--hide-scrollbars",
    "--mute-audio",
)

HEAD_SCRIPT = """<script>
window.__probeErrors = [];
window.addEventListener('error', function (e) {
  window.__probeErrors.push('error: ' + (e.message || (e.target && (e.target.src || \
e.target.href)) || String(e)));
}, true);
window.addEventListener('unhandledrejection', function (e) {
  window.__probeErrors.push('unhandled rejection: ' + String(e.reason));
});
window.__probeWarnings = [];
(function () {
  var error = console.error, warn = console.warn;
  console.error = function () {
    window.__probeErrors.push('console.error: ' + Array.prototype.map.call(arguments, \
String).join(' '));
    return error.apply(console, arguments);
  };
  console.warn = function () {
    window.__probeWarnings.push(Array.prototype.map.call(arguments, String).join(' '));
    return warn.apply(console, arguments);
  };
})();
</script>"""

PLOTLY_PROBE = """<script>
window.addEventListener('load', function () {
  function report() {
    var divs = Array.prototype.slice.call(document.querySelectorAll('.js-plotly-plot'));
    var out = {
      divs: divs.length,
      traces: divs.map(function (d) { return (d.data || []).length; }),
      trace_names: divs.map(function (d) { return (d.data || []).map(function (t) { return \
t.name; }); }),
      drawn_bars: divs.map(function (d) { return d.querySelectorAll('.barlayer .point').length; }),
      drawn_lines: divs.map(function (d) { return d.querySelectorAll('.scatterlayer \
.js-line').length; }),
      title: divs.map(function (d) { return d.layout && d.layout.title && d.layout.title.text || \
''; }),
      errors: window.__probeErrors,
      loaded_ms: performance.now()
    };
    var pre = document.createElement('pre');
    pre.id = 'simsp-probe';
    pre.textContent = JSON.stringify(out);
    document.body.appendChild(pre);
  }
  var divs = Array.prototype.slice.call(document.querySelectorAll('.js-plotly-plot'));
  var pending = divs.map(function (d) { return d._transitioning || Promise.resolve(); });
  Promise.all(pending).then(function () { setTimeout(report, 0); });
});
</script>"""

_PROBE_RE = re.compile(r'<pre id="simsp-probe">(.*?)</pre>', re.S)


def find_chromium() -> str | None:
    """Path of a Chromium/Chrome binary ($CHROMIUM overrides), or None."""
    env = os.environ.get("CHROMIUM")
    if env:
        return shutil.which(env) or (env if Path(env).exists() else None)
    for name in CANDIDATES:
        path = shutil.which(name)
        if path:
            return path
    return None


def instrument(html: str, probe: str = PLOTLY_PROBE) -> str:
    """The page with the error recorder first in <head> and the probe last in <body>."""
    head = re.search(r"<head[^>]*>", html, re.I)
    html = html[: head.end()] + HEAD_SCRIPT + html[head.end() :] if head else HEAD_SCRIPT + html
    end = html.lower().rfind("</body>")
    return html[:end] + probe + html[end:] if end >= 0 else html + probe


def _run(
    binary: str, args: list[str], timeout_s: float
) -> tuple[subprocess.CompletedProcess, float]:
    with tempfile.TemporaryDirectory(prefix="simsp-chromium-") as profile:
        cmd = [binary, *FLAGS, f"--user-data-dir={profile}", *args]
        t0 = time.perf_counter()
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s)
        return proc, time.perf_counter() - t0


def dump_dom(
    binary: str,
    url: str,
    timeout_s: float = 60,
    budget_ms: int = 20_000,
    extra: tuple[str, ...] = (),
) -> tuple[str, float]:
    """(the DOM after load, wall seconds) of a page in headless Chromium."""
    proc, wall = _run(
        binary, [*extra, f"--virtual-time-budget={budget_ms}", "--dump-dom", url], timeout_s
    )
    if proc.returncode != 0:
        raise RuntimeError(f"chromium exited {proc.returncode}: {proc.stderr[-2000:]}")
    return proc.stdout, wall


def read_probe(dom: str) -> dict:
    """The JSON the probe script wrote into the page."""
    m = _PROBE_RE.search(dom)
    if not m:
        raise AssertionError(
            f"probe output missing from the dumped DOM (page did not finish loading?): {dom[-500:]}"
        )
    text = (
        m.group(1)
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", '"')
        .replace("&amp;", "&")
    )
    return json.loads(text)


def probe_page(
    binary: str, html: str, workdir: Path, name: str = "page.html", timeout_s: float = 60
) -> dict:
    """Load an instrumented copy of a page and return its findings plus `wall_s` (process wall
    time)."""
    path = Path(workdir) / name
    path.write_text(instrument(html))
    dom, wall = dump_dom(binary, path.resolve().as_uri(), timeout_s)
    found = read_probe(dom)
    found["wall_s"] = wall
    return found


def screenshot(
    binary: str, url: str, out_png: Path, size: str = "1600,1000", timeout_s: float = 60
) -> float:
    """Wall seconds to render a page into a PNG."""
    proc, wall = _run(
        binary,
        [f"--screenshot={out_png}", f"--window-size={size}", "--virtual-time-budget=10000", url],
        timeout_s,
    )
    if proc.returncode != 0 or not Path(out_png).exists():
        raise RuntimeError(f"chromium screenshot failed ({proc.returncode}): {proc.stderr[-2000:]}")
    return wall
