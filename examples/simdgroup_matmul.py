"""Multiply matrices with SIMD-group matrices (metal.simdgroup): each SIMD group of 32 threads computes one
8x8 tile of C = A @ B + C, eight columns of A and eight rows of B at a time.

SIMD-group matrices are MSL's simdgroup_float8x8 and simdgroup_half8x8 (Apple7 GPUs and later, which is
every GPU numba-metal uses); numba.cuda has nothing like them. Elsewhere (or with NUMBA_METAL_DEVICE=cpu) this
runs on numba-metal's CPU reference device, which executes the very same MSL.
"""

import os
import warnings

import numpy as np
from numba.core.errors import NumbaPerformanceWarning

from numba_metal import metal

TILE = 8


@metal.jit
def matmul_accumulate(A, B, C):
    sg = metal.simdgroup
    # One SIMD group per tile of C: threadgroups of 32 threads, a grid of (C's columns / 8, C's rows / 8).
    row = metal.blockIdx.y * TILE
    col = metal.blockIdx.x * TILE
    acc = sg.load(C, row, col)
    for k in range(0, A.shape[1], TILE):
        acc = sg.multiply_accumulate(sg.load(A, row, k), sg.load(B, k, col), acc)
    sg.store(acc, C, row, col)


def main():
    if not metal.is_available() and "NUMBA_METAL_DEVICE" not in os.environ:
        print("No Metal GPU here; choosing numba-metal's CPU reference device explicitly.")
        metal.select_device("cpu")
    print(f"device: {metal.get_device_info().name}")
    rng = np.random.default_rng(0)
    m, k, n = 64, 48, 32                      # multiples of 8
    for dtype in (np.float32, np.float16):
        # Small integers: exact in float16 and float32 whatever order the sums take.
        a = rng.integers(-3, 4, (m, k)).astype(dtype)
        b = rng.integers(-3, 4, (k, n)).astype(dtype)
        c = rng.integers(-3, 4, (m, n)).astype(dtype)
        want = (a.astype(np.float64) @ b + c).astype(dtype)
        d_c = metal.to_device(c)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", NumbaPerformanceWarning)   # a small grid, on purpose
            matmul_accumulate[(n // TILE, m // TILE), 32](metal.to_device(a), metal.to_device(b), d_c)
        got = d_c.copy_to_host()
        assert np.array_equal(got, want), f"wrong {np.dtype(dtype).name} result"
        print(f"{np.dtype(dtype).name}: C = A @ B + C for {m}x{k} @ {k}x{n}: correct")


if __name__ == "__main__":
    main()
