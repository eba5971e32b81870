"""Fixtures for the float64 library tests: float64.metal compiled once on the CPU reference device."""

from __future__ import annotations

import numpy as np
import pytest

from f64_harness import Float64Library
from numba_metal import runtime as rt


@pytest.fixture(scope="session")
def f64lib():
    # NumPy computes the references in this process: it must not be flushing subnormals.
    with np.errstate(all="ignore"):
        assert np.array([2.2250738585072014e-308])[0] / 2 != 0.0, "the host flushes float64 subnormals"
    cpu = [d for d in rt.list_devices() if d.kind == "cpu"]
    assert cpu, "the CPU reference device must always be listed"
    lib = Float64Library(rt.open_device(cpu[0].index))
    yield lib
    lib.release()
