"""advisor compare: exit codes and verdicts on the sample workloads (CPU reference device)."""
import pytest

from hypothesis import given, settings
from hypothesis import strategies as st

from numba_metal.tools.advisor import compare, measure
from numba_metal.tools.advisor.schema import validate

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


def test_mismatch_exits_1_and_times_nothing(run_cli, run_json):
    code, doc, _ = run_json("compare", sample("compare", "mismatch.py"))
    assert code == 1
    validate(doc)
    assert doc["warm"] is None and doc["cold_stats"] is None
    code, out, _ = run_cli("compare", sample("compare", "mismatch.py"), "--format", "text")
    assert code == 1
    assert "Correctness: FAIL" in out and "DO_NOT_USE_METAL" in out
    assert "CPU reference device" in out and "not a GPU" in out
    assert "Time per call" not in out


def test_tolerances_and_cold_runs(run_json):
    # The buggy kernel is off by exactly 1: within atol=1.5 it passes.
    code, doc, _ = run_json("compare", sample("compare", "mismatch.py"), "--atol", "1.5", "--rtol", "0",
                            "--cold-runs", "2", "--warmup", "1", "--repeats", "1", "--steady-batches", "2",
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
                            "--steady-batches", "2", "--steady-calls", "1")
    assert code == 0 and doc["compiles_after_warmup"] > 0
    assert any("compiles on every call" in n for n in doc["notes"])


def test_script_without_the_protocol_is_a_usage_error(run_cli):
    code, _, err = run_cli("compare", sample("compare", "no_protocol.py"))
    assert code == 2 and "advisor_workload()" in err


def test_device_time_is_the_union_of_launch_intervals():
    from numba_metal.tools.advisor.runner import union_ns
    assert union_ns([(0, 10), (5, 20), (30, 40)]) == 30


def test_compare_results_tolerances():
    import numpy as np
    a = np.array([1.0, 2.0, np.nan], np.float32)
    assert compare.compare_results(a, a + 1e-6, 1e-5, 0)["status"] == "pass"
    r = compare.compare_results(a, a + 1e-3, 1e-5, 1e-4)
    assert r["status"] == "fail" and r["compared"][0]["mismatched"] == 2
    assert compare.compare_results({"x": a, "y": 3}, {"x": a, "y": 3}, 0, 0)["status"] == "pass"
    assert compare.compare_results(a, a[:2], 0, 0)["status"] == "fail"


def test_break_even():
    # 1 s of extra first-call cost, 0.1 s saved per call: numba-metal is ahead from the 11th call.
    assert compare.break_even_calls(0.0, 1.0, 0.2, 0.1) == 11
    assert compare.break_even_calls(0.0, 1.0, 0.1, 0.2) is None


# -- confidence intervals and the verdict, from fixed timings ----------------------------------------

# Two-sided 95% Student-t quantiles, as tabulated (NIST/SEMATECH e-Handbook of Statistical Methods,
# table 1.3.6.7.2, upper-tail 0.025).
T_TABLE = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 9: 2.262, 10: 2.228, 15: 2.131,
           20: 2.086, 30: 2.042, 40: 2.021, 60: 2.000, 100: 1.984}


def test_t_quantiles_match_the_table():
    for df, t in T_TABLE.items():
        assert round(measure.t_quantile(df), 3) == t, df
    assert abs(measure.t_quantile(5000) - 1.95996) < 1e-3  # tends to the normal quantile


def test_t_probability_closed_forms():
    import math
    for t in (0.3, 1.0, 4.0):
        assert math.isclose(measure.t_central_probability(t, 1), 2 / math.pi * math.atan(t))  # Cauchy
        assert math.isclose(measure.t_central_probability(t, 2), t / math.sqrt(2 + t * t))


def test_stats_give_the_student_t_interval_of_the_mean():
    s = measure.stats([1.0, 2.0, 3.0, 4.0, 5.0])  # mean 3, sd sqrt(2.5), t(4) = 2.7764
    half = 2.7764451 * 2.5 ** 0.5 / 5 ** 0.5
    assert s["mean_s"] == 3.0 and abs(s["ci_low_s"] - (3 - half)) < 1e-6 and abs(s["ci_high_s"] - (3 + half)) < 1e-6
    one = measure.stats([2.0])
    assert one["ci_low_s"] is None and one["ci_high_s"] is None


def verdict(cpu, metal):
    return compare.recommend(True, measure.stats(cpu), measure.stats(metal))


def test_a_clear_difference_gives_a_verdict():
    cpu = [10.0, 10.2, 9.9, 10.1, 10.0]
    fast = [5.0, 5.1, 4.9, 5.0, 5.05]
    r = verdict(cpu, fast)
    assert r["verdict"] == "USE_METAL" and r["rule"] == "faster-and-correct" and r["rounds_needed"] is None
    lo, hi = compare.speedup_interval(measure.stats(cpu), measure.stats(fast))
    assert 1.9 < lo < 2.0 < hi < 2.1 and "95% interval" in r["why"]
    r = verdict(fast, cpu)
    assert r["verdict"] == "KEEP_CPU" and r["rule"] == "slower"
    assert compare.recommend(False)["verdict"] == "DO_NOT_USE_METAL"


def test_a_ratio_within_the_noise_is_inconclusive_and_says_how_many_rounds_would_settle_it():
    """Issue 17, item 11: a 2x ratio of means from timings spread over 100-300% is no verdict."""
    cpu = [2.0, 6.0, 3.0, 7.5, 2.5]      # mean 4.2
    metal = [1.0, 3.5, 1.2, 3.0, 1.1]    # mean 1.96: 2.14x, but both spread over 200%
    c, m = measure.stats(cpu), measure.stats(metal)
    assert 2.1 < c["mean_s"] / m["mean_s"] < 2.2 and compare.intervals_overlap(c, m)
    r = verdict(cpu, metal)
    assert r["verdict"] == "INCONCLUSIVE" and r["rule"] == "intervals-overlap"
    n = r["rounds_needed"]
    assert f"About {n} rounds (--steady-batches {n})" in r["why"]
    # n is the first number of rounds at which the intervals would separate, were mean and spread to stay.
    import statistics
    gap = statistics.fmean(cpu) - statistics.fmean(metal)
    spread = statistics.stdev(cpu) + statistics.stdev(metal)
    width = lambda k: measure.t_quantile(k - 1) * spread / k ** 0.5  # noqa: E731
    assert width(n) < gap <= width(n - 1)
    lo, hi = compare.speedup_interval(c, m)
    assert lo < 1 < hi


def test_more_rounds_cannot_settle_a_difference_within_the_margin():
    r = verdict([1.00, 1.20, 0.90, 1.10, 1.05], [0.98, 1.18, 0.91, 1.07, 1.04])
    assert r["verdict"] == "INCONCLUSIVE" and r["rounds_needed"] is None and "would not change" in r["why"]
    r = verdict([1.03, 1.0301, 1.0302, 1.0299], [1.0, 1.0001, 1.0002, 0.9999])  # separate, but only 3% apart
    assert r["verdict"] == "INCONCLUSIVE" and r["rule"] == "within-margin"


def test_an_interval_reaching_zero_has_no_upper_speedup_bound():
    interval = compare.speedup_interval(measure.stats([1.0, 1.1, 0.9]), measure.stats([0.01, 0.5, 0.01]))
    assert interval[1] is None and interval[0] > 0


@settings(max_examples=300, deadline=None)
@given(st.lists(st.floats(1e-6, 1.0), min_size=2, max_size=8), st.lists(st.floats(1e-6, 1.0), min_size=2, max_size=8))
def test_the_speedup_interval_contains_1_exactly_when_the_time_intervals_overlap(cpu, metal):
    c, m = measure.stats(cpu), measure.stats(metal)
    lo, hi = compare.speedup_interval(c, m)
    assert compare.intervals_overlap(c, m) == (lo <= 1 and (hi is None or hi >= 1))


@pytest.mark.parametrize("flag", ["--warmup", "--repeats", "--steady-batches", "--steady-calls", "--cold-runs"])
def test_counts_must_be_positive(run_cli, flag):
    with pytest.raises(SystemExit) as e:
        run_cli("compare", sample("compare", "match.py"), flag, "0")
    assert e.value.code == 2


def test_a_confidence_interval_needs_two_steady_rounds(run_cli, capsys):
    with pytest.raises(SystemExit) as e:
        run_cli("compare", sample("compare", "match.py"), "--steady-batches", "1")
    assert e.value.code == 2 and "at least 2" in capsys.readouterr().err
