"""The main example: add two vectors on the GPU.

On an Apple-silicon Mac this runs on the Metal GPU. Elsewhere (or with NUMBA_METAL_DEVICE=cpu) it
runs on numba-metal's CPU reference device, which executes the very same generated MSL; the script
says which device it used.
"""

import os
import time

import numpy as np

from numba_metal import metal


@metal.jit
def vector_add(a, b, out):
    i = metal.grid(1)
    if i < out.size:
        out[i] = a[i] + b[i]


def main():
    if not metal.is_available() and "NUMBA_METAL_DEVICE" not in os.environ:
        print("No Metal GPU here; choosing numba-metal's CPU reference device explicitly.")
        metal.select_device("cpu")
    info = metal.get_device_info()
    print(f"device: {info.name} ({info.kind})")

    n = 1_000_000
    a = np.arange(n, dtype=np.float32)
    b = np.full(n, 2.0, dtype=np.float32)
    d_a, d_b, d_out = metal.to_device(a), metal.to_device(b), metal.device_array_like(a)

    t0 = time.perf_counter()
    vector_add[(n + 255) // 256, 256](d_a, d_b, d_out)
    metal.synchronize()
    t1 = time.perf_counter()
    out = d_out.copy_to_host()

    assert np.array_equal(out, a + b), "wrong result"
    print(f"vector_add of {n:,} float32 elements: correct (first launch incl. compile {t1 - t0:.3f} s)")
    print("out[:5] =", out[:5])


if __name__ == "__main__":
    main()
