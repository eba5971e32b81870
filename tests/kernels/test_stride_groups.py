"""Stride groups (issue 28 item 4): array arguments of one launch with the same element strides (but the
last) share one row offset, so a stencil's ``out[y, x]`` reuses ``inp``'s ``y * stride + x`` as a
hand-written kernel reuses its one row width. The fact is part of the specialisation key (and the disk
cache's spelling); a launch whose arrays have other strides must get a specialisation without it, whatever
it launched before, and every result must be the one NumPy gives."""

import re

import numpy as np
import pytest

from numba_metal import metal
from numba_metal.compiler.arraytypes import Index32Array
from numba_metal.host.array_flags import index32
from numba_metal.host.arguments import arg_keys, canonical, canonical_numba, numba_type_of_key


@metal.jit
def stencil(inp, out):
    x, y = metal.grid(2)
    rows, cols = inp.shape
    if 1 <= y < rows - 1 and 1 <= x < cols - 1:
        out[y, x] = inp[y - 1, x] + inp[y + 1, x] + inp[y, x - 1] + inp[y, x + 1] - 4 * inp[y, x]


def _want(x, out_shape):
    want = np.zeros(out_shape, x.dtype)
    want[1:x.shape[0] - 1, 1:x.shape[1] - 1] = (x[:-2, 1:-1] + x[2:, 1:-1] + x[1:-1, :-2] + x[1:-1, 2:]
                                                 - 4 * x[1:-1, 1:-1])
    return want


def _groups(kernel):
    return sorted((tuple(getattr(t, "strides_of", None) for t in sig) for sig in kernel.specializations),
                  key=repr)


# ---------------------------------------------------------------------------------------------
# The launch's fact and the key
# ---------------------------------------------------------------------------------------------


def test_arrays_with_the_same_strides_form_a_group_in_the_key_and_its_spelling():
    a, b = np.zeros((37, 45), np.float32), np.zeros((37, 45), np.float32)
    keys = arg_keys((a, b, np.float32(1)))
    assert [k.strides_of for k in keys[:2]] == [0, 0]
    assert canonical(keys[0]) == canonical(keys[1]) == "A(float32,2,C,i32,s0)"
    types = [numba_type_of_key(k) for k in keys[:2]]
    assert all(isinstance(t, Index32Array) and t.strides_of == 0 for t in types)
    assert [canonical_numba(t) for t in types] == [canonical(k) for k in keys[:2]]
    # element strides, not bytes: a float64 array of the same shape joins the group
    assert arg_keys((a, np.zeros((5, 45), np.float64)))[1].strides_of == 0
    # another row width, 1-d arrays, non-contiguous views and a lone array form none
    assert {k.strides_of for k in arg_keys((a, np.zeros((37, 46), np.float32)))} == {None}
    assert {k.strides_of for k in arg_keys((np.zeros(8), np.zeros(8)))} == {None}
    assert {k.strides_of for k in arg_keys((a, np.zeros((37, 90), np.float32)[:, ::2]))} == {None}
    assert arg_keys((a,))[0].strides_of is None
    # groups are per row width; the first member names each
    c = np.zeros((3, 7), np.int32)
    keys = arg_keys((c, a, c, b))
    assert [k.strides_of for k in keys] == [0, 1, 0, 1]


def test_a_length_one_axis_with_a_free_stride_is_indexed_in_64_bits():
    # NumPy leaves the stride of a length-1 axis free; the row pointers need it in [0, 2**31) elements
    assert index32((1, 4), (16, 4), 4)
    assert not index32((1, 4), (-16, 4), 4)
    assert not index32((1, 4), (2 ** 31 * 4, 4), 4)


# ---------------------------------------------------------------------------------------------
# Launches
# ---------------------------------------------------------------------------------------------


@pytest.mark.unsanitized("reads the plain variant's MSL (a sanitizing kernel's has the bounds checks and hooks)")
def test_the_group_shares_one_row_offset_and_a_row_pointer_for_the_neighbours():
    x = np.random.default_rng(0).integers(-100, 100, (37, 45)).astype(np.int32)
    out = np.zeros_like(x)
    k = metal.jit(stencil.py_func)
    k[(3, 3), (16, 16)](x, out)
    np.testing.assert_array_equal(out, _want(x, x.shape))
    src = list(k.inspect_msl().values())[0]
    assert len(re.findall(r"\bnm_t\d+ = \(\(uint\(v_y\) \* uint\(v_inp\.strides\[0\]\)\) \+ uint\(v_x\)\)", src)) == 1
    assert re.search(r"v_out\.data\[nm_t\d+\] =", src) and "v_out.strides[0]" not in src, \
        "out[y, x] reuses inp's row offset"
    assert len(re.findall(r"\bnm_t\d+\[", src)) == 4, "the four neighbours through the row pointer"


def test_device_arrays_of_another_row_width_after_a_grouped_launch_get_their_own_specialisation():
    rng = np.random.default_rng(1)
    x = rng.integers(-100, 100, (37, 45)).astype(np.int32)
    k = metal.jit(stencil.py_func)
    d_in = metal.to_device(x)
    d_same = metal.to_device(np.zeros_like(x))
    k[(3, 3), (16, 16)](d_in, d_same)
    np.testing.assert_array_equal(d_same.copy_to_host(), _want(x, x.shape))
    assert _groups(k) == [(0, 0)]
    # out has longer rows: sharing inp's row offset would write out[y, x] at the wrong element. The launch
    # path's key of these arrays is the one that found the grouped specialisation; its check must refuse it.
    d_wide = metal.to_device(np.zeros((37, 50), np.int32))
    k[(3, 3), (16, 16)](d_in, d_wide)
    np.testing.assert_array_equal(d_wide.copy_to_host(), _want(x, (37, 50)))
    assert _groups(k) == [(0, 0), (None, None)]
    # from now on the specialisation without groups serves these keys, equal strides or not
    again = metal.to_device(np.zeros_like(x))
    k[(3, 3), (16, 16)](d_in, again)
    np.testing.assert_array_equal(again.copy_to_host(), _want(x, x.shape))
    d_wide2 = metal.to_device(np.full((37, 50), 7, np.int32))
    k[(3, 3), (16, 16)](d_in, d_wide2)
    want = _want(x, (37, 50))
    want[0, :] = want[-1, :] = want[:, 0] = 7
    want[:, 44:] = 7
    np.testing.assert_array_equal(d_wide2.copy_to_host(), want)
    assert len(k.specializations) == 2


@pytest.mark.unsanitized("reads the plain variant's MSL (a sanitizing kernel's has the bounds checks and hooks)")
def test_host_arrays_of_another_row_width_get_their_own_specialisation():
    rng = np.random.default_rng(2)
    x = rng.integers(-100, 100, (20, 30)).astype(np.int32)
    k = metal.jit(stencil.py_func)
    wide = np.zeros((20, 33), np.int32)
    k[(2, 2), (16, 16)](x, wide)
    np.testing.assert_array_equal(wide, _want(x, wide.shape))
    same = np.zeros_like(x)
    k[(2, 2), (16, 16)](x, same)
    np.testing.assert_array_equal(same, _want(x, x.shape))
    assert _groups(k) == [(0, 0), (None, None)]
    msl = {tuple(getattr(t, "strides_of", None) for t in sig): m for sig, m in k.inspect_msl().items()}
    # grouped: out[y, x] is at inp's row offset; without the group, at its own, from its own stride
    assert "v_out.strides[0]" not in msl[(0, 0)] and "v_out.strides[0]" in msl[(None, None)]



SRC = """
def stencil(inp, out):
    x, y = metal.grid(2)
    rows, cols = inp.shape
    if 1 <= y < rows - 1 and 1 <= x < cols - 1:
        out[y, x] = inp[y - 1, x] + inp[y + 1, x] + inp[y, x - 1] + inp[y, x + 1] - 4 * inp[y, x]
"""


@pytest.mark.unsanitized("launches from the disk cache, which a sanitizing kernel never enters")
def test_a_grouped_specialisation_from_the_disk_cache_checks_its_group(tmp_path, monkeypatch):
    import sys
    import types

    monkeypatch.setenv("NUMBA_METAL_CACHE_DIR", str(tmp_path / "cache"))
    mod = types.ModuleType("nm_stride_groups_cached")
    mod.__file__ = "<nm_stride_groups_cached>"
    mod.metal = metal
    monkeypatch.setitem(sys.modules, mod.__name__, mod)
    exec(compile(SRC, mod.__file__, "exec"), mod.__dict__)
    x = np.random.default_rng(4).integers(-100, 100, (20, 30)).astype(np.int32)
    d_in = metal.to_device(x)
    first = metal.jit(cache=True)(mod.stencil)
    first[(2, 2), (16, 16)](d_in, metal.to_device(np.zeros_like(x)))
    (compiled,) = first.specializations.values()
    assert not compiled.from_cache and compiled.stride_groups == ((0, 1),)
    # a new dispatcher (as in a new process) loads it by the launch's key, groups included
    again = metal.jit(cache=True)(mod.stencil)
    out = metal.to_device(np.zeros_like(x))
    again[(2, 2), (16, 16)](d_in, out)
    (loaded,) = set(again._by_key.values())     # under its key and the launch path's key of these arrays
    assert loaded.from_cache and loaded.stride_groups == ((0, 1),)
    np.testing.assert_array_equal(out.copy_to_host(), _want(x, x.shape))
    wide = metal.to_device(np.zeros((20, 37), np.int32))
    again[(2, 2), (16, 16)](d_in, wide)
    np.testing.assert_array_equal(wide.copy_to_host(), _want(x, wide.shape))
    assert sorted(k.stride_groups for k in set(again._by_key.values())) == [(), ((0, 1),)]
