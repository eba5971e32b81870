"""The HTML benchmark report in a real browser: render a report from a small results fixture, open it
in headless Chromium, and check the DOM after its scripts ran (tables, SVG charts with their data
points, the CPU-device banner, the script-built table of contents), plus a screenshot.

Chromium comes from Debian's ``chromium`` package (CI installs it in .ci/run). Without it this test
fails, saying how to install it: a report nobody has opened in a browser is not tested.
"""

import json
import os
import shutil
import struct
import subprocess
from html.parser import HTMLParser

import pytest

from bench_paths import FIXTURE, load

report = load("report")

CANDIDATES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")


def chromium() -> str:
    exe = os.environ.get("CHROMIUM") or next((p for p in map(shutil.which, CANDIDATES) if p), None)
    if not exe:
        pytest.fail("headless Chromium is required for the report test and was not found: install Debian's "
                    "package (apt-get install chromium) or set CHROMIUM=/path/to/chromium; .ci/run installs it")
    return exe


def run_chromium(tmp_path, *args, timeout=180) -> subprocess.CompletedProcess:
    cmd = [chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
           "--no-first-run", "--disable-extensions", f"--user-data-dir={tmp_path / 'profile'}", *args]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    assert r.returncode == 0, f"chromium failed ({r.returncode}): {r.stderr[-2000:]}"
    return r


class Dom(HTMLParser):
    """The elements of a dumped DOM, with their attributes and text, in document order."""

    def __init__(self):
        super().__init__()
        self.elements = []
        self._stack = []

    def handle_starttag(self, tag, attrs):
        el = {"tag": tag, "attrs": dict(attrs), "text": "", "parents": [e["tag"] + "." + e["attrs"].get("class", "")
                                                                          + "#" + e["attrs"].get("id", "")
                                                                          for e in self._stack]}
        self.elements.append(el)
        if tag not in ("meta", "br", "line", "circle", "rect", "path", "input", "img", "link"):
            self._stack.append(el)

    def handle_endtag(self, tag):
        for i in range(len(self._stack) - 1, -1, -1):
            if self._stack[i]["tag"] == tag:
                del self._stack[i:]
                break

    def handle_data(self, data):
        for el in self._stack:
            el["text"] += data

    def find(self, tag=None, cls=None, **attrs):
        res = []
        for e in self.elements:
            if tag and e["tag"] != tag:
                continue
            if cls and cls not in e["attrs"].get("class", "").split():
                continue
            if any(e["attrs"].get(k.replace("_", "-")) != v for k, v in attrs.items()):
                continue
            res.append(e)
        return res


@pytest.fixture(scope="module")
def rendered(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("report")
    with open(FIXTURE) as f:
        doc = json.load(f)
    page = tmp / "report.html"
    page.write_text(report.render_html(doc), encoding="utf-8")
    r = run_chromium(tmp, "--dump-dom", page.as_uri())
    dom = Dom()
    dom.feed(r.stdout)
    return doc, dom, tmp, page


def test_scripts_ran_and_counted_every_plotted_point(rendered):
    doc, dom, _, _ = rendered
    [body] = dom.find("body")
    assert body["attrs"].get("data-ready") == "1", "the report's script did not run to its end"
    marks = dom.find("circle", "pt") + dom.find("rect", "bar") + dom.find("rect", "seg")
    assert int(body["attrs"]["data-points"]) == len(marks) > 0
    # The table of contents exists only once the script has built it: one link per section.
    toc_links = [e for e in dom.find("a") if any(p.startswith("nav.") and p.endswith("#toc") for p in e["parents"])]
    sections = [e for e in dom.find("h2") if e["attrs"].get("id")]
    assert len(toc_links) == len(sections) >= len(doc["programs"]) + 3
    assert [a["attrs"]["href"] for a in toc_links] == ["#" + h["attrs"]["id"] for h in sections]


def test_cpu_device_banner_machine_and_versions(rendered):
    doc, dom, _, _ = rendered
    [banner] = dom.find(id="device-banner")
    assert "CPU REFERENCE DEVICE" in banner["text"] and "NOT a GPU" in banner["text"]
    assert doc["device"]["name"] in banner["text"]
    [machine] = dom.find("table", "machine")
    m = doc["machine"]
    for fact in (m["cpu"], m["python"], m["numpy"], m["numba"], m["numba_metal"], doc["device"]["name"]):
        assert fact in machine["text"], fact


def test_summary_table_has_one_row_per_case_with_verdicts(rendered):
    doc, dom, _, _ = rendered
    cases = [c for p in doc["programs"] if p.get("comparison") != "compile" for c in p["cases"]]
    [table] = dom.find("table", "summary")
    rows = [e for e in dom.find("tr") if any(p.startswith("table.sortable summary") for p in e["parents"])
            and not any(p.startswith("thead") for p in e["parents"])]
    assert len(rows) == len(cases)
    verdicts = ("wins end to end", "wins only with data already on the device", "about even", "loses")
    assert all(any(v in r["text"] for v in verdicts) for r in rows)
    assert len(dom.find("table", "cases")) == sum(
        len({c["variant"] for c in p["cases"]}) for p in doc["programs"] if p.get("comparison") != "compile")


def test_speedup_plots_carry_the_speedups_of_the_json(rendered):
    doc, dom, _, _ = rendered
    prog = next(p for p in doc["programs"] if p["name"] == "vector_polynomial")
    for which in ("kernel", "e2e"):
        [chart] = dom.find("svg", "chart", id=f"speedup-{which}-vector-polynomial-default")
        assert chart["attrs"]["data-kind"] == "line"
        pts = [e for e in dom.find("circle", "pt") if f"svg.chart#speedup-{which}-vector-polynomial-default"
               in e["parents"]]
        for base, label in (("numpy", "vs NumPy"), ("numba_parallel", "vs Numba parallel=True")):
            got = sorted((float(e["attrs"]["data-x"]), float(e["attrs"]["data-y"])) for e in pts
                         if e["attrs"]["data-series"] == label)
            want = sorted((c["x"], c["speedups"][which][base]) for c in prog["cases"])
            assert len(got) == len(want) >= 2
            for (gx, gy), (wx, wy) in zip(got, want):
                assert gx == pytest.approx(wx) and gy == pytest.approx(wy, rel=1e-5)


def test_every_program_has_its_charts(rendered):
    doc, dom, _, _ = rendered
    charts = dom.find("svg", "chart")
    ids = {c["attrs"].get("id") for c in charts}
    for p in doc["programs"]:
        slug = p["name"].replace("_", "-")
        if p.get("comparison") == "compile":
            [bars] = [c for c in charts if (c["attrs"].get("id") or "").startswith("compile-")]
            bar_marks = [e for e in dom.find("rect", "bar") if any(q.endswith("#" + bars["attrs"]["id"])
                                                                   for q in e["parents"])]
            assert {b["attrs"]["data-series"] for b in bar_marks} >= {
                "numba-metal, shared device functions", "Numba @njit (CPU), shared helpers"}
            continue
        for v in sorted({c["variant"] for c in p["cases"]}):
            vslug = v.replace("_", "-")
            for kind in ("speedup-kernel", "speedup-e2e", "coldwarm", "split"):
                assert f"{kind}-{slug}-{vslug}" in ids, (kind, p["name"], v)
            cold = [e for e in dom.find("rect", "bar") if any(q.endswith(f"#coldwarm-{slug}-{vslug}")
                                                              for q in e["parents"])]
            n = len([c for c in p["cases"] if c["variant"] == v])
            assert len(cold) == 3 * n  # cold, warm kernel, warm end to end per size
            segs = [e for e in dom.find("rect", "seg") if any(q.endswith(f"#split-{slug}-{vslug}")
                                                              for q in e["parents"])]
            assert {s["attrs"]["data-series"] for s in segs} >= {"compile: device compiler", "kernel", "upload"}


def test_screenshot_is_a_rendered_page(rendered):
    _, _, tmp, page = rendered
    shot = tmp / "shot.png"
    run_chromium(tmp, "--hide-scrollbars", f"--screenshot={shot}", "--window-size=1280,1800", page.as_uri())
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", data[16:24])
    assert (width, height) == (1280, 1800)
    assert len(data) > 40_000, "the screenshot looks blank"
