"""profile --pytest sample: two small tests that launch kernels (not collected by the main suite)."""
import numpy as np

from numba_metal import metal


@metal.jit
def scale(a, out, k):
    i = metal.grid(1)
    if i < out.size:
        out[i] = a[i] * k


def test_scale():
    a = np.arange(1000, dtype=np.float32)
    out = np.zeros_like(a)
    scale[4, 256](a, out, np.float32(3.0))
    assert np.allclose(out, a * 3)


def test_scale_device_arrays():
    a = metal.to_device(np.ones(512, dtype=np.float32))
    out = metal.device_array(512, np.float32)
    scale[2, 256](a, out, np.float32(2.0))
    assert np.allclose(out.copy_to_host(), 2.0)
