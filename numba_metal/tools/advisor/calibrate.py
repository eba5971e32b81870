"""``advisor calibrate``: measure this device and store the figures in the user's cache directory.

The file is ``<cache>/numba-metal/advisor/calibration-<device>.json`` where ``<cache>`` is
``$XDG_CACHE_HOME``, else ``~/Library/Caches`` on macOS and ``~/.cache`` elsewhere; ``<device>`` is
the device kind and a slug of its name. It holds a ``calibration`` document whose ``values`` are
exactly the keys of :data:`~numba_metal.tools.advisor.schema.CALIBRATION_KEYS`; the roofline classifier
reads them through the same constants.

Device times come from ``metal.event()`` pairs (``event_elapsed_time``), i.e. the device's own
timestamps; host times from ``time.perf_counter``.
"""

from __future__ import annotations

import datetime
import json
import os
import re
import statistics
import sys
import time

import numpy as np

from .console import View, device_line
from .measure import describe_device
from .sourcefile import read_json
from .schema import (CAL_ALLOC_US, CAL_BANDWIDTH_GBPS, CAL_COMPILE_PIPELINE_MS, CAL_COMPILE_PYTHON_MS,
                     CAL_COMPUTE_GFLOPS, CAL_COMPUTE_KERNEL_INTENSITY, CAL_COMPUTE_SCALING, CAL_D2H_GBPS,
                     CAL_H2D_GBPS, CAL_LAUNCH_OVERHEAD_US, CAL_LAUNCH_ROUNDTRIP_US, CAL_RIDGE, CALIBRATION_KEYS,
                     SchemaError, new_document, validate)

#: FMA iterations per element of the compute kernel, and its independent chains per iteration.
COMPUTE_ITERS = 256
COMPUTE_CHAINS = 4
#: The compute kernel must have at least this many times the ridge's arithmetic intensity, and its
#: device time must grow at least this much when its FLOPs double, to count as compute-bound.
COMPUTE_INTENSITY_FACTOR = 4.0
COMPUTE_MIN_SCALING = 1.6


def cache_dir() -> str:
    base = os.environ.get("XDG_CACHE_HOME")
    if not base:
        home = os.path.expanduser("~")
        base = os.path.join(home, "Library", "Caches") if sys.platform == "darwin" else os.path.join(home, ".cache")
    return os.path.join(base, "numba-metal", "advisor")


def calibration_path(device: dict | None = None) -> str:
    device = device or describe_device()
    slug = re.sub(r"[^a-z0-9]+", "-", device["name"].lower()).strip("-")[:60] or "device"
    return os.path.join(cache_dir(), f"calibration-{device['kind']}-{slug}.json")


def load(device: dict | None = None) -> dict | None:
    """The stored calibration document of the device in use, or None."""
    path = calibration_path(device)
    try:
        doc = read_json(path)
        validate(doc)
    except (OSError, ValueError, SchemaError):  # SourceError is a ValueError
        return None
    doc["path"] = path
    return doc


# ---------------------------------------------------------------------------------------------
# Kernels
# ---------------------------------------------------------------------------------------------

def _kernels():
    from numba_metal import metal

    @metal.jit
    def touch(out):
        i = metal.grid(1)
        if i < out.size:
            out[i] = out[i] + 1.0

    @metal.jit
    def copy(a, out):
        i = metal.grid(1)
        if i < out.size:
            out[i] = a[i]

    @metal.jit
    def fma_chains(a, out, iters):
        # Four independent multiply-add chains: 8 FLOPs per iteration, 8 bytes of memory traffic
        # per element in total, so intensity = (8 * iters + 3) / 8 FLOP/byte.
        i = metal.grid(1)
        if i < out.size:
            x = a[i]
            y0 = x
            y1 = x + 1.0
            y2 = x + 2.0
            y3 = x + 3.0
            for _ in range(iters):
                y0 = y0 * 0.999 + 0.001
                y1 = y1 * 0.999 + 0.001
                y2 = y2 * 0.999 + 0.001
                y3 = y3 * 0.999 + 0.001
            out[i] = y0 + y1 + y2 + y3

    return touch, copy, fma_chains


def _fresh_kernel(tag: int):
    """A kernel no cache has seen (a unique constant in its body)."""
    from numba_metal import metal
    src = (f"def fresh_{tag}(out):\n    i = metal.grid(1)\n    if i < out.size:\n"
           f"        out[i] = i * {tag}.0 + 0.5\n")
    ns = {"metal": metal}
    exec(compile(src, f"<numba-metal advisor calibrate {tag}>", "exec"), ns)
    return metal.jit(ns[f"fresh_{tag}"])


def _device_seconds(launch, n_launches: int) -> float:
    """Device time of ``n_launches`` calls of ``launch()`` between two events, per launch."""
    from numba_metal import metal
    start, end = metal.event(), metal.event()
    start.record()
    for _ in range(n_launches):
        launch()
    end.record()
    end.synchronize()
    return metal.event_elapsed_time(start, end) / 1e3 / n_launches


def _grid(n, tpb=256):
    return ((n + tpb - 1) // tpb, tpb)


def _sized(n_start: int, n_max: int, target_s: float, measure) -> tuple[int, float]:
    """Grow n until one measurement takes about target_s (or n reaches n_max); returns (n, seconds)."""
    n = n_start
    t = measure(n)
    while t < target_s and n < n_max:
        factor = min(16.0, target_s / t) if t > 0 else 16.0
        n = min(n_max, max(2 * n, int(n * factor)))
        t = measure(n)
    return n, t


def measure_all(quick: bool) -> tuple[dict, dict, list]:
    from numba_metal import metal, profiling
    reps = 5 if quick else 15
    touch, copy, fma_chains = _kernels()
    values, method, checks = {}, {}, []

    # Launch overhead and round trip (after the kernel is compiled).
    one = metal.to_device(np.zeros(1, np.float32))
    touch[1, 1](one)
    metal.synchronize()
    host = []
    for _ in range(50 if quick else 400):
        t0 = time.perf_counter()
        touch[1, 1](one)
        host.append(time.perf_counter() - t0)
    metal.synchronize()
    values[CAL_LAUNCH_OVERHEAD_US] = statistics.median(host) * 1e6
    method[CAL_LAUNCH_OVERHEAD_US] = f"median host time of {len(host)} asynchronous launches of a 1-thread kernel"
    rt = []
    for _ in range(20 if quick else 200):
        t0 = time.perf_counter()
        touch[1, 1](one)
        metal.synchronize()
        rt.append(time.perf_counter() - t0)
    values[CAL_LAUNCH_ROUNDTRIP_US] = statistics.median(rt) * 1e6
    method[CAL_LAUNCH_ROUNDTRIP_US] = f"median of {len(rt)} launch + metal.synchronize() of a 1-thread kernel"

    # Compile time of a kernel no cache has seen.
    py_ms, pipe_ms = [], []
    for k in range(1 if quick else 3):
        events = []
        profiling.add_listener(events.append)
        try:
            fresh = _fresh_kernel(time.time_ns() % 1_000_000_007 + k)
            fresh[1, 1](one)
            metal.synchronize()
        finally:
            profiling.remove_listener(events.append)
        for e in events:
            if e.kind == "compile":
                (py_ms if e.stage == "python" else pipe_ms).append((e.end_ns - e.start_ns) / 1e6)
                if e.stage == "pipeline" and e.from_cache:
                    checks.append({"name": "compile measured cold", "ok": False,
                                   "detail": "the pipeline came from a cache; compile_pipeline_ms is too low"})
    values[CAL_COMPILE_PYTHON_MS] = statistics.median(py_ms) if py_ms else 0.0
    values[CAL_COMPILE_PIPELINE_MS] = statistics.median(pipe_ms) if pipe_ms else 0.0
    method[CAL_COMPILE_PYTHON_MS] = "numba_metal.profiling compile event, stage 'python', of a new kernel"
    method[CAL_COMPILE_PIPELINE_MS] = "numba_metal.profiling compile event, stage 'pipeline', of a new kernel"

    # Allocation and transfers.
    al = []
    for _ in range(20 if quick else 200):
        t0 = time.perf_counter()
        metal.device_array(1024, np.float32)
        al.append(time.perf_counter() - t0)
    values[CAL_ALLOC_US] = statistics.median(al) * 1e6
    method[CAL_ALLOC_US] = f"median host time of {len(al)} metal.device_array(1024, float32) (4 KiB)"
    nbytes = (8 if quick else 64) << 20
    host_arr = np.ones(nbytes // 4, np.float32)
    h2d, d2h = [], []
    for _ in range(3):
        t0 = time.perf_counter()
        d = metal.to_device(host_arr)
        h2d.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        d.copy_to_host()
        d2h.append(time.perf_counter() - t0)
    values[CAL_H2D_GBPS] = nbytes / statistics.median(h2d) / 1e9
    values[CAL_D2H_GBPS] = nbytes / statistics.median(d2h) / 1e9
    method[CAL_H2D_GBPS] = f"metal.to_device of {nbytes >> 20} MiB, median of 3"
    method[CAL_D2H_GBPS] = f"copy_to_host of {nbytes >> 20} MiB, median of 3"
    del host_arr

    # Memory bandwidth: a copy kernel, 8 bytes of traffic per element.
    def copy_time(n):
        a = metal.to_device(np.ones(n, np.float32))   # a written source (the sanitizer's init check reads it)
        o = metal.device_array(n, np.float32)
        g, b = _grid(n)
        copy[g, b](a, o)
        metal.synchronize()
        return statistics.median(_device_seconds(lambda: copy[g, b](a, o), 1) for _ in range(reps))
    n_bw, t_bw = _sized(1 << 16, (4 if quick else 32) << 20, 0.002 if quick else 0.02, copy_time)
    values[CAL_BANDWIDTH_GBPS] = 8 * n_bw / t_bw / 1e9
    method[CAL_BANDWIDTH_GBPS] = (f"copy kernel out[i] = a[i] over {n_bw} float32 elements (8 bytes per element), "
                                  f"median device time of {reps} launches from metal.event() timestamps")

    # Compute throughput: the FMA kernel, sized to run long enough, then with twice the FLOPs.
    def fma_time(n, iters=COMPUTE_ITERS):
        a = metal.to_device(np.linspace(0, 1, n, dtype=np.float32))
        o = metal.device_array(n, np.float32)
        g, b = _grid(n)
        fma_chains[g, b](a, o, iters)
        metal.synchronize()
        return statistics.median(_device_seconds(lambda: fma_chains[g, b](a, o, iters), 1)
                                 for _ in range(max(3, reps // 3)))
    n_c, t_c = _sized(1 << 12, 16 << 20, 0.01 if quick else 0.05, fma_time)
    flops_per_element = 2 * COMPUTE_CHAINS * COMPUTE_ITERS + 3
    values[CAL_COMPUTE_GFLOPS] = flops_per_element * n_c / t_c / 1e9
    values[CAL_COMPUTE_KERNEL_INTENSITY] = flops_per_element / 8
    t_c2 = fma_time(n_c, 2 * COMPUTE_ITERS)
    values[CAL_COMPUTE_SCALING] = t_c2 / t_c
    values[CAL_RIDGE] = values[CAL_COMPUTE_GFLOPS] / values[CAL_BANDWIDTH_GBPS]
    method[CAL_COMPUTE_GFLOPS] = (f"{COMPUTE_CHAINS} independent float32 multiply-add chains x {COMPUTE_ITERS} "
                                  f"iterations per element ({flops_per_element} FLOPs per 8 bytes) over {n_c} "
                                  "elements, median device time")
    method[CAL_COMPUTE_KERNEL_INTENSITY] = "FLOPs per byte of the compute kernel, from its code"
    method[CAL_COMPUTE_SCALING] = f"device time with {2 * COMPUTE_ITERS} iterations / with {COMPUTE_ITERS}"
    method[CAL_RIDGE] = f"{CAL_COMPUTE_GFLOPS} / {CAL_BANDWIDTH_GBPS}"

    intensity_ok = values[CAL_COMPUTE_KERNEL_INTENSITY] >= COMPUTE_INTENSITY_FACTOR * values[CAL_RIDGE]
    checks.append({"name": "compute kernel intensity far above the ridge", "ok": intensity_ok,
                   "detail": f"{values[CAL_COMPUTE_KERNEL_INTENSITY]:.0f} FLOP/byte vs ridge "
                             f"{values[CAL_RIDGE]:.2f} (needs at least {COMPUTE_INTENSITY_FACTOR:.0f}x)"})
    scaling_ok = values[CAL_COMPUTE_SCALING] >= COMPUTE_MIN_SCALING
    checks.append({"name": "compute kernel time follows its FLOPs", "ok": scaling_ok,
                   "detail": f"doubling the FLOPs multiplied device time by {values[CAL_COMPUTE_SCALING]:.2f} "
                             f"(needs at least {COMPUTE_MIN_SCALING})"})
    return values, method, checks


def run(quick: bool = False) -> dict:
    device = describe_device()
    values, method, checks = measure_all(quick)
    assert set(values) == set(CALIBRATION_KEYS), "calibrate must write every calibration key"
    path = calibration_path(device)
    doc = new_document("calibration", device=device,
                       created=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
                       path=path, values={k: float(values[k]) for k in CALIBRATION_KEYS},
                       method={k: method[k] for k in CALIBRATION_KEYS}, checks=checks)
    if quick:
        doc["checks"].append({"name": "full-size measurement", "ok": False,
                              "detail": "--quick: small sizes and few repeats; run without --quick for figures "
                                        "to rely on"})
    validate(doc)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = path + f".{os.getpid()}.tmp"
    with open(tmp, "w", encoding="utf-8") as fh:
        json.dump(doc, fh, indent=2)
    os.replace(tmp, path)
    return doc


_UNITS = {CAL_LAUNCH_OVERHEAD_US: "us", CAL_LAUNCH_ROUNDTRIP_US: "us", CAL_COMPILE_PYTHON_MS: "ms",
          CAL_COMPILE_PIPELINE_MS: "ms", CAL_ALLOC_US: "us", CAL_H2D_GBPS: "GB/s", CAL_D2H_GBPS: "GB/s",
          CAL_BANDWIDTH_GBPS: "GB/s", CAL_COMPUTE_GFLOPS: "GFLOP/s", CAL_COMPUTE_KERNEL_INTENSITY: "FLOP/B",
          CAL_COMPUTE_SCALING: "x", CAL_RIDGE: "FLOP/B"}


def render(doc: dict, view: View) -> None:
    view.title("numba-metal advisor calibrate")
    dev = doc["device"]
    view.kv([("device", f"{device_line(dev)}: {dev['note']}"), ("measured", doc["created"]),
             ("stored in", doc["path"] or "-")])
    view.section("Figures (keys read by the roofline classification)")
    rows = [[k, f"{doc['values'][k]:.4g}", _UNITS[k]] for k in CALIBRATION_KEYS]
    view.table([("key", "left"), ("value", "right"), ("unit", "left")], rows)
    view.section("How each figure was measured")
    for k in CALIBRATION_KEYS:
        view.wrapped(f"- {k}: {doc['method'][k]}", hang=2)
    view.section("Checks")
    for c in doc["checks"]:
        view.wrapped(f"[{'ok' if c['ok'] else 'FAILED'}] {c['name']}: {c['detail']}", hang=4,
                     style=None if c["ok"] else "yellow")
