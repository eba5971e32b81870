"""numba_metal.random against numba.cuda.random itself: the reference streams come from numba.cuda's own
functions, run as plain Python (their ``py_func``s) on record arrays of its state dtype."""

import math
import types as pytypes
import warnings

import numpy as np
import pytest

from numba_metal import metal
from numba_metal.errors import MetalValueError
from numba_metal.random import (create_xoroshiro128p_states, init_xoroshiro128p_states, xoroshiro128p_dtype,
                                xoroshiro128p_jump,
                                xoroshiro128p_next, xoroshiro128p_normal_float32, xoroshiro128p_normal_float64,
                                xoroshiro128p_uniform_float32, xoroshiro128p_uniform_float64)

cuda_random = pytest.importorskip("numba.cuda.random")


@pytest.fixture(scope="module")
def ref():
    """numba.cuda.random with every @jit function replaced by its Python function (so the whole
    reference runs as Python on NumPy scalars, as in numba.cuda's simulator)."""
    ns = dict(vars(cuda_random))
    for name, obj in vars(cuda_random).items():
        f = getattr(obj, "py_func", None)
        if f is not None:
            ns[name] = pytypes.FunctionType(f.__code__, ns, name, f.__defaults__, f.__closure__)
    return pytypes.SimpleNamespace(**ns)


def _ref_states(ref, n, seed, subsequence_start=0):
    states = np.zeros(n, dtype=cuda_random.xoroshiro128p_dtype)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # uint64 wraparound in NumPy scalars
        ref.init_xoroshiro128p_states_cpu(states, seed, subsequence_start)
    return states


@pytest.mark.parametrize("seed, start", [(42, 0), (0, 2), (2**64 - 1, 1), (123456789, 0)])
def test_states_match_numba_cuda(ref, seed, start):
    n = 6
    states = create_xoroshiro128p_states(n, seed, subsequence_start=start)
    # numba.cuda's states array: 1-d, of its record dtype (the same bytes)
    assert states.shape == (n,) and states.dtype == xoroshiro128p_dtype == cuda_random.xoroshiro128p_dtype
    got = states.copy_to_host()
    np.testing.assert_array_equal(got, _ref_states(ref, n, seed, start))
    assert got.tobytes() == _ref_states(ref, n, seed, start).tobytes()
    assert len(np.unique(got)) == n   # numba-cuda's test_create: one record per generator


@metal.jit
def draw(states, uniforms, normals, raw):
    i = metal.grid(1)
    if i < uniforms.shape[0]:
        for k in range(uniforms.shape[1]):
            uniforms[i, k] = xoroshiro128p_uniform_float32(states, i)
        for k in range(normals.shape[1]):
            normals[i, k] = xoroshiro128p_normal_float32(states, i)
        for k in range(raw.shape[1]):
            raw[i, k] = xoroshiro128p_next(states, i)


def test_streams_match_numba_cuda(ref):
    n, m = 8, 40
    seed = 20240607
    states = create_xoroshiro128p_states(n, seed)
    uniforms = np.zeros((n, m), np.float32)
    normals = np.zeros((n, m), np.float32)
    raw = np.zeros((n, 4), np.uint64)
    draw[1, 32](states, uniforms, normals, raw)

    rs = _ref_states(ref, n, seed)
    ru, rn, rr = np.zeros_like(uniforms), np.zeros((n, m)), np.zeros_like(raw)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for i in range(n):
            for k in range(m):
                ru[i, k] = ref.xoroshiro128p_uniform_float32(rs, i)
            for k in range(m):
                rn[i, k] = ref.xoroshiro128p_normal_float32(rs, i)
            for k in range(4):
                rr[i, k] = ref.xoroshiro128p_next(rs, i)
    np.testing.assert_array_equal(uniforms.view(np.uint32), ru.view(np.uint32))  # bit for bit
    np.testing.assert_array_equal(raw, rr)
    # Normals are sqrt(-2 log u1) * cos(2 pi u2). What MSL guarantees (Table 8.1, safe mode, precise
    # functions): log within 4 ulp (2 after the square root), sqrt and * correctly rounded, cos within 4
    # ulp, so 8 ulp of the result with the reference's own rounding; and the float32 argument 2 pi u2,
    # whose rounding moves cos by up to s * |sin| * ulp(2 pi) = s * 2 pi * 2^-22, with s <= sqrt(2 * 24 ln 2).
    bound = 8 * np.spacing(np.abs(rn).astype(np.float32)) + math.sqrt(48 * math.log(2)) * 2 * math.pi * 2.0 ** -22
    assert (np.abs(normals - rn) <= bound).all(), np.max(np.abs(normals - rn) - bound)
    assert (uniforms >= 0).all() and (uniforms < 1).all()
    np.testing.assert_array_equal(states.copy_to_host(), rs)  # states advanced alike


@metal.jit
def jump_all(states):
    i = metal.grid(1)
    if i < states.shape[0]:
        xoroshiro128p_jump(states, i)


def test_jump_matches_numba_cuda(ref):
    states = create_xoroshiro128p_states(3, 7)
    jump_all[1, 32](states)
    rs = _ref_states(ref, 3, 7)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for i in range(3):
            ref.xoroshiro128p_jump(rs, i)
    np.testing.assert_array_equal(states.copy_to_host(), rs)


def test_reinitialise_existing_states(ref):
    states = metal.device_array(4, xoroshiro128p_dtype)
    init_xoroshiro128p_states(states, 99, subsequence_start=1)
    np.testing.assert_array_equal(states.copy_to_host(), _ref_states(ref, 4, 99, 1))
    with pytest.raises(MetalValueError, match=r"1-d device array of xoroshiro128p_dtype .*not shape \(4, 2\) "
                                              "uint64"):
        init_xoroshiro128p_states(metal.device_array((4, 2), np.uint64), 1)


def test_a_million_states_follow_numba_cudas_rule(ref):
    """Each state is its predecessor jumped 2**64 steps (numba.cuda's rule), for a million states: computed
    on the host as numba.cuda does (n * 128 dependent steps on one GPU thread would meet the GPU's watchdog)."""
    n = 1 << 20
    states = metal.device_array(n, xoroshiro128p_dtype)
    stream = metal.stream()
    init_xoroshiro128p_states(states, 5, stream=stream)
    stream.synchronize()
    got = states.copy_to_host()
    np.testing.assert_array_equal(got[:3], _ref_states(ref, 3, 5))
    rs = got[n - 2:n - 1].copy()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        ref.xoroshiro128p_jump(rs, 0)
    np.testing.assert_array_equal(got[n - 1:], rs)


@metal.jit
def draw64(states, uniforms, normals):
    i = metal.grid(1)
    if i < uniforms.shape[0]:
        for k in range(uniforms.shape[1]):
            uniforms[i, k] = xoroshiro128p_uniform_float64(states, i)
        for k in range(normals.shape[1]):
            normals[i, k] = xoroshiro128p_normal_float64(states, i)


def test_float64_streams_match_numba_cuda(ref):
    n, m = 8, 40
    seed = 77
    states = create_xoroshiro128p_states(n, seed)
    uniforms = np.zeros((n, m))
    normals = np.zeros((n, m))
    draw64[1, 32](states, uniforms, normals)

    rs = _ref_states(ref, n, seed)
    ru, rn = np.zeros_like(uniforms), np.zeros_like(normals)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for i in range(n):
            for k in range(m):
                ru[i, k] = ref.xoroshiro128p_uniform_float64(rs, i)
            for k in range(m):
                rn[i, k] = ref.xoroshiro128p_normal_float64(rs, i)
    np.testing.assert_array_equal(uniforms.view(np.uint64), ru.view(np.uint64))  # bit for bit
    # numba.cuda computes them from float32 uniforms with a float32 log (MSL: within 4 float32 ulp; the
    # reference, run as Python, takes a double log), so sqrt(-2 log u1) is within 2 float32 ulp
    # relative; sqrt and cos of the float64 library are within about half a float64 ulp.
    bound = 2 * 2.0 ** -23 * np.abs(rn) + 4 * np.spacing(np.abs(rn))
    assert (np.abs(normals - rn) <= bound).all(), np.max(np.abs(normals - rn) - bound)
    assert "nm_f64_cos(" in next(iter(draw64.inspect_msl().values()))
    np.testing.assert_array_equal(states.copy_to_host(), rs)  # states advanced alike
