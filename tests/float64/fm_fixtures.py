"""The float64 math and complex libraries compiled once on the CPU reference device (a fixture imported by
the test_fm_*.py modules and by tests/complex/conftest.py)."""

from __future__ import annotations

import pytest

from fm_harness import MathLibrary
from numba_metal import runtime as rt
from numba_metal.compiler.complex_ops import FUNCTIONS as COMPLEX_FUNCTIONS
from numba_metal.compiler.float64_math_ops import FUNCTIONS as MATH_FUNCTIONS

ALL_ROWS = MATH_FUNCTIONS + COMPLEX_FUNCTIONS


@pytest.fixture(scope="session")
def mathlib():
    cpu = [d for d in rt.list_devices() if d.kind == "cpu"]
    assert cpu, "the CPU reference device must always be listed"
    lib = MathLibrary(rt.open_device(cpu[0].index), ALL_ROWS)
    yield lib
    lib.release()
