"""Device-function arguments known at compile time (issue 27 item 4), as Numba types them for a jitted callee:
a constant passed by the caller is a literal in the device function (a shared-array shape, a flag), a dtype and a
function (another device function, ``metal.atomic.add``) are their types; functions defined inside kernels,
factories of device functions, and Numba ``@jit`` functions or ``@metal.jit`` kernels called from a kernel compile
as device functions. numba-cuda's own tests (cudapy/test_atomics, test_make_function_to_jit_function) use all of
these."""

import re

import numba
import numpy as np
import pytest
from numba.core import types

from numba_metal import metal
from numba_metal.errors import KernelCompilationError, UnsupportedFeatureError


@metal.jit(device=True)
def _identity(x):
    return x


@metal.jit(device=True)
def _histogram_in_shared(out, keys, n, dtype, update, cast):
    """numba-cuda's atomic_binary_1dim_shared: the shape, the dtype and the atomic come from the caller."""
    tid = metal.threadIdx.x
    sm = metal.shared.array(n, dtype)
    if tid < n:
        sm[tid] = 0
    metal.syncthreads()
    update(sm, cast(keys[tid] % n), 1)
    metal.syncthreads()
    if tid < n:
        out[tid] = sm[tid]


@metal.jit
def _histogram(out, keys):
    _histogram_in_shared(out, keys, 16, metal.uint32, metal.atomic.add, _identity)


def test_shape_dtype_and_atomic_passed_to_a_device_function():
    keys = (np.arange(64, dtype=np.uint32) * 7) % 16
    out = np.zeros(16, np.uint32)
    _histogram[1, 64](out, keys)
    np.testing.assert_array_equal(out, np.bincount(keys % 16, minlength=16))


@metal.jit(device=True)
def _tile_sum(a, shape, dtype):
    """A 2-D shared array whose shape is a tuple passed by the caller; its size and dtype follow it."""
    tx, ty = metal.threadIdx.x, metal.threadIdx.y
    sm = metal.shared.array(shape, dtype)
    sm[tx, ty] = a[tx, ty] * 1.5   # stored as the dtype the caller chose
    metal.syncthreads()
    total = 0.0
    for i in range(shape[0]):
        for j in range(shape[1]):
            total += sm[i, j]
    return total, sm.size


@metal.jit
def _tile_sums(a, out):
    tx, ty = metal.threadIdx.x, metal.threadIdx.y
    t_int, n_int = _tile_sum(a, (4, 8), metal.int32)
    t_flt, n_flt = _tile_sum(a, (4, 8), np.float32)
    if tx == 0 and ty == 0:
        out[0] = t_int
        out[1] = t_flt
        out[2] = n_int
        out[3] = n_flt


def test_tuple_shape_and_dtype_passed_through_select_the_shared_array():
    a = np.arange(32, dtype=np.float32).reshape(4, 8)
    out = np.zeros(4, np.float32)
    _tile_sums[1, (4, 8)](a, out)
    assert out[0] == np.trunc(a * 1.5).sum()       # int32 elements truncate 1.5 * a
    assert out[1] == (a * 1.5).sum()
    assert out[2] == out[3] == 32


@metal.jit(device=True)
def _apply(f, x):
    return f(x)


@metal.jit(device=True)
def _twice(f, g, x):
    """Device functions passed to a device function, passed on to another."""
    return _apply(f, _apply(g, x))


@metal.jit(device=True)
def _plus_one(x):
    return x + 1


@metal.jit(device=True)
def _double(x):
    return x * 2


@metal.jit
def _compose(out, x):
    out[0] = _twice(_plus_one, _double, x[0])
    out[1] = _twice(_double, _plus_one, x[0])


def test_device_function_passed_to_device_functions():
    out = np.zeros(2, np.int64)
    _compose[1, 1](out, np.array([5], np.int64))
    assert list(out) == [11, 12]


@metal.jit(device=True)
def _atomic_global(ary, i, value, op):
    return op(ary, i, value)


@metal.jit
def _atomics_through_argument(ary, old):
    i = metal.grid(1)
    old[i] = _atomic_global(ary, 0, 1, metal.atomic.add)
    _atomic_global(ary, 1, i, metal.atomic.max)


def test_kernel_api_atomics_passed_as_arguments():
    ary = np.zeros(2, np.int32)
    old = np.zeros(64, np.int32)
    _atomics_through_argument[2, 32](ary, old)
    assert ary[0] == 64 and ary[1] == 63
    assert sorted(old) == list(range(64))   # each thread got a distinct old value


@metal.jit(device=True)
def _update(a, i, v, op=metal.atomic.add):
    return op(a, i, v)


@metal.jit
def _default_and_keyword_functions(a):
    _update(a, 0, 1)
    _update(a, 1, 5, op=metal.atomic.max)


def test_a_function_as_a_default_value_and_as_a_keyword_argument():
    a = np.zeros(2, np.int32)
    _default_and_keyword_functions[1, 32](a)
    assert list(a) == [32, 5]


@metal.jit(device=True)
def _flagged(x, negate):
    if negate:
        return -x
    return x


def test_literal_arguments_specialise_the_device_function():
    """A device function is typed for its literal arguments (as Numba's dispatcher compiles a callee): two
    constants give two specialisations, each a compile-time constant in the callee."""
    def k(out):
        out[0] = _flagged(3, True)
        out[1] = _flagged(3, False)

    src = metal.compile_msl(k, (types.int64[::1],))
    assert len(re.findall(r"^static NM_INLINE .* nm_f__flagged_\w+\(", src, re.M)) == 2
    out = np.zeros(2, np.int64)
    metal.jit(k)[1, 1](out)
    assert list(out) == [-3, 3]


@metal.jit(device=True)
def _shared_of_size(n):
    sm = metal.shared.array(n, np.float32)
    return sm.size


def test_a_run_time_shape_is_refused_naming_the_line():
    def k(out, n):
        out[0] = _shared_of_size(n)

    with pytest.raises(UnsupportedFeatureError, match=r"test_device_function_arguments\.py:\d+: metal\.shared\.array:"
                       r" the shape must be a constant .* not a run-time int64") as info:
        metal.compile_msl(k, (types.int64[::1], types.int64))
    line = int(re.search(r"\.py:(\d+):", str(info.value)).group(1))
    assert "metal.shared.array(n, np.float32)" in open(__file__).read().splitlines()[line - 1]


def test_a_constant_shape_through_a_device_function_compiles():
    def k(out):
        out[0] = _shared_of_size(24)

    out = np.zeros(1, np.int64)
    metal.jit(k)[1, 1](out)
    assert out[0] == 24


# -- functions defined inside kernels, factories, jitted functions ------------------------------------------


@metal.jit(device=True)
def _consumer(func, *args):
    return func(*args)


@metal.jit
def _local_functions(out, x):
    y = 10

    def add_y(z):
        return y + z

    def with_defaults(a, b=2, c=3):
        return a * 100 + b * 10 + c

    triple = lambda v: v * 3   # noqa: E731
    out[0] = add_y(x)
    out[1] = _consumer(add_y, x)          # escapes into a device function
    out[2] = triple(x)
    out[3] = with_defaults(1)
    out[4] = with_defaults(1, c=7)
    out[5] = _consumer(with_defaults, 4, 5, 6)


def test_functions_defined_inside_a_kernel():
    out = np.zeros(6, np.int64)
    _local_functions[1, 1](out, 4)
    assert list(out) == [14, 14, 12, 123, 127, 456]


def _make_scale(k):
    @metal.jit(device=True)
    def scale(x):
        return x * k
    return scale


_by_two = _make_scale(2)
_by_ten = _make_scale(10)


@metal.jit
def _two_factories(out, x):
    out[0] = _by_two(x[0])
    out[1] = _by_ten(x[0])


def test_device_functions_made_by_a_factory():
    """Two device functions of the same name (made by one factory) called alike in one kernel stay apart."""
    out = np.zeros(2, np.float32)
    _two_factories[1, 1](out, np.array([1.5], np.float32))
    assert list(out) == [3.0, 15.0]


def _kernel_calling(func):
    """numba-cuda's test_make_function_to_jit_function factory: the kernel calls a @metal.jit function (not a
    device function) that it reads from its closure."""
    jitted = metal.jit(func)

    @metal.jit
    def kernel(out, x):
        out[0] = jitted(x)
    return kernel


@numba.njit
def _cpu_jitted(x):
    return x * x + 1


@metal.jit
def _calls_numba_jit(out, x):
    out[0] = _cpu_jitted(x)


def test_jitted_functions_called_from_kernels():
    def inner(x):
        def add(a, b=1):
            return a + b
        return _consumer(add, x) * 2

    out = np.zeros(1, np.int64)
    _kernel_calling(inner)[1, 1](out, 20)
    assert out[0] == 42
    _calls_numba_jit[1, 1](out, 6)
    assert out[0] == 37


@metal.jit
def _closures_of_run_time_values(out, x):
    i = metal.grid(1)
    t = x[i] + 1

    def inner(v):
        if v > 2:
            return v + t
        return v - t
    g = lambda a: a * t   # noqa: E731
    out[i] = inner(x[i]) + g(2.0)


def test_functions_reading_run_time_values_are_inlined_where_called():
    """As Numba's InlineClosureCallPass does (numba-cuda runs it first), a call of a function defined in the
    kernel that reads a value computed at run time is inlined."""
    x = np.arange(8, dtype=np.float32)
    out = np.zeros(8, np.float32)
    _closures_of_run_time_values[1, 8](out, x)
    t = x + 1
    np.testing.assert_array_equal(out, np.where(x > 2, x + t, x - t) + 2 * t)


def test_a_function_capturing_a_run_time_value_is_refused_with_numbas_words():
    def k(out, x):
        t = x + 1

        def inner(v):   # the error names this line
            return v + t
        out[0] = _consumer(inner, x)   # passed on: it would escape, so it cannot be inlined

    with pytest.raises(KernelCompilationError, match=r"test_device_function_arguments\.py:\d+: Cannot capture the "
                       r"non-constant value associated with variable 't'") as info:
        metal.compile_msl(k, (types.int64[::1], types.int64))
    line = int(re.search(r"\.py:(\d+):", str(info.value)).group(1))
    assert "def inner(v):" in open(__file__).read().splitlines()[line - 1]


def test_wrong_arguments_to_a_device_function_name_its_signature():
    def k(out):
        out[0] = _flagged(1, 2, 3)

    with pytest.raises(KernelCompilationError, match=r"_flagged\(x, negate\) cannot be called with 3 positional"):
        metal.compile_msl(k, (types.int64[::1],))


_CAPTURED = None


def test_a_function_defined_in_a_kernel_reading_a_captured_device_array_is_refused():
    """Only device functions the kernel names reach its captured arrays; a closure reading one is refused at
    its call (without the check its hidden argument would be another argument of the kernel: a wrong read)."""
    global _CAPTURED
    _CAPTURED = metal.to_device(np.arange(4, dtype=np.float32))

    @metal.jit
    def k(out):
        i = metal.grid(1)

        def inner(j):
            return _CAPTURED[j] * 2
        out[i] = inner(i)   # the error names this line

    with pytest.raises(UnsupportedFeatureError, match=r"test_device_function_arguments\.py:\d+: inner\(\) reads "
                       r"the device array '_CAPTURED' from its scope") as info:
        k[1, 4](np.zeros(4, np.float32))
    line = int(re.search(r"\.py:(\d+):", str(info.value)).group(1))
    assert "out[i] = inner(i)" in open(__file__).read().splitlines()[line - 1]
