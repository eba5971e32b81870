"""Regression: an exception other than Numba's own raised inside a typing template escaped
numba-metal (``abs()`` with no argument: a ValueError from Numba's timedelta abs template). It is
now a KernelCompilationError naming the statement. Found by the compiler fuzzer (seed 7000102)."""

import inspect

import numpy as np
import pytest

from numba_metal import metal
from numba_metal.errors import KernelCompilationError


def abs_without_argument(a):
    a[0] = 1
    a[1] = abs()


def test_template_crash_becomes_a_located_compile_error():
    with pytest.raises(KernelCompilationError, match="ValueError") as e:
        metal.jit(abs_without_argument)[1, 1](np.zeros(2, np.float32))
    lines, first = inspect.getsourcelines(abs_without_argument)
    assert e.value.location == (__file__, first + 2)
