"""Read-only array types in an explicit signature (issue 26 item 6): the code generator declared such an
array ``constant`` and initialised it from the kernel's ``device`` buffer parameter, MSL that no device
compiles ("cannot initialize ... address_space(2) float * with an lvalue of type 'device float *'"). A
read-only argument is a ``device const`` array."""

import numpy as np
from numba import types

from numba_metal import metal

RO = types.Array(types.float32, 1, "C", readonly=True)
RW = types.Array(types.float32, 1, "C")


def twice(a, out):
    i = metal.grid(1)
    if i < out.size:
        out[i] = a[i] * 2


def test_a_read_only_argument_is_a_device_const_array():
    source = metal.compile_msl(twice, (RO, RW))
    assert "nm_arr<device const float*, 1>" in source
    assert "constant float*" not in source


def test_the_kernel_compiles_and_runs_on_the_device():
    kernel = metal.jit((RO, RW))(twice)
    a = np.arange(8, dtype=np.float32)
    a.setflags(write=False)
    out = np.zeros(8, dtype=np.float32)
    kernel[1, 8](a, out)
    np.testing.assert_array_equal(out, 2 * np.arange(8, dtype=np.float32))
    assert (RO, RW) in kernel.overloads  # compiled for the device from the signature
