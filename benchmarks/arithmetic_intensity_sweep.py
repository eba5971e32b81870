"""Arithmetic-intensity sweep: one 3-point stencil whose flops per byte is a parameter.

    x = (a[i−1] + a[i] + a[i+1]) / 3;  repeat R times: x = x·c1 + c2;  out[i] = x

Each element costs 3 + 2R flops against 8 bytes of memory traffic (one float32 read, one write), so
R = 0, 1, 4, 16, 64, 256, 1024 sweeps the intensity from 0.375 to 256 flop/byte: from memory-bound
(where a device's bandwidth, and transfers, decide) to compute-bound (where its arithmetic throughput
decides). The plots use the intensity as their x axis. Edges repeat the end element.

    python benchmarks/arithmetic_intensity_sweep.py [--quick] [--json out.json]
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numba  # noqa: E402
import numpy as np  # noqa: E402

import bench_common as bc  # noqa: E402
from numba_metal import metal  # noqa: E402

C1 = np.float32(0.999)
C2 = np.float32(0.001)
THIRD = np.float32(1.0 / 3.0)
BYTES_PER_ELEMENT = 8
THREADS = 256


def intensity(reps: int) -> float:
    return (3 + 2 * reps) / BYTES_PER_ELEMENT


def stencil_loop(a, out, reps, c1, c2):
    """Plain Python and the body of both Numba versions."""
    n = a.shape[0]
    for i in numba.prange(n):
        left = a[i - 1] if i > 0 else a[i]
        right = a[i + 1] if i < n - 1 else a[i]
        x = (left + a[i] + right) * THIRD
        for _ in range(reps):
            x = x * c1 + c2
        out[i] = x


stencil_1t = numba.njit(stencil_loop)
stencil_par = numba.njit(parallel=True)(stencil_loop)


def stencil_numpy(a, reps, dtype=np.float32):
    a = a.astype(dtype, copy=False)
    p = np.concatenate(([a[0]], a, [a[-1]]))
    x = (p[:-2] + p[1:-1] + p[2:]) * dtype(THIRD)
    c1, c2 = dtype(C1), dtype(C2)
    for _ in range(reps):
        x *= c1
        x += c2
    return x


@metal.jit
def stencil_kernel(a, out, reps, c1, c2):
    i = metal.grid(1)
    n = a.size
    if i < n:
        left = a[i - 1] if i > 0 else a[i]
        right = a[i + 1] if i < n - 1 else a[i]
        x = (left + a[i] + right) * THIRD
        for _ in range(reps):
            x = x * c1 + c2
        out[i] = x


def _setup(n):
    return lambda: np.random.default_rng(31).uniform(-1, 1, n).astype(np.float32)


def _loop_impl(fn, reps):
    def run(a):
        out = np.empty_like(a)
        fn(a, out, reps, C1, C2)
        return out
    return run


def _metal_impl(reps):
    def upload(a):
        return {"a": metal.to_device(a), "out": metal.device_array(a.shape, np.float32)}

    def launch(st):
        n = st["out"].size
        stencil_kernel[(n + THREADS - 1) // THREADS, THREADS](st["a"], st["out"], reps, C1, C2)

    def download(st):
        return st["out"].copy_to_host()
    return bc.MetalImpl(upload, launch, download, kernels=(stencil_kernel,))


def rtol_for(reps: int) -> float:
    """float32 rounding adds up to ~2 ulp per multiply-add; the map contracts by c1 each step, so the
    error grows like 2·2⁻²⁴·min(R, 1/(1 − c1)) (1/(1 − c1) ≈ 1000: at R = 1024 even exact float32
    arithmetic is ~1e-5 away from float64). Twice that, and never below 1e-5."""
    return max(1e-5, 4 * 2.0 ** -24 * (min(reps, 1.0 / (1.0 - float(C1))) + 3))


def _check_for(reps):
    def check(out, ref):
        return bc.check_allclose(out, ref, rtol=rtol_for(reps), atol=1e-6, what="vs float64 NumPy")
    return check


def cases(quick: bool):
    reps_list = [0, 4, 64, 256] if quick else [0, 1, 4, 16, 64, 256, 1024]
    big = 100_000 if quick else 1_000_000
    res = []
    for variant, n in (("small", 10_000), ("large", big)):
        for reps in reps_list:
            res.append(bc.Case(
                variant=variant, size=f"R={reps}", x=intensity(reps),
                params={"n": n, "reps": reps, "flops_per_element": 3 + 2 * reps,
                        "bytes_per_element": BYTES_PER_ELEMENT, "flops_per_byte": intensity(reps)},
                setup=_setup(n), reference=lambda a, r=reps: stencil_numpy(a, r, np.float64),
                check=_check_for(reps),
                baselines={"python": _loop_impl(stencil_loop, reps) if variant == "small" else
                           "plain Python only with 10,000 elements",
                           "numpy": lambda a, r=reps: stencil_numpy(a, r),
                           "numba_1t": _loop_impl(stencil_1t, reps), "numba_parallel": _loop_impl(stencil_par, reps)},
                metal=_metal_impl(reps), numba_dispatchers=(stencil_1t, stencil_par),
                work=f"{n:,} elements × {3 + 2 * reps} flops ({intensity(reps):g} flop/byte)"))
    return res


PROGRAM = bc.Program(
    name="arithmetic_intensity_sweep",
    title="Arithmetic-intensity sweep",
    summary=("One simple stencil (average three neighbours, then R multiply-adds) run at increasing R, so the "
             "work per byte of memory grows from under one flop to hundreds. It shows where a device stops "
             "being limited by memory and transfers and starts being limited by arithmetic; the x axis of "
             "its plots is flops per byte, not size."),
    x_axis="flops per byte",
    variants={"small": "10,000 elements (plain Python measured too)",
              "large": "1,000,000 elements (100,000 with --quick)"},
    cases=cases)

if __name__ == "__main__":
    sys.exit(bc.main(__file__))
