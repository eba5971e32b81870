"""Kernels, device functions and device arrays pickle, and unpickle in another process (what Dask and
multiprocessing need): a kernel is compiled again there (or loaded from the disk cache), a device array
travels as its host data."""

from __future__ import annotations

import os
import pickle
import subprocess
import sys

import numpy as np

from numba_metal import metal

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCALE = 3.0


@metal.jit(device=True)
def scaled(x):
    return x * SCALE


@metal.jit
def apply_scaled(a, out):
    i = metal.grid(1)
    if i < out.size:
        out[i] = scaled(a[i]) + 1


@metal.jit("void(int32[:])")
def eager_double(a):
    i = metal.grid(1)
    if i < a.size:
        a[i] *= 2


def make_closure_kernel(k):
    @metal.jit
    def add_k(a):
        i = metal.grid(1)
        if i < a.size:
            a[i] += k
    return add_k


def run_in_child(payload: bytes) -> bytes:
    """Unpickle ``payload`` in a fresh interpreter that cannot import this test module, run what it
    holds and pickle the result back."""
    code = (
        "import pickle, sys\n"
        "import numpy as np\n"
        "from numba_metal import metal\n"
        "job = pickle.loads(sys.stdin.buffer.read())\n"
        "sys.stdout.buffer.write(pickle.dumps(job['run'](job)))\n"
    )
    env = dict(os.environ, PYTHONPATH=ROOT, NUMBA_METAL_DEVICE="cpu")
    out = subprocess.run([sys.executable, "-c", code], input=payload, env=env, capture_output=True,
                         timeout=300, cwd="/")
    assert out.returncode == 0, out.stderr.decode()
    return pickle.loads(out.stdout)


def _run_kernels(job):
    import numpy as np
    from numba_metal import metal
    a = job["a"]                                     # a device array, unpickled onto this device
    out = metal.device_array(a.shape, a.dtype)
    job["kernel"][1, 64](a, out)
    ints = np.arange(8, dtype=np.int32)
    job["eager"][1, 8](ints)
    c = np.zeros(4, np.float32)
    job["closure"][1, 4](c)
    return out.copy_to_host(), ints, c, type(a).__name__, job["devfn"].py_func(2.0)


def test_kernels_and_device_functions_run_in_another_process():
    from numba import cloudpickle
    host = np.arange(50, dtype=np.float32)
    job = {"run": _run_kernels, "a": metal.to_device(host), "kernel": apply_scaled, "eager": eager_double,
           "closure": make_closure_kernel(5.0), "devfn": scaled}
    # cloudpickle, as Dask does, with this module's functions by value: the child cannot import it.
    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    try:
        payload = cloudpickle.dumps(job)
    finally:
        cloudpickle.unregister_pickle_by_value(sys.modules[__name__])
    out, ints, c, kind, py = run_in_child(payload)
    np.testing.assert_array_equal(out, host * 3 + 1)
    np.testing.assert_array_equal(ints, np.arange(8) * 2)
    np.testing.assert_array_equal(c, 5)
    assert kind == "DeviceNDArray" and py == 6.0


def test_plain_pickle_round_trip_in_process():
    k = pickle.loads(pickle.dumps(apply_scaled))
    assert k is pickle.loads(pickle.dumps(apply_scaled))   # unpickled once per process
    a = metal.to_device(np.arange(4, dtype=np.float32))
    out = metal.device_array(4, np.float32)
    k[1, 4](a, out)
    np.testing.assert_array_equal(out.copy_to_host(), np.arange(4) * 3 + 1)
    e = pickle.loads(pickle.dumps(eager_double))
    assert list(e.specializations) == list(eager_double.specializations)


def test_device_arrays_pickle_as_their_host_data():
    host = np.arange(12, dtype=np.int64).reshape(3, 4)
    d = metal.to_device(host)
    view = d[:, ::2]
    back = pickle.loads(pickle.dumps(view))
    assert isinstance(back, metal.DeviceNDArray) and back.buffer is not d.buffer
    np.testing.assert_array_equal(back.copy_to_host(), host[:, ::2])
    empty = pickle.loads(pickle.dumps(metal.device_array((0, 2), np.float32)))
    assert empty.shape == (0, 2)
