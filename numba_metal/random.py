"""Device-side random numbers: xoroshiro128+, the generator of ``numba.cuda.random`` (this module is the
public name of :mod:`numba_metal.libraries.random`).

For the same seed the streams are those of ``numba.cuda.random``: the same states, the same uint64
sequence and the same float32 and float64 uniforms bit for bit; normal values go through ``log``/
``sqrt``/``cos`` (the device's float32 ones, and the emulated float64 math library's for the float64
normals, which numba.cuda computes from float32 uniforms and a float32 log) and agree to within a few
ulp.

The states array is numba.cuda's too: a 1-d device array of the record dtype ``xoroshiro128p_dtype``
(fields ``s0`` and ``s1``, uint64). Kernels use it exactly as with numba.cuda::

    from numba_metal.random import create_xoroshiro128p_states, xoroshiro128p_uniform_float32

    @metal.jit
    def fill(states, out):
        i = metal.grid(1)
        if i < out.size:
            out[i] = xoroshiro128p_uniform_float32(states, i)
"""

from numba_metal.libraries.random import *  # noqa: F401,F403
from numba_metal.libraries.random import __all__  # noqa: F401
