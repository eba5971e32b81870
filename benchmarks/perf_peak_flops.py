"""The compute roof of the CPU reference device: the highest float32 FLOP/s a ``@metal.jit`` kernel reaches
when nothing but arithmetic limits it.

    python benchmarks/perf_peak_flops.py [--json out.json] [--repeats 7]

Each work-item runs C independent chains of ``x = x·a + b`` (two float32 operations per step) for S steps
and stores their sum: no memory traffic but one store per work-item, and C chains in flight so that
the latency of one operation is hidden behind the others (a single chain measures latency, not
throughput). C sweeps 1, 2, 4, ..., 64; the highest rate over C is the measured compute peak that the
roofline of docs/research-report.md uses. Two forms are timed: a multiply then an add (numba-metal
emits each float operation as its own statement, so neither clang nor Metal's safe math mode fuses
them) and ``metal.fma`` (one fused operation, counted as two flops as usual).

Work: 16,384 work-items (128 threadgroups of 128) × C chains × S steps, with C·S = 8,192 (a constant
amount of arithmetic per configuration); timed as one launch plus ``metal.synchronize()``, median of
``--repeats``. Every result is checked against a float64 NumPy evaluation of the same recurrence before
it is timed. This measures the CPU reference device, which exists for testing: its speed says nothing
about an Apple GPU.
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

THREADS = 128
BLOCKS = 128
STEPS_TIMES_CHAINS = 8192
CHAINS = (1, 2, 4, 8, 16, 32, 64)
# The recurrence contracts towards b / (1 − a) = 1, so values stay in range for any number of steps.
A = np.float32(0.999)
B = np.float32(0.001)


def _source(chains: int, fused: bool) -> str:
    """The kernel for C chains: written out, since the chains must be separate variables (an array would
    put them in memory)."""
    step = "metal.fma(x{c}, a, b)" if fused else "x{c} * a + b"
    lines = ["def kernel(out, a, b, steps):",
             "    i = metal.grid(1)",
             "    seed = np.float32(i % 1024) * np.float32(0.0009765625)"]
    lines += [f"    x{c} = seed + np.float32({c})" for c in range(chains)]
    lines += ["    for _ in range(steps):"]
    lines += [f"        x{c} = " + step.format(c=c) for c in range(chains)]
    lines += ["    out[i] = " + " + ".join(f"x{c}" for c in range(chains))]
    return "\n".join(lines) + "\n"


def make_kernel(chains: int, fused: bool):
    namespace = {"metal": metal, "np": np}
    exec(compile(_source(chains, fused), f"<peak_flops chains={chains} fused={fused}>", "exec"), namespace)
    return metal.jit(namespace["kernel"])


def reference(chains: int, steps: int) -> np.ndarray:
    """The kernel's outputs in float64 (the recurrence has a closed form: x_s = 1 + (x_0 − 1)·a^s)."""
    i = np.arange(BLOCKS * THREADS)
    seed = (i % 1024) * 0.0009765625
    a = float(A)
    return sum(1.0 + (seed + c - 1.0) * a ** steps for c in range(chains))


def measure(chains: int, fused: bool, repeats: int) -> dict:
    steps = STEPS_TIMES_CHAINS // chains
    kernel = make_kernel(chains, fused)
    out = metal.device_array(BLOCKS * THREADS, np.float32)
    kernel[BLOCKS, THREADS](out, A, B, steps)
    got = out.copy_to_host()
    # float32 rounding of a contracting recurrence: a few ulp of the final value per chain.
    np.testing.assert_allclose(got, reference(chains, steps), rtol=1e-4 * chains, atol=1e-4 * chains)
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        kernel[BLOCKS, THREADS](out, A, B, steps)
        metal.synchronize()
        times.append(time.perf_counter() - t0)
    flops = 2 * BLOCKS * THREADS * chains * steps
    median = _perfutil.median(times)
    return {"chains": chains, "steps": steps, "flops": flops, "time_ms": _perfutil.summary(times, 1e3),
            "gflop_s": flops / median / 1e9}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", help="write the results to this file")
    ap.add_argument("--repeats", type=int, default=7)
    args = ap.parse_args(argv)
    info = _perfutil.machine()
    print(_perfutil.describe(info))
    results = {}
    for form, fused in (("mul_add", False), ("fma", True)):
        rows = []
        print(f"\n{form}: {'chains':>6} {'steps':>6} {'median ms':>10} {'GFLOP/s':>8}   (medians of {args.repeats})")
        for chains in CHAINS:
            row = measure(chains, fused, args.repeats)
            rows.append(row)
            print(f"{'':{len(form) + 1}} {chains:>7} {row['steps']:>6} {row['time_ms']['median']:>10.2f} "
                  f"{row['gflop_s']:>8.2f}")
        results[form] = rows
    best = max((row["gflop_s"], form, row["chains"]) for form, rows in results.items() for row in rows)
    peak = {"gflop_s": best[0], "form": best[1], "chains": best[2]}
    print(f"\nmeasured float32 peak: {peak['gflop_s']:.2f} GFLOP/s ({peak['form']}, {peak['chains']} chains)")
    _perfutil.write_json(args.json, {
        "benchmark": "peak_flops", "machine": info,
        "work_items": BLOCKS * THREADS, "threads_per_threadgroup": THREADS,
        "flops_per_step": 2, "steps_times_chains": STEPS_TIMES_CHAINS,
        "results": results, "peak": peak})
    return 0


if __name__ == "__main__":
    sys.exit(main())
