"""Launch overhead, compile time and start-up of two source trees (e.g. two commits), measured interleaved.

    git worktree add /tmp/before <commit>        # and build its runtime there: python -m numba_metal.tools.build
    python benchmarks/perf_compare.py --before /tmp/before --after . [--rounds 3] [--json out.json]

Each round runs perf_launch.py, perf_compile.py and perf_startup.py of each tree, alternating which tree
goes first, so that a change in the machine's load falls on both alike. For every figure it prints the
median over the rounds of each run's median, and the spread (lowest and highest run median) beside it:
on a shared machine the spread says how far a difference can be trusted. It then counts what the load
cannot change: the Python function calls of the import, of a launch and of a compile. Each tree's own scripts
measure it (with its own ``numba_metal`` on ``PYTHONPATH``), on the CPU reference device unless
``NUMBA_METAL_DEVICE`` says otherwise.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _perfutil  # noqa: E402

os.environ.setdefault("NUMBA_METAL_DEVICE", "cpu")

BENCHMARKS = {"launch": ["--repeats", "5"], "compile": ["--kernels", "10"], "startup": ["--runs", "7"]}

# Counts that the machine's load cannot change: Python function calls (cProfile) of ``import numba_metal``,
# of one launch with a known specialisation, and of typing and compiling a
# new kernel. Run in a new interpreter of each tree.
COUNTS_CHILD = r"""
import cProfile, json, os, pstats, sys
os.environ.setdefault("NUMBA_METAL_DEVICE", "cpu")
import numpy as np
def calls(fn):
    pr = cProfile.Profile(); pr.enable(); fn(); pr.disable()
    return pstats.Stats(pr).total_calls
out = {"import: Python calls": calls(lambda: __import__("numba_metal.metal"))}
from numba_metal import metal
from numba_metal.compiler import driver, frontend
from numba.core import types
ns = {"metal": metal}
exec("def k(a0, a1, a2, x, y):\n    if metal.grid(1) == 0:\n        a0[0] = x\n", ns)
k = metal.jit(ns["k"])
arrs = [metal.device_array(4, np.float32) for _ in range(3)]
x, y = np.float32(1), np.float32(2)
def launches():
    for _ in range(1000):
        k[1, 1](*arrs, x, y)
launches(); metal.synchronize()
out["launch, 3 arrays: Python calls"] = calls(launches) / 1000
metal.synchronize()
src = "def vadd_{i}(a, b, out):\n    i = metal.grid(1)\n    if i < out.size:\n        out[i] = a[i] + b[i] + {i}.0\n"
def new(i):
    ns = {"metal": metal}
    exec(src.format(i=i), ns)
    return ns["vadd_%d" % i]
ty = (types.float32[::1],) * 3
driver.compile_kernel(new(0), ty)
f = new(1)
out["compile: typing, Python calls"] = calls(lambda: frontend.infer_types(f, ty))
g = new(2)
out["compile: numba-metal (both), Python calls"] = calls(lambda: driver.compile_kernel(g, ty))
print(json.dumps(out))
"""


def _launch_figures(r: dict) -> dict:
    out = {}
    for row in r["results"]:
        n = row["arrays"]
        out[f"launch, {n} arrays: wall us"] = row["launch_us"]["median"]
        out[f"launch, {n} arrays: CPU us"] = row["cpu_time"]["launch_us"]["median"]
        out[f"launch, {n} arrays: Python side us"] = row["python_side_us"]["median"]
        out[f"launch, {n} arrays: Python side, CPU us"] = row["cpu_time"]["python_side_us"]["median"]
        out[f"launch, {n} arrays: runtime submit, CPU us"] = row["cpu_time"]["runtime_submit_us"]["median"]
        out[f"launch, {n} arrays: njit call us"] = row["njit_call_us"]["median"]
    return out


def _compile_figures(r: dict) -> dict:
    return {"compile: typing ms": r["typing_ms"]["median"],
            "compile: MSL generation ms": r["msl_generation_ms"]["median"],
            "compile: numba-metal (both) ms": r["numba_metal_compile_ms"]["median"],
            "compile: device pipeline ms": r["device_pipeline_ms"]["median"]}


def _startup_figures(r: dict) -> dict:
    return {"start-up: import numba_metal ms": 1e3 * r["import"]["numba_metal_s"]["median"],
            "start-up: cold caches, to first launch ms": 1e3 * r["cold"]["to_first_launch_s"]["median"],
            "start-up: warm disk cache, to first launch ms": 1e3 * r["warm_cache"]["to_first_launch_s"]["median"],
            "start-up: warm disk cache, first launch ms": 1e3 * r["warm_cache"]["first_launch_s"]["median"],
            "start-up: warm / cold, to first launch": r["warm_over_cold_first_launch"],
            "start-up: cold caches, to first result ms": 1e3 * r["cold"]["to_first_result_s"]["median"],
            "start-up: warm disk cache, to first result ms": 1e3 * r["warm_cache"]["to_first_result_s"]["median"]}


FIGURES = {"launch": _launch_figures, "compile": _compile_figures, "startup": _startup_figures}


def _run(tree: str, bench: str, out: str) -> dict:
    env = dict(os.environ, PYTHONPATH=tree)
    script = os.path.join(tree, "benchmarks", f"perf_{bench}.py")
    subprocess.run([sys.executable, script, "--json", out] + BENCHMARKS[bench], cwd=tree, env=env, check=True,
                   stdout=subprocess.DEVNULL, timeout=1800)
    with open(out) as f:
        return json.load(f)


def _counts(tree: str) -> dict:
    res = subprocess.run([sys.executable, "-c", COUNTS_CHILD], cwd=tree, env=dict(os.environ, PYTHONPATH=tree),
                         capture_output=True, text=True, check=True, timeout=600)
    return json.loads(res.stdout.strip().splitlines()[-1])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--before", required=True, help="the tree measured as 'before'")
    ap.add_argument("--after", required=True, help="the tree measured as 'after'")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--json", help="write every run's figures and the summary to this file")
    args = ap.parse_args(argv)
    trees = {"before": os.path.abspath(args.before), "after": os.path.abspath(args.after)}
    runs: dict = {side: {} for side in trees}
    loads = []
    with tempfile.TemporaryDirectory() as tmp:
        for rnd in range(args.rounds):
            for bench in BENCHMARKS:
                order = ("before", "after") if rnd % 2 == 0 else ("after", "before")
                for side in order:
                    r = _run(trees[side], bench, os.path.join(tmp, f"{side}-{bench}-{rnd}.json"))
                    loads.append(r["machine"].get("load_average"))
                    for name, value in FIGURES[bench](r).items():
                        runs[side].setdefault(name, []).append(value)
    info = _perfutil.machine()
    print(_perfutil.describe(info))
    print(f"before: {trees['before']}\nafter:  {trees['after']}")
    print(f"{args.rounds} interleaved rounds; median of the runs' medians [lowest .. highest run median]")
    summary = {}
    print(f"{'figure':48} {'before':>26} {'after':>26} {'after/before':>12}")
    for name in runs["before"]:
        b, a = runs["before"][name], runs["after"][name]
        mb, ma = statistics.median(b), statistics.median(a)
        summary[name] = {"before": {"median": mb, "min": min(b), "max": max(b)},
                         "after": {"median": ma, "min": min(a), "max": max(a)}, "ratio": ma / mb}
        print(f"{name:48} {mb:9.2f} [{min(b):6.2f} .. {max(b):6.2f}] {ma:9.2f} [{min(a):6.2f} .. {max(a):6.2f}] "
              f"{ma / mb:12.2f}")
    print("load averages (1 min) during the runs:", ", ".join(f"{la[0]:.1f}" for la in loads if la))
    counts = {side: _counts(tree) for side, tree in trees.items()}
    print(f"\n{'count (independent of the load)':48} {'before':>12} {'after':>12} {'after/before':>12}")
    for name, b in counts["before"].items():
        a = counts["after"][name]
        print(f"{name:48} {b:12,.0f} {a:12,.0f} {a / b:12.3f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"benchmark": "compare", "machine": info, "trees": trees, "rounds": args.rounds,
                       "runs": runs, "summary": summary, "loads": loads, "counts": counts}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
