"""Arithmetic-average Asian call: the payoff is max(mean of the 500 daily prices − K, 0).

The standard normal draws are generated once on the host (float32, shape paths × 500) and are an input
of every implementation, so all of them compute the same price and the check is deterministic: the
price must match a float64 computation from the same draws to a relative 2e-5 (float32 rounding over
500 multiplicative steps and a 500-term mean). The kernel reads ``z[p, step]`` (2-D indexing), one
thread per path.

Variants: ``host_reduced`` copies the payoffs back and averages them with NumPy; ``device_reduced``
sums them on the device with ``metal.reduce_sum``. End to end includes uploading the draws (paths × 500
float32), which dominates it.

    python benchmarks/asian_option_pricing.py [--quick] [--json out.json]
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

S0, K, R, SIGMA, T, STEPS = 100.0, 100.0, 0.05, 0.25, 2.0, 500
DT = T / STEPS
DRIFT = np.float32((R - 0.5 * SIGMA * SIGMA) * DT)
VOL = np.float32(SIGMA * math.sqrt(DT))
DISC = np.float32(math.exp(-R * T))
THREADS = 256


def asian_loop(z, s0, k, drift, vol, disc, payoff):
    """Plain Python and the body of both Numba versions."""
    npaths, nsteps = z.shape
    for p in numba.prange(npaths):
        s = s0
        acc = np.float32(0.0)
        for t in range(nsteps):
            s = s * math.exp(drift + vol * z[p, t])
            acc += s
        payoff[p] = disc * max(acc / nsteps - k, np.float32(0.0))


asian_1t = numba.njit(asian_loop)
asian_par = numba.njit(parallel=True)(asian_loop)


def asian_numpy(z, dtype=np.float32):
    z = z.astype(dtype, copy=False)
    logs = np.cumsum(dtype(DRIFT) + dtype(VOL) * z, axis=1, dtype=dtype)
    avg = (dtype(S0) * np.exp(logs)).mean(axis=1, dtype=dtype)
    return float(np.mean(dtype(DISC) * np.maximum(avg - dtype(K), 0), dtype=np.float64))


def asian_reference(z):
    """float64, by the same multiplicative recurrence as the loops."""
    z = z.astype(np.float64)
    s = np.full(z.shape[0], S0)
    acc = np.zeros(z.shape[0])
    drift, vol = float(DRIFT), float(VOL)
    for t in range(z.shape[1]):
        s *= np.exp(drift + vol * z[:, t])
        acc += s
    return float(np.mean(float(DISC) * np.maximum(acc / z.shape[1] - K, 0)))


@metal.jit
def asian_kernel(z, s0, k, drift, vol, disc, payoff):
    p = metal.grid(1)
    if p < payoff.size:
        nsteps = z.shape[1]
        s = s0
        acc = np.float32(0.0)
        for t in range(nsteps):
            s = s * math.exp(drift + vol * z[p, t])
            acc += s
        payoff[p] = disc * max(acc / nsteps - k, np.float32(0.0))


SCALARS = (np.float32(S0), np.float32(K), DRIFT, VOL, DISC)


def _setup(n):
    def setup():
        return np.random.default_rng(23).standard_normal((n, STEPS), dtype=np.float32)
    return setup


def _loop_impl(fn):
    def run(z):
        payoff = np.empty(z.shape[0], np.float32)
        fn(z, *SCALARS, payoff)
        return float(payoff.mean(dtype=np.float64))
    return run


def _metal_impl(device_reduced: bool):
    def upload(z):
        st = {"z": metal.to_device(z), "payoff": metal.device_array(z.shape[0], np.float32)}
        if device_reduced:
            st["sum"] = metal.device_array(1, np.float32)
        return st

    def launch(st):
        n = st["payoff"].size
        asian_kernel[(n + THREADS - 1) // THREADS, THREADS](st["z"], *SCALARS, st["payoff"])
        if device_reduced:
            metal.reduce_sum(st["payoff"], res=st["sum"])

    def download(st):
        n = st["payoff"].size
        if device_reduced:
            return float(st["sum"].copy_to_host()[0]) / n
        return float(st["payoff"].copy_to_host().mean(dtype=np.float64))
    return bc.MetalImpl(upload, launch, download, kernels=(asian_kernel,),
                        note=("payoffs summed on the device (metal.reduce_sum)" if device_reduced else
                              "payoffs copied back and averaged with NumPy"))


def _check(price, ref):
    return bc.check_scalar(price, ref, tol=2e-5 * abs(ref), what="price vs float64 from the same draws")


def _extra(z, outputs):
    return {"prices": {k: float(v) for k, v in outputs.items()}, "draws_bytes": int(z.nbytes)}


def cases(quick: bool):
    sizes = [2_000, 10_000] if quick else [10_000, 100_000, 200_000]
    res = []
    for variant in ("host_reduced", "device_reduced"):
        for n in sizes:
            res.append(bc.Case(
                variant=variant, size=f"{n:,}", x=n, params={"paths": n, "steps": STEPS},
                setup=_setup(n), reference=asian_reference, check=_check,
                baselines={"python": _loop_impl(asian_loop) if n == sizes[0] else
                           "plain Python only at the smallest size",
                           "numpy": asian_numpy, "numba_1t": _loop_impl(asian_1t),
                           "numba_parallel": _loop_impl(asian_par)},
                metal=_metal_impl(variant == "device_reduced"), numba_dispatchers=(asian_1t, asian_par),
                baseline_key=f"paths/{n}", extra=_extra,
                work=f"{n:,} paths × {STEPS} steps from given normal draws, to one price"))
    return res


PROGRAM = bc.Program(
    name="asian_option_pricing",
    title="Asian option pricing",
    summary=("Prices an option whose payoff depends on the average share price over 500 days, by "
             "simulating paths from pre-generated random draws (a paths × 500 table read with 2-D "
             "indexing). Each path is a 500-step loop with an exp per step; the table of draws is large, so "
             "uploading it dominates the end-to-end time. Checked against a float64 computation from the "
             "same draws."),
    x_axis="paths",
    variants={"host_reduced": "payoffs copied to the host and averaged there",
              "device_reduced": "payoffs summed on the device with metal.reduce_sum"},
    cases=cases)

if __name__ == "__main__":
    sys.exit(bc.main(__file__))
