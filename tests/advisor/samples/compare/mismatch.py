"""compare sample: the numba-metal kernel has a bug (adds 1), so results do not match."""
import numpy as np

from numba_metal import metal

N = 1000


@metal.jit
def add_kernel(a, b, out):
    i = metal.grid(1)
    if i < out.size:
        out[i] = a[i] + b[i] + 1.0  # the bug compare must catch


def advisor_workload():
    a = np.arange(N, dtype=np.float32)
    b = np.ones(N, dtype=np.float32)
    d_a, d_b = metal.to_device(a), metal.to_device(b)
    d_out = metal.device_array(N, np.float32)

    def run_metal():
        add_kernel[(N + 127) // 128, 128](d_a, d_b, d_out)
        metal.synchronize()
        return d_out

    return {"name": "buggy add", "cpu": lambda: a + b, "metal": run_metal}
