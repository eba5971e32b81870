"""numba.cuda's ``fp16.atomicAdd`` as ``metal.fp16.atomicAdd(ary, idx, val)``: Metal has no 16-bit atomics,
so it is a compare-and-swap loop on the 32-bit word holding the half. Many threads race on the same halves
and on both halves of one word (a neighbour must never be corrupted); sums of small integers are exact in
half whatever the order, so they are checked against an exact sequential model, and single updates against
NumPy's float16 addition (correctly rounded). Device and shared (threadgroup) arrays; the CPU device here and
the simulated Metal device in a child process."""

import os
import subprocess
import sys

import numpy as np
import pytest
from numba.core import types

from numba_metal import metal
from numba_metal.errors import UnsupportedFeatureError

GROUPS, THREADS = 32, 64
N = GROUPS * THREADS
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@metal.jit
def count(acc, olds, slots):
    """Every thread adds 1 to acc[i % slots]: all halves of each word race."""
    i = metal.grid(1)
    olds[i] = metal.fp16.atomicAdd(acc, i % slots, 1)


@pytest.mark.parametrize("slots", [1, 2, 7, 8])
def test_many_threads_on_the_same_and_neighbouring_halves(slots):
    acc = np.zeros(slots, np.float16)
    olds = np.full(N, -1, np.float16)
    count[GROUPS, THREADS](acc, olds, slots)
    per_slot = np.bincount(np.arange(N) % slots, minlength=slots)
    np.testing.assert_array_equal(acc, per_slot.astype(np.float16))
    for s in range(slots):   # each old value once: no update lost or applied twice
        np.testing.assert_array_equal(np.sort(olds[np.arange(N) % slots == s]), np.arange(per_slot[s]))


@metal.jit
def up_and_down(acc, repeats):
    """Each thread adds +1 then -1 to both halves of one word, repeats times: every partial sum is a small
    integer (exact in half) and the total is 0, so a single lost update shows."""
    i = metal.grid(1)
    for _ in range(repeats):
        metal.fp16.atomicAdd(acc, i % 2, 1)
        metal.fp16.atomicAdd(acc, i % 2, -1)


def test_sustained_contention_on_one_word_loses_no_update():
    acc = np.zeros(2, np.float16)
    # Many threadgroups, so that the CPU device's workers interleave; a non-atomic update loses one only
    # now and then on two cores, so this catches a broken loop sometimes, not always.
    up_and_down[1024, THREADS](acc, 64)
    np.testing.assert_array_equal(acc, np.zeros(2, np.float16))


@metal.jit
def add_odd_slots(acc, vals):
    """Adds vals[i] to an odd element; the even ones (the other half of each word) stay untouched."""
    i = metal.grid(1)
    metal.fp16.atomicAdd(acc, 2 * (i % 4) + 1, vals[i])


def test_the_other_half_of_the_word_is_never_corrupted():
    sentinel = np.array([-1234.0, np.inf, -0.0, 0.333], np.float16)
    acc = np.zeros(8, np.float16)
    acc[0::2] = sentinel
    vals = (np.arange(N) % 5 - 2).astype(np.float16)          # -2 .. 2: every partial sum is exact
    add_odd_slots[GROUPS, THREADS](acc, vals)
    np.testing.assert_array_equal(acc[0::2].view(np.uint16), sentinel.view(np.uint16))
    expected = [vals[np.arange(N) % 4 == s].astype(np.float64).sum() for s in range(4)]
    np.testing.assert_array_equal(acc[1::2], np.array(expected, np.float16))


@metal.jit
def add_each(acc, vals, olds):
    i = metal.grid(1)
    if i < acc.size:
        olds[i] = metal.fp16.atomicAdd(acc, i, vals[i])


def _halves(n, seed):
    """Normal float16 values of every magnitude and sign, with infinities, NaN, zeros and the largest."""
    rng = np.random.default_rng(seed)
    bits = rng.integers(0x0400, 0x7C00, n).astype(np.uint16) | (rng.integers(0, 2, n).astype(np.uint16) << 15)
    x = bits.view(np.float16).copy()
    x[:8] = [np.inf, -np.inf, np.nan, 0.0, -0.0, 65504.0, -65504.0, 1.0]
    return x


def test_the_sum_is_rounded_to_half_as_numpy_and_the_old_value_returned():
    a, b = _halves(N, 1), _halves(N, 2)[::-1].copy()
    b[5] = 65504.0                                             # 65504 + 65504 overflows to inf
    acc, olds = a.copy(), np.zeros(N, np.float16)
    add_each[GROUPS, THREADS](acc, b, olds)
    with np.errstate(over="ignore", invalid="ignore"):
        expected = a + b                                       # NumPy float16: correctly rounded
    np.testing.assert_array_equal(olds.view(np.uint16), a.view(np.uint16))
    nan = np.isnan(expected)
    np.testing.assert_array_equal(np.isnan(acc), nan)          # inf + -inf, NaN + x: NaN
    np.testing.assert_array_equal(acc[~nan].view(np.uint16), expected[~nan].view(np.uint16))
    assert acc[5] == np.inf


@metal.jit
def add_serially(acc, vals, olds):
    if metal.grid(1) == 0:
        for k in range(vals.size):
            olds[k] = metal.fp16.atomicAdd(acc, 0, vals[k])


def test_a_sequence_of_adds_matches_numpys_float16_accumulation():
    vals = (np.random.default_rng(3).standard_normal(300) * 10).astype(np.float16)
    acc, olds = np.zeros(1, np.float16), np.zeros(300, np.float16)
    add_serially[1, 1](acc, vals, olds)
    model, expected_olds = np.float16(0), []
    for v in vals:
        expected_olds.append(model)
        model = np.float16(model + v)
    np.testing.assert_array_equal(olds, np.array(expected_olds, np.float16))
    assert acc[0] == model


def test_a_view_starting_in_the_middle_of_a_word_and_the_last_odd_element():
    """A view at an odd element binds at a byte offset of 2 (mod 4); the last element of an odd-length
    array is the low half of a word whose high half is past the array."""
    d = metal.to_device(np.zeros(9, np.float16))
    for view, slots in ((d[1:], 8), (d[1:4], 3), (d, 9)):
        count[GROUPS, THREADS](view, metal.device_array(N, np.float16), slots)
    host = d.copy_to_host()
    per = lambda slots, k: np.bincount(np.arange(N) % slots, minlength=slots)[k]   # noqa: E731
    expected = [per(9, 0)] + [per(8, k - 1) + (per(3, k - 1) if k <= 3 else 0) + per(9, k) for k in range(1, 9)]
    np.testing.assert_array_equal(host, np.array(expected, np.float16))


@metal.jit
def nd_add(acc):
    i = metal.grid(1)
    metal.fp16.atomicAdd(acc, (i % 3, i % 5), 0.5)


def test_nd_device_arrays_with_tuple_indices():
    acc = np.zeros((3, 5), np.float16)
    nd_add[GROUPS, THREADS](acc)
    expected = np.zeros((3, 5))
    for i in range(N):
        expected[i % 3, i % 5] += 0.5
    np.testing.assert_array_equal(acc, expected.astype(np.float16))


@metal.jit
def shared_count(out, olds):
    """An odd-length shared half array (its last word half outside the array's 5 halves) and a 2-d one."""
    s = metal.shared.array(5, metal.float16)
    m = metal.shared.array((3, 3), np.float16)
    t = metal.threadIdx.x
    if t < 5:
        s[t] = 0
    if t < 9:
        m[t // 3, t % 3] = 0
    metal.syncthreads()
    olds[metal.grid(1)] = metal.fp16.atomicAdd(s, t % 5, 1)
    metal.fp16.atomicAdd(m, (t % 3, t % 2), -0.25)
    metal.syncthreads()
    if t < 5:
        out[metal.blockIdx.x, t] = s[t]
    if t < 9:
        out[metal.blockIdx.x, 5 + t] = m[t // 3, t % 3]


def test_shared_arrays_including_an_odd_length_one():
    out = np.zeros((GROUPS, 14), np.float16)
    olds = np.zeros(N, np.float16)
    shared_count[GROUPS, THREADS](out, olds)
    t = np.arange(THREADS)
    m = np.zeros((3, 3))
    for k in t:
        m[k % 3, k % 2] -= 0.25
    row = np.concatenate([np.bincount(t % 5, minlength=5), m.ravel()]).astype(np.float16)
    np.testing.assert_array_equal(out, np.tile(row, (GROUPS, 1)))
    for s in range(5):
        group_olds = olds.reshape(GROUPS, THREADS)[:, t % 5 == s]
        np.testing.assert_array_equal(np.sort(group_olds, axis=1),
                                      np.tile(np.arange((t % 5 == s).sum()), (GROUPS, 1)))


@metal.jit(device=True)
def count_into(s, out, step):
    """Every thread of the group adds step to s[t % 3]; the group's totals go to its row of out."""
    t = metal.threadIdx.x
    if t < 3:
        s[t] = 0
    metal.syncthreads()
    metal.fp16.atomicAdd(s, t % 3, step)
    metal.syncthreads()
    if t < 3:
        out[metal.blockIdx.x, t] = s[t]


@metal.jit(device=True)
def count_in_device_function(out):
    """A device function's shared array lives in the kernel's threadgroup pool."""
    count_into(metal.shared.array(3, np.float16), out, 1)


@metal.jit
def count_in_dynamic_shared_memory(out, out_dynamic):
    count_into(metal.shared.array(0, np.float16), out_dynamic, 2)
    count_in_device_function(out)


def test_dynamic_shared_memory_and_a_device_functions_shared_array():
    out, out_dynamic = np.zeros((4, 3), np.float16), np.zeros((4, 3), np.float16)
    count_in_dynamic_shared_memory[4, THREADS, 0, 6](out, out_dynamic)
    per = np.bincount(np.arange(THREADS) % 3).astype(np.float16)
    np.testing.assert_array_equal(out, np.tile(per, (4, 1)))
    np.testing.assert_array_equal(out_dynamic, np.tile(2 * per, (4, 1)))


def test_the_simulated_metal_device_gives_the_same_results():
    env = dict(os.environ, NUMBA_METAL_DEVICE="metal-sim", PYTHONPATH=ROOT)
    tests = "not simulated and not refused and not msl"
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-x", __file__, "-k", tests],
                          capture_output=True, text=True, timeout=600, env=env, cwd=ROOT)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert " passed" in proc.stdout and "skipped" not in proc.stdout


@metal.jit
def count_fenced(acc):
    i = metal.grid(1)
    metal.fp16.atomicAdd(acc, i % 3, 1)
    metal.threadfence()


def test_on_coherent_device_memory_of_a_fencing_kernel():
    acc = np.zeros(3, np.float16)
    count_fenced[GROUPS, THREADS](acc)
    np.testing.assert_array_equal(acc, np.bincount(np.arange(N) % 3).astype(np.float16))
    assert "nm_atomic_hadd_cdev(" in metal.compile_msl(count_fenced.py_func, (types.float16[::1],))


def test_the_msl_is_a_compare_and_swap_loop_on_the_32_bit_word():
    msl = metal.compile_msl(count.py_func, (types.float16[::1], types.float16[::1], types.int32))
    assert "nm_atomic_hadd_dev(" in msl
    shared = metal.compile_msl(shared_count.py_func, (types.float16[:, ::1], types.float16[::1]))
    assert "threadgroup uint " in shared and "nm_atomic_hadd_tg(" in shared


def _compile(body, argtypes):
    ns = {"metal": metal, "np": np}
    exec("def k(a, b):\n" + "".join(f"    {line}\n" for line in body.splitlines()), ns)
    return metal.compile_msl(ns["k"], argtypes)


@pytest.mark.parametrize("call", ["metal.atomic.add(a, 0, 1)", "metal.atomic.sub(a, 0, 1)",
                                  "metal.atomic.max(a, 0, 1)", "metal.atomic.nanmin(a, 0, 1)",
                                  "metal.atomic.exch(a, 0, 1)", "metal.atomic.cas(a, 0, 0, 1)",
                                  "metal.atomic_add(a, 0, 1)", "metal.atomic_compare_exchange(a, 0, 0, 1)"])
def test_atomics_numba_cuda_refuses_on_float16_are_refused(call):
    with pytest.raises(UnsupportedFeatureError, match="float16") as e:
        _compile(call, (types.float16[::1], types.float32[::1]))
    assert "fp16.atomicAdd" in str(e.value)


@pytest.mark.parametrize("call, message", [
    ("metal.fp16.atomicAdd(b, 0, 1)", "float16 array, not float32"),
    ("metal.fp16.atomicAdd(a, 1)", "array and an index"),
    ("metal.fp16.atomicAdd(a, (0, 1), 1)", "index"),
    ("x = metal.local.array(4, np.float16)\nmetal.fp16.atomicAdd(x, 0, 1)", "device and shared"),
])
def test_misuses_of_fp16_atomicadd_are_refused(call, message):
    with pytest.raises(UnsupportedFeatureError, match=message):
        _compile(call, (types.float16[::1], types.float32[::1]))
