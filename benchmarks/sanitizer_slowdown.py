"""The kernel sanitizer's cost: each kernel timed on the CPU reference device plain and with
``sanitize="all"`` (docs/sanitizer.md), printed as a Markdown table.

    NUMBA_METAL_DEVICE=cpu python benchmarks/sanitizer_slowdown.py [--repeat 5]

The kernels are the shapes the sanitizer instruments: a shared-memory tree reduction and a tiled matrix
product (every shared access calls the hooks), a 1-D stencil and a vector add (device memory only: the
bounds checks alone). Each time is the best of ``--repeat`` launches after one warm-up launch (which
compiles), with device arrays, so copies are not timed.
"""

from __future__ import annotations

import argparse
import os
import platform
import time

import numpy as np

from numba_metal import metal

TILE = 16


def reduction(a, out):
    s = metal.shared.array(256, np.float32)
    t = metal.threadIdx.x
    s[t] = a[metal.grid(1)]
    metal.syncthreads()
    k = 128
    while k > 0:
        if t < k:
            s[t] += s[t + k]
        metal.syncthreads()
        k //= 2
    if t == 0:
        out[metal.blockIdx.x] = s[0]


def matmul(a, b, c):
    sa = metal.shared.array((TILE, TILE), np.float32)
    sb = metal.shared.array((TILE, TILE), np.float32)
    tx, ty = metal.threadIdx.x, metal.threadIdx.y
    row = metal.blockIdx.y * TILE + ty
    col = metal.blockIdx.x * TILE + tx
    acc = np.float32(0.0)
    for k0 in range(0, a.shape[1], TILE):
        sa[ty, tx] = a[row, k0 + tx]
        sb[ty, tx] = b[k0 + ty, col]
        metal.syncthreads()
        for k in range(TILE):
            acc += sa[ty, k] * sb[k, tx]
        metal.syncthreads()
    c[row, col] = acc


def stencil(a, out):
    i = metal.grid(1)
    if 0 < i < a.size - 1:
        out[i] = 0.25 * a[i - 1] + 0.5 * a[i] + 0.25 * a[i + 1]


def vector_add(a, b, out):
    i = metal.grid(1)
    if i < out.size:
        out[i] = a[i] + b[i]


def cases():
    n = 1 << 18
    x = metal.to_device(np.random.default_rng(0).random(n).astype(np.float32))
    y = metal.to_device(np.ones(n, np.float32))
    m = 256
    am = metal.to_device(np.random.default_rng(1).random((m, m)).astype(np.float32))
    return [
        ("tree reduction (shared, 256 threads)", reduction, (n // 256, 256), (x, metal.device_array(n // 256, np.float32))),
        (f"tiled matmul {m}x{m} (shared, {TILE}x{TILE})", matmul, ((m // TILE, m // TILE), (TILE, TILE)),
         (am, am, metal.device_array((m, m), np.float32))),
        ("3-point stencil (device memory)", stencil, (n // 256, 256), (x, metal.device_array(n, np.float32))),
        ("vector add (device memory)", vector_add, (n // 256, 256), (x, y, metal.device_array(n, np.float32))),
    ]


def best(kernel, config, args, repeat):
    kernel[config](*args)
    metal.synchronize()
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        kernel[config](*args)
        metal.synchronize()
        times.append(time.perf_counter() - t)
    return min(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    dev = metal.get_current_device()
    print(f"machine: {platform.machine()}, {os.cpu_count()} CPUs, {platform.system()} {platform.release()}; "
          f"device: {dev.name} ({dev.kind})\n")
    print("| kernel | plain (ms) | sanitize=\"all\" (ms) | slowdown |")
    print("|---|---:|---:|---:|")
    for title, fn, config, kargs in cases():
        plain = best(metal.jit(sanitize=False)(fn), config, kargs, args.repeat)
        checked = best(metal.jit(sanitize="all")(fn), config, kargs, args.repeat)
        print(f"| {title} | {plain * 1e3:.2f} | {checked * 1e3:.2f} | {checked / plain:.1f}x |")


if __name__ == "__main__":
    main()
