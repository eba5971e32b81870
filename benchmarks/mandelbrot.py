"""Mandelbrot escape time: for each pixel c of the plane x in [-2.5, 1], y in [-1, 1], iterate
z = z² + c from 0 until |z|² > 4 or 100 iterations, and store the iteration count.

Compute-bound with a data-dependent early exit per pixel (a `break`), so neighbouring work-items
finish at different times: the classic case where a GPU's many threads win.

Every implementation computes in float32 (Apple GPUs have no float64). Tolerance: the escape counts
must equal the float32 NumPy reference, except that at most 0.1% of the pixels may differ by exactly
one (a fused multiply-add, which clang and Metal may use, can move a boundary pixel across the escape
threshold one iteration earlier or later); any difference larger than one fails. How far a float32
result is from float64 is reported beside it, for information only, never as the pass mark.

    python benchmarks/mandelbrot.py [--quick] [--json out.json]
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numba  # noqa: E402
import numpy as np  # noqa: E402

import bench_common as bc  # noqa: E402
from numba_metal import metal  # noqa: E402

MAX_ITER = 100
XMIN, XMAX, YMIN, YMAX = -2.5, 1.0, -1.0, 1.0
OFF_BY_ONE_FRACTION = 0.001


def mandel_loop(xmin, ymin, dx, dy, max_iter, out):
    """Plain Python (on NumPy float32 scalars) and the body of both Numba versions."""
    h, w = out.shape
    for i in numba.prange(h):
        ci = ymin + np.float32(i) * dy
        for j in range(w):
            cr = xmin + np.float32(j) * dx
            zr = np.float32(0.0)
            zi = np.float32(0.0)
            n = 0
            while n < max_iter:
                zr2 = zr * zr
                zi2 = zi * zi
                if zr2 + zi2 > np.float32(4.0):
                    break
                zi = (zr + zr) * zi + ci
                zr = zr2 - zi2 + cr
                n += 1
            out[i, j] = n


mandel_1t = numba.njit(mandel_loop)
mandel_par = numba.njit(parallel=True)(mandel_loop)


@metal.jit
def mandel_kernel(xmin, ymin, dx, dy, max_iter, out):
    j, i = metal.grid(2)
    if i < out.shape[0] and j < out.shape[1]:
        ci = ymin + np.float32(i) * dy
        cr = xmin + np.float32(j) * dx
        zr = np.float32(0.0)
        zi = np.float32(0.0)
        n = 0
        while n < max_iter:
            zr2 = zr * zr
            zi2 = zi * zi
            if zr2 + zi2 > np.float32(4.0):
                break
            zi = (zr + zr) * zi + ci
            zr = zr2 - zi2 + cr
            n += 1
        out[i, j] = n


def mandel_numpy(xmin, ymin, dx, dy, max_iter, shape, dtype=np.float32):
    """Vectorised: every pixel runs all iterations, a mask stops the counts of escaped ones."""
    h, w = shape
    ci = (dtype(ymin) + np.arange(h, dtype=dtype) * dtype(dy))[:, None] * np.ones((1, w), dtype)
    cr = np.ones((h, 1), dtype) * (dtype(xmin) + np.arange(w, dtype=dtype) * dtype(dx))[None, :]
    zr = np.zeros(shape, dtype)
    zi = np.zeros(shape, dtype)
    n = np.zeros(shape, np.int32)
    alive = np.ones(shape, bool)
    with np.errstate(over="ignore", invalid="ignore"):
        for _ in range(max_iter):
            zr2 = zr * zr
            zi2 = zi * zi
            alive &= ~(zr2 + zi2 > 4)
            zi = (zr + zr) * zi + ci
            zr = zr2 - zi2 + cr
            n += alive
    return n


def _params(n):
    return (np.float32(XMIN), np.float32(YMIN), np.float32((XMAX - XMIN) / n), np.float32((YMAX - YMIN) / n))


def _setup(n):
    return lambda: {"n": n, "p": _params(n)}


def _loop_impl(fn):
    def run(inp):
        out = np.empty((inp["n"], inp["n"]), np.int32)
        fn(*inp["p"], MAX_ITER, out)
        return out
    return run


def _numpy(inp):
    return mandel_numpy(*inp["p"], MAX_ITER, (inp["n"], inp["n"]))


def _reference(inp):
    return _numpy(inp)


def _check(out, ref):
    return bc.check_near_integer(out, ref, max_off_by_one_fraction=OFF_BY_ONE_FRACTION,
                                 what="vs float32 NumPy reference")


def _upload(inp):
    return {"p": inp["p"], "out": metal.device_array((inp["n"], inp["n"]), np.int32)}


def _launch(st):
    h, w = st["out"].shape
    mandel_kernel[((w + 15) // 16, (h + 15) // 16), (16, 16)](*st["p"], MAX_ITER, st["out"])


def _download(st):
    return st["out"].copy_to_host()


def _extra(inp, outputs):
    """For information: how far the float32 counts are from a float64 computation of the same plane."""
    if inp["n"] > 2048 or "metal" not in outputs:
        return {}
    ref64 = mandel_numpy(XMIN, YMIN, (XMAX - XMIN) / inp["n"], (YMAX - YMIN) / inp["n"], MAX_ITER,
                         (inp["n"], inp["n"]), np.float64)
    diff = np.abs(outputs["metal"].astype(np.int64) - ref64)
    return {"float64_comparison": (f"numba-metal float32 vs a float64 computation (information only, not a "
                                   f"check): {int(np.count_nonzero(diff))} of {diff.size} pixels differ, "
                                   f"{int(np.count_nonzero(diff > 1))} by more than one"),
            "mean_iterations": float(outputs["metal"].mean())}


def cases(quick: bool):
    sizes = [128, 256] if quick else [512, 2048, 4096]
    res = []
    for n in sizes:
        res.append(bc.Case(
            variant="default", size=f"{n}²", x=n * n, params={"width": n, "height": n, "max_iter": MAX_ITER},
            setup=_setup(n), reference=_reference, check=_check,
            baselines={"python": _loop_impl(mandel_loop) if n <= 512 else "plain Python only at the smallest size",
                       "numpy": _numpy, "numba_1t": _loop_impl(mandel_1t),
                       "numba_parallel": _loop_impl(mandel_par)},
            metal=bc.MetalImpl(_upload, _launch, _download, kernels=(mandel_kernel,),
                               note="no inputs to upload: the metal_h2d time is the output allocation"),
            numba_dispatchers=(mandel_1t, mandel_par), extra=_extra,
            work=f"{n}×{n} pixels, up to {MAX_ITER} iterations each"))
    return res


PROGRAM = bc.Program(
    name="mandelbrot",
    title="Mandelbrot set",
    summary=("Colours each pixel of the Mandelbrot set by how many iterations of z → z² + c (at most 100) it "
             "takes to escape |z| > 2. Pure arithmetic, no input data, and each pixel stops at its own time "
             "(a per-pixel break): the textbook GPU win. Everything is float32; counts must match a float32 "
             "NumPy reference exactly except ≤0.1% of pixels off by one."),
    x_axis="pixels",
    variants={"default": "one kernel thread per pixel, 16×16 threadgroups; NumPy runs all 100 iterations "
                         "under a mask"},
    cases=cases)

if __name__ == "__main__":
    sys.exit(bc.main(__file__))
