"""Regression: compiling a @numba.njit function before the first numba-metal kernel made numba-metal's
typing context fail to build (an UnsupportedError about @intrinsic escaped from every later compile).

Found by the differential tests: their reference asks Numba's CPU typing context for signatures
before the first kernel is compiled. Numba's CPU target registers @overload_method templates,
which the metal typing context installs, and installing them asked numba-metal's dispatcher stub
for a lowering registry, which raised.

The typing context is created once per process, so the scenario runs in a fresh interpreter.
"""

import os
import subprocess
import sys
import textwrap

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

SCRIPT = textwrap.dedent("""
    import numpy as np, numba
    from numba_metal import metal

    @numba.njit
    def cpu_sum(x):
        return x.sum() + np.argmax(x)   # sets up Numba's CPU target and its @overload_methods

    assert cpu_sum(np.ones(3)) == 3.0

    @metal.jit
    def k(a):
        i = metal.grid(1)
        if i < a.size:
            a[i] = i * 2

    a = np.zeros(5, np.float32)
    k[1, 8](a)
    print(a.tolist())
""")


def test_metal_kernel_compiles_after_numba_njit_set_up_the_cpu_target():
    env = dict(os.environ, NUMBA_METAL_DEVICE="cpu", PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    r = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stdout.strip() == "[0.0, 2.0, 4.0, 6.0, 8.0]"
