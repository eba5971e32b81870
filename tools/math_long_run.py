"""The long run of the float64 math and complex libraries: at least 10^6 inputs per entry point (spread over
the regions of fm_suite.py and tests/complex/cx_suite.py), errors in ulps against mpmath (float64 functions
through the long double prefilter of fm_suite.measure_filtered; see there), one line per entry point and a
JSON report.

    PYTHONPATH=$PWD python tools/math_long_run.py [--count 1000000] [--names nm_f64_exp,nm_c128_log]
                                                        [--jobs 2] [--report docs/data/math-long-run.json]

Each worker process compiles the libraries once (the CPU device caches the object) and measures whole entry
points; results are printed as they finish. Exit status 1 if an entry point exceeds its documented bound.
"""

from __future__ import annotations

import argparse
import json
import math
import multiprocessing as mproc
import os
import platform
import sys
import time
import zlib
from pathlib import Path

# The harnesses it drives live with the tests (tests/float64/, tests/complex/).
HERE = Path(__file__).resolve().parents[1] / "tests" / "float64"
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "complex"))

import numpy as np  # noqa: E402

BATCH = 1 << 16


def _suites():
    import cx_suite
    import fm_suite
    return {**{name: (fm_suite, case) for name, case in fm_suite.CASES.items()},
            **{name: (cx_suite, case) for name, case in cx_suite.CASES.items()}}


_LIB = None


def _library():
    global _LIB
    if _LIB is None:
        from fm_fixtures import ALL_ROWS
        from fm_harness import MathLibrary
        from numba_metal import runtime as rt
        cpu = [d for d in rt.list_devices() if d.kind == "cpu"][0]
        _LIB = MathLibrary(rt.open_device(cpu.index), ALL_ROWS)
    return _LIB


def run_one(args):
    name, count, seed = args
    suite, case = _suites()[name]
    lib = _library()
    rng = np.random.default_rng(seed ^ zlib.crc32(name.encode()))
    per_region = -(-count // len(case.regions))
    regions = []
    started = time.time()
    for region in case.regions:
        best = None
        done = 0
        while done < per_region:
            n = min(BATCH, per_region - done)
            args = region.make(rng, n)
            r = suite.measure(lib, case, region.label, args, filtered=True)
            best = r if best is None else suite.merge(best, r)
            done += n
        regions.append(best._asdict())
    return {"name": name, "inputs": per_region * len(case.regions), "seconds": round(time.time() - started, 1),
            "regions": regions}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--count", type=int, default=1_000_000)
    ap.add_argument("--names", default="")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--seed", type=int, default=20260601)
    ap.add_argument("--report", default="")
    opts = ap.parse_args()
    suites = _suites()
    names = [n for n in opts.names.split(",") if n] or list(suites)
    started = time.time()
    results, failed = [], []
    with mproc.get_context("spawn").Pool(opts.jobs) as pool:
        for res in pool.imap_unordered(run_one, [(n, opts.count, opts.seed) for n in names]):
            suite, case = suites[res["name"]]
            worst = max(res["regions"], key=lambda r: r["max_ulp"])
            bound = suite.ROWS[res["name"]].ulp
            ok = bound is None or worst["max_ulp"] <= bound
            line = (f"{res['name']:18s} {res['inputs']:>9d} inputs  max {worst['max_ulp']:.4f} ulp "
                    f"[{worst['label']}] at {tuple(worst['at'])}  ({res['seconds']}s)")
            absolute = max(r["max_abs"] for r in res["regions"])
            if absolute:
                line += f"  absolute {absolute:.3g} x 2^-52"
            print(("" if ok else "EXCEEDS DOCUMENTED BOUND ") + line, flush=True)
            if not ok:
                failed.append(res["name"])
            results.append(res)
    if opts.report:
        report = {"command": " ".join(sys.argv), "machine": platform.processor() or platform.machine(),
                  "platform": platform.platform(), "cpus": os.cpu_count(), "python": platform.python_version(),
                  "numpy": np.__version__, "seconds": round(time.time() - started), "functions": sorted(
                      results, key=lambda r: r["name"])}
        Path(opts.report).write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    print("\nRows for docs/math-accuracy.md (the maximum rounded up to 0.001 ulp, as the entry-point tables state it):")
    for res in sorted(results, key=lambda r: r["name"]):
        suite, _ = suites[res["name"]]
        worst = max(res["regions"], key=lambda r: r["max_ulp"])
        at = ", ".join(f"{v:.17g}" for v in worst["at"])
        label = worst["label"].replace("|", "\\|")
        line = (f"| `{res['name']}` | {suite.ROWS[res['name']].python} | {math.ceil(worst['max_ulp'] * 1000) / 1000:.3f} | "
                f"{res['inputs']:,} | {label}: {at} |")
        absolute = max(res["regions"], key=lambda r: r["max_abs"])
        if absolute["max_abs"]:
            line += f" absolute {absolute['max_abs']:.3g} x 2^-52 at {absolute['abs_at'][0]:.17g} |"
        print(line)
    print(f"{len(results)} entry points, {time.time() - started:.0f}s, {len(failed)} above their documented bound")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
