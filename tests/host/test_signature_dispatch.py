"""numba.cuda's dispatcher rules (numba-cuda 0.30's dispatcher.py and cudapy/test_dispatcher.py): the choice
among explicit signatures, the conversion of scalar arguments to the chosen one, ``specialize`` with Numba
types, device functions with explicit signatures, ``launch_bounds``, ``shared_memory_carveout``, the kernel
properties (``get_*``), ``_compile_for_args`` and ``launchconfig``."""

import threading

import numpy as np
import pytest
from numba import float32, float64, int32, int64, void
from numba.core.errors import TypingError

from numba_metal import metal
from numba_metal.errors import (DispatcherStateError, KernelLaunchError, LaunchArgumentError, NumbaMetalError,
                                UnsupportedFeatureError)


def add_kernel(r, x, y):
    r[0] = x + y


def store(a, v):
    a[0] = v


def store_seven(a):
    a[0] = 7


# -- choosing among explicit signatures ---------------------------------------------------------------------


def test_the_signature_numba_rates_best_is_chosen_not_the_first():
    # int64 -> float64 is a safe conversion, int64 -> float32 an unsafe one: Numba takes the float64 signature,
    # so 2**-25 survives the addition (in float32 it would be rounded away).
    f = metal.jit(["(float64[::1], float32, float32)", "(float64[::1], float64, float64)"])(add_kernel)
    r = np.zeros(1)
    f[1, 1](r, np.float32(1), np.float32(2 ** -25))
    assert r[0] == 1.0
    f[1, 1](r, 1, np.float64(2 ** -25))
    assert r[0] == 1.0000000298023224
    assert len(f.overloads) == 2, "a launch compiles nothing for a kernel with explicit signatures"


def test_two_signatures_rated_equally_are_refused_as_ambiguous():
    f = metal.jit(["(float64[::1], float32, float64)", "(float64[::1], float64, float32)",
                   "(float64[::1], int64, int64)"])(add_kernel)
    with pytest.raises(TypeError) as info:
        f[1, 1](np.zeros(1), np.float32(1), np.float32(2))
    message = str(info.value)
    assert isinstance(info.value, LaunchArgumentError)
    assert message.startswith("Ambiguous overloading for <function add_kernel")
    assert "float32, float64) -> none" in message and "float64, float32) -> none" in message
    assert "int64" not in message     # the integer signature is not one of the best


def test_no_matching_signature_is_numba_cudas_type_error():
    f = metal.jit(["(int64[::1], int64, int64)", "(float64[::1], float64, float64)"])(add_kernel)
    with pytest.raises(TypeError, match="No matching definition for argument type"):
        f[1, 1](np.zeros(1, np.complex128), np.complex128(1j), np.complex128(1j))
    assert len(f.overloads) == 2


# -- scalar conversion to the chosen signature ------------------------------------------------------------


def test_an_integer_converts_to_the_signatures_integer_type_modulo_its_width():
    k = metal.jit("void(int32[:], int32)")(store)
    a = np.zeros(1, np.int32)
    k[1, 1](a, 0xFFFFFFFF)            # a uint32 value above 2**31 where the signature says int32 (numba.cuda: -1)
    assert a[0] == -1
    k[1, 1](a, np.uint32(0x80000000))
    assert a[0] == -2 ** 31
    u = metal.jit("void(uint32[:], uint32)")(store)
    b = np.zeros(1, np.uint32)
    u[1, 1](b, -1)
    assert b[0] == 0xFFFFFFFF


def test_a_float_converts_to_an_integer_signature_by_truncation_and_a_complex_is_refused():
    k = metal.jit("void(int64[:], int64)")(store)
    a = np.zeros(1, np.int64)
    k[1, 1](a, np.float64(-3.75))
    assert a[0] == -3                 # Numba's float -> int conversion truncates toward zero
    with pytest.raises(TypeError):
        k[1, 1](a, np.float64("nan"))
    with pytest.raises(TypeError):
        k[1, 1](a, 1 + 2j)


# -- specialize ----------------------------------------------------------------------------------------------


def test_specialize_takes_numba_types_and_refuses_a_second_specialization_as_a_runtime_error():
    k = metal.jit(store)
    s = k.specialize(int32[::1], int64)
    assert s.specialized and s is k.specialize(int32[::1], int64)
    assert list(s.overloads) == [(int32[::1], int64)]
    with pytest.raises(RuntimeError, match="Dispatcher already specialized"):
        s.specialize(int32[::1], int64)
    assert isinstance(pytest.raises(DispatcherStateError, s.specialize, int32[::1]).value, NumbaMetalError)


def test_one_explicit_signature_makes_a_specialized_kernel_a_list_does_not():
    one = metal.jit("void(float32[::1], float32)")(store)
    assert one.specialized
    with pytest.raises(RuntimeError, match="already specialized"):
        one.specialize(float32[::1], float32)
    several = metal.jit(["void(float32[::1], float32)"])(store)
    assert not several.specialized
    assert several.specialize(float64[::1], float64).specialized


# -- device functions with explicit signatures ---------------------------------------------------------------


def _calling(sigs):
    add = metal.jit(sigs, device=True)(lambda x, y: x + y)

    @metal.jit
    def f(r, x, y):
        r[0] = add(x, y)
    return f


def test_a_device_functions_explicit_signature_casts_the_call_as_numba_does():
    f = _calling(["(int64, int64)"])
    r = np.zeros(1, np.int64)
    f[1, 1](r, np.float64(1.5), np.float64(2.5))
    assert r[0] == 3                  # 1 + 2: the arguments were cast to int64 first
    g = _calling(["(int64, int64)", "(float64, float64)"])
    r = np.zeros(1)
    g[1, 1](r, np.int32(1), np.float64(2.5))
    assert r[0] == 3.5


def test_a_device_function_call_no_signature_accepts_is_a_typing_error():
    f = _calling(["(int64, int64)", "(float64, float64)"])
    with pytest.raises(TypingError, match=r"Invalid use of type\(device function"):
        f[1, 1](np.zeros(1, np.complex128), np.complex128(1j), np.complex128(1j))


# -- launch_bounds and shared_memory_carveout ----------------------------------------------------------------


@pytest.mark.parametrize("bounds", [128, (128,), (128, 2), (128, 2, 4)])
def test_launch_bounds_bound_the_pipeline_and_refuse_a_larger_launch(bounds):
    @metal.jit(launch_bounds=bounds)
    def f(a):
        a[metal.grid(1)] = 1

    a = metal.device_array(256, np.int32)
    f[1, 128](a)
    (sig,) = f.overloads
    assert "[[max_total_threads_per_threadgroup(128)]]" in f.inspect_msl(sig)
    assert f.get_max_threads_per_block(void(*sig)) <= 128
    with pytest.raises(KernelLaunchError, match="launch_bounds"):
        f[1, 256](a)


def test_more_than_three_launch_bounds_are_numba_cudas_value_error():
    with pytest.raises(ValueError, match="Got 4 launch bounds:"):
        metal.jit("void()", launch_bounds=(128, 2, 4, 8))(lambda: None)
    with pytest.raises(ValueError, match="positive"):
        metal.jit(launch_bounds=0)(lambda: None)


@pytest.mark.parametrize("carveout", ["MaxL1", "MaxShared", "default", 0, 50, 100, -1])
def test_a_valid_shared_memory_carveout_is_accepted_and_changes_nothing(carveout):
    f = metal.jit("void(int32[:])", shared_memory_carveout=carveout)(store_seven)
    a = metal.to_device(np.zeros(1, np.int32))
    f[1, 1](a)
    assert a.copy_to_host()[0] == 7


@pytest.mark.parametrize("carveout, error, text", [(150, ValueError, "must be between -1 and 100"),
                                                   (-2, ValueError, "must be between -1 and 100"),
                                                   ("InvalidOption", ValueError, "Invalid carveout value"),
                                                   (1.5, TypeError, "must be str or int")])
def test_an_invalid_shared_memory_carveout_is_refused_as_numba_cuda_refuses_it(carveout, error, text):
    with pytest.raises(error, match=text):
        metal.jit(shared_memory_carveout=carveout)(lambda a: None)


# -- kernel properties ----------------------------------------------------------------------------------------


def test_shared_memory_and_max_threads_are_the_pipelines_per_signature():
    @metal.jit
    def smem(ary):
        sm = metal.shared.array(10, dtype=ary.dtype)
        for j in range(10):
            sm[j] = j
        ary[0] = sm[9]

    smem[1, 1](np.zeros(10, np.float32))
    smem[1, 1](np.zeros(10, np.float64))
    f32, f64 = void(float32[::1]), void(float64[::1])
    # Metal allocates threadgroup memory in 16-byte granules: 40 and 80 declared bytes
    assert smem.get_shared_mem_per_block(f32) == 48
    assert smem.get_shared_mem_per_block(f64) == 80
    assert smem.get_shared_mem_per_block() == {f32.args: 48, f64.args: 80}
    limit = metal.get_current_device().info.max_threads_per_threadgroup
    threads = smem.get_max_threads_per_block()
    assert set(threads) == {f32.args, f64.args}
    assert all(isinstance(n, int) and 0 < n <= limit for n in threads.values())
    specialized = metal.jit("void(float32[::1])")(smem.py_func)
    assert specialized.get_shared_mem_per_block() == 48
    with pytest.raises(ValueError, match="no specialisation for"):   # compiles nothing new
        specialized.get_shared_mem_per_block(void(float64[::1]))
    assert list(specialized.overloads) == [f32.args]


@pytest.mark.parametrize("getter", ["get_regs_per_thread", "get_local_mem_per_thread", "get_const_mem_size"])
def test_figures_metal_does_not_report_raise_saying_so(getter):
    k = metal.jit("void(int32[::1])")(store_seven)
    with pytest.raises(UnsupportedFeatureError, match="Metal does not report"):
        getattr(k, getter)()


# -- _compile_for_args and launchconfig -----------------------------------------------------------------------


# sanitized run: every thread stores a[0]: idempotent (a DeviceRaceWarning by design)
@pytest.mark.filterwarnings("ignore::numba_metal.errors.DeviceRaceWarning")
def test_the_launch_configuration_is_known_while_a_launch_compiles_and_only_then():
    f = metal.jit(store)
    seen = {}
    original = f._compile_for_args

    def wrapped(*args):
        config = metal.launchconfig.ensure_current_launch_config()
        seen["config"], seen["args"] = config, config.args
        return original(*args)

    f._compile_for_args = wrapped
    a = metal.to_device(np.zeros(1, np.int32))
    f[2, 3](a, np.int32(1))
    assert seen["config"].dispatcher is f and seen["config"].griddim == (2, 1, 1)
    assert seen["args"][0] is a
    assert metal.launchconfig.current_launch_config() is None
    with pytest.raises(RuntimeError, match="No launch config set"):
        metal.launchconfig.ensure_current_launch_config()
    seen.clear()
    f[2, 3](a, np.int32(2))           # compiled already: _compile_for_args is not called
    assert not seen and a.copy_to_host()[0] == 2


def test_capture_compile_config_records_and_restores():
    f = metal.jit(store)
    with metal.launchconfig.capture_compile_config(f) as capture:
        f[1, 1](np.zeros(1, np.int32), np.int32(1))
    assert capture["config"].blockdim == (1, 1, 1)
    assert "_compile_for_args" not in vars(f)


def test_launch_arguments_are_per_thread():
    f = metal.jit(store)
    configured = f[1, 1]
    barrier = threading.Barrier(2)
    seen, errors = [], []
    original = f._compile_for_args

    def wrapped(*args):
        barrier.wait(timeout=10)
        seen.append(id(metal.launchconfig.ensure_current_launch_config().args[0]))
        return original(*args)

    f._compile_for_args = wrapped
    arrays = [np.zeros(1, np.int32), np.zeros(1, np.int32)]

    def launch(a):
        try:
            configured(a, np.int32(5))
        except BaseException as e:    # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=launch, args=(a,)) for a in arrays]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert not errors and set(seen) == {id(a) for a in arrays}
    assert configured.args is None
