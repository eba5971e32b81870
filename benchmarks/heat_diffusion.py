"""2-D heat diffusion on an n×n grid, 200 explicit time steps, fixed (Dirichlet) edges.

Variants:

* ``linear``: u' = u + α (u_N + u_S + u_E + u_W − 4u), α = 0.2.
* ``nonlinear``: Perona–Malik edge-preserving diffusion: u' = u + dt Σ_d g_d·exp(−(g_d/K)²) over the four
  neighbour differences g_d, dt = 0.2, K = 20 (four exp per point).
* ``nonlinear_copy_every_step``: the nonlinear scheme, but the grid goes to the host and back around
  every step (what code that keeps its data in NumPy between launches pays).
* ``nonlinear_device_function``: the nonlinear scheme with the flux in a ``@metal.jit(device=True)``
  function.

numba-metal keeps two device buffers resident and ping-pongs between them (one launch per step); the
first step reads the resident initial grid, so every run computes the same 200 steps. Every time
covers all 200 steps, for every implementation (never a per-step time against a whole-run time).

    python benchmarks/heat_diffusion.py [--quick] [--json out.json]
"""

from __future__ import annotations

import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numba  # noqa: E402
import numpy as np  # noqa: E402

import bench_common as bc  # noqa: E402
from numba_metal import metal  # noqa: E402

STEPS = 200
ALPHA = np.float32(0.2)
DT = np.float32(0.2)
INV_K = np.float32(1.0 / 20.0)
F4 = np.float32(4.0)


# -- CPU: plain Python and Numba share these loops (prange is range outside parallel=True) ----------

def linear_steps(u0, steps, alpha, out):
    a = u0.copy()
    b = np.empty_like(u0)
    h, w = u0.shape
    for _ in range(steps):
        for i in numba.prange(h):
            for j in range(w):
                if i == 0 or j == 0 or i == h - 1 or j == w - 1:
                    b[i, j] = a[i, j]
                else:
                    c = a[i, j]
                    b[i, j] = c + alpha * (a[i - 1, j] + a[i + 1, j] + a[i, j - 1] + a[i, j + 1] - F4 * c)
        a, b = b, a
    out[:, :] = a


def nonlinear_steps(u0, steps, dt, inv_k, out):
    a = u0.copy()
    b = np.empty_like(u0)
    h, w = u0.shape
    for _ in range(steps):
        for i in numba.prange(h):
            for j in range(w):
                if i == 0 or j == 0 or i == h - 1 or j == w - 1:
                    b[i, j] = a[i, j]
                else:
                    c = a[i, j]
                    gn = a[i - 1, j] - c
                    gs = a[i + 1, j] - c
                    gw = a[i, j - 1] - c
                    ge = a[i, j + 1] - c
                    xn = gn * inv_k
                    xs = gs * inv_k
                    xw = gw * inv_k
                    xe = ge * inv_k
                    b[i, j] = c + dt * (gn * math.exp(-(xn * xn)) + gs * math.exp(-(xs * xs))
                                        + gw * math.exp(-(xw * xw)) + ge * math.exp(-(xe * xe)))
        a, b = b, a
    out[:, :] = a


linear_1t = numba.njit(linear_steps)
linear_par = numba.njit(parallel=True)(linear_steps)
nonlinear_1t = numba.njit(nonlinear_steps)
nonlinear_par = numba.njit(parallel=True)(nonlinear_steps)


def numpy_steps(u0, steps, nonlinear, dtype=np.float32):
    a = u0.astype(dtype)
    b = a.copy()  # edges stay fixed
    c = a[1:-1, 1:-1]
    for _ in range(steps):
        c = a[1:-1, 1:-1]
        g = (a[:-2, 1:-1] - c, a[2:, 1:-1] - c, a[1:-1, :-2] - c, a[1:-1, 2:] - c)
        if nonlinear:
            k = dtype(INV_K)
            b[1:-1, 1:-1] = c + dtype(DT) * sum(gd * np.exp(-((gd * k) ** 2)) for gd in g)
        else:
            b[1:-1, 1:-1] = c + dtype(ALPHA) * (g[0] + g[1] + g[2] + g[3])
        a, b = b, a
    return a


# -- numba-metal ---------------------------------------------------------------------------------

@metal.jit
def linear_kernel(src, dst, alpha):
    j, i = metal.grid(2)
    h, w = src.shape
    if i < h and j < w:
        c = src[i, j]
        if i == 0 or j == 0 or i == h - 1 or j == w - 1:
            dst[i, j] = c
        else:
            dst[i, j] = c + alpha * (src[i - 1, j] + src[i + 1, j] + src[i, j - 1] + src[i, j + 1] - F4 * c)


@metal.jit
def nonlinear_kernel(src, dst, dt, inv_k):
    j, i = metal.grid(2)
    h, w = src.shape
    if i < h and j < w:
        c = src[i, j]
        if i == 0 or j == 0 or i == h - 1 or j == w - 1:
            dst[i, j] = c
        else:
            gn = src[i - 1, j] - c
            gs = src[i + 1, j] - c
            gw = src[i, j - 1] - c
            ge = src[i, j + 1] - c
            xn = gn * inv_k
            xs = gs * inv_k
            xw = gw * inv_k
            xe = ge * inv_k
            dst[i, j] = c + dt * (gn * math.exp(-(xn * xn)) + gs * math.exp(-(xs * xs))
                                  + gw * math.exp(-(xw * xw)) + ge * math.exp(-(xe * xe)))


@metal.jit(device=True)
def pm_flux(g, inv_k):
    x = g * inv_k
    return g * math.exp(-(x * x))


@metal.jit
def nonlinear_devfn_kernel(src, dst, dt, inv_k):
    j, i = metal.grid(2)
    h, w = src.shape
    if i < h and j < w:
        c = src[i, j]
        if i == 0 or j == 0 or i == h - 1 or j == w - 1:
            dst[i, j] = c
        else:
            dst[i, j] = c + dt * (pm_flux(src[i - 1, j] - c, inv_k) + pm_flux(src[i + 1, j] - c, inv_k)
                                  + pm_flux(src[i, j - 1] - c, inv_k) + pm_flux(src[i, j + 1] - c, inv_k))


def _grid(shape):
    h, w = shape
    return ((w + 15) // 16, (h + 15) // 16), (16, 16)


def _resident_impl(kernel, scalars):
    def upload(u0):
        return {"u0": metal.to_device(u0), "a": metal.device_array(u0.shape, np.float32),
                "b": metal.device_array(u0.shape, np.float32)}

    def launch(st):
        blocks, threads = _grid(st["a"].shape)
        launcher = kernel[blocks, threads]
        launcher(st["u0"], st["a"], *scalars)
        src, dst = st["a"], st["b"]
        for _ in range(STEPS - 1):
            launcher(src, dst, *scalars)
            src, dst = dst, src
        st["result"] = src

    def download(st):
        return st["result"].copy_to_host()
    return bc.MetalImpl(upload, launch, download, kernels=(kernel,))


def _copy_every_step_impl():
    scalars = (DT, INV_K)

    def upload(u0):
        return {"u0": u0, "d_src": metal.device_array(u0.shape, np.float32),
                "d_dst": metal.device_array(u0.shape, np.float32),
                "h_a": np.empty_like(u0), "h_b": np.empty_like(u0)}

    def launch(st):
        blocks, threads = _grid(st["u0"].shape)
        launcher = nonlinear_kernel[blocks, threads]
        src, dst = st["u0"], st["h_a"]
        for s in range(STEPS):
            st["d_src"].copy_to_device(src)
            launcher(st["d_src"], st["d_dst"], *scalars)
            st["d_dst"].copy_to_host(dst)  # waits for the launch
            src, dst = dst, (st["h_b"] if dst is st["h_a"] else st["h_a"])
        st["result"] = src

    def download(st):
        return st["result"].copy()
    return bc.MetalImpl(upload, launch, download, kernels=(nonlinear_kernel,),
                        note="copy-every-step variant: the metal_kernel time includes a host-to-device and a "
                             "device-to-host copy around each of the 200 launches, by design")


def _setup(n):
    def setup():
        rng = np.random.default_rng(11)
        u = rng.uniform(0.0, 10.0, (n, n)).astype(np.float32)
        y, x = np.mgrid[0:n, 0:n]
        u[(np.abs(x - n // 3) < n // 6) & (np.abs(y - n // 2) < n // 5)] += 80.0  # a hot block
        u[(x - 2 * n // 3) ** 2 + (y - n // 3) ** 2 < (n // 8) ** 2] += 50.0      # a warm disc
        return u
    return setup


def _loop_impl(fn, *scalars):
    def run(u0):
        out = np.empty_like(u0)
        fn(u0, STEPS, *scalars, out)
        return out
    return run


def _check(out, ref):
    return bc.check_allclose(out, ref, rtol=1e-4, atol=2e-3, what="vs float64 NumPy after 200 steps")


def cases(quick: bool):
    sizes = [32, 64] if quick else [32, 128, 512, 1024]
    res = []
    variants = ("linear", "nonlinear", "nonlinear_copy_every_step", "nonlinear_device_function")
    for variant in variants:
        nonlinear = variant != "linear"
        for n in sizes:
            if nonlinear:
                loop, f1, fp, scal = nonlinear_steps, nonlinear_1t, nonlinear_par, (DT, INV_K)
            else:
                loop, f1, fp, scal = linear_steps, linear_1t, linear_par, (ALPHA,)
            if variant == "nonlinear_copy_every_step":
                impl = _copy_every_step_impl()
            elif variant == "nonlinear_device_function":
                impl = _resident_impl(nonlinear_devfn_kernel, scal)
            else:
                impl = _resident_impl(nonlinear_kernel if nonlinear else linear_kernel, scal)
            res.append(bc.Case(
                variant=variant, size=f"{n}²", x=n * n, params={"n": n, "steps": STEPS},
                setup=_setup(n), reference=lambda u0, nl=nonlinear: numpy_steps(u0, STEPS, nl, np.float64),
                check=_check,
                baselines={"python": _loop_impl(loop, *scal) if n <= (32 if quick else 128) else
                           f"plain Python only up to {32 if quick else 128}²",
                           "numpy": lambda u0, nl=nonlinear: numpy_steps(u0, STEPS, nl),
                           "numba_1t": _loop_impl(f1, *scal), "numba_parallel": _loop_impl(fp, *scal)},
                metal=impl, numba_dispatchers=(f1, fp),
                baseline_key=f"{'nonlinear' if nonlinear else 'linear'}/{n}",
                work=f"{STEPS} time steps on a {n}×{n} float32 grid"))
    return res


PROGRAM = bc.Program(
    name="heat_diffusion",
    title="Heat diffusion (2-D stencil)",
    summary=("Spreads heat across a square plate for 200 small time steps: each step replaces every interior "
             "point by a mix of itself and its four neighbours. The linear version is a cheap 5-point "
             "stencil (memory-bound, and on a device one launch per step); the Perona–Malik version weights "
             "each neighbour by exp(−(difference/K)²), which keeps edges sharp and costs four exponentials "
             "per point. Two variants show what costs extra: copying the grid to the host and back around "
             "every step, and putting the flux in a device function."),
    x_axis="grid points",
    variants={"linear": "5-point linear stencil, resident ping-pong buffers, one launch per step",
              "nonlinear": "Perona–Malik (4 exp per point), resident ping-pong buffers",
              "nonlinear_copy_every_step": "Perona–Malik, grid copied host→device and back around every step",
              "nonlinear_device_function": "Perona–Malik with the flux in a @metal.jit(device=True) function"},
    cases=cases)

if __name__ == "__main__":
    sys.exit(bc.main(__file__))
