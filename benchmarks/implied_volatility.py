"""Implied volatility by Newton–Raphson: for each option, find the σ at which the Black–Scholes call
price equals the quoted price.

Each work-item iterates its own number of times (a ``while`` loop that leaves through
``if abs(diff) < TOL or vega < VEGA_MIN: break``, at most 50 iterations), with the normal CDF written
with ``math.erf``. Options are near the money (K/S in [0.9, 1.1], T in [0.5, 2] years) with true
volatilities in [0.15, 0.6]; quotes are Black–Scholes prices computed in float64 and rounded to
float32. The check compares the recovered σ with the true σ (absolute tolerance 5e-5).

NumPy has no ``erf``; the NumPy version uses ``scipy.special.erf`` (and is skipped, saying so, where
SciPy is not installed) and iterates on the options that have not converged yet.

    python benchmarks/implied_volatility.py [--quick] [--json out.json]
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

MAX_ITER = 50
TOL = 1e-4          # in price units
VEGA_MIN = 1e-6
SIGMA0 = 0.3
RATE = 0.03
INV_SQRT2 = 1.0 / math.sqrt(2.0)
INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
THREADS = 256


def implied_vol(price, s, k, t, r):
    """One option (plain Python; Numba compiles the same code)."""
    sig = SIGMA0
    it = 0
    sq = math.sqrt(t)
    disc = math.exp(-r * t)
    while it < MAX_ITER:
        d1 = (math.log(s / k) + (r + 0.5 * sig * sig) * t) / (sig * sq)
        d2 = d1 - sig * sq
        diff = s * 0.5 * (1.0 + math.erf(d1 * INV_SQRT2)) - k * disc * 0.5 * (1.0 + math.erf(d2 * INV_SQRT2)) - price
        vega = s * sq * math.exp(-0.5 * d1 * d1) * INV_SQRT_2PI
        if abs(diff) < TOL or vega < VEGA_MIN:
            break
        sig = sig - diff / vega
        it += 1
    return sig


implied_vol_nb = numba.njit(implied_vol)


def iv_loop(price, s, k, t, r, out, solve):
    for i in numba.prange(price.shape[0]):
        out[i] = solve(price[i], s[i], k[i], t[i], r)


iv_1t = numba.njit(iv_loop)
iv_par = numba.njit(parallel=True)(iv_loop)


try:
    from scipy.special import erf as _erf
except ImportError:  # SciPy is not a dependency of numba-metal
    _erf = None


def iv_numpy(price, s, k, t, r):
    price, s, k, t = (np.asarray(a, np.float32) for a in (price, s, k, t))
    r = np.float32(r)
    sig = np.full(price.shape, np.float32(SIGMA0))
    active = np.arange(price.size)
    sq, disc, lsk = np.sqrt(t), np.exp(-r * t), np.log(s / k)
    for _ in range(MAX_ITER):
        if active.size == 0:
            break
        sg, tt, q = sig[active], t[active], sq[active]
        d1 = (lsk[active] + (r + np.float32(0.5) * sg * sg) * tt) / (sg * q)
        d2 = d1 - sg * q
        diff = (s[active] * (0.5 * (1 + _erf(d1 * np.float32(INV_SQRT2))))
                - k[active] * disc[active] * (0.5 * (1 + _erf(d2 * np.float32(INV_SQRT2)))) - price[active])
        vega = s[active] * q * np.exp(np.float32(-0.5) * d1 * d1) * np.float32(INV_SQRT_2PI)
        done = (np.abs(diff) < TOL) | (vega < VEGA_MIN)
        upd = ~done
        sig[active[upd]] = sg[upd] - diff[upd] / vega[upd]
        active = active[upd]
    return sig


@metal.jit(device=True)
def ncdf_dev(x):
    return 0.5 * (1.0 + math.erf(x * INV_SQRT2))


@metal.jit
def iv_kernel(price, s, k, t, r, out):
    i = metal.grid(1)
    if i < out.size:
        sig = np.float32(SIGMA0)
        it = 0
        sq = math.sqrt(t[i])
        disc = math.exp(-r * t[i])
        p = price[i]
        si = s[i]
        ki = k[i]
        ti = t[i]
        while it < MAX_ITER:
            d1 = (math.log(si / ki) + (r + 0.5 * sig * sig) * ti) / (sig * sq)
            d2 = d1 - sig * sq
            diff = si * ncdf_dev(d1) - ki * disc * ncdf_dev(d2) - p
            vega = si * sq * math.exp(-0.5 * d1 * d1) * INV_SQRT_2PI
            if abs(diff) < TOL or vega < VEGA_MIN:
                break
            sig = sig - diff / vega
            it += 1
        out[i] = sig


def _bs_call(s, k, t, r, sig):
    erf = _erf if _erf is not None else np.vectorize(math.erf, otypes=[np.float64])
    d1 = (np.log(s / k) + (r + 0.5 * sig * sig) * t) / (sig * np.sqrt(t))
    d2 = d1 - sig * np.sqrt(t)
    return s * 0.5 * (1 + erf(d1 * INV_SQRT2)) - k * np.exp(-r * t) * 0.5 * (1 + erf(d2 * INV_SQRT2))


def _setup(n):
    def setup():
        rng = np.random.default_rng(17)
        s = rng.uniform(90, 110, n)
        k = s * rng.uniform(0.9, 1.1, n)
        t = rng.uniform(0.5, 2.0, n)
        sig = rng.uniform(0.15, 0.6, n)
        price = _bs_call(s, k, t, RATE, sig)
        f = np.float32
        return {"price": price.astype(f), "s": s.astype(f), "k": k.astype(f), "t": t.astype(f),
                "sigma_true": sig}
    return setup


ARGS = ("price", "s", "k", "t")


def _loop_impl(fn, solve):
    def run(inp):
        out = np.empty(inp["price"].shape, np.float32)
        fn(*(inp[a] for a in ARGS), RATE, out, solve)
        return out
    return run


def _upload(inp):
    st = {a: metal.to_device(inp[a]) for a in ARGS}
    st["out"] = metal.device_array(inp["price"].shape, np.float32)
    return st


def _launch(st):
    n = st["out"].size
    iv_kernel[(n + THREADS - 1) // THREADS, THREADS](*(st[a] for a in ARGS), np.float32(RATE), st["out"])


def _download(st):
    return st["out"].copy_to_host()


def _check(out, ref):
    return bc.check_allclose(out, ref, rtol=0.0, atol=5e-5, what="σ vs the true σ")


def cases(quick: bool):
    sizes = [2_000, 20_000] if quick else [10_000, 100_000, 1_000_000]
    res = []
    for n in sizes:
        res.append(bc.Case(
            variant="default", size=f"{n:,}", x=n, params={"options": n, "max_iter": MAX_ITER},
            setup=_setup(n), reference=lambda inp: inp["sigma_true"], check=_check,
            baselines={"python": _loop_impl(iv_loop, implied_vol) if n <= 100_000 else
                       "plain Python only up to 100,000 options",
                       "numpy": (lambda inp: iv_numpy(*(inp[a] for a in ARGS), RATE)) if _erf is not None else
                       "SciPy is not installed and NumPy has no erf",
                       "numba_1t": _loop_impl(iv_1t, implied_vol_nb),
                       "numba_parallel": _loop_impl(iv_par, implied_vol_nb)},
            metal=bc.MetalImpl(_upload, _launch, _download, kernels=(iv_kernel,)),
            numba_dispatchers=(iv_1t, iv_par),
            work=f"implied volatility of {n:,} options"))
    return res


PROGRAM = bc.Program(
    name="implied_volatility",
    title="Implied volatility",
    summary=("Recovers, for each quoted option price, the volatility that the Black–Scholes formula needs to "
             "reproduce it, by Newton's method: each option iterates until its price error is below 1e-4 "
             "(a while loop with an early break, the normal CDF through math.erf). Branchy, transcendental-"
             "heavy work with per-item iteration counts. Checked against the volatilities the quotes were "
             "made from."),
    x_axis="options",
    variants={"default": "one kernel thread per option; the normal CDF in a device function"},
    cases=cases)

if __name__ == "__main__":
    sys.exit(bc.main(__file__))
