"""Vector polynomial: out[i] = ((1.75 a[i] + 0.25 b[i])² - a[i] b[i]) / (|b[i]| + 1).

Eight floating-point operations per element against 12 bytes of memory traffic: a memory-bound map,
the case where a GPU's compute hardly matters and transfers decide the end-to-end result.

    python benchmarks/vector_polynomial.py [--quick] [--json out.json]
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numba  # noqa: E402
import numpy as np  # noqa: E402

import bench_common as bc  # noqa: E402
from numba_metal import metal  # noqa: E402


def poly_loop(a, b, out):
    """Plain Python, and the body of both Numba versions (prange is range outside parallel=True)."""
    for i in numba.prange(a.shape[0]):
        x = a[i]
        y = b[i]
        t = 1.75 * x + 0.25 * y
        out[i] = (t * t - x * y) / (abs(y) + 1.0)


poly_1t = numba.njit(poly_loop)
poly_par = numba.njit(parallel=True)(poly_loop)


@metal.jit
def poly_kernel(a, b, out):
    i = metal.grid(1)
    if i < out.size:
        x = a[i]
        y = b[i]
        t = 1.75 * x + 0.25 * y
        out[i] = (t * t - x * y) / (abs(y) + 1.0)


def poly_numpy(a, b):
    t = 1.75 * a + 0.25 * b
    return (t * t - a * b) / (np.abs(b) + 1)


THREADS = 256


def _with_out(fn):
    def run(inp):
        out = np.empty_like(inp[0])
        fn(inp[0], inp[1], out)
        return out
    return run


def _upload(inp):
    a, b = inp
    return {"a": metal.to_device(a), "b": metal.to_device(b), "out": metal.device_array(a.shape, np.float32)}


def _launch(st):
    n = st["out"].size
    poly_kernel[(n + THREADS - 1) // THREADS, THREADS](st["a"], st["b"], st["out"])


def _download(st):
    return st["out"].copy_to_host()


def _setup(n):
    def setup():
        rng = np.random.default_rng(7)
        return (rng.standard_normal(n, dtype=np.float32), rng.standard_normal(n, dtype=np.float32))
    return setup


def _reference(inp):
    a, b = (x.astype(np.float64) for x in inp)
    return poly_numpy(a, b)


def _check(out, ref):
    return bc.check_allclose(out, ref, rtol=1e-5, atol=1e-6, what="vs float64 NumPy")


def cases(quick: bool):
    sizes = [10_000, 100_000] if quick else [10_000, 1_000_000, 10_000_000]
    res = []
    for n in sizes:
        res.append(bc.Case(
            variant="default", size=f"{n:,}", x=n, params={"n": n}, setup=_setup(n), reference=_reference,
            check=_check,
            baselines={"python": _with_out(poly_loop) if n <= 10_000 else "plain Python only at 10,000 elements",
                       "numpy": lambda inp: poly_numpy(*inp), "numba_1t": _with_out(poly_1t),
                       "numba_parallel": _with_out(poly_par)},
            metal=bc.MetalImpl(_upload, _launch, _download, kernels=(poly_kernel,)),
            numba_dispatchers=(poly_1t, poly_par),
            work=f"one pass over {n:,} float32 elements (2 inputs, 1 output)"))
    return res


PROGRAM = bc.Program(
    name="vector_polynomial",
    title="Vector polynomial",
    summary=("Evaluates out = ((1.75a + 0.25b)² − ab) / (|b| + 1) for every element of two float32 vectors: "
             "a handful of arithmetic operations per 12 bytes moved, so memory bandwidth and transfers, not "
             "arithmetic, decide the time. Checked against a float64 NumPy evaluation."),
    x_axis="elements",
    variants={"default": "one kernel thread per element"},
    cases=cases)

if __name__ == "__main__":
    sys.exit(bc.main(__file__))
