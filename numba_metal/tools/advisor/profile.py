"""``advisor profile``: run a program with runtime events and the sampling profiler.

Three kinds of target (docs/advisor.md, "profile"):

* a script defining ``advisor_workload()``: one fresh process runs ``setup``, then ``cpu()``
  ``--repeats`` times (the baseline run), then ``metal()`` ``--repeats`` times (the numba-metal run);
* any other script (``profile SCRIPT.py -- ARGS``) and ``profile --pytest PATH``: the program runs in
  a fresh process as is (the numba-metal run) and, unless ``--no-baseline``, once more with the
  environment variable ``NUMBA_METAL_ADVISOR_BASELINE=1`` (the baseline run; a program that honours
  it takes its CPU path). A baseline run that still launches kernels is reported as such.

Each run records the sampled stacks of its main thread, every runtime event of
``numba_metal.profiling`` with times relative to the run's start, and for launches the device's
start/end timestamps (``queue.timestamps(work_id)``, read after the waits).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import threading
import traceback
from collections import Counter

from numba_metal.errors import UnsupportedPlatformError

from .outcomes import UsageError, WorkloadFailed
from .schema import new_document
from .workload import check_script, has_workload, load, run_script

BASELINE_ENV = "NUMBA_METAL_ADVISOR_BASELINE"

DEVICE_TIMESTAMPS = {"metal": "GPU timestamps of each launch's command buffer",
                     "cpu": "the CPU reference device's executor (host clock around each work item), not a GPU"}


class _Recorder:
    """Runtime events of one run (a numba_metal.profiling listener)."""

    def __init__(self, t0: int):
        self.t0 = t0
        self.events: list[dict] = []
        self.pending: list[tuple[int, object, int]] = []  # (event index, queue, work id)
        self.lock = threading.Lock()

    def __call__(self, event) -> None:
        f = event.fields
        rec = {"kind": event.kind, "start_ns": int(f["start_ns"]) - self.t0, "end_ns": int(f["end_ns"]) - self.t0}
        if event.kind == "compile":
            rec.update(name=str(f.get("name")), stage=str(f.get("stage")), from_cache=bool(f.get("from_cache")),
                       argtypes=", ".join(map(str, f.get("argtypes") or ())))
        elif event.kind == "launch":
            rec.update(name=str(f.get("name")), grid=[int(x) for x in f.get("grid", ())],
                       block=[int(x) for x in f.get("block", ())], device_start_ns=None, device_end_ns=None,
                       emulated_float64=bool(f.get("emulated_float64")))
        elif event.kind == "copy":
            rec.update(direction=str(f.get("direction")), nbytes=int(f.get("nbytes", 0)))
        elif event.kind == "alloc":
            rec.update(nbytes=int(f.get("nbytes", 0)))
        elif event.kind == "wait":
            rec.update(what=str(f.get("what")))
        with self.lock:
            self.events.append(rec)
            if event.kind == "launch":
                self.pending.append((len(self.events) - 1, f.get("queue"), int(f.get("work_id", 0))))
        if event.kind == "wait":
            self.resolve()

    def resolve(self) -> None:
        """Read device timestamps of completed launches."""
        with self.lock:
            pending, self.pending = self.pending, []
        keep = []
        for idx, queue, work in pending:
            try:
                if not queue.query(work):
                    keep.append((idx, queue, work))
                    continue
                s, e = queue.timestamps(work)
            except Exception:  # noqa: BLE001 - a queue released by the program: no timestamps
                continue
            if s and e:
                self.events[idx]["device_start_ns"] = int(s) - self.t0
                self.events[idx]["device_end_ns"] = int(e) - self.t0
        with self.lock:
            self.pending.extend(keep)


def _aggregate(samples, frames: list[str]) -> list[dict]:
    """Samples grouped by stack: how many, and the time they stand for (each sample weighs the time
    since the previous one). Stacks are lists of indices into ``frames``."""
    counts, weights = Counter(), Counter()
    prev = 0
    for t, stack in samples:
        counts[stack] += 1
        weights[stack] += max(0, t - prev)
        prev = t
    index = {label: i for i, label in enumerate(frames)}
    return [{"stack": [index[f] for f in stack], "count": counts[stack], "weight_ns": int(weights[stack])}
            for stack in sorted(counts)]


def _where(stack) -> str:
    """'numba-metal' when the sample is inside a numba-metal call (its host code or the compiler it runs)."""
    return "numba-metal" if any(f.endswith(("[numba-metal]", "[numba]")) for f in stack) else "host"


def _target_entry(body):
    """The frame the sampler cuts stacks at: everything above it is the profiled program."""
    return body()


def _innermost_user_frame(stack) -> str:
    """What the host was doing: the numba-metal call it was in (its outermost numba-metal frame),
    else its innermost frame."""
    for label in stack:
        if label.endswith(("[numba-metal]", "[numba]")):
            return label
    return stack[-1] if stack else "?"


def _record_run(label, role, command, interval_ms, body) -> dict:
    """Run ``body()`` under the sampler and the event recorder; return the run record."""
    from numba_metal import profiling

    from .sampler import Sampler
    t0 = profiling.now_ns()
    recorder = _Recorder(t0)
    entry = _target_entry.__code__
    sampler = Sampler(threading.get_ident(), interval_ms / 1e3, entry, profiling.now_ns)
    profiling.add_listener(recorder)
    exit_code = 0
    sampler.start()
    try:
        _target_entry(body)
    except SystemExit as e:
        code = e.code
        exit_code = code if isinstance(code, int) else (0 if code is None else 1)
    except BaseException:  # noqa: BLE001 - the program's failure is part of the profile
        traceback.print_exc()
        exit_code = 1
    finally:
        sampler.stop()
        end = profiling.now_ns()
        profiling.remove_listener(recorder)
    try:
        from numba_metal import metal
        metal.synchronize()
    except Exception:  # noqa: BLE001 - a failed program may leave failed work behind
        pass
    recorder.resolve()
    samples = [(t - t0, stack) for t, stack in sampler.samples]
    frames = sorted({label for _, stack in samples for label in stack} | {_innermost_user_frame(s) for _, s in samples})
    index = {label: i for i, label in enumerate(frames)}
    return {"label": label, "role": role, "command": command, "exit_code": int(exit_code), "wall_ns": int(end - t0),
            "interval_ms": float(interval_ms), "frames": frames, "samples": _aggregate(samples, frames),
            "sample_times_ns": [int(t) for t, _ in samples],
            "sample_top": [index[_innermost_user_frame(s)] for _, s in samples],
            "sample_where": [_where(s) for _, s in samples],
            "events": recorder.events, "device_timestamps": ""}


def _child(mode: str, target: str, out_path: str, role: str, interval_ms: float, repeats: int, args: list[str]):
    """In a fresh process: run the target and write the run records to ``out_path``. Without a usable device
    nothing runs: the record is ``{"no_device": message}``."""
    from .measure import describe_device
    try:
        device = describe_device()
    except UnsupportedPlatformError as e:
        with open(out_path, "w", encoding="utf-8") as fh:
            json.dump({"no_device": str(e)}, fh)
        return
    runs = []
    rates = {"flops": None, "bytes": None}
    base = os.path.basename(target)
    if mode == "workload":
        w = load(target)
        rates = {"flops": w.flops, "bytes": w.bytes}
        if w.setup:
            w.setup()
        runs.append(_record_run(f"{w.name}: cpu() x {repeats}", "baseline", f"cpu() x {repeats}", interval_ms,
                                lambda: [w.cpu() for _ in range(repeats)]))

        def metal_calls():
            from numba_metal import metal
            for _ in range(repeats):
                w.metal()
                metal.synchronize()
        runs.append(_record_run(f"{w.name}: metal() x {repeats}", "metal", f"metal() x {repeats}", interval_ms,
                                metal_calls))
    elif mode == "script":
        label = "baseline run" if role == "baseline" else "numba-metal run"
        command = " ".join([base] + args)
        runs.append(_record_run(label, role, command, interval_ms, lambda: run_script(target, args, run_name="__main__")))
    else:
        import pytest
        label = "baseline run" if role == "baseline" else "numba-metal run"
        pytest_args = [target, "-q", "-p", "no:cacheprovider"]

        def body():
            code = pytest.main(pytest_args)
            if int(code) != 0:
                raise SystemExit(int(code))
        runs.append(_record_run(label, role, f"pytest {base}", interval_ms, body))
    for r in runs:
        r["device_timestamps"] = DEVICE_TIMESTAMPS[device["kind"]]
    with open(out_path, "w", encoding="utf-8") as fh:
        json.dump({"device": device, "runs": runs, "rates": rates}, fh)


def _spawn(mode, target, role, interval_ms, repeats, args, baseline_env: bool) -> dict:
    env = dict(os.environ)
    if baseline_env:
        env[BASELINE_ENV] = "1"
    else:
        env.pop(BASELINE_ENV, None)
    with tempfile.TemporaryDirectory(prefix="numba-metal-advisor-") as tmp:
        out = os.path.join(tmp, "run.json")
        cmd = [sys.executable, "-m", "numba_metal.tools.advisor.profile", "--child", mode, target, out, role,
               str(interval_ms), str(repeats), "--", *args]
        # The program's own output is passed on to stderr, keeping stdout for the report.
        proc = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                              errors="replace")
        if proc.stdout:
            sys.stderr.write(proc.stdout)
            sys.stderr.flush()
        if not os.path.exists(out):
            raise WorkloadFailed(f"the profiled process ended (exit status {proc.returncode}) without a profile: the "
                                 "program crashed or left through os._exit()")
        with open(out, encoding="utf-8") as fh:
            result = json.load(fh)
    if "no_device" in result:
        raise UnsupportedPlatformError(result["no_device"])
    return result


def run(script: str | None, pytest_path: str | None, script_args: list[str], interval_ms: float = 2.0,
        repeats: int = 3, baseline: bool = True) -> dict:
    from .calibrate import load as load_calibration
    from .roofline import classify
    target = script or pytest_path
    if not os.path.exists(target):
        raise UsageError(f"{target}: no such file or directory")
    if pytest_path:
        mode = "pytest"
    else:
        mode = "workload" if has_workload(check_script(target)) else "script"
    target = os.path.abspath(target)
    notes = []
    if mode == "workload":
        if script_args:
            raise UsageError("a script defining advisor_workload() takes no arguments after --")
        result = _spawn(mode, target, "both", interval_ms, repeats, [], False)
        runs = result["runs"]
    else:
        result = _spawn(mode, target, "metal", interval_ms, repeats, script_args, False)
        runs = result["runs"]
        if baseline:
            base = _spawn(mode, target, "baseline", interval_ms, repeats, script_args, True)
            runs = base["runs"] + runs
        else:
            notes.append("No baseline run (--no-baseline).")
    device = result["device"]
    if not device["is_gpu"]:
        notes.append("Profiled on numba-metal's CPU reference device, not a GPU: 'device' times are this CPU "
                     "running the generated MSL.")
    for r in runs:
        launches = sum(1 for e in r["events"] if e["kind"] == "launch")
        if r["role"] == "baseline" and launches:
            notes.append(f"The baseline run launched {launches} numba-metal kernel(s): "
                         + ("the program does not honour NUMBA_METAL_ADVISOR_BASELINE=1, so the 'baseline' is not "
                            "a CPU baseline." if mode != "workload" else "cpu() uses numba-metal."))
    metal_run = next((r for r in runs if r["role"] == "metal"), None)
    emulated = sorted({e["name"] for r in runs for e in r["events"] if e["kind"] == "launch" and e.get("emulated_float64")})
    if emulated:
        notes.append(f"Kernel(s) {', '.join(emulated)} compute float64 in software (emulated IEEE binary64, exact but "
                     "many integer instructions per operation; docs/performance.md): use float32 data where its "
                     "precision suffices.")
    roof = None
    if metal_run is not None:
        from .timeline import device_busy_ns
        launches = sum(1 for e in metal_run["events"] if e["kind"] == "launch")
        busy = device_busy_ns(metal_run["events"])
        flops = nbytes = None
        rates = result.get("rates") or {}
        if rates.get("flops") and rates.get("bytes"):
            flops, nbytes = rates["flops"] * repeats, rates["bytes"] * repeats
        compile_ns = sum(e["end_ns"] - e["start_ns"] for e in metal_run["events"] if e["kind"] == "compile")
        seconds = max(metal_run["wall_ns"] - compile_ns, 1) / 1e9  # compiles are not launch overhead
        roof = classify(load_calibration(device), seconds, launches, busy / 1e9 if busy else None, flops, nbytes)
    display = os.path.basename(target.rstrip(os.sep)) or target
    return new_document("profile", target=display, mode=mode, device=device, runs=runs, roofline=roof, notes=notes)


if __name__ == "__main__":
    argv = sys.argv[1:]
    if len(argv) >= 7 and argv[0] == "--child":
        mode, target, out, role, interval, reps = argv[1:7]
        rest = argv[8:] if len(argv) > 7 and argv[7] == "--" else argv[7:]
        _child(mode, target, out, role, float(interval), int(reps), rest)
    else:
        sys.exit("usage: python -m numba_metal.tools.advisor.profile --child MODE TARGET OUT ROLE INTERVAL REPEATS -- ARGS")
