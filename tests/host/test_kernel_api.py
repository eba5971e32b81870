"""numba.cuda's kernel-object API: signatures in every form, launch configurations in every form and their
exception types, forall, specialize / specialized / overloads / definitions, inspection, wrong argument
counts, and the low-occupancy performance warning (numba-cuda's dispatcher.py and its tests)."""

import collections
import io
import warnings

import numpy as np
import pytest
from numba import float32, int32, void
from numba.core import types
from numba.core.errors import NumbaPerformanceWarning

from numba_metal import metal
from numba_metal.errors import (KernelLaunchError, LaunchArgumentError, LaunchConfigurationError,
                                NumbaMetalError, UnsupportedFeatureError)


def fill(a, value):
    i = metal.grid(1)
    if i < a.size:
        a[i] = value


@pytest.mark.parametrize("signature", [
    "void(float32[:], int32)",
    void(float32[:], int32),
    (float32[:], int32),
    [(float32[:], int32)],
    [void(float32[:], int32), "void(int32[:], int32)"],
    (types.Array(types.float32, 1, "A"), types.int32),
])
def test_every_signature_form_of_numba_cuda_compiles_eagerly(signature):
    kernel = metal.jit(signature)(fill)
    assert (types.Array(types.float32, 1, "A"), types.int32) in kernel.overloads
    d = metal.device_array(8, np.float32)
    kernel[1, 8](d, np.int32(3))
    np.testing.assert_array_equal(d.copy_to_host(), 3)


def test_a_signature_that_returns_a_value_is_refused():
    with pytest.raises(NumbaMetalError, match="return void"):
        metal.jit(int32(float32[:], int32))(fill)


Dim3 = collections.namedtuple("Dim3", "x y z")


class XYZ:
    def __init__(self, x, y, z):
        self.x, self.y, self.z = x, y, z


@pytest.mark.parametrize("blocks, threads", [
    (2, 64), ((2,), (64,)), ([2, 1], [64, 1, 1]), (np.int32(2), np.uint64(64)), (Dim3(2, 1, 1), Dim3(64, 1, 1)),
    (XYZ(2, 1, 1), XYZ(np.int64(64), 1, 1)), ((np.int16(2), 1), 64),
])
def test_every_launch_dimension_form_of_numba_cuda(blocks, threads):
    kernel = metal.jit(fill)
    d = metal.device_array(128, np.int32)
    kernel[blocks, threads](d, 5)
    kernel[blocks, threads, 0](d, 6)
    metal.synchronize()                                  # streams do not wait for each other
    kernel[blocks, threads, metal.stream(), 0](d, 7)     # a stream nobody keeps: synchronize still waits for it
    metal.synchronize()
    np.testing.assert_array_equal(d.copy_to_host(), 7)
    kernel.configure(blocks, threads)(d, 8)
    np.testing.assert_array_equal(d.copy_to_host(), 8)


@pytest.mark.parametrize("config, exc, match", [
    ((4,), ValueError, "must specify at least the griddim and blockdim"),
    ((1, 2, 0, 0, 0), ValueError, "must specify at least"),
    ((None, 32), ValueError, "Must specify both griddim and blockdim"),
    (((1, 1, 1, 1), 32), ValueError, r"griddim must be a sequence of 1, 2 or 3 integers, got \[1, 1, 1, 1\]"),
    (([2.0], 32), TypeError, r"griddim must be a sequence of integers, got \[2\.0\]: the blocks"),
    ((1.0, 32), TypeError, r"griddim must be a sequence of integers, got \[1\.0\]"),   # numba.cuda's words
    ((1, (32, "a")), TypeError, r"blockdim must be a sequence of integers, got \[32, 'a'\]: the threads"),
    ((0, 32), ValueError, "positive"),
    ((1, 32, 0, "x"), TypeError, "sharedmem"),
    ((1, 32, 0, -16), ValueError, "non-negative"),
])
def test_bad_configurations_raise_numba_cudas_exception_types(config, exc, match):
    kernel = metal.jit(fill)
    with pytest.raises(exc, match=match) as info:
        kernel[config]
    assert isinstance(info.value, KernelLaunchError)


def test_a_kernel_called_without_configuration_raises_value_error():
    kernel = metal.jit(fill)
    with pytest.raises(ValueError, match="without a launch configuration") as info:
        kernel(metal.device_array(4), 1)
    assert "launch configuration was not specified" in str(info.value)   # numba.cuda's words
    assert isinstance(info.value, LaunchConfigurationError)


def test_wrong_argument_counts_are_a_type_error_naming_the_kernel_and_its_line():
    kernel = metal.jit(fill)
    d = metal.device_array(4, np.int32)
    for args in [(d,), (d, 1, 2), ()]:
        with pytest.raises(TypeError, match=r"fill\(\) takes 2 argument\(s\) but \d+ were given") as info:
            kernel[1, 4](*args)
        assert isinstance(info.value, LaunchArgumentError) and isinstance(info.value, KernelLaunchError)
        assert info.value.location == (__file__, fill.__code__.co_firstlineno)
    kernel[1, 4](d, 1)                                   # still usable
    np.testing.assert_array_equal(d.copy_to_host(), 1)


def test_forall_covers_ntasks_and_zero_tasks_launch_nothing():
    kernel = metal.jit(fill)
    d = metal.to_device(np.zeros(1000, np.int32))
    kernel.forall(1000)(d, 4)
    np.testing.assert_array_equal(d.copy_to_host(), 4)
    kernel.forall(1000, tpb=64, stream=metal.stream())(d, 5)
    metal.synchronize()
    np.testing.assert_array_equal(d.copy_to_host(), 5)
    kernel.forall(0)(d, 9)                               # numba.cuda: a no-op, not even a compile
    kernel.forall(np.int64(0))("not even an array", 9)
    np.testing.assert_array_equal(d.copy_to_host(), 5)
    with pytest.raises(ValueError, match="negative task count"):
        kernel.forall(-1)
    with pytest.raises(TypeError):
        kernel.forall(2.5)


def test_specialize_makes_an_eager_kernel_for_the_argument_types_once():
    kernel = metal.jit(fill)
    assert not kernel.specialized
    d = metal.device_array(16, np.float32)
    spec = kernel.specialize(d, np.int32(1))
    assert spec.specialized and spec is kernel.specialize(d, np.int32(2))
    assert list(spec.overloads) == [(types.Array(types.float32, 1, "C"), types.int32)]
    spec[1, 16](d, np.int32(7))
    np.testing.assert_array_equal(d.copy_to_host(), 7)
    with pytest.raises(KernelLaunchError, match="no signature matching"):
        spec[1, 16](metal.device_array(16, np.int16), np.int32(1))
    with pytest.raises(NumbaMetalError, match="already specialized"):
        spec.specialize(d, np.int32(1))


def test_overloads_definitions_and_inspection():
    kernel = metal.jit(fill)
    d = metal.device_array(4, np.int32)
    kernel[1, 4](d, 1)
    kernel[1, 4](d, np.float32(1))
    assert kernel.overloads == kernel.definitions == kernel.specializations
    assert len(kernel.overloads) == 2
    out = io.StringIO()
    kernel.inspect_types(file=out)
    assert out.getvalue().count("fill (") == 2 and "int64" in out.getvalue()
    one = kernel.overloads[(types.Array(types.int32, 1, "C"), types.float32)]
    out = io.StringIO()
    one.inspect_types(file=out)                                    # numba.cuda's kernel method: one specialisation
    assert out.getvalue().count("fill (") == 1 and "float32" in out.getvalue()
    assert one._type_annotation.typemap["value"] == types.float32  # numba.cuda's typing, by variable
    assert "kernel void" in kernel.inspect_msl((types.Array(types.int32, 1, "C"), types.int64))
    assert kernel.extensions == []
    with pytest.raises(UnsupportedFeatureError, match=r"metal\.In\(arr\)"):
        kernel.extensions.append(object())                          # numba.cuda's prepare_args objects: refused,
    with pytest.raises(UnsupportedFeatureError):                    # never silently ignored
        kernel.extensions.extend([object()])
    for name in ("inspect_llvm", "inspect_asm", "inspect_sass"):
        with pytest.raises(UnsupportedFeatureError, match="inspect_msl"):
            getattr(kernel, name)()


# sanitized run: a 1-D kernel on a 2-D grid: idempotent writes (a DeviceRaceWarning by design)
@pytest.mark.filterwarnings("ignore::numba_metal.errors.DeviceRaceWarning")
def test_low_occupancy_warns_as_numba_cuda(monkeypatch):
    monkeypatch.setenv("NUMBA_METAL_LOW_OCCUPANCY_WARNINGS", "1")
    kernel = metal.jit(fill)
    d = metal.device_array(128 * 32, np.int32)
    with pytest.warns(NumbaPerformanceWarning, match="Grid size 4 will likely result in GPU under-utilization") as rec:
        kernel[(2, 2), 32](d, 1)
    assert rec[0].filename == __file__
    with warnings.catch_warnings():
        warnings.simplefilter("error", NumbaPerformanceWarning)
        kernel[128, 32](d, 1)
        monkeypatch.setenv("NUMBA_METAL_LOW_OCCUPANCY_WARNINGS", "0")
        kernel[(3, 1), 32](d, 1)


def test_declare_device_needs_metal_source_and_refuses_cooperative_launches():
    with pytest.raises(UnsupportedFeatureError, match="is CUDA code"):
        metal.declare_device("my_cuda_function", "int32(int32)", link=["my_cuda_function.cu"])
    with pytest.raises(UnsupportedFeatureError, match="cooperative"):
        metal.declare_device("my_cuda_function", "int32(int32)", use_cooperative=True)


def test_numba_cudas_error_classes_have_numba_metal_counterparts():
    from numba_metal import errors
    # CudaSupportError: no usable device; KernelRuntimeError: a kernel failed (a bounds check is also an
    # IndexError); NumbaPerformanceWarning is Numba's own class, which numba-metal warns with.
    assert metal.UnsupportedPlatformError is errors.UnsupportedPlatformError
    assert issubclass(metal.KernelBoundsError, metal.MetalRuntimeError)
    assert issubclass(metal.KernelBoundsError, IndexError)
    for cls in (LaunchArgumentError, LaunchConfigurationError, metal.MetalValueError, metal.MetalTypeError,
                metal.CopyRequiredError):
        assert issubclass(cls, NumbaMetalError)


def test_a_variable_read_before_assignment_warns_at_compile_time():
    from numba.core.errors import NumbaWarning

    def maybe(result, n):
        if n:
            if n > 0:
                c = 0
            result[0] = c
        else:
            c += 1                                       # c is never assigned on this path
            result[0] = c

    def always(result, n):
        s = 0
        for i in range(n):
            t = i * 2
            s += t
        y = 1 if n > 3 else 2
        while n > 0 and s > 0:
            n -= 1
        result[0] = s + y + n

    with pytest.warns(NumbaWarning, match="Detected uninitialized variable c") as record:
        metal.compile_msl(maybe, "void(int32[:], int32)")
    assert record[0].filename == __file__ and record[0].lineno == maybe.__code__.co_firstlineno + 4
    with warnings.catch_warnings():
        warnings.simplefilter("error", NumbaWarning)
        metal.compile_msl(always, "void(int32[:], int32)")
        r = metal.to_device(np.zeros(1, np.int32))
        metal.jit(always)[1, 1](r, 5)
    assert r.copy_to_host()[0] == 20 + 1 + 0


def test_tuples_of_numpy_scalar_types_are_signatures_too():
    # metal.int32 and friends are NumPy's scalar types where numba-metal does not make them Numba types.
    kernel = metal.jit([(metal.float32[:] if isinstance(metal.float32, types.Type) else float32[:],
                         metal.int32)])(fill)
    assert (types.Array(types.float32, 1, "A"), types.int32) in kernel.overloads
    msl = metal.compile_msl(fill, (float32[:], np.int16))
    assert "short" in msl

    @metal.vectorize([(np.float32, np.float32)])
    def add(a, b):
        return a + b
    np.testing.assert_array_equal(add(np.ones(3, np.float32), np.ones(3, np.float32)), 2)


def test_a_process_without_numba_warns_with_numbas_class():
    import os
    import subprocess
    import sys
    code = ("import sys, warnings\n"
            "from numba_metal.host import perf_warnings\n"
            "numba_before = 'numba' in sys.modules\n"
            "with warnings.catch_warnings(record=True) as w:\n"
            "    warnings.simplefilter('always')\n"
            "    perf_warnings.check_grid((1, 1, 1), sys._getframe())\n"
            "print(numba_before, w[0].category.__module__, w[0].category.__name__)\n")
    env = dict(os.environ, NUMBA_METAL_LOW_OCCUPANCY_WARNINGS="1")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["False", "numba.core.errors", "NumbaPerformanceWarning"]


@pytest.mark.parametrize("name", ["compile_ptx", "compile_ptx_for_current_device", "compile",
                                  "compile_for_current_device", "compile_all"])
def test_numba_cudas_nvidia_compilers_are_refused_naming_compile_msl(name):
    # numba.cuda's compile_ptx & co. produce PTX or LTO-IR: a port gets a clear refusal naming the MSL
    # counterpart, which works for the same function and signature
    with pytest.raises(UnsupportedFeatureError, match=r"metal\.compile_msl"):
        getattr(metal, name)(fill, "void(int32[::1], int32)")
    assert "kernel void" in metal.compile_msl(fill, "void(int32[::1], int32)")
