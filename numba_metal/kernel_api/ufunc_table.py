"""The table of NumPy's ufuncs that kernels may call, one row per ufunc (``np.sin(x[i])``, ``np.sin(x, out)``).

A row says how one element is computed for each *kind* of the ufunc's loop: ``float32``, ``float64``,
``int`` (signed integers), ``uint``, ``bool``, ``complex64`` and ``complex128``; a ``uint`` or ``bool`` loop
takes the ``int`` routine where the row has no routine of its own (and a ``float16`` loop, which Numba never
chooses, float16 inputs taking the float32 loops, the ``float32`` routine). The loop itself (its input and output types)
is NumPy's, chosen as Numba chooses it (``numba.np.numpy_support.ufunc_find_matching_loop``): float32 in
gives float32 out, integers give float64 for the transcendental functions, ``np.add`` of two int32 is
int32.

Where Python's ``math`` has the same function (``np.sin`` is ``math.sin``, ``np.arctan2`` is
``math.atan2``, ``np.deg2rad`` is ``math.radians``), the row *is* the math table's row
(:mod:`.functions`): the same routines, hence the same results and accuracy bound (the emulated float64
included). Other rows are the compiler's operators (``np.add`` is ``+`` with the loop's types) or a
routine of :mod:`.numpy_ufuncs` (``UFUNC``: NaN rules of ``np.maximum``, ``np.sign``, the logical
functions). ``numba-cuda``'s own CUDA ufunc table (``numba/cuda/ufuncs.py``) covers the trigonometric,
hyperbolic, angle, comparison, logical, min/max, bitwise and logarithm ufuncs; this one adds NumPy's
other real-valued math ufuncs.

This module imports nothing but the math table (the docs and tests read it without Numba).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from numba_metal.compiler import complex_ops

from .functions import (CORRECTLY_ROUNDED, EXACT, MATH_BY_NAME, OPERATOR, SAME, TUPLE, Accuracy, Routine, emulated,
                        metal)

#: A routine of numba_metal/kernel_api/numpy_ufuncs.py (``name``: its key there).
UFUNC = "ufunc"

#: The kinds of a ufunc loop, the keys of a row's routines.
KINDS = ("float32", "float64", "int", "uint", "bool", "complex64", "complex128")
_COMPLEX = ("complex64", "complex128")
_LIBRARY_TYPES = {"complex64": complex_ops.C64, "complex128": complex_ops.C128}
_PART_TYPES = {"float": "float32", complex_ops.F64: "float64", "bool": "bool"}


def _complex(python: str) -> dict[str, Routine]:
    """The complex library's entry points (compiler/complex_ops.py) of ``python`` (``cmath.sin``, ``abs(z)``)
    taking one complex64 or complex128: kind -> routine (none if the library has no such row)."""
    found = {}
    for kind, library_type in _LIBRARY_TYPES.items():
        for row in complex_ops.FUNCTIONS:
            if row.python == python and row.params == (library_type,):
                found[kind] = emulated(row.name, result=_PART_TYPES.get(row.result))
    return found


@dataclass(frozen=True)
class Ufunc:
    """One NumPy ufunc kernels may call."""

    name: str                                  # np.<name>
    routines: dict[str, Routine] = field(hash=False)   # kind of the loop -> routine
    accuracy: Accuracy
    twin: str = ""                             # the math table's row it is, if any
    aliases: tuple[str, ...] = ()              # other NumPy names of the same ufunc (np.abs)

    def routine(self, kind: str) -> Routine | None:
        """The routine of a loop of ``kind`` (see the module docstring for the fall-backs)."""
        if kind == "float16":
            kind = "float32"
        found = self.routines.get(kind)
        if found is None and kind in ("uint", "bool"):
            found = self.routines.get("int")
        return found


def _twin(name: str, math_name: str, *, aliases=()) -> Ufunc:
    """The row of ``math.<math_name>``: its routines (integer computation types as ``int``/``uint``)."""
    row = MATH_BY_NAME[math_name]
    kinds = {"int64": "int", "uint64": "uint"}
    routines = {kinds.get(k, k): r for k, r in row.routines.items() if k != "float16"}
    return Ufunc(name, {**routines, **_complex("cmath." + math_name)}, row.accuracy, math_name, aliases)


def _op(name: str, symbol: str, kinds=("float32", "float64", "int", "bool"), accuracy=EXACT, aliases=()) -> Ufunc:
    """A compiler operator on the loop's types (Numba's semantics, NumPy's error model: ``x // 0 == 0``)."""
    return Ufunc(name, {k: Routine(OPERATOR, symbol) for k in kinds}, accuracy, aliases=aliases)


def _own(name: str, kinds=("float32", "float64", "int", "bool"), accuracy=EXACT, aliases=()) -> Ufunc:
    """A routine of numpy_ufuncs.py, for every kind."""
    return Ufunc(name, {k: Routine(UFUNC, name) for k in kinds}, accuracy, aliases=aliases)


_FLOATS = ("float32", "float64")
_INTS = ("int", "bool")
_NUMBERS = ("float32", "float64", "int")
_ALL = ("float32", "float64", "int", "bool", *_COMPLEX)

UFUNCS: tuple[Ufunc, ...] = (
    # -- math: the math table's rows ---------------------------------------------------------------
    _twin("sin", "sin"), _twin("cos", "cos"), _twin("tan", "tan"),
    _twin("arcsin", "asin"), _twin("arccos", "acos"), _twin("arctan", "atan"), _twin("arctan2", "atan2"),
    _twin("hypot", "hypot"),
    _twin("sinh", "sinh"), _twin("cosh", "cosh"), _twin("tanh", "tanh"),
    _twin("arcsinh", "asinh"), _twin("arccosh", "acosh"), _twin("arctanh", "atanh"),
    _twin("deg2rad", "radians"), _twin("radians", "radians"), _twin("rad2deg", "degrees"),
    _twin("degrees", "degrees"),
    _twin("exp", "exp"),
    # exp2, expm1, log1p and log2 of complex numbers: NumPy's formulas on the complex and math libraries.
    *(Ufunc(name, {**_twin(name, name).routines, **{k: Routine(UFUNC, name + "_complex") for k in _COMPLEX}},
            MATH_BY_NAME[name].accuracy, name) for name in ("exp2", "expm1")),
    _twin("log", "log"),
    Ufunc("log2", {**_twin("log2", "log2").routines, **{k: Routine(UFUNC, "log2_complex") for k in _COMPLEX}},
          MATH_BY_NAME["log2"].accuracy, "log2"), _twin("log10", "log10"),
    Ufunc("log1p", {**_twin("log1p", "log1p").routines, **{k: Routine(UFUNC, "log1p_complex") for k in _COMPLEX}},
          MATH_BY_NAME["log1p"].accuracy, "log1p"),
    _twin("sqrt", "sqrt"), _twin("cbrt", "cbrt"), _twin("fabs", "fabs"),
    _twin("floor", "floor"), _twin("ceil", "ceil"), _twin("trunc", "trunc"),
    _twin("copysign", "copysign"), _twin("nextafter", "nextafter"), _twin("ldexp", "ldexp"),
    _twin("frexp", "frexp"), _twin("modf", "modf"),
    _twin("isnan", "isnan"), _twin("isinf", "isinf"), _twin("isfinite", "isfinite"),
    Ufunc("fmod", {**{k: r for k, r in MATH_BY_NAME["fmod"].routines.items()}, "int": Routine(UFUNC, "fmod_int")},
          EXACT, "fmod"),
    _op("power", "**", _NUMBERS + _COMPLEX, MATH_BY_NAME["pow"].accuracy),
    # -- rounding and signs --------------------------------------------------------------------------
    Ufunc("rint", {"float32": metal("rint"), "float64": emulated("nm_f64_rint"), "int": Routine(SAME)}, EXACT),
    Ufunc("signbit", {"float32": metal("signbit", result="bool"),
                      "float64": emulated("nm_f64_signbit", result="bool")}, EXACT),
    Ufunc("absolute", {"float32": MATH_BY_NAME["fabs"].routines["float32"],
                       "float64": MATH_BY_NAME["fabs"].routines["float64"],
                       "int": Routine(UFUNC, "abs_int"), "uint": Routine(SAME), "bool": Routine(SAME),
                       **_complex("abs(z)")},
          EXACT, "fabs", aliases=("abs",)),
    _own("sign", _NUMBERS + _COMPLEX),
    _op("negative", "-", _NUMBERS + _COMPLEX),
    _op("positive", "+", _NUMBERS + _COMPLEX),
    Ufunc("conjugate", {**{k: Routine(SAME) for k in _NUMBERS}, **{k: emulated(n) for k, n in
                        (("complex64", "nm_c64_conj"), ("complex128", "nm_c128_conj"))}}, EXACT, aliases=("conj",)),
    # -- arithmetic: the compiler's operators --------------------------------------------------------
    _op("add", "+", _NUMBERS + _COMPLEX), _op("subtract", "-", _NUMBERS + _COMPLEX),
    _op("multiply", "*", _NUMBERS + _COMPLEX),
    # Complex division is NumPy's algorithm (Smith's), not Python's.
    Ufunc("divide", {**{k: Routine(OPERATOR, "/") for k in _FLOATS}, "complex64": emulated("nm_c64_np_divide"),
                     "complex128": emulated("nm_c128_np_divide")}, CORRECTLY_ROUNDED, aliases=("true_divide",)),
    _op("floor_divide", "//", _NUMBERS),
    _op("remainder", "%", _NUMBERS, aliases=("mod",)),
    Ufunc("divmod", {k: Routine(TUPLE, parts=(Routine(OPERATOR, "//"), Routine(OPERATOR, "%"))) for k in _NUMBERS},
          EXACT),
    _own("square", _NUMBERS + _COMPLEX),
    Ufunc("reciprocal", {k: Routine(UFUNC, "reciprocal") for k in _FLOATS + _COMPLEX}, CORRECTLY_ROUNDED),
    # -- comparisons, min and max --------------------------------------------------------------------
    # Complex numbers compare as NumPy orders them: by real part, then imaginary part.
    *(Ufunc(name, {**_op(name, symbol).routines, **{k: Routine(UFUNC, "complex" + symbol) for k in _COMPLEX}}, EXACT)
      for name, symbol in (("greater", ">"), ("greater_equal", ">="), ("less", "<"), ("less_equal", "<="))),
    _op("equal", "==", _ALL), _op("not_equal", "!=", _ALL),
    Ufunc("maximum", {"float32": Routine(UFUNC, "maximum"), "float64": emulated("nm_f64_np_maximum"),
                      "int": Routine(UFUNC, "maximum"), **_own("maximum", _COMPLEX).routines}, EXACT),
    Ufunc("minimum", {"float32": Routine(UFUNC, "minimum"), "float64": emulated("nm_f64_np_minimum"),
                      "int": Routine(UFUNC, "minimum"), **_own("minimum", _COMPLEX).routines}, EXACT),
    Ufunc("fmax", {"float32": metal("fmax"), "float64": emulated("nm_f64_np_fmax"),
                   "int": Routine(UFUNC, "maximum"), **_own("fmax", _COMPLEX).routines}, EXACT),
    Ufunc("fmin", {"float32": metal("fmin"), "float64": emulated("nm_f64_np_fmin"),
                   "int": Routine(UFUNC, "minimum"), **_own("fmin", _COMPLEX).routines}, EXACT),
    # -- logical and bitwise ---------------------------------------------------------------------------
    _own("logical_and", _ALL), _own("logical_or", _ALL), _own("logical_xor", _ALL), _own("logical_not", _ALL),
    _op("bitwise_and", "&", _INTS), _op("bitwise_or", "|", _INTS), _op("bitwise_xor", "^", _INTS),
    _op("invert", "~", _INTS, aliases=("bitwise_not",)),
    _op("left_shift", "<<", ("int",)), _op("right_shift", ">>", ("int",)),
)

UFUNCS_BY_NAME = {u.name: u for u in UFUNCS}


def names() -> tuple[str, ...]:
    """Every NumPy name (``np.<name>``) a row answers, aliases included."""
    return tuple(n for u in UFUNCS for n in (u.name, *u.aliases))


__all__ = ["Ufunc", "UFUNCS", "UFUNCS_BY_NAME", "UFUNC", "KINDS", "names"]
