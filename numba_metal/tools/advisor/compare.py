"""``advisor compare``: measure a declared workload, CPU against numba-metal, correctness first.

The workload never runs in this process: :mod:`.runner` runs it in fresh processes, and this module
turns how each ended into the report or into the error of its row in the exit-code table, killing
them after ``--timeout``. Order of work (docs/advisor.md, "compare"):

1. **correctness**: one call of each side; the results are compared with
   ``numpy.isclose(metal, cpu, atol, rtol)``. On a mismatch nothing is timed and the exit code is 1.
2. the remaining ``--warmup - 1`` calls of each side, untimed; then one instrumented ``metal()`` call
   (runtime events on, untimed) counts launches, transfers and any compile; a compile there means
   the workload compiles on every call, which the report says.
3. **warm**: ``--repeats`` calls of each side, alternating, each timed alone.
4. **steady-state**: ``--steady-batches`` batches of ``--steady-calls`` back-to-back calls per side;
   the per-call time of a batch is its time divided by its calls.
5. **cold**: ``--cold-runs`` more fresh processes each load the script, run ``setup``, then time the
   first ``cpu()`` call and the first ``metal()`` call (including every compile either side does).

The recommendation reads the steady-state rounds only: the confidence intervals of both sides' mean
time per call (:mod:`.measure`) must not overlap, and the ratio of the means must clear a 5% margin.
"""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import tempfile
import time

import numpy as np

from . import roofline
from .console import View, device_line, fmt_ratio, fmt_seconds
from .measure import CONFIDENCE, rounds_to_separate, stats
from .outcomes import UsageError, WorkloadExited, WorkloadFailed, WorkloadTimeout
from .schema import new_document
from .workload import ProtocolError, check_script

#: numba-metal must be at least this much faster (steady-state means, with confidence intervals that
#: do not overlap) to be recommended; a difference within this margin either way is INCONCLUSIVE.
FASTER_MARGIN = 1.05


# ---------------------------------------------------------------------------------------------
# Results and correctness
# ---------------------------------------------------------------------------------------------

def _host(value):
    if hasattr(value, "copy_to_host"):
        return value.copy_to_host()
    return value


def flatten_result(value, name: str = "result") -> list[tuple[str, object]]:
    """(name, array-or-scalar) leaves of a result."""
    if isinstance(value, dict):
        out = []
        for k in sorted(value, key=str):
            out.extend(flatten_result(value[k], f"{name}[{k!r}]" if name != "result" else str(k)))
        return out
    if isinstance(value, (tuple, list)) and not (value and all(isinstance(v, (int, float, complex))
                                                               for v in value)):
        out = []
        for i, v in enumerate(value):
            out.extend(flatten_result(v, f"{name}[{i}]"))
        return out
    return [(name, _host(value))]


def compare_results(cpu_value, metal_value, atol: float, rtol: float) -> dict:
    """The correctness section: every leaf compared with isclose(metal, cpu)."""
    cpu_leaves = flatten_result(cpu_value)
    metal_leaves = flatten_result(metal_value)
    if all(v is None for _, v in cpu_leaves) and all(v is None for _, v in metal_leaves):
        raise ProtocolError("the workload gave no results to compare: return arrays from cpu() and metal(), "
                            "or provide cpu_result and metal_result")
    compared = []
    ok_all = True
    if [n for n, _ in cpu_leaves] != [n for n, _ in metal_leaves]:
        return {"status": "fail", "compared": [],
                "message": f"the results have different structures: cpu gives {[n for n, _ in cpu_leaves]}, "
                           f"metal gives {[n for n, _ in metal_leaves]}"}
    for (name, c), (_, m) in zip(cpu_leaves, metal_leaves):
        entry = _compare_leaf(name, c, m, atol, rtol)
        ok_all &= entry["ok"]
        compared.append(entry)
    total = sum(e["total"] for e in compared)
    bad = sum(e["mismatched"] for e in compared)
    msg = (f"all {total} element(s) match within atol={atol:g}, rtol={rtol:g}" if ok_all
           else f"{bad} of {total} element(s) differ beyond atol={atol:g}, rtol={rtol:g}")
    return {"status": "pass" if ok_all else "fail", "compared": compared, "message": msg}


def _compare_leaf(name, c, m, atol, rtol) -> dict:
    ca, ma = np.asarray(c), np.asarray(m)
    entry = {"name": name, "shape": list(ca.shape), "cpu_dtype": str(ca.dtype), "metal_dtype": str(ma.dtype),
             "mismatched": 0, "total": int(ca.size), "max_abs_err": None, "max_rel_err": None, "ok": True,
             "note": ""}
    if ca.shape != ma.shape:
        entry.update(ok=False, mismatched=int(max(ca.size, ma.size)),
                     note=f"shapes differ: cpu {ca.shape}, metal {ma.shape}")
        return entry
    if not (np.issubdtype(ca.dtype, np.number) or ca.dtype == np.bool_) or \
            not (np.issubdtype(ma.dtype, np.number) or ma.dtype == np.bool_):
        eq = ca == ma
        bad = int(np.size(eq) - np.count_nonzero(eq))
        entry.update(ok=bad == 0, mismatched=bad, note="compared for equality (not numeric)")
        return entry
    c64 = ca.astype(np.float64) if not np.iscomplexobj(ca) else ca.astype(np.complex128)
    m64 = ma.astype(np.float64) if not np.iscomplexobj(ma) else ma.astype(np.complex128)
    close = np.isclose(m64, c64, atol=atol, rtol=rtol, equal_nan=True)
    bad = int(close.size - np.count_nonzero(close))
    with np.errstate(invalid="ignore", divide="ignore"):
        diff = np.abs(m64 - c64)
        finite = np.isfinite(diff)
        if finite.any():
            entry["max_abs_err"] = float(np.max(diff[finite]))
            nz = finite & (np.abs(c64) > 0)
            if nz.any():
                entry["max_rel_err"] = float(np.max(diff[nz] / np.abs(c64[nz])))
    entry.update(ok=bad == 0, mismatched=bad)
    if ca.dtype != ma.dtype:
        entry["note"] = "dtypes differ; compared as float64"
    return entry


# ---------------------------------------------------------------------------------------------
# Running the workload (in processes of its own: runner.py)
# ---------------------------------------------------------------------------------------------

#: Output of a workload process longer than this is shown by its end only.
OUTPUT_TAIL_BYTES = 64 * 1024


def _relay_output(path: str) -> None:
    """Pass the workload process's output on to stderr (stdout carries only the report)."""
    size = os.path.getsize(path)
    with open(path, "rb") as fh:
        if size > OUTPUT_TAIL_BYTES:
            fh.seek(size - OUTPUT_TAIL_BYTES)
            sys.stderr.write(f"[{size - OUTPUT_TAIL_BYTES} bytes of the workload's output not shown]\n")
        text = fh.read().decode("utf-8", "replace")
    if text:
        sys.stderr.write(text if text.endswith("\n") else text + "\n")
        sys.stderr.flush()


def _stop(proc: subprocess.Popen) -> None:
    """Kill the workload process and every process it started (its own session)."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        proc.kill()
    proc.wait()


def run_workload(mode: str, script: str, settings: dict, deadline: float | None, timeout: float) -> dict:
    """Run runner.py's ``mode`` on ``script`` in a fresh process; its result, or the AdvisorError that
    says how it ended (see the exit-code table)."""
    with tempfile.TemporaryDirectory(prefix="numba-metal-advisor-") as tmp:
        result_path, phase_path, log_path = (os.path.join(tmp, n) for n in ("result.json", "phase.txt", "log"))
        cmd = [sys.executable, "-m", "numba_metal.tools.advisor.runner", mode, script, result_path, phase_path,
               json.dumps(settings)]
        timed_out = False
        with open(log_path, "wb") as log:
            # A session of its own, so that a timeout stops whatever the workload started too.
            proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                    start_new_session=True)
            try:
                proc.wait(None if deadline is None else max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                timed_out = True
                _stop(proc)
            except BaseException:
                _stop(proc)
                raise
        _relay_output(log_path)
        phase = _read_text(phase_path)
        if not phase and not timed_out and proc.returncode != 0:
            raise RuntimeError(f"the advisor's workload process ended with status {proc.returncode} before "
                               "starting the workload (its output is above)")
        phase = phase or "starting Python"
        if timed_out:
            raise WorkloadTimeout(f"stopped after {timeout:g} s (--timeout) during {phase}: the workload did not "
                                  "finish in time, and its processes were killed. Give it more time with --timeout "
                                  "SECONDS (0: no limit), or measure a smaller problem.")
        if not os.path.exists(result_path):
            if proc.returncode < 0:
                raise WorkloadFailed(f"the workload's process was killed by {_signal_name(-proc.returncode)} "
                                     f"during {phase}")
            raise WorkloadExited(f"the workload's process ended with status {proc.returncode} during {phase} "
                                 "without returning (os._exit()?); compare needs cpu() and metal() to return")
        with open(result_path, encoding="utf-8") as fh:
            result = json.load(fh)
    outcome = result.pop("outcome")
    if outcome == "ok":
        return result
    if outcome == "protocol":
        raise ProtocolError(result["message"])
    if outcome == "no-device":
        raise UsageError(result["message"])
    if outcome == "exited":
        raise WorkloadExited(f"the workload called sys.exit({result['code']!r}) during {result['phase']}; compare "
                             "needs cpu() and metal() to return, and the script's own main code to be under "
                             "`if __name__ == \"__main__\":` (compare runs it as __advisor__)")
    raise WorkloadFailed(f"the workload raised {result['message']} during {result['phase']}",
                         detail=result["traceback"])


def _read_text(path: str) -> str:
    try:
        with open(path, encoding="utf-8") as fh:
            return fh.read()
    except OSError:
        return ""


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def break_even_calls(cold_cpu: float, cold_metal: float, cpu_s: float, metal_s: float) -> int | None:
    """Calls after which numba-metal's total time (first call included) drops below the CPU's."""
    if metal_s >= cpu_s:
        return None
    extra = cold_metal - cold_cpu
    if extra <= 0:
        return 1
    return 1 + math.ceil(extra / (cpu_s - metal_s))


def speedup_interval(cpu: dict, metal: dict) -> list | None:
    """[low, high] of the CPU / numba-metal time ratios that both sides' confidence intervals allow:
    [cpu_low / metal_high, cpu_high / metal_low], high None when numba-metal's interval reaches 0.
    It contains 1 exactly when the two intervals overlap."""
    if cpu["ci_low_s"] is None or metal["ci_low_s"] is None:
        return None
    low = max(0.0, cpu["ci_low_s"]) / metal["ci_high_s"]
    high = cpu["ci_high_s"] / metal["ci_low_s"] if metal["ci_low_s"] > 0 else None
    return [low, high]


def intervals_overlap(cpu: dict, metal: dict) -> bool:
    return not (cpu["ci_low_s"] > metal["ci_high_s"] or metal["ci_low_s"] > cpu["ci_high_s"])


def recommend(correct: bool, cpu: dict | None = None, metal: dict | None = None) -> dict:
    """The verdict from the steady-state statistics of each side (:func:`.measure.stats`, at least two
    rounds each); see docs/advisor.md, "Verdicts"."""
    if not correct:
        return {"verdict": "DO_NOT_USE_METAL", "rule": "results-differ", "rounds_needed": None,
                "why": "numba-metal's results do not match the CPU's within the tolerances; speed is irrelevant "
                       "until they do"}
    speedup = cpu["mean_s"] / metal["mean_s"]
    level = f"{CONFIDENCE:.0%}"
    margin = f"{100 * (FASTER_MARGIN - 1):.0f}%"
    if intervals_overlap(cpu, metal):
        within = 1 / FASTER_MARGIN < speedup < FASTER_MARGIN
        rounds = None if within else rounds_to_separate(cpu["samples_s"], metal["samples_s"])
        why = (f"the {level} confidence intervals of the steady-state time per call overlap (CPU "
               f"{_interval_text(cpu)}, numba-metal {_interval_text(metal)}): the measured {speedup:.2f}x may be "
               "noise. ")
        if within:
            why += f"The times differ by less than the {margin} margin, so more rounds would not change the verdict."
        elif rounds is None:
            why += "More than 10,000 rounds would be needed to tell them apart at this level of noise."
        else:
            why += (f"About {rounds} rounds (--steady-batches {rounds}) would tell them apart if the times stay as "
                    "measured.")
        return {"verdict": "INCONCLUSIVE", "rule": "intervals-overlap", "rounds_needed": rounds, "why": why}
    interval = speedup_interval(cpu, metal)
    shown = f"{level} interval {_ratio_range(interval)}"
    if speedup >= FASTER_MARGIN:
        return {"verdict": "USE_METAL", "rule": "faster-and-correct", "rounds_needed": None,
                "why": f"results match and numba-metal is {speedup:.3g}x faster in steady state ({shown}; "
                       f"threshold {FASTER_MARGIN:.2f}x)"}
    if speedup <= 1 / FASTER_MARGIN:
        return {"verdict": "KEEP_CPU", "rule": "slower", "rounds_needed": None,
                "why": f"results match but numba-metal is slower: {1 / speedup:.3g}x the CPU's steady-state time "
                       f"(speedup {speedup:.3g}x, {shown})"}
    return {"verdict": "INCONCLUSIVE", "rule": "within-margin", "rounds_needed": None,
            "why": f"the steady-state times differ ({shown}) but by less than the {margin} margin ({speedup:.2f}x)"}


def _interval_text(side: dict) -> str:
    return f"{fmt_seconds(side['mean_s'])} +/- {fmt_seconds(side['ci_high_s'] - side['mean_s'])}"


def _ratio_range(interval: list) -> str:
    low, high = interval
    return f"{low:.3g}x to {'unbounded' if high is None else f'{high:.3g}x'}"


def run(script: str, atol: float = 1e-5, rtol: float = 1e-4, warmup: int = 2, repeats: int = 7,
        steady_batches: int = 10, steady_calls: int = 10, cold_runs: int = 1, timeout: float = 600.0) -> dict:
    from .calibrate import load as load_calibration
    check_script(script)
    script = os.path.abspath(script)
    deadline = time.monotonic() + timeout if timeout > 0 else None
    settings = {"atol": atol, "rtol": rtol, "warmup": warmup, "repeats": repeats, "steady_batches": steady_batches,
                "steady_calls": steady_calls, "cold_runs": cold_runs, "timeout_s": timeout}
    measured = run_workload("measure", script, settings, deadline, timeout)
    device, workload = measured["device"], measured["workload"]
    doc = new_document("compare", workload=workload["name"], script=os.path.basename(script), device=device,
                       settings=settings, correctness=measured["correctness"], cold=[], cold_stats=None, warm=None,
                       steady=None, per_call=None, compiles_after_warmup=0, speedup=None, speedup_interval=None,
                       break_even_calls=None, roofline=None, recommendation=None, notes=[])
    notes = doc["notes"]
    if not device["is_gpu"]:
        notes.append("Measured on numba-metal's CPU reference device, not a GPU: the numba-metal figures are "
                     "this CPU running the generated MSL. Run compare on an Apple-silicon Mac for GPU figures.")
    if doc["correctness"]["status"] == "fail":
        doc["recommendation"] = recommend(False, None)
        notes.append("Nothing was timed: correctness is checked first.")
        return doc
    cold = [run_workload("cold", script, settings, deadline, timeout) for _ in range(cold_runs)]
    doc["cold"] = cold
    doc["cold_stats"] = {"cpu": stats([c["cpu_s"] for c in cold]), "metal": stats([c["metal_s"] for c in cold])}
    if any(x["from_cache"] for c in cold for x in c["compiles"]):
        notes.append("Part of the first-call compile came from numba-metal's disk cache (as it will in your "
                     "program's later runs); a first run on a new machine compiles more.")
    per_call = measured["per_call"]
    doc["per_call"] = per_call
    doc["compiles_after_warmup"] = per_call["compiles"]
    if per_call["compiles"]:
        notes.append(f"metal() triggered {per_call['compiles']} compile event(s) on a call after warm-up: the "
                     "workload compiles on every call (e.g. it creates a new @metal.jit function each time), so every "
                     "timing below includes compile time. Create kernels once, outside the timed function.")
    if per_call["launches"] == 0:
        notes.append("metal() launched no numba-metal kernel on the instrumented call.")
    doc["warm"] = {side: stats(measured["warm"][side]) for side in ("cpu", "metal")}
    doc["steady"] = {side: stats(measured["steady"][side]) for side in ("cpu", "metal")}

    cpu, metal = doc["steady"]["cpu"], doc["steady"]["metal"]
    doc["speedup"] = cpu["mean_s"] / metal["mean_s"]
    doc["speedup_interval"] = speedup_interval(cpu, metal)
    doc["break_even_calls"] = break_even_calls(doc["cold_stats"]["cpu"]["median_s"],
                                               doc["cold_stats"]["metal"]["median_s"], cpu["mean_s"], metal["mean_s"])
    calibration = load_calibration(device)
    doc["roofline"] = roofline.classify(calibration, metal["mean_s"], per_call["launches"], per_call["device_s"],
                                        workload["flops"], workload["bytes"])
    doc["recommendation"] = recommend(True, cpu, metal)
    return doc


# ---------------------------------------------------------------------------------------------
# Rendering
# ---------------------------------------------------------------------------------------------

_VERDICT_STYLE = {"USE_METAL": "bold green", "KEEP_CPU": "bold yellow", "INCONCLUSIVE": "bold yellow",
                  "DO_NOT_USE_METAL": "bold red"}


def _fmt_err(x):
    return "-" if x is None else f"{x:.3g}"


def render(doc: dict, view: View) -> None:
    view.title(f"numba-metal advisor compare: {doc['workload']} ({doc['script']})")
    dev = doc["device"]
    view.kv([("device", f"{device_line(dev)}: {dev['note']}")])
    c = doc["correctness"]
    view.section(f"Correctness: {c['status'].upper()}")
    view.wrapped(c["message"])
    if c["compared"]:
        rows = [[e["name"], "x".join(map(str, e["shape"])) or "scalar",
                 e["cpu_dtype"] if e["cpu_dtype"] == e["metal_dtype"] else f"{e['cpu_dtype']}/{e['metal_dtype']}",
                 f"{e['mismatched']}/{e['total']}", _fmt_err(e["max_abs_err"]), _fmt_err(e["max_rel_err"]),
                 "ok" if e["ok"] else "MISMATCH"] for e in c["compared"]]
        view.table([("result", "left"), ("shape", "left"), ("dtype", "left"), ("differ", "right"),
                    ("max abs err", "right"), ("max rel err", "right"), ("", "left")], rows)
    if doc["warm"] is not None:
        view.section("Time per call")
        rows = []
        regimes = [("cold", doc["cold_stats"]), ("warm", doc["warm"]), ("steady", doc["steady"])]
        for regime, st in regimes:
            for side in ("cpu", "metal"):
                s = st[side]
                ci = "-" if s["ci_high_s"] is None else f"+/-{100 * (s['ci_high_s'] - s['mean_s']) / s['mean_s']:.0f}%"
                rows.append([regime, "numba-metal" if side == "metal" else "CPU", fmt_seconds(s["median_s"]),
                             f"{100 * s['spread']:.0f}%", fmt_seconds(s["mean_s"]), ci, str(s["n"])])
        view.table([("regime", "left"), ("side", "left"), ("median", "right"), ("spread", "right"),
                    ("mean", "right"), (f"{CONFIDENCE:.0%} CI", "right"), ("n", "right")], rows)
        st = doc["settings"]
        view.wrapped(f"cold = first call in a fresh process, compile included ({st['cold_runs']} process(es)); "
                     f"warm = {st['repeats']} single calls after {st['warmup']} warm-up call(s); steady = "
                     f"{st['steady_batches']} rounds of {st['steady_calls']} back-to-back calls per side, the side "
                     "going first alternating. spread = (max - min) / median (min and max are in --format json); CI = "
                     "half width of the Student-t confidence interval of the mean, as a share of it.", style="dim")
        compiles = [f"{x['name']} {x['stage']} {x['ms']:.1f} ms{' (from disk cache)' if x['from_cache'] else ''}"
                    for x in (doc["cold"][0]["compiles"] if doc["cold"] else [])]
        if compiles:
            view.wrapped("first-call compiles: " + "; ".join(compiles), style="dim")
        pc = doc["per_call"]
        dev_s = "n/a" if pc["device_s"] is None else fmt_seconds(pc["device_s"])
        view.kv([("per metal() call", f"{pc['launches']} launch(es), {pc['copies']} copy(ies) "
                                      f"({pc['copy_bytes']} bytes), {pc['allocs']} allocation(s), "
                                      f"{pc['waits']} wait(s), device busy {dev_s}"),
                 ("speedup", f"{fmt_ratio(doc['speedup'])} (CPU / numba-metal, steady-state means; "
                             + (f"{CONFIDENCE:.0%} interval {_ratio_range(doc['speedup_interval'])})"
                                if doc["speedup_interval"] else "no interval)")),
                 ("break-even", "never (numba-metal is not faster in steady state)"
                  if doc["break_even_calls"] is None else
                  f"after {doc['break_even_calls']} call(s) numba-metal's total time, first call included, "
                  "is below the CPU's")])
        r = doc["roofline"]
        view.kv([("roofline", f"{r['regime']}: {r['reason']}")])
    rec = doc["recommendation"]
    view.section("Recommendation")
    view.line(rec["verdict"], style=_VERDICT_STYLE[rec["verdict"]])
    view.wrapped(f"{rec['why']} (rule: {rec['rule']})")
    for n in doc["notes"]:
        view.wrapped("note: " + n, hang=6)
