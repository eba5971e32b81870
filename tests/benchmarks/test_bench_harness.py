"""The benchmark harness: the results schema, correctness checks before timing, the compile guard,
deterministic reports, the runner end to end (one tiny program, cold run included), and that
docs/benchmarking.md quotes only what report.py renders from the committed results."""

import json
import os
import re
import subprocess
import sys

import numpy as np
import pytest

from bench_paths import BENCH, FIXTURE, ROOT, load

bc = load("bench_common")
report = load("report")


def _fixture():
    with open(FIXTURE) as f:
        return json.load(f)


def test_fixture_follows_the_schema():
    doc = _fixture()
    assert bc.validate_document(doc) == []
    assert doc["device"]["kind"] == "cpu" and doc["device"]["is_gpu"] is False
    for p in doc["programs"]:
        for c in p["cases"]:
            assert c["correct"], (p["name"], c["id"])


def test_schema_validation_catches_a_timed_failure_and_a_bad_timing():
    doc = _fixture()
    case = next(c for p in doc["programs"] if p["name"] == "vector_polynomial" for c in p["cases"])
    case["checks"]["numpy"]["ok"] = False
    case["timings"]["numba_1t"]["min_ns"] = case["timings"]["numba_1t"]["max_ns"] + 1
    del doc["device"]["kind"]
    problems = bc.validate_document(doc)
    assert any("numpy is timed although its check failed" in p for p in problems)
    assert any("numba_1t has min <= median <= max violated" in p for p in problems)
    assert any("device lacks 'kind'" in p for p in problems)


def test_near_integer_check_allows_a_few_off_by_one_and_nothing_larger():
    ref = np.zeros(10_000, np.int32)
    out = ref.copy()
    out[:10] += 1  # 0.1%
    assert bc.check_near_integer(out, ref, max_off_by_one_fraction=0.001)["ok"]
    out[10] += 1
    assert not bc.check_near_integer(out, ref, max_off_by_one_fraction=0.001)["ok"]
    out = ref.copy()
    out[0] = 2
    chk = bc.check_near_integer(out, ref, max_off_by_one_fraction=0.001)
    assert not chk["ok"] and chk["off_by_more"] == 1


def test_allclose_check_reports_errors_and_rejects_nan():
    ref = np.linspace(1, 2, 100)
    chk = bc.check_allclose(ref * (1 + 1e-7), ref, rtol=1e-6, atol=0)
    assert chk["ok"] and chk["max_rel_err"] < 2e-7
    bad = ref.copy()
    bad[3] = np.nan
    assert not bc.check_allclose(bad, ref, rtol=1e-3, atol=1e-3)["ok"]
    assert not bc.check_allclose(ref[:5], ref, rtol=1, atol=1)["ok"]


def test_an_implementation_that_fails_its_check_is_never_timed():
    case = bc.Case(variant="default", size="4", x=4, params={}, setup=lambda: np.arange(4.0),
                   reference=lambda a: a * 2,
                   check=lambda out, ref: bc.check_allclose(out, ref, rtol=1e-9, atol=0),
                   baselines={"numpy": lambda a: a * 2, "numba_1t": lambda a: a * 3,
                              "python": "not for this case"})
    prog = bc.Program(name="t", title="t", summary="t", x_axis="n", variants={"default": ""}, cases=lambda q: [case])
    opts = bc.RunOptions(cold=False, policy=bc.TimingPolicy(warmups=0, min_repeats=3, max_repeats=3, budget_s=0))
    rec = bc.run_case(prog, case, opts, {})
    assert rec["checks"]["numpy"]["ok"] and "numpy" in rec["timings"]
    assert rec["timings"]["numpy"]["repeats"] == 3
    assert not rec["checks"]["numba_1t"]["ok"] and "numba_1t" not in rec["timings"]
    assert rec["skipped"]["python"] == "not for this case"
    assert rec["correct"] is False


def test_a_compile_inside_a_timed_region_is_an_error():
    from numba_metal import metal

    @metal.jit
    def fill(out, v):
        i = metal.grid(1)
        if i < out.size:
            out[i] = v

    out = metal.device_array(8, np.float32)
    fill[1, 8](out, np.float32(1))  # compiled for float32 here
    calls = iter([np.float32(2), np.float32(3), np.int64(4)])  # the int64 call needs a new specialisation
    with pytest.raises(bc.CompileInTimedRegion, match="fill"):
        bc.time_repeats(lambda: fill[1, 8](out, next(calls)),
                        bc.TimingPolicy(warmups=0, min_repeats=3, max_repeats=3, budget_s=0),
                        sync=metal.synchronize)


def test_stats_are_median_min_max_of_the_samples():
    st = bc.stats([5, 1, 3, 9, 7], warmups=2)
    assert (st["median_ns"], st["min_ns"], st["max_ns"], st["repeats"], st["warmups"]) == (5, 1, 9, 5, 2)
    assert st["samples_ns"] == [5, 1, 3, 9, 7]


def test_report_is_deterministic_and_self_contained():
    doc = _fixture()
    a, b = report.render_html(doc), report.render_html(json.loads(json.dumps(doc)))
    assert a == b
    assert report.render_markdown(doc, "x.json") == report.render_markdown(doc, "x.json")
    # Opens offline: no external scripts, styles, images or fonts.
    assert not re.search(r'(src|href)\s*=\s*"(https?:)?//', a)
    assert "@import" not in a and "url(" not in a
    assert "NOT a GPU" in a


def test_report_banner_follows_the_device_kind():
    doc = _fixture()
    doc["device"].update(kind="metal", is_gpu=True, name="Apple M4 Pro")
    html = report.render_html(doc)
    assert "Metal GPU" in html and "CPU REFERENCE DEVICE" not in html


def test_run_all_quick_only_one_program_end_to_end(tmp_path):
    out = tmp_path / "r.json"
    # The switches on, as a user's environment may have them: the benchmarks still do not warn.
    env = dict(os.environ, NUMBA_METAL_DEVICE="cpu", NUMBA_METAL_LOW_OCCUPANCY_WARNINGS="1",
               NUMBA_METAL_WARN_ON_IMPLICIT_COPY="1")
    r = subprocess.run([sys.executable, os.path.join(BENCH, "run_all.py"), "--quick", "--only", "vector_polynomial",
                        "--size", "10,000", "--budget", "0.05", "--json", str(out)],
                       capture_output=True, text=True, env=env, timeout=300, cwd=ROOT)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    assert "CPU REFERENCE DEVICE" in r.stdout and "vector_polynomial" in r.stdout
    assert "(1/1) vector_polynomial" in r.stderr  # progress lines
    assert "Warning" not in r.stderr, r.stderr
    doc = json.loads(out.read_text())
    assert bc.validate_document(doc) == []
    [prog] = doc["programs"]
    [case] = prog["cases"]
    assert case["id"] == "default/10,000" and case["correct"]
    assert case["device"].startswith("CPU reference device") and case["device"].endswith("(cpu)")
    for name in ("python", "numpy", "numba_1t", "numba_parallel", "metal_kernel", "metal_e2e", "metal_h2d",
                 "metal_d2h"):
        assert case["timings"][name]["repeats"] >= 3, name
    assert set(case["checks"]) == {"python", "numpy", "numba_1t", "numba_parallel", "metal"}
    assert all(chk["ok"] for chk in case["checks"].values())
    cold = case["cold"]
    assert cold["correct"] and cold["compiled_fresh"] and cold["kernels"] == ["poly_kernel"]
    assert cold["cold_ns"] > cold["compile_ns"] > 0 and cold["method"] == "fresh subprocess"
    assert case["speedups"]["kernel"]["numpy"] == pytest.approx(
        case["timings"]["numpy"]["median_ns"] / case["timings"]["metal_kernel"]["median_ns"])
    html = report.render_html(doc)
    assert "Vector polynomial" in html and 'class="pt"' in html


def test_benchmarking_doc_quotes_the_committed_results_verbatim():
    """Every figure in docs/benchmarking.md's generated block is what report.py renders from the JSON
    it names; nothing is typed in by hand."""
    with open(os.path.join(ROOT, "docs", "benchmarking.md")) as f:
        text = f.read()
    m = re.search(r"<!-- BEGIN GENERATED: (\S+) -->\n(.*?)<!-- END GENERATED -->", text, re.S)
    assert m, "docs/benchmarking.md lacks its generated results block"
    path = m.group(1)
    with open(os.path.join(ROOT, path)) as f:
        doc = json.load(f)
    assert bc.validate_document(doc) == []
    assert m.group(2) == report.render_markdown(doc, path), (
        f"docs/benchmarking.md is out of date with {path} (or with report.py): run "
        f"python benchmarks/report.py {path} --update-doc docs/benchmarking.md")
    # Outside the block, no speedup figure (a number followed by ×) is written by hand.
    outside = text[:m.start()] + text[m.end():]
    speedup = r"\d(?:\.\d+)?\s*×(?!\s*\d)"  # "2.5×" but not a size such as "200×200×8"
    assert not re.search(speedup, outside), re.findall(".{30}" + speedup + ".{10}", outside)
