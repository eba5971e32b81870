"""Slicing inside kernels (issue 27 item 1), as Numba and numba.cuda type it: basic slices of device, shared
(static and dynamic), local and constant arrays and of views, integer indexing that drops axes, and the views
they give (never copies) used as arrays: indexing, len, .shape, .size, loops, device functions, atomics. Every
result is checked against NumPy's slicing of the same data."""

import numpy as np
import pytest
from numba import float32, int32

from numba_metal import metal
from numba_metal.errors import KernelBoundsError, UnsupportedFeatureError

X = np.arange(10, dtype=np.float32) * 1.5 + 1


def _copy_kernel(index: str):
    """A kernel copying ``x[index]`` (a 1-d view) into ``out`` and its length into ``n[0]``."""
    source = (f"def k(x, out, n):\n"
              f"    v = x[{index}]\n"
              f"    n[0] = len(v)\n"
              f"    for i in range(v.size):\n"
              f"        out[i] = v[i]\n")
    namespace = {}
    exec(compile(source, f"<slice {index}>", "exec"), namespace)
    return metal.jit(namespace["k"])


CONSTANT_FORMS = ["1:-1", "::2", "::-1", "-1::-2", "1::-1", "3:1:-1", "5:2", "5:2:-1", ":", "3:", ":-3",
                  "100:", "-100:3", "::3", "8:-100:-3", "2:2"]


@pytest.mark.parametrize("index", CONSTANT_FORMS)
def test_constant_slices_of_device_arrays_match_numpy(index):
    expect = eval(f"X[{index}]")
    out = np.full(10, -1, np.float32)
    n = np.zeros(1, np.int64)
    _copy_kernel(index)[1, 1](metal.to_device(X), out, n)
    assert n[0] == len(expect)
    np.testing.assert_array_equal(out[:len(expect)], expect)


@metal.jit
def runtime_slice(x, out, n, start, stop, step):
    v = x[start:stop:step]
    n[0] = v.shape[0]
    j = 0
    for item in v:             # iteration over a view
        out[j] = item
        j += 1


@pytest.mark.parametrize("start, stop, step", [(1, 9, 2), (9, 0, -1), (-1, -11, -3), (0, 10, 4), (7, 2, 1),
                                               (2, 7, -1), (-20, 20, 3), (20, -20, -2), (0, 0, 1)])
def test_runtime_slices_with_negative_steps_and_out_of_range_bounds(start, stop, step):
    expect = X[start:stop:step]
    out = np.full(10, -1, np.float32)
    n = np.zeros(1, np.int64)
    runtime_slice[1, 1](X, out, n, start, stop, step)
    assert n[0] == len(expect)
    np.testing.assert_array_equal(out[:len(expect)], expect)


@metal.jit(debug=True)
def runtime_step(x, out, step):
    v = x[::step]
    out[0] = len(v)


def test_a_zero_step_raises_value_error_as_in_numba():
    out = np.zeros(1, np.float32)
    with pytest.raises(ValueError, match="slice step cannot be zero"):
        runtime_step[1, 1](X, out, 0)
        metal.synchronize()


def test_a_constant_zero_step_is_refused_at_compile_time():
    with pytest.raises(UnsupportedFeatureError, match="slice step cannot be zero"):
        _copy_kernel("::0")[1, 1](X, np.zeros(10, np.float32), np.zeros(1, np.int64))


M = np.arange(48, dtype=np.float32).reshape(6, 8)


def _copy2d_kernel(index: str, ndim: int):
    """A kernel copying ``m[index]`` (an ``ndim``-d view) into ``out`` and its shape into ``shape``."""
    if ndim == 2:
        body = ("    shape[1] = v.shape[1]\n"
                "    for a in range(v.shape[0]):\n"
                "        for b in range(v.shape[1]):\n"
                "            out[a, b] = v[a, b]\n")
    else:
        body = ("    for a in range(v.shape[0]):\n"
                "        out[a, 0] = v[a]\n")
    source = f"def k(m, out, shape, i, j):\n    v = m[{index}]\n    shape[0] = v.shape[0]\n" + body
    namespace = {}
    exec(compile(source, f"<slice {index}>", "exec"), namespace)
    return metal.jit(namespace["k"])


@pytest.mark.parametrize("index", ["1:3, ::2", ":, j", "i", "i, ::-1", "::-1, 1:", "-2:, j:", "..., 1",
                                   "1:5:3, ...", "j:i, :", "None, i", "i:, None, 2"])
def test_two_dimensional_views_match_numpy(index):
    i, j = 4, 2
    expect = eval(f"M[{index}]")
    out = np.full((8, 8), -1, np.float32)
    shape = np.zeros(2, np.int64)
    _copy2d_kernel(index, expect.ndim)[1, 1](metal.to_device(M), out, shape, i, j)
    if expect.ndim == 1:
        expect = expect[:, None]
        assert shape[1] == 0
    else:
        assert shape[1] == expect.shape[1]
    assert shape[0] == expect.shape[0]
    np.testing.assert_array_equal(out[:expect.shape[0], :expect.shape[1]], expect)


@metal.jit
def views_of_views(m, out):
    row = m[3]                 # integer indexing drops the first axis
    tail = row[2:]
    back = tail[::-2]
    for k in range(len(back)):
        out[k] = back[k]
    col = m[:, 1][1:-1][::2]
    for k in range(len(col)):
        out[8 + k] = col[k]


def test_views_of_views():
    out = np.full(16, -1, np.float32)
    views_of_views[1, 1](M, out)
    expect = M[3][2:][::-2]
    np.testing.assert_array_equal(out[:len(expect)], expect)
    col = M[:, 1][1:-1][::2]
    np.testing.assert_array_equal(out[8:8 + len(col)], col)


@metal.jit
def dynamic_split(x, out, n):
    # numba.cuda's documented way to split dynamic shared memory
    dyn = metal.shared.array(0, int32)
    a = dyn[:n]
    b = dyn[n:]
    t = metal.threadIdx.x
    if t < n:
        a[t] = x[t]
    elif t - n < len(b):
        b[t - n] = 100 * x[t]
    metal.syncthreads()
    if t == 0:
        out[0] = len(a)
        out[1] = len(b)
        for k in range(len(a)):
            out[2 + k] = a[k]
        for k in range(len(b)):
            out[2 + len(a) + k] = b[k]


def test_dynamic_shared_memory_split_into_slices():
    x = np.arange(1, 13, dtype=np.int32)
    out = np.zeros(14, np.int32)
    dynamic_split[1, 12, 0, 12 * 4](x, out, 5)
    assert list(out[:2]) == [5, 7]
    np.testing.assert_array_equal(out[2:], np.concatenate([x[:5], 100 * x[5:]]))


@metal.jit
def shared_local_constant(out):
    sm = metal.shared.array(16, float32)
    t = metal.threadIdx.x
    sm[t] = t
    metal.syncthreads()
    if t == 0:
        v = sm[1::3]                          # a static shared array
        for k in range(len(v)):
            out[k] = v[k]
        loc = metal.local.array(8, float32)   # a local array
        for k in range(8):
            loc[k] = 10 * k
        r = loc[::-1][1:]
        for k in range(len(r)):
            out[8 + k] = r[k]
        c = metal.const.array_like(CONST)     # constant memory
        s = c[-2:0:-2]
        for k in range(len(s)):
            out[16 + k] = s[k]
        out[23] = len(s)


CONST = np.arange(7, dtype=np.float32) * 3


def test_slices_of_shared_local_and_constant_arrays():
    out = np.full(24, -1, np.float32)
    shared_local_constant[1, 16](out)
    np.testing.assert_array_equal(out[:5], np.arange(16, dtype=np.float32)[1::3])
    np.testing.assert_array_equal(out[8:15], (10 * np.arange(8, dtype=np.float32))[::-1][1:])
    expect = CONST[-2:0:-2]
    assert out[23] == len(expect)
    np.testing.assert_array_equal(out[16:16 + len(expect)], expect)


@metal.jit(device=True)
def total(v):
    s = 0.0
    for k in range(len(v)):
        s += v[k]
    return s


@metal.jit(device=True)
def fill(v, value):
    for k in range(v.size):
        v[k] = value


@metal.jit
def views_to_device_functions(x, out):
    out[0] = total(x[1::2])
    out[1] = total(x[::-3])
    sm = metal.shared.array(8, float32)
    fill(sm[::2], 1.0)
    fill(sm[1::2], 2.0)
    out[2] = total(sm[2:])
    fill(out[4:7], 9.0)


def test_views_passed_to_device_functions():
    out = np.zeros(8, np.float32)
    views_to_device_functions[1, 1](X, out)
    assert out[0] == X[1::2].sum() and out[1] == X[::-3].sum()
    assert out[2] == 9.0
    np.testing.assert_array_equal(out[3:8], [0, 9, 9, 9, 0])


@metal.jit
def atomics_on_views(counts, out):
    t = metal.threadIdx.x
    sm = metal.shared.array(8, int32)
    if t < 8:
        sm[t] = 0
    metal.syncthreads()
    tail = sm[2:]
    metal.atomic.add(tail, t % 3, 1)
    metal.atomic.add(counts[::-1], t % 4, 1)
    metal.syncthreads()
    if t < 8:
        out[t] = sm[t]


def test_atomics_on_elements_of_views():
    counts = np.zeros(6, np.int32)
    out = np.zeros(8, np.int32)
    atomics_on_views[1, 60](counts, out)
    np.testing.assert_array_equal(out, [0, 0, 20, 20, 20, 0, 0, 0])
    np.testing.assert_array_equal(counts, [0, 0, 15, 15, 15, 15])


@metal.jit
def iterate(m, out):
    s = 0.0
    for row in m[1:]:            # rows of a 2-d view
        for v in row[::-1]:
            s += v
    out[0] = s


def test_loops_over_views():
    out = np.zeros(1, np.float32)
    iterate[1, 1](M, out)
    assert out[0] == M[1:].sum()


@metal.jit(debug=True)
def write_past_view(x, k):
    v = x[2:5]
    v[k] = 1.0


@metal.jit(debug=True)
def row_out_of_bounds(m, i, out):
    row = m[i]
    out[0] = len(row)
    row[0] = 7.0


def test_debug_checks_view_bounds():
    d = metal.to_device(np.zeros(10, np.float32))
    write_past_view[1, 1](d, 2)
    assert d.copy_to_host()[4] == 1.0
    with pytest.raises(KernelBoundsError):          # a debug launch waits and raises there, as numba.cuda's
        write_past_view[1, 1](d, 3)
    np.testing.assert_array_equal(d.copy_to_host(), [0, 0, 0, 0, 1, 0, 0, 0, 0, 0])  # x[5] untouched
    dm = metal.to_device(np.zeros((3, 4), np.float32))
    out = np.full(1, -1, np.int64)
    with pytest.raises(KernelBoundsError):
        row_out_of_bounds[1, 1](dm, 3, out)
    assert not dm.copy_to_host().any()             # the view was empty: nothing written


def test_kernels_that_do_not_slice_need_no_slice_code():
    def plain(a, out):
        i = metal.grid(1)
        if i < a.shape[0]:
            out[i] = a[i, 0] + len(a[i])

    text = metal.compile_msl(plain, "void(float32[:, ::1], float32[::1])")
    assert "nm_slice" not in text


def test_half_atomics_refuse_slices_of_shared_arrays_which_may_start_inside_a_word():
    from numba_metal.errors import NumbaMetalError

    def k(out):
        sm = metal.shared.array(8, np.float16)
        metal.fp16.atomicAdd(sm[1:], 0, np.float16(1))

    with pytest.raises(NumbaMetalError, match="view of a shared float16"):
        metal.compile_msl(k, "void(float16[::1])")


@metal.jit
def slice_assignments(x, m, y, out):
    sm = metal.shared.array(8, float32)
    sm[:] = 0                    # a scalar into every element
    sm[1::2] = 5
    x[2:5] = x[7:]               # an array of the same shape
    m[1] = y                     # a row (integer indexing keeps an axis)
    m[2:4, ::2] = 7
    m[4, 1:] = y[:3]
    m[0, ...] = 9
    m[..., 3] = -1
    m[2:4] = y[::-1]             # broadcast along the leading axis, as NumPy does
    for i in range(8):
        out[i] = sm[i]


def test_slice_assignment_of_scalars_and_arrays_matches_numpy():
    x = np.arange(10, dtype=np.float32)
    m = np.zeros((5, 4), np.float32)
    y = np.arange(4, dtype=np.float32) + 10
    out = np.zeros(8, np.float32)
    ex, em = x.copy(), m.copy()
    slice_assignments[1, 1](x, m, y, out)
    ex[2:5] = ex[7:]
    em[1] = y
    em[2:4, ::2] = 7
    em[4, 1:] = y[:3]
    em[0, ...] = 9
    em[..., 3] = -1
    em[2:4] = y[::-1]
    np.testing.assert_array_equal(out, [0, 5, 0, 5, 0, 5, 0, 5])
    np.testing.assert_array_equal(x, ex)
    np.testing.assert_array_equal(m, em)


@metal.jit(debug=True)
def assign_other_size(x, y):
    x[1:] = y


@metal.jit(debug=True)
def assign_overlapping(x):
    x[1:] = x[:-1]


def test_slice_assignment_errors_are_value_errors():
    d = metal.to_device(np.zeros(6, np.float32))
    with pytest.raises(ValueError, match="cannot assign slice from input of different size"):
        assign_other_size[1, 1](d, metal.to_device(np.ones(4, np.float32)))
        metal.synchronize()
    with pytest.raises(ValueError, match="shares memory with its destination"):
        assign_overlapping[1, 1](d)
        metal.synchronize()
