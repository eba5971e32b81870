"""All-pairs squared Euclidean distances: D[i, j] = Σ_k (X[i, k] − Y[j, k])² for m points X and n
points Y in d dimensions (float32).

An m×n output from (m + n)·d inputs: the output write dominates the memory traffic, 3·d flops per
output. NumPy uses the fast BLAS identity |x|² + |y|² − 2·x·y (what a NumPy user would write; it loses
a little accuracy to cancellation, hence the absolute tolerance); the loops compute the differences
directly. The reference is computed in float64, in row blocks.

    python benchmarks/pairwise_distance.py [--quick] [--json out.json]
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numba  # noqa: E402
import numpy as np  # noqa: E402

import bench_common as bc  # noqa: E402
from numba_metal import metal  # noqa: E402


def pairwise_loop(x, y, out):
    """Plain Python and the body of both Numba versions."""
    m, d = x.shape
    n = y.shape[0]
    for i in numba.prange(m):
        for j in range(n):
            acc = np.float32(0.0)
            for k in range(d):
                t = x[i, k] - y[j, k]
                acc += t * t
            out[i, j] = acc


pairwise_1t = numba.njit(pairwise_loop)
pairwise_par = numba.njit(parallel=True)(pairwise_loop)


def pairwise_numpy(x, y):
    xx = np.einsum("ij,ij->i", x, x)
    yy = np.einsum("ij,ij->i", y, y)
    return np.maximum(xx[:, None] + yy[None, :] - 2 * (x @ y.T), 0)


def pairwise_reference(x, y, block=256):
    x = x.astype(np.float64)
    y = y.astype(np.float64)
    out = np.empty((x.shape[0], y.shape[0]))
    for s in range(0, x.shape[0], block):
        diff = x[s:s + block, None, :] - y[None, :, :]
        out[s:s + block] = np.einsum("ijk,ijk->ij", diff, diff)
    return out


@metal.jit
def pairwise_kernel(x, y, out):
    j, i = metal.grid(2)
    if i < out.shape[0] and j < out.shape[1]:
        acc = np.float32(0.0)
        for k in range(x.shape[1]):
            t = x[i, k] - y[j, k]
            acc += t * t
        out[i, j] = acc


def _setup(m, n, d):
    def setup():
        rng = np.random.default_rng(5)
        return (rng.standard_normal((m, d), dtype=np.float32), rng.standard_normal((n, d), dtype=np.float32))
    return setup


def _loop_impl(fn):
    def run(inp):
        out = np.empty((inp[0].shape[0], inp[1].shape[0]), np.float32)
        fn(inp[0], inp[1], out)
        return out
    return run


def _upload(inp):
    x, y = inp
    return {"x": metal.to_device(x), "y": metal.to_device(y),
            "out": metal.device_array((x.shape[0], y.shape[0]), np.float32)}


def _launch(st):
    m, n = st["out"].shape
    pairwise_kernel[((n + 15) // 16, (m + 15) // 16), (16, 16)](st["x"], st["y"], st["out"])


def _download(st):
    return st["out"].copy_to_host()


def _check_for(d):
    # Distances are ~2d; float32 rounding of |x|² + |y|² − 2x·y leaves absolute errors ~1e-5·d.
    def check(out, ref):
        return bc.check_allclose(out, ref, rtol=1e-5, atol=1e-4 * d, what="vs float64")
    return check


def cases(quick: bool):
    sizes = [(100, 100, 8), (500, 500, 8)] if quick else [(200, 200, 8), (2000, 2000, 8), (5000, 5000, 16)]
    res = []
    for m, n, d in sizes:
        res.append(bc.Case(
            variant="default", size=f"{m}×{n}×{d}", x=m * n, params={"m": m, "n": n, "d": d},
            setup=_setup(m, n, d), reference=lambda inp: pairwise_reference(*inp), check=_check_for(d),
            baselines={"python": _loop_impl(pairwise_loop) if m * n <= 40_000 else "plain Python only at the smallest size",
                       "numpy": lambda inp: pairwise_numpy(*inp), "numba_1t": _loop_impl(pairwise_1t),
                       "numba_parallel": _loop_impl(pairwise_par)},
            metal=bc.MetalImpl(_upload, _launch, _download, kernels=(pairwise_kernel,)),
            numba_dispatchers=(pairwise_1t, pairwise_par),
            work=f"{m}×{n} distances in {d} dimensions"))
    return res


PROGRAM = bc.Program(
    name="pairwise_distance",
    title="Pairwise distances",
    summary=("Computes the squared distance between every point of one set and every point of another, "
             "as used in clustering and nearest-neighbour search. The output (m×n numbers) is far larger "
             "than the input, so writing it and copying it back is a large part of the cost. NumPy uses "
             "the BLAS identity |x|²+|y|²−2x·y; the loops compute differences directly. Checked against a "
             "float64 computation."),
    x_axis="distances (m×n)",
    variants={"default": "one kernel thread per output distance, 16×16 threadgroups"},
    cases=cases)

if __name__ == "__main__":
    sys.exit(bc.main(__file__))
