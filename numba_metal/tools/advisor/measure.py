"""Timing statistics and the device description every measured result carries.

Confidence intervals are Student-t intervals for the mean (the method of Georges, Buytaert and Eeckhout,
"Statistically Rigorous Java Performance Evaluation", OOPSLA 2007, section 3.2): with ``n`` timings of
mean ``m`` and standard deviation ``s``, the 95% interval is ``m +/- t(0.975, n - 1) * s / sqrt(n)``.
Two alternatives whose intervals overlap are not shown to differ. The t quantile comes from the
closed forms of the t distribution for integer degrees of freedom (Abramowitz and Stegun, Handbook of
Mathematical Functions, 26.7.3 and 26.7.4), inverted by bisection, so no statistics package is needed.
"""

from __future__ import annotations

import math
import statistics

#: The confidence level of every interval the advisor reports.
CONFIDENCE = 0.95

CPU_DEVICE_NOTE = ("numba-metal's CPU reference device: these figures measure this machine's CPU running "
                   "the generated MSL, not a GPU")
GPU_DEVICE_NOTE = "a Metal GPU"


def describe_device() -> dict:
    """The device numba-metal uses now (opening it if needed), for documents."""
    from numba_metal import metal
    info = metal.get_device_info()
    is_gpu = info.kind == "metal"
    return {"name": info.name, "kind": info.kind, "is_gpu": is_gpu,
            "note": GPU_DEVICE_NOTE if is_gpu else CPU_DEVICE_NOTE}


def stats(samples_s: list[float]) -> dict:
    """median/min/max, spread ((max - min) / median), mean and its confidence interval (None for fewer
    than two timings) of timings in seconds."""
    samples = [float(s) for s in samples_s]
    med = statistics.median(samples)
    lo, hi = min(samples), max(samples)
    mean = statistics.fmean(samples)
    half = half_width(samples)
    return {"n": len(samples), "median_s": med, "min_s": lo, "max_s": hi,
            "spread": (hi - lo) / med if med > 0 else 0.0, "mean_s": mean,
            "ci_low_s": None if half is None else mean - half, "ci_high_s": None if half is None else mean + half,
            "samples_s": samples}


def t_central_probability(t: float, df: int) -> float:
    """P(|T| <= t) for Student's t with ``df`` (a positive integer) degrees of freedom (A&S 26.7.3-4)."""
    theta = math.atan(t / math.sqrt(df))
    sin, cos2 = math.sin(theta), math.cos(theta) ** 2
    if df % 2 == 0:  # sin(theta) * (1 + 1/2 cos^2 + 1*3/(2*4) cos^4 + ... up to cos^(df-2))
        term = total = 1.0
        for j in range(1, df // 2):
            term *= cos2 * (2 * j - 1) / (2 * j)
            total += term
        return sin * total
    # 2/pi * (theta + sin(theta) * (cos + 2/3 cos^3 + 2*4/(3*5) cos^5 + ... up to cos^(df-2)))
    term = total = math.cos(theta)
    for j in range(1, (df - 1) // 2):
        term *= cos2 * (2 * j) / (2 * j + 1)
        total += term
    return 2 / math.pi * (theta + (sin * total if df > 1 else 0.0))


def t_quantile(df: int, confidence: float = CONFIDENCE) -> float:
    """The t with P(|T| <= t) = ``confidence``: the multiplier of a two-sided interval."""
    lo, hi = 0.0, 1.0
    while t_central_probability(hi, df) < confidence:
        lo, hi = hi, 2 * hi
    for _ in range(100):
        mid = (lo + hi) / 2
        if t_central_probability(mid, df) < confidence:
            lo = mid
        else:
            hi = mid
        if hi - lo < 1e-12:
            break
    return hi


def half_width(samples: list[float], confidence: float = CONFIDENCE) -> float | None:
    """Half the width of the confidence interval of the mean of ``samples`` (None for fewer than two)."""
    n = len(samples)
    if n < 2:
        return None
    return t_quantile(n - 1, confidence) * statistics.stdev(samples) / math.sqrt(n)


def rounds_to_separate(a: list[float], b: list[float], limit: int = 10_000,
                       confidence: float = CONFIDENCE) -> int | None:
    """The number of timings per side after which the two confidence intervals would no longer
    overlap, if the means and standard deviations stayed as measured: the smallest n with
    t(n - 1) * (s_a + s_b) / sqrt(n) < |mean_a - mean_b|. None when the means are equal or it would
    take more than ``limit``."""
    gap = abs(statistics.fmean(a) - statistics.fmean(b))
    spread = statistics.stdev(a) + statistics.stdev(b)
    if gap == 0:
        return None
    separated = lambda n: t_quantile(n - 1, confidence) * spread / math.sqrt(n) < gap  # noqa: E731
    n = max(2, min(len(a), len(b)))
    if separated(n):
        return n
    if not separated(limit):
        return None
    lo, hi = n, limit  # separated(hi) and not separated(lo): the half width shrinks as n grows
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if separated(mid) else (mid, hi)
    return hi
