"""The parts of tools/numba_cuda_tests.py (issue 27's runner of numba-cuda's own tests) that need no download:
argument parsing, the module lists, the impossible-on-Metal table's shape, how outcomes are counted and the
report. The runner itself is a separate command (docs/testing.md), not part of this suite."""

import importlib.util
import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOOLS = os.path.join(ROOT, "tools")


def _load(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def runner():
    sys.path.insert(0, TOOLS)
    try:
        yield _load("numba_cuda_tests", os.path.join(TOOLS, "numba_cuda_tests.py"))
    finally:
        sys.path.remove(TOOLS)


@pytest.fixture(scope="module")
def plugin(runner):
    sys.path.insert(0, TOOLS)
    try:
        yield importlib.import_module("numba_cuda_standin.plugin")
    finally:
        sys.path.remove(TOOLS)


def test_arguments(runner):
    args = runner.parse_args([])
    assert (args.tier, args.module, args.json, args.from_json) == ("all", [], None, None)
    args = runner.parse_args(["--tier", "1", "--module", "test_sm", "--module", "cudapy/test_sync",
                              "--json", "out.json", "--timeout", "30"])
    assert (args.tier, args.module, args.json, args.timeout) == ("1", ["test_sm", "cudapy/test_sync"],
                                                                 "out.json", 30.0)
    assert runner.parse_args(["--tier", "3"]).tier == "3"        # the widened list
    with pytest.raises(SystemExit):
        runner.parse_args(["--tier", "4"])


def test_module_lists(runner):
    # issue 27's lists: 28 tier-1 modules (cudapy/), 29 tier-2 (13 cudapy/, 10 doc_examples/: the seven of the
    # tier list and the other three its "done when" names, laplace, sessionize, cpu_gpu_compat; 6 cudadrv/)
    assert len(runner.select_modules("1", [])) == 28
    tier2 = runner.select_modules("2", [])
    assert [sum(f == folder for _, f, _ in tier2) for folder in ("cudapy", "doc_examples", "cudadrv")] == [13, 10, 6]
    assert len(runner.select_modules("all", [])) == 57          # "all" is issue 27's two tiers, its goal's ratio
    assert len(runner.select_modules("3", [])) == 39            # the widened list: the rest of cudapy/'s modules
    tiers12 = {(folder, m) for _, folder, m in runner.select_modules("all", [])}
    assert not tiers12 & {(folder, m) for _, folder, m in runner.select_modules("3", [])}
    # test_random and test_reduction are in cudapy/ and doc_examples/: a bare name picks both, a folder one
    assert [(t, f) for t, f, _ in runner.select_modules("all", ["test_random"])] == [("1", "cudapy"),
                                                                                    ("2", "doc_examples")]
    assert runner.select_modules("all", ["doc_examples/test_random"]) == [("2", "doc_examples", "test_random")]
    with pytest.raises(SystemExit, match="test_nonexistent"):
        runner.select_modules("all", ["test_nonexistent"])
    with pytest.raises(SystemExit, match="test_math"):
        runner.select_modules("1", ["test_math"])      # a tier-2 module asked of tier 1


def test_impossible_table_shape(runner):
    table = runner.impossible
    assert set(table.REASONS) == {"atomics64", "grid_sync", "ptx_link", "driver"}
    for pattern, key in table.IMPOSSIBLE:
        assert key in table.REASONS, pattern
        folder, _, rest = pattern.partition("/")
        assert folder in ("cudapy", "cudadrv", "doc_examples") and ".py::" in rest, pattern
    assert len({pattern for pattern, _ in table.IMPOSSIBLE}) == len(table.IMPOSSIBLE), "a pattern twice"
    for key in table.REASONS:
        assert table.parse_skip_reason(table.skip_reason(key)) == key
    assert table.parse_skip_reason("requires cc >= 9.0") is None
    assert table.parse_skip_reason(table.SKIP_PREFIX + " [nonsense]: x") is None


def test_reason_for_matches_patterns(runner, monkeypatch):
    table = runner.impossible
    monkeypatch.setattr(table, "IMPOSSIBLE", (("cudapy/test_atomics.py::*::test_atomic_*64", "atomics64"),))
    assert table.reason_for("cudapy/test_atomics.py::TestCudaAtomics::test_atomic_inc_64") == "atomics64"
    assert table.reason_for("cudapy/test_atomics.py::TestCudaAtomics::test_atomic_inc_32") is None


def _events(*records):
    out = []
    for test, outcome, when, extra in records:
        out.append({"start": test})
        out.append(dict({"test": test, "when": when, "outcome": outcome}, **extra))
    return out


def test_summarize_counts_each_outcome(runner, monkeypatch):
    table = runner.impossible
    monkeypatch.setattr(table, "IMPOSSIBLE", (("cudapy/m.py::T::test_listed", "grid_sync"),))
    events = _events(("cudapy/m.py::T::test_ok", "passed", "call", {}),
                     ("cudapy/m.py::T::test_bad", "failed", "call", {"message": "AssertionError: 1 != 2"}),
                     ("cudapy/m.py::T::test_setup", "failed", "setup", {"message": "RuntimeError: x"}),
                     ("cudapy/m.py::T::test_skip", "skipped", "setup", {"message": "requires cc >= 9.0"}),
                     ("cudapy/m.py::T::test_ptx", "skipped", "setup",
                      {"message": table.skip_reason("ptx_link")}),
                     ("cudapy/m.py::T::test_listed", "failed", "call", {"message": "boom"}),
                     ("cudapy/m.py::T::test_xf", "skipped", "call", {"xfail": True, "message": "expected"}))
    events.append({"collect_error": "cudapy/n.py", "message": "ImportError: no foo"})
    events.append({"start": "cudapy/m.py::T::test_hangs"})
    result = runner.summarize(events, runner.TIMED_OUT)
    assert result["counts"] == {"passed": 1, "failed": 1, "errors": 3, "impossible": 2, "skipped": 1,
                                "xfailed": 1}
    assert result["impossible"] == {"ptx_link": 1, "grid_sync": 1}
    assert ("cudapy/m.py::T::test_hangs", "timed out (the module was stopped)") in result["failures"]
    assert ("cudapy/n.py", "module does not import: ImportError: no foo") in result["failures"]
    assert runner.ratio(result["counts"]) == pytest.approx(1 / 5)
    assert runner.ratio(dict.fromkeys(runner.OUTCOMES, 0)) is None


def test_report_table_and_causes(runner):
    def result(passed, failed, failures):
        counts = dict.fromkeys(runner.OUTCOMES, 0)
        counts.update(passed=passed, failed=failed, impossible=2)
        return {"counts": counts, "impossible": {"atomics64": 2}, "failures": failures, "timed_out": False}
    results = {"1:cudapy/test_a": result(3, 1, [("cudapy/test_a.py::T::t1", "TypeError: got 12 at 0x7f00")]),
               "1:cudapy/test_b": result(1, 1, [("cudapy/test_b.py::T::t2", "TypeError: got 7 at 0x8e00\nmore")])}
    table = runner.format_table(results).splitlines()
    assert table[2] == "| 1 | cudapy/test_a | 3 | 1 | 0 | 2 (2 atomics64) | 0 / 0 | 75% |"
    assert table[-1] == "| **1** | **total** | **4** | **2** | **0** | **4** | **0 / 0** | **67%** |"
    # numbers and addresses are folded, so both failures are one cause
    assert runner.failure_causes(results) == [(2, "TypeError: got N at N", ["cudapy/test_a.py::T::t1",
                                                                           "cudapy/test_b.py::T::t2"])]


def test_cause_drops_location_module_and_numbers(runner):
    # the same numba-metal refusal from two modules is one cause
    a = runner.cause("numba_metal.errors.UnsupportedFeatureError: /tmp/c/numba/cuda/tests/cudapy/test_sm.py:41: "
                     "slicing is not supported inside Metal kernels\n  more")
    b = runner.cause("numba_metal.errors.UnsupportedFeatureError: /x/cudapy/test_array_methods.py:13: "
                     "slicing is not supported inside Metal kernels")
    assert a == b == "UnsupportedFeatureError: slicing is not supported inside Metal kernels"
    assert runner.cause("AssertionError: 3 != 4") == "AssertionError: N != N"
    assert runner.cause("") == ""


def test_alias_table(plugin):
    assert plugin.alias_of("numba.cuda.core.errors") == "numba.core.errors"
    assert plugin.alias_of("numba.cuda.random") == "numba_metal.random"
    assert plugin.alias_of("numba.cuda.corex") is None
    assert plugin.alias_of("numba.cuda.tests.support") is None
    assert plugin.test_id("numba/cuda/tests/cudapy/test_sm.py::T::t") == "cudapy/test_sm.py::T::t"


FAKE_MODULE = '''
import time

from numba import cuda
from numba.cuda.testing import CUDATestCase, skip_if_cudadevrt_missing
from numba_metal import metal


class T(CUDATestCase):
    def test_names_are_numba_metals(self):
        self.assertIs(cuda.jit, metal.jit)

    def test_fails(self):
        self.assertEqual(1, 2)

    @skip_if_cudadevrt_missing
    def test_needs_cudadevrt(self):
        raise AssertionError("must not run")

    def test_zz_hangs(self):
        time.sleep(600)

    def test_zzz_after_the_hang(self):
        pass
'''


def test_a_module_runs_through_the_stand_in_and_a_hang_costs_only_its_module(runner, tmp_path):
    # a tests tree shaped like numba-cuda's (what fetch_tests leaves), holding one module
    root = tmp_path / "numba_cuda"
    tests = root / "numba" / "cuda" / "tests"
    (tests / "cudapy").mkdir(parents=True)
    for package in (root / "numba", root / "numba" / "cuda", tests, tests / "cudapy"):
        (package / "__init__.py").write_text("")
    (tests / "support.py").write_text("from unittest import TestCase\n")
    (tests / "cudapy" / "test_fake.py").write_text(FAKE_MODULE)
    (root / "pytest.ini").write_text("[pytest]\n")
    result = runner.run_module(str(root), "cudapy", "test_fake", timeout=15)
    assert result["timed_out"]
    assert result["counts"] == {"passed": 1, "failed": 1, "errors": 1, "impossible": 1, "skipped": 0,
                                "xfailed": 0}
    assert result["impossible"] == {"grid_sync": 1}
    failures = dict(result["failures"])
    assert failures["cudapy/test_fake.py::T::test_zz_hangs"] == "timed out (the module was stopped)"
    assert "1 != 2" in failures["cudapy/test_fake.py::T::test_fails"]


def test_a_test_that_kills_its_process_is_an_error_and_the_others_still_count(runner, tmp_path):
    root = tmp_path / "numba_cuda"
    tests = root / "numba" / "cuda" / "tests"
    (tests / "cudapy").mkdir(parents=True)
    for package in (root / "numba", root / "numba" / "cuda", tests, tests / "cudapy"):
        (package / "__init__.py").write_text("")
    (tests / "cudapy" / "test_crash.py").write_text(
        "import os\n\ndef test_a_passes():\n    pass\n\ndef test_b_crashes():\n    os._exit(3)\n")
    (root / "pytest.ini").write_text("[pytest]\n")
    result = runner.run_module(str(root), "cudapy", "test_crash", timeout=60)
    assert not result["timed_out"]
    assert (result["counts"]["passed"], result["counts"]["errors"]) == (1, 1)
    assert result["failures"] == [("cudapy/test_crash.py::test_b_crashes",
                                   "the test process ended with exit status 3")]
