"""The long run of the float64 library: 10^8 generated vectors per entry point (fresh seeds, batches of
2^20), every input of the 32-bit division and square-root seeds (which proves their error budgets), and
every float32 and float16 converted to float64, all bit for bit against NumPy as in the CI tests.

    PYTHONPATH=$PWD python tools/float64_long_run.py [--count 100000000] [--ops nm_f64_add,nm_f64_mul]
                                                     [--no-exhaustive] [--report docs/data/float64-long-run.json]

Prints one line per check and a summary; exits with status 1 if anything failed. The same vector
counts run under pytest with NUMBA_METAL_LONG_TESTS=1 (tests/float64/test_f64_operations.py).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np

# The float64 test harness it drives lives with the tests (tests/float64/).
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "float64"))

import f64_bounds as B  # noqa: E402
import f64_suite as S  # noqa: E402
from f64_harness import Float64Library  # noqa: E402

CHUNK = 1 << 24


def exhaustive_recip32(lib) -> dict:
    """nm_f64_i_recip32 for every bh in [2^31, 2^32)."""
    lo, hi = float("inf"), float("-inf")
    for start in range(1 << 31, 1 << 32, CHUNK):
        y0 = lib.probe("recip32", n=CHUNK, start=start)
        a, b = B.check_recip32(np.arange(start, start + CHUNK, dtype=np.uint64), y0)
        lo, hi = min(lo, a), max(hi, b)
    return {"inputs": 1 << 31, "slack_min": lo, "slack_max": hi}


def exhaustive_rsqrt(lib) -> dict:
    """nm_f64_i_rsqrt_seed for every mh in [2^30, 2^32)."""
    eta, err = -1e9, -1e9
    for start in range(1 << 30, 1 << 32, CHUNK):
        r, s = lib.probe("rsqrt_seed", n=CHUNK, start=start)
        e1, e2 = B.check_rsqrt(np.arange(start, start + CHUNK, dtype=np.uint64), r, s)
        eta, err = max(eta, e1), max(err, e2)
    return {"inputs": 3 << 30, "eta_log2_max": eta, "r_error_log2_max": err}


def exhaustive_small_formats(lib) -> dict:
    """Every float32 and every float16 converted to float64."""
    case = S.CASES["nm_f64_from_f32"]
    for start in range(0, 1 << 32, CHUNK):
        S.check(lib, case, [np.arange(start, start + CHUNK, dtype=np.uint64).astype(np.uint32)])
    S.check(lib, S.CASES["nm_f64_from_f16"], [np.arange(1 << 16, dtype=np.uint16)])
    return {"inputs": (1 << 32) + (1 << 16)}


def machine() -> dict:
    model = platform.processor()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            model = next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    import numba
    return {"cpu": model, "cores": os.cpu_count(), "system": f"{platform.system()} {platform.release()}",
            "python": platform.python_version(), "numpy": np.__version__, "numba": numba.__version__}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--count", type=int, default=S.LONG_COUNT, help="vectors per entry point")
    parser.add_argument("--ops", default="", help="comma-separated entry points (default: all)")
    parser.add_argument("--seed", type=int, default=20261201)
    parser.add_argument("--no-exhaustive", action="store_true")
    parser.add_argument("--report", default="", help="write a JSON summary here")
    args = parser.parse_args(argv)

    from numba_metal import runtime as rt
    cpu = [d for d in rt.list_devices() if d.kind == "cpu"]
    lib = Float64Library(rt.open_device(cpu[0].index))
    names = [n for n in args.ops.split(",") if n] or list(S.CASES)
    results = {}
    failed = False
    started = time.time()
    for name in names:
        t0 = time.time()
        try:
            n = S.run(lib, S.CASES[name], seed=args.seed, n=args.count)
            S.check(lib, S.CASES[name], S.edge_inputs(name))
            results[name] = {"vectors": n, "failures": 0, "seconds": round(time.time() - t0, 1)}
        except AssertionError as e:
            failed = True
            results[name] = {"vectors": None, "failures": 1, "first_failure": str(e)[:2000],
                             "seconds": round(time.time() - t0, 1)}
        print(f"{name:22s} {json.dumps(results[name])}", flush=True)
    exhaustive = {}
    if not args.no_exhaustive:
        for label, fn in (("recip32", exhaustive_recip32), ("rsqrt_seed", exhaustive_rsqrt),
                          ("float32_float16_to_float64", exhaustive_small_formats)):
            t0 = time.time()
            try:
                exhaustive[label] = fn(lib) | {"failures": 0}
            except AssertionError as e:
                failed = True
                exhaustive[label] = {"failures": 1, "first_failure": str(e)[:2000]}
            exhaustive[label]["seconds"] = round(time.time() - t0, 1)
            print(f"{label:22s} {json.dumps(exhaustive[label])}", flush=True)
    summary = {"count_per_entry_point": args.count, "seed": args.seed, "entry_points": results,
               "exhaustive": exhaustive, "total_seconds": round(time.time() - started, 1),
               "date": time.strftime("%Y-%m-%d"), "machine": machine(), "passed": not failed}
    print(f"total {summary['total_seconds']} s, {'PASSED' if not failed else 'FAILED'}")
    if args.report:
        Path(args.report).write_text(json.dumps(summary, indent=1) + "\n", encoding="utf-8")
    lib.release()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
