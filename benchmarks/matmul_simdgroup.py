"""The matmul benchmark's SIMD-group-matrix variant: codegen.py's 16x16 tiled matmul beside the same product
computed with ``metal.simdgroup`` 8x8 matrices (issue 28, item 5), both checked against NumPy.

    NUMBA_METAL_DEVICE=cpu python benchmarks/matmul_simdgroup.py [--n N] [--repeats R] [--json FILE]

The SIMD-group kernel gives each threadgroup of 128 threads (four SIMD groups) a 32x32 block of C: each
SIMD group owns a 16x16 quarter as four 8x8 accumulators; per step of 8 along k, it loads two 8x8 tiles of A
and two of B straight from device memory and does four ``multiply_accumulate``. The tiled kernel is
codegen.py's (threadgroup-memory tiles, one element per thread). Both are float32; results must be within
float32 rounding of NumPy's float64 product (the summation orders differ), or the script fails.

On the CPU reference device each SIMD-group operation is a rendezvous of 32 fibers, so this measures the
reference device's emulation, not an Apple GPU: the times say that the variant runs and is correct, and what
it costs here. On Apple7+ GPUs the point of ``simdgroup_multiply_accumulate`` is its throughput (an estimate
until measured on one; see docs/performance.md).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
os.environ.setdefault("NUMBA_METAL_DEVICE", "cpu")
import bench_common  # noqa: E402,F401 - this tree's numba_metal, no performance warnings
import codegen  # noqa: E402 - the tiled matmul kernel and its tile side

from numba_metal import metal  # noqa: E402

BLOCK = 32        # the side of C's block a threadgroup computes
SIMD_GROUPS = 4   # SIMD groups per threadgroup: 2x2 quarters of 16x16


def matmul_simdgroup(A, B, C):
    sg = metal.simdgroup
    s = metal.threadIdx.x // 32
    row = metal.blockIdx.y * BLOCK + (s // 2) * 16
    col = metal.blockIdx.x * BLOCK + (s % 2) * 16
    c00 = sg.fill(0.0)
    c01 = sg.fill(0.0)
    c10 = sg.fill(0.0)
    c11 = sg.fill(0.0)
    for k in range(0, A.shape[1], 8):
        a0 = sg.load(A, row, k)
        a1 = sg.load(A, row + 8, k)
        b0 = sg.load(B, k, col)
        b1 = sg.load(B, k, col + 8)
        c00 = sg.multiply_accumulate(a0, b0, c00)
        c01 = sg.multiply_accumulate(a0, b1, c01)
        c10 = sg.multiply_accumulate(a1, b0, c10)
        c11 = sg.multiply_accumulate(a1, b1, c11)
    sg.store(c00, C, row, col)
    sg.store(c01, C, row, col + 8)
    sg.store(c10, C, row + 8, col)
    sg.store(c11, C, row + 8, col + 8)


def _best(fn, repeats: int) -> float:
    """The best of ``repeats`` samples, each the mean of back-to-back calls over at least 20 ms (seconds)."""
    best = float("inf")
    for _ in range(repeats):
        calls, t0 = 0, time.perf_counter()
        while True:
            fn()
            calls += 1
            elapsed = time.perf_counter() - t0
            if elapsed >= codegen.SAMPLE_S:
                break
        best = min(best, elapsed / calls)
    return best


def run(n: int, repeats: int) -> dict:
    if n % BLOCK or n % codegen.TPB:
        raise SystemExit(f"--n must be a multiple of {BLOCK}")
    rng = np.random.default_rng(0)
    a, b = (rng.random((n, n), dtype=np.float32) for _ in range(2))
    want = a.astype(np.float64) @ b.astype(np.float64)
    dA, dB = metal.to_device(a), metal.to_device(b)
    tiled, simd = metal.jit(codegen.matmul), metal.jit(matmul_simdgroup)
    outs = {"tiled": metal.device_array((n, n), np.float32), "simdgroup": metal.device_array((n, n), np.float32)}

    def launch_tiled():
        tiled[(n // codegen.TPB, n // codegen.TPB), (codegen.TPB, codegen.TPB)](dA, dB, outs["tiled"])
        metal.synchronize()

    def launch_simd():
        simd[(n // BLOCK, n // BLOCK), 32 * SIMD_GROUPS](dA, dB, outs["simdgroup"])
        metal.synchronize()

    result = {"problem": f"{n}x{n}x{n} float32", "kernels": {}}
    for name, fn in (("tiled", launch_tiled), ("simdgroup", launch_simd)):
        fn()
        got = outs[name].copy_to_host()
        err = float(np.max(np.abs(got - want) / (np.abs(want) + 1.0)))
        result["kernels"][name] = {"max_relative_error": err, "correct": bool(err < 1e-5),
                                   "best_ms": _best(fn, repeats) * 1e3}
    return result


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=128, help="the matrices' side (a multiple of 32)")
    ap.add_argument("--repeats", type=int, default=5, help="timed samples of each kernel (best is kept)")
    ap.add_argument("--json", help="write the results to this file")
    args = ap.parse_args(argv)
    result = run(args.n, args.repeats)
    from _perfutil import machine
    result["machine"] = machine()
    for name, r in result["kernels"].items():
        print(f"{name:10} {result['problem']}: {r['best_ms']:9.3f} ms per launch + wait, max relative error "
              f"{r['max_relative_error']:.2e} ({'correct' if r['correct'] else 'WRONG'})")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=2)
        print(f"wrote {args.json}")
    return 0 if all(r["correct"] for r in result["kernels"].values()) else 1


if __name__ == "__main__":
    sys.exit(main())
