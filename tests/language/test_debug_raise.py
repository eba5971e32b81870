"""`raise` and `assert` in kernels, as numba.cuda has them: with debug=True (and opt=False) the launch waits
for the kernel and raises the exception's class and arguments, naming the kernel, the thread and the Python
line in numba-metal's words and in numba.cuda's ("In function 'f', file F, line L, tid=[..] ctaid=[..]");
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
    with pytest.raises(ValueError) as e:
        user_raise[1, 1](True)          # as numba.cuda, a debug=True launch raises what its kernel raised
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
    with pytest.raises(CustomError) as e:
        raises_with_message[2, 4](out, 6)
    line = line_of(raises_with_message.py_func, "raise CustomError")
    # numba-metal's file:line, kernel and grid position, then numba.cuda's words (tid and ctaid listed z, y, x)
    assert e.value.args == (f"{__file__}:{line}: kernel raises_with_message(), thread (6, 0, 0): In function "
                            f"'raises_with_message', file {__file__}, line {line}, tid=[0, 0, 2] ctaid=[0, 0, 1]: "
                            "thread hit n", 42)
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
    with pytest.raises(AssertionError, match=r"kernel asserts\(\), thread \(2, 0, 0\): In function 'asserts', "
                                             r".*tid=\[0, 0, 2\] ctaid=\[0, 0, 0\]: negative input$"):
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
    with pytest.raises(ValueError, match="In function 'checked_sqrt', .*: Device Function Error") as e:
        calls_device_function[1, 3](np.array([4, -1, 2], np.float32), out)
    assert e.value.location[1] == line_of(checked_sqrt.py_func, "raise ValueError")
    # Thread 1 left the kernel at the raise: its write never happened.
    np.testing.assert_array_equal(out, [3, -1, 2])


@metal.jit(debug=True)
def raises_always(out):
    out[0] = 1
    raise IndexError


def test_a_launch_on_a_stream_raises_its_failure_once():
    out = metal.device_array(1, np.int32)
    s = metal.stream()
    with pytest.raises(IndexError):
        raises_always[1, 1, s](out)
    s.synchronize()       # reported once
    ev = metal.event()
    ev.record(s)
    ev.synchronize()
    metal.synchronize()


@metal.jit(debug=True)
def out_of_bounds(a):
    a[metal.grid(1) + 10] = 1


def test_the_launch_raises_a_bounds_violation():
    a = metal.device_array(4, np.int32)
    with pytest.raises(KernelBoundsError, match="index 10 is out of bounds"):
        out_of_bounds[1, 1](a)
    metal.synchronize()   # reported once


def test_failures_are_reported_to_the_thread_that_launched_the_kernel():
    out = metal.device_array(1, np.int32)
    launched, go = threading.Event(), threading.Event()
    seen = {}

    def other():
        try:
            raises_always[1, 1](out)
        except IndexError as e:
            seen["other"] = e
        launched.set()
        go.wait()

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
        try:
            bounds_per_thread[1, 1](a, k)
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
        try:
            k[1, 3](d)
        except AssertionError as e:
            print("RAISED", e)
        print(d.copy_to_host().tolist())
    """
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""),
               NUMBA_METAL_DEVICE="metal-sim")
    r = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                       timeout=300, env=env, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    assert "RAISED <string>:8: kernel k(), thread (1, 0, 0): In function 'k', file <string>, line 8, " \
           "tid=[0, 0, 1] ctaid=[0, 0, 0]: two" in r.stdout
    assert "[0.0, 2.0, 0.0]" in r.stdout


@pytest.mark.unsanitized("launches from the disk cache, which a sanitizing kernel never enters")
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
        try:
            k[1, 2](a)
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
        assert lines[2] == ("RAISED kernel k(), thread (1, 0, 0): In function 'k', file " + str(src) +
                            ", line 11, tid=[0, 0, 1] ctaid=[0, 0, 0]: negative (3,)")
    assert runs[0].stdout.splitlines()[3] == "numba imported: True"
    assert runs[1].stdout.splitlines()[3] == "numba imported: False"   # the second run came from the cache


@metal.jit(debug=True)
def prints_then_raises(out):
    print("from a thread that exits")
    out[0] = 1
    raise KeyError("left behind")


def test_a_debug_launch_prints_and_raises_in_the_thread_that_launched_it(capsys):
    out = metal.device_array(1, np.int32)
    seen = []

    def launch():
        try:
            prints_then_raises[1, 1](out)
        except KeyError as e:
            seen.append(e)

    t = threading.Thread(target=launch)
    t.start()
    t.join()
    assert len(seen) == 1 and "left behind" in str(seen[0])
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


@pytest.mark.parametrize("op, dtype, message", [
    ("/", np.float64, "division by zero"),
    ("/", np.int32, "division by zero"),
    ("//", np.int64, "integer division by zero"),
    ("%", np.uint8, "integer modulo by zero"),
    ("//", np.float32, "division by zero"),
    ("%", np.float32, "modulo by zero"),
    ("/", np.complex64, "complex division by zero"),
])
def test_zero_divisors_raise_zero_division_error_with_numbas_messages(op, dtype, message):
    # numba.cuda's test_zero_division_error_in_debug: debug=True uses Python's error model; execution stops.
    ns = {}
    exec(f"def f(r, x, y):\n    r[0] = y[0] {op} x[0]\n    r[1] = y[0]\n", ns)
    f = metal.jit(debug=True, opt=False)(ns["f"])
    r, x, y = np.zeros(2, dtype), np.zeros(1, dtype), np.ones(1, dtype)
    with pytest.raises(ZeroDivisionError, match=f"tid=\\[0, 0, 0\\] ctaid=\\[0, 0, 0\\]: {message}$"):
        f[1, 1](r, x, y)
    np.testing.assert_array_equal(r, [0, 0])          # the thread stopped at the division
    x[0] = 2
    f[1, 1](r, x, y)                                   # a non-zero divisor computes as before
    assert r[1] == 1 and r[0] == np.array([eval(f"y[0] {op} x[0]")]).astype(dtype)[0]
    without_debug = metal.jit(ns["f"])                 # and without debug nothing is checked
    x[0] = 0
    without_debug[1, 1](r, x, y)
    assert r[1] == 1


def test_a_tuple_index_out_of_range_raises_index_error():
    # numba.cuda's test_exception: a run-time tuple index out of range raises under debug=True.
    def foo(ary):
        x = metal.threadIdx.x
        if x == 2:
            ary.shape[-x]

    metal.jit(foo)[1, 3](np.array([0, 1]))             # unchecked without debug
    with pytest.raises(IndexError, match="tuple index out of range$") as e:
        metal.jit(debug=True, opt=False)(foo)[1, 3](np.array([0, 1]))
    assert isinstance(e.value, KernelRaisedError) and "tid=[0, 0, 2]" in str(e.value)
    metal.jit(debug=True, opt=False)(foo)[1, 3](np.zeros((2, 2)))      # shape[-2] of a 2-d array is in range
