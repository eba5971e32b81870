"""Launching kernels: configurations, argument checking, specialisation, eager signatures."""

import numpy as np
import pytest
from numba.core import types

from numba_metal import metal
from numba_metal.errors import KernelLaunchError, NumbaMetalError, UnsupportedFeatureError


@metal.jit
def axpy(a, x, y, out):
    i = metal.grid(1)
    if i < out.size:
        out[i] = a * x[i] + y[i]


def _args(n=100):
    x = metal.to_device(np.arange(n, dtype=np.float32))
    y = metal.to_device(np.ones(n, dtype=np.float32))
    return x, y, metal.device_array(n, np.float32)


# sanitized run: a 1-D kernel on 2-D/3-D grids: idempotent writes (a DeviceRaceWarning by design)
@pytest.mark.filterwarnings("ignore::numba_metal.errors.DeviceRaceWarning")
@pytest.mark.parametrize("config", [
    (4, 32), ((4,), (32,)), ((4, 2), (32, 1)), ((4, 1, 2), (32, 1, 1)), (np.int64(4), np.int32(32)),
])
def test_blocks_and_threads_as_ints_or_tuples(config):
    x, y, out = _args(128)
    axpy[config](2.0, x, y, out)
    np.testing.assert_array_equal(out.copy_to_host(), 2 * np.arange(128, dtype=np.float32) + 1)


def test_launch_with_stream_and_sharedmem_arguments():
    x, y, out = _args()
    s = metal.stream()
    axpy[4, 32, s](3.0, x, y, out)
    axpy[4, 32, s, 0](3.0, x, y, out)
    s.synchronize()
    np.testing.assert_array_equal(out.copy_to_host(), 3 * np.arange(100, dtype=np.float32) + 1)


@pytest.mark.parametrize("config,match", [
    ((0, 32), "positive"), ((4, 0), "positive"), ((-1, 32), "positive"), ((4, -32), "positive"),
    ((4.0, 32), "int"), ((4, 32.5), "int"), ((True, 32), "int"), (((1, 2, 3, 4), 32), "1, 2 or 3"),
    ((4, (32, "a")), "integers"), ((4, 2048), "maximum of 1024"), ((4, (32, 32, 2)), "maximum of 1024"),
    ((4,), "launch configuration"), ((4, 32, 0, -1), "sharedmem"),
])
def test_bad_launch_configurations_raise_before_any_work(config, match):
    x, y, out = _args()
    before = out.copy_to_host()
    with pytest.raises(KernelLaunchError, match=match):
        axpy[config](2.0, x, y, out)
    metal.synchronize()
    np.testing.assert_array_equal(out.copy_to_host(), before)   # nothing ran


def test_missing_launch_configuration():
    x, y, out = _args()
    with pytest.raises(KernelLaunchError, match=r"launch configuration.*axpy\[blocks, threads\]"):
        axpy(2.0, x, y, out)


def test_wrong_argument_count_and_types():
    x, y, out = _args()
    with pytest.raises(NumbaMetalError, match="takes 4 argument"):
        axpy[1, 32](x, y, out)
    with pytest.raises(KernelLaunchError, match="argument 1 has type str"):
        axpy[1, 32](2.0, "x", y, out)
    with pytest.raises(KernelLaunchError, match="argument 0 has type list"):
        axpy[1, 32]([1.0], x, y, out)


def test_one_compile_per_specialisation():
    k = metal.jit(axpy.py_func)
    x, y, out = _args()
    k[1, 128](2.0, x, y, out)
    k[1, 128](3.0, x, y, out)
    assert len(k.specializations) == 1
    k[1, 128](2, x, y, out)                          # int scalar: a second specialisation
    assert len(k.specializations) == 2
    xi = metal.to_device(np.arange(100, dtype=np.int32))
    k[1, 128](2, xi, xi, metal.device_array(100, np.int32))
    assert len(k.specializations) == 3


def test_eager_signatures_compile_at_decoration_and_restrict_types():
    @metal.jit("void(float32, float32[:], float32[:], float32[:])")
    def eager(a, x, y, out):
        i = metal.grid(1)
        if i < out.size:
            out[i] = a * x[i] - y[i]

    assert len(eager.specializations) == 1
    x, y, out = _args()
    eager[1, 128](2.0, x, y, out)
    np.testing.assert_array_equal(out.copy_to_host(), 2 * np.arange(100, dtype=np.float32) - 1)
    with pytest.raises(KernelLaunchError, match="no signature matching"):
        eager[1, 128](2.0, metal.to_device(np.zeros(100, np.int32)), y, out)


def test_list_of_signatures_and_numba_signature_objects():
    sig = types.void(types.int32[:], types.int32)
    @metal.jit([sig, "void(float32[:], float32)"])
    def fill(a, v):
        i = metal.grid(1)
        if i < a.size:
            a[i] = v

    assert len(fill.specializations) == 2
    a = np.zeros(8, np.int32)
    fill[1, 8](a, np.int32(3))
    np.testing.assert_array_equal(a, 3)


def test_kernel_signature_must_return_void():
    with pytest.raises(NumbaMetalError, match="void"):
        metal.jit("int32(int32[:])")(lambda a: 0)


def test_unknown_and_unsupported_jit_options():
    with pytest.raises(NumbaMetalError, match="unknown option 'bogus'"):
        metal.jit(bogus=True)
    with pytest.raises(UnsupportedFeatureError, match="register cap"):
        metal.jit(max_registers=32)


def test_scalar_that_does_not_fit_its_type():
    @metal.jit("void(int64, int64[:])")
    def k(v, a):
        a[0] = v

    # A Python int is int64, the signature's type: a value beyond it fits no conversion (numba.cuda's ctypes
    # would wrap it silently). A signature of another integer type converts as Numba does:
    # tests/host/test_signature_dispatch.py.
    with pytest.raises(KernelLaunchError, match="does not fit"):
        k[1, 1](2 ** 70, np.zeros(1, np.int64))


def test_tuple_arguments():
    @metal.jit
    def k(t, out):
        out[0] = t[0] + t[1][0] * t[1][1]

    out = np.zeros(1, np.float32)
    k[1, 1]((1.5, (2, 3)), out)
    assert out[0] == 7.5


def test_forall_covers_ntasks():
    x, y, out = _args(1000)
    axpy.forall(1000)(1.0, x, y, out)
    np.testing.assert_array_equal(out.copy_to_host(), np.arange(1000, dtype=np.float32) + 1)


def test_arrays_from_two_launch_paths_match():
    # NumPy arguments (copied in/out) and device arrays give the same answer.
    xh = np.arange(50, dtype=np.float32)
    yh = np.ones(50, np.float32)
    outh = np.zeros(50, np.float32)
    axpy[1, 64](4.0, xh, yh, outh)
    x, y, out = metal.to_device(xh), metal.to_device(yh), metal.device_array(50, np.float32)
    axpy[1, 64](4.0, x, y, out)
    np.testing.assert_array_equal(out.copy_to_host(), outh)
