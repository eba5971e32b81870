"""Inspection (MSL, types, NUMBA_METAL_DUMP_MSL), debug=True bounds checks, and error messages that
name the Python line."""

import io
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from numba_metal import metal
from numba_metal.errors import (KernelCompilationError, MetalRuntimeError, NumbaMetalError,
                                UnsupportedFeatureError)


@metal.jit
def saxpy(a, x, out):
    i = metal.grid(1)
    if i < out.size:
        out[i] = a * x[i]


def test_inspect_msl_and_inspect_types():
    x = np.arange(4, dtype=np.float32)
    saxpy[1, 4](2.0, x, np.zeros(4, np.float32))
    msl = saxpy.inspect_msl()
    (sig, text), = msl.items()
    assert "kernel void" in text and "#include <metal_stdlib>" in text
    assert saxpy.inspect_msl(sig) == text
    buf = io.StringIO()
    saxpy.inspect_types(file=buf)
    out = buf.getvalue()
    assert "saxpy (float32, array(float32, 1d, C, index32), array(float32, 1d, C, index32))" in out   # small arrays
    assert ":: int64" in out and ":: float32" in out


def test_dump_msl_environment_variable(tmp_path):
    script = tmp_path / "k.py"
    script.write_text(textwrap.dedent("""
        import numpy as np
        from numba_metal import metal
        @metal.jit
        def k(a):
            a[0] = 1
        k[1, 1](np.zeros(1, np.int32))
    """))
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = dict(os.environ, NUMBA_METAL_DUMP_MSL="1", NUMBA_METAL_DEVICE="cpu",
               PYTHONPATH=root + os.pathsep + os.environ.get("PYTHONPATH", ""))
    res = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    assert "// ---- numba-metal generated MSL: k" in res.stdout and "kernel void" in res.stdout


@metal.jit(debug=True)
def checked(a, idx, out):
    i = metal.grid(1)
    if i < idx.size:
        out[i] = a[idx[i]]


def test_debug_bounds_check_reports_kernel_array_index_thread_and_line():
    a = metal.to_device(np.arange(10, dtype=np.float32))
    idx = metal.to_device(np.array([0, 3, 12, 9], dtype=np.int64))
    out = metal.device_array(4, np.float32)
    with pytest.raises(MetalRuntimeError) as info:
        checked[1, 4](a, idx, out)   # a debug=True launch waits for its kernel, as numba.cuda's
    err = info.value
    assert isinstance(err, IndexError)
    msg = str(err)
    assert "index 12 is out of bounds for axis 0 with size 10" in msg
    assert "array 'a'" in msg and "checked()" in msg and "thread (2, 0, 0)" in msg
    assert err.location[0].endswith("test_inspection_debug_errors.py")
    assert err.location[1] == _line_of(checked.py_func, "out[i] = a[idx[i]]")
    # The fault is reported once; the process and the kernel go on working.
    metal.synchronize()
    idx.copy_to_device(np.array([0, 3, 5, 9], dtype=np.int64))
    checked[1, 4](a, idx, out)
    np.testing.assert_array_equal(out.copy_to_host(), [0, 3, 5, 9])


def test_negative_indices_within_bounds_are_fine_in_debug_mode():
    a = metal.to_device(np.arange(10, dtype=np.float32))
    idx = metal.to_device(np.array([-1, -10], dtype=np.int64))
    out = metal.device_array(2, np.float32)
    checked[1, 2](a, idx, out)
    np.testing.assert_array_equal(out.copy_to_host(), [9, 0])
    idx.copy_to_device(np.array([-11, 0], dtype=np.int64))
    with pytest.raises(IndexError, match="index -1 is out of bounds"):
        checked[1, 2](a, idx, out)


def _line_of(fn, needle):
    lines, start = __import__("inspect").getsourcelines(fn)
    for k, line in enumerate(lines):
        if needle in line:
            return start + k
    raise AssertionError(needle)


def test_unsupported_construct_names_the_python_line():
    def uses_list(a):
        i = metal.grid(1)
        xs = [1, 2, 3]
        a[i] = xs[0]

    with pytest.raises(UnsupportedFeatureError) as info:
        metal.jit(uses_list)[1, 1](np.zeros(1, np.int64))
    assert "lists are not supported" in str(info.value)
    assert info.value.location == (__file__, _line_of(uses_list, "xs = [1, 2, 3]"))


def test_typing_errors_keep_numbas_explanation_and_line():
    def bad(a):
        a[0] = a + "x"

    with pytest.raises(KernelCompilationError) as info:
        metal.jit(bad)[1, 1](np.zeros(1, np.int64))
    text = str(info.value)
    assert "type inference failed for bad" in text and "No implementation of function" in text
    assert "\x1b[" not in text                      # no terminal escape codes
    assert info.value.location[1] == _line_of(bad, 'a + "x"')


def test_unknown_function_and_recursion_are_clear_errors():
    def helper(x):
        return x

    def calls_plain_function(a):
        a[0] = helper(1)

    with pytest.raises(UnsupportedFeatureError, match=r"@metal.jit\(device=True\)"):
        metal.jit(calls_plain_function)[1, 1](np.zeros(1, np.int64))

    @metal.jit(device=True)
    def fact(n):
        return 1 if n <= 1 else n * fact(n - 1)

    def uses_fact(a):
        a[0] = fact(5)

    with pytest.raises(UnsupportedFeatureError, match="recursion is not supported"):
        metal.jit(uses_fact)[1, 1](np.zeros(1, np.int64))


def test_kernel_returning_a_value_is_refused():
    def returns(a):
        return a[0]

    with pytest.raises(UnsupportedFeatureError, match="cannot return a value"):
        metal.jit(returns)[1, 1](np.zeros(1, np.int64))


def test_process_stays_usable_after_errors():
    for _ in range(3):
        with pytest.raises(NumbaMetalError):
            metal.jit(lambda a: a.append(1))[1, 1](np.zeros(1))
    out = np.zeros(4, np.float32)
    saxpy[1, 4](3.0, np.ones(4, np.float32), out)
    np.testing.assert_array_equal(out, 3.0)
