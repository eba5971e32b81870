"""`raise` and `assert` in kernels, as numba.cuda has them: with debug=True (and opt=False) the exception's
class and arguments reach the host at the next wait, naming the kernel, the thread and the Python line;
without debug a raise stops the thread and reports nothing, and asserts are compiled out.

numba.cuda's own cases (numba/cuda/tests/cudapy/test_exception.py: test_user_raise,
test_raise_in_device_function) are kept renamed.

PYTEST_DONT_REWRITE: the kernels' `assert` statements must stay Python's (pytest rewrites asserts into
code no kernel can run).
"""

import inspect
import os
import subprocess
import sys
import textwrap
import threading

import numpy as np
import pytest

from numba_metal import metal
from numba_metal.errors import KernelBoundsError, KernelRaisedError, NumbaMetalError, UnsupportedFeatureError

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


class CustomError(Exception):
    pass


def line_of(fn, needle):
    lines, start = inspect.getsourcelines(fn)
    for k, line in enumerate(lines):
        if needle in line:
            return start + k
    raise AssertionError(needle)


@metal.jit(debug=True, opt=False)
def user_raise(do_raise):
    if do_raise:
        raise ValueError


def test_numba_cuda_user_raise():
    user_raise[1, 1](False)
    metal.synchronize()
    user_raise[1, 1](True)
    with pytest.raises(ValueError) as e:
        metal.synchronize()
    assert isinstance(e.value, KernelRaisedError)       # and a NumbaMetalError
    assert e.value.location == (__file__, line_of(user_raise.py_func, "raise ValueError"))


@metal.jit(debug=True, opt=False)
def raises_with_message(out, n):
    i = metal.grid(1)
    if i == n:
        raise CustomError("thread hit n", 42)
    out[i] = 1


def test_class_arguments_kernel_thread_and_line_reach_the_host():
    out = metal.to_device(np.zeros(8, np.int32))
    raises_with_message[2, 4](out, 6)
    with pytest.raises(CustomError) as e:
        metal.synchronize()
    line = line_of(raises_with_message.py_func, "raise CustomError")
    assert e.value.args == (f"{__file__}:{line}: kernel raises_with_message(), thread (6, 0, 0), in "
                            "raises_with_message(): thread hit n", 42)
    assert isinstance(e.value, NumbaMetalError)
    # The raising thread stopped before its write; the others went on.
    np.testing.assert_array_equal(out.copy_to_host(), [1, 1, 1, 1, 1, 1, 0, 1])
    # Reported once; the kernel runs again normally.
    raises_with_message[2, 4](out, 100)
    metal.synchronize()


@metal.jit(debug=True, opt=False)
def asserts(a, out):
    i = metal.grid(1)
    assert a[i] >= 0, "negative input"
    assert a[i] < 100
    out[i] = a[i] * 2


@metal.jit
def asserts_no_debug(a, out):
    i = metal.grid(1)
    assert a[i] >= 0, "negative input"
    out[i] = a[i] * 2


def test_assert_with_debug_raises_assertion_error():
    out = np.zeros(4, np.int64)
    asserts[1, 4](np.array([1, 2, 3, 4]), out)
    np.testing.assert_array_equal(out, [2, 4, 6, 8])
    with pytest.raises(AssertionError, match=r"kernel asserts\(\), thread \(2, 0, 0\), in asserts\(\): "
                                             r"negative input$"):
        asserts[1, 4](np.array([1, 2, -3, 4]), out)
    with pytest.raises(AssertionError) as e:
        asserts[1, 4](np.array([1, 2, 3, 400]), out)
    assert e.value.location[1] == line_of(asserts.py_func, "assert a[i] < 100")


def test_without_debug_asserts_are_compiled_out():
    out = np.zeros(3, np.int64)
    asserts_no_debug[1, 3](np.array([1, -2, 3]), out)
    np.testing.assert_array_equal(out, [2, -4, 6])
    assert "nm_raise" not in asserts_no_debug.inspect_msl()[next(iter(asserts_no_debug.inspect_msl()))]


@metal.jit
def raise_no_debug(out, n):
    i = metal.grid(1)
    if i == n:
        raise ValueError("not reported")
    out[i] = 1


def test_without_debug_a_raise_stops_the_thread_and_reports_nothing():
    out = np.zeros(4, np.int32)
    raise_no_debug[1, 4](out, 2)
    metal.synchronize()
    np.testing.assert_array_equal(out, [1, 1, 0, 1])


@metal.jit(device=True)
def checked_sqrt(x):
    if x < 0:
        raise ValueError("Device Function Error")
    return x * 0.5


@metal.jit(debug=True)
def calls_device_function(a, out):
    i = metal.grid(1)
    y = checked_sqrt(a[i])
    out[i] = y + 1


def test_raise_in_device_function_stops_the_caller():
    out = np.full(3, -1.0, np.float32)
    with pytest.raises(ValueError, match="in checked_sqrt\\(\\): Device Function Error") as e:
        calls_device_function[1, 3](np.array([4, -1, 2], np.float32), out)
    assert e.value.location[1] == line_of(checked_sqrt.py_func, "raise ValueError")
    # Thread 1 left the kernel at the raise: its write never happened.
    np.testing.assert_array_equal(out, [3, -1, 2])


@metal.jit(debug=True)
def raises_always(out):
    out[0] = 1
    raise IndexError


def test_event_and_stream_synchronize_raise_a_recorded_failure():
    out = metal.device_array(1, np.int32)
    s = metal.stream()
    raises_always[1, 1, s](out)
    with pytest.raises(IndexError):
        s.synchronize()
    raises_always[1, 1, s](out)
    ev = metal.event()
    ev.record(s)
    with pytest.raises(IndexError):
        ev.synchronize()
    metal.synchronize()   # reported once


@metal.jit(debug=True)
def out_of_bounds(a):
    a[metal.grid(1) + 10] = 1


def test_event_synchronize_raises_a_bounds_violation():
    a = metal.device_array(4, np.int32)
    out_of_bounds[1, 1](a)
    ev = metal.event()
    ev.record()
    with pytest.raises(KernelBoundsError, match="index 10 is out of bounds"):
        ev.synchronize()


def test_failures_are_reported_to_the_thread_that_launched_the_kernel():
    out = metal.device_array(1, np.int32)
    launched, go = threading.Event(), threading.Event()
    seen = {}

    def other():
        raises_always[1, 1](out)
        launched.set()
        go.wait()
        try:
            metal.synchronize()
        except IndexError as e:
            seen["other"] = e

    t = threading.Thread(target=other)
    t.start()
    launched.wait()
    metal.synchronize()           # the main thread launched nothing that failed
    go.set()
    t.join()
    assert isinstance(seen.get("other"), KernelRaisedError)


@metal.jit(debug=True)
def bounds_per_thread(a, k):
    a[k] = 1


def test_bounds_records_are_per_launching_thread():
    a = metal.device_array(4, np.int32)
    errors = []

    def launch(k):
        bounds_per_thread[1, 1](a, k)
        try:
            metal.synchronize()
        except KernelBoundsError as e:
            errors.append(str(e))

    threads = [threading.Thread(target=launch, args=(k,)) for k in (0, 9, 1, 2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(errors) == 1 and "index 9 is out of bounds" in errors[0]


def test_a_message_computed_at_run_time_is_refused():
    def k(a):
        i = metal.grid(1)
        if i > 3:
            raise ValueError(i)
        a[i] = 1

    with pytest.raises(UnsupportedFeatureError, match="constant arguments") as e:
        metal.jit(debug=True)(k)[1, 1](np.zeros(1, np.int64))
    assert e.value.location == (__file__, line_of(k, "raise ValueError(i)"))


def test_raise_on_the_simulated_metal_device():
    code = """
        import numpy as np
        from numba_metal import metal

        @metal.jit(debug=True, opt=False)
        def k(a):
            i = metal.grid(1)
            assert a[i] != 2.0, "two"
            a[i] = 0

        assert metal.get_device_info().kind == "metal-sim"
        d = metal.to_device(np.array([1, 2, 3], np.float32))
        k[1, 3](d)
        try:
            metal.synchronize()
        except AssertionError as e:
            print("RAISED", e)
        print(d.copy_to_host().tolist())
    """
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""),
               NUMBA_METAL_DEVICE="metal-sim")
    r = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                       timeout=300, env=env, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    assert "RAISED <string>:8: kernel k(), thread (1, 0, 0), in k(): two" in r.stdout
    assert "[0.0, 2.0, 0.0]" in r.stdout


def test_print_and_raise_work_from_the_disk_cache_without_numba(tmp_path):
    src = tmp_path / "cached_kernel.py"
    src.write_text(textwrap.dedent("""
        import sys
        import numpy as np
        from numba_metal import metal

        @metal.jit(cache=True, debug=True)
        def k(a):
            i = metal.grid(1)
            print("item", i, a[i])
            if a[i] < 0:
                raise ValueError("negative", 3)

        a = metal.to_device(np.array([1, -2], np.int32))
        k[1, 2](a)
        try:
            metal.synchronize()
        except ValueError as e:
            print("RAISED", e.args[0].split(": ", 1)[1], e.args[1:])
        print("numba imported:", "numba" in sys.modules)
    """))
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""),
               NUMBA_METAL_CACHE_DIR=str(tmp_path / "cache"), NUMBA_METAL_DEVICE="cpu")
    runs = [subprocess.run([sys.executable, str(src)], capture_output=True, text=True, timeout=300, env=env,
                           cwd=str(tmp_path)) for _ in range(2)]
    for r in runs:
        assert r.returncode == 0, r.stderr
        lines = r.stdout.splitlines()
        assert sorted(lines[:2]) == ["item 0 1", "item 1 -2"]
        assert lines[2] == "RAISED kernel k(), thread (1, 0, 0), in k(): negative (3,)"
    assert runs[0].stdout.splitlines()[3] == "numba imported: True"
    assert runs[1].stdout.splitlines()[3] == "numba imported: False"   # the second run came from the cache


@metal.jit(debug=True)
def prints_then_raises(out):
    print("from a thread that exits")
    out[0] = 1
    raise KeyError("left behind")


def test_what_an_exited_thread_left_goes_to_the_next_wait_of_any_thread(capsys):
    out = metal.device_array(1, np.int32)
    t = threading.Thread(target=lambda: prints_then_raises[1, 1](out))
    t.start()
    t.join()
    with pytest.raises(KeyError, match="left behind"):
        metal.synchronize()
    assert capsys.readouterr().out == "from a thread that exits\n"
    metal.synchronize()


def test_the_abi_keeps_print_formats_and_raise_sites_through_the_disk_cache_form():
    import json

    from numba.core import types

    from numba_metal.compiler import abi, kernel_io
    from numba_metal.compiler.driver import compile_kernel

    compiled = compile_kernel(raises_with_message.py_func, (types.int32[::1], types.int64), debug=True)
    kabi = compiled.abi
    assert kabi.raise_sites == (kernel_io.RaiseSite(__name__, "CustomError", ("thread hit n", 42), __file__,
                                                    line_of(raises_with_message.py_func, "raise CustomError"),
                                                    "raises_with_message"),)
    assert abi.KernelABI.from_json(json.loads(json.dumps(kabi.to_json()))) == kabi
    printing = compile_kernel(prints_then_raises.py_func, (types.int32[::1],), debug=False).abi
    assert printing.print_slot is not None and printing.raise_sites == ()
    assert [kernel_io.pieces_of(d) for d in printing.print_formats] == [[("s", "from a thread that exits\n")]]
    assert abi.KernelABI.from_json(json.loads(json.dumps(printing.to_json()))) == printing
