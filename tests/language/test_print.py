"""print() in kernels, as numba.cuda prints (integers as %lld/%llu, floats as %f, string constants, items
separated by spaces): the output is printed to sys.stdout by the wait that sees the work complete.

The first cases are numba.cuda's own print tests (numba/cuda/tests/cudapy/test_print.py), renamed.
"""

import os
import subprocess
import sys
import textwrap
import threading

import numpy as np
import pytest

from numba_metal import metal
from numba_metal.errors import UnsupportedFeatureError

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def run_child(code: str, **env) -> subprocess.CompletedProcess:
    full = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""), **env)
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          timeout=300, env=full, cwd=ROOT)


@metal.jit
def cuhello():
    i = metal.grid(1)
    print(i, 999)
    print(-42)


def test_numba_cuda_cuhello(capsys):
    cuhello[2, 3]()
    metal.synchronize()
    lines = capsys.readouterr().out.splitlines()
    # The order between threads is unspecified; each print() is one line.
    assert sorted(lines) == ["-42"] * 6 + [f"{i} 999" for i in range(6)]


@metal.jit
def printfloat():
    i = metal.grid(1)
    print(i, 23, 34.75, 321)


def test_numba_cuda_printfloat_uses_percent_f(capsys):
    printfloat[1, 1]()
    metal.synchronize()
    assert capsys.readouterr().out == "0 23 34.750000 321\n"


@metal.jit
def printstring():
    i = metal.grid(1)
    print(i, "hop!", 999)


@metal.jit
def printempty():
    print()


def test_numba_cuda_printstring_and_printempty(capsys):
    printstring[1, 3]()
    printempty[1, 1]()
    metal.synchronize()
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert sorted(lines[:3]) == [f"{i} hop! 999" for i in range(3)]
    assert out.endswith("999\n\n")


@metal.jit
def print_kinds(a, u):
    x = a[0]
    print("tuple", (x, np.float32(0.5), x > 0), (7,), True, u, np.int8(-5), np.float16(1.5))


def test_tuples_booleans_unsigned_and_narrow_types(capsys):
    print_kinds[1, 1](np.array([-3], np.int32), np.uint64(2**64 - 1))
    # The launch took a NumPy array: it waited, so the output is already there.
    assert capsys.readouterr().out == ("tuple (-3, 0.500000, False) (7,) True 18446744073709551615 -5 "
                                       "1.500000\n")


@metal.jit
def tagged(tag, out):
    print("kernel", tag)
    out[0] = tag


@metal.jit
def other_kernel(out):
    print("other", out[0])


def test_output_appears_at_the_wait_in_launch_order(capsys):
    out = metal.device_array(1, np.int64)
    stream = metal.stream()
    for tag in (1, 2, 1, 3):
        tagged[1, 1, stream](tag, out)
        other_kernel[1, 1, stream](out)     # another kernel in between: one buffer per stream keeps the order
    assert capsys.readouterr().out == ""     # nothing is printed before a wait
    stream.synchronize()
    assert capsys.readouterr().out == ("kernel 1\nother 1\nkernel 2\nother 2\nkernel 1\nother 1\nkernel 3\n"
                                       "other 3\n")
    tagged[1, 1](4, out)
    out.copy_to_host()                         # a copy waits too
    assert capsys.readouterr().out == "kernel 4\n"


@metal.jit(device=True)
def shout(x):
    print("device function sees", x)
    return x + 1


@metal.jit
def calls_shout(out):
    out[0] = shout(41)


def test_print_in_a_device_function(capsys):
    out = np.zeros(1, np.int64)
    calls_shout[1, 1](out)
    assert out[0] == 42
    assert capsys.readouterr().out == "device function sees 41\n"


def test_each_thread_prints_at_its_own_wait(capsys):
    out = metal.device_array(1, np.int64)
    done = threading.Event()
    seen = {}

    def other():
        tagged[1, 1](7, out)
        done.set()
        go.wait()
        metal.synchronize()

    go = threading.Event()
    t = threading.Thread(target=other)
    t.start()
    done.wait()
    metal.synchronize()                          # the main thread's wait: not its output
    seen["main"] = capsys.readouterr().out
    go.set()
    t.join()
    seen["other"] = capsys.readouterr().out
    assert seen == {"main": "", "other": "kernel 7\n"}


@metal.jit
def print_array(a):
    print(a)


def test_printing_an_array_is_refused_with_the_line():
    with pytest.raises(UnsupportedFeatureError, match=r"print\(\) of array") as e:
        print_array[1, 1](np.zeros(2, np.float32))
    assert e.value.location[1] == print_array.py_func.__code__.co_firstlineno + 2   # after the decorator


def test_a_full_buffer_keeps_whole_records_and_says_how_many_were_lost():
    code = """
        import warnings
        from numba_metal import metal

        @metal.jit
        def many():
            i = metal.grid(1)
            print("thread", i, 1.25)

        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            many[4, 32]()
            metal.synchronize()
            many[1, 2]()
            metal.synchronize()
        print("WARN", [str(x.message) for x in w if x.category.__name__ == "PrintOutputTruncated"])
    """
    # 256 bytes: 4 header words, then records of 2 + 2 * 2 words: 10 records fit.
    r = run_child(code, NUMBA_METAL_PRINT_BUFFER_BYTES="256", NUMBA_METAL_DEVICE="cpu")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    records = [line for line in lines if line.startswith("thread")]
    assert len(records) == 10 + 2   # the first launch keeps 10, the buffer is empty again for the second
    assert all(line.endswith(" 1.250000") for line in records)
    assert lines[-1] == "WARN ['118 print() call(s) of kernels were lost: their print buffer (256 bytes) was full; " \
                        "wait (synchronize) more often or set NUMBA_METAL_PRINT_BUFFER_BYTES to a larger size']"


def test_print_on_the_simulated_metal_device():
    code = """
        import numpy as np
        from numba_metal import metal

        @metal.jit
        def hello(a):
            i = metal.grid(1)
            print("sim", i, a[i], (a[i] > 1.0,))

        assert metal.get_device_info().kind == "metal-sim"
        d = metal.to_device(np.array([0.5, 1.5, 2.5], np.float32))
        hello[1, 3](d)
        metal.synchronize()
    """
    r = run_child(code, NUMBA_METAL_DEVICE="metal-sim")
    assert r.returncode == 0, r.stderr
    assert sorted(r.stdout.splitlines()) == ["sim 0 0.500000 (False,)", "sim 1 1.500000 (True,)",
                                             "sim 2 2.500000 (True,)"]


def test_a_bad_print_buffer_size_warns_and_the_default_size_is_used():
    r = run_child("""
        import warnings
        from numba_metal import metal
        @metal.jit
        def p():
            print(1)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            p[1, 1]()
            metal.synchronize()
        print(*(f"{w.category.__name__}: {w.message}" for w in caught))
    """, NUMBA_METAL_PRINT_BUFFER_BYTES="lots")
    assert r.stdout.splitlines() == ["1", "NumbaMetalWarning: NUMBA_METAL_PRINT_BUFFER_BYTES='lots' is not an "
                                          "integer from 64 to 2147483648; using 1048576 (the default)"], r.stderr



@metal.jit
def print_float64(a, out):
    x = a[0] / 3.0
    out[0] = x
    print(x, a[1], (a[0], np.float32(a[0])))


def test_float64_prints_exactly_with_percent_f(capsys):
    # numba.cuda passes every float to printf as a double with %f (printimpl.py): a float64 kernel value
    # prints its own digits, not those of a float32 rounding of it.
    a = np.array([1e6 + 2.0**-20, -2.0**-30])
    out = np.zeros(1)
    print_float64[1, 1](a, out)
    assert out[0] == a[0] / 3.0
    expected = "%f %f (%f, %f)\n" % (a[0] / 3.0, a[1], a[0], np.float32(a[0]))
    assert capsys.readouterr().out == expected
    assert expected.startswith("333333.333334 -0.000000 (1000000.000001, 1000000.000000)")


@metal.jit
def print_complex(a):
    print(a[0])


def test_printing_a_complex_value_is_refused_as_in_numba_cuda():
    with pytest.raises(UnsupportedFeatureError, match=r"print\(\) of complex64.*\.real and \.imag"):
        print_complex[1, 1](np.zeros(1, np.complex64))


@metal.jit
def print_dim3():
    print(metal.threadIdx, metal.blockDim)


def test_thread_positions_print_as_numba_cuda_prints_dim3(capsys):
    # numba.cuda's printimpl prints a Dim3 as "(%d, %d, %d)".
    print_dim3[(1, 1), (2, 1, 1)]()
    metal.synchronize()
    assert sorted(capsys.readouterr().out.splitlines()) == ["(0, 0, 0) (2, 1, 1)", "(1, 0, 0) (2, 1, 1)"]
