"""profile sample: a small pipeline with host work between kernels (device idle gaps).

With NUMBA_METAL_ADVISOR_BASELINE=1 it computes the same thing with NumPy (the CPU baseline).
"""
import math
import os
import sys

import numpy as np

from numba_metal import metal

N = 1 << 14
STEPS = int(sys.argv[1]) if len(sys.argv) > 1 else 6


@metal.jit
def smooth(a, out):
    i = metal.grid(1)
    if 0 < i < out.size - 1:
        out[i] = math.sqrt(abs(a[i - 1] + 2.0 * a[i] + a[i + 1])) * 0.25


def host_work(x):
    # Deliberately slow host-side Python between kernels: the device sits idle meanwhile.
    s = 0.0
    for k in range(3000):
        s += math.sin(k * 0.001)
    return x + np.float32(s * 1e-9)


def numpy_smooth(a):
    out = np.zeros_like(a)
    out[1:-1] = np.sqrt(np.abs(a[:-2] + 2.0 * a[1:-1] + a[2:])) * 0.25
    return out


def main():
    a = np.linspace(0.0, 1.0, N, dtype=np.float32)
    if os.environ.get("NUMBA_METAL_ADVISOR_BASELINE") == "1":
        for _ in range(STEPS):
            a = host_work(numpy_smooth(a))
    else:
        d_out = metal.device_array(N, np.float32)
        for _ in range(STEPS):
            smooth[(N + 255) // 256, 256](metal.to_device(a), d_out)
            a = host_work(d_out.copy_to_host())
    print(f"checksum {float(a.sum()):.6f}")


if __name__ == "__main__":
    main()
