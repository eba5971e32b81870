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

The recommendation reads the steady-state medians only.
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
from .measure import stats
from .outcomes import UsageError, WorkloadExited, WorkloadFailed, WorkloadTimeout
from .schema import new_document
from .workload import ProtocolError, check_script

#: numba-metal must be at least this much faster (steady-state medians) to be recommended;
#: a difference within this margin either way is INCONCLUSIVE.
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
        cmd = [sys.executable, "-m", "numba_metal.advisor.runner", mode, script, result_path, phase_path,
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
        phase = _read_text(phase_path) or "starting Python"
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


def recommend(correct: bool, speedup: float | None) -> dict:
    if not correct:
        return {"verdict": "DO_NOT_USE_METAL", "rule": "results-differ",
                "why": "numba-metal's results do not match the CPU's within the tolerances; speed is irrelevant "
                       "until they do"}
    if speedup is None:
        return {"verdict": "INCONCLUSIVE", "rule": "not-measured", "why": "no timing was made"}
    if speedup >= FASTER_MARGIN:
        return {"verdict": "USE_METAL", "rule": "faster-and-correct",
                "why": f"results match and numba-metal is {speedup:.2f}x faster in steady state "
                       f"(threshold {FASTER_MARGIN:.2f}x)"}
    if speedup <= 1 / FASTER_MARGIN:
        return {"verdict": "KEEP_CPU", "rule": "slower",
                "why": f"results match but numba-metal is slower: {1 / speedup:.2f}x the CPU's steady-state time"}
    return {"verdict": "INCONCLUSIVE", "rule": "within-margin",
            "why": f"steady-state times are within {100 * (FASTER_MARGIN - 1):.0f}% of each other "
                   f"({speedup:.2f}x)"}


def run(script: str, atol: float = 1e-5, rtol: float = 1e-4, warmup: int = 2, repeats: int = 7,
        steady_batches: int = 5, steady_calls: int = 20, cold_runs: int = 1, timeout: float = 600.0) -> dict:
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
                       steady=None, per_call=None, compiles_after_warmup=0, speedup=None, break_even_calls=None,
                       roofline=None, recommendation=None, notes=[])
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

    cpu_med, metal_med = doc["steady"]["cpu"]["median_s"], doc["steady"]["metal"]["median_s"]
    speedup = cpu_med / metal_med if metal_med > 0 else None
    doc["speedup"] = speedup
    doc["break_even_calls"] = break_even_calls(doc["cold_stats"]["cpu"]["median_s"],
                                               doc["cold_stats"]["metal"]["median_s"], cpu_med, metal_med)
    calibration = load_calibration(device)
    doc["roofline"] = roofline.classify(calibration, metal_med, per_call["launches"], per_call["device_s"],
                                        workload["flops"], workload["bytes"])
    doc["recommendation"] = recommend(True, speedup)
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
                rows.append([regime, "numba-metal" if side == "metal" else "CPU", fmt_seconds(s["median_s"]),
                             fmt_seconds(s["min_s"]), fmt_seconds(s["max_s"]), f"{100 * s['spread']:.0f}%",
                             str(s["n"])])
        view.table([("regime", "left"), ("side", "left"), ("median", "right"), ("min", "right"),
                    ("max", "right"), ("spread", "right"), ("n", "right")], rows)
        st = doc["settings"]
        view.wrapped(f"cold = first call in a fresh process, compile included ({st['cold_runs']} process(es)); "
                     f"warm = {st['repeats']} single calls after {st['warmup']} warm-up call(s); steady = "
                     f"{st['steady_batches']} batches of {st['steady_calls']} back-to-back calls. "
                     "spread = (max - min) / median.", style="dim")
        compiles = [f"{x['name']} {x['stage']} {x['ms']:.1f} ms{' (from disk cache)' if x['from_cache'] else ''}"
                    for x in (doc["cold"][0]["compiles"] if doc["cold"] else [])]
        if compiles:
            view.wrapped("first-call compiles: " + "; ".join(compiles), style="dim")
        pc = doc["per_call"]
        dev_s = "n/a" if pc["device_s"] is None else fmt_seconds(pc["device_s"])
        view.kv([("per metal() call", f"{pc['launches']} launch(es), {pc['copies']} copy(ies) "
                                      f"({pc['copy_bytes']} bytes), {pc['allocs']} allocation(s), "
                                      f"{pc['waits']} wait(s), device busy {dev_s}"),
                 ("speedup", f"{fmt_ratio(doc['speedup'])} (CPU / numba-metal, steady-state medians)"),
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
