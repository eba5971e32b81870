"""Interop benchmark: the time to hand an array between NumPy, numba-metal and PyTorch (when installed), for
sizes from 1 MB to 1 GB. Zero-copy paths (DLPack views, page-aligned wraps) should take the same time at
every size; copies grow with the size. The table says which is which.

    python benchmarks/perf_interop.py [--max-mb 1024] [--json out.json]

Each figure is the median of several handoffs (the first one is not timed); nothing is waiting on the
device while timing, so the waits inside the handoffs find no work.
"""

from __future__ import annotations

import argparse
import gc
import json
import mmap
import os
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _perfutil import describe, machine  # noqa: E402

from numba_metal import metal  # noqa: E402


def _median_us(fn, repeats: int) -> float:
    fn()   # not timed: first-use costs (capsule machinery, imports)
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
        del out
    return statistics.median(times) * 1e6


def _page_aligned(nbytes: int) -> np.ndarray:
    return np.frombuffer(mmap.mmap(-1, nbytes), dtype=np.float32)


def handoffs(nbytes: int, torch) -> list[tuple[str, str, float]]:
    """(path, 'zero-copy' or 'copy', median microseconds) for arrays of ``nbytes``."""
    n = nbytes // 4
    repeats = 9 if nbytes <= (64 << 20) else 3
    aligned = _page_aligned(nbytes)
    aligned[:] = 1
    unaligned = np.ones(n + 1, np.float32)[1:]
    dev = metal.to_device(aligned)
    rows = [
        ("NumPy -> numba-metal: metal.from_dlpack(page-aligned)", "zero-copy", lambda: metal.from_dlpack(aligned)),
        ("NumPy -> numba-metal: metal.from_dlpack(unaligned)", "copy", lambda: metal.from_dlpack(unaligned)),
        ("NumPy -> numba-metal: metal.to_device", "copy", lambda: metal.to_device(aligned)),
        ("numba-metal -> NumPy: np.from_dlpack(d)", "zero-copy", lambda: np.from_dlpack(dev)),
        ("numba-metal -> NumPy: np.asarray(d)", "zero-copy", lambda: np.asarray(dev)),
        ("numba-metal -> NumPy: d.copy_to_host()", "copy", lambda: dev.copy_to_host()),
    ]
    if torch is not None:
        t_aligned = torch.from_numpy(aligned)
        t_plain = torch.ones(n, dtype=torch.float32)
        rows += [
            ("numba-metal -> torch: torch.from_dlpack(d)", "zero-copy", lambda: torch.from_dlpack(dev)),
            ("torch -> numba-metal: metal.from_dlpack(page-aligned)", "zero-copy",
             lambda: metal.from_dlpack(t_aligned)),
            ("torch -> numba-metal: metal.from_dlpack(torch allocation)",
             "zero-copy" if t_plain.data_ptr() % metal.get_device_info().page_size == 0 else "copy",
             lambda: metal.from_dlpack(t_plain)),
        ]
    out = [(name, kind, _median_us(fn, repeats)) for name, kind, fn in rows]
    del rows, dev, aligned, unaligned
    gc.collect()
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--max-mb", type=int, default=1024, help="largest size in MB (default 1024)")
    ap.add_argument("--json", help="also write the results here")
    args = ap.parse_args()
    try:
        import torch
    except ImportError:
        torch = None
    info = machine()
    print(describe(info))
    print("torch:", torch.__version__ if torch is not None else "not installed")
    sizes = [mb for mb in (1, 16, 128, 1024) if mb <= args.max_mb]
    results = {}
    for mb in sizes:
        for name, kind, us in handoffs(mb << 20, torch):
            results.setdefault((name, kind), {})[mb] = us
    width = max(len(n) for n, _ in results)
    print(f"\n{'handoff':<{width}}  {'kind':<9}  " + "  ".join(f"{str(mb) + ' MB':>11}" for mb in sizes))
    for (name, kind), by_size in results.items():
        print(f"{name:<{width}}  {kind:<9}  " + "  ".join(f"{by_size[mb]:>9.1f}us" for mb in sizes))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"machine": info, "sizes_mb": sizes,
                       "results": [{"handoff": n, "kind": k, "median_us": {str(mb): v for mb, v in s.items()}}
                                   for (n, k), s in results.items()]}, f, indent=1)


if __name__ == "__main__":
    main()
