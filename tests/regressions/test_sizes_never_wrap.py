"""Regression: sizes computed in 64-bit NumPy integers wrapped. ``metal.device_array((2**32, 2**32),
np.float32)`` succeeded with a 1-byte buffer (the element count wrapped to 0), and a kernel writing indices
in bounds for the declared shape overwrote unrelated device arrays; ``metal.shared.array((2**32, 2**32),
...)`` became a 0-byte dynamic shared array writing past threadgroup memory; a launch's dynamic shared
memory was not checked at all when the kernel declared none (``fill[1, 4, 0, 2**40]`` ran).

Sizes are Python integers everywhere; what cannot exist is refused naming its size.
"""

import numpy as np
import pytest

from numba_metal import metal
from numba_metal.errors import KernelLaunchError, MetalRuntimeError, MetalValueError, UnsupportedFeatureError

ALLOCATORS = ["device_array", "mapped_array", "pinned_array", "managed_array"]


@pytest.mark.parametrize("allocate", ALLOCATORS)
@pytest.mark.parametrize("shape,nbytes", [((2**32, 2**32), 2**66), ((2**61, 8), 2**66), ((2**62,), 2**64)])
def test_an_array_whose_byte_size_exceeds_64_bits_is_refused_naming_its_size(allocate, shape, nbytes):
    with pytest.raises(MetalValueError, match=rf"would take {nbytes} bytes"):
        getattr(metal, allocate)(shape, np.float32)


@pytest.mark.parametrize("allocate", ALLOCATORS)
def test_an_array_larger_than_the_device_is_refused_by_the_device_naming_its_size(allocate):
    with pytest.raises(MetalRuntimeError, match=str(2**50)):     # a pebibyte
        getattr(metal, allocate)((2**24, 2**24), np.float32)


def test_a_device_array_of_a_shape_that_fits_has_the_bytes_of_its_shape():
    d = metal.device_array((3, 2**20), np.float64)
    assert d.size == 3 * 2**20 and d.nbytes == 3 * 2**23 and d.buffer.nbytes == d.nbytes


def huge_shared(out):
    s = metal.shared.array((2**32, 2**32), np.float32)
    s[0, 0] = 1
    out[0] = s[0, 0]


def huge_local(out):
    s = metal.local.array((2**32, 2**32), np.float32)
    s[0, 0] = 1
    out[0] = s[0, 0]


@pytest.mark.parametrize("kernel,refusal", [(huge_shared, "of threadgroup memory"), (huge_local, "per thread")])
def test_a_huge_shared_or_local_array_is_refused_at_compile_time_naming_its_size(kernel, refusal):
    # (The shared array's element count wrapped to 0, which made it a dynamic shared array of 0 bytes.)
    with pytest.raises(UnsupportedFeatureError, match=rf"need {2**66} bytes {refusal}"):
        metal.compile_msl(kernel, "void(float32[:])")


@metal.jit
def fill(a):
    i = metal.grid(1)
    if i < a.size:
        a[i] = 1


@pytest.mark.parametrize("beyond", [2**40, 1])
def test_dynamic_shared_memory_above_the_device_limit_is_refused_even_when_the_kernel_declares_none(beyond):
    limit = metal.get_device_info().max_threadgroup_memory
    sharedmem = beyond if beyond > limit else limit + beyond
    a = metal.device_array(4, np.float32)
    with pytest.raises(KernelLaunchError, match=rf"{sharedmem} bytes of dynamic shared memory \(the kernel "
                                                rf"declares none\).*{limit} bytes"):
        fill[1, 4, 0, sharedmem](a)
    fill[1, 4, 0, 1024](a)     # within the limit: runs
    assert a.copy_to_host().tolist() == [1, 1, 1, 1]
