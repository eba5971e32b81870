"""advisor scan: candidates, patterns, blockers, the compile check and the score, on a sample project."""
import os

import pytest

from numba_metal.tools.advisor import rules, scan
from numba_metal.tools.advisor.schema import validate

from advisor_paths import sample

PROJECT = sample("scan_project")


@pytest.fixture(scope="module")
def doc():
    return scan.scan(PROJECT)


def by_name(doc, name):
    return next(c for c in doc["candidates"] if c["qualname"] == name)


def test_scan_finds_candidates_and_follows_the_schema(doc):
    validate(doc)
    names = {c["qualname"] for c in doc["candidates"]}
    assert {"add_kernel", "exp_kernel", "dot", "saxpy", "hypot2", "double_it", "blur", "scaled_sqrt", "matmul",
            "heat_step", "estimate_pi", "careful", "Model.forward", "normalized_sum", "uses_global"} <= names
    assert "no_loops" not in names  # no loop, no decorator: not a candidate
    assert doc["files_scanned"] == 4


def test_scan_never_imports_the_scanned_files(tmp_path, monkeypatch):
    marker = tmp_path / "imported"
    monkeypatch.setenv("ADVISOR_SCAN_MARKER", str(marker))
    d = scan.scan(PROJECT, check=True)
    assert not marker.exists()
    assert any(c["qualname"] == "loop" and c["file"] == "pkg/side_effect.py" for c in d["candidates"])


def test_scan_reports_unparseable_files(doc):
    assert doc["errors"] == [{"file": "pkg/broken.py", "line": 1, "reason": "syntax-error",
                              "message": "syntax error: '(' was never closed"}]


def test_pattern_tags(doc):
    assert by_name(doc, "matmul")["tags"] == ["array-loop", "nested-loops", "reduction"]
    assert "stencil" in by_name(doc, "heat_step")["tags"]
    assert "stencil" in by_name(doc, "blur")["tags"]
    assert by_name(doc, "estimate_pi")["tags"] == ["reduction", "monte-carlo"]
    assert "prange" in by_name(doc, "scaled_sqrt")["tags"]
    assert "elementwise-math" in by_name(doc, "hypot2")["tags"]
    assert "existing-kernel" in by_name(doc, "add_kernel")["tags"]


def test_blockers_and_changes_carry_line_numbers(doc):
    careful = by_name(doc, "careful")
    assert [(b["rule"], b["line"]) for b in careful["blockers"]] == [("try", 57)]
    ns = by_name(doc, "normalized_sum")
    assert [(b["rule"], b["line"]) for b in ns["blockers"]] == [("allocation", 48), ("whole-array", 50)]
    assert ("random", 84) in [(c["rule"], c["line"]) for c in by_name(doc, "estimate_pi")["changes"]]


def test_compile_check_statuses(doc):
    assert by_name(doc, "add_kernel")["compile_check"]["status"] == "compiles"
    assert by_name(doc, "add_kernel")["compile_check"]["as_device_function"] is False
    assert by_name(doc, "dot")["compile_check"]["status"] == "compiles"
    assert by_name(doc, "hypot2")["compile_check"]["status"] == "compiles"
    saxpy = by_name(doc, "saxpy")["compile_check"]
    assert saxpy["status"] == "compiles"   # float64 is computed exactly (emulated)
    ns = by_name(doc, "normalized_sum")["compile_check"]
    assert ns["status"] == "fails" and ns["error_line"] == 48 and "numpy.zeros" in ns["error"]
    ug = by_name(doc, "uses_global")["compile_check"]
    assert ug["status"] == "unable" and "SCALE" in ug["detail"]
    assert by_name(doc, "exp_kernel")["compile_check"]["status"] == "not-checked"  # no signature
    assert by_name(doc, "blur")["compile_check"]["status"] == "not-checked"  # @stencil


def test_score_is_the_documented_formula(doc):
    for c in doc["candidates"]:
        p = c["score_parts"]
        assert c["score"] == max(0, min(100, p["parallelism"] + p["work"] + p["compatibility"] + p["blockers"]))
    assert by_name(doc, "hypot2")["score_parts"] == {"parallelism": 40, "work": 10, "compatibility": 30,
                                                     "blockers": 0}
    assert by_name(doc, "careful")["score_parts"]["blockers"] == -10
    scores = [c["score"] for c in doc["candidates"]]
    assert scores == sorted(scores, reverse=True)
    assert [c["rank"] for c in doc["candidates"]] == list(range(1, len(scores) + 1))


def test_every_blocker_and_change_rule_is_refused_by_the_compiler_today():
    """A rule whose construct the compiler accepts would be a stale rule (the earlier advisor's bug).
    The float64 change is a speed change: float64 compiles, to the emulated library."""
    import math

    import numpy as np

    from numba_metal import metal
    from numba_metal.compiler import msl
    for rule in list(rules.BLOCKERS.values()) + list(rules.CHANGES.values()):
        ns = {"np": np, "math": math, "metal": metal}
        exec(compile(rule.probe, f"<probe {rule.id}>", "exec"), ns)
        if rule.id == "float64":
            assert msl.FLOAT64 in metal.compile_msl(ns["f"], rules.FLOAT64_PROBE_SIGNATURE, device=True)
            continue
        with pytest.raises(Exception):
            metal.compile_msl(ns["f"], "void(float32[:])", device=True)


def test_constructs_the_compiler_accepts_are_not_blockers(tmp_path):
    src = ("from numba_metal import metal\n\n"
           "@metal.jit('void(float32[:])')\n"
           "def search(a):\n"
           "    i = 0\n"
           "    while True:\n"
           "        if a[i] > 3 or i > 5:\n"
           "            break\n"
           "        i += 1\n"
           "    t = (1, 2)\n"
           "    a[0] = i + t[0]\n")
    (tmp_path / "ok.py").write_text(src)
    d = scan.scan(str(tmp_path))
    (c,) = d["candidates"]
    assert c["blockers"] == [] and c["compile_check"]["status"] == "compiles"


def test_functions_defined_in_a_kernel_are_blockers_only_when_they_read_run_time_values(tmp_path):
    """A lambda or nested def reading only the kernel's constants compiles as a device function (issue 27 item
    4), one reading a value the kernel computes compiles where it is called (inlined); passed on, it does
    not, and is the `closure` blocker."""
    src = ("from numba_metal import metal\n\n"
           "@metal.jit('void(float32[:])')\n"
           "def constants(a):\n"
           "    k = 3\n"
           "    def scale(x):\n"
           "        return x * k\n"
           "    g = lambda x, y=2: x + y\n"
           "    a[0] = scale(g(a[0]))\n\n"
           "@metal.jit('void(float32[:])')\n"
           "def called(a):\n"
           "    t = a[1]\n"
           "    g = lambda x: x + t\n"
           "    a[0] = g(a[0])\n\n"
           "@metal.jit(device=True)\n"
           "def apply(g, x):\n"
           "    return g(x)\n\n"
           "@metal.jit('void(float32[:])')\n"
           "def run_time(a):\n"
           "    t = a[1]\n"
           "    a[0] = apply(lambda x: x + t, a[0])\n")
    (tmp_path / "closures.py").write_text(src)
    d = scan.scan(str(tmp_path))
    by_name = {c["qualname"]: c for c in d["candidates"]}
    assert by_name["constants"]["blockers"] == []
    assert by_name["constants"]["compile_check"]["status"] == "compiles"
    assert by_name["called"]["blockers"] == []   # only called: each call is inlined
    assert by_name["called"]["compile_check"]["status"] == "compiles"
    assert [b["rule"] for b in by_name["run_time"]["blockers"]] == ["closure"]
    assert by_name["run_time"]["compile_check"]["status"] != "compiles"


def test_scan_cli_text_json_and_output(run_cli, run_json, tmp_path):
    code, out, _ = run_cli("scan", PROJECT, "--format", "text", "--width", "80", "--no-compile-check")
    assert code == 0
    assert all(len(line) <= 80 for line in out.splitlines())
    assert "What static analysis cannot know" in out and "never a\nspeedup" in out
    assert "\x1b[" not in out
    code, d, _ = run_json("scan", PROJECT, "--no-compile-check", "--output", tmp_path)
    validate(d)
    assert all(c["compile_check"]["status"] == "not-checked" for c in d["candidates"])
    assert d["compile_check"]["enabled"] is False
    assert (tmp_path / "scan.json").exists() and (tmp_path / "scan.txt").read_text().startswith("numba-metal")


def test_scan_exclude_and_top(run_cli, run_json):
    code, d, _ = run_json("scan", PROJECT, "--no-compile-check", "--exclude", "pkg")
    assert code == 0 and d["files_scanned"] == 2 and d["errors"] == []
    code, out, _ = run_cli("scan", PROJECT, "--no-compile-check", "--top", "1", "--format", "text")
    assert out.count("\n#") == 1 and "more candidate(s) not detailed" in out


def test_scan_missing_path_is_a_usage_error(run_cli):
    code, _, err = run_cli("scan", os.path.join(PROJECT, "nope"))
    assert code == 2 and "No such file or directory" in err
