"""Kernels an installed wheel must run on the CPU reference device (tools/check_wheel.sh runs this from
outside the source tree): float64 (emulated, bit-identical to NumPy), atomics and a threadgroup barrier.
Prints one line per kernel; exit status 1 on a wrong result or when numba_metal is imported from a tree
that is not an installed package."""

import math
import sys

import numpy as np

import numba_metal
from numba_metal import metal, runtime


@metal.jit
def f64_kernel(x, out):
    i = metal.grid(1)
    if i < out.size:
        out[i] = x[i] * 3.0 + x[i] / 7.0 - math.sqrt(x[i])


@metal.jit
def histogram(values, counts):
    i = metal.grid(1)
    if i < values.size:
        metal.atomic.add(counts, values[i] % counts.size, 1)


@metal.jit
def reverse_blocks(a, out):
    tile = metal.shared.array(128, metal.float32)
    t = metal.threadIdx.x
    base = metal.blockIdx.x * metal.blockDim.x
    tile[t] = a[base + t]
    metal.syncthreads()
    out[base + t] = tile[metal.blockDim.x - 1 - t]


def main() -> int:
    if "site-packages" not in numba_metal.__file__:
        print(f"numba_metal was imported from {numba_metal.__file__}, not from an installed wheel")
        return 1
    metal.select_device("cpu")
    print(f"numba_metal from {numba_metal.__file__}")
    print("CPU-device clang:", runtime.cpu_compiler_info().replace("\n", "\n  "))
    failed = 0

    x = np.linspace(0.5, 1e6, 4099)
    got = metal.device_array_like(x)
    f64_kernel[(x.size + 127) // 128, 128](metal.to_device(x), got)
    ok = np.array_equal(got.copy_to_host(), x * 3.0 + x / 7.0 - np.sqrt(x))
    print(f"{'ok  ' if ok else 'FAIL'}  float64 kernel: bit-identical to NumPy on {x.size} values")
    failed += not ok

    values = np.arange(10_000, dtype=np.int32) * 7
    counts = metal.to_device(np.zeros(16, dtype=np.int32))
    histogram[(values.size + 255) // 256, 256](metal.to_device(values), counts)
    ok = np.array_equal(counts.copy_to_host(), np.bincount(values % 16, minlength=16))
    print(f"{'ok  ' if ok else 'FAIL'}  atomics: a 16-bin histogram of {values.size} values with atomic.add")
    failed += not ok

    a = np.arange(128 * 8, dtype=np.float32)
    out = metal.device_array_like(a)
    reverse_blocks[8, 128](metal.to_device(a), out)
    ok = np.array_equal(out.copy_to_host(), a.reshape(8, 128)[:, ::-1].ravel())
    print(f"{'ok  ' if ok else 'FAIL'}  barrier: threadgroup memory reversed after syncthreads()")
    failed += not ok
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
