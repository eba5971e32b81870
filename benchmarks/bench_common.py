"""Shared harness of the numba-metal benchmark programs: timing, machine information, the result schema,
correctness checks, cold compiles in fresh processes, and the text report.

A benchmark program (``benchmarks/mandelbrot.py`` ...) describes its workloads as :class:`Case` objects
and calls :func:`main`; ``benchmarks/run_all.py`` runs many programs into one JSON document of the
schema below, and ``benchmarks/report.py`` renders that document as HTML.

Method (docs/benchmarking.md says the same at more length):

* Every implementation of a case (plain Python, NumPy, Numba ``@njit`` single-threaded, Numba
  ``parallel=True``, numba-metal) first runs once and its output is checked against the case's
  reference. Only an implementation that passed is timed; one that failed reports no time.
* Timing: ``time.perf_counter_ns`` around one whole unit of work (the same unit for every
  implementation of a case), after warm-ups; the median, minimum and maximum of the repeats. The
  implementations of a case are timed in interleaved rounds, so that a change of load on a shared
  machine hits all of them alike. Every
  numba-metal timed region ends with ``metal.synchronize()`` (or a copy to the host, which waits).
* No compile inside a timed region: Numba dispatchers must not gain a signature and numba-metal must
  emit no ``compile`` profiling event while the clock runs; either is an error.
* numba-metal is timed three ways: *kernel* (launches on resident device arrays, then a wait),
  *end to end* (host arrays in: ``to_device`` + allocation + launches + ``copy_to_host``), and *cold*
  (the first run in a fresh Python process whose compile caches are empty, so Numba typing, MSL
  generation and the device compile are all inside). The split of the end-to-end time into upload
  (host to device), kernel and download (device to host) is timed separately.
* Speedup = baseline median / numba-metal median (kernel or end to end), for the same unit of work.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import importlib.util
import json
import math
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

# Numba's parallel=True runs on GNU OpenMP here; with libgomp's default wait policy every parallel
# region cost ~8 ms on the shared 2-core machine these benchmarks were developed on (threads asleep in
# a throttled spin), against ~20 µs with the passive policy. The passive policy is also the polite one
# beside the CPU device's own threads. Set before Numba loads libgomp; a user's own setting wins.
os.environ.setdefault("OMP_WAIT_POLICY", "passive")

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)

SCHEMA = "numba-metal-benchmarks/1"

#: CPU baselines, in the order tables list them.
BASELINES = ("python", "numpy", "numba_1t", "numba_parallel")
BASELINE_LABELS = {"python": "plain Python", "numpy": "NumPy", "numba_1t": "Numba @njit (1 thread)",
                   "numba_parallel": "Numba parallel=True"}
#: numba-metal measurements of a case.
METAL_TIMINGS = ("metal_kernel", "metal_e2e", "metal_h2d", "metal_d2h")

COLD_METHOD = ("a fresh Python process with an empty compile cache (NUMBA_METAL_CACHE_DIR set to a new "
               "directory); a one-line primer kernel runs first so one-off process set-up (Numba's first "
               "compile, the shim's precompiled header) is reported separately as process_init_ns; then "
               "the first run of the case, with every compile inside it, is timed to the end of "
               "metal.synchronize()")


def ensure_importable() -> None:
    """Benchmark the numba-metal of this source tree (ahead of any other installed copy)."""
    if sys.path[:1] != [REPO]:
        sys.path.insert(0, REPO)
    import numba_metal
    where = os.path.dirname(os.path.dirname(os.path.abspath(numba_metal.__file__)))
    if where != REPO:
        import warnings
        warnings.warn(f"numba_metal was already imported from {where}, not from this tree ({REPO}); the "
                      f"results record which one was measured (machine.numba_metal_path)")


def quiet_performance_warnings() -> None:
    """The benchmark programs choose their grids and arguments on purpose, small sizes included: numba-metal's
    performance warnings are advice about a user's launches, so they are off here (and in the processes
    the programs start, which inherit the environment)."""
    os.environ["NUMBA_METAL_LOW_OCCUPANCY_WARNINGS"] = "0"
    os.environ["NUMBA_METAL_WARN_ON_IMPLICIT_COPY"] = "0"


ensure_importable()
quiet_performance_warnings()


# --------------------------------------------------------------------------------------------------
# Device and machine
# --------------------------------------------------------------------------------------------------

def choose_device(kind: str = "auto") -> dict:
    """Select the device (``auto``: the Metal GPU if there is one, else the CPU reference device, said
    plainly) and describe it."""
    from numba_metal import metal
    if kind == "auto":
        kind = os.environ.get("NUMBA_METAL_DEVICE", "").strip().lower() or (
            "metal" if metal.is_available() else "cpu")
    metal.select_device(kind)
    info = metal.get_device_info()
    return {"name": info.name, "kind": info.kind, "is_gpu": info.kind == "metal",
            "unified_memory": bool(info.unified_memory), "simd_width": int(info.simd_width),
            "max_threads_per_threadgroup": int(info.max_threads_per_threadgroup),
            "cpu_threads": _cpu_device_threads() if info.kind == "cpu" else None}


def _cpu_device_threads() -> int:
    env = os.environ.get("NUMBA_METAL_CPU_THREADS", "")
    if env.isdigit() and 1 <= int(env) <= 1024:
        return int(env)
    return os.cpu_count() or 1


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    if sys.platform == "darwin":
        try:
            return subprocess.run(["sysctl", "-n", "machdep.cpu.brand_string"], capture_output=True,
                                  text=True, timeout=5).stdout.strip() or platform.processor()
        except (OSError, subprocess.SubprocessError):
            pass
    return platform.processor() or "unknown CPU"


def _git_revision() -> str | None:
    try:
        out = subprocess.run(["git", "-C", REPO, "describe", "--always", "--dirty", "--abbrev=12"],
                             capture_output=True, text=True, timeout=10)
        return out.stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        return None


def machine_info() -> dict:
    import numba
    import numba_metal
    try:
        affinity = len(os.sched_getaffinity(0))
    except AttributeError:
        affinity = os.cpu_count()
    try:
        mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        mem = None
    return {
        "cpu": _cpu_model(), "logical_cores": os.cpu_count(), "usable_cores": affinity,
        "memory_bytes": mem, "os": platform.platform(), "machine": platform.machine(),
        "python": platform.python_version(), "numpy": np.__version__, "numba": numba.__version__,
        "numba_metal": getattr(numba_metal, "__version__", "unknown"), "numba_metal_git": _git_revision(),
        "numba_metal_path": os.path.dirname(os.path.abspath(numba_metal.__file__)),
        "numba_threads": int(numba.config.NUMBA_NUM_THREADS),
        "load_average": list(os.getloadavg()) if hasattr(os, "getloadavg") else None,
    }


# --------------------------------------------------------------------------------------------------
# Timing
# --------------------------------------------------------------------------------------------------

@dataclass
class TimingPolicy:
    """How often to run: warm-ups, then repeats until both ``min_repeats`` and ``budget_s`` are
    reached, never more than ``max_repeats``."""
    warmups: int = 1
    min_repeats: int = 3
    max_repeats: int = 15
    budget_s: float = 2.0

    def as_dict(self) -> dict:
        return {"warmups": self.warmups, "min_repeats": self.min_repeats, "max_repeats": self.max_repeats,
                "budget_s": self.budget_s}


class CompileInTimedRegion(RuntimeError):
    """A compile happened while the clock was running: the measurement would be meaningless."""


class _CompileGuard:
    """Fails when numba-metal compiles or a watched Numba dispatcher gains a signature."""

    def __init__(self, dispatchers=()):
        self.dispatchers = [d for d in dispatchers if d is not None]
        self.events: list = []

    def _listener(self, event):
        if event.kind == "compile":
            self.events.append(event)

    def __enter__(self):
        from numba_metal import profiling
        self.counts = [len(d.signatures) for d in self.dispatchers]
        profiling.add_listener(self._listener)
        return self

    def __exit__(self, *exc):
        from numba_metal import profiling
        profiling.remove_listener(self._listener)
        if exc[0] is not None:
            return False
        if self.events:
            names = sorted({e.name for e in self.events})
            raise CompileInTimedRegion(f"numba-metal compiled {names} inside a timed region")
        for d, n in zip(self.dispatchers, self.counts):
            if len(d.signatures) != n:
                raise CompileInTimedRegion(f"Numba compiled a new signature of {d.__name__} inside a "
                                           f"timed region")
        return False


def stats(samples_ns: list[int], warmups: int) -> dict:
    s = sorted(int(x) for x in samples_ns)
    return {"median_ns": int(np.median(s)), "min_ns": s[0], "max_ns": s[-1], "repeats": len(s),
            "warmups": warmups, "samples_ns": [int(x) for x in samples_ns]}


def time_repeats(run: Callable[[], Any], policy: TimingPolicy, *, sync: Callable[[], None] | None = None,
                 before: Callable[[], None] | None = None, dispatchers=(), warmups: int | None = None) -> dict:
    """Time ``run()`` (then ``sync()``, inside the clock) after warm-ups; ``before()`` runs untimed
    before each repetition. Returns :func:`stats`."""
    warmups = policy.warmups if warmups is None else warmups
    for _ in range(warmups):
        if before:
            before()
        run()
        if sync:
            sync()
    samples: list[int] = []
    start = time.perf_counter()
    with _CompileGuard(dispatchers):
        while len(samples) < policy.max_repeats and (
                len(samples) < policy.min_repeats or time.perf_counter() - start < policy.budget_s):
            if before:
                before()
            t0 = time.perf_counter_ns()
            run()
            if sync:
                sync()
            samples.append(time.perf_counter_ns() - t0)
    return stats(samples, warmups)


# --------------------------------------------------------------------------------------------------
# Correctness checks: each returns {"ok": bool, "detail": str, ...metrics}
# --------------------------------------------------------------------------------------------------

def check_allclose(out, ref, *, rtol: float, atol: float, what: str = "") -> dict:
    """Elementwise ``|out - ref| <= atol + rtol * |ref|`` (NumPy's allclose), NaNs never equal."""
    out = np.asarray(out, dtype=np.float64)
    ref = np.asarray(ref, dtype=np.float64)
    if out.shape != ref.shape:
        return {"ok": False, "detail": f"shape {out.shape} != reference shape {ref.shape}"}
    err = np.abs(out - ref)
    bad = ~(err <= atol + rtol * np.abs(ref))
    n_bad = int(np.count_nonzero(bad))
    max_abs = float(np.nanmax(err)) if err.size and not np.all(np.isnan(err)) else float("nan")
    nz = np.abs(ref) > 0
    max_rel = float(np.nanmax(err[nz] / np.abs(ref[nz]))) if np.any(nz) else float("nan")
    ok = n_bad == 0
    detail = (f"{'allclose' if ok else f'{n_bad} of {out.size} elements outside'} rtol={rtol:g} "
              f"atol={atol:g}; max abs err {max_abs:.3g}, max rel err {max_rel:.3g}")
    if what:
        detail = f"{what}: {detail}"
    return {"ok": ok, "detail": detail, "max_abs_err": _finite(max_abs), "max_rel_err": _finite(max_rel),
            "n_bad": n_bad, "n": int(out.size), "rtol": rtol, "atol": atol}


def check_near_integer(out, ref, *, max_off_by_one_fraction: float, what: str = "") -> dict:
    """Integer results (escape counts): equal, except that at most ``max_off_by_one_fraction`` of the
    elements may differ by exactly one; any larger difference fails."""
    out = np.asarray(out).astype(np.int64)
    ref = np.asarray(ref).astype(np.int64)
    if out.shape != ref.shape:
        return {"ok": False, "detail": f"shape {out.shape} != reference shape {ref.shape}"}
    diff = np.abs(out - ref)
    off1 = int(np.count_nonzero(diff == 1))
    worse = int(np.count_nonzero(diff > 1))
    allowed = int(math.floor(max_off_by_one_fraction * out.size))
    ok = worse == 0 and off1 <= allowed
    detail = (f"{off1} of {out.size} elements off by one (allowed {allowed}), {worse} off by more")
    if what:
        detail = f"{what}: {detail}"
    return {"ok": ok, "detail": detail, "off_by_one": off1, "off_by_more": worse, "n": int(out.size),
            "allowed_off_by_one": allowed}


def check_scalar(value, expected, *, tol: float, what: str) -> dict:
    value = float(value)
    err = abs(value - expected)
    ok = bool(err <= tol)
    return {"ok": ok, "detail": f"{what}: {value:.6g} vs {expected:.6g}, |diff| {err:.3g} "
                                f"{'<=' if ok else '>'} {tol:.3g}", "value": value, "expected": expected,
            "abs_err": err, "tol": tol}


def _finite(x: float):
    return x if math.isfinite(x) else None


# --------------------------------------------------------------------------------------------------
# Cases
# --------------------------------------------------------------------------------------------------

@dataclass
class MetalImpl:
    """numba-metal's implementation of a case.

    ``upload(inputs) -> state``: copy host inputs to the device and allocate outputs (no wait needed).
    ``launch(state)``: enqueue the whole unit of work on resident arrays; must be repeatable (each call
    recomputes the same result from the resident inputs) and must not wait.
    ``download(state) -> output``: copy the result to the host (this waits), finishing on the host if
    the case says so (e.g. a mean).
    ``kernels``: the dispatchers it launches (for the compile split).
    """
    upload: Callable[[Any], Any]
    launch: Callable[[Any], None]
    download: Callable[[Any], Any]
    kernels: tuple = ()
    note: str = ""


@dataclass
class Case:
    """One workload of a program at one size: its inputs, its reference, its implementations."""
    variant: str
    size: str                       # label, e.g. "2048²"
    x: float                        # numeric size for plots (elements, pixels...)
    params: dict
    setup: Callable[[], Any]        # -> inputs (deterministic)
    reference: Callable[[Any], Any]  # inputs -> reference output
    check: Callable[[Any, Any], dict]  # (output, reference) -> check dict
    baselines: dict = field(default_factory=dict)  # name -> callable(inputs) -> output, or a str (why skipped)
    metal: MetalImpl | None = None
    numba_dispatchers: tuple = ()   # Numba dispatchers whose signatures must not grow while timed
    work: str = ""                  # the unit of work every timing covers
    baseline_key: str | None = None  # cases with the same key share their CPU baseline timings
    extra: Callable[[Any, dict], dict] | None = None  # (inputs, outputs by impl) -> extra facts
    custom: Callable[["RunOptions"], dict] | None = None  # a case that measures something else

    @property
    def id(self) -> str:
        return f"{self.variant}/{self.size}"


@dataclass
class Program:
    name: str
    title: str
    summary: str                    # plain language: what it computes and why it is interesting
    x_axis: str                     # what Case.x counts
    variants: dict                  # variant -> description
    cases: Callable[[bool], list]   # quick -> list[Case]
    path: str = ""
    comparison: str = "speedup"     # "speedup" (baselines vs numba-metal) or "compile" (compile times)


@dataclass
class RunOptions:
    quick: bool = False
    device: str = "auto"
    cold: bool = True
    policy: TimingPolicy = field(default_factory=TimingPolicy)
    only_variants: tuple = ()
    only_sizes: tuple = ()
    progress: Callable[[str], None] | None = None
    python_max_s: float = 60.0     # check but do not time plain Python when one run took longer


def load_program(path: str) -> Program:
    """The ``PROGRAM`` of a benchmark file (imported by path: benchmarks/ is not a package)."""
    path = os.path.abspath(path)
    name = "nm_bench_" + os.path.splitext(os.path.basename(path))[0]
    if name in sys.modules:
        return sys.modules[name].PROGRAM
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    prog = mod.PROGRAM
    prog.path = path
    return prog


def _sync():
    from numba_metal import metal
    metal.synchronize()


def _say(opts: RunOptions, msg: str) -> None:
    if opts.progress:
        opts.progress(msg)


@dataclass
class _Slot:
    """One thing to time in the interleaved rounds of a case."""
    name: str
    run: Callable[[], Any]
    sync: Callable[[], None] | None
    first_s: float                  # an earlier untimed run: decides whether the run is long
    checked_calls: int = 0          # untimed runs before the warm-ups (checks), counted as warm-ups
    samples: list = field(default_factory=list)
    spent_s: float = 0.0
    warmups: int = 0
    long: bool = False


def time_interleaved(slots: list[_Slot], policy: TimingPolicy, dispatchers=()) -> dict:
    """Time several implementations of one case in interleaved rounds (A, B, C, A, B, C, ...), so that a
    change of machine load during the measurement hits all of them alike rather than one of them.

    Each slot first gets the policy's warm-ups, unless its earlier run took longer than five budgets
    (then the checked call was warm-up enough). A slot then needs repeats until it has ``min_repeats``
    and has used ``budget_s`` (never more than ``max_repeats``; a long slot stops at ``min_repeats``).
    No compile may happen while any clock runs."""
    for s in slots:
        s.long = s.first_s > 5 * policy.budget_s
        s.warmups = 0 if s.long else policy.warmups
        for _ in range(s.warmups):
            s.run()
            if s.sync:
                s.sync()

    def needs(s: _Slot) -> bool:
        if len(s.samples) < policy.min_repeats:
            return True
        return not s.long and len(s.samples) < policy.max_repeats and s.spent_s < policy.budget_s

    with _CompileGuard(dispatchers):
        while any(needs(s) for s in slots):
            for s in slots:
                if not needs(s):
                    continue
                t0 = time.perf_counter_ns()
                s.run()
                if s.sync:
                    s.sync()
                dt = time.perf_counter_ns() - t0
                s.samples.append(dt)
                s.spent_s += dt / 1e9
    res = {}
    for s in slots:
        res[s.name] = stats(s.samples, s.warmups + s.checked_calls)
        res[s.name]["interleaved"] = True
    return res


def run_case(prog: Program, case: Case, opts: RunOptions, shared: dict) -> dict:
    """Check every implementation, then time the ones that passed, interleaved. ``shared`` holds the
    baseline timings of earlier cases by ``baseline_key``."""
    record: dict = {"id": case.id, "variant": case.variant, "size": case.size, "x": case.x,
                    "params": case.params, "work": case.work, "checks": {}, "timings": {}, "skipped": {},
                    "notes": []}
    if case.custom is not None:
        record.update(case.custom(opts))
        record["correct"] = all(c.get("ok", False) for c in record["checks"].values())
        return record
    t_setup = time.perf_counter()
    inputs = case.setup()
    ref = case.reference(inputs)
    record["setup_s"] = round(time.perf_counter() - t_setup, 3)
    outputs: dict = {}
    slots: list[_Slot] = []

    # 1. Check every implementation once (Numba compiles here); only those that pass get a slot.
    reuse = shared.get(case.baseline_key) if case.baseline_key else None
    for name in BASELINES:
        impl = case.baselines.get(name)
        if impl is None:
            record["skipped"][name] = "not implemented for this case"
            continue
        if isinstance(impl, str):
            record["skipped"][name] = impl
            continue
        if reuse is not None and name in reuse["checks"]:
            record["checks"][name] = reuse["checks"][name]
            if name in reuse["timings"]:
                record["timings"][name] = reuse["timings"][name]
                record["notes"].append(f"{BASELINE_LABELS[name]}: same computation as case {reuse['id']}; "
                                       f"its check and timing are reused")
            elif name in reuse["skipped"]:
                record["skipped"][name] = reuse["skipped"][name]
            continue
        _say(opts, f"{prog.name} {case.id}: {name} check")
        t0 = time.perf_counter()
        out = impl(inputs)
        first_s = time.perf_counter() - t0
        chk = case.check(out, ref)
        record["checks"][name] = chk
        outputs[name] = out
        if not chk["ok"]:
            record["notes"].append(f"{BASELINE_LABELS[name]} failed its check; no time is reported")
            continue
        if name == "python" and first_s > opts.python_max_s:
            record["skipped"][name] = (f"one run took {first_s:.0f} s (> {opts.python_max_s:.0f} s); "
                                       f"checked but not timed")
            continue
        slots.append(_Slot(name, (lambda impl=impl: impl(inputs)), None, first_s, checked_calls=1))

    state = None
    if case.metal is not None:
        state = _check_metal(prog, case, opts, inputs, ref, record, outputs, slots)
    else:
        record["skipped"]["metal"] = "no numba-metal implementation"

    # 2. Time everything that passed, in interleaved rounds.
    if slots:
        _say(opts, f"{prog.name} {case.id}: timing {', '.join(s.name for s in slots)} (interleaved)")
        record["timings"].update(time_interleaved(slots, opts.policy, case.numba_dispatchers))
    if case.baseline_key and reuse is None:
        shared[case.baseline_key] = {"id": case.id, "checks": {k: v for k, v in record["checks"].items()
                                                               if k in BASELINES},
                                     "timings": {k: v for k, v in record["timings"].items() if k in BASELINES},
                                     "skipped": {k: v for k, v in record["skipped"].items() if k in BASELINES}}

    # 3. numba-metal: the result after all the repeats, then the cold run in a fresh process.
    if state is not None:
        chk2 = case.check(case.metal.download(state), ref)
        if not chk2["ok"]:
            record["checks"]["metal_repeat"] = chk2
            record["notes"].append("numba-metal gave a different (wrong) result when repeated")
        del state
        if opts.cold:
            _say(opts, f"{prog.name} {case.id}: numba-metal cold (fresh process)")
            record["cold"] = cold_in_subprocess(prog, case, opts)
            if not record["cold"].get("correct", False):
                record["checks"]["metal_cold"] = {"ok": False, "detail": "cold run: " + record["cold"].get(
                    "error", record["cold"].get("check", {}).get("detail", "failed"))}

    if case.extra is not None:
        record["extra"] = case.extra(inputs, outputs)
    record["correct"] = bool(record["checks"]) and all(c["ok"] for c in record["checks"].values())
    record["speedups"] = speedups(record)
    return record


def _check_metal(prog, case, opts, inputs, ref, record, outputs, slots):
    """Check numba-metal's first run (it compiles, outside every timed region) and add its slots:
    kernel (resident arrays, then a wait), download, upload (allocation + copies + wait), end to end.
    Returns the resident state, or None when the check failed."""
    m = case.metal
    _say(opts, f"{prog.name} {case.id}: numba-metal check")
    state = m.upload(inputs)
    m.launch(state)
    out = m.download(state)
    chk = case.check(out, ref)
    record["checks"]["metal"] = chk
    outputs["metal"] = out
    if not chk["ok"]:
        record["notes"].append("numba-metal failed its check; no time is reported")
        return None
    if m.note:
        record["notes"].append(m.note)

    def timed(fn, sync=None):
        t0 = time.perf_counter()
        fn()
        if sync:
            sync()
        return time.perf_counter() - t0
    kernel_s = timed(lambda: m.launch(state), _sync)  # an untimed warm run
    d2h_s = timed(lambda: m.download(state))

    def e2e():
        st = m.upload(inputs)
        m.launch(st)
        return m.download(st)
    h2d_s = timed(lambda: m.upload(inputs), _sync)
    # The download slot follows the kernel slot, so it always copies a finished result.
    slots += [_Slot("metal_kernel", lambda: m.launch(state), _sync, kernel_s, checked_calls=2),
              _Slot("metal_d2h", lambda: m.download(state), None, d2h_s, checked_calls=1),
              _Slot("metal_h2d", lambda: m.upload(inputs), _sync, h2d_s, checked_calls=1),
              _Slot("metal_e2e", e2e, None, kernel_s + h2d_s + d2h_s, checked_calls=1)]
    return state


def speedups(record: dict) -> dict:
    """baseline median / numba-metal median, for kernel-only and end-to-end numba-metal times."""
    t = record["timings"]
    res: dict = {}
    for which in ("kernel", "e2e"):
        m = t.get(f"metal_{which}")
        if not m:
            continue
        res[which] = {b: t[b]["median_ns"] / m["median_ns"] for b in BASELINES if b in t}
    return res


# --------------------------------------------------------------------------------------------------
# Cold runs in a fresh process
# --------------------------------------------------------------------------------------------------

def cold_in_subprocess(prog: Program, case: Case, opts: RunOptions, timeout: float = 1800) -> dict:
    cache = tempfile.mkdtemp(prefix="nm-bench-cold-")
    env = dict(os.environ)
    env["NUMBA_METAL_CACHE_DIR"] = cache
    env["PYTHONPATH"] = REPO + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    cmd = [sys.executable, os.path.join(HERE, "bench_common.py"), "--cold-child", prog.path, case.id,
           "--device", opts.device] + (["--quick"] if opts.quick else [])
    try:
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"correct": False, "error": f"cold run timed out after {timeout:.0f} s"}
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    for line in reversed(proc.stdout.splitlines()):
        if line.startswith("NM-BENCH-COLD "):
            return json.loads(line[len("NM-BENCH-COLD "):])
    tail = (proc.stderr or proc.stdout).strip().splitlines()[-5:]
    return {"correct": False, "error": f"cold run exited with {proc.returncode}: {' | '.join(tail)}"}


def _cold_child(path: str, case_id: str, device: str, quick: bool) -> dict:
    from numba_metal import metal, profiling
    choose_device(device)
    prog = load_program(path)
    case = next(c for c in prog.cases(quick) if c.id == case_id)

    @metal.jit
    def primer(out):
        i = metal.grid(1)
        if i < out.size:
            out[i] = i

    t0 = time.perf_counter_ns()
    buf = metal.device_array(32, np.float32)
    primer[1, 32](buf)
    metal.synchronize()
    process_init = time.perf_counter_ns() - t0

    inputs = case.setup()
    ref = case.reference(inputs)
    m = case.metal
    state = m.upload(inputs)
    metal.synchronize()
    events: list = []
    profiling.add_listener(events.append)
    t0 = time.perf_counter_ns()
    m.launch(state)
    metal.synchronize()
    cold = time.perf_counter_ns() - t0
    profiling.remove_listener(events.append)
    compiles = [e for e in events if e.kind == "compile"]
    py = sum(e.end_ns - e.start_ns for e in compiles if e.stage == "python")
    pipe = sum(e.end_ns - e.start_ns for e in compiles if e.stage == "pipeline")
    t0 = time.perf_counter_ns()
    m.launch(state)
    metal.synchronize()
    warm = time.perf_counter_ns() - t0
    chk = case.check(m.download(state), ref)
    return {"cold_ns": cold, "compile_python_ns": py, "compile_pipeline_ns": pipe,
            "compile_ns": py + pipe, "compiles": len(compiles),
            "compiled_fresh": bool(compiles) and not any(e.from_cache for e in compiles),
            "kernels": sorted({e.name for e in compiles}), "process_init_ns": process_init,
            "warm_after_ns": warm, "correct": bool(chk["ok"]), "check": chk, "method": "fresh subprocess",
            "device": _device_label()}


# --------------------------------------------------------------------------------------------------
# Running programs, documents and the text report
# --------------------------------------------------------------------------------------------------

def _device_label() -> str:
    from numba_metal import metal
    info = metal.get_device_info()
    return f"{info.name} ({info.kind})"


def run_program(prog: Program, opts: RunOptions) -> dict:
    cases = prog.cases(opts.quick)
    device = _device_label()
    if opts.only_variants:
        cases = [c for c in cases if c.variant in opts.only_variants]
    if opts.only_sizes:
        cases = [c for c in cases if c.size in opts.only_sizes]
    shared: dict = {}
    records = []
    for i, case in enumerate(cases):
        t0 = time.perf_counter()
        _say(opts, f"{prog.name} [{i + 1}/{len(cases)}] {case.id} ...")
        try:
            rec = run_case(prog, case, opts, shared)
        except CompileInTimedRegion:
            raise
        except Exception as e:  # noqa: BLE001 - a failing case is reported, the run goes on
            import traceback
            rec = {"id": case.id, "variant": case.variant, "size": case.size, "x": case.x,
                   "params": case.params, "work": case.work, "checks": {}, "timings": {}, "skipped": {},
                   "notes": [], "correct": False, "speedups": {},
                   "error": f"{type(e).__name__}: {e}", "traceback": traceback.format_exc(limit=6)}
        rec["device"] = device
        rec["wall_s"] = round(time.perf_counter() - t0, 2)
        _say(opts, f"{prog.name} [{i + 1}/{len(cases)}] {case.id} done in {rec['wall_s']:.1f} s"
                   f"{'' if rec.get('correct') else ' (NOT CORRECT: see report)'}")
        records.append(rec)
    return {"name": prog.name, "title": prog.title, "summary": prog.summary, "x_axis": prog.x_axis,
            "variants": prog.variants, "comparison": prog.comparison,
            "file": os.path.relpath(prog.path, REPO) if prog.path else None, "cases": records}


def new_document(opts: RunOptions, device: dict, argv: list[str]) -> dict:
    return {"schema": SCHEMA, "command": " ".join(argv),
            "started_utc": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "quick": opts.quick, "machine": machine_info(), "device": device,
            "method": {"timing": opts.policy.as_dict(), "clock": "time.perf_counter_ns",
                       "order": "the implementations of a case are timed in interleaved rounds, after all "
                                "of them passed their checks",
                       "cold": COLD_METHOD if opts.cold else "not measured (--no-cold)",
                       "speedup": "baseline median / numba-metal median for the same unit of work",
                       "kernel": "launches on resident device arrays, then metal.synchronize()",
                       "e2e": "to_device of the inputs + output allocation + launches + copy_to_host",
                       "python_max_s": opts.python_max_s},
            "programs": []}


def finish_document(doc: dict, t_start: float) -> dict:
    doc["finished_utc"] = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    doc["wall_s"] = round(time.perf_counter() - t_start, 1)
    if hasattr(os, "getloadavg"):
        doc["machine"]["load_average_end"] = list(os.getloadavg())
    try:
        import numba
        doc["machine"]["numba_threading_layer"] = numba.threading_layer()
    except (ValueError, ImportError):
        doc["machine"]["numba_threading_layer"] = None
    doc["machine"]["omp_wait_policy"] = os.environ.get("OMP_WAIT_POLICY")
    return doc


def validate_document(doc: dict) -> list[str]:
    """Problems with a results document (empty when it follows the schema)."""
    errs = []
    for key in ("schema", "machine", "device", "method", "programs", "quick"):
        if key not in doc:
            errs.append(f"missing top-level key {key!r}")
    if doc.get("schema") != SCHEMA:
        errs.append(f"schema is {doc.get('schema')!r}, expected {SCHEMA!r}")
    dev = doc.get("device", {})
    for key in ("name", "kind", "is_gpu"):
        if key not in dev:
            errs.append(f"device lacks {key!r}")
    for p in doc.get("programs", []):
        for key in ("name", "title", "summary", "x_axis", "variants", "cases"):
            if key not in p:
                errs.append(f"program {p.get('name')} lacks {key!r}")
        for c in p.get("cases", []):
            where = f"{p.get('name')}/{c.get('id')}"
            for key in ("id", "variant", "size", "x", "checks", "timings", "correct"):
                if key not in c:
                    errs.append(f"{where} lacks {key!r}")
            for name, st in c.get("timings", {}).items():
                if name not in c.get("checks", {}) and not name.startswith("metal") and \
                        p.get("comparison") != "compile":
                    errs.append(f"{where}: {name} is timed but has no check")
                if not name.startswith("metal") and name in c.get("checks", {}) and \
                        not c["checks"][name].get("ok"):
                    errs.append(f"{where}: {name} is timed although its check failed")
                for k in ("median_ns", "min_ns", "max_ns", "repeats"):
                    if k not in st:
                        errs.append(f"{where}: timing {name} lacks {k!r}")
                if all(k in st for k in ("median_ns", "min_ns", "max_ns")) and \
                        not st["min_ns"] <= st["median_ns"] <= st["max_ns"]:
                    errs.append(f"{where}: timing {name} has min <= median <= max violated")
            if any(n.startswith("metal") for n in c.get("timings", {})) and \
                    not c.get("checks", {}).get("metal", {}).get("ok") and p.get("comparison") != "compile":
                errs.append(f"{where}: numba-metal is timed without a passing check")
    return errs


def fmt_ns(ns) -> str:
    if ns is None:
        return "–"
    ns = float(ns)
    if ns < 1e3:
        return f"{ns:.0f} ns"
    if ns < 1e6:
        return f"{ns / 1e3:.1f} µs"
    if ns < 1e9:
        return f"{ns / 1e6:.2f} ms"
    return f"{ns / 1e9:.2f} s"


def fmt_x(x) -> str:
    if x is None:
        return "–"
    if x >= 100:
        return f"{x:.0f}×"
    if x >= 10:
        return f"{x:.1f}×"
    return f"{x:.2f}×"


def device_banner(doc: dict) -> str:
    dev = doc["device"]
    if dev.get("is_gpu"):
        return f"Device: {dev['name']} (Metal GPU)."
    return (f"Device: {dev['name']} (kind {dev['kind']!r}). These numba-metal figures measure numba-metal's "
            f"CPU REFERENCE DEVICE (the generated MSL compiled by clang and run on this machine's CPU "
            f"cores), NOT a GPU. They say nothing about Apple-GPU speed.")


def text_report(doc: dict) -> str:
    m = doc["machine"]
    lines = [f"numba-metal benchmarks ({'quick' if doc['quick'] else 'full'} run, {doc.get('started_utc', '')})",
             device_banner(doc),
             f"Machine: {m['cpu']}, {m['usable_cores']} cores, {m['os']}; Python {m['python']}, NumPy "
             f"{m['numpy']}, Numba {m['numba']} ({m['numba_threads']} threads), numba-metal {m['numba_metal']}"
             f" ({m.get('numba_metal_git')}); load average at start {m.get('load_average')}",
             "Times are medians; speedup = baseline / numba-metal (kernel-only, and end to end in brackets).",
             ""]
    for p in doc["programs"]:
        lines.append(f"== {p['title']} ({p['name']}) ==")
        if p.get("comparison") == "compile":
            for c in p["cases"]:
                lines.append(f"  {c['id']}: " + "; ".join(
                    f"{k} {fmt_ns(v['median_ns'])}" for k, v in c["timings"].items()))
                for chk in c["checks"].values():
                    lines.append(f"    check: {chk['detail']}")
                for n in c.get("notes", []):
                    lines.append(f"    note: {n}")
            lines.append("")
            continue
        head = (f"  {'case':<28} {'ok':<3} {'python':>10} {'numpy':>10} {'numba 1t':>10} {'numba par':>10} "
                f"{'metal kern':>10} {'metal e2e':>10} {'cold':>10}  speedup vs numpy / 1t / par")
        lines.append(head)
        for c in p["cases"]:
            t = c["timings"]
            sp = c.get("speedups", {})
            cold = c.get("cold", {}).get("cold_ns")

            def s(b):
                k = sp.get("kernel", {}).get(b)
                e = sp.get("e2e", {}).get(b)
                return "–" if k is None else f"{fmt_x(k)} ({fmt_x(e)})"
            lines.append(
                f"  {c['id']:<28} {'yes' if c.get('correct') else 'NO':<3} "
                + " ".join(f"{fmt_ns(t.get(b, {}).get('median_ns')):>10}" for b in BASELINES)
                + f" {fmt_ns(t.get('metal_kernel', {}).get('median_ns')):>10}"
                + f" {fmt_ns(t.get('metal_e2e', {}).get('median_ns')):>10} {fmt_ns(cold):>10}"
                + f"  {s('numpy')} / {s('numba_1t')} / {s('numba_parallel')}")
            if c.get("error"):
                lines.append(f"      ERROR: {c['error']}")
            for name, chk in c["checks"].items():
                if not chk.get("ok"):
                    lines.append(f"      check {name} FAILED: {chk.get('detail')}")
        lines.append("")
    return "\n".join(lines)


def default_progress(quiet: bool = False):
    start = time.perf_counter()

    def say(msg: str) -> None:
        if quiet:
            return
        el = time.perf_counter() - start
        sys.stderr.write(f"[{int(el // 60):02d}:{el % 60:04.1f}] {msg}\n")
        sys.stderr.flush()
    return say


def add_common_arguments(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("--quick", action="store_true", help="small sizes only (a few minutes in all)")
    ap.add_argument("--json", metavar="OUT", help="write the results document to OUT")
    ap.add_argument("--device", default="auto", choices=("auto", "metal", "cpu"),
                    help="auto: the Metal GPU if present, else numba-metal's CPU reference device")
    ap.add_argument("--no-cold", action="store_true", help="skip the cold runs in fresh processes")
    ap.add_argument("--variant", action="append", default=[], help="only this variant (repeatable)")
    ap.add_argument("--size", action="append", default=[], help="only this size label (repeatable)")
    ap.add_argument("--repeats", type=int, help="minimum timed repeats (default 3)")
    ap.add_argument("--budget", type=float, help="seconds of repeats per measurement (default 2)")
    ap.add_argument("--quiet", action="store_true", help="no progress lines on stderr")


def options_from(args) -> RunOptions:
    policy = TimingPolicy()
    if args.repeats:
        policy.min_repeats = args.repeats
        policy.max_repeats = max(policy.max_repeats, args.repeats)
    if args.budget is not None:
        policy.budget_s = args.budget
    return RunOptions(quick=args.quick, device=args.device, cold=not args.no_cold, policy=policy,
                      only_variants=tuple(args.variant), only_sizes=tuple(args.size),
                      progress=default_progress(args.quiet))


def main(program_file: str, argv=None) -> int:
    """Command line of one benchmark program (``python benchmarks/mandelbrot.py --quick``)."""
    prog = load_program(program_file)
    ap = argparse.ArgumentParser(description=f"{prog.title}: {prog.summary}")
    add_common_arguments(ap)
    args = ap.parse_args(argv)
    opts = options_from(args)
    t0 = time.perf_counter()
    device = choose_device(opts.device)
    if not device["is_gpu"]:
        opts.progress(f"no Metal GPU in use: measuring numba-metal's CPU reference device ({device['name']})")
    doc = new_document(opts, device, [os.path.relpath(program_file, REPO)] + list(argv or sys.argv[1:]))
    doc["programs"].append(run_program(prog, opts))
    finish_document(doc, t0)
    print(text_report(doc))
    if args.json:
        write_json(doc, args.json)
    return 0 if all(c.get("correct") for p in doc["programs"] for c in p["cases"]) else 1


def write_json(doc: dict, path: str) -> None:
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w") as f:
        json.dump(doc, f, indent=1, sort_keys=False, allow_nan=False)
        f.write("\n")


if __name__ == "__main__":
    if len(sys.argv) >= 4 and sys.argv[1] == "--cold-child":
        _ap = argparse.ArgumentParser()
        _ap.add_argument("--cold-child", nargs=2)
        _ap.add_argument("--device", default="auto")
        _ap.add_argument("--quick", action="store_true")
        _a = _ap.parse_args()
        import bench_common as _bc  # the module the programs import, not a second copy as __main__
        _res = _bc._cold_child(_a.cold_child[0], _a.cold_child[1], _a.device, _a.quick)
        print("NM-BENCH-COLD " + json.dumps(_res, allow_nan=False))
    else:
        sys.exit("bench_common.py is the shared harness; run a benchmark program or run_all.py")
