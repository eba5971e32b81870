// numba-metal complex numbers: complex128 as a pair of float64.metal's emulated float64 values, complex64
// as MSL's float2 (.x real, .y imaginary), with Python's and Numba's arithmetic and the cmath functions.
//
// The entry points are listed, one row each, in complex_ops.py next to this file. Sections start with
// `//@@ name requires: ...`; they may require sections of float64.metal (f64_*) and float64_math.metal
// (fm_*), and `mathlib` (the whole of mathlib.metal, float32 hypot and log1p).
//
// Arithmetic is Numba's: a * b = (ac - bd) + (ad + bc)i, a / b by CPython's _Py_c_quot (Smith's
// algorithm: divide through by the larger of |b.re|, |b.im|), which Numba's @njit uses for the `/`
// operator; np.divide on complex arrays uses NumPy's loop (the same idea with a reciprocal scale), which
// nm_c*_np_divide reproduces bit for bit. Numba raises ZeroDivisionError for a complex division by zero;
// a kernel cannot raise, so both divisions give NumPy's result there (each part divided by +0).
//
// cmath functions follow CPython's Modules/cmathmodule.c (its formulas and its branch cuts), and its
// special-value tables, which are C99 Annex G's results, are the specification for non-finite operands
// (encoded here independently, two 4-bit codes per entry). Where CPython raises ValueError or
// OverflowError, the functions return the value C99 recommends (the one CPython's table or formula
// holds before raising). complex128 forms each result part from unrounded parts of float64_math.metal's
// extended format (e^x and cos y, say, multiplied before the one rounding), so parts are accurate
// componentwise and nothing overflows or underflows before the final rounding; log and the inverse
// functions use the exact |z|^2 (128 bits) next to |z| = 1. complex64 runs CPython's formulas in float32
// with metal:: functions, whose accuracy on an Apple GPU is MSL's precise-mode bounds; Apple GPUs flush
// float32 subnormals, so subnormal complex64 parts count as zero.

//@@ c128_base requires: f64_add f64_mul f64_div f64_compare
struct nm_c128 {
    nm_f64 re;
    nm_f64 im;
};

static inline nm_c128 nm_c128_make(nm_f64 re, nm_f64 im) {
    nm_c128 z;
    z.re = re;
    z.im = im;
    return z;
}

// complex(x): (x, +0)
static inline nm_c128 nm_c128_from_f64(nm_f64 x) {
    return nm_c128_make(x, nm_f64_from_bits(0UL));
}

static inline nm_f64 nm_c128_real(nm_c128 z) {
    return z.re;
}

static inline nm_f64 nm_c128_imag(nm_c128 z) {
    return z.im;
}

static inline nm_c128 nm_c128_conj(nm_c128 z) {
    return nm_c128_make(z.re, nm_f64_neg(z.im));
}

static inline nm_c128 nm_c128_neg(nm_c128 z) {
    return nm_c128_make(nm_f64_neg(z.re), nm_f64_neg(z.im));
}

static inline nm_c128 nm_c128_add(nm_c128 a, nm_c128 b) {
    return nm_c128_make(nm_f64_add(a.re, b.re), nm_f64_add(a.im, b.im));
}

static inline nm_c128 nm_c128_sub(nm_c128 a, nm_c128 b) {
    return nm_c128_make(nm_f64_sub(a.re, b.re), nm_f64_sub(a.im, b.im));
}

static inline nm_c128 nm_c128_mul(nm_c128 a, nm_c128 b) {
    return nm_c128_make(nm_f64_sub(nm_f64_mul(a.re, b.re), nm_f64_mul(a.im, b.im)),
                        nm_f64_add(nm_f64_mul(a.re, b.im), nm_f64_mul(a.im, b.re)));
}

// a / b as Numba's @njit computes it (CPython's algorithm); b == 0 gives NumPy's (a.re/0, a.im/0).
static inline nm_c128 nm_c128_div(nm_c128 a, nm_c128 b) {
    nm_f64 abr = nm_f64_abs(b.re);
    nm_f64 abi = nm_f64_abs(b.im);
    if (nm_f64_ge(abr, abi)) {
        if ((abr.bits | abi.bits) == 0UL) {
            return nm_c128_make(nm_f64_div(a.re, abr), nm_f64_div(a.im, abi));
        }
        nm_f64 ratio = nm_f64_div(b.im, b.re);
        nm_f64 denom = nm_f64_add(b.re, nm_f64_mul(b.im, ratio));
        return nm_c128_make(nm_f64_div(nm_f64_add(a.re, nm_f64_mul(a.im, ratio)), denom),
                            nm_f64_div(nm_f64_sub(a.im, nm_f64_mul(a.re, ratio)), denom));
    }
    if (nm_f64_ge(abi, abr)) {
        nm_f64 ratio = nm_f64_div(b.re, b.im);
        nm_f64 denom = nm_f64_add(nm_f64_mul(b.re, ratio), b.im);
        return nm_c128_make(nm_f64_div(nm_f64_add(nm_f64_mul(a.re, ratio), a.im), denom),
                            nm_f64_div(nm_f64_sub(nm_f64_mul(a.im, ratio), a.re), denom));
    }
    nm_f64 nan = nm_f64_from_bits(0x7FF8000000000000UL);    // a part of b is NaN
    return nm_c128_make(nan, nan);
}

// np.divide on complex128, NumPy's loop.
static inline nm_c128 nm_c128_np_divide(nm_c128 a, nm_c128 b) {
    nm_f64 abr = nm_f64_abs(b.re);
    nm_f64 abi = nm_f64_abs(b.im);
    nm_f64 one = nm_f64_from_bits(NM_F64_ONE);
    if (nm_f64_ge(abr, abi)) {
        if ((abr.bits | abi.bits) == 0UL) {
            return nm_c128_make(nm_f64_div(a.re, abr), nm_f64_div(a.im, abi));
        }
        nm_f64 rat = nm_f64_div(b.im, b.re);
        nm_f64 scl = nm_f64_div(one, nm_f64_add(b.re, nm_f64_mul(b.im, rat)));
        return nm_c128_make(nm_f64_mul(nm_f64_add(a.re, nm_f64_mul(a.im, rat)), scl),
                            nm_f64_mul(nm_f64_sub(a.im, nm_f64_mul(a.re, rat)), scl));
    }
    nm_f64 rat = nm_f64_div(b.re, b.im);
    nm_f64 scl = nm_f64_div(one, nm_f64_add(b.im, nm_f64_mul(b.re, rat)));
    return nm_c128_make(nm_f64_mul(nm_f64_add(nm_f64_mul(a.re, rat), a.im), scl),
                        nm_f64_mul(nm_f64_sub(nm_f64_mul(a.im, rat), a.re), scl));
}

static inline bool nm_c128_eq(nm_c128 a, nm_c128 b) {
    return nm_f64_eq(a.re, b.re) && nm_f64_eq(a.im, b.im);
}

static inline bool nm_c128_ne(nm_c128 a, nm_c128 b) {
    return !nm_c128_eq(a, b);
}

static inline bool nm_c128_isnan(nm_c128 z) {
    return nm_f64_isnan(z.re) || nm_f64_isnan(z.im);
}

static inline bool nm_c128_isinf(nm_c128 z) {
    return nm_f64_isinf(z.re) || nm_f64_isinf(z.im);
}

static inline bool nm_c128_isfinite(nm_c128 z) {
    return nm_f64_isfinite(z.re) && nm_f64_isfinite(z.im);
}

//@@ c128_abs requires: c128_base fm_hypot
// abs(z) = hypot(re, im), correctly rounded (Numba's complex abs is math.hypot).
static inline nm_f64 nm_c128_abs(nm_c128 z) {
    return nm_f64_hypot(z.re, z.im);
}

//@@ cx_special
// C99 Annex G special values, two 4-bit codes per entry (real | imaginary << 4), indexed by the classes of
// the operand's parts: 0 -inf, 1 negative finite, 2 -0, 3 +0, 4 positive finite, 5 +inf, 6 NaN (the
// order of CPython's special_type). Codes: 0 +0, 1 -0, 2 +1, 3 -1, 4 +inf, 5 -inf, 6 NaN, 7 pi, 8 -pi,
// 9 pi/2, 10 -pi/2, 11 pi/4, 12 -pi/4, 13 3pi/4, 14 -3pi/4, 15 never used (finite operands).
#define NM_CX(re, im) ((re) | ((im) << 4))
constant uchar nm_cx_acos_sv[49] = {
    NM_CX(13, 4), NM_CX(7, 4), NM_CX(7, 4), NM_CX(7, 5), NM_CX(7, 5), NM_CX(13, 5), NM_CX(6, 4),
    NM_CX(9, 4), 0xFF, 0xFF, 0xFF, 0xFF, NM_CX(9, 5), NM_CX(6, 6),
    NM_CX(9, 4), 0xFF, NM_CX(9, 0), NM_CX(9, 1), 0xFF, NM_CX(9, 5), NM_CX(9, 6),
    NM_CX(9, 4), 0xFF, NM_CX(9, 0), NM_CX(9, 1), 0xFF, NM_CX(9, 5), NM_CX(9, 6),
    NM_CX(9, 4), 0xFF, 0xFF, 0xFF, 0xFF, NM_CX(9, 5), NM_CX(6, 6),
    NM_CX(11, 4), NM_CX(0, 4), NM_CX(0, 4), NM_CX(0, 5), NM_CX(0, 5), NM_CX(11, 5), NM_CX(6, 4),
    NM_CX(6, 4), NM_CX(6, 6), NM_CX(6, 6), NM_CX(6, 6), NM_CX(6, 6), NM_CX(6, 5), NM_CX(6, 6),
};
constant uchar nm_cx_acosh_sv[49] = {
    NM_CX(4, 14), NM_CX(4, 8), NM_CX(4, 8), NM_CX(4, 7), NM_CX(4, 7), NM_CX(4, 13), NM_CX(4, 6),
    NM_CX(4, 10), 0xFF, 0xFF, 0xFF, 0xFF, NM_CX(4, 9), NM_CX(6, 6),
    NM_CX(4, 10), 0xFF, NM_CX(0, 10), NM_CX(0, 9), 0xFF, NM_CX(4, 9), NM_CX(6, 9),
    NM_CX(4, 10), 0xFF, NM_CX(0, 10), NM_CX(0, 9), 0xFF, NM_CX(4, 9), NM_CX(6, 9),
    NM_CX(4, 10), 0xFF, 0xFF, 0xFF, 0xFF, NM_CX(4, 9), NM_CX(6, 6),
    NM_CX(4, 12), NM_CX(4, 1), NM_CX(4, 1), NM_CX(4, 0), NM_CX(4, 0), NM_CX(4, 11), NM_CX(4, 6),
    NM_CX(4, 6), NM_CX(6, 6), NM_CX(6, 6), NM_CX(6, 6), NM_CX(6, 6), NM_CX(4, 6), NM_CX(6, 6),
};
constant uchar nm_cx_asinh_sv[49] = {
    NM_CX(5, 12), NM_CX(5, 1), NM_CX(5, 1), NM_CX(5, 0), NM_CX(5, 0), NM_CX(5, 11), NM_CX(5, 6),
    NM_CX(5, 10), 0xFF, 0xFF, 0xFF, 0xFF, NM_CX(5, 9), NM_CX(6, 6),
    NM_CX(5, 10), 0xFF, NM_CX(1, 1), NM_CX(1, 0), 0xFF, NM_CX(5, 9), NM_CX(6, 6),
    NM_CX(4, 10), 0xFF, NM_CX(0, 1), NM_CX(0, 0), 0xFF, NM_CX(4, 9), NM_CX(6, 6),
    NM_CX(4, 10), 0xFF, 0xFF, 0xFF, 0xFF, NM_CX(4, 9), NM_CX(6, 6),
    NM_CX(4, 12), NM_CX(4, 1), NM_CX(4, 1), NM_CX(4, 0), NM_CX(4, 0), NM_CX(4, 11), NM_CX(4, 6),
    NM_CX(4, 6), NM_CX(6, 6), NM_CX(6, 1), NM_CX(6, 0), NM_CX(6, 6), NM_CX(4, 6), NM_CX(6, 6),
};
constant uchar nm_cx_atanh_sv[49] = {
    NM_CX(1, 10), NM_CX(1, 10), NM_CX(1, 10), NM_CX(1, 9), NM_CX(1, 9), NM_CX(1, 9), NM_CX(1, 6),
    NM_CX(1, 10), 0xFF, 0xFF, 0xFF, 0xFF, NM_CX(1, 9), NM_CX(6, 6),
    NM_CX(1, 10), 0xFF, NM_CX(1, 1), NM_CX(1, 0), 0xFF, NM_CX(1, 9), NM_CX(1, 6),
    NM_CX(0, 10), 0xFF, NM_CX(0, 1), NM_CX(0, 0), 0xFF, NM_CX(0, 9), NM_CX(0, 6),
    NM_CX(0, 10), 0xFF, 0xFF, 0xFF, 0xFF, NM_CX(0, 9), NM_CX(6, 6),
    NM_CX(0, 10), NM_CX(0, 10), NM_CX(0, 10), NM_CX(0, 9), NM_CX(0, 9), NM_CX(0, 9), NM_CX(0, 6),
    NM_CX(0, 10), NM_CX(6, 6), NM_CX(6, 6), NM_CX(6, 6), NM_CX(6, 6), NM_CX(0, 9), NM_CX(6, 6),
};
constant uchar nm_cx_cosh_sv[49] = {
    NM_CX(4, 6), 0xFF, NM_CX(4, 0), NM_CX(4, 1), 0xFF, NM_CX(4, 6), NM_CX(4, 6),
    NM_CX(6, 6), 0xFF, 0xFF, 0xFF, 0xFF, NM_CX(6, 6), NM_CX(6, 6),
    NM_CX(6, 0), 0xFF, NM_CX(2, 0), NM_CX(2, 1), 0xFF, NM_CX(6, 0), NM_CX(6, 0),
    NM_CX(6, 0), 0xFF, NM_CX(2, 1), NM_CX(2, 0), 0xFF, NM_CX(6, 0), NM_CX(6, 0),
    NM_CX(6, 6), 0xFF, 0xFF, 0xFF, 0xFF, NM_CX(6, 6), NM_CX(6, 6),
    NM_CX(4, 6), 0xFF, NM_CX(4, 1), NM_CX(4, 0), 0xFF, NM_CX(4, 6), NM_CX(4, 6),
    NM_CX(6, 6), NM_CX(6, 6), NM_CX(6, 0), NM_CX(6, 0), NM_CX(6, 6), NM_CX(6, 6), NM_CX(6, 6),
};
constant uchar nm_cx_exp_sv[49] = {
    NM_CX(0, 0), 0xFF, NM_CX(0, 1), NM_CX(0, 0), 0xFF, NM_CX(0, 0), NM_CX(0, 0),
    NM_CX(6, 6), 0xFF, 0xFF, 0xFF, 0xFF, NM_CX(6, 6), NM_CX(6, 6),
    NM_CX(6, 6), 0xFF, NM_CX(2, 1), NM_CX(2, 0), 0xFF, NM_CX(6, 6), NM_CX(6, 6),
    NM_CX(6, 6), 0xFF, NM_CX(2, 1), NM_CX(2, 0), 0xFF, NM_CX(6, 6), NM_CX(6, 6),
    NM_CX(6, 6), 0xFF, 0xFF, 0xFF, 0xFF, NM_CX(6, 6), NM_CX(6, 6),
    NM_CX(4, 6), 0xFF, NM_CX(4, 1), NM_CX(4, 0), 0xFF, NM_CX(4, 6), NM_CX(4, 6),
    NM_CX(6, 6), NM_CX(6, 6), NM_CX(6, 1), NM_CX(6, 0), NM_CX(6, 6), NM_CX(6, 6), NM_CX(6, 6),
};
constant uchar nm_cx_log_sv[49] = {
    NM_CX(4, 14), NM_CX(4, 8), NM_CX(4, 8), NM_CX(4, 7), NM_CX(4, 7), NM_CX(4, 13), NM_CX(4, 6),
    NM_CX(4, 10), 0xFF, 0xFF, 0xFF, 0xFF, NM_CX(4, 9), NM_CX(6, 6),
    NM_CX(4, 10), 0xFF, NM_CX(5, 8), NM_CX(5, 7), 0xFF, NM_CX(4, 9), NM_CX(6, 6),
    NM_CX(4, 10), 0xFF, NM_CX(5, 1), NM_CX(5, 0), 0xFF, NM_CX(4, 9), NM_CX(6, 6),
    NM_CX(4, 10), 0xFF, 0xFF, 0xFF, 0xFF, NM_CX(4, 9), NM_CX(6, 6),
    NM_CX(4, 12), NM_CX(4, 1), NM_CX(4, 1), NM_CX(4, 0), NM_CX(4, 0), NM_CX(4, 11), NM_CX(4, 6),
    NM_CX(4, 6), NM_CX(6, 6), NM_CX(6, 6), NM_CX(6, 6), NM_CX(6, 6), NM_CX(4, 6), NM_CX(6, 6),
};
constant uchar nm_cx_sinh_sv[49] = {
    NM_CX(4, 6), 0xFF, NM_CX(5, 1), NM_CX(5, 0), 0xFF, NM_CX(4, 6), NM_CX(4, 6),
    NM_CX(6, 6), 0xFF, 0xFF, 0xFF, 0xFF, NM_CX(6, 6), NM_CX(6, 6),
    NM_CX(0, 6), 0xFF, NM_CX(1, 1), NM_CX(1, 0), 0xFF, NM_CX(0, 6), NM_CX(0, 6),
    NM_CX(0, 6), 0xFF, NM_CX(0, 1), NM_CX(0, 0), 0xFF, NM_CX(0, 6), NM_CX(0, 6),
    NM_CX(6, 6), 0xFF, 0xFF, 0xFF, 0xFF, NM_CX(6, 6), NM_CX(6, 6),
    NM_CX(4, 6), 0xFF, NM_CX(4, 1), NM_CX(4, 0), 0xFF, NM_CX(4, 6), NM_CX(4, 6),
    NM_CX(6, 6), NM_CX(6, 6), NM_CX(6, 1), NM_CX(6, 0), NM_CX(6, 6), NM_CX(6, 6), NM_CX(6, 6),
};
constant uchar nm_cx_sqrt_sv[49] = {
    NM_CX(4, 5), NM_CX(0, 5), NM_CX(0, 5), NM_CX(0, 4), NM_CX(0, 4), NM_CX(4, 4), NM_CX(6, 4),
    NM_CX(4, 5), 0xFF, 0xFF, 0xFF, 0xFF, NM_CX(4, 4), NM_CX(6, 6),
    NM_CX(4, 5), 0xFF, NM_CX(0, 1), NM_CX(0, 0), 0xFF, NM_CX(4, 4), NM_CX(6, 6),
    NM_CX(4, 5), 0xFF, NM_CX(0, 1), NM_CX(0, 0), 0xFF, NM_CX(4, 4), NM_CX(6, 6),
    NM_CX(4, 5), 0xFF, 0xFF, 0xFF, 0xFF, NM_CX(4, 4), NM_CX(6, 6),
    NM_CX(4, 5), NM_CX(4, 1), NM_CX(4, 1), NM_CX(4, 0), NM_CX(4, 0), NM_CX(4, 4), NM_CX(4, 6),
    NM_CX(4, 5), NM_CX(6, 6), NM_CX(6, 6), NM_CX(6, 6), NM_CX(6, 6), NM_CX(4, 4), NM_CX(6, 6),
};
constant uchar nm_cx_tanh_sv[49] = {
    NM_CX(3, 0), 0xFF, NM_CX(3, 1), NM_CX(3, 0), 0xFF, NM_CX(3, 0), NM_CX(3, 0),
    NM_CX(6, 6), 0xFF, 0xFF, 0xFF, 0xFF, NM_CX(6, 6), NM_CX(6, 6),
    NM_CX(1, 6), 0xFF, NM_CX(1, 1), NM_CX(1, 0), 0xFF, NM_CX(1, 6), NM_CX(1, 6),
    NM_CX(0, 6), 0xFF, NM_CX(0, 1), NM_CX(0, 0), 0xFF, NM_CX(0, 6), NM_CX(0, 6),
    NM_CX(6, 6), 0xFF, 0xFF, 0xFF, 0xFF, NM_CX(6, 6), NM_CX(6, 6),
    NM_CX(2, 0), 0xFF, NM_CX(2, 1), NM_CX(2, 0), 0xFF, NM_CX(2, 0), NM_CX(2, 0),
    NM_CX(6, 6), NM_CX(6, 6), NM_CX(6, 1), NM_CX(6, 0), NM_CX(6, 6), NM_CX(6, 6), NM_CX(6, 6),
};
constant uchar nm_cx_rect_sv[49] = {
    NM_CX(4, 6), 0xFF, NM_CX(5, 0), NM_CX(5, 1), 0xFF, NM_CX(4, 6), NM_CX(4, 6),
    NM_CX(6, 6), 0xFF, 0xFF, 0xFF, 0xFF, NM_CX(6, 6), NM_CX(6, 6),
    NM_CX(0, 0), 0xFF, NM_CX(1, 0), NM_CX(1, 1), 0xFF, NM_CX(0, 0), NM_CX(0, 0),
    NM_CX(0, 0), 0xFF, NM_CX(0, 1), NM_CX(0, 0), 0xFF, NM_CX(0, 0), NM_CX(0, 0),
    NM_CX(6, 6), 0xFF, 0xFF, 0xFF, 0xFF, NM_CX(6, 6), NM_CX(6, 6),
    NM_CX(4, 6), 0xFF, NM_CX(4, 1), NM_CX(4, 0), 0xFF, NM_CX(4, 6), NM_CX(4, 6),
    NM_CX(6, 6), NM_CX(6, 6), NM_CX(6, 0), NM_CX(6, 0), NM_CX(6, 6), NM_CX(6, 6), NM_CX(6, 6),
};

// A part's class for the tables, from its float64 bit pattern.
static inline uint nm_cx_class64(ulong u) {
    ulong a = u & 0x7FFFFFFFFFFFFFFFUL;
    bool neg = (u >> 63) != 0UL;
    if (a > 0x7FF0000000000000UL) {
        return 6u;
    }
    if (a == 0x7FF0000000000000UL) {
        return neg ? 0u : 5u;
    }
    if (a == 0UL) {
        return neg ? 2u : 3u;
    }
    return neg ? 1u : 4u;
}

static inline uint nm_cx_class32(float x) {
    uint u = as_type<uint>(x);
    uint a = u & 0x7FFFFFFFu;
    bool neg = (u >> 31) != 0u;
    if (a > 0x7F800000u) {
        return 6u;
    }
    if (a == 0x7F800000u) {
        return neg ? 0u : 5u;
    }
    if (a == 0u) {
        return neg ? 2u : 3u;
    }
    return neg ? 1u : 4u;
}

static inline uint nm_cx_entry(constant uchar* table, uint re_class, uint im_class) {
    return uint(table[re_class * 7u + im_class]);
}

//@@ c128_math requires: c128_base cx_special fm_exp fm_log fm_trig fm_atan fm_ahyp fm_hypot
// The cmath functions on complex128 (CPython's algorithms; see the top of the file).

static inline nm_f64 nm_cx_code64(uint code) {
    ulong bits = 0UL;
    switch (code) {
        case 0u: bits = 0UL; break;
        case 1u: bits = NM_F64_SIGN; break;
        case 2u: bits = NM_F64_ONE; break;
        case 3u: bits = NM_F64_SIGN | NM_F64_ONE; break;
        case 4u: bits = NM_F64_EXP; break;
        case 5u: bits = NM_F64_SIGN | NM_F64_EXP; break;
        case 6u: bits = 0x7FF8000000000000UL; break;
        case 7u: bits = 0x400921FB54442D18UL; break;
        case 8u: bits = 0xC00921FB54442D18UL; break;
        case 9u: bits = 0x3FF921FB54442D18UL; break;
        case 10u: bits = 0xBFF921FB54442D18UL; break;
        case 11u: bits = 0x3FE921FB54442D18UL; break;
        case 12u: bits = 0xBFE921FB54442D18UL; break;
        case 13u: bits = 0x4002D97C7F3321D2UL; break;
        default: bits = 0xC002D97C7F3321D2UL; break;
    }
    return nm_f64_from_bits(bits);
}

static inline nm_c128 nm_cx_special64(constant uchar* table, nm_c128 z) {
    uint e = nm_cx_entry(table, nm_cx_class64(z.re.bits), nm_cx_class64(z.im.bits));
    return nm_c128_make(nm_cx_code64(e & 15u), nm_cx_code64(e >> 4));
}

static inline nm_f64 nm_cx_copysign_inf(nm_fm_x sign_of) {
    return nm_f64_from_bits((ulong(sign_of.neg) << 63) | NM_F64_EXP);
}

static inline nm_fm_x nm_cx_huge(uint neg) {
    nm_fm_x r;
    r.m = NM_F64_SIGN;
    r.e = 8000;                                               // rounds to infinity
    r.neg = neg;
    return r;
}

// e^x, cosh x and sinh x, unrounded, for any finite x (values beyond the range round to infinity or zero).
static inline nm_fm_x nm_cx_exp_any(ulong u) {
    if ((u & NM_F64_ABS) >= 0x409F400000000000UL) {          // |x| >= 2000
        return (u >> 63) != 0UL ? nm_fm_x_make(0u, 0, 0UL) : nm_cx_huge(0u);
    }
    return nm_fm_exp_x(u);
}

static inline nm_fm_x nm_cx_cosh_any(ulong u) {
    return (u & NM_F64_ABS) >= 0x409F400000000000UL ? nm_cx_huge(0u) : nm_fm_cosh_x(u);
}

static inline nm_fm_x nm_cx_sinh_any(ulong u) {
    return (u & NM_F64_ABS) >= 0x409F400000000000UL ? nm_cx_huge(uint(u >> 63)) : nm_fm_sinh_x(u);
}

// x^2 + y^2 for finite parts, as a 128-bit extended value (the top 128 bits of the exact sum).
static inline nm_fm_x2 nm_cx_norm2(ulong ux, ulong uy) {
    ulong ax = ux & NM_F64_ABS;
    ulong ay = uy & NM_F64_ABS;
    ulong big = metal::max(ax, ay);
    ulong small = metal::min(ax, ay);
    if (big == 0UL) {
        return nm_fm_x2_from128(0u, nm_fm_u128(0UL, 0UL), 0);
    }
    nm_fm_x a = nm_fm_x_from_bits(big);
    nm_fm_x b = nm_fm_x_from_bits(small);
    ulong ma = a.m >> 11;
    ulong mb = b.m >> 11;
    nm_f64_u128 s = nm_fm_shl128(nm_f64_i_mul64(ma, ma), 21u);                  // in [2^125, 2^127)
    if (small != 0UL) {
        int sh = 21 - 2 * (a.e - b.e);
        nm_f64_u128 sb = nm_f64_i_mul64(mb, mb);
        s = nm_fm_add128(s, sh >= 0 ? nm_fm_shl128(sb, uint(sh)) : nm_fm_shr128(sb, uint(-sh)));
    }
    return nm_fm_x2_from128(0u, s, 125 - 2 * a.e);
}

// log |z| for finite z != 0, unrounded (x2): log of the exact |z|^2, halved; |z| = 1 + tiny kept exact.
static inline nm_fm_x2 nm_cx_log_abs(ulong ux, ulong uy) {
    ulong ax = ux & NM_F64_ABS;
    ulong ay = uy & NM_F64_ABS;
    nm_fm_x2 l;
    if (ax == NM_F64_ONE || ay == NM_F64_ONE) {
        nm_fm_x small = nm_fm_x_from_bits(ax == NM_F64_ONE ? ay : ax);
        l = nm_fm_log1p_x(nm_fm_x_mul(small, small));
    } else {
        nm_fm_x2 s = nm_cx_norm2(ux, uy);
        l = nm_fm_log_core(s.hi, s.lo, s.e);
    }
    l.e -= 1;
    return l;
}

// atan2(y, x) for finite parts (zeros included), unrounded.
static inline nm_fm_x nm_cx_atan2_x(nm_fm_x y, nm_fm_x x) {
    nm_fm_x v;
    if (y.m == 0UL) {
        v = x.neg != 0u ? nm_fm_x_const(NM_FM_PI_M, NM_FM_PI_E) : nm_fm_x_make(0u, 0, 0UL);
    } else if (x.m == 0UL) {
        v = nm_fm_x_const(NM_FM_PIO2_M, NM_FM_PIO2_E);
    } else {
        nm_fm_x ay = y;
        nm_fm_x ax = x;
        ay.neg = 0u;
        ax.neg = 0u;
        v = nm_fm_atan2_pos(ay, ax);
        if (x.neg != 0u) {
            v = nm_fm_x_sub(nm_fm_x_const(NM_FM_PI_M, NM_FM_PI_E), v);
        }
    }
    v.neg = y.neg;
    return v;
}

static inline nm_fm_x nm_cx_x(nm_f64 v) {
    return nm_fm_x_from_bits(v.bits);
}

static inline nm_f64 nm_cx_round(nm_fm_x v) {
    return nm_fm_x_round(v);
}

static inline nm_c128 nm_c128_exp(nm_c128 z) {
    ulong ux = z.re.bits;
    ulong uy = z.im.bits;
    if (!nm_c128_isfinite(z)) {
        if (nm_f64_isinf(z.re) && nm_f64_isfinite(z.im) && (uy & NM_F64_ABS) != 0UL) {
            nm_fm_sincos sc = nm_fm_sincos_x(uy);
            if ((ux >> 63) == 0UL) {
                return nm_c128_make(nm_cx_copysign_inf(sc.c), nm_cx_copysign_inf(sc.s));
            }
            return nm_c128_make(nm_f64_from_bits(ulong(sc.c.neg) << 63), nm_f64_from_bits(ulong(sc.s.neg) << 63));
        }
        return nm_cx_special64(nm_cx_exp_sv, z);
    }
    nm_fm_x l = nm_cx_exp_any(ux);
    nm_fm_sincos sc = nm_fm_sincos_x(uy);
    return nm_c128_make(nm_cx_round(nm_fm_x_mul(l, sc.c)), nm_cx_round(nm_fm_x_mul(l, sc.s)));
}

static inline nm_c128 nm_c128_log(nm_c128 z) {
    if (!nm_c128_isfinite(z)) {
        return nm_cx_special64(nm_cx_log_sv, z);
    }
    nm_f64 im = nm_f64_atan2(z.im, z.re);
    if (((z.re.bits | z.im.bits) & NM_F64_ABS) == 0UL) {
        return nm_c128_make(nm_f64_from_bits(NM_F64_SIGN | NM_F64_EXP), im);
    }
    return nm_c128_make(nm_fm_x2_round(nm_cx_log_abs(z.re.bits, z.im.bits)), im);
}

// log10: CPython divides both parts of log(z) by ln 10; here log|z| and the angle are scaled before
// their rounding (the special values are the table's divided by ln 10, as CPython's).
static inline nm_c128 nm_c128_log10(nm_c128 z) {
    if (!nm_c128_isfinite(z)) {
        nm_c128 r = nm_cx_special64(nm_cx_log_sv, z);
        nm_f64 ln10 = nm_f64_from_bits(0x40026BB1BBB55516UL);
        return nm_c128_make(nm_f64_div(r.re, ln10), nm_f64_div(r.im, ln10));
    }
    nm_fm_x inv = nm_fm_x_const(NM_FM_INV_LN10_HI, NM_FM_INV_LN10_E);
    nm_f64 im = nm_cx_round(nm_fm_x_mul(nm_cx_atan2_x(nm_cx_x(z.im), nm_cx_x(z.re)), inv));
    if (((z.re.bits | z.im.bits) & NM_F64_ABS) == 0UL) {
        return nm_c128_make(nm_f64_from_bits(NM_F64_SIGN | NM_F64_EXP), im);
    }
    nm_fm_x2 l = nm_cx_log_abs(z.re.bits, z.im.bits);
    return nm_c128_make(nm_fm_x2_round(nm_fm_x2_mul_const(l, NM_FM_INV_LN10_HI, NM_FM_INV_LN10_LO, NM_FM_INV_LN10_E)), im);
}

// sqrt: s = sqrt((|x| + |z|)/2), d = |y|/(2s) (CPython's method), all in the extended format.
static inline nm_c128 nm_c128_sqrt(nm_c128 z) {
    if (!nm_c128_isfinite(z)) {
        return nm_cx_special64(nm_cx_sqrt_sv, z);
    }
    ulong ax = z.re.bits & NM_F64_ABS;
    ulong ay = z.im.bits & NM_F64_ABS;
    if ((ax | ay) == 0UL) {
        return nm_c128_make(nm_f64_from_bits(0UL), z.im);
    }
    nm_fm_x modulus = nm_fm_x_sqrt(nm_fm_x2_to_x(nm_cx_norm2(ax, ay)));
    nm_fm_x s = nm_fm_x_add(nm_fm_x_from_bits(ax), modulus);
    s.e -= 1;
    s = nm_fm_x_sqrt(s);
    nm_fm_x d = nm_fm_x_div(nm_fm_x_from_bits(ay), s);
    d.e -= 1;
    nm_f64 sr = nm_cx_round(s);
    nm_f64 dr = nm_cx_round(d);
    if ((z.re.bits >> 63) == 0UL || ax == 0UL) {
        return nm_c128_make(sr, nm_f64_copysign(dr, z.im));
    }
    return nm_c128_make(dr, nm_f64_copysign(sr, z.im));
}

static inline nm_c128 nm_c128_cosh(nm_c128 z) {
    ulong ux = z.re.bits;
    ulong uy = z.im.bits;
    if (!nm_c128_isfinite(z)) {
        if (nm_f64_isinf(z.re) && nm_f64_isfinite(z.im) && (uy & NM_F64_ABS) != 0UL) {
            nm_fm_sincos sc = nm_fm_sincos_x(uy);
            nm_f64 im = nm_cx_copysign_inf(sc.s);
            return nm_c128_make(nm_cx_copysign_inf(sc.c), (ux >> 63) == 0UL ? im : nm_f64_neg(im));
        }
        return nm_cx_special64(nm_cx_cosh_sv, z);
    }
    nm_fm_sincos sc = nm_fm_sincos_x(uy);
    return nm_c128_make(nm_cx_round(nm_fm_x_mul(sc.c, nm_cx_cosh_any(ux))),
                        nm_cx_round(nm_fm_x_mul(sc.s, nm_cx_sinh_any(ux))));
}

static inline nm_c128 nm_c128_sinh(nm_c128 z) {
    ulong ux = z.re.bits;
    ulong uy = z.im.bits;
    if (!nm_c128_isfinite(z)) {
        if (nm_f64_isinf(z.re) && nm_f64_isfinite(z.im) && (uy & NM_F64_ABS) != 0UL) {
            nm_fm_sincos sc = nm_fm_sincos_x(uy);
            nm_f64 re = nm_cx_copysign_inf(sc.c);
            return nm_c128_make((ux >> 63) == 0UL ? re : nm_f64_neg(re), nm_cx_copysign_inf(sc.s));
        }
        return nm_cx_special64(nm_cx_sinh_sv, z);
    }
    nm_fm_sincos sc = nm_fm_sincos_x(uy);
    return nm_c128_make(nm_cx_round(nm_fm_x_mul(sc.c, nm_cx_sinh_any(ux))),
                        nm_cx_round(nm_fm_x_mul(sc.s, nm_cx_cosh_any(ux))));
}

// tanh(x + iy) = (tanh x (1 + tan^2 y) + i tan y / cosh^2 x) / (1 + tanh^2 x tan^2 y) (CPython's formula,
// free of cancellation); for |x| >= 22 the real part rounds to +-1 and the imaginary part is
// 4 sin y cos y e^(-2|x|).
static inline nm_c128 nm_c128_tanh(nm_c128 z) {
    ulong ux = z.re.bits;
    ulong uy = z.im.bits;
    if (!nm_c128_isfinite(z)) {
        if (nm_f64_isinf(z.re) && nm_f64_isfinite(z.im) && (uy & NM_F64_ABS) != 0UL) {
            nm_fm_sincos sc = nm_fm_sincos_x(uy);
            return nm_c128_make(nm_f64_from_bits((ux & NM_F64_SIGN) | NM_F64_ONE),
                                nm_f64_from_bits(ulong(sc.s.neg ^ sc.c.neg) << 63));
        }
        return nm_cx_special64(nm_cx_tanh_sv, z);
    }
    ulong ax = ux & NM_F64_ABS;
    nm_fm_sincos sc = nm_fm_sincos_x(uy);
    if (ax >= 0x4036000000000000UL) {
        nm_fm_x e = nm_cx_exp_any(NM_F64_SIGN | (ax + NM_F64_HIDDEN));   // e^(-2|x|)
        nm_fm_x im = nm_fm_x_mul(nm_fm_x_mul(sc.s, sc.c), e);
        im.e += 2;
        return nm_c128_make(nm_f64_from_bits((ux & NM_F64_SIGN) | NM_F64_ONE), nm_cx_round(im));
    }
    nm_fm_x one = nm_fm_x_const(NM_F64_SIGN, 0);
    nm_fm_x tx = ax == 0UL ? nm_fm_x_from_bits(ux) : nm_fm_tanh_x(ux);
    nm_fm_x ty = nm_fm_x_div(sc.s, sc.c);
    nm_fm_x cx = nm_fm_x_div(one, nm_fm_cosh_x(ux));
    nm_fm_x txty = nm_fm_x_mul(tx, ty);
    nm_fm_x denom = nm_fm_x_add(one, nm_fm_x_mul(txty, txty));
    nm_fm_x re = nm_fm_x_div(nm_fm_x_mul(tx, nm_fm_x_add(one, nm_fm_x_mul(ty, ty))), denom);
    nm_fm_x im = nm_fm_x_mul(nm_fm_x_mul(nm_fm_x_div(ty, denom), cx), cx);
    return nm_c128_make(nm_cx_round(re), nm_cx_round(im));
}

// f(z) = -i g(iz) for (f, g) = (sin, sinh), (tan, tanh), (asin, asinh), (atan, atanh); cos z = cosh(iz).
static inline nm_c128 nm_cx_times_i(nm_c128 z) {
    return nm_c128_make(nm_f64_neg(z.im), z.re);
}

static inline nm_c128 nm_cx_times_minus_i(nm_c128 z) {
    return nm_c128_make(z.im, nm_f64_neg(z.re));
}

static inline nm_c128 nm_c128_sin(nm_c128 z) {
    return nm_cx_times_minus_i(nm_c128_sinh(nm_cx_times_i(z)));
}

static inline nm_c128 nm_c128_cos(nm_c128 z) {
    return nm_c128_cosh(nm_cx_times_i(z));
}

static inline nm_c128 nm_c128_tan(nm_c128 z) {
    return nm_cx_times_minus_i(nm_c128_tanh(nm_cx_times_i(z)));
}

// An unrounded complex value, for intermediate results of the inverse functions.
struct nm_cx_ext {
    nm_fm_x re;
    nm_fm_x im;
};

// sqrt of an unrounded complex value (CPython's method, as nm_c128_sqrt; finite parts).
static inline nm_cx_ext nm_cx_sqrt_x(nm_fm_x re, nm_fm_x im) {
    nm_cx_ext r;
    nm_fm_x ax = re;
    nm_fm_x ay = im;
    ax.neg = 0u;
    ay.neg = 0u;
    if (ax.m == 0UL && ay.m == 0UL) {
        r.re = ax;
        r.im = im;
        return r;
    }
    nm_fm_x modulus = nm_fm_x_sqrt(nm_fm_x_add(nm_fm_x_mul(ax, ax), nm_fm_x_mul(ay, ay)));
    nm_fm_x s = nm_fm_x_add(ax, modulus);
    s.e -= 1;
    s = nm_fm_x_sqrt(s);
    nm_fm_x d = nm_fm_x_div(ay, s);
    d.e -= 1;
    if (re.neg == 0u || re.m == 0UL) {
        r.re = s;
        r.im = d;
    } else {
        r.re = d;
        r.im = s;
    }
    r.im.neg = im.neg;
    return r;
}

// 1 + sign a (exactly, in the extended format), for a float64 a.
static inline nm_fm_x nm_cx_one_plus(nm_f64 a, uint flip) {
    nm_fm_x v = nm_cx_x(a);
    v.neg ^= flip;
    return nm_fm_x_add(nm_fm_x_const(NM_F64_SIGN, 0), v);
}

// a b - c d of extended values.
static inline nm_fm_x nm_cx_dot_x(nm_fm_x a, nm_fm_x b, nm_fm_x c, nm_fm_x d) {
    return nm_fm_x_sub(nm_fm_x_mul(a, b), nm_fm_x_mul(c, d));
}

// Whether a part exceeds CPython's CM_LARGE_DOUBLE (DBL_MAX / 4).
static inline bool nm_cx_large(nm_c128 z) {
    return (z.re.bits & NM_F64_ABS) > 0x7FCFFFFFFFFFFFFFUL || (z.im.bits & NM_F64_ABS) > 0x7FCFFFFFFFFFFFFFUL;
}

// log(2 |z|) for finite z != 0, rounded.
static inline nm_f64 nm_cx_log_twice_abs(nm_c128 z) {
    nm_fm_x2 l = nm_cx_log_abs(z.re.bits, z.im.bits);
    return nm_cx_round(nm_fm_x_add(nm_fm_x2_to_x(l), nm_fm_x_const(NM_FM_LN2_M, NM_FM_LN2_E)));
}

static inline nm_c128 nm_c128_acos(nm_c128 z) {
    if (!nm_c128_isfinite(z)) {
        return nm_cx_special64(nm_cx_acos_sv, z);
    }
    if (nm_cx_large(z)) {
        nm_f64 re = nm_f64_atan2(nm_f64_abs(z.im), z.re);
        return nm_c128_make(re, nm_f64_neg(nm_f64_copysign(nm_cx_log_twice_abs(z), z.im)));
    }
    nm_cx_ext s1 = nm_cx_sqrt_x(nm_cx_one_plus(z.re, 1u), nm_fm_x_neg(nm_cx_x(z.im)));
    nm_cx_ext s2 = nm_cx_sqrt_x(nm_cx_one_plus(z.re, 0u), nm_cx_x(z.im));
    nm_fm_x re = nm_cx_atan2_x(s1.re, s2.re);
    re.e += 1;
    nm_fm_x w = nm_cx_dot_x(s2.re, s1.im, s2.im, s1.re);
    return nm_c128_make(nm_cx_round(re), w.m == 0UL ? nm_cx_round(w) : nm_fm_x2_round(nm_fm_asinh_x(w)));
}

static inline nm_c128 nm_c128_acosh(nm_c128 z) {
    if (!nm_c128_isfinite(z)) {
        return nm_cx_special64(nm_cx_acosh_sv, z);
    }
    if (nm_cx_large(z)) {
        return nm_c128_make(nm_cx_log_twice_abs(z), nm_f64_atan2(z.im, z.re));
    }
    nm_fm_x zre = nm_cx_x(z.re);
    nm_cx_ext s1 = nm_cx_sqrt_x(nm_fm_x_sub(zre, nm_fm_x_const(NM_F64_SIGN, 0)), nm_cx_x(z.im));
    nm_cx_ext s2 = nm_cx_sqrt_x(nm_fm_x_add(zre, nm_fm_x_const(NM_F64_SIGN, 0)), nm_cx_x(z.im));
    nm_fm_x im = nm_cx_atan2_x(s1.im, s2.re);
    im.e += 1;
    nm_fm_x w = nm_cx_dot_x(s1.re, s2.re, nm_fm_x_neg(s1.im), s2.im);
    return nm_c128_make(w.m == 0UL ? nm_cx_round(w) : nm_fm_x2_round(nm_fm_asinh_x(w)), nm_cx_round(im));
}

static inline nm_c128 nm_c128_asinh(nm_c128 z) {
    if (!nm_c128_isfinite(z)) {
        return nm_cx_special64(nm_cx_asinh_sv, z);
    }
    if (nm_cx_large(z)) {
        return nm_c128_make(nm_f64_copysign(nm_cx_log_twice_abs(z), z.re), nm_f64_atan2(z.im, nm_f64_abs(z.re)));
    }
    nm_cx_ext s1 = nm_cx_sqrt_x(nm_cx_one_plus(z.im, 0u), nm_fm_x_neg(nm_cx_x(z.re)));
    nm_cx_ext s2 = nm_cx_sqrt_x(nm_cx_one_plus(z.im, 1u), nm_cx_x(z.re));
    nm_fm_x w = nm_cx_dot_x(s1.re, s2.im, s2.re, s1.im);
    nm_fm_x im = nm_cx_atan2_x(nm_cx_x(z.im), nm_cx_dot_x(s1.re, s2.re, s1.im, s2.im));
    return nm_c128_make(w.m == 0UL ? nm_cx_round(w) : nm_fm_x2_round(nm_fm_asinh_x(w)), nm_cx_round(im));
}

static inline nm_c128 nm_c128_asin(nm_c128 z) {
    return nm_cx_times_minus_i(nm_c128_asinh(nm_cx_times_i(z)));
}

// atanh (CPython's cases, with x >= 0 by atanh(-z) = -atanh(z)): large |z|: 1/z's real part and
// +-pi/2; x = 1 and tiny y: the limit form; otherwise log1p(4x / |1 - z|^2)/4 and
// -atan2(-2y, 1 - |z|^2)/2 with |1 - z|^2 and 1 - |z|^2 formed exactly.
static inline nm_c128 nm_c128_atanh(nm_c128 z) {
    if (!nm_c128_isfinite(z)) {
        return nm_cx_special64(nm_cx_atanh_sv, z);
    }
    bool negate = (z.re.bits >> 63) != 0UL && (z.re.bits & NM_F64_ABS) != 0UL;
    if (negate) {
        z = nm_c128_neg(z);
    }
    ulong ax = z.re.bits & NM_F64_ABS;
    ulong ay = z.im.bits & NM_F64_ABS;
    nm_fm_x one = nm_fm_x_const(NM_F64_SIGN, 0);
    nm_f64 re;
    nm_f64 im;
    if (ax > 0x5FDFFFFFFFFFFFFFUL || ay > 0x5FDFFFFFFFFFFFFFUL) {
        re = nm_cx_round(nm_fm_x_div(nm_cx_x(z.re), nm_fm_x2_to_x(nm_cx_norm2(ax, ay))));
        im = nm_f64_copysign(nm_f64_from_bits(0x3FF921FB54442D18UL), z.im);
    } else if (ax == NM_F64_ONE && ay < 0x2000000000000000UL) {
        if (ay == 0UL) {
            re = nm_f64_from_bits(NM_F64_EXP);
            im = z.im;
        } else {
            // -log(sqrt(|y|) / sqrt(hypot(|y|, 2))) = log(2/|y|)/2 to far below an ulp here
            nm_fm_x q = nm_fm_x_div(nm_fm_x_const(NM_F64_SIGN, 1), nm_fm_x_from_bits(ay));
            nm_fm_x2 l = nm_fm_log_core(q.m, 0UL, q.e);
            l.e -= 1;
            re = nm_fm_x2_round(l);
            nm_f64 a = nm_f64_atan2(nm_f64_from_bits(0x4000000000000000UL), nm_f64_from_bits(ay | NM_F64_SIGN));
            im = nm_f64_copysign(nm_f64_from_bits(a.bits - (1UL << 52)), z.im);
        }
    } else {
        nm_fm_x omx = nm_fm_x_sub(one, nm_cx_x(z.re));                  // 1 - x, exact
        nm_fm_x y = nm_fm_x_from_bits(ay);
        nm_fm_x d = nm_fm_x_add(nm_fm_x_mul(omx, omx), nm_fm_x_mul(y, y));
        nm_fm_x q = nm_fm_x_div(nm_cx_x(z.re), d);
        q.e += 2;
        nm_fm_x2 l = nm_fm_log1p_x(q);
        l.e -= 2;
        re = nm_fm_x2_round(l);
        // 1 - |z|^2 from the exact |z|^2
        nm_fm_x2 n2 = nm_cx_norm2(z.re.bits, z.im.bits);
        int top = metal::max(n2.e, 0) + 1;
        nm_f64_u128 onev = nm_fm_shl128(nm_fm_u128(0UL, 1UL), uint(127 - top));
        nm_f64_u128 nv = nm_fm_shr128(nm_fm_u128(n2.hi, n2.lo), uint(top - n2.e));
        bool below = n2.hi == 0UL || n2.e < 0;
        nm_f64_u128 diff = below ? nm_fm_sub128(onev, nv) : nm_fm_sub128(nv, onev);
        nm_fm_x den = nm_fm_x_from128(below ? 0u : 1u, diff, 127 - top);
        nm_fm_x num = nm_cx_x(z.im);
        num.e += 1;
        num.neg ^= 1u;
        nm_fm_x a = nm_cx_atan2_x(num, den);
        a.e -= 1;
        a.neg ^= 1u;
        im = nm_cx_round(a);
    }
    nm_c128 r = nm_c128_make(re, im);
    return negate ? nm_c128_neg(r) : r;
}

static inline nm_c128 nm_c128_atan(nm_c128 z) {
    return nm_cx_times_minus_i(nm_c128_atanh(nm_cx_times_i(z)));
}

static inline nm_f64 nm_c128_phase(nm_c128 z) {
    return nm_f64_atan2(z.im, z.re);
}

// cmath.polar: (abs(z), phase(z)) as (.first, .second).
static inline nm_f64_pair nm_c128_polar(nm_c128 z) {
    nm_f64_pair out;
    out.first = nm_f64_hypot(z.re, z.im);
    out.second = nm_f64_atan2(z.im, z.re);
    return out;
}

static inline nm_c128 nm_c128_rect(nm_f64 r, nm_f64 phi) {
    if (!nm_f64_isfinite(r) || !nm_f64_isfinite(phi)) {
        if (nm_f64_isinf(r) && nm_f64_isfinite(phi) && (phi.bits & NM_F64_ABS) != 0UL) {
            nm_fm_sincos sc = nm_fm_sincos_x(phi.bits);
            nm_c128 v = nm_c128_make(nm_cx_copysign_inf(sc.c), nm_cx_copysign_inf(sc.s));
            return (r.bits >> 63) == 0UL ? v : nm_c128_neg(v);
        }
        return nm_cx_special64(nm_cx_rect_sv, nm_c128_make(r, phi));
    }
    if ((phi.bits & NM_F64_ABS) == 0UL) {
        return nm_c128_make(r, nm_f64_mul(r, phi));
    }
    nm_fm_sincos sc = nm_fm_sincos_x(phi.bits);
    nm_fm_x rx = nm_cx_x(r);
    return nm_c128_make(nm_cx_round(nm_fm_x_mul(rx, sc.c)), nm_cx_round(nm_fm_x_mul(rx, sc.s)));
}

//@@ c64_base requires: mathlib
// complex64 as float2 (.x real, .y imaginary), Numba's arithmetic in float32.
static inline float2 nm_c64_make(float re, float im) {
    return float2(re, im);
}

static inline float2 nm_c64_conj(float2 z) {
    return float2(z.x, -z.y);
}

static inline float2 nm_c64_mul(float2 a, float2 b) {
    return float2(a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x);
}

static inline float2 nm_c64_div(float2 a, float2 b) {
    float abr = metal::fabs(b.x);
    float abi = metal::fabs(b.y);
    if (abr >= abi) {
        if (abr == 0.0f && abi == 0.0f) {
            return float2(a.x / abr, a.y / abi);
        }
        float ratio = b.y / b.x;
        float denom = b.x + b.y * ratio;
        return float2((a.x + a.y * ratio) / denom, (a.y - a.x * ratio) / denom);
    }
    if (abi >= abr) {
        float ratio = b.x / b.y;
        float denom = b.x * ratio + b.y;
        return float2((a.x * ratio + a.y) / denom, (a.y * ratio - a.x) / denom);
    }
    return float2(NAN, NAN);
}

static inline float2 nm_c64_np_divide(float2 a, float2 b) {
    float abr = metal::fabs(b.x);
    float abi = metal::fabs(b.y);
    if (abr >= abi) {
        if (abr == 0.0f && abi == 0.0f) {
            return float2(a.x / abr, a.y / abi);
        }
        float rat = b.y / b.x;
        float scl = 1.0f / (b.x + b.y * rat);
        return float2((a.x + a.y * rat) * scl, (a.y - a.x * rat) * scl);
    }
    float rat = b.x / b.y;
    float scl = 1.0f / (b.y + b.x * rat);
    return float2((a.x * rat + a.y) * scl, (a.y * rat - a.x) * scl);
}

static inline float nm_c64_abs(float2 z) {
    return nm_hypot(z.x, z.y);
}

static inline bool nm_c64_isnan(float2 z) {
    return metal::isnan(z.x) || metal::isnan(z.y);
}

static inline bool nm_c64_isinf(float2 z) {
    return metal::isinf(z.x) || metal::isinf(z.y);
}

static inline bool nm_c64_isfinite(float2 z) {
    return metal::isfinite(z.x) && metal::isfinite(z.y);
}

//@@ c64_math requires: c64_base cx_special mathlib
// The cmath functions on complex64: CPython's algorithms in float32 (thresholds scaled to float32, the
// exp-based ones split e^x as e^(x - 88) e^88 so that a finite result never passes through infinity).

static inline float nm_cx_code32(uint code) {
    switch (code) {
        case 0u: return 0.0f;
        case 1u: return -0.0f;
        case 2u: return 1.0f;
        case 3u: return -1.0f;
        case 4u: return INFINITY;
        case 5u: return -INFINITY;
        case 6u: return as_type<float>(0x7FC00000u);
        case 7u: return M_PI_F;
        case 8u: return -M_PI_F;
        case 9u: return M_PI_2_F;
        case 10u: return -M_PI_2_F;
        case 11u: return M_PI_4_F;
        case 12u: return -M_PI_4_F;
        case 13u: return 2.35619449f;
        default: return -2.35619449f;
    }
}

static inline float2 nm_cx_special32(constant uchar* table, float2 z) {
    uint e = nm_cx_entry(table, nm_cx_class32(z.x), nm_cx_class32(z.y));
    return float2(nm_cx_code32(e & 15u), nm_cx_code32(e >> 4));
}

// e^x t for finite x and t, without an intermediate infinity when the product is finite.
static inline float nm_cx_exp_times(float x, float t) {
    if (t == 0.0f) {
        return t;
    }
    if (x > 88.0f) {
        return (metal::exp(x - 88.0f) * t) * 1.65163625e38f;     // e^88
    }
    return metal::exp(x) * t;
}

static inline float2 nm_c64_exp(float2 z) {
    float x = z.x;
    float y = z.y;
    if (!nm_c64_isfinite(z)) {
        if (metal::isinf(x) && metal::isfinite(y) && y != 0.0f) {
            float c = metal::cos(y);
            float s = metal::sin(y);
            if (x > 0.0f) {
                return float2(metal::copysign(INFINITY, c), metal::copysign(INFINITY, s));
            }
            return float2(metal::copysign(0.0f, c), metal::copysign(0.0f, s));
        }
        return nm_cx_special32(nm_cx_exp_sv, z);
    }
    return float2(nm_cx_exp_times(x, metal::cos(y)), nm_cx_exp_times(x, metal::sin(y)));
}

static inline float nm_cx_log_abs32(float x, float y) {
    float ax = metal::fabs(x);
    float ay = metal::fabs(y);
    if (ax > 8.50705867e37f || ay > 8.50705867e37f) {
        return metal::log(nm_hypot(ax * 0.5f, ay * 0.5f)) + M_LN2_F;
    }
    float h = nm_hypot(ax, ay);
    if (0.71f <= h && h <= 1.73f) {
        // |z|^2 - 1 with the squares split exactly by fma (double-float), then log1p/2
        float am = metal::max(ax, ay);
        float an = metal::min(ax, ay);
        float p1 = am * am;
        float e1 = metal::fma(am, am, -p1);
        float p2 = an * an;
        float e2 = metal::fma(an, an, -p2);
        float s = p1 - 1.0f;
        float t = s + p2;
        float bb = t - s;
        float te = (s - (t - bb)) + (p2 - bb);
        return nm_log1p(t + (te + e1 + e2)) * 0.5f;
    }
    return metal::log(h);
}

static inline float2 nm_c64_log(float2 z) {
    if (!nm_c64_isfinite(z)) {
        return nm_cx_special32(nm_cx_log_sv, z);
    }
    float im = metal::atan2(z.y, z.x);
    if (z.x == 0.0f && z.y == 0.0f) {
        return float2(-INFINITY, im);
    }
    return float2(nm_cx_log_abs32(z.x, z.y), im);
}

static inline float2 nm_c64_log10(float2 z) {
    float2 r = nm_c64_log(z);
    return float2(r.x / 2.30258509f, r.y / 2.30258509f);
}

static inline float2 nm_c64_sqrt(float2 z) {
    if (!nm_c64_isfinite(z)) {
        return nm_cx_special32(nm_cx_sqrt_sv, z);
    }
    if (z.x == 0.0f && z.y == 0.0f) {
        return float2(0.0f, z.y);
    }
    float ax = metal::fabs(z.x);
    float ay = metal::fabs(z.y);
    float s;
    if (ax < 1.0e-30f && ay < 1.0e-30f) {
        // scaled by 2^64 so that no intermediate is subnormal (and flushed)
        float sx = ax * 1.84467441e19f;
        s = metal::sqrt(0.5f * (sx + nm_hypot(sx, ay * 1.84467441e19f))) * 2.32830644e-10f;
    } else {
        ax *= 0.125f;
        s = 2.0f * metal::sqrt(ax + nm_hypot(ax, ay * 0.125f));
    }
    float d = ay / (2.0f * s);
    if (z.x >= 0.0f) {
        return float2(s, metal::copysign(d, z.y));
    }
    return float2(d, metal::copysign(s, z.y));
}

// cosh and sinh of a finite x times t, without an intermediate infinity when the product is finite.
static inline float nm_cx_cosh_times(float x, float t) {
    float ax = metal::fabs(x);
    if (ax > 88.0f) {
        return (0.5f * metal::exp(ax - 88.0f) * t) * 1.65163625e38f;
    }
    return metal::cosh(x) * t;
}

static inline float nm_cx_sinh_times(float x, float t) {
    float ax = metal::fabs(x);
    if (ax > 88.0f) {
        return metal::copysign((0.5f * metal::exp(ax - 88.0f) * t) * 1.65163625e38f, x);
    }
    return metal::sinh(x) * t;
}

static inline float2 nm_c64_cosh(float2 z) {
    float x = z.x;
    float y = z.y;
    if (!nm_c64_isfinite(z)) {
        if (metal::isinf(x) && metal::isfinite(y) && y != 0.0f) {
            float re = metal::copysign(INFINITY, metal::cos(y));
            float im = metal::copysign(INFINITY, metal::sin(y));
            return float2(re, x > 0.0f ? im : -im);
        }
        return nm_cx_special32(nm_cx_cosh_sv, z);
    }
    return float2(nm_cx_cosh_times(x, metal::cos(y)), nm_cx_sinh_times(x, metal::sin(y)));
}

static inline float2 nm_c64_sinh(float2 z) {
    float x = z.x;
    float y = z.y;
    if (!nm_c64_isfinite(z)) {
        if (metal::isinf(x) && metal::isfinite(y) && y != 0.0f) {
            float re = metal::copysign(INFINITY, metal::cos(y));
            float im = metal::copysign(INFINITY, metal::sin(y));
            return float2(x > 0.0f ? re : -re, im);
        }
        return nm_cx_special32(nm_cx_sinh_sv, z);
    }
    return float2(nm_cx_sinh_times(x, metal::cos(y)), nm_cx_cosh_times(x, metal::sin(y)));
}

static inline float2 nm_c64_tanh(float2 z) {
    float x = z.x;
    float y = z.y;
    if (!nm_c64_isfinite(z)) {
        if (metal::isinf(x) && metal::isfinite(y) && y != 0.0f) {
            return float2(metal::copysign(1.0f, x), metal::copysign(0.0f, 2.0f * metal::sin(y) * metal::cos(y)));
        }
        return nm_cx_special32(nm_cx_tanh_sv, z);
    }
    if (metal::fabs(x) > 12.0f) {
        // 1 - tanh^2 x = 4 e^(-2|x|) to float32 precision here
        return float2(metal::copysign(1.0f, x), 4.0f * metal::sin(y) * metal::cos(y) * metal::exp(-2.0f * metal::fabs(x)));
    }
    float tx = metal::tanh(x);
    float ty = metal::tan(y);
    float cx = 1.0f / metal::cosh(x);
    float txty = tx * ty;
    float denom = 1.0f + txty * txty;
    return float2(tx * (1.0f + ty * ty) / denom, ((ty / denom) * cx) * cx);
}

static inline float2 nm_cx_times_i32(float2 z) {
    return float2(-z.y, z.x);
}

static inline float2 nm_cx_times_minus_i32(float2 z) {
    return float2(z.y, -z.x);
}

static inline float2 nm_c64_sin(float2 z) {
    return nm_cx_times_minus_i32(nm_c64_sinh(nm_cx_times_i32(z)));
}

static inline float2 nm_c64_cos(float2 z) {
    return nm_c64_cosh(nm_cx_times_i32(z));
}

static inline float2 nm_c64_tan(float2 z) {
    return nm_cx_times_minus_i32(nm_c64_tanh(nm_cx_times_i32(z)));
}

static inline bool nm_cx_large32(float2 z) {
    return metal::fabs(z.x) > 8.50705867e37f || metal::fabs(z.y) > 8.50705867e37f;
}

// log(2 |z|) for large z.
static inline float nm_cx_log_twice_abs32(float2 z) {
    return metal::log(nm_hypot(z.x * 0.5f, z.y * 0.5f)) + 2.0f * M_LN2_F;
}

static inline float2 nm_c64_acos(float2 z) {
    if (!nm_c64_isfinite(z)) {
        return nm_cx_special32(nm_cx_acos_sv, z);
    }
    if (nm_cx_large32(z)) {
        return float2(metal::atan2(metal::fabs(z.y), z.x), -metal::copysign(nm_cx_log_twice_abs32(z), z.y));
    }
    float2 s1 = nm_c64_sqrt(float2(1.0f - z.x, -z.y));
    float2 s2 = nm_c64_sqrt(float2(1.0f + z.x, z.y));
    return float2(2.0f * metal::atan2(s1.x, s2.x), metal::asinh(metal::fma(s2.x, s1.y, -(s2.y * s1.x))));
}

static inline float2 nm_c64_acosh(float2 z) {
    if (!nm_c64_isfinite(z)) {
        return nm_cx_special32(nm_cx_acosh_sv, z);
    }
    if (nm_cx_large32(z)) {
        return float2(nm_cx_log_twice_abs32(z), metal::atan2(z.y, z.x));
    }
    float2 s1 = nm_c64_sqrt(float2(z.x - 1.0f, z.y));
    float2 s2 = nm_c64_sqrt(float2(z.x + 1.0f, z.y));
    return float2(metal::asinh(metal::fma(s1.x, s2.x, s1.y * s2.y)), 2.0f * metal::atan2(s1.y, s2.x));
}

static inline float2 nm_c64_asinh(float2 z) {
    if (!nm_c64_isfinite(z)) {
        return nm_cx_special32(nm_cx_asinh_sv, z);
    }
    if (nm_cx_large32(z)) {
        return float2(metal::copysign(nm_cx_log_twice_abs32(z), z.x), metal::atan2(z.y, metal::fabs(z.x)));
    }
    if (metal::fabs(z.x) < 1.0e-10f && metal::fabs(z.y) < 1.0e-10f) {
        return z;                    // asinh z = z - z^3/6: below 2^-66 z; the formula's halves would flush
    }
    float2 s1 = nm_c64_sqrt(float2(1.0f + z.y, -z.x));
    float2 s2 = nm_c64_sqrt(float2(1.0f - z.y, z.x));
    return float2(metal::asinh(metal::fma(s1.x, s2.y, -(s2.x * s1.y))),
                  metal::atan2(z.y, metal::fma(s1.x, s2.x, -(s1.y * s2.y))));
}

static inline float2 nm_c64_asin(float2 z) {
    return nm_cx_times_minus_i32(nm_c64_asinh(nm_cx_times_i32(z)));
}

static inline float2 nm_c64_atanh(float2 z) {
    if (!nm_c64_isfinite(z)) {
        return nm_cx_special32(nm_cx_atanh_sv, z);
    }
    if (metal::fabs(z.x) < 1.0e-10f && metal::fabs(z.y) < 1.0e-10f) {
        return z;                    // atanh z = z + z^3/3: below 2^-66 z
    }
    bool negate = z.x < 0.0f;
    if (negate) {
        z = -z;
    }
    float x = z.x;
    float ay = metal::fabs(z.y);
    float re;
    float im;
    if (x > 9.22337176e18f || ay > 9.22337176e18f) {
        float h = nm_hypot(x * 0.5f, z.y * 0.5f);
        re = x / 4.0f / h / h;
        im = metal::copysign(M_PI_2_F, z.y);
    } else if (x == 1.0f && ay < 1.08420217e-19f) {
        if (ay == 0.0f) {
            re = INFINITY;
            im = z.y;
        } else {
            re = -metal::log(metal::sqrt(ay) / metal::sqrt(nm_hypot(ay, 2.0f)));
            im = metal::copysign(metal::atan2(2.0f, -ay) / 2.0f, z.y);
        }
    } else {
        float omx = 1.0f - x;
        re = nm_log1p(4.0f * x / (omx * omx + ay * ay)) / 4.0f;
        im = -metal::atan2(-2.0f * z.y, metal::fma(omx, 1.0f + x, -(ay * ay))) / 2.0f;
    }
    return negate ? float2(-re, -im) : float2(re, im);
}

static inline float2 nm_c64_atan(float2 z) {
    return nm_cx_times_minus_i32(nm_c64_atanh(nm_cx_times_i32(z)));
}

static inline float nm_c64_phase(float2 z) {
    return metal::atan2(z.y, z.x);
}

// cmath.polar: (abs(z), phase(z)).
static inline float2 nm_c64_polar(float2 z) {
    return float2(nm_hypot(z.x, z.y), metal::atan2(z.y, z.x));
}

static inline float2 nm_c64_rect(float r, float phi) {
    if (!metal::isfinite(r) || !metal::isfinite(phi)) {
        if (metal::isinf(r) && metal::isfinite(phi) && phi != 0.0f) {
            float2 v = float2(metal::copysign(INFINITY, metal::cos(phi)), metal::copysign(INFINITY, metal::sin(phi)));
            return r > 0.0f ? v : -v;
        }
        return nm_cx_special32(nm_cx_rect_sv, float2(r, phi));
    }
    if (phi == 0.0f) {
        return float2(r, r * phi);
    }
    return float2(r * metal::cos(phi), r * metal::sin(phi));
}

//@@ c128_pow requires: c128_base fm_pow fm_trig fm_atan fm_hypot f64_round f64_int
// z ** w as CPython's complex_pow computes it (Objects/complexobject.c, c_powi and _Py_c_pow): an integer
// exponent n with |n| <= 100 and a zero imaginary part by binary powering with Python's complex product
// (n < 0: 1 / z**-n, Python's quotient), any other exponent in polar form, |z|**w.re / e**(arg(z) w.im) at
// the angle arg(z) w.re + w.im log|z|. w == 0 gives 1 (0 ** 0 too). Where Python raises, the value NumPy
// gives: a zero base with a negative or complex exponent is nan + i nan; an overflow is infinite.
static inline nm_c128 nm_cx_powu_c128(nm_c128 x, long n) {
    nm_c128 r = nm_c128_make(nm_f64_from_bits(NM_F64_ONE), nm_f64_from_bits(0UL));
    nm_c128 p = x;
    for (long mask = 1; n >= mask; mask <<= 1) {
        if ((n & mask) != 0) {
            r = nm_c128_mul(r, p);
        }
        p = nm_c128_mul(p, p);
    }
    return r;
}

static inline nm_c128 nm_c128_pow(nm_c128 a, nm_c128 b) {
    nm_f64 zero = nm_f64_from_bits(0UL);
    nm_f64 one = nm_f64_from_bits(NM_F64_ONE);
    bool a_zero = nm_f64_eq(a.re, zero) && nm_f64_eq(a.im, zero);
    bool real_exponent = nm_f64_eq(b.im, zero);
    if (a_zero && (!real_exponent || nm_f64_lt(b.re, zero))) {
        nm_f64 nan = nm_f64_from_bits(NM_F64_DEFAULT_NAN & NM_F64_ABS);
        return nm_c128_make(nan, nan);
    }
    if (real_exponent && nm_f64_eq(b.re, nm_f64_floor(b.re)) &&
        nm_f64_le(nm_f64_abs(b.re), nm_f64_from_bits(0x4059000000000000UL))) {   // 100.0
        long n = nm_f64_to_i64(b.re);
        if (n > 0) {
            return nm_cx_powu_c128(a, n);
        }
        return nm_c128_div(nm_c128_make(one, zero), nm_cx_powu_c128(a, -n));
    }
    if (a_zero) {
        return nm_c128_make(zero, zero);
    }
    nm_f64 vabs = nm_f64_hypot(a.re, a.im);
    nm_f64 len = nm_f64_pow(vabs, b.re);
    nm_f64 at = nm_f64_atan2(a.im, a.re);
    nm_f64 phase = nm_f64_mul(at, b.re);
    if (!real_exponent) {
        len = nm_f64_div(len, nm_f64_exp(nm_f64_mul(at, b.im)));
        phase = nm_f64_add(phase, nm_f64_mul(b.im, nm_f64_log(vabs)));
    }
    return nm_c128_make(nm_f64_mul(len, nm_f64_cos(phase)), nm_f64_mul(len, nm_f64_sin(phase)));
}

//@@ c64_pow requires: c64_base
// complex64 ** as nm_c128_pow, in float32 with metal:: functions (within their precise-mode bounds).
static inline float2 nm_cx_powu_c64(float2 x, int n) {
    float2 r = float2(1.0f, 0.0f);
    float2 p = x;
    for (int mask = 1; n >= mask; mask <<= 1) {
        if ((n & mask) != 0) {
            r = nm_c64_mul(r, p);
        }
        p = nm_c64_mul(p, p);
    }
    return r;
}

static inline float2 nm_c64_pow(float2 a, float2 b) {
    bool a_zero = a.x == 0.0f && a.y == 0.0f;
    if (a_zero && (b.y != 0.0f || b.x < 0.0f)) {
        return float2(NAN, NAN);
    }
    if (b.y == 0.0f && b.x == metal::floor(b.x) && metal::fabs(b.x) <= 100.0f) {
        int n = int(b.x);
        if (n > 0) {
            return nm_cx_powu_c64(a, n);
        }
        return nm_c64_div(float2(1.0f, 0.0f), nm_cx_powu_c64(a, -n));
    }
    if (a_zero) {
        return float2(0.0f, 0.0f);
    }
    float vabs = nm_hypot(a.x, a.y);
    float len = metal::pow(vabs, b.x);
    float at = metal::atan2(a.y, a.x);
    float phase = at * b.x;
    if (b.y != 0.0f) {
        len = len / metal::exp(at * b.y);
        phase = phase + b.y * metal::log(vabs);
    }
    return float2(len * metal::cos(phase), len * metal::sin(phase));
}
