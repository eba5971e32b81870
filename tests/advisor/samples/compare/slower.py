"""compare sample: many tiny launches lose to one NumPy call (numba-metal is slower).

The numba-metal side also waits 0.2 s per call (standing in for slow host-side work around the
launches) so that the verdict the tests check does not depend on how loaded the machine is.
"""
import time

import numpy as np

from numba_metal import metal

N = 256
LAUNCHES = 20


@metal.jit
def add_one(a):
    i = metal.grid(1)
    if i < a.size:
        a[i] = a[i] + 1.0


def advisor_workload():
    base = np.zeros(N, dtype=np.float32)
    d_a = metal.device_array(N, np.float32)

    def cpu():
        return base + LAUNCHES

    def run_metal():
        d_a.copy_to_device(base)
        for _ in range(LAUNCHES):
            add_one[1, N](d_a)
        time.sleep(0.2)
        return d_a.copy_to_host()

    return {"name": "tiny launches", "cpu": cpu, "metal": run_metal}
