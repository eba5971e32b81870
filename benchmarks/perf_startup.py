"""Start-up: import time, the first kernel in a fresh process (import to first result) with cold
caches, and the same with a warm disk cache (``@metal.jit(cache=True)``).

    python benchmarks/perf_startup.py [--json out.json] [--runs 9]

Every figure comes from new interpreters (subprocesses) and is the median of ``--runs`` of them. The
child times itself from its first line (before ``import numpy``) with ``time.perf_counter``; the
interpreter's own start is reported separately (the whole process's wall time). Bytecode caches are
warm, as for an installed package (see _perfutil.FreshProcesses).

Cold: an empty cache directory (no kernel entry, no compiled CPU object): typing, MSL generation and
clang. Cold kernel cache only: the kernel cache emptied but the runtime's compiled objects kept, which
isolates numba-metal's part. Warm: both caches hold the kernel.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _perfutil  # noqa: E402

IMPORT_CHILD = r"""
import json, sys, time
t0 = time.perf_counter()
import numpy
t1 = time.perf_counter()
import numba_metal
from numba_metal import metal
t2 = time.perf_counter()
print(json.dumps({"numpy_s": t1 - t0, "numba_metal_s": t2 - t1, "numba_imported": "numba" in sys.modules}))
"""

FIRST_KERNEL_CHILD = r"""
import json, sys, time
t0 = time.perf_counter()
import numpy as np
from numba_metal import metal
t1 = time.perf_counter()

@metal.jit(cache=True)
def vadd(a, b, out):
    i = metal.grid(1)
    if i < out.size:
        out[i] = a[i] + b[i]

n = 1 << 16
a = metal.to_device(np.arange(n, dtype=np.float32))
b = metal.to_device(np.ones(n, dtype=np.float32))
out = metal.device_array(n, np.float32)
t2 = time.perf_counter()
vadd[(n + 255) // 256, 256](a, b, out)
t3 = time.perf_counter()
res = out.copy_to_host()
t4 = time.perf_counter()
assert (res == np.arange(n, dtype=np.float32) + 1).all()
spec = vadd.kernel_for_args((a, b, out))
pipeline = next(iter(spec.launch_states.values())).pipeline
print(json.dumps({"import_s": t1 - t0, "arrays_s": t2 - t1, "first_launch_s": t3 - t2, "wait_and_copy_s": t4 - t3,
                  "to_first_launch_s": t3 - t0, "to_first_result_s": t4 - t0,
                  "kernel_from_cache": spec.from_cache, "pipeline_from_cache": pipeline.from_cache,
                  "numba_imported": "numba" in sys.modules}))
"""


def _median_of(rows, key):
    return _perfutil.median([r[key] for r in rows])


def _runs(fp: _perfutil.FreshProcesses, code: str, runs: int, prepare=None) -> list[dict]:
    rows = []
    for _ in range(runs):
        cache_dir = prepare() if prepare else None
        t0 = time.perf_counter()
        row = fp.run(code, cache_dir=cache_dir)
        row["process_s"] = time.perf_counter() - t0
        rows.append(row)
    return rows


def _interpreter_start(fp, runs) -> float:
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], env=fp.env(), check=True)
        times.append(time.perf_counter() - t0)
    return _perfutil.median(times)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", help="write the results to this file")
    ap.add_argument("--runs", type=int, default=9)
    args = ap.parse_args(argv)
    info = _perfutil.machine()
    print(_perfutil.describe(info))
    fp = _perfutil.FreshProcesses()
    try:
        # Warm the bytecode caches (and check the children work) before measuring anything.
        fp.run(IMPORT_CHILD)
        fp.run(FIRST_KERNEL_CHILD, cache_dir=fp.new_cache_dir())
        result = {"benchmark": "startup", "machine": info, "runs": args.runs,
                  "interpreter_start_s": _interpreter_start(fp, args.runs)}

        imports = _runs(fp, IMPORT_CHILD, args.runs)
        result["import"] = {"numpy_s": _perfutil.summary([r["numpy_s"] for r in imports]),
                            "numba_metal_s": _perfutil.summary([r["numba_metal_s"] for r in imports]),
                            "numba_imported": any(r["numba_imported"] for r in imports)}

        cold = _runs(fp, FIRST_KERNEL_CHILD, args.runs, prepare=fp.new_cache_dir)
        assert not any(r["kernel_from_cache"] or r["pipeline_from_cache"] for r in cold)

        objects_only = fp.new_cache_dir()
        fp.run(FIRST_KERNEL_CHILD, cache_dir=objects_only)

        def without_kernel_entries():
            shutil.rmtree(os.path.join(objects_only, "kernels"), ignore_errors=True)
            return objects_only
        cold_kernel = _runs(fp, FIRST_KERNEL_CHILD, args.runs, prepare=without_kernel_entries)
        assert all(not r["kernel_from_cache"] and r["pipeline_from_cache"] for r in cold_kernel)

        warm_dir = fp.new_cache_dir()
        fp.run(FIRST_KERNEL_CHILD, cache_dir=warm_dir)
        warm = _runs(fp, FIRST_KERNEL_CHILD, args.runs, prepare=lambda: warm_dir)
        assert all(r["kernel_from_cache"] and r["pipeline_from_cache"] for r in warm)

        keys = ("import_s", "arrays_s", "first_launch_s", "wait_and_copy_s", "to_first_launch_s",
                "to_first_result_s", "process_s")
        for name, rows in (("cold", cold), ("cold_kernel_cache", cold_kernel), ("warm_cache", warm)):
            result[name] = {k: _perfutil.summary([r[k] for r in rows]) for k in keys}
            result[name]["numba_imported"] = any(r["numba_imported"] for r in rows)
        result["warm_over_cold_first_launch"] = (result["warm_cache"]["to_first_launch_s"]["median"]
                                                 / result["cold"]["to_first_launch_s"]["median"])
        result["warm_over_cold_kernel_cache_first_launch"] = (
            result["warm_cache"]["to_first_launch_s"]["median"]
            / result["cold_kernel_cache"]["to_first_launch_s"]["median"])
    finally:
        fp.close()

    ms = 1e3
    print(f"interpreter start (python -c pass, whole process): {result['interpreter_start_s'] * ms:.1f} ms")
    print(f"import numpy: {result['import']['numpy_s']['median'] * ms:.1f} ms; then import numba_metal: "
          f"{result['import']['numba_metal_s']['median'] * ms:.1f} ms (Numba imported: "
          f"{result['import']['numba_imported']})")
    print(f"{'first kernel (vector add)':28} {'import':>8} {'arrays':>8} {'launch':>8} {'to launch':>10} "
          f"{'to result':>10} {'process':>9}   (ms, medians of {args.runs} processes)")
    for name, label in (("cold", "cold caches"), ("cold_kernel_cache", "cold kernel cache only"),
                        ("warm_cache", "warm disk cache")):
        r = result[name]
        print(f"{label:28} {r['import_s']['median'] * ms:>8.1f} {r['arrays_s']['median'] * ms:>8.1f} "
              f"{r['first_launch_s']['median'] * ms:>8.1f} {r['to_first_launch_s']['median'] * ms:>10.1f} "
              f"{r['to_first_result_s']['median'] * ms:>10.1f} {r['process_s']['median'] * ms:>9.1f}"
              f"   Numba imported: {r['numba_imported']}")
    print(f"warm cache / cold, to first launch: {result['warm_over_cold_first_launch']:.3f} "
          f"(against a cold kernel cache with compiled objects kept: "
          f"{result['warm_over_cold_kernel_cache_first_launch']:.3f})")
    _perfutil.write_json(args.json, result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
