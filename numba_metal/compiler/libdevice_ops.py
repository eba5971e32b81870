"""The entry points of libdevice.metal, one row each (the fields of float64_math_ops.MathFunction): the
helpers behind numba.cuda's cuda.libdevice functions that MSL, the math library and the float64 library
do not compute directly (kernel_api/functions.LIBDEVICE calls them). `python` names the libdevice
function; `ulp` is 0.0 for exact results (directed rounding is exact by construction) and None where
ulps are not the measure. tests/language/test_libdevice_library.py checks that the rows and the MSL
agree."""

from __future__ import annotations

from .float64_math_ops import MathFunction as _F

F64 = "nm_f64"

FUNCTIONS: tuple[_F, ...] = (
    _F("nm_ld_float_as_int", ("float",), "int", "ld_bits", "float_as_int", None),
    _F("nm_ld_int_as_float", ("int",), "float", "ld_bits", "int_as_float", None),
    _F("nm_ld_float2half_rn", ("float",), "short", "ld_bits", "float2half_rn", 0.0),
    _F("nm_ld_half2float", ("short",), "float", "ld_bits", "half2float", 0.0),
    _F("nm_ld_byte_perm", ("uint", "uint", "uint"), "uint", "ld_bits", "byte_perm", None),
    _F("nm_ld_abs", ("int",), "int", "ld_int", "abs", None),
    _F("nm_ld_llabs", ("long",), "long", "ld_int", "llabs", None),
    _F("nm_ld_rcp", ("float",), "float", "ld_float", "frcp_rn", 0.0),
    _F("nm_ld_fdimf", ("float", "float"), "float", "ld_float", "fdimf", 0.0),
    _F("nm_ld_sinpi", ("float",), "float", "ld_float", "sinpif", 4.5),
    _F("nm_ld_cospi", ("float",), "float", "ld_float", "cospif", 4.5),
    _F("nm_ld_saturate", ("float",), "float", "ld_float", "saturatef", 0.0),
    _F("nm_ld_nextafter", ("float", "float"), "float", "ld_float", "nextafterf", 0.0),
    _F("nm_ld_ilogb", ("float",), "int", "ld_float", "ilogbf", None),
    _F("nm_ld_logb", ("float",), "float", "ld_float", "logbf", 0.0),
    _F("nm_ld_frexp_mantissa", ("float",), "float", "ld_float", "frexpf", 0.0),
    _F("nm_ld_frexp_exponent", ("float",), "int", "ld_float", "frexpf", None),
    _F("nm_ld_modf_fraction", ("float",), "float", "ld_float", "modff", 0.0),
    _F("nm_ld_modf_integral", ("float",), "float", "ld_float", "modff", 0.0),
    _F("nm_ld_fadd", ("float", "float", "int"), "float", "ld_directed32", "fadd_rz/rd/ru", 0.0),
    _F("nm_ld_fsub", ("float", "float", "int"), "float", "ld_directed32", "fsub_rz/rd/ru", 0.0),
    _F("nm_ld_fmul", ("float", "float", "int"), "float", "ld_directed32", "fmul_rz/rd/ru", 0.0),
    _F("nm_ld_fdiv", ("float", "float", "int"), "float", "ld_directed32", "fdiv_rz/rd/ru", 0.0),
    _F("nm_ld_frcp", ("float", "int"), "float", "ld_directed32", "frcp_rz/rd/ru", 0.0),
    _F("nm_ld_fsqrt", ("float", "int"), "float", "ld_directed32", "fsqrt_rz/rd/ru", 0.0),
    _F("nm_ld_fmaf", ("float", "float", "float", "int"), "float", "ld_directed32", "fmaf_rz/rd/ru", 0.0),
    _F("nm_ld_double2float", (F64, "int"), "float", "ld_directed32", "double2float_rz/rd/ru", 0.0),
    _F("nm_ld_ll2float", ("long", "int"), "float", "ld_int2float", "int2float_*, ll2float_*", 0.0),
    _F("nm_ld_ull2float", ("ulong", "int"), "float", "ld_int2float", "uint2float_*, ull2float_*", 0.0),
    _F("nm_ld_ll2double", ("long", "int"), F64, "ld_int2double", "ll2double_*", 0.0),
    _F("nm_ld_ull2double", ("ulong", "int"), F64, "ld_int2double", "ull2double_*", 0.0),
    _F("nm_ld_dadd", (F64, F64, "int"), F64, "ld_directed64", "dadd_rz/rd/ru", 0.0),
    _F("nm_ld_dmul", (F64, F64, "int"), F64, "ld_directed64", "dmul_rz/rd/ru", 0.0),
    _F("nm_ld_dsqrt", (F64, "int"), F64, "ld_directed64", "dsqrt_rz/rd/ru", 0.0),
    _F("nm_ld_ddiv", (F64, F64, "int"), F64, "ld_directed64", "ddiv_rz/rd/ru", 0.0),
    _F("nm_ld_drcp", (F64, "int"), F64, "ld_directed64", "drcp_rz/rd/ru", 0.0),
    _F("nm_ld_exp10", (F64,), F64, "ld_float64", "exp10", 0.502),
    _F("nm_ld_drcp_rn", (F64,), F64, "ld_float64", "drcp_rn", 0.0),
    _F("nm_ld_rsqrt", (F64,), F64, "ld_float64", "rsqrt", 1.0),
    _F("nm_ld_fdim", (F64, F64), F64, "ld_float64", "fdim", 0.0),
    _F("nm_ld_round", (F64,), F64, "ld_float64", "round", 0.0),
    _F("nm_ld_ilogb64", (F64,), "int", "ld_float64", "ilogb", None),
    _F("nm_ld_logb64", (F64,), F64, "ld_float64", "logb", 0.0),
    _F("nm_ld_hiloint2double", ("int", "int"), F64, "ld_float64", "hiloint2double", None),
    _F("nm_ld_rcbrtf", ("float",), "float", "ld_float_math", "rcbrtf", 4.5),
    _F("nm_ld_remquo_bitsf", ("float", "float"), "int", "ld_float_math", "remquof", None),
    _F("nm_ld_normcdff", ("float",), "float", "ld_float_math", "normcdff", 5.0),
    _F("nm_ld_normcdf64", (F64,), F64, "ld_float64_math", "normcdf", 1.5),
    _F("nm_ld_erfinv64", (F64,), F64, "ld_erfinv", "erfinv", 2.0),
    _F("nm_ld_erfcinv64", (F64,), F64, "ld_erfinv", "erfcinv", 2.0),
    _F("nm_ld_normcdfinv64", (F64,), F64, "ld_erfinv", "normcdfinv", 2.5),
    _F("nm_ld_erfinvf", ("float",), "float", "ld_erfinv", "erfinvf", 0.5),
    _F("nm_ld_erfcinvf", ("float",), "float", "ld_erfinv", "erfcinvf", 0.5),
    _F("nm_ld_normcdfinvf", ("float",), "float", "ld_erfinv", "normcdfinvf", 0.5),
    _F("nm_ld_sinpi64", (F64,), F64, "ld_float64_math", "sinpi", 1.5),
    _F("nm_ld_cospi64", (F64,), F64, "ld_float64_math", "cospi", 1.5),
    _F("nm_ld_rcbrt64", (F64,), F64, "ld_float64_math", "rcbrt", 1.1),
    _F("nm_ld_remquo_bits64", (F64, F64), "int", "ld_float64_math", "remquo", None),
    _F("nm_h_add_sat", ("half", "half"), "half", "ld_half", "fp16.__hadd_sat", 0.0),
    _F("nm_h_sub_sat", ("half", "half"), "half", "ld_half", "fp16.__hsub_sat", 0.0),
    _F("nm_h_mul_sat", ("half", "half"), "half", "ld_half", "fp16.__hmul_sat", 0.0),
    _F("nm_h_fma_sat", ("half", "half", "half"), "half", "ld_half", "fp16.__hfma_sat", 0.0),
    _F("nm_h_fma_relu", ("half", "half", "half"), "half", "ld_half", "fp16.__hfma_relu", 0.0),
    _F("nm_h_max_nan", ("half", "half"), "half", "ld_half", "fp16.__hmax_nan", 0.0),
    _F("nm_h_min_nan", ("half", "half"), "half", "ld_half", "fp16.__hmin_nan", 0.0),
    _F("nm_h_equ", ("half", "half"), "bool", "ld_half", "fp16.__hequ", None),
    _F("nm_h_neu", ("half", "half"), "bool", "ld_half", "fp16.__hneu", None),
    _F("nm_h_ltu", ("half", "half"), "bool", "ld_half", "fp16.__hltu", None),
    _F("nm_h_leu", ("half", "half"), "bool", "ld_half", "fp16.__hleu", None),
    _F("nm_h_gtu", ("half", "half"), "bool", "ld_half", "fp16.__hgtu", None),
    _F("nm_h_geu", ("half", "half"), "bool", "ld_half", "fp16.__hgeu", None),
    _F("nm_h_isinf", ("half",), "int", "ld_half", "fp16.__hisinf", None),
    _F("nm_h_as_short", ("half",), "short", "ld_half", "fp16.__half_as_short", None),
    _F("nm_h_as_ushort", ("half",), "ushort", "ld_half", "fp16.__half_as_ushort", None),
    _F("nm_h_from_short_bits", ("short",), "half", "ld_half", "fp16.__short_as_half", None),
    _F("nm_h_from_ushort_bits", ("ushort",), "half", "ld_half", "fp16.__ushort_as_half", None),
    _F("nm_h_to_signed", ("half", "int", "int"), "long", "ld_half", "fp16.__half2int_rn ...", None),
    _F("nm_h_to_unsigned", ("half", "int", "int"), "ulong", "ld_half", "fp16.__half2uint_rn ...", None),
    _F("nm_h_from_float", ("float", "int"), "half", "ld_half", "fp16.__float2half_rz/rd/ru, __int2half_* ...", 0.0),
)

#: Rounding modes of the directed entry points (their last parameter).
TOWARD_ZERO, DOWN, UP = 1, 2, 3
MODES = {"rz": TOWARD_ZERO, "rd": DOWN, "ru": UP}
