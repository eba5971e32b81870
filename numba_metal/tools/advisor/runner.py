"""The workload's side of ``compare``: a fresh process that runs it and reports how that went.

``compare`` never runs the workload in its own process: a workload can raise, call ``sys.exit()``,
crash the interpreter or never return (a kernel that loops forever cannot be interrupted), and the
command must still say which of these happened, with its own exit code, and stop it after
``--timeout``. So it starts::

    python -m numba_metal.tools.advisor.runner MODE SCRIPT RESULT.json PHASE.txt SETTINGS-JSON

``MODE`` is ``measure`` (correctness, warm-up, the instrumented call, warm calls and steady-state
rounds) or ``cold`` (the first ``cpu()`` and ``metal()`` calls of a fresh process). Before each step
the process writes what it is about to do to ``PHASE.txt`` (the parent names it when the process
dies or runs out of time), and at the end ``RESULT.json`` holds ``{"outcome": ...}``:

``ok``         the measurements
``raised``     the workload raised an exception (``phase``, ``message``, ``traceback``)
``exited``     the workload raised SystemExit (``phase``, ``code``)
``protocol``   the script does not follow the protocol (``message``)
``no-device``  no usable device (``message``)

A process that ends without writing it was killed or left through ``os._exit()``.
"""

from __future__ import annotations

import json
import sys
import time
import traceback

from numba_metal.errors import UnsupportedPlatformError

from .compare import compare_results
from .measure import describe_device
from .workload import ProtocolError, load


class _Phases:
    """Writes the step about to run to the phase file."""

    def __init__(self, path: str):
        self.path = path
        self.current = "starting"

    def __call__(self, phase: str) -> None:
        self.current = phase
        with open(self.path, "w", encoding="utf-8") as fh:
            fh.write(phase)


def _sync():
    from numba_metal import metal
    metal.synchronize()


def _timed(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def _call_metal(w):
    r = w.metal()
    _sync()
    return r


class _EventCounter:
    """Counts runtime events of one untimed call (numba_metal.profiling)."""

    def __init__(self):
        self.events = []

    def __call__(self, event):
        self.events.append(event)

    def summary(self) -> dict:
        ev = self.events
        launches = [e for e in ev if e.kind == "launch"]
        spans = []
        have_device = bool(launches)
        for e in launches:
            try:
                spans.append(e.queue.timestamps(e.work_id))
            except Exception:  # noqa: BLE001 - timestamps are optional evidence
                have_device = False
        return {
            "launches": len(launches),
            "compiles": sum(1 for e in ev if e.kind == "compile"),
            "copies": sum(1 for e in ev if e.kind == "copy"),
            "copy_bytes": sum(int(e.nbytes) for e in ev if e.kind == "copy"),
            "allocs": sum(1 for e in ev if e.kind == "alloc"),
            "waits": sum(1 for e in ev if e.kind == "wait"),
            "device_s": union_ns(spans) / 1e9 if have_device else None,
        }


def union_ns(spans) -> int:
    """Total length of the union of (start, end) intervals (launches sharing a command buffer share
    its timestamps, so summing them would count that time more than once)."""
    total, cur_s, cur_e = 0, None, None
    for s, e in sorted(spans):
        if cur_e is None or s > cur_e:
            if cur_e is not None:
                total += cur_e - cur_s
            cur_s, cur_e = s, e
        else:
            cur_e = max(cur_e, e)
    if cur_e is not None:
        total += cur_e - cur_s
    return total


def measure(script: str, settings: dict, phase: _Phases) -> dict:
    """Correctness first; then, if the results match, the warm and steady-state timings."""
    from numba_metal import profiling
    phase("opening the device")
    device = describe_device()
    phase("loading the script and calling advisor_workload()")
    w = load(script)
    if w.setup:
        phase("setup()")
        w.setup()
    phase("cpu() (correctness call)")
    cpu_value = w.cpu()
    if w.cpu_result:
        phase("cpu_result()")
        cpu_value = w.cpu_result()
    phase("metal() (correctness call)")
    metal_value = _call_metal(w)
    if w.metal_result:
        phase("metal_result()")
        metal_value = w.metal_result()
    phase("comparing the results")
    correctness = compare_results(cpu_value, metal_value, settings["atol"], settings["rtol"])
    out = {"device": device, "workload": {"name": w.name, "flops": w.flops, "bytes": w.bytes},
           "correctness": correctness}
    if correctness["status"] == "fail":
        return out

    for k in range(2, settings["warmup"] + 1):
        phase(f"warm-up call {k} of {settings['warmup']}")
        w.cpu()
        _call_metal(w)
    phase("metal() (instrumented call, runtime events on)")
    counter = _EventCounter()
    profiling.add_listener(counter)
    try:
        _call_metal(w)
    finally:
        profiling.remove_listener(counter)
    out["per_call"] = counter.summary()

    repeats = settings["repeats"]
    warm = {"cpu": [], "metal": []}
    for k in range(1, repeats + 1):
        phase(f"cpu() (warm call {k} of {repeats})")
        warm["cpu"].append(_timed(w.cpu))
        phase(f"metal() (warm call {k} of {repeats})")
        warm["metal"].append(_timed(lambda: _call_metal(w)))
    out["warm"] = warm

    rounds, calls = settings["steady_batches"], settings["steady_calls"]

    def cpu_batch():
        for _ in range(calls):
            w.cpu()

    def metal_batch():
        for _ in range(calls):
            w.metal()
        _sync()

    steady = {"cpu": [], "metal": []}
    for k in range(1, rounds + 1):
        # Alternate which side goes first, so that a slow drift of the machine weighs on both alike.
        order = (("cpu", cpu_batch), ("metal", metal_batch))
        for side, batch in order if k % 2 else order[::-1]:
            phase(f"{side}() (steady-state round {k} of {rounds}, {calls} calls)")
            steady[side].append(_timed(batch) / calls)
    out["steady"] = steady
    return out


def cold(script: str, phase: _Phases) -> dict:
    """The first cpu() and metal() calls of a fresh process, with the compiles of the metal() call."""
    from numba_metal import profiling
    phase("loading the script and calling advisor_workload() (cold start)")
    w = load(script)
    compiles = []

    def listener(event):
        if event.kind == "compile":
            compiles.append({"name": str(event.name), "stage": str(event.stage),
                             "ms": (event.end_ns - event.start_ns) / 1e6, "from_cache": bool(event.from_cache)})

    if w.setup:
        phase("setup() (cold start)")
        w.setup()
    phase("cpu() (first call, cold start)")
    cpu_s = _timed(w.cpu)
    phase("metal() (first call, cold start)")
    profiling.add_listener(listener)
    try:
        metal_s = _timed(lambda: _call_metal(w))
    finally:
        profiling.remove_listener(listener)
    return {"cpu_s": cpu_s, "metal_s": metal_s, "compiles": compiles}


def run(mode: str, script: str, result_path: str, phase_path: str, settings: dict) -> None:
    phase = _Phases(phase_path)
    phase("starting")
    try:
        result = {"outcome": "ok", **(measure(script, settings, phase) if mode == "measure" else cold(script, phase))}
    except SystemExit as e:
        result = {"outcome": "exited", "phase": phase.current, "code": e.code if isinstance(e.code, int) or
                  e.code is None else str(e.code)}
    except ProtocolError as e:
        result = {"outcome": "protocol", "phase": phase.current, "message": str(e)}
    except UnsupportedPlatformError as e:
        result = {"outcome": "no-device", "phase": phase.current, "message": str(e)}
    except BaseException as e:  # noqa: BLE001 - whatever the workload raised is the finding
        result = {"outcome": "raised", "phase": phase.current, "message": f"{type(e).__name__}: {e}",
                  "traceback": "".join(traceback.format_exception(e))}
    with open(result_path, "w", encoding="utf-8") as fh:
        json.dump(result, fh)


if __name__ == "__main__":
    if len(sys.argv) != 6 or sys.argv[1] not in ("measure", "cold"):
        sys.exit("usage: python -m numba_metal.tools.advisor.runner measure|cold SCRIPT RESULT.json PHASE.txt SETTINGS-JSON")
    run(sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], json.loads(sys.argv[5]))
