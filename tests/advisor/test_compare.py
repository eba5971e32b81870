"""advisor compare: exit codes and verdicts on the sample workloads (CPU reference device)."""
import pytest

from numba_metal.advisor import compare
from numba_metal.advisor.schema import validate

from advisor_paths import sample

FAST = ("--warmup", "1", "--repeats", "3", "--steady-batches", "2", "--steady-calls", "3")


def test_matching_faster_workload_is_recommended(run_cli, run_json):
    code, doc, _ = run_json("compare", sample("compare", "match.py"), *FAST)
    assert code == 0
    validate(doc)
    assert doc["correctness"]["status"] == "pass"
    assert doc["device"]["kind"] == "cpu" and "not a GPU" in doc["device"]["note"]
    assert doc["recommendation"]["verdict"] == "USE_METAL"  # a pure-Python loop vs one launch
    assert doc["per_call"]["launches"] == 1 and doc["compiles_after_warmup"] == 0
    for regime in ("cold_stats", "warm", "steady"):
        for side in ("cpu", "metal"):
            s = doc[regime][side]
            assert s["min_s"] <= s["median_s"] <= s["max_s"]
    assert doc["warm"]["cpu"]["n"] == 3 and doc["steady"]["metal"]["n"] == 2


def test_mismatch_exits_1_and_times_nothing(run_cli):
    code, out, _ = run_cli("compare", sample("compare", "mismatch.py"), "--format", "text")
    assert code == 1
    assert "Correctness: FAIL" in out and "DO_NOT_USE_METAL" in out
    assert "CPU reference device" in out and "not a GPU" in out
    assert "Time per call" not in out


def test_tolerances_and_cold_runs(run_json):
    # The buggy kernel is off by exactly 1: within atol=1.5 it passes.
    code, doc, _ = run_json("compare", sample("compare", "mismatch.py"), "--atol", "1.5", "--rtol", "0",
                            "--cold-runs", "2", "--warmup", "1", "--repeats", "1", "--steady-batches", "1",
                            "--steady-calls", "1")
    assert code == 0 and doc["correctness"]["status"] == "pass"
    assert doc["settings"]["atol"] == 1.5 and len(doc["cold"]) == 2 and doc["cold_stats"]["metal"]["n"] == 2


def test_slower_workload_keeps_cpu(run_json):
    code, doc, _ = run_json("compare", sample("compare", "slower.py"), *FAST)
    assert code == 0
    assert doc["recommendation"]["verdict"] == "KEEP_CPU"
    assert doc["per_call"]["launches"] == 20
    assert doc["break_even_calls"] is None


def test_compiling_on_every_call_is_reported(run_json):
    code, doc, _ = run_json("compare", sample("compare", "recompiles.py"), "--warmup", "1", "--repeats", "1",
                            "--steady-batches", "1", "--steady-calls", "1")
    assert code == 0 and doc["compiles_after_warmup"] > 0
    assert any("compiles on every call" in n for n in doc["notes"])


def test_script_without_the_protocol_is_a_usage_error(run_cli):
    code, _, err = run_cli("compare", sample("compare", "no_protocol.py"))
    assert code == 2 and "advisor_workload()" in err


def test_device_time_is_the_union_of_launch_intervals():
    from numba_metal.advisor.runner import union_ns
    assert union_ns([(0, 10), (5, 20), (30, 40)]) == 30


def test_compare_results_tolerances():
    import numpy as np
    a = np.array([1.0, 2.0, np.nan], np.float32)
    assert compare.compare_results(a, a + 1e-6, 1e-5, 0)["status"] == "pass"
    r = compare.compare_results(a, a + 1e-3, 1e-5, 1e-4)
    assert r["status"] == "fail" and r["compared"][0]["mismatched"] == 2
    assert compare.compare_results({"x": a, "y": 3}, {"x": a, "y": 3}, 0, 0)["status"] == "pass"
    assert compare.compare_results(a, a[:2], 0, 0)["status"] == "fail"


def test_recommendation_rules_and_break_even():
    assert compare.recommend(False, 10.0)["verdict"] == "DO_NOT_USE_METAL"
    assert compare.recommend(True, 1.2)["verdict"] == "USE_METAL"
    assert compare.recommend(True, 1.0)["verdict"] == "INCONCLUSIVE"
    assert compare.recommend(True, 0.5)["verdict"] == "KEEP_CPU"
    # 1 s of extra first-call cost, 0.1 s saved per call: numba-metal is ahead from the 11th call.
    assert compare.break_even_calls(0.0, 1.0, 0.2, 0.1) == 11
    assert compare.break_even_calls(0.0, 1.0, 0.1, 0.2) is None


@pytest.mark.parametrize("flag", ["--warmup", "--repeats", "--steady-batches", "--steady-calls", "--cold-runs"])
def test_counts_must_be_positive(run_cli, flag):
    with pytest.raises(SystemExit) as e:
        run_cli("compare", sample("compare", "match.py"), flag, "0")
    assert e.value.code == 2
