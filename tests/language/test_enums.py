"""Enum and IntEnum members in kernels (compiler: a member is its value at run time; typing: Numba's
enumdecl): as constants, compared, converted, `.value`; Enum and IntEnum members as kernel arguments (passed as
their values, as numba.cuda passes them). Oracle: Python's enum semantics."""

import enum

import numpy as np
import pytest
from numba import typeof
from numba.core import types

from numba_metal import metal
from numba_metal.compiler import driver
from numba_metal.errors import KernelLaunchError


class Color(enum.IntEnum):
    RED = 1
    GREEN = 2
    BLUE = 7


class Shape(enum.Enum):
    SQUARE = 4
    TRIANGLE = 3


@metal.jit
def enum_constants(out, c):
    out[0] = Color.BLUE
    out[1] = Shape.TRIANGLE.value
    s = Shape.SQUARE
    out[2] = 1 if s == Shape.SQUARE else 0
    out[3] = 1 if s != Shape.TRIANGLE else 0
    out[4] = Color.RED + c
    out[5] = 1 if c == Color.GREEN else 0
    out[6] = Color.BLUE * 2 - Color.GREEN


def test_members_are_constants_compared_and_converted_as_python_does():
    out = np.zeros(7, np.int64)
    enum_constants[1, 1](out, 2)
    c = 2
    expected = [Color.BLUE, Shape.TRIANGLE.value, Shape.SQUARE == Shape.SQUARE, Shape.SQUARE != Shape.TRIANGLE,
                Color.RED + c, c == Color.GREEN, Color.BLUE * 2 - Color.GREEN]
    np.testing.assert_array_equal(out, [int(v) for v in expected])


def test_an_int_enum_member_argument_compiles_to_its_value():
    def k(out, c):
        if c == Color.GREEN:
            out[0] = c.value + 1

    compiled = driver.compile_kernel(k, (types.float32[:], typeof(Color.RED)))
    # The member travels as its int64 value: one scalar field of the argument struct.
    assert [f.msl_type for f in compiled.abi.fields if f.source[0] == "scalar"] == ["long"]


@metal.jit
def enum_argument(out, c):
    out[0] = c
    out[1] = 1 if c == Color.BLUE else 0
    out[2] = c.value * 2


def test_an_int_enum_member_is_a_kernel_argument():
    out = np.zeros(3, np.int64)
    for member in Color:
        enum_argument[1, 1](out, member)
        np.testing.assert_array_equal(out, [member, member == Color.BLUE, member.value * 2])


class Ratio(enum.Enum):
    HALF = 0.5
    THIRD = 1 / 3


class Mixed(enum.Enum):
    ONE = 1
    HALF = 0.5


class Named(enum.Enum):
    A = "a"


@metal.jit
def plain_enum_argument(out, s, r):
    out[0] = s.value
    out[1] = 1 if s == Shape.TRIANGLE else 0
    out[2] = r.value * 4
    out[3] = 1 if r == Ratio.THIRD else 0


def test_a_plain_enum_member_is_a_kernel_argument_passed_as_its_value():
    # numba.cuda types an Enum member as EnumMember(class, type of its values) and passes the value.
    out = np.zeros(4, np.float64)
    for s in Shape:
        for r in Ratio:
            plain_enum_argument[1, 1](out, s, r)
            np.testing.assert_array_equal(out, [s.value, s is Shape.TRIANGLE, r.value * 4, r is Ratio.THIRD])


def test_a_plain_enum_member_argument_compiles_to_its_value():
    compiled = driver.compile_kernel(plain_enum_argument.py_func,
                                     (types.float64[:], typeof(Shape.SQUARE), typeof(Ratio.HALF)))
    scalars = [f for f in compiled.abi.fields if f.source[0] == "scalar"]
    assert [(f.msl_type, f.source) for f in scalars] == [("long", ("scalar", 1, "value")),
                                                        ("nm_f64", ("scalar", 2, "value"))]


def test_enum_members_numba_cannot_type_are_refused_clearly():
    with pytest.raises(KernelLaunchError, match="Enum Mixed.*heterogeneous"):
        enum_argument[1, 1](np.zeros(3, np.int64), Mixed.ONE)
    with pytest.raises(KernelLaunchError, match="Enum Named have values of type unicode"):
        enum_argument[1, 1](np.zeros(3, np.int64), Named.A)


class Other(enum.IntEnum):
    ONE = 1


def identity(a, b, out):
    out[0] = a == b
    out[1] = a != b
    out[2] = a is b
    out[3] = a is not b


@pytest.mark.parametrize("a, b", [(Shape.SQUARE, Shape.SQUARE), (Shape.SQUARE, Shape.TRIANGLE),
                                  (Color.RED, Other.ONE), (3, 3), (3, 4), (3, 3.0)])
def test_is_and_is_not_as_python(a, b):
    # numba.cuda's test_enums.test_compare: members of one Enum are the same object when equal; values of
    # different types (an IntEnum member and another IntEnum's of the same value, an int and a float) never.
    got = np.zeros(4, np.bool_)
    expected = got.copy()
    metal.jit(identity)[1, 1](a, b, got)
    identity(a, b, expected)
    np.testing.assert_array_equal(got, expected)


def test_is_between_arrays_is_refused_clearly():
    def same(x, y, out):
        out[0] = x is y

    from numba_metal.errors import UnsupportedFeatureError
    with pytest.raises(UnsupportedFeatureError, match="`is` between two array"):
        metal.jit(same)[1, 1](np.zeros(1), np.zeros(1), np.zeros(1, np.bool_))


def getitem(out):
    out[0] = Shape["SQUARE"] == Shape["TRIANGLE"]
    out[1] = Shape["TRIANGLE"] == Shape.TRIANGLE
    out[2] = Color["BLUE"]


def test_enum_classes_indexed_by_member_name():
    got = np.zeros(3, np.int64)
    expected = got.copy()
    metal.jit(getitem)[1, 1](got)
    getitem(expected)
    np.testing.assert_array_equal(got, expected)
