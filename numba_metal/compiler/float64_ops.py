"""The public entry points of the emulated float64 library (float64.metal), one row each.

Data only (no numba_metal imports), for the compiler's operation tables: a row names the MSL function,
its parameter and result types as spelled in MSL (`nm_f64` is a float64 value, a struct around its
IEEE bit pattern), the `//@@` section of float64.metal that defines it (include it with its
`requires:` closure, through compiler/mslib/), and what it computes.
tests/float64/test_library.py checks that the rows and float64.metal agree; the other tests in
tests/float64/ check every row bit for bit against NumPy and Numba on the CPU.
"""

from __future__ import annotations

from typing import NamedTuple


class F64Function(NamedTuple):
    name: str
    params: tuple[str, ...]
    result: str
    section: str
    semantics: str


F64 = "nm_f64"
_F = F64Function

FUNCTIONS: tuple[F64Function, ...] = (
    # Bits and words: literals, loads/stores, SIMD shuffles of the two 32-bit halves.
    _F("nm_f64_from_bits", ("ulong",), F64, "f64_base", "the float64 whose IEEE binary64 pattern is the argument"),
    _F("nm_f64_to_bits", (F64,), "ulong", "f64_base", "the IEEE binary64 bit pattern"),
    _F("nm_f64_from_words", ("uint", "uint"), F64, "f64_base", "the float64 with low word lo and high word hi"),
    _F("nm_f64_lo_word", (F64,), "uint", "f64_base", "the low 32 bits of the pattern"),
    _F("nm_f64_hi_word", (F64,), "uint", "f64_base", "the high 32 bits (sign, exponent, top fraction bits)"),
    # Classification and sign.
    _F("nm_f64_isnan", (F64,), "bool", "f64_base", "math.isnan"),
    _F("nm_f64_isinf", (F64,), "bool", "f64_base", "math.isinf"),
    _F("nm_f64_isfinite", (F64,), "bool", "f64_base", "math.isfinite"),
    _F("nm_f64_signbit", (F64,), "bool", "f64_base", "np.signbit (true for -0.0 and negative NaNs)"),
    _F("nm_f64_truth", (F64,), "bool", "f64_base", "bool(x): false only for +-0.0"),
    _F("nm_f64_neg", (F64,), F64, "f64_base", "-x (flips the sign, NaN included)"),
    _F("nm_f64_abs", (F64,), F64, "f64_base", "abs(x), math.fabs (clears the sign, NaN included)"),
    _F("nm_f64_copysign", (F64, F64), F64, "f64_base", "math.copysign(x, y)"),
    # Arithmetic, correctly rounded (to nearest, ties to even).
    _F("nm_f64_add", (F64, F64), F64, "f64_add", "x + y"),
    _F("nm_f64_sub", (F64, F64), F64, "f64_add", "x - y"),
    _F("nm_f64_mul", (F64, F64), F64, "f64_mul", "x * y"),
    _F("nm_f64_div", (F64, F64), F64, "f64_div",
       "x / y with IEEE results for y == 0 (Numba's NumPy error model: +-inf or NaN)"),
    _F("nm_f64_sqrt", (F64,), F64, "f64_sqrt", "math.sqrt / np.sqrt (NaN for x < 0, -0.0 for -0.0)"),
    _F("nm_f64_fma", (F64, F64, F64), F64, "f64_fma", "x * y + z rounded once (C fma)"),
    # Comparisons: quiet, false when either operand is NaN (ne: true), -0.0 == 0.0.
    _F("nm_f64_eq", (F64, F64), "bool", "f64_compare", "x == y"),
    _F("nm_f64_ne", (F64, F64), "bool", "f64_compare", "x != y"),
    _F("nm_f64_lt", (F64, F64), "bool", "f64_compare", "x < y"),
    _F("nm_f64_le", (F64, F64), "bool", "f64_compare", "x <= y"),
    _F("nm_f64_gt", (F64, F64), "bool", "f64_compare", "x > y"),
    _F("nm_f64_ge", (F64, F64), "bool", "f64_compare", "x >= y"),
    _F("nm_f64_py_min", (F64, F64), F64, "f64_compare", "Python's min(x, y) as Numba computes it (y if y < x else x)"),
    _F("nm_f64_py_max", (F64, F64), F64, "f64_compare", "Python's max(x, y) as Numba computes it (y if y > x else x)"),
    _F("nm_f64_np_minimum", (F64, F64), F64, "f64_compare", "np.minimum (NaN-propagating)"),
    _F("nm_f64_np_maximum", (F64, F64), F64, "f64_compare", "np.maximum (NaN-propagating)"),
    _F("nm_f64_np_fmin", (F64, F64), F64, "f64_compare", "np.fmin (NaN-ignoring)"),
    _F("nm_f64_np_fmax", (F64, F64), F64, "f64_compare", "np.fmax (NaN-ignoring)"),
    # Integers to float64: exact up to 32 bits, rounded to nearest even for 64-bit values.
    _F("nm_f64_from_i8", ("char",), F64, "f64_int", "float(int8)"),
    _F("nm_f64_from_u8", ("uchar",), F64, "f64_int", "float(uint8)"),
    _F("nm_f64_from_i16", ("short",), F64, "f64_int", "float(int16)"),
    _F("nm_f64_from_u16", ("ushort",), F64, "f64_int", "float(uint16)"),
    _F("nm_f64_from_i32", ("int",), F64, "f64_int", "float(int32)"),
    _F("nm_f64_from_u32", ("uint",), F64, "f64_int", "float(uint32)"),
    _F("nm_f64_from_i64", ("long",), F64, "f64_int", "float(int64)"),
    _F("nm_f64_from_u64", ("ulong",), F64, "f64_int", "float(uint64)"),
    # float64 to integers: truncation; NaN and out-of-range as Numba's njit on Apple silicon.
    _F("nm_f64_to_i8", (F64,), "char", "f64_int", "int8(x): low 8 bits of the saturated int32; NaN -> 0"),
    _F("nm_f64_to_u8", (F64,), "uchar", "f64_int", "uint8(x): low 8 bits of the saturated int32; NaN -> 0"),
    _F("nm_f64_to_i16", (F64,), "short", "f64_int", "int16(x): low 16 bits of the saturated int32; NaN -> 0"),
    _F("nm_f64_to_u16", (F64,), "ushort", "f64_int", "uint16(x): low 16 bits of the saturated int32; NaN -> 0"),
    _F("nm_f64_to_i32", (F64,), "int", "f64_int", "int32(x): saturating; NaN -> 0"),
    _F("nm_f64_to_u32", (F64,), "uint", "f64_int", "uint32(x): saturating, negative -> 0; NaN -> 0"),
    _F("nm_f64_to_i64", (F64,), "long", "f64_int", "int64(x), int(x): saturating; NaN -> 0"),
    _F("nm_f64_to_u64", (F64,), "ulong", "f64_int", "uint64(x): saturating, negative -> 0; NaN -> 0"),
    # Other float formats.
    _F("nm_f64_from_f32", ("float",), F64, "f64_float", "float64(float32): exact; NaN quieted"),
    _F("nm_f64_to_f32", (F64,), "float", "f64_float", "float32(x): rounded to nearest even, subnormals kept"),
    _F("nm_f64_from_f16", ("half",), F64, "f64_float", "float64(float16): exact; NaN payload kept (NumPy)"),
    _F("nm_f64_to_f16", (F64,), "half", "f64_float", "float16(x): rounded to nearest even (NumPy)"),
    # Rounding to integral values (results are float64; Numba's math.floor etc. convert with to_i64).
    _F("nm_f64_floor", (F64,), F64, "f64_round", "np.floor"),
    _F("nm_f64_ceil", (F64,), F64, "f64_round", "np.ceil"),
    _F("nm_f64_trunc", (F64,), F64, "f64_round", "np.trunc"),
    _F("nm_f64_rint", (F64,), F64, "f64_round", "np.rint, round(x) half to even"),
    # Remainders.
    _F("nm_f64_fmod", (F64, F64), F64, "f64_fmod", "math.fmod / np.fmod: exact, sign of x"),
    _F("nm_f64_pymod", (F64, F64), F64, "f64_pymod", "x % y (Python's sign rule; NaN for y == 0)"),
    _F("nm_f64_floordiv", (F64, F64), F64, "f64_pymod", "x // y (Python's rule; x / y for y == 0)"),
    _F("nm_f64_divmod", (F64, F64), "nm_f64_pair", "f64_pymod", "divmod(x, y) as (.first, .second)"),
    # Exponent manipulation and neighbours.
    _F("nm_f64_frexp", (F64,), "nm_f64_frexp_result", "f64_frexp", "math.frexp as (.mantissa, .exponent)"),
    _F("nm_f64_ldexp", (F64, "int"), F64, "f64_frexp", "math.ldexp(x, n), rounded once"),
    _F("nm_f64_nextafter", (F64, F64), F64, "f64_nextafter", "np.nextafter / math.nextafter"),
    # SIMD-group reductions and scans (the second argument is the lane index in the SIMD group): a fixed
    # order given by the lane positions (see the section's comment).
    _F("nm_f64_simd_sum", (F64, "uint"), F64, "f64_simd", "metal.simd_sum: pairwise tree over the lanes"),
    _F("nm_f64_simd_product", (F64, "uint"), F64, "f64_simd", "metal.simd_product: pairwise tree over the lanes"),
    _F("nm_f64_simd_min", (F64, "uint"), F64, "f64_simd", "metal.simd_min: np.fmin over the lanes' tree"),
    _F("nm_f64_simd_max", (F64, "uint"), F64, "f64_simd", "metal.simd_max: np.fmax over the lanes' tree"),
    _F("nm_f64_simd_prefix_inclusive_sum", (F64, "uint"), F64, "f64_simd",
       "metal.simd_prefix_inclusive_sum: sequential in lane order (np.cumsum)"),
    _F("nm_f64_simd_prefix_exclusive_sum", (F64, "uint"), F64, "f64_simd",
       "metal.simd_prefix_exclusive_sum: sequential in lane order; +0.0 on the first active lane"),
)

#: Struct types the library defines (section f64_base), with their fields.
STRUCTS = {
    "nm_f64": (("ulong", "bits"),),
    "nm_f64_pair": ((F64, "first"), (F64, "second")),
    "nm_f64_frexp_result": ((F64, "mantissa"), ("int", "exponent")),
}
