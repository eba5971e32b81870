"""Monte Carlo price of a European call under geometric Brownian motion, 100 time steps per path.

S0 = K = 100, r = 0.05, σ = 0.2, T = 1: the Black–Scholes price is 10.4506. Each path multiplies S by
exp((r − σ²/2)Δt + σ√Δt·Z) a hundred times (exact in distribution for GBM, so no discretisation bias),
and the price is the discounted mean payoff max(S_T − K, 0).

numba-metal draws Z on the device with ``numba_metal.random`` (xoroshiro128+, one generator per
thread; a thread walks paths with a stride when there are more paths than generators). Every
implementation draws its own random numbers, so the check is statistical: |price − Black–Scholes| must
be within four standard errors (the standard error from the payoff's exact variance).

Variants: ``host_reduced`` copies the payoffs back and averages them with NumPy; ``device_reduced``
sums them on the device with ``metal.reduce_sum`` and copies back one number.

Creating the generator states (an inherently sequential jump-ahead, done once per process, as in
numba.cuda) is set-up, not part of any timing; its duration is recorded as ``rng_init_s``.

    python benchmarks/monte_carlo_paths.py [--quick] [--json out.json]
"""

from __future__ import annotations

import math
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numba  # noqa: E402
import numpy as np  # noqa: E402

import bench_common as bc  # noqa: E402
from numba_metal import metal  # noqa: E402
from numba_metal.random import create_xoroshiro128p_states, xoroshiro128p_normal_float32  # noqa: E402

S0, K, R, SIGMA, T, STEPS = 100.0, 100.0, 0.05, 0.2, 1.0, 100
DT = T / STEPS
DRIFT = (R - 0.5 * SIGMA * SIGMA) * DT
VOL = SIGMA * math.sqrt(DT)
DISC = math.exp(-R * T)
MAX_GENERATORS = 65536
THREADS = 256


def _ncdf(x):
    return 0.5 * (1.0 + math.erf(x / math.sqrt(2.0)))


def black_scholes_call():
    d1 = (math.log(S0 / K) + (R + 0.5 * SIGMA ** 2) * T) / (SIGMA * math.sqrt(T))
    d2 = d1 - SIGMA * math.sqrt(T)
    return S0 * _ncdf(d1) - K * DISC * _ncdf(d2)


def payoff_std():
    """Exact standard deviation of the discounted payoff e^{-rT} max(S_T − K, 0)."""
    st = SIGMA * math.sqrt(T)
    d1 = (math.log(S0 / K) + (R + 0.5 * SIGMA ** 2) * T) / st
    d2 = d1 - st
    e_s2 = S0 ** 2 * math.exp((2 * R + SIGMA ** 2) * T) * _ncdf(d1 + st)   # E[S² 1{S>K}]
    e_s = S0 * math.exp(R * T) * _ncdf(d1)                                  # E[S 1{S>K}]
    second = DISC ** 2 * (e_s2 - 2 * K * e_s + K * K * _ncdf(d2))
    return math.sqrt(second - black_scholes_call() ** 2)


def mc_loop(npaths, nsteps, s0, k, drift, vol, disc, payoff):
    """Plain Python and the body of both Numba versions (NumPy's generator inside Numba)."""
    for p in numba.prange(npaths):
        s = s0
        for _ in range(nsteps):
            s *= math.exp(drift + vol * np.random.standard_normal())
        payoff[p] = disc * max(s - k, 0.0)


mc_1t = numba.njit(mc_loop)
mc_par = numba.njit(parallel=True)(mc_loop)


def mc_numpy(npaths, seed):
    rng = np.random.default_rng(seed)
    s = np.full(npaths, S0, np.float32)
    drift, vol = np.float32(DRIFT), np.float32(VOL)
    for _ in range(STEPS):
        s *= np.exp(drift + vol * rng.standard_normal(npaths, dtype=np.float32))
    return float(DISC * np.maximum(s - np.float32(K), 0).mean(dtype=np.float64))


@metal.jit
def mc_kernel(states, s0, k, drift, vol, disc, nsteps, payoff):
    tid = metal.grid(1)
    ngen = states.shape[0]
    if tid < ngen:
        for p in range(tid, payoff.size, ngen):
            s = s0
            for _ in range(nsteps):
                s = s * math.exp(drift + vol * xoroshiro128p_normal_float32(states, tid))
            payoff[p] = disc * max(s - k, 0.0)


SCALARS = tuple(np.float32(v) for v in (S0, K, DRIFT, VOL, DISC))


def _setup(n):
    def setup():
        t0 = time.perf_counter()
        states = create_xoroshiro128p_states(min(n, MAX_GENERATORS), seed=2024)
        metal.synchronize()
        return {"n": n, "states": states, "rng_init_s": time.perf_counter() - t0}
    return setup


def _metal_impl(device_reduced: bool):
    def upload(inp):
        st = {"n": inp["n"], "states": inp["states"], "payoff": metal.device_array(inp["n"], np.float32)}
        if device_reduced:
            st["sum"] = metal.device_array(1, np.float32)
        return st

    def launch(st):
        g = st["states"].shape[0]
        mc_kernel[(g + THREADS - 1) // THREADS, THREADS](st["states"], *SCALARS[:2], *SCALARS[2:4],
                                                          SCALARS[4], STEPS, st["payoff"])
        if device_reduced:
            metal.reduce_sum(st["payoff"], res=st["sum"])

    def download(st):
        if device_reduced:
            return float(st["sum"].copy_to_host()[0]) / st["n"]
        return float(st["payoff"].copy_to_host().mean(dtype=np.float64))
    return bc.MetalImpl(upload, launch, download, kernels=(mc_kernel,),
                        note=("payoffs summed on the device (metal.reduce_sum), one float copied back"
                              if device_reduced else "payoffs copied back and averaged with NumPy")
                        + "; creating the generator states is set-up, outside every timing (extra.rng_init_s)")


def _loop_impl(fn):
    def run(inp):
        payoff = np.empty(inp["n"], np.float64)
        fn(inp["n"], STEPS, S0, K, DRIFT, VOL, DISC, payoff)
        return float(payoff.mean())
    return run


def _check_for(n):
    tol = 4 * payoff_std() / math.sqrt(n)

    def check(price, ref):
        return bc.check_scalar(price, ref, tol=tol, what="price vs Black–Scholes (4 standard errors)")
    return check


def _extra(inp, outputs):
    return {"rng_init_s": round(inp["rng_init_s"], 3), "generators": int(inp["states"].shape[0]),
            "black_scholes": black_scholes_call(), "standard_error": payoff_std() / math.sqrt(inp["n"]),
            "prices": {k: float(v) for k, v in outputs.items()}}


def cases(quick: bool):
    sizes = [2_000, 20_000] if quick else [10_000, 100_000, 1_000_000]
    res = []
    for variant in ("host_reduced", "device_reduced"):
        for n in sizes:
            res.append(bc.Case(
                variant=variant, size=f"{n:,}", x=n, params={"paths": n, "steps": STEPS},
                setup=_setup(n), reference=lambda inp: black_scholes_call(), check=_check_for(n),
                baselines={"python": _loop_impl(mc_loop) if n <= 10_000 else "plain Python only up to 10,000 paths",
                           "numpy": lambda inp: mc_numpy(inp["n"], 99), "numba_1t": _loop_impl(mc_1t),
                           "numba_parallel": _loop_impl(mc_par)},
                metal=_metal_impl(variant == "device_reduced"), numba_dispatchers=(mc_1t, mc_par),
                baseline_key=f"paths/{n}", extra=_extra,
                work=f"{n:,} paths × {STEPS} steps, random numbers drawn inside, to one price"))
    return res


PROGRAM = bc.Program(
    name="monte_carlo_paths",
    title="Monte Carlo option paths",
    summary=("Prices a European call option by simulating many random futures of the share price (100 "
             "steps each under geometric Brownian motion) and averaging the payoff. The random numbers are "
             "drawn where the paths are simulated: on the device with numba_metal.random. Compute-bound "
             "(an exp and a normal draw per step). Checked against the Black–Scholes formula within four "
             "standard errors."),
    x_axis="paths",
    variants={"host_reduced": "payoffs copied to the host and averaged there",
              "device_reduced": "payoffs summed on the device with metal.reduce_sum"},
    cases=cases)

if __name__ == "__main__":
    sys.exit(bc.main(__file__))
