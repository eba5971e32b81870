"""docs/porting-from-numba-cuda.md lists the changes a port needs beyond renaming; the errors it quotes are
the ones a ported program meets (issue 24, item 14)."""
import numba
import numpy as np
import pytest

import doc_pages
from numba_metal import metal
from numba_metal.errors import KernelCompilationError

PAGE = "docs/porting-from-numba-cuda.md"


def _section() -> str:
    text = doc_pages.read(PAGE)
    start = text.index("## Changes a port needs beyond renaming")
    return text[start:text.index("\n## ", start + 1)]


def test_the_page_lists_each_change_a_port_meets():
    section = _section()
    for topic in ("from numba import types", "numba_metal.random", "@metal.jit(device=True)", "this_grid().sync()",
                  "np.sin(x[i])", "np.float32(0.5)", "first kernel"):
        assert topic in section, f"{PAGE} no longer says {topic!r}"


@numba.njit
def _helper(x):
    return x * 2


def test_the_quoted_errors_are_the_ones_a_port_meets():
    section = " ".join(_section().split())

    @metal.jit
    def calls_njit(a):
        i = metal.grid(1)
        a[i] = _helper(a[i])

    @metal.jit(device=True)
    def apply(f, x):
        return f(x)

    @metal.jit
    def captures_a_run_time_value(a):
        i = metal.grid(1)
        t = a[i]

        def f(x):
            return x + t
        a[i] = f(1.0) + apply(f, 1.0)   # called: inlined; passed on: refused

    @metal.jit
    def calls_numpy(a):
        i = metal.grid(1)
        a[i] = np.sin(a[i])

    # Numba @jit helpers compile as device functions now (issue 27 item 4): the page no longer quotes a refusal.
    metal.compile_msl(calls_njit, "void(float32[:])")
    assert "calling helper is not supported" not in section
    with pytest.raises(KernelCompilationError) as capture_error:
        metal.compile_msl(captures_a_run_time_value, "void(float32[:])")
    quoted = "Cannot capture the non-constant value associated with variable 't' in a function that may escape"
    assert quoted in str(capture_error.value) and quoted in section
    # NumPy's ufuncs compile now (issue 27 item 2): the page no longer quotes Numba's refusal of them.
    assert "sin(" in metal.compile_msl(calls_numpy, "void(float32[:])")
    assert "Use of unsupported NumPy function 'numpy.sin'" not in section
