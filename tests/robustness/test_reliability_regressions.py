"""Regressions of the reliability review (issue 17): read-only arguments, mapped memory's lifetime,
per-thread private memory, and host-side mistakes refused early with clear errors."""

from __future__ import annotations

import gc
import types as types_module

import numpy as np
import pytest
from numba.core import types

from numba_metal import metal
from numba_metal import runtime as rt
from numba_metal.compiler import abi, driver, effects
from numba_metal.errors import (KernelLaunchError, MetalRuntimeError, MetalTypeError, MetalValueError, NumbaMetalError,
                                 UnsupportedFeatureError)


def _read_only(a: np.ndarray) -> np.ndarray:
    a.flags.writeable = False
    return a


# -- read-only NumPy arrays as arguments --------------------------------------------------------

@metal.jit(device=True)
def _get(x, i):
    return x[i]


@metal.jit(device=True)
def _put(x, i):
    x[i] = 3


@metal.jit
def reads(a, out):
    i = metal.grid(1)
    if i < a.size:
        out[i] = a[i] + _get(a, i) + len(a)


@metal.jit
def writes(a):
    i = metal.grid(1)
    if i < a.size:
        a[i] = 7  # writes


@metal.jit
def writes_atomically(a):
    metal.atomic.add(a, 0, 1)  # writes


@metal.jit
def writes_in_device_function(a, out):
    _put(a, 0)  # writes
    out[0] = 1


@metal.jit
def writes_through_view(a, out):
    row = a[1]
    b = row if out[0] > 0 else a[0]
    _put(b, 0)  # writes
    out[0] = 1


@metal.jit(device=True)
def _put_second(t, i):
    x = t[1]
    x[i] = 1


@metal.jit
def writes_through_a_tuple(a, b):
    _put_second((a, b), 0)


def _line(fn, marker="# writes") -> int:
    import inspect
    lines, first = inspect.getsourcelines(fn.py_func)
    return first + next(k for k, ln in enumerate(lines) if marker in ln)


def test_a_kernel_that_only_reads_a_read_only_array_accepts_it():
    a = _read_only(np.arange(8, dtype=np.float32))
    out = np.zeros(8, np.float32)
    reads[1, 8](a, out)
    np.testing.assert_array_equal(out, 2 * np.arange(8, dtype=np.float32) + 8)


@pytest.mark.parametrize("kernel, args", [
    (writes, lambda a: (a,)),
    (writes_atomically, lambda a: (a,)),
    (writes_in_device_function, lambda a: (a, np.zeros(1, np.float32))),
    (writes_through_view, lambda a: (a.reshape(2, 4), np.zeros(1, np.float32))),
], ids=lambda v: getattr(v, "__name__", ""))
def test_a_kernel_that_may_write_a_read_only_array_refuses_it_naming_the_write(kernel, args):
    a = _read_only(np.zeros(8, np.float32))
    with pytest.raises(KernelLaunchError, match=rf"argument 0 of {kernel.__name__}\(\) is read-only NumPy "
                                                rf"memory .* may write it \(.*:{_line(kernel)}\)"):
        kernel[1, 8](*args(a))
    assert not a.any()
    writable = np.zeros(8, np.float32)   # the same kernel with a writable array works
    kernel[1, 8](*args(writable))
    assert writable.any()


@metal.jit
def writes_a_record_field(r):
    r.y = 5  # writes


def test_a_record_of_a_read_only_array_is_refused_when_the_kernel_writes_it():
    a = np.zeros(2, dtype=[("x", np.float32), ("y", np.int32)])
    a.flags.writeable = False
    with pytest.raises(KernelLaunchError, match=rf"read-only NumPy memory .* may write it \(.*:{_line(writes_a_record_field)}\)"):
        writes_a_record_field[1, 1](a[0])
    w = np.zeros(2, dtype=[("x", np.float32), ("y", np.int32)])
    writes_a_record_field[1, 1](w[1])
    assert w["y"].tolist() == [0, 5]


def test_written_arguments_come_from_the_typed_ir():
    f32 = types.float32[::1]
    f32_2d = types.float32[:, ::1]
    cases = [(reads, (f32, f32), {1}), (writes, (f32,), {0}), (writes_atomically, (types.int32[::1],), {0}),
             (writes_in_device_function, (f32, f32), {0, 1}), (writes_through_view, (f32_2d, f32), {0, 1}),
             (writes_through_a_tuple, (f32, f32), {0, 1})]
    for kernel, argtypes, written in cases:
        compiled = driver.compile_kernel(kernel.py_func, argtypes)
        assert set(effects.written_arguments(compiled.typed)) == written, kernel.__name__
        assert {a.arg for a in compiled.abi.arrays if a.written_at} == written, kernel.__name__


# -- mapped memory lives as long as any view of it ------------------------------------------------

def test_the_base_of_a_mapped_array_keeps_its_memory():
    m = metal.mapped_array(64, np.float32)
    m[:] = 7.0
    base = m.base
    view = m[10:20]
    del m
    gc.collect()
    others = [metal.mapped_array(64, np.float32) for _ in range(32)]   # would reuse freed memory
    for o in others:
        o[:] = 9.0
    assert (base == 7.0).all() and (view == 7.0).all()
    d = metal.to_device(np.arange(4, dtype=np.float32))
    host_view = d._host_view()
    del d
    gc.collect()
    assert host_view.tolist() == [0.0, 1.0, 2.0, 3.0]


# -- local arrays: numba-metal's per-thread limit ---------------------------------------------------

def _local_kernel(n: int, dtype: str):
    ns = {"metal": metal, "np": np}
    exec(f"def local_{n}(a):\n    i = metal.grid(1)\n    l = metal.local.array({n}, np.{dtype})\n"
         f"    for j in range({n}):\n        l[j] = i + j\n    a[i] = l[{n} - 1 - i]\n", ns)
    return ns[f"local_{n}"]


def test_local_arrays_up_to_the_limit_compile_and_run():
    assert abi.MAX_LOCAL_MEMORY == 8192
    kern = metal.jit(_local_kernel(2048, "float32"))   # 8192 bytes
    out = np.zeros(8, np.float32)
    kern[1, 8](out)
    np.testing.assert_array_equal(out, np.full(8, 2047, np.float32))


@pytest.mark.parametrize("n, dtype, nbytes", [(2049, "float32", 8196), (8193, "uint8", 8193), (1 << 20, "int32", 4 << 20)])
def test_local_arrays_over_the_limit_are_refused_when_the_kernel_compiles(n, dtype, nbytes):
    fn = _local_kernel(n, dtype)
    with pytest.raises(UnsupportedFeatureError, match=f"local arrays of kernel local_{n}\\(\\) .* need {nbytes} "
                                                      "bytes per thread, more than numba-metal's limit of 8192"):
        metal.compile_msl(fn, f"void({dtype}[::1])")


# -- host-side mistakes: clear errors, early -----------------------------------------------------------

def test_a_signature_that_is_not_one_is_a_clear_error():
    with pytest.raises(NumbaMetalError, match="invalid signature 'abc'"):
        metal.compile_msl(writes, "abc")


def test_keyword_arguments_at_launch_are_refused():
    with pytest.raises(KernelLaunchError, match=r"writes\(\) was launched with keyword arguments \(a\)"):
        writes[1, 8](a=np.zeros(8, np.float32))


@pytest.mark.parametrize("obj", [None, [None, 1], np.array(["x", 1], dtype=object)], ids=repr)
def test_to_device_of_nothing_or_of_python_objects_is_refused(obj):
    with pytest.raises(NumbaMetalError, match=r"to_device\(None\)|Python objects"):
        metal.to_device(obj)


def test_the_argument_limit_is_checked_before_the_device_compiles(monkeypatch):
    @metal.jit
    def big(a, t):
        a[0] = t[0] + t[2999]

    def no_compile(*args, **kwargs):
        raise AssertionError("the device compiled a kernel whose arguments cannot be passed")

    monkeypatch.setattr(rt.Device, "compile", no_compile)
    with pytest.raises(UnsupportedFeatureError, match="24016 bytes of scalar arguments.* more than the 4096"):
        big[1, 1](np.zeros(1, np.float32), tuple(range(3000)))


_CONSTANTS = types_module.ModuleType("nm_constants_module")
_CONSTANTS.ARR = np.arange(4, dtype=np.float32) * 3


@metal.jit
def reads_module_constant(out):
    c = metal.const.array_like(_CONSTANTS.ARR)
    i = metal.grid(1)
    if i < out.size:
        out[i] = c[i] + _CONSTANTS.ARR[i]


def test_const_array_like_of_a_module_attribute():
    out = np.zeros(4, np.float32)
    reads_module_constant[1, 4](out)
    np.testing.assert_array_equal(out, np.arange(4) * 6.0)


# -- the public time limit of a kernel launch ----------------------------------------------------------

@metal.jit
def spins_until_flagged(a, flag):
    i = metal.grid(1)
    while metal.atomic.add(flag, 0, 0) == 0:
        pass
    a[i] = 1


def test_a_kernel_running_past_the_time_limit_is_stopped_with_an_error_naming_it():
    a = metal.device_array(8, np.float32)
    flag = metal.to_device(np.zeros(1, np.int32))
    previous = metal.set_kernel_time_limit(0.25)   # None unless NUMBA_METAL_CPU_TIME_LIMIT_MS is set
    try:
        assert metal.get_kernel_time_limit() == pytest.approx(0.25)
        spins_until_flagged[1, 8](a, flag)
        with pytest.raises(MetalRuntimeError, match="'spins_until_flagged.*ran longer than its time limit of 0.250 s"):
            metal.synchronize()
    finally:
        assert metal.set_kernel_time_limit(None) == pytest.approx(0.25)
    assert metal.get_kernel_time_limit() is None
    metal.set_kernel_time_limit(previous)
    flag.copy_to_device(np.ones(1, np.int32))   # the device goes on: the same kernel now finishes
    spins_until_flagged[1, 8](a, flag)
    assert a.copy_to_host().tolist() == [1.0] * 8
    for bad in (-1, float("nan")):
        with pytest.raises(MetalValueError, match="seconds must be >= 0") as info:
            metal.set_kernel_time_limit(bad)
        assert isinstance(info.value, ValueError)
    with pytest.raises(MetalTypeError, match="seconds must be a real number or None") as info:
        metal.set_kernel_time_limit("1")
    assert isinstance(info.value, TypeError)
    assert metal.get_kernel_time_limit() is None
