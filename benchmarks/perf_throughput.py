"""CPU reference device throughput: ``@metal.jit`` vector add (float32, device arrays) beside NumPy's
``np.add(a, b, out=c)`` on the same machine.

    python benchmarks/perf_throughput.py [--json out.json] [--repeats 15]

For each size: one launch plus ``metal.synchronize()`` per repetition (the launch path, the dispatch and
the kernel over every element), median over repetitions; bandwidth counts 12 bytes per element (two
loads, one store). This measures the CPU reference device, which exists for testing: its speed says
nothing about an Apple GPU.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _perfutil  # noqa: E402

sys.path.insert(0, _perfutil.REPO)
os.environ.setdefault("NUMBA_METAL_DEVICE", "cpu")

import numpy as np  # noqa: E402

from numba_metal import metal  # noqa: E402

SIZES = (1 << 12, 1 << 16, 1 << 20, 1 << 22, 1 << 24)


@metal.jit
def vadd(a, b, out):
    i = metal.grid(1)
    if i < out.size:
        out[i] = a[i] + b[i]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", help="write the results to this file")
    ap.add_argument("--repeats", type=int, default=15)
    args = ap.parse_args(argv)
    info = _perfutil.machine()
    print(_perfutil.describe(info))
    rng = np.random.default_rng(0)
    rows = []
    print(f"{'n':>10} {'metal (ms)':>11} {'GB/s':>7} {'numpy (ms)':>11} {'GB/s':>7}   (medians of {args.repeats})")
    for n in SIZES:
        a = rng.random(n, dtype=np.float32)
        b = rng.random(n, dtype=np.float32)
        da, db, dout = metal.to_device(a), metal.to_device(b), metal.device_array(n, np.float32)
        blocks = (n + 255) // 256
        vadd[blocks, 256](da, db, dout)
        metal.synchronize()
        assert np.array_equal(dout.copy_to_host(), a + b)
        device = []
        for _ in range(args.repeats):
            t0 = time.perf_counter()
            vadd[blocks, 256](da, db, dout)
            metal.synchronize()
            device.append(time.perf_counter() - t0)
        out = np.empty_like(a)
        host = []
        for _ in range(args.repeats):
            t0 = time.perf_counter()
            np.add(a, b, out=out)
            host.append(time.perf_counter() - t0)
        moved = 12 * n
        d, h = _perfutil.median(device), _perfutil.median(host)
        rows.append({"n": n, "bytes_moved": moved, "metal_ms": _perfutil.summary(device, 1e3),
                     "metal_gb_s": moved / d / 1e9, "numpy_ms": _perfutil.summary(host, 1e3),
                     "numpy_gb_s": moved / h / 1e9})
        print(f"{n:>10} {d * 1e3:>11.3f} {moved / d / 1e9:>7.2f} {h * 1e3:>11.3f} {moved / h / 1e9:>7.2f}")
    _perfutil.write_json(args.json, {"benchmark": "throughput", "machine": info, "results": rows})
    return 0


if __name__ == "__main__":
    sys.exit(main())
