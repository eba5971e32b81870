"""32-bit index arithmetic for device arrays (issue 28 item 1): a launch whose arrays are small (every axis
under 2**31 elements, every element within 2**31 - 1 of a[0, ..., 0]) gets a specialisation that indexes
them in 32 bits; any other array gets the 64-bit one. Results must not depend on which: each kernel here is
checked against NumPy (or Python's int64 arithmetic), on both specialisations where both apply.

The arrays of 2**31 elements and more are views of mapped arrays (``metal.mapped_array``), bound in place
(the tests fail if one is copied): only the pages a kernel or the test touches become memory."""

import re

import numpy as np
import pytest

from numba_metal import metal
from numba_metal.compiler.arraytypes import Index32Array
from numba_metal.host.array_flags import index32
from numba_metal.host.arguments import arg_key, canonical, canonical_numba, typeof_arg


def _kinds(kernel):
    return sorted(type(t).__name__ for sig in kernel.specializations for t in sig if hasattr(t, "ndim"))


def _big_bytes(n: int):
    """A mapped uint8 array of ``n`` bytes (device memory the host sees; pages made on touch)."""
    return metal.mapped_array(n, np.uint8)


@pytest.fixture
def no_copies(monkeypatch):
    """An array copied to the device would not be the geometry under test."""
    import numba_metal.host.perf_warnings as pw

    def refuse():
        raise AssertionError("an array argument was copied instead of bound in place")
    monkeypatch.setattr(pw, "implicit_copy", refuse)


# ---------------------------------------------------------------------------------------------
# The launch's fact and the specialisation key
# ---------------------------------------------------------------------------------------------

def test_index32_is_the_arrays_span_and_axes_below_2_31():
    assert index32((2 ** 31 - 1,), (1,), 1)
    assert not index32((2 ** 31,), (1,), 1)                       # 2**31 elements: the 64-bit path
    assert index32((2 ** 15, 2 ** 16 - 1), (2 ** 16 - 1, 1), 1)
    assert not index32((2 ** 15, 2 ** 16), (2 ** 16, 1), 1)
    assert not index32((3,), (2 ** 30,), 1)                      # 3 elements, but 2**31 apart
    assert index32((3,), (-(2 ** 29),), 1) and not index32((3,), (-(2 ** 30),), 1)
    assert index32((2 ** 30, 0), (0, 8), 8)                       # empty: nothing to reach
    assert not index32((2 ** 40, 0), (0, 8), 8)                   # but a.shape[0] is read as a value
    assert not index32((2 ** 31, 1), (0, 1), 1)                   # 2**31 elements (broadcast)
    assert index32((1000, 1000), (8000, 8), 8)                    # strides are in bytes


def test_small_and_large_arrays_have_different_keys_types_and_cache_spellings():
    small = np.zeros(4, np.float32)
    big = np.lib.stride_tricks.as_strided(small, shape=(2,), strides=(2 ** 33,))   # never touched
    ks, kb = arg_key(small, 0), arg_key(big, 0)
    assert ks is not kb and ks.index32 and not kb.index32
    ts, tb = typeof_arg(small, 0), typeof_arg(big, 0)
    assert isinstance(ts, Index32Array) and not isinstance(tb, Index32Array) and ts != tb
    assert canonical(ks) == canonical_numba(ts) == "A(float32,1,C,i32)"
    assert canonical(kb) == canonical_numba(tb) == "A(float32,1,A)"
    d = metal.to_device(small)
    assert d.argument_key() is ks


@metal.jit(sanitize=False)   # its test reads the plain variant's MSL (a sanitizing kernel's has checks and hooks)
def _copy(a, out):
    i = metal.grid(1)
    if i < out.size:
        out[i] = a[i]


def test_a_launch_with_a_large_array_gets_the_64_bit_specialisation_and_the_right_elements(no_copies):
    base = _big_bytes(2 ** 32 + 2 ** 16)
    base[7], base[2 ** 32 + 7] = 9, 42
    far = np.lib.stride_tricks.as_strided(base[7:], shape=(2,), strides=(2 ** 32,), subok=True)   # 2**32 apart
    out = _big_bytes(2)
    _copy[2, 1](far, out)
    metal.synchronize()
    assert out.tolist() == [9, 42]          # a 32-bit offset would read base[7] twice
    near = _big_bytes(8)
    _copy[2, 1](near, out)
    metal.synchronize()
    assert out.tolist() == [0, 0]
    assert _kinds(_copy) == ["Array", "Index32Array", "Index32Array", "Index32Array"]
    by_kind = {type(sig[0]).__name__: msl for sig, msl in _copy.inspect_msl().items()}
    assert "v_a.data[(long(v_i) * v_a.strides[0])]" in by_kind["Array"]          # 64-bit offsets
    assert "long(" not in re.findall(r"v_a\.data\[[^\]]*\]", by_kind["Index32Array"])[0]


def test_arrays_at_the_2_31_element_boundary(no_copies):
    """2**31 - 1 elements: the 32-bit path reads the last one; 2**31: the 64-bit path does."""
    @metal.jit
    def ends(a, out):
        i = metal.grid(1)
        if i < 2:
            out[i] = a[a.size - 1 - i] + a[-1 - i]

    base = _big_bytes(2 ** 31 + 4096)
    base[2 ** 31 - 1], base[2 ** 31 - 2], base[2 ** 31 - 3] = 7, 11, 13
    for n, want in ((2 ** 31 - 1, [22, 26]), (2 ** 31, [14, 22])):
        out = _big_bytes(2)
        ends[1, 2](base[:n], out)
        metal.synchronize()
        assert out.tolist() == want, n
    assert [type(sig[0]).__name__ for sig in ends.specializations] == ["Index32Array", "Array"]

    @metal.jit
    def corner(a, out):
        out[0] = a[a.shape[0] - 1, a.shape[1] - 1]
        out[1] = a[-1, -2]
        out[2] = a[1, 0]

    for rows, cols in ((2 ** 15, 2 ** 16), (2 ** 15, 2 ** 16 - 1)):     # 2**31 elements, and fewer
        grid = base[:rows * cols].reshape(rows, cols)
        grid[-1, -1], grid[-1, -2], grid[1, 0] = 3, 4, 5
        out = _big_bytes(3)
        corner[1, 1](grid, out)
        metal.synchronize()
        assert out.tolist() == [3, 4, 5], (rows, cols)


def test_a_non_contiguous_view_gets_the_strided_variant():
    @metal.jit
    def double(a, out):
        i = metal.grid(1)
        if i < a.size:
            out[i] = 2 * a[i]

    x = np.arange(20, dtype=np.int32)
    d = metal.to_device(x)
    out = metal.device_array(10, np.int32)
    double[1, 32](d[::2], out)
    assert out.copy_to_host().tolist() == (2 * x[::2]).tolist()
    double[1, 32](d[::-2], out)
    assert out.copy_to_host().tolist() == (2 * x[::-2]).tolist()   # negative stride: signed 32-bit offsets
    double[1, 32](d[:10], out)
    assert out.copy_to_host().tolist() == (2 * x[:10]).tolist()
    layouts = sorted((sig[0].layout, type(sig[0]).__name__) for sig in double.specializations)
    assert layouts == [("A", "Index32Array"), ("C", "Index32Array")]
    src = {sig[0].layout: msl for sig, msl in double.inspect_msl().items()}
    assert "strides[0]" in re.findall(r"v_a\.data\[[^\]]*\]", src["A"])[0]
    assert "strides[0]" not in re.findall(r"v_a\.data\[[^\]]*\]", src["C"])[0]   # the unit stride is 1


# ---------------------------------------------------------------------------------------------
# Narrowed index arithmetic keeps int64 semantics
# ---------------------------------------------------------------------------------------------

@metal.jit
def _arith(a, out, big):
    i = metal.grid(1)
    if i < out.shape[0]:
        k = i + 2 ** 31 + 2 ** 40          # past 2**32: stays 64-bit
        out[i, 0] = a[k - 2 ** 31 - 2 ** 40]
        out[i, 1] = a[i - a.size]          # negative: wraps around as in Python
        j = big - i                        # stored: an observable value stays int64
        out[i, 2] = j
        m = (i + 3) * 2 ** 32 + i          # out of 32 bits, then reduced modulo a.size: never narrowed
        out[i, 3] = a[m % a.size]
        out[i, 4] = a[(i * 3 - 2 ** 33) + 2 ** 33 - 2 * i]
        n = i + 2 ** 31
        out[i, 5] = 1 if n > 2 ** 31 else 0   # compared: stays 64-bit


def test_narrowed_index_arithmetic_matches_int64_on_both_specialisations():
    a = np.arange(100, 164, dtype=np.int64)
    big = 2 ** 45 + 17
    want = np.zeros((64, 6), np.int64)
    for i in range(64):
        want[i] = [a[i], a[i - 64], big - i, a[((i + 3) * 2 ** 32 + i) % 64], a[i], int(i + 2 ** 31 > 2 ** 31)]
    out = np.zeros((64, 6), np.int64)
    _arith[2, 32](a, out, big)
    np.testing.assert_array_equal(out, want)
    wide = metal.jit("void(int64[::1], int64[:, ::1], int64)")(_arith.py_func)
    out64 = np.zeros((64, 6), np.int64)
    wide[2, 32](a, out64, big)
    np.testing.assert_array_equal(out64, want)
    small = [msl for sig, msl in _arith.inspect_msl().items() if isinstance(sig[0], Index32Array)][0]
    # k is past 2**32: not narrowed (a wrapped index must not alias into bounds); j, m, n are observed
    for name in "kjmn":
        assert re.search(rf"\blong v_{name}\b", small), name


@pytest.mark.unsanitized("reads the plain variant's MSL (a sanitizing kernel's has the bounds checks and hooks)")
def test_no_64_bit_multiply_on_the_index_path_of_a_2d_stencil():
    @metal.jit
    def stencil(inp, out):
        x, y = metal.grid(2)
        rows, cols = inp.shape
        if 1 <= y < rows - 1 and 1 <= x < cols - 1:
            out[y, x] = inp[y - 1, x] + inp[y + 1, x] + inp[y, x - 1] + inp[y, x + 1] - 4 * inp[y, x]

    rng = np.random.default_rng(1)
    x = rng.integers(-100, 100, (37, 45)).astype(np.int32)
    out = np.zeros_like(x)
    stencil[(3, 3), (16, 16)](x, out)
    want = np.zeros_like(x)
    want[1:-1, 1:-1] = x[:-2, 1:-1] + x[2:, 1:-1] + x[1:-1, :-2] + x[1:-1, 2:] - 4 * x[1:-1, 1:-1]
    np.testing.assert_array_equal(out, want)
    src = list(stencil.inspect_msl().values())[0]
    # the neighbours through one row pointer (nm_tN = v_inp.data + row offset), the rest through the data
    subscripts = re.findall(r"(?:v_(?:inp|out)\.data|\bnm_t\d+)\[[^;]*?\]\s*[;=]", src)
    assert len(subscripts) == 6 and not any("long" in s for s in subscripts)


def test_debug_kernels_keep_64_bit_indices():
    @metal.jit(debug=True)
    def k(a):
        i = metal.grid(1)
        if i < a.size:
            a[i - 1] = i

    a = np.zeros(4, np.int64)
    k[1, 4](a)
    assert a.tolist() == [1, 2, 3, 0]
    src = list(k.inspect_msl().values())[0]
    assert re.search(r"\blong v__binop_sub", src)


def test_shared_row_offsets_follow_reassigned_variables():
    @metal.jit
    def k(a, out):
        y = metal.grid(1)
        if y < a.shape[0] - 2:
            x = 1
            t = (y + 1, x)
            s = a[y, x] + a[y + 1, x + 1]
            x = 0                      # after the tuple and the first subscripts were computed
            out[y] = s + a[t] + 10 * a[y, x] + 100 * a[y + 1, x + 1]

    a = np.arange(40, dtype=np.int64).reshape(10, 4)
    out = np.zeros(10, np.int64)
    k[1, 16](a, out)
    want = np.zeros(10, np.int64)
    for y in range(0, 8):
        want[y] = a[y, 1] + a[y + 1, 2] + a[y + 1, 1] + 10 * a[y, 0] + 100 * a[y + 1, 1]
    np.testing.assert_array_equal(out, want)
    src = list(k.inspect_msl().values())[0]
    body = src[src.index("kernel void"):]
    assert "nm_wrap(" not in body and len(re.findall(r"\bnm_t\d+ = ", body)) >= 2   # rows shared, and recomputed


def test_specialize_and_overloads_speak_numba_cuda_types(no_copies):
    from numba.core import types

    @metal.jit
    def inc(a, out):
        i = metal.grid(1)
        if i < out.size:
            out[i] = a[a.size - 1 - i] + 1

    small = _big_bytes(8)
    out = _big_bytes(2)
    inc[1, 2](small, out)
    plain_sig = (types.Array(types.uint8, 1, "C"), types.Array(types.uint8, 1, "C"))
    assert plain_sig in inc.overloads and "kernel void" in inc.overloads[plain_sig].msl
    # a kernel specialised on small arrays takes numba.cuda's types, so it serves a large array exactly
    spec = inc.specialize(small, out)
    assert list(spec.overloads) == [plain_sig]
    base = _big_bytes(2 ** 32 + 2 ** 16)
    base[6], base[7], base[2 ** 32 + 6], base[2 ** 32 + 7] = 8, 9, 41, 42
    spec[1, 2](base[:2 ** 32 + 8], out)      # 2**32 + 8 elements: 32-bit offsets would read base[7]
    metal.synchronize()
    assert out.tolist() == [43, 42]


def test_an_index_far_out_of_bounds_stays_out_of_bounds():
    """An index past 2**32 is not truncated into the array (it would write a[i] silently): the access is
    64-bit, so it reaches the address the program computed (the robustness corpus's wild write faults)."""
    @metal.jit
    def k(a, n):
        i = metal.grid(1)
        if i < a.size:
            a[i + n] = 1            # n unbounded: 64-bit
            a[i + (1 << 33) - (1 << 33)] = 2

    src = metal.compile_msl(k, (typeof_arg(np.zeros(4, np.int64), 0), typeof_arg(0, 1)))
    assert "v_a.data[nm_wrap(long(" in src and "uint(" not in src[src.index("kernel void"):]
    a = np.zeros(4, np.int64)
    k[1, 4](a, 0)
    assert a.tolist() == [2, 2, 2, 2]
