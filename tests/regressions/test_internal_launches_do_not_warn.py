"""Regression: numba-metal's own launches warned the user. ``metal.reduce``'s second pass (one threadgroup),
``forall``'s grid for a small task count and the ufuncs' grids raised numba.cuda's low-occupancy warning
about grids the user never chose, attributed to the user's line; a process whose kernels all came from
the disk cache warned with a second class (``PerformanceWarning``) that numba.cuda's filters do not name.

Only the user's own launch configurations warn, always with Numba's ``NumbaPerformanceWarning``.
"""

import warnings

import numpy as np
import pytest
from numba.core.errors import NumbaPerformanceWarning

from numba_metal import metal


@pytest.fixture(autouse=True)
def performance_warnings_on(monkeypatch):
    monkeypatch.setenv("NUMBA_METAL_LOW_OCCUPANCY_WARNINGS", "1")   # the test suite turns them off
    monkeypatch.setenv("NUMBA_METAL_WARN_ON_IMPLICIT_COPY", "1")


@metal.jit
def add_one(a):
    i = metal.grid(1)
    if i < a.size:
        a[i] += 1


@metal.vectorize(["float32(float32)"], target="metal")
def halve(x):
    return x / 2


INTERNAL = {
    "metal.reduce (both passes)": lambda: metal.reduce(lambda a, b: a + b)(np.arange(100_000, dtype=np.float32)),
    "metal.reduce of a few elements": lambda: metal.reduce(lambda a, b: a + b)(metal.to_device(np.ones(10))),
    "forall's grid": lambda: add_one.forall(10)(metal.to_device(np.zeros(10, np.float32))),
    "a ufunc's grid": lambda: halve(metal.to_device(np.ones(10, np.float32))),
}


@pytest.mark.parametrize("launch", INTERNAL, ids=list(INTERNAL))
def test_launches_numba_metal_configures_itself_do_not_warn(launch):
    with warnings.catch_warnings():
        warnings.simplefilter("error", NumbaPerformanceWarning)
        INTERNAL[launch]()
        metal.synchronize()


def test_the_users_own_small_grid_still_warns_at_the_users_line_with_numbas_class():
    d = metal.to_device(np.zeros(10, np.float32))
    with pytest.warns(NumbaPerformanceWarning, match="Grid size 1 will likely result") as caught:
        add_one.configure(1, 32)(d)
    assert {w.filename for w in caught} == {__file__}
    with pytest.warns(NumbaPerformanceWarning, match="copy overhead"):
        add_one[200, 32](np.zeros(10, np.float32))
