"""compare sample: creates a new kernel on every call, so every call compiles (a methodology bug
compare must report rather than time as if it were warm)."""
import numpy as np

from numba_metal import metal

N = 64


def advisor_workload():
    a = np.arange(N, dtype=np.float32)
    d_a = metal.to_device(a)
    d_out = metal.device_array(N, np.float32)

    def run_metal():
        @metal.jit
        def twice(x, out):  # a new dispatcher each call: compiled again every time
            i = metal.grid(1)
            if i < out.size:
                out[i] = x[i] * 2.0
        twice[1, N](d_a, d_out)
        metal.synchronize()
        return d_out

    return {"name": "recompiling", "cpu": lambda: a * 2, "metal": run_metal}
