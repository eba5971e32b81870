"""Timing statistics and the device description every measured result carries."""

from __future__ import annotations

import statistics

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
    """median/min/max and spread ((max - min) / median) of timings in seconds."""
    samples = [float(s) for s in samples_s]
    med = statistics.median(samples)
    lo, hi = min(samples), max(samples)
    return {"n": len(samples), "median_s": med, "min_s": lo, "max_s": hi,
            "spread": (hi - lo) / med if med > 0 else 0.0, "samples_s": samples}
