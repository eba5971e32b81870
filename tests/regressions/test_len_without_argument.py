"""Regression: ``len()`` (or ``len(a, b)``) in a kernel let a ValueError out of Numba's constant
rewriting (``rewrite_tuple_len``) instead of a numba-metal error naming the line. Found by the
compiler fuzzer (tests/robustness/test_compiler_fuzz.py, seed 7000010)."""

import inspect

import numpy as np
import pytest

from numba_metal import metal
from numba_metal.errors import KernelCompilationError


def no_arg(a):
    a[0] = 1
    a[1] = len()


def two_args(a):
    a[0] = len(a, a)


@pytest.mark.parametrize("fn,given", [(no_arg, 0), (two_args, 2)])
def test_len_with_the_wrong_number_of_arguments_is_a_located_compile_error(fn, given):
    with pytest.raises(KernelCompilationError, match=rf"len\(\) takes exactly one argument \({given} given\)") as e:
        metal.jit(fn)[1, 1](np.zeros(2, np.float32))
    lines, first = inspect.getsourcelines(fn)
    line = first + next(i for i, ln in enumerate(lines) if "len(" in ln)
    assert e.value.location == (__file__, line)
