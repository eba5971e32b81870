"""Regression: errors about a kernel's source must name its file:line and be NumbaMetalErrors.

Found by the bad-input corpus (tests/robustness/corpus.py):
- errors raised by the kernel API's typing (``metal.grid(4)``, ``metal.atomic.add`` on int64, a
  run-time shared-array shape...) carried no location at all;
- ``metal.no_such_function(...)`` and ``math.no_such_function(...)`` let Numba's AttributeError out;
- unsupported bytecode (``import`` in a kernel) named the function's first line, not the statement's.
"""

import inspect

import numpy as np
import pytest

from numba_metal import metal
from numba_metal.errors import KernelCompilationError, UnsupportedFeatureError


def _line_of(fn, text):
    lines, first = inspect.getsourcelines(fn)
    return first + next(i for i, ln in enumerate(lines) if text in ln)


def grid4(a):
    i = metal.grid(4)
    a[0] = i


def atomic64(a):
    metal.atomic.add(a, 0, 1)


def unknown_attr(a):
    a[0] = 1
    a[1] = metal.no_such_function(2)


def unknown_math(a):
    a[0] = math_module.no_such_function(2)  # noqa: F821 - bound below


def import_in_kernel(a):
    a[0] = 1
    import os  # noqa: F401
    a[1] = 2


math_module = __import__("math")
unknown_math.__globals__["math_module"] = math_module


@pytest.mark.parametrize("fn,text,dtype,cls", [
    (grid4, "metal.grid(4)", np.float32, UnsupportedFeatureError),
    (atomic64, "metal.atomic.add", np.int64, UnsupportedFeatureError),
    (unknown_attr, "no_such_function", np.float32, KernelCompilationError),
    (unknown_math, "no_such_function", np.float32, KernelCompilationError),
    (import_in_kernel, "import os", np.float32, UnsupportedFeatureError),
], ids=lambda x: getattr(x, "__name__", None) if callable(x) else None)
def test_error_names_the_statement_line(fn, text, dtype, cls):
    kern = metal.jit(fn)
    with pytest.raises(cls) as e:
        kern[1, 1](np.zeros(4, dtype))
    line = _line_of(fn, text)
    assert e.value.location == (__file__, line)
    assert f"{__file__}:{line}" in str(e.value)
