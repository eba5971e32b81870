"""fastmath=True opts a kernel into Metal's relaxed math (reassociation, contraction, no signed zeros,
reciprocals, fast functions; NaN and infinity still handled); the default is safe math with precise
functions."""

import math

import numpy as np

from numba_metal import metal, runtime


def nan_inf_check(a, out):
    i = metal.grid(1)
    if i < a.size:
        out[i] = 2 * int(math.isnan(a[i])) + int(math.isinf(a[i]))


def test_fastmath_option_reaches_the_device_compiler(monkeypatch):
    asked = []
    compile_ = runtime.Device.compile

    def spy(device, source, kernel_name, *args, **kwargs):
        asked.append(kwargs.get("fast_math", args[0] if args else False))
        return compile_(device, source, kernel_name, *args, **kwargs)

    monkeypatch.setattr(runtime.Device, "compile", spy)
    a = np.ones(2, np.float32)
    metal.jit(nan_inf_check)[1, 2](a, np.zeros(2, np.int32))
    metal.jit(fastmath=True)(nan_inf_check)[1, 2](a, np.zeros(2, np.int32))
    assert [bool(x) for x in asked] == [False, True]


def test_nan_and_infinity_are_handled_with_and_without_fastmath():
    # Safe math and Metal's relaxed mode both honour NaN and infinity (MSL §1.6.3); only the full fast
    # mode may assume them away, and fastmath=True does not select it.
    a = np.array([np.nan, 1.0, np.inf, -np.inf], np.float32)
    for jit in (metal.jit, metal.jit(fastmath=True)):
        out = np.zeros(4, np.int32)
        jit(nan_inf_check)[1, 4](a, out)
        np.testing.assert_array_equal(out, [2, 0, 1, 1])
