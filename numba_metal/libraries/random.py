"""xoroshiro128+ on the device and the host: the library behind ``numba_metal.random`` (whose docstring
says what it guarantees; that module is its public name, numba.cuda.random's twin)."""

from __future__ import annotations

import math

import numba
import numpy as np

from numba_metal.errors import MetalValueError
from numba_metal.host.allocation import device_array
from numba_metal.host.decorators import jit

_U0 = np.uint64(0)
_U1 = np.uint64(1)
_U11 = np.uint64(11)
_U14 = np.uint64(14)
_U27 = np.uint64(27)
_U30 = np.uint64(30)
_U31 = np.uint64(31)
_U36 = np.uint64(36)
_U55 = np.uint64(55)
_U64 = np.uint64(64)
_SPLITMIX_GAMMA = np.uint64(0x9E3779B97F4A7C15)
_SPLITMIX_M1 = np.uint64(0xBF58476D1CE4E5B9)
_SPLITMIX_M2 = np.uint64(0x94D049BB133111EB)
_JUMP0 = np.uint64(0xBEAC0467EBA5FACB)
_JUMP1 = np.uint64(0xD86B048B86AA9922)
_TWO_NEG53 = np.float32(2.0 ** -53)
_TWO_PI = np.float32(2 * math.pi)
_MINUS_TWO = np.float32(-2.0)
# float64 constants: np.float64 values make the kernels that call the float64 generators compute
# float64 exactly (compiler/precision.py).
_TWO_NEG53_F64 = np.float64(2.0 ** -53)
_TWO_PI_F64 = np.float64(2 * math.pi)
_MINUS_TWO_F64 = np.float64(-2.0)

#: A generator's state, numba.cuda.random's record dtype: states arrays are 1-d arrays of it.
xoroshiro128p_dtype = np.dtype([("s0", np.uint64), ("s1", np.uint64)], align=True)


@jit(device=True)
def _rotl(x, k):
    return (x << k) | (x >> (_U64 - k))


@jit(device=True)
def xoroshiro128p_next(states, index):
    """The next uint64 of generator ``index``, advancing it.

    Raises:
        KernelCompilationError: when the kernel calling it compiles, if ``states`` is not an array of
            ``xoroshiro128p_dtype`` records or ``index`` not an integer (also Numba's ``TypingError``).
        NumbaMetalError: called from ordinary Python (a device function; ``.py_func`` runs it in Python).
    """
    s0 = states[index]["s0"]
    s1 = states[index]["s1"]
    result = s0 + s1
    s1 ^= s0
    states[index]["s0"] = _rotl(s0, _U55) ^ s1 ^ (s1 << _U14)
    states[index]["s1"] = _rotl(s1, _U36)
    return result


@jit(device=True)
def xoroshiro128p_uniform_float32(states, index):
    """A float32 in [0, 1) from generator ``index`` (numba.cuda's value, bit for bit).

    Raises:
        KernelCompilationError, NumbaMetalError: as ``random.xoroshiro128p_next``.
    """
    # numba.cuda rounds the 53-bit fraction (x >> 11) / 2**53 to float32; rounding the 53-bit
    # integer to float32 and then scaling by the power of two 2**-53 is the same single rounding.
    return np.float32(xoroshiro128p_next(states, index) >> _U11) * _TWO_NEG53


@jit(device=True)
def xoroshiro128p_normal_float32(states, index):
    """A standard-normal float32 from generator ``index`` (Box–Muller; uses two uniforms).

    Raises:
        KernelCompilationError, NumbaMetalError: as ``random.xoroshiro128p_next``.
    """
    u1 = xoroshiro128p_uniform_float32(states, index)
    u2 = xoroshiro128p_uniform_float32(states, index)
    return math.sqrt(_MINUS_TWO * math.log(u1)) * math.cos(_TWO_PI * u2)


@jit(device=True)
def xoroshiro128p_uniform_float64(states, index):
    """A float64 in [0, 1) from generator ``index`` (numba.cuda's value, bit for bit: the top 53 bits
    times 2**-53, exact).

    Raises:
        KernelCompilationError, NumbaMetalError: as ``random.xoroshiro128p_next``.
    """
    return np.float64(xoroshiro128p_next(states, index) >> _U11) * _TWO_NEG53_F64


@jit(device=True)
def xoroshiro128p_normal_float64(states, index):
    """A standard-normal float64 from generator ``index``: numba.cuda's Box–Muller exactly as it computes
    it, from two *float32* uniforms (so the same stream), log in float32, the rest in float64.

    Raises:
        KernelCompilationError, NumbaMetalError: as ``random.xoroshiro128p_next``.
    """
    u1 = xoroshiro128p_uniform_float32(states, index)
    u2 = xoroshiro128p_uniform_float32(states, index)
    return math.sqrt(_MINUS_TWO_F64 * math.log(u1)) * math.cos(_TWO_PI_F64 * u2)


@jit(device=True)
def xoroshiro128p_jump(states, index):
    """Advance generator ``index`` by 2**64 steps.

    Raises:
        KernelCompilationError, NumbaMetalError: as ``random.xoroshiro128p_next``.
    """
    s0 = _U0
    s1 = _U0
    for i in range(2):
        jump = _JUMP0 if i == 0 else _JUMP1
        for b in range(64):
            if jump & (_U1 << np.uint64(b)):
                s0 ^= states[index]["s0"]
                s1 ^= states[index]["s1"]
            xoroshiro128p_next(states, index)
    states[index]["s0"] = s0
    states[index]["s1"] = s1


@numba.njit(cache=False)
def _rotl_host(x, k):
    return (x << k) | (x >> (_U64 - k))


@numba.njit(cache=False)
def _next_host(s0, s1):
    s1 ^= s0
    return _rotl_host(s0, _U55) ^ s1 ^ (s1 << _U14), _rotl_host(s1, _U36)


@numba.njit(cache=False)
def _jump_host(s0, s1):
    j0 = _U0
    j1 = _U0
    for word in (_JUMP0, _JUMP1):
        for b in range(64):
            if word & (_U1 << np.uint64(b)):
                j0 ^= s0
                j1 ^= s1
            s0, s1 = _next_host(s0, s1)
    return j0, j1


@numba.njit(cache=False)
def _init_states_host(out, seed, subsequence_start):
    # SplitMix64 of the seed, then each generator is its predecessor jumped 2**64 steps: inherently
    # sequential, so it runs on the host CPU as in numba.cuda (init_xoroshiro128p_states_cpu). One GPU
    # thread would take n * 128 dependent steps and trip the GPU's watchdog for large n.
    z = seed + _SPLITMIX_GAMMA
    z = (z ^ (z >> _U30)) * _SPLITMIX_M1
    z = (z ^ (z >> _U27)) * _SPLITMIX_M2
    z = z ^ (z >> _U31)
    s0 = z
    s1 = z
    for _ in range(subsequence_start):
        s0, s1 = _jump_host(s0, s1)
    for i in range(out.shape[0]):
        if i > 0:
            s0, s1 = _jump_host(s0, s1)
        out[i, 0] = s0
        out[i, 1] = s1


def init_xoroshiro128p_states(states, seed, subsequence_start=0, stream=0):
    """(Re)initialise ``states`` for ``seed``, starting at subsequence ``subsequence_start``.

    The states are computed on the host and copied in on ``stream`` (as numba.cuda does).

    Raises:
        MetalValueError: ``states`` is not a 1-d array of ``xoroshiro128p_dtype``.
        MetalRuntimeError: the copy to the device fails, or work waited for before it failed.
    """
    if states.ndim != 1 or states.dtype != xoroshiro128p_dtype:
        raise MetalValueError(f"states must be a 1-d device array of xoroshiro128p_dtype (records s0, s1 of "
                              f"uint64), as create_xoroshiro128p_states makes, not shape {states.shape} "
                              f"{states.dtype}")
    if states.shape[0] == 0:
        return
    host = np.empty((states.shape[0], 2), np.uint64)   # s0, s1 per row: the records' bytes
    _init_states_host(host, np.uint64(seed % (1 << 64)), np.uint64(subsequence_start))
    states.copy_to_device(host.view(xoroshiro128p_dtype).reshape(states.shape[0]), stream=stream)


def create_xoroshiro128p_states(n, seed, subsequence_start=0, stream=0):
    """``n`` generator states for ``seed``: a 1-d device array of ``xoroshiro128p_dtype`` (numba.cuda's).

    Raises:
        UnsupportedPlatformError, MetalRuntimeError: as ``device_array``.
    """
    states = device_array(int(n), dtype=xoroshiro128p_dtype, stream=stream)
    init_xoroshiro128p_states(states, seed, subsequence_start, stream)
    return states


__all__ = ["xoroshiro128p_dtype", "create_xoroshiro128p_states", "init_xoroshiro128p_states", "xoroshiro128p_next",
           "xoroshiro128p_jump", "xoroshiro128p_uniform_float32", "xoroshiro128p_normal_float32",
           "xoroshiro128p_uniform_float64", "xoroshiro128p_normal_float64"]
