"""Cyclist power model: how many watts a rider needs against air drag, rolling resistance and gravity.

Per rider: mass m, height h, drag coefficient Cd and road speed v. Frontal area from Bassett et al.
(A = 0.0293·h^0.725·m^0.425 + 0.0604 m²), air density from altitude and temperature (barometric
formula, ρ = p / (287.05·T)), then

    P = (½ρ·Cd·A·(v + wind)²·v + Crr·M·g·v·cos θ + M·g·v·sin θ) / η,   θ = atan(grade), M = m + 8 kg.

Variants:

* ``sweep``: the power of every rider on one flat road segment (a few dozen flops per rider).
* ``course_energy``: the energy (kJ) each rider spends riding a 200-segment course, each segment with
  its own gradient, wind, altitude and length: the same model evaluated 200 times per rider.

    python benchmarks/cyclist_aerodynamics.py [--quick] [--json out.json]
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

SEGMENTS = 200
BIKE_KG = 8.0
CRR = 0.004
G = 9.80665
ETA = 0.976
R_AIR = 287.05
# The flat segment of the sweep: grade, headwind (m/s), altitude (m), temperature (K).
SWEEP_SEGMENT = (0.0, 2.0, 300.0, 293.15)
TEMP_K = 288.15
THREADS = 256


def rider_power(m, h, cd, v, grade, wind, alt, temp):
    """Watts for one rider on one segment (plain Python; Numba compiles it too)."""
    area = 0.0293 * h ** 0.725 * m ** 0.425 + 0.0604
    p = 101325.0 * (1.0 - 2.25577e-5 * alt) ** 5.25588
    rho = p / (R_AIR * temp)
    theta = math.atan(grade)
    mass = m + BIKE_KG
    va = v + wind
    aero = 0.5 * rho * cd * area * va * va * v
    roll = CRR * mass * G * v * math.cos(theta)
    climb = mass * G * v * math.sin(theta)
    return (aero + roll + climb) / ETA


rider_power_nb = numba.njit(rider_power)


def sweep_loop(m, h, cd, v, seg, out, power):
    for i in numba.prange(m.shape[0]):
        out[i] = power(m[i], h[i], cd[i], v[i], seg[0], seg[1], seg[2], seg[3])


def course_loop(m, h, cd, v, grade, wind, alt, length, out, power):
    for i in numba.prange(m.shape[0]):
        e = 0.0
        for s in range(grade.shape[0]):
            e += power(m[i], h[i], cd[i], v[i], grade[s], wind[s], alt[s], TEMP_K) * (length[s] / v[i])
        out[i] = e * 1e-3


sweep_1t = numba.njit(sweep_loop)
sweep_par = numba.njit(parallel=True)(sweep_loop)
course_1t = numba.njit(course_loop)
course_par = numba.njit(parallel=True)(course_loop)


def _power_numpy(m, h, cd, v, grade, wind, alt, temp):
    area = 0.0293 * h ** 0.725 * m ** 0.425 + 0.0604
    rho = 101325.0 * (1.0 - 2.25577e-5 * alt) ** 5.25588 / (R_AIR * temp)
    theta = np.arctan(grade)
    mass = m + BIKE_KG
    va = v + wind
    return (0.5 * rho * cd * area * va * va * v + CRR * mass * G * v * np.cos(theta)
            + mass * G * v * np.sin(theta)) / ETA


def sweep_numpy(inp, dtype=np.float32):
    m, h, cd, v = (inp[k].astype(dtype, copy=False) for k in ("m", "h", "cd", "v"))
    return _power_numpy(m, h, cd, v, *(dtype(x) for x in SWEEP_SEGMENT))


def course_numpy(inp, dtype=np.float32):
    m, h, cd, v = (inp[k].astype(dtype, copy=False) for k in ("m", "h", "cd", "v"))
    e = np.zeros(m.shape, dtype)
    for s in range(SEGMENTS):
        seg = [dtype(inp[k][s]) for k in ("grade", "wind", "alt", "length")]
        e += _power_numpy(m, h, cd, v, seg[0], seg[1], seg[2], dtype(TEMP_K)) * (seg[3] / v)
    return e * dtype(1e-3)


@metal.jit(device=True)
def rider_power_dev(m, h, cd, v, grade, wind, alt, temp):
    area = 0.0293 * h ** 0.725 * m ** 0.425 + 0.0604
    p = 101325.0 * (1.0 - 2.25577e-5 * alt) ** 5.25588
    rho = p / (R_AIR * temp)
    theta = math.atan(grade)
    mass = m + BIKE_KG
    va = v + wind
    aero = 0.5 * rho * cd * area * va * va * v
    roll = CRR * mass * G * v * math.cos(theta)
    climb = mass * G * v * math.sin(theta)
    return (aero + roll + climb) / ETA


@metal.jit
def sweep_kernel(m, h, cd, v, grade, wind, alt, temp, out):
    i = metal.grid(1)
    if i < out.size:
        out[i] = rider_power_dev(m[i], h[i], cd[i], v[i], grade, wind, alt, temp)


@metal.jit
def course_kernel(m, h, cd, v, grade, wind, alt, length, out):
    i = metal.grid(1)
    if i < out.size:
        e = np.float32(0.0)
        for s in range(grade.shape[0]):
            e += rider_power_dev(m[i], h[i], cd[i], v[i], grade[s], wind[s], alt[s], TEMP_K) * (length[s] / v[i])
        out[i] = e * 1e-3


def _setup(n):
    def setup():
        rng = np.random.default_rng(3)
        f32 = np.float32
        inp = {"m": rng.uniform(55, 95, n).astype(f32), "h": rng.uniform(1.60, 1.95, n).astype(f32),
               "cd": rng.uniform(0.6, 0.9, n).astype(f32), "v": rng.uniform(8, 14, n).astype(f32)}
        srng = np.random.default_rng(4)
        inp["grade"] = srng.uniform(-0.06, 0.08, SEGMENTS).astype(f32)
        inp["wind"] = srng.uniform(-3, 5, SEGMENTS).astype(f32)
        inp["alt"] = (400 + np.cumsum(srng.uniform(-20, 25, SEGMENTS))).astype(f32)
        inp["length"] = srng.uniform(100, 400, SEGMENTS).astype(f32)
        return inp
    return setup


RIDER = ("m", "h", "cd", "v")
COURSE = ("grade", "wind", "alt", "length")


def _sweep_loop_impl(fn, power):
    seg = np.array(SWEEP_SEGMENT, np.float64)

    def run(inp):
        out = np.empty(inp["m"].shape, np.float32)
        fn(*(inp[k] for k in RIDER), seg, out, power)
        return out
    return run


def _course_loop_impl(fn, power):
    def run(inp):
        out = np.empty(inp["m"].shape, np.float32)
        fn(*(inp[k] for k in RIDER + COURSE), out, power)
        return out
    return run


def _metal_impl(course: bool):
    names = RIDER + (COURSE if course else ())

    def upload(inp):
        st = {k: metal.to_device(inp[k]) for k in names}
        st["out"] = metal.device_array(inp["m"].shape, np.float32)
        return st

    def launch(st):
        n = st["out"].size
        cfg = ((n + THREADS - 1) // THREADS, THREADS)
        if course:
            course_kernel[cfg](*(st[k] for k in names), st["out"])
        else:
            sweep_kernel[cfg](*(st[k] for k in names), *(np.float32(x) for x in SWEEP_SEGMENT), st["out"])

    def download(st):
        return st["out"].copy_to_host()
    return bc.MetalImpl(upload, launch, download, kernels=(course_kernel if course else sweep_kernel,))


def _check(out, ref):
    return bc.check_allclose(out, ref, rtol=2e-5, atol=1e-4, what="vs float64 NumPy")


def cases(quick: bool):
    res = []
    sweep_sizes = [10_000, 100_000] if quick else [10_000, 1_000_000, 10_000_000]
    course_sizes = [1_000, 10_000] if quick else [2_000, 20_000, 200_000]
    for n in sweep_sizes:
        res.append(bc.Case(
            variant="sweep", size=f"{n:,}", x=n, params={"riders": n}, setup=_setup(n),
            reference=lambda inp: sweep_numpy(inp, np.float64), check=_check,
            baselines={"python": _sweep_loop_impl(sweep_loop, rider_power) if n == sweep_sizes[0] else
                       "plain Python only at the smallest size",
                       "numpy": sweep_numpy, "numba_1t": _sweep_loop_impl(sweep_1t, rider_power_nb),
                       "numba_parallel": _sweep_loop_impl(sweep_par, rider_power_nb)},
            metal=_metal_impl(False), numba_dispatchers=(sweep_1t, sweep_par),
            work=f"power of {n:,} riders on one segment"))
    for n in course_sizes:
        res.append(bc.Case(
            variant="course_energy", size=f"{n:,}", x=n, params={"riders": n, "segments": SEGMENTS},
            setup=_setup(n), reference=lambda inp: course_numpy(inp, np.float64), check=_check,
            baselines={"python": _course_loop_impl(course_loop, rider_power) if n == course_sizes[0] else
                       "plain Python only at the smallest size",
                       "numpy": course_numpy, "numba_1t": _course_loop_impl(course_1t, rider_power_nb),
                       "numba_parallel": _course_loop_impl(course_par, rider_power_nb)},
            metal=_metal_impl(True), numba_dispatchers=(course_1t, course_par),
            work=f"energy of {n:,} riders over {SEGMENTS} segments"))
    return res


PROGRAM = bc.Program(
    name="cyclist_aerodynamics",
    title="Cyclist aerodynamics",
    summary=("Works out how much power cyclists need to hold their speed against air drag (from body size, "
             "drag coefficient and air density), rolling resistance and gravity. 'sweep' evaluates the "
             "model once per rider, a light map over four input arrays; 'course_energy' evaluates it on 200 "
             "course segments per rider and sums the energy, so each rider costs 200 times the arithmetic "
             "for the same data. Checked against a float64 NumPy evaluation."),
    x_axis="riders",
    variants={"sweep": "one model evaluation per rider (device function inside the kernel)",
              "course_energy": "200 segment evaluations per rider, summed in the kernel"},
    cases=cases)

if __name__ == "__main__":
    sys.exit(bc.main(__file__))
