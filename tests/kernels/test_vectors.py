"""numba.cuda's vector types (kernel_api/vectors.py, compiler/vectortypes.py): every type and alias
constructs from scalars and from smaller vectors (numba.cuda's overloads) and reads back .x .y .z .w;
oracle: the Python values, converted as NumPy's astype converts to the element type."""

import numpy as np
import pytest
from numba.core.errors import TypingError

from numba_metal import metal
from numba_metal.compiler.vectortypes import ALIASES, ELEMENTS, VECTOR_TYPES


def _kernel(name, count):
    ctor = getattr(metal, name)
    if count == 1:
        def k(a, out):
            v = ctor(a[0])
            out[0] = v.x
    elif count == 2:
        def k(a, out):
            v = ctor(a[0], a[1])
            out[0] = v.x
            out[1] = v.y
    elif count == 3:
        def k(a, out):
            v = ctor(a[0], a[1], a[2])
            out[0] = v.x
            out[1] = v.y
            out[2] = v.z
    else:
        def k(a, out):
            v = ctor(a[0], a[1], a[2], a[3])
            out[0] = v.x
            out[1] = v.y
            out[2] = v.z
            out[3] = v.w
    return metal.jit(k)


@pytest.mark.parametrize("element", ELEMENTS)
def test_every_vector_type_constructs_and_reads_its_members(element):
    for count in range(1, 5):
        a = np.array([1, -2, 3, 100][:count] if element.startswith(("int", "float")) else [1, 2, 3, 200][:count],
                      np.int64)
        dtype = np.float32 if element == "float64" else np.dtype(element)  # float64 members compute as float32
        out = np.zeros(count, dtype)
        _kernel(f"{element}x{count}", count)[1, 1](a, out)
        np.testing.assert_array_equal(out, a.astype(dtype), err_msg=f"{element}x{count}")


def test_aliases_are_the_same_constructors():
    for alias, element in ALIASES.items():
        for n in range(1, 5):
            assert getattr(metal, f"{alias}{n}") is getattr(metal, f"{element}x{n}")
    assert metal.float4 is metal.float32x4 and metal.int2 is metal.int32x2


def test_each_constructor_lists_its_cuda_aliases_as_numba_cudas_does():
    # numba.cuda's vector-type objects carry ``aliases``, the CUDA names that are the same object
    for name in VECTOR_TYPES:
        ctor = getattr(metal, name)
        expected = sorted(f"{a}{name[-1]}" for a, e in ALIASES.items() if e == name[:-2])
        assert sorted(ctor.aliases) == expected, name
        assert all(getattr(metal, alias) is ctor for alias in ctor.aliases)
    assert metal.int64x2.aliases == ["long2", "longlong2"] and metal.float32x4.aliases == ["float4"]


@metal.jit
def composed(a, out):
    xy = metal.float32x2(a[0], a[1])
    one = metal.float32x1(a[2])
    v = metal.float4(xy, one, a[3])
    w = metal.float32x4(a[3], metal.float32x3(v.z, v.y, v.x))
    out[0] = v.x
    out[1] = v.y
    out[2] = v.z
    out[3] = v.w
    out[4] = w.x
    out[5] = w.y
    out[6] = w.z
    out[7] = w.w
    q = metal.int32x4(metal.int2(7, 8), metal.int2(9, 10))
    out[8] = q.z


def test_constructors_take_smaller_vectors_as_numba_cuda():
    a = np.array([1.5, 2.5, 3.5, 4.5], np.float32)
    out = np.zeros(9, np.float32)
    composed[1, 1](a, out)
    np.testing.assert_array_equal(out, [1.5, 2.5, 3.5, 4.5, 4.5, 3.5, 2.5, 1.5, 9])


def test_msl_spells_native_vectors():
    def k(a, out):
        v = metal.float4(a[0], a[1], a[2], a[3])
        out[0] = v.w

    src = metal.compile_msl(k, "void(float32[:], float32[:])")
    assert "float4" in src
    assert VECTOR_TYPES["float32x4"].native and not VECTOR_TYPES["float64x2"].native


def _too_few_elements(a, out):
    v = metal.float4(a[0], a[1])
    out[0] = v.x


def _missing_member(a, out):
    v = metal.float2(a[0], a[1])
    out[0] = v.z


@pytest.mark.parametrize("kernel,message", [(_too_few_elements, "float32x4"), (_missing_member, "z")])
def test_a_wrong_constructor_or_member_is_a_typing_error(kernel, message):
    with pytest.raises(TypingError, match=message):
        metal.compile_msl(kernel, "void(float32[:], float32[:])")
