"""Negative indices wrap around (Numba's semantics) except where the index can never be negative
(issue 28 item 2): thread and group positions, ``grid()``, loop variables of ``range()`` with a
non-negative start and a positive step, and sums, products, quotients and remainders of such values
(``compiler/ranges.py``). The MSL is checked for the wrap (``nm_wrap``), and the kernels run: a wrap
dropped wrongly reads before the array and the results differ."""

import re

import numpy as np
import pytest

from numba_metal import metal
from numba_metal.errors import KernelLaunchError


def _kernel_text(fn, sig):
    text = metal.compile_msl(fn, sig)
    return text[text.index("kernel void"):]


# -- every index proven non-negative ---------------------------------------------------------------

def by_grid(a, out):
    i = metal.grid(1)
    if i < a.size:
        out[i] = a[i]


def by_thread_and_group(a, out):
    i = metal.blockIdx.x * metal.blockDim.x + metal.threadIdx.x
    if i + 1 < a.size:
        out[i] = a[i + 1] + a[metal.laneid]


def by_range(a, out):
    for k in range(a.size):
        out[k] = a[k]
    for k in range(2, a.size, 3):
        out[k] += a[k // 3]


def by_grid_2d(a, out):
    x, y = metal.grid(2)
    if y * 2 < a.shape[0] and x + 1 < a.shape[1]:
        out[y, x] = a[y * 2, x + 1]


def by_remainder(a, out, k):
    i = metal.grid(1)
    if i < out.size:
        out[i] = a[(k - 7) % a.size] + a[(i * 5 + 3) % 4]


def by_shift_and_floordiv(a, out):
    i = metal.grid(1)
    if i < out.size:
        out[i // 2] = a[i >> 1] + a[min(i, 3)] + a[i & 1]


def under_a_guard(a, out):
    x, y = metal.grid(2)
    if 1 <= y < a.shape[0] - 1 and x >= 2 and x + 1 < a.shape[1]:
        out[y, x] = a[y - 1, x - 2] + a[y + 1, x - 1]


NONNEGATIVE = [
    (under_a_guard, "void(float32[:, ::1], float32[:, ::1])"),
    (by_grid, "void(float32[::1], float32[::1])"),
    (by_thread_and_group, "void(float32[::1], float32[::1])"),
    (by_range, "void(float32[::1], float32[::1])"),
    (by_grid_2d, "void(float32[:, ::1], float32[:, ::1])"),
    (by_remainder, "void(float32[::1], float32[::1], int64)"),
    (by_shift_and_floordiv, "void(float32[::1], float32[::1])"),
]


@pytest.mark.parametrize("fn,sig", NONNEGATIVE, ids=[f.__name__ for f, _ in NONNEGATIVE])
def test_an_index_proven_non_negative_is_not_wrapped(fn, sig):
    assert "nm_wrap(" not in _kernel_text(fn, sig)


def test_indices_proven_non_negative_index_as_before():
    a = np.arange(16, dtype=np.float32)
    out = np.zeros(16, np.float32)
    by_range_k = metal.jit(by_range)
    by_range_k[1, 1](a, out)
    want = a.copy()
    for k in range(2, 16, 3):
        want[k] += a[k // 3]
    np.testing.assert_array_equal(out, want)
    out = np.zeros(16, np.float32)
    metal.jit(by_remainder)[1, 16](a, out, 3)
    np.testing.assert_array_equal(out, a[(3 - 7) % 16] + a[(np.arange(16) * 5 + 3) % 4])
    g = np.arange(48, dtype=np.float32).reshape(6, 8)
    out = np.zeros_like(g)
    metal.jit(under_a_guard)[(1, 1), (8, 6)](g, out)
    want = np.zeros_like(g)
    want[1:5, 2:7] = g[0:4, 0:5] + g[2:6, 1:6]
    np.testing.assert_array_equal(out, want)


# -- indices that can be negative keep Numba's wrap ----------------------------------------------

def minus_one(a, out):
    i = metal.grid(1)
    if i < a.size:
        out[i] = a[i - 1]


def argument_index(a, out, k):
    out[0] = a[k]


def negative_start(a, out):
    for k in range(-3, 0):
        out[k + 3] = a[k]


def descending(a, out):
    j = 0
    for k in range(-1, -4, -1):
        out[j] = a[k]
        j += 1


def while_counter(a, out):
    k = 0
    j = 0
    while k > -3:
        k -= 1
        out[j] = a[k]
        j += 1


def negative_divisor(a, out, k):
    out[0] = a[k % -3]


def narrowed_to_int8(a, out):
    i = metal.grid(1)
    if i < out.size:
        out[i] = a[np.int8(i + 126)]        # 126, 127, -128, -127: int8 wraps


def thread_minus_size(a, out):
    t = metal.threadIdx.x
    if t < out.size:
        out[t] = a[t - a.size]


def guard_too_weak(a, out):
    i = metal.grid(1)
    if i >= 1 and i < out.size:
        out[i] = a[i - 2]                   # i == 1 reads a[-1]


def reassigned_after_the_guard(a, out):
    i = metal.grid(1)
    if i >= 1 and i < out.size:
        i = i - 3
        out[i + 3] = a[i - 1]


def guard_in_the_else_branch(a, out):
    i = metal.grid(1)
    if i >= 1:
        pass
    else:
        out[i] = a[i - 1]                   # only i == 0 comes here


def guard_in_a_loop(a, out):
    k = 3
    j = 0
    while k >= 1:
        out[j] = a[k - 1]
        k -= 2                              # the guard held for the old k, not for the next one
        j += 1


# (kernel, signature, threads, scalar arguments, the expected result from the input)
CAN_BE_NEGATIVE = [
    (minus_one, "void(float32[::1], float32[::1])", 4, (), lambda a: a[np.arange(4) - 1]),
    (argument_index, "void(float32[::1], float32[::1], int64)", 1, (-2,), lambda a: a[[-2]]),
    (negative_start, "void(float32[::1], float32[::1])", 1, (), lambda a: a[-3:]),
    (descending, "void(float32[::1], float32[::1])", 1, (), lambda a: a[[-1, -2, -3]]),
    (while_counter, "void(float32[::1], float32[::1])", 1, (), lambda a: a[[-1, -2, -3]]),
    (negative_divisor, "void(float32[::1], float32[::1], int64)", 1, (5,), lambda a: a[[5 % -3]]),
    (narrowed_to_int8, "void(float32[::1], float32[::1])", 4, (), lambda a: a[[126, 127, -128, -127]]),
    (thread_minus_size, "void(float32[::1], float32[::1])", 4, (), lambda a: a[np.arange(4) - a.size]),
    (guard_too_weak, "void(float32[::1], float32[::1])", 4, (),
     lambda a: np.concatenate([[0], a[np.arange(1, 4) - 2]])),
    (reassigned_after_the_guard, "void(float32[::1], float32[::1])", 4, (),
     lambda a: np.concatenate([[0], a[np.arange(1, 4) - 4]])),
    (guard_in_the_else_branch, "void(float32[::1], float32[::1])", 1, (), lambda a: a[[-1]]),
    (guard_in_a_loop, "void(float32[::1], float32[::1])", 1, (), lambda a: a[[2, 0]]),
]


@pytest.mark.parametrize("fn,sig,threads,scalars,want", CAN_BE_NEGATIVE,
                         ids=[c[0].__name__ for c in CAN_BE_NEGATIVE])
def test_an_index_that_can_be_negative_wraps_as_in_numba(fn, sig, threads, scalars, want):
    assert "nm_wrap(" in _kernel_text(fn, sig)
    a = np.arange(256, dtype=np.float32) + 1
    out = np.zeros(len(want(a)), np.float32)
    metal.jit(fn)[1, threads](a, out, *scalars)
    np.testing.assert_array_equal(out, want(a))


# -- indices beyond 2**31 on the 64-bit path --------------------------------------------------------

STEP = 1 << 16


def far(a):
    for t in range(a.size // STEP):
        a[t * STEP + 7] = t % 251 + 1               # proven non-negative: not wrapped
        a[t * STEP + 9 - a.size] = t % 13 + 1       # negative: wrapped to t * STEP + 9


def test_indices_beyond_2_to_the_31_are_exact_on_the_64_bit_path():
    text = _kernel_text(far, "void(uint8[::1])")
    assert text.count("nm_wrap(") == 1
    n = (1 << 15) + 2                                # the last t * STEP passes 2**31 + STEP
    a = metal.device_array(n * STEP, np.uint8)       # 2 GiB + 128 KiB; only the touched pages are used
    metal.jit(far)[1, 1](a)
    for t in (n - 3, n - 2, n - 1):                  # t * STEP = 2**31 - STEP, 2**31, 2**31 + STEP
        got = a[t * STEP: t * STEP + 16].copy_to_host()
        assert got[7] == t % 251 + 1 and got[9] == t % 13 + 1, t


def test_a_grid_of_2_to_the_31_blocks_is_refused_as_numba_cuda_refuses_it():
    # blockIdx and gridDim are int32; the value-range analysis relies on this limit.
    k = metal.jit(by_grid)
    a = metal.device_array(4, np.float32)
    with pytest.raises(KernelLaunchError, match=r"2\*\*31 - 1 blocks"):
        k[2 ** 31, 1](a, a)


# -- 32-bit offsets into threadgroup, thread and constant arrays (issue 28 item 1, in part) ----------

TABLE = np.arange(10, dtype=np.float32) * 10


def small_arrays(a, out):
    s = metal.shared.array((4, 8), np.float32)
    loc = metal.local.array(4, np.float32)
    tab = metal.const.array_like(TABLE)
    t = metal.threadIdx.x
    s[t // 8, t % 8] = a[t]
    for j in range(4):
        loc[j] = 0
    loc[t % 4] = a[t]
    metal.syncthreads()
    k = t - 5                                          # negative for t < 5: wraps, in 32 bits
    out[t] = s[k // 8, k % 8] + s[-1, t % 8 - 8] + loc[k % 4] + tab[k % 10 - 10]


def test_threadgroup_thread_and_constant_arrays_are_indexed_in_32_bits_and_still_wrap():
    text = _kernel_text(small_arrays, "void(float32[::1], float32[::1])")
    loads = [line for line in text.splitlines() if "v_s.data[" in line or "v_tab.data[" in line]
    # 32-bit: uint components, or a row offset shared by subscripts of one block (a uint temporary)
    shared = set(re.findall(r"\buint (nm_t\d+)\{\}", text))
    assert loads and all("long(" not in line and ("uint(" in line or any(f"[{t}]" in line for t in shared))
                         for line in loads)
    assert "nm_wrap(int(" in text
    a = np.arange(32, dtype=np.float32) + 1
    out = np.zeros(32, np.float32)
    metal.jit(small_arrays)[1, 32](a, out)
    t = np.arange(32)
    k = t - 5
    s = a.reshape(4, 8)
    # loc is each thread's own: zeroed, then loc[t % 4] written
    want = s[k // 8, k % 8] + s[-1, t % 8 - 8] + np.where(k % 4 == t % 4, a, 0) + TABLE[k % 10 - 10]
    np.testing.assert_array_equal(out, want.astype(np.float32))


def test_debug_kernels_index_small_arrays_in_64_bits():
    text = metal.compile_msl(small_arrays, "void(float32[::1], float32[::1])", debug=True)
    assert "nm_wrap(int(" not in text
