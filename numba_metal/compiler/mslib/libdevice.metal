// numba-metal's libdevice helpers: the functions of numba.cuda's cuda.libdevice that neither MSL's
// standard library nor the math and float64 libraries compute directly. Each entry point is a row of
// libdevice_ops.py (its MSL types and section); the rows of kernel_api/functions.LIBDEVICE call them.
//
// Directed rounding. CUDA's _rz, _rd and _ru variants round toward zero, -inf and +inf; MSL has no
// rounding-mode control, so the exact result is formed first and rounded by hand. `mode` is 1 (toward
// zero), 2 (down) or 3 (up); round to nearest is the plain operation and never comes here.
// - float32 operations: the operands are exact float64 values; the float64 result s of the operation
//   (rounded to nearest) plus the sign of its error, which is exact (a product of float32 values is
//   exact in float64; a sum's error by Knuth's TwoSum, a quotient's and a square root's by the sign of
//   the remainder computed with one fma, which is exact for float32 operands), determines the directed
//   float32 result: it is the float32 nearest to s or its neighbour (Muller et al., Handbook of
//   Floating-Point Arithmetic, 2nd ed., 4.3 and 5.1).
// - integers to floating point: the significand is cut from the integer with the lost bits deciding
//   the step, in integer arithmetic.
// - float64 sum, product, quotient, square root and fma: the same error terms on the emulated float64
//   (float64.metal), with operands scaled by a power of two where an error term could underflow or
//   overflow; fma's error, a sum of four terms, has its sign from an exact expansion.
// Float32 subnormal results are as exact as the others here; Apple GPUs flush them when they are next
// used in arithmetic (docs/limitations.md).

//@@ ld_bits
// Bit patterns: CUDA's __float_as_int, __int_as_float, __float2half_rn (the half's bits as a short),
// __half2float, __byte_perm.
static inline int nm_ld_float_as_int(float x) { return as_type<int>(x); }
static inline float nm_ld_int_as_float(int x) { return as_type<float>(x); }
static inline short nm_ld_float2half_rn(float x) { return as_type<short>(half(x)); }
static inline float nm_ld_half2float(short h) { return float(as_type<half>(h)); }
// The bytes of (y:x) (x the low word) picked by the low three bits of each of the four nibbles of s.
static inline uint nm_ld_byte_perm(uint x, uint y, uint s) {
    ulong both = (ulong(y) << 32) | ulong(x);
    uint out = 0u;
    for (uint k = 0u; k < 4u; ++k) {
        uint pick = (s >> (4u * k)) & 7u;
        out |= uint((both >> (8u * pick)) & 0xFFUL) << (8u * k);
    }
    return out;
}

//@@ ld_int
// Integer helpers: CUDA's abs/llabs wrap for the most negative value (no undefined behaviour).
static inline int nm_ld_abs(int x) { return int(x < 0 ? 0u - uint(x) : uint(x)); }
static inline long nm_ld_llabs(long x) { return long(x < 0 ? 0UL - ulong(x) : ulong(x)); }

//@@ ld_float
// float32 functions: 1/x, fdimf (NaN kept), sinpif/cospif, saturatef (NaN -> 0, as CUDA), nextafterf,
// ilogbf and logbf with CUDA's values at 0, infinities and NaN, frexpf and modff one member at a time.
static inline float nm_ld_rcp(float x) { return 1.0f / x; }
static inline float nm_ld_fdimf(float x, float y) { return isnan(x) || isnan(y) ? x + y : (x > y ? x - y : 0.0f); }
// sin(pi x) and cos(pi x) with the argument reduced exactly: x = k/2 + r, |r| <= 1/4, k = rint(2x); then
// MSL's sin or cos of pi r (Table 8.1: 4 ulp) by the quadrant of k. Integers give +-0 (sinpi, the sign of
// x) and +-1 (cospi); x + 1/2 for an integer x gives +0 (cospi).
static inline float nm_ld_pi_quadrant(float r, int q) {
    float t = M_PI_F * r;
    return q == 0 ? sin(t) : (q == 1 ? cos(t) : (q == 2 ? -sin(t) : -cos(t)));
}
static inline float nm_ld_sinpi(float x) {
    if (!isfinite(x)) return x - x;
    if (fabs(x) >= 8388608.0f) return copysign(0.0f, x);
    float k = rint(2.0f * x);
    float v = nm_ld_pi_quadrant(x - 0.5f * k, int(k) & 3);
    return v == 0.0f ? copysign(0.0f, x) : v;
}
static inline float nm_ld_cospi(float x) {
    if (!isfinite(x)) return x - x;
    float a = fabs(x);
    if (a >= 8388608.0f) return a < 16777216.0f && (int(a) & 1) != 0 ? -1.0f : 1.0f;
    float k = rint(2.0f * x);
    float v = nm_ld_pi_quadrant(x - 0.5f * k, (int(k) + 1) & 3);
    return v == 0.0f ? 0.0f : v;
}
static inline float nm_ld_saturate(float x) { return x >= 1.0f ? 1.0f : (x > 0.0f ? x : 0.0f); }
static inline float nm_ld_nextafter(float x, float y) {
    if (isnan(x) || isnan(y)) return x + y;
    if (x == y) return y;
    if (x == 0.0f) return y > 0.0f ? as_type<float>(1u) : as_type<float>(0x80000001u);
    uint b = as_type<uint>(x);
    return as_type<float>((x < y) == (x > 0.0f) ? b + 1u : b - 1u);
}
// The unbiased exponent of x's bit pattern (subnormals counted as IEEE's logb does).
static inline int nm_ld_exponent(float x) {
    uint b = as_type<uint>(x) & 0x7FFFFFFFu;
    int e = int(b >> 23);
    return e != 0 ? e - 127 : -118 - int(clz(b));
}
static inline int nm_ld_ilogb(float x) {
    if (isnan(x) || x == 0.0f) return int(0x80000000u);
    if (isinf(x)) return 0x7FFFFFFF;
    return nm_ld_exponent(x);
}
static inline float nm_ld_logb(float x) {
    if (isnan(x)) return x;
    if (x == 0.0f) return -INFINITY;
    if (isinf(x)) return INFINITY;
    return float(nm_ld_exponent(x));
}
static inline float nm_ld_frexp_mantissa(float x) { int e; return frexp(x, e); }
static inline int nm_ld_frexp_exponent(float x) { int e; frexp(x, e); return e; }
static inline float nm_ld_modf_fraction(float x) { float i; return modf(x, i); }
static inline float nm_ld_modf_integral(float x) { float i; modf(x, i); return i; }

//@@ ld_directed32 requires: f64_add f64_mul f64_div f64_sqrt f64_fma f64_float f64_compare
static inline int nm_ld_sign(nm_f64 e) {
    nm_f64 zero = nm_f64_from_bits(0UL);
    return nm_f64_gt(e, zero) ? 1 : (nm_f64_lt(e, zero) ? -1 : 0);
}
// The float32 after r toward +inf (up) or -inf; r is not NaN and not the infinity it moves towards.
static inline float nm_ld_step(float r, bool up) {
    if (r == 0.0f) return as_type<float>(up ? 1u : 0x80000001u);
    uint b = as_type<uint>(r);
    return as_type<float>(up == (r > 0.0f) ? b + 1u : b - 1u);
}
// The float32 that `mode` rounds s + e to, where s is a float64 and e an error smaller than half an ulp
// of s, of sign err (0: s is exact).
static inline float nm_ld_round_f32(nm_f64 s, int err, int mode) {
    float r = nm_f64_to_f32(s);
    if (isnan(r)) return r;
    nm_f64 rb = nm_f64_from_f32(r);
    int c = nm_f64_lt(rb, s) ? -1 : (nm_f64_gt(rb, s) ? 1 : -err);   // the sign of r - (s + e)
    if (c == 0) return r;
    if (mode == 2) return c > 0 ? nm_ld_step(r, false) : r;
    if (mode == 3) return c < 0 ? nm_ld_step(r, true) : r;
    bool positive = nm_f64_gt(s, nm_f64_from_bits(0UL));
    return (positive ? c > 0 : c < 0) ? nm_ld_step(r, !positive) : r;
}
// An exact zero sum is -0 when rounding down unless both terms are +0 (IEEE 754 6.3), else as to nearest.
static inline float nm_ld_zero_sum(float x, float y, float nearest, int mode) {
    return mode == 2 ? ((signbit(x) || signbit(y)) ? -0.0f : 0.0f) : nearest;
}
static inline float nm_ld_fadd(float x, float y, int mode) {
    nm_f64 a = nm_f64_from_f32(x), b = nm_f64_from_f32(y);
    nm_f64 s = nm_f64_add(a, b);
    if (nm_f64_eq(s, nm_f64_from_bits(0UL))) return nm_ld_zero_sum(x, y, x + y, mode);
    nm_f64 bv = nm_f64_sub(s, a), av = nm_f64_sub(s, bv);
    nm_f64 e = nm_f64_add(nm_f64_sub(a, av), nm_f64_sub(b, bv));
    return nm_ld_round_f32(s, nm_ld_sign(e), mode);
}
static inline float nm_ld_fsub(float x, float y, int mode) { return nm_ld_fadd(x, -y, mode); }
static inline float nm_ld_fmul(float x, float y, int mode) {
    return nm_ld_round_f32(nm_f64_mul(nm_f64_from_f32(x), nm_f64_from_f32(y)), 0, mode);
}
static inline float nm_ld_fdiv(float x, float y, int mode) {
    nm_f64 a = nm_f64_from_f32(x), b = nm_f64_from_f32(y);
    nm_f64 q = nm_f64_div(a, b);
    nm_f64 r = nm_f64_fma(nm_f64_neg(q), b, a);   // a - q b, exact
    return nm_ld_round_f32(q, nm_ld_sign(r) * (y < 0.0f ? -1 : 1), mode);
}
static inline float nm_ld_frcp(float x, int mode) { return nm_ld_fdiv(1.0f, x, mode); }
static inline float nm_ld_fsqrt(float x, int mode) {
    nm_f64 a = nm_f64_from_f32(x);
    nm_f64 s = nm_f64_sqrt(a);
    return nm_ld_round_f32(s, nm_ld_sign(nm_f64_fma(nm_f64_neg(s), s, a)), mode);
}
static inline float nm_ld_fmaf(float x, float y, float z, int mode) {
    nm_f64 p = nm_f64_mul(nm_f64_from_f32(x), nm_f64_from_f32(y));   // exact
    nm_f64 c = nm_f64_from_f32(z);
    nm_f64 s = nm_f64_add(p, c);
    if (nm_f64_eq(s, nm_f64_from_bits(0UL))) return nm_ld_zero_sum(nm_f64_to_f32(p), z, fma(x, y, z), mode);
    nm_f64 bv = nm_f64_sub(s, p), av = nm_f64_sub(s, bv);
    nm_f64 e = nm_f64_add(nm_f64_sub(p, av), nm_f64_sub(c, bv));
    return nm_ld_round_f32(s, nm_ld_sign(e), mode);
}
static inline float nm_ld_double2float(nm_f64 x, int mode) { return nm_ld_round_f32(x, 0, mode); }

//@@ ld_int2float
// Integers to float32 with directed rounding: |v| = m, negative if neg.
static inline float nm_ld_u64_to_f32(ulong m, bool neg, int mode) {
    int n = 64 - int(clz(m));
    float f;
    if (n <= 24) {
        f = float(m);
    } else {
        int shift = n - 24;
        ulong q = m >> uint(shift);
        bool lost = (m & ((1UL << uint(shift)) - 1UL)) != 0UL;
        if (lost && (mode == 3 ? !neg : mode == 2 && neg)) q += 1UL;   // away from zero
        f = ldexp(float(q), shift);
    }
    return neg ? -f : f;
}
static inline float nm_ld_ll2float(long v, int mode) {
    return nm_ld_u64_to_f32(v < 0 ? 0UL - ulong(v) : ulong(v), v < 0, mode);
}
static inline float nm_ld_ull2float(ulong v, int mode) { return nm_ld_u64_to_f32(v, false, mode); }

//@@ ld_int2double requires: f64_int f64_frexp
static inline nm_f64 nm_ld_u64_to_f64(ulong m, bool neg, int mode) {
    int n = 64 - int(clz(m));
    nm_f64 f;
    if (n <= 53) {
        f = nm_f64_from_u64(m);
    } else {
        int shift = n - 53;
        ulong q = m >> uint(shift);
        bool lost = (m & ((1UL << uint(shift)) - 1UL)) != 0UL;
        if (lost && (mode == 3 ? !neg : mode == 2 && neg)) q += 1UL;
        f = nm_f64_ldexp(nm_f64_from_u64(q), shift);
    }
    return neg ? nm_f64_neg(f) : f;
}
static inline nm_f64 nm_ld_ll2double(long v, int mode) {
    return nm_ld_u64_to_f64(v < 0 ? 0UL - ulong(v) : ulong(v), v < 0, mode);
}
static inline nm_f64 nm_ld_ull2double(ulong v, int mode) { return nm_ld_u64_to_f64(v, false, mode); }

//@@ ld_directed64 requires: ld_directed32 f64_frexp f64_nextafter f64_fma
// float64 with directed rounding: s (rounded to nearest) moved one step when its exact error e (of sign
// err) points the other way; an overflow to infinity comes back to the largest finite value when the
// mode rounds toward zero.
static inline nm_f64 nm_ld_round_f64(nm_f64 s, int err, int mode) {
    if (err == 0) return s;
    bool up;
    if (mode == 3) {
        if (err < 0) return s;
        up = true;
    } else if (mode == 2) {
        if (err > 0) return s;
        up = false;
    } else {   // toward zero: move only when |s| exceeds the exact value
        bool positive = nm_f64_gt(s, nm_f64_from_bits(0UL)), negative = nm_f64_lt(s, nm_f64_from_bits(0UL));
        if (!(positive && err < 0) && !(negative && err > 0)) return s;
        up = negative;
    }
    return nm_f64_nextafter(s, nm_f64_from_bits(up ? 0x7FF0000000000000UL : 0xFFF0000000000000UL));
}
// Overflow of finite operands: infinity, or the largest finite value where the mode rounds toward it.
static inline nm_f64 nm_ld_overflow(nm_f64 s, int mode) {
    bool positive = nm_f64_gt(s, nm_f64_from_bits(0UL));
    bool finite = positive ? (mode == 1 || mode == 2) : (mode == 1 || mode == 3);
    return finite ? nm_f64_from_bits(positive ? 0x7FEFFFFFFFFFFFFFUL : 0xFFEFFFFFFFFFFFFFUL) : s;
}
static inline nm_f64 nm_ld_dadd(nm_f64 a, nm_f64 b, int mode) {
    nm_f64 s = nm_f64_add(a, b);
    if (nm_f64_isinf(s) && nm_f64_isfinite(a) && nm_f64_isfinite(b)) return nm_ld_overflow(s, mode);
    if (nm_f64_eq(s, nm_f64_from_bits(0UL))) {
        bool negative = nm_f64_signbit(a) || nm_f64_signbit(b);
        return mode == 2 && negative ? nm_f64_from_bits(0x8000000000000000UL) : s;
    }
    if (!nm_f64_isfinite(s)) return s;
    nm_f64 bv = nm_f64_sub(s, a), av = nm_f64_sub(s, bv);
    return nm_ld_round_f64(s, nm_ld_sign(nm_f64_add(nm_f64_sub(a, av), nm_f64_sub(b, bv))), mode);
}
static inline nm_f64 nm_ld_dmul(nm_f64 a, nm_f64 b, int mode) {
    nm_f64 p = nm_f64_mul(a, b);
    if (nm_f64_isinf(p) && nm_f64_isfinite(a) && nm_f64_isfinite(b)) return nm_ld_overflow(p, mode);
    if (!nm_f64_isfinite(p)) return p;
    // a b - p by one fma is exact unless it underflows: below 2^-900, scale the smaller operand by 2^600
    // (the error's sign is unchanged; p itself was rounded where it lies).
    nm_f64 tiny = nm_f64_from_bits(0x07B0000000000000UL);   // 2^-900
    nm_f64 pa = nm_f64_abs(p);
    if (nm_f64_lt(pa, tiny)) {
        bool scale_a = nm_f64_lt(nm_f64_abs(a), nm_f64_abs(b));
        nm_f64 sa = scale_a ? nm_f64_ldexp(a, 600) : a, sb = scale_a ? b : nm_f64_ldexp(b, 600);
        return nm_ld_round_f64(p, nm_ld_sign(nm_f64_fma(sa, sb, nm_f64_neg(nm_f64_ldexp(p, 600)))), mode);
    }
    return nm_ld_round_f64(p, nm_ld_sign(nm_f64_fma(a, b, nm_f64_neg(p))), mode);
}
// x / y: the sign of x - q y (one fma, exact unless it underflows) times y's gives the error's. Where it
// could underflow, both sides are scaled by 2^600 without changing q: x and q when q is tiny (then |x| <
// 2^124: no overflow), x and y when x is tiny (then |y| <= 2^-68). A zero divisor gives an exact infinity.
static inline nm_f64 nm_ld_ddiv(nm_f64 x, nm_f64 y, int mode) {
    nm_f64 q = nm_f64_div(x, y), zero = nm_f64_from_bits(0UL);
    if (nm_f64_isinf(q) && nm_f64_isfinite(x) && nm_f64_isfinite(y) && !nm_f64_eq(y, zero))
        return nm_ld_overflow(q, mode);
    if (!nm_f64_isfinite(q)) return q;
    nm_f64 tiny = nm_f64_from_bits(0x07B0000000000000UL);   // 2^-900
    nm_f64 sx = x, sy = y, sq = q;
    if (nm_f64_lt(nm_f64_abs(q), tiny)) {
        sx = nm_f64_ldexp(x, 600);
        sq = nm_f64_ldexp(q, 600);
    } else if (nm_f64_lt(nm_f64_abs(x), tiny)) {
        sx = nm_f64_ldexp(x, 600);
        sy = nm_f64_ldexp(y, 600);
    }
    int err = nm_ld_sign(nm_f64_fma(nm_f64_neg(sq), sy, sx)) * (nm_f64_signbit(y) ? -1 : 1);
    return nm_ld_round_f64(q, err, mode);
}
static inline nm_f64 nm_ld_drcp(nm_f64 x, int mode) { return nm_ld_ddiv(nm_f64_from_bits(0x3FF0000000000000UL), x, mode); }
// x y + z: the error of s = fma(x, y, z) is p_hi + p_lo + z - s, p_hi + p_lo = x y exactly (one fma),
// whose sign Shewchuk's expansion arithmetic gives exactly (J. R. Shewchuk, Adaptive Precision
// Floating-Point Arithmetic and Fast Robust Geometric Predicates, 1997: Grow-Expansion with TwoSum; the
// largest nonzero component of the expansion has the sum's sign). Scaled by 2^600 where p_lo could
// underflow (p tiny; unless z is large, when s = z and the error is the product's sign), by 2^-64 where
// a TwoSum could overflow.
static inline nm_f64 nm_ld_two_sum(nm_f64 a, nm_f64 b, thread nm_f64 &err) {
    nm_f64 sum = nm_f64_add(a, b);
    nm_f64 bv = nm_f64_sub(sum, a), av = nm_f64_sub(sum, bv);
    err = nm_f64_add(nm_f64_sub(a, av), nm_f64_sub(b, bv));
    return sum;
}
// The sign of a + b + c + d, exactly.
static inline int nm_ld_sign_of_sum4(nm_f64 a, nm_f64 b, nm_f64 c, nm_f64 d) {
    nm_f64 e[4];
    e[0] = a;
    int n = 1;
    nm_f64 terms[3] = {b, c, d};
    for (int t = 0; t < 3; ++t) {
        nm_f64 q = terms[t];
        for (int i = 0; i < n; ++i) {
            nm_f64 h;
            q = nm_ld_two_sum(q, e[i], h);
            e[i] = h;
        }
        e[n] = q;
        n += 1;
    }
    for (int i = 3; i >= 0; --i) {
        int sign = nm_ld_sign(e[i]);
        if (sign != 0) return sign;
    }
    return 0;
}
static inline nm_f64 nm_ld_dfma(nm_f64 x, nm_f64 y, nm_f64 z, int mode) {
    nm_f64 s = nm_f64_fma(x, y, z), zero = nm_f64_from_bits(0UL);
    if (nm_f64_isinf(s) && nm_f64_isfinite(x) && nm_f64_isfinite(y) && nm_f64_isfinite(z))
        return nm_ld_overflow(s, mode);
    if (!nm_f64_isfinite(s)) return s;
    if (nm_f64_eq(s, zero)) {   // an exact zero: signed as the sum of x y and z (IEEE 754 6.3)
        nm_f64 p = nm_f64_mul(x, y);
        bool exact = nm_ld_sign_of_sum4(p, nm_f64_fma(x, y, nm_f64_neg(p)), z, zero) == 0;
        if (exact) return mode == 2 && (nm_f64_signbit(p) || nm_f64_signbit(z)) ? nm_f64_from_bits(0x8000000000000000UL) : s;
    }
    nm_f64 tiny = nm_f64_from_bits(0x07B0000000000000UL), big = nm_f64_from_bits(0x7E30000000000000UL);  // 2^-900, 2^996
    nm_f64 sx = x, sy = y, sz = z, ss = s;
    nm_f64 p = nm_f64_mul(x, y);
    if (nm_f64_lt(nm_f64_abs(p), tiny)) {
        if (nm_f64_ge(nm_f64_abs(z), nm_f64_from_bits(0x58F0000000000000UL))) {   // |z| >= 2^400: s = z
            int product = nm_f64_eq(x, zero) || nm_f64_eq(y, zero) ? 0 : (nm_f64_signbit(x) != nm_f64_signbit(y) ? -1 : 1);
            return nm_ld_round_f64(s, nm_f64_eq(s, z) ? product : nm_ld_sign(nm_f64_sub(z, s)), mode);
        }
        if (nm_f64_lt(nm_f64_abs(x), nm_f64_abs(y))) sx = nm_f64_ldexp(x, 600); else sy = nm_f64_ldexp(y, 600);
        sz = nm_f64_ldexp(z, 600);
        ss = nm_f64_ldexp(s, 600);
    } else if (nm_f64_ge(nm_f64_abs(p), big) || nm_f64_ge(nm_f64_abs(z), big) || nm_f64_ge(nm_f64_abs(s), big)) {
        if (nm_f64_lt(nm_f64_abs(x), nm_f64_abs(y))) sy = nm_f64_ldexp(y, -64); else sx = nm_f64_ldexp(x, -64);
        sz = nm_f64_ldexp(z, -64);
        ss = nm_f64_ldexp(s, -64);
    }
    nm_f64 hi = nm_f64_mul(sx, sy), lo = nm_f64_fma(sx, sy, nm_f64_neg(hi));
    return nm_ld_round_f64(s, nm_ld_sign_of_sum4(lo, hi, sz, nm_f64_neg(ss)), mode);
}
static inline nm_f64 nm_ld_dsqrt(nm_f64 a, int mode) {
    nm_f64 s = nm_f64_sqrt(a);
    if (!nm_f64_isfinite(s) || nm_f64_eq(s, nm_f64_from_bits(0UL))) return s;
    // a - s^2 by one fma is exact unless it underflows: below 2^-900, scale a by 2^600 and s by 2^300.
    if (nm_f64_lt(a, nm_f64_from_bits(0x07B0000000000000UL))) {
        nm_f64 ss = nm_f64_ldexp(s, 300);
        return nm_ld_round_f64(s, nm_ld_sign(nm_f64_fma(nm_f64_neg(ss), ss, nm_f64_ldexp(a, 600))), mode);
    }
    return nm_ld_round_f64(s, nm_ld_sign(nm_f64_fma(nm_f64_neg(s), s, a)), mode);
}

//@@ ld_float64 requires: f64_base f64_add f64_compare f64_round f64_frexp fm_pow
// float64 functions the float64 math library lacks, built on its entry points: exp10 as pow(10, x)
// (within pow's bound, 10 being exact), 1/x (correctly rounded), rsqrt as 1/sqrt (two roundings: within 1 ulp), fdim, round
// (half away from zero), logb and ilogb with CUDA's special values, hiloint2double.
static inline nm_f64 nm_ld_exp10(nm_f64 x) { return nm_f64_pow(nm_f64_from_bits(0x4024000000000000UL), x); }
static inline nm_f64 nm_ld_drcp_rn(nm_f64 x) { return nm_f64_div(nm_f64_from_bits(0x3FF0000000000000UL), x); }
static inline nm_f64 nm_ld_rsqrt(nm_f64 x) {
    return nm_f64_div(nm_f64_from_bits(0x3FF0000000000000UL), nm_f64_sqrt(x));
}
static inline nm_f64 nm_ld_fdim(nm_f64 x, nm_f64 y) {
    if (nm_f64_isnan(x) || nm_f64_isnan(y)) return nm_f64_add(x, y);
    return nm_f64_gt(x, y) ? nm_f64_sub(x, y) : nm_f64_from_bits(0UL);
}
static inline nm_f64 nm_ld_round(nm_f64 x) {
    nm_f64 t = nm_f64_trunc(x);
    nm_f64 half_ = nm_f64_from_bits(0x3FE0000000000000UL);
    if (!nm_f64_isfinite(x) || nm_f64_lt(nm_f64_abs(nm_f64_sub(x, t)), half_)) return t;
    return nm_f64_add(t, nm_f64_copysign(nm_f64_from_bits(0x3FF0000000000000UL), x));
}
static inline int nm_ld_ilogb64(nm_f64 x) {
    if (nm_f64_isnan(x) || nm_f64_eq(x, nm_f64_from_bits(0UL))) return int(0x80000000u);
    if (nm_f64_isinf(x)) return 0x7FFFFFFF;
    ulong b = x.bits & 0x7FFFFFFFFFFFFFFFUL;
    int e = int(b >> 52);
    return e != 0 ? e - 1023 : -1011 - int(clz(b));
}
static inline nm_f64 nm_ld_logb64(nm_f64 x) {
    if (nm_f64_isnan(x)) return x;
    if (nm_f64_eq(x, nm_f64_from_bits(0UL))) return nm_f64_from_bits(0xFFF0000000000000UL);
    if (nm_f64_isinf(x)) return nm_f64_abs(x);
    return nm_f64_from_i32(nm_ld_ilogb64(x));
}
static inline nm_f64 nm_ld_hiloint2double(int hi, int lo) {
    return nm_f64_from_bits((ulong(uint(hi)) << 32) | ulong(uint(lo)));
}

//@@ ld_half
// CUDA-C's __h* half functions (numba.cuda's cuda.fp16.__hadd_sat ...): saturation to [0, 1] (NaN -> +0),
// relu (negative -> +0, NaN kept), max/min propagating NaN, unordered comparisons, __hisinf's -1/0/1,
// bit patterns, and conversions to half with directed rounding: the half nearest to the float (exact
// here: a float holds every value these conversions start from, or one beyond the half range, which
// rounds as that value would) stepped where it passed it.
static inline half nm_h_sat(half x) { return x >= half(1.0f) ? half(1.0f) : (x > half(0.0f) ? x : half(0.0f)); }
static inline half nm_h_add_sat(half a, half b) { return nm_h_sat(a + b); }
static inline half nm_h_sub_sat(half a, half b) { return nm_h_sat(a - b); }
static inline half nm_h_mul_sat(half a, half b) { return nm_h_sat(a * b); }
static inline half nm_h_fma_sat(half a, half b, half c) { return nm_h_sat(fma(a, b, c)); }
static inline half nm_h_fma_relu(half a, half b, half c) {
    half r = fma(a, b, c);
    return isnan(r) || r >= half(0.0f) ? r : half(0.0f);
}
static inline half nm_h_max_nan(half a, half b) { return isnan(a) || isnan(b) ? a + b : (a > b ? a : b); }
static inline half nm_h_min_nan(half a, half b) { return isnan(a) || isnan(b) ? a + b : (a < b ? a : b); }
static inline bool nm_h_unordered(half a, half b) { return isnan(a) || isnan(b); }
static inline bool nm_h_equ(half a, half b) { return nm_h_unordered(a, b) || a == b; }
static inline bool nm_h_neu(half a, half b) { return nm_h_unordered(a, b) || a != b; }
static inline bool nm_h_ltu(half a, half b) { return nm_h_unordered(a, b) || a < b; }
static inline bool nm_h_leu(half a, half b) { return nm_h_unordered(a, b) || a <= b; }
static inline bool nm_h_gtu(half a, half b) { return nm_h_unordered(a, b) || a > b; }
static inline bool nm_h_geu(half a, half b) { return nm_h_unordered(a, b) || a >= b; }
static inline int nm_h_isinf(half x) { return isinf(x) ? (x > half(0.0f) ? 1 : -1) : 0; }
static inline short nm_h_as_short(half x) { return as_type<short>(x); }
static inline ushort nm_h_as_ushort(half x) { return as_type<ushort>(x); }
static inline half nm_h_from_short_bits(short x) { return as_type<half>(x); }
static inline half nm_h_from_ushort_bits(ushort x) { return as_type<half>(x); }
static inline half nm_h_step(half r, bool up) {
    if (r == half(0.0f)) return as_type<half>(ushort(up ? 0x0001u : 0x8001u));
    ushort b = as_type<ushort>(r);
    return as_type<half>(ushort(up == (r > half(0.0f)) ? b + 1u : b - 1u));
}
static inline half nm_h_from_float(float x, int mode) {
    half r = half(x);
    if (isnan(x)) return r;
    float rb = float(r);
    if (rb == x) return r;
    bool above = rb > x;
    if (mode == 2) return above ? nm_h_step(r, false) : r;
    if (mode == 3) return above ? r : nm_h_step(r, true);
    return (x > 0.0f) == above ? nm_h_step(r, x < 0.0f) : r;
}
// half to integers (CUDA's __half2int_rn ...): rounded by `mode` (0 to nearest even, 1 toward zero, 2 down,
// 3 up), saturated to the `bits`-wide type; NaN gives 0, or 0x8000000000000000 for the 64-bit types.
static inline float nm_h_rounded(half x, int mode) {
    float f = float(x);
    return mode == 0 ? rint(f) : (mode == 1 ? trunc(f) : (mode == 2 ? floor(f) : ceil(f)));
}
static inline long nm_h_to_signed(half x, int mode, int bits) {
    if (isnan(x)) return bits == 64 ? long(0x8000000000000000UL) : 0L;
    long hi = long((1UL << uint(bits - 1)) - 1UL), lo = -hi - 1L;
    float f = nm_h_rounded(x, mode);
    return f <= -65536.0f ? lo : (f >= 65536.0f ? hi : clamp(long(f), lo, hi));
}
static inline ulong nm_h_to_unsigned(half x, int mode, int bits) {
    if (isnan(x)) return bits == 64 ? 0x8000000000000000UL : 0UL;
    ulong hi = bits == 64 ? ~0UL : (1UL << uint(bits)) - 1UL;
    float f = nm_h_rounded(x, mode);
    return f <= 0.0f ? 0UL : (f >= 65536.0f ? hi : min(ulong(f), hi));
}

//@@ ld_float_math requires: mathlib
// rcbrtf as 1/cbrt (the math library's cbrt, 4 ulp, then one correctly rounded division); remquof's
// quotient bits: the low three bits of n = x/y rounded half to even (remainder's n) with the sign of x/y,
// from fmod(|x|, 8|y|) (exact; n's parity survives, 8 being even) and the remainder of that by |y|
// (exact, at most 8 times |y| apart: rint recovers the count exactly).
static inline float nm_ld_rcbrtf(float x) { return 1.0f / nm_cbrt(x); }
// normcdf(x) = erfc(t)/2, t = -x/sqrt(2). t is rounded; its rounding error d (exact by fma, plus the
// product with the tail of 1/sqrt(2)) is folded in to first order, erfc(t + d) = erfc(t) - d 2/sqrt(pi)
// exp(-t^2): without it, the relative error 2 t d of the tail (|x| up to 13) would reach 200 ulp.
static inline float nm_ld_normcdff(float x) {
    if (isnan(x)) return x;
    float t = -x * 0.70710677f;
    float d = fma(-x, 0.70710677f, -t) - x * 1.21016175e-8f;
    return 0.5f * fma(-d * 1.1283792f, exp(-t * t), nm_erfc(t));
}
static inline int nm_ld_remquo_bitsf(float x, float y) {
    if (isnan(x) || isnan(y) || isinf(x) || y == 0.0f) return 0;
    float ax = fabs(x), ay = fabs(y);
    float r8 = ay <= FLT_MAX / 8.0f ? fmod(ax, 8.0f * ay) : ax;
    int n = int(rint((r8 - nm_remainder(r8, ay)) / ay)) & 7;
    return signbit(x) != signbit(y) ? -n : n;
}

//@@ ld_float64_math requires: f64_base f64_add f64_mul f64_div f64_fma f64_compare f64_round f64_int f64_fmod fm_trig fm_cbrt fm_misc fm_erf fm_exp
// float64 sinpi/cospi: x = k/2 + r, |r| <= 1/4, k = rint(2x), both exact; the float64 library's sin or cos
// (0.503 ulp) of pi r (one more rounding) by k's quadrant. |x| >= 2^52 is an integer: sinpi gives +-0 (the
// sign of x), cospi +-1. rcbrt as 1/cbrt; remquo's quotient bits as remquof's; normcdf as normcdff.
static inline nm_f64 nm_ld_pi_quadrant64(nm_f64 r, int q) {
    nm_f64 t = nm_f64_mul(nm_f64_from_bits(0x400921FB54442D18UL), r);
    nm_f64 v = (q & 1) != 0 ? nm_f64_cos(t) : nm_f64_sin(t);
    return q >= 2 ? nm_f64_neg(v) : v;
}
static inline nm_f64 nm_ld_sinpi64(nm_f64 x) {
    if (!nm_f64_isfinite(x)) return nm_f64_sub(x, x);
    nm_f64 zero = nm_f64_from_bits(0UL);
    if (nm_f64_ge(nm_f64_abs(x), nm_f64_from_bits(0x4330000000000000UL))) return nm_f64_copysign(zero, x);
    nm_f64 k = nm_f64_rint(nm_f64_add(x, x));
    nm_f64 r = nm_f64_sub(x, nm_f64_mul(nm_f64_from_bits(0x3FE0000000000000UL), k));
    nm_f64 v = nm_ld_pi_quadrant64(r, int(nm_f64_to_i64(k) & 3L));
    return nm_f64_eq(v, zero) ? nm_f64_copysign(zero, x) : v;
}
static inline nm_f64 nm_ld_cospi64(nm_f64 x) {
    if (!nm_f64_isfinite(x)) return nm_f64_sub(x, x);
    nm_f64 a = nm_f64_abs(x), one = nm_f64_from_bits(0x3FF0000000000000UL);
    if (nm_f64_ge(a, nm_f64_from_bits(0x4340000000000000UL))) return one;
    if (nm_f64_ge(a, nm_f64_from_bits(0x4330000000000000UL))) return (nm_f64_to_i64(a) & 1L) != 0L ? nm_f64_neg(one) : one;
    nm_f64 k = nm_f64_rint(nm_f64_add(x, x));
    nm_f64 r = nm_f64_sub(x, nm_f64_mul(nm_f64_from_bits(0x3FE0000000000000UL), k));
    nm_f64 v = nm_ld_pi_quadrant64(r, int((nm_f64_to_i64(k) + 1L) & 3L));
    return nm_f64_eq(v, nm_f64_from_bits(0UL)) ? nm_f64_from_bits(0UL) : v;
}
static inline nm_f64 nm_ld_normcdf64(nm_f64 x) {
    if (nm_f64_isnan(x)) return x;
    nm_f64 c_hi = nm_f64_from_bits(0x3FE6A09E667F3BCDUL), c_lo = nm_f64_from_bits(0xBC8BDD3413B26456UL);
    nm_f64 nx = nm_f64_neg(x);
    nm_f64 t = nm_f64_mul(nx, c_hi);
    nm_f64 d = nm_f64_add(nm_f64_fma(nx, c_hi, nm_f64_neg(t)), nm_f64_mul(nx, c_lo));
    nm_f64 g = nm_f64_mul(nm_f64_mul(d, nm_f64_from_bits(0x3FF20DD750429B6DUL)), nm_f64_exp(nm_f64_neg(nm_f64_mul(t, t))));
    return nm_f64_mul(nm_f64_from_bits(0x3FE0000000000000UL), nm_f64_sub(nm_f64_erfc(t), g));
}
static inline nm_f64 nm_ld_rcbrt64(nm_f64 x) { return nm_f64_div(nm_f64_from_bits(0x3FF0000000000000UL), nm_f64_cbrt(x)); }
static inline int nm_ld_remquo_bits64(nm_f64 x, nm_f64 y) {
    nm_f64 zero = nm_f64_from_bits(0UL);
    if (nm_f64_isnan(x) || nm_f64_isnan(y) || nm_f64_isinf(x) || nm_f64_eq(y, zero)) return 0;
    nm_f64 ax = nm_f64_abs(x), ay = nm_f64_abs(y), eight = nm_f64_from_bits(0x4020000000000000UL);
    nm_f64 r8 = nm_f64_le(ay, nm_f64_from_bits(0x7FBFFFFFFFFFFFFFUL)) ? nm_f64_fmod(ax, nm_f64_mul(eight, ay)) : ax;
    nm_f64 n = nm_f64_rint(nm_f64_div(nm_f64_sub(r8, nm_f64_remainder(r8, ay)), ay));
    int q = int(nm_f64_to_i64(n) & 7L);
    return nm_f64_signbit(x) != nm_f64_signbit(y) ? -q : q;
}

//@@ ld_erfinv requires: f64_base f64_add f64_mul f64_div f64_sqrt f64_fma f64_compare f64_float f64_int fm_erf fm_exp fm_log
// erfinv, erfcinv and normcdfinv on the emulated float64 (the float32 forms round its result once more,
// so they are slow: several float64 erf/erfc, exp and log per call). Start: Winitzki's approximation
// (S. Winitzki, "A handy approximation for the error function and its inverse", 2008; a = 0.147, relative
// error about 2e-3), from ln(1 - y^2) given as ln(w (2 - w)) with w = 1 - |y| exact in the tail. Then
// Newton's method: on erf for |y| <= 1/2; in the tail on ln erfc (nearly linear there, so it converges
// from the start even at the smallest subnormal argument), x += ln(erfc(x)/w) sqrt(pi)/2 exp(x^2 + ln
// erfc(x)).
static inline nm_f64 nm_ld_erfinv_start(nm_f64 ln_one_minus_y2) {
    nm_f64 g = nm_f64_add(nm_f64_from_bits(0x401152AF46B7C65EUL),
                          nm_f64_mul(nm_f64_from_bits(0x3FE0000000000000UL), ln_one_minus_y2));
    nm_f64 root = nm_f64_sqrt(nm_f64_sub(nm_f64_mul(g, g),
                                         nm_f64_mul(ln_one_minus_y2, nm_f64_from_bits(0x401B35FC845A8ECDUL))));
    return nm_f64_sqrt(nm_f64_sub(root, g));
}
// erfinv(a) for 0 <= a <= 1/2.
static inline nm_f64 nm_ld_erfinv_center(nm_f64 a) {
    nm_f64 one = nm_f64_from_bits(0x3FF0000000000000UL), half_sqrt_pi = nm_f64_from_bits(0x3FEC5BF891B4EF6BUL);
    if (nm_f64_eq(a, nm_f64_from_bits(0UL))) return a;
    nm_f64 x = nm_ld_erfinv_start(nm_f64_log(nm_f64_sub(one, nm_f64_mul(a, a))));
    for (int i = 0; i < 4; ++i) {
        nm_f64 r = nm_f64_sub(nm_f64_erf(x), a);
        x = nm_f64_sub(x, nm_f64_mul(nm_f64_mul(r, half_sqrt_pi), nm_f64_exp(nm_f64_mul(x, x))));
    }
    return x;
}
// For x >= 26: erfc(x) = exp(-x^2) / (x sqrt(pi)) (1 + sum_k (-1)^k (2k-1)!! / (2x^2)^k), the asymptotic
// series (Abramowitz and Stegun 7.1.23); eight terms, the next being below 2^-56 there. nm_ld_erfc_series
// is the bracket. ln erfc(x) from it where erfc(x) is below 2^-1000 and its subnormal values would lose
// the digits Newton's method needs; erfcx(x) = exp(x^2) erfc(x) from it where exp(x^2) would overflow.
static inline nm_f64 nm_ld_erfc_series(nm_f64 x) {
    nm_f64 one = nm_f64_from_bits(0x3FF0000000000000UL);
    nm_f64 u = nm_f64_div(one, nm_f64_mul(nm_f64_from_bits(0x4000000000000000UL), nm_f64_mul(x, x)));
    nm_f64 term = one, sum = one;
    for (int k = 1; k <= 8; ++k) {
        term = nm_f64_neg(nm_f64_mul(term, nm_f64_mul(u, nm_f64_from_i32(2 * k - 1))));
        sum = nm_f64_add(sum, term);
    }
    return sum;
}
static inline nm_f64 nm_ld_log_erfc_large(nm_f64 x) {
    nm_f64 ln_sqrt_pi = nm_f64_from_bits(0x3FE250D048E7A1BDUL);
    return nm_f64_sub(nm_f64_log(nm_ld_erfc_series(x)),
                      nm_f64_add(nm_f64_mul(x, x), nm_f64_add(nm_f64_log(x), ln_sqrt_pi)));
}
// erfcx(x) = exp(x^2) erfc(x): below 26, erfc(x) times exp(x^2) with x^2 = hi + lo split exactly by fma
// (exp(hi) (1 + lo): a rounded x^2 would cost 2^-53 x^2, 300 ulp at x = 26); above, the series.
static inline nm_f64 nm_ld_erfcx64(nm_f64 x) {
    if (nm_f64_isnan(x)) return x;
    if (nm_f64_ge(x, nm_f64_from_bits(0x403A000000000000UL))) {
        nm_f64 x_sqrt_pi = nm_f64_mul(x, nm_f64_from_bits(0x3FFC5BF891B4EF6BUL));
        return nm_f64_div(nm_ld_erfc_series(x), x_sqrt_pi);
    }
    nm_f64 hi = nm_f64_mul(x, x), lo = nm_f64_fma(x, x, nm_f64_neg(hi));
    nm_f64 e = nm_f64_mul(nm_f64_exp(hi), nm_f64_add(nm_f64_from_bits(0x3FF0000000000000UL), lo));
    return nm_f64_mul(nm_f64_erfc(x), e);
}
static inline float nm_ld_erfcxf(float x) { return nm_f64_to_f32(nm_ld_erfcx64(nm_f64_from_f32(x))); }
// erfcinv(w) for 0 < w <= 1/2.
static inline nm_f64 nm_ld_erfcinv_tail(nm_f64 w) {
    nm_f64 two = nm_f64_from_bits(0x4000000000000000UL), half_sqrt_pi = nm_f64_from_bits(0x3FEC5BF891B4EF6BUL);
    nm_f64 x = nm_ld_erfinv_start(nm_f64_log(nm_f64_mul(w, nm_f64_sub(two, w))));
    nm_f64 lw = nm_f64_log(w);
    for (int i = 0; i < 6; ++i) {
        nm_f64 le = nm_f64_ge(x, nm_f64_from_bits(0x403A000000000000UL)) ? nm_ld_log_erfc_large(x)
                                                                        : nm_f64_log(nm_f64_erfc(x));
        nm_f64 scale = nm_f64_exp(nm_f64_add(nm_f64_mul(x, x), le));
        x = nm_f64_add(x, nm_f64_mul(nm_f64_mul(nm_f64_sub(le, lw), half_sqrt_pi), scale));
    }
    return x;
}
static inline nm_f64 nm_ld_erfinv64(nm_f64 y) {
    nm_f64 one = nm_f64_from_bits(0x3FF0000000000000UL), a = nm_f64_abs(y);
    if (nm_f64_isnan(y) || nm_f64_gt(a, one)) return nm_f64_from_bits(0x7FF8000000000000UL);
    if (nm_f64_eq(a, one)) return nm_f64_copysign(nm_f64_from_bits(0x7FF0000000000000UL), y);
    nm_f64 x = nm_f64_le(a, nm_f64_from_bits(0x3FE0000000000000UL)) ? nm_ld_erfinv_center(a)
                                                                   : nm_ld_erfcinv_tail(nm_f64_sub(one, a));
    return nm_f64_copysign(x, y);
}
static inline nm_f64 nm_ld_erfcinv64(nm_f64 w) {
    nm_f64 zero = nm_f64_from_bits(0UL), one = nm_f64_from_bits(0x3FF0000000000000UL);
    nm_f64 two = nm_f64_from_bits(0x4000000000000000UL), half_ = nm_f64_from_bits(0x3FE0000000000000UL);
    if (nm_f64_isnan(w) || nm_f64_lt(w, zero) || nm_f64_gt(w, two)) return nm_f64_from_bits(0x7FF8000000000000UL);
    if (nm_f64_eq(w, zero)) return nm_f64_from_bits(0x7FF0000000000000UL);
    if (nm_f64_eq(w, two)) return nm_f64_from_bits(0xFFF0000000000000UL);
    if (nm_f64_le(w, half_)) return nm_ld_erfcinv_tail(w);
    if (nm_f64_ge(w, nm_f64_from_bits(0x3FF8000000000000UL))) return nm_f64_neg(nm_ld_erfcinv_tail(nm_f64_sub(two, w)));
    nm_f64 y = nm_f64_sub(one, w);   // exact, |y| < 1/2
    return nm_f64_copysign(nm_ld_erfinv_center(nm_f64_abs(y)), y);
}
// normcdfinv(p) = -sqrt(2) erfcinv(2 p).
static inline nm_f64 nm_ld_normcdfinv64(nm_f64 p) {
    return nm_f64_mul(nm_f64_from_bits(0xBFF6A09E667F3BCDUL), nm_ld_erfcinv64(nm_f64_add(p, p)));
}
static inline float nm_ld_erfinvf(float y) { return nm_f64_to_f32(nm_ld_erfinv64(nm_f64_from_f32(y))); }
static inline float nm_ld_erfcinvf(float w) { return nm_f64_to_f32(nm_ld_erfcinv64(nm_f64_from_f32(w))); }
static inline float nm_ld_normcdfinvf(float p) { return nm_f64_to_f32(nm_ld_normcdfinv64(nm_f64_from_f32(p))); }

//@@ ld_bessel requires: f64_base f64_add f64_mul f64_div f64_sqrt f64_compare f64_int f64_float f64_round f64_frexp fm_trig fm_log
// Bessel functions of integer order, J_n and Y_n, on the emulated float64; the float32 forms round the
// float64 result once more. Special values as C99 and glibc: J(+-inf) = 0, Y(0) = -inf, Y(x < 0) = NaN,
// J_n(-x) = (-1)^n J_n(x), J_-n = (-1)^n J_n, Y_-n = (-1)^n Y_n, NaN in gives NaN.
// - |x| < 25: Miller's backward recurrence (J. C. P. Miller, 1952; as in Abramowitz and Stegun 9.12,
//   and fdlibm/musl's e_jn.c for large orders): t_{k-1} = (2k/x) t_k - t_{k+1} from t_{N+1} = 0, t_N = 1,
//   normalised by 1 = J_0 + 2 sum J_2k (A&S 9.1.46), rescaled by 2^-600 when it grows past 2^600. The same
//   pass sums Neumann's series for Y_0 (A&S 9.1.88), (pi/2) Y_0 = (ln(x/2) + gamma) J_0 - 2 sum (-1)^m
//   J_2m / m, and its derivative for Y_1, (pi/2) Y_1 = (ln(x/2) + gamma) J_1 - J_0/x + sum_m (-1)^m
//   (J_2m-1 - J_2m+1) / m: every term is at most 1, so the error is absolute, a few 2^-53; next to the
//   zeros below 9, the Taylor series about the zero keeps it relative (nm_ld_bessel_at_zero).
// - |x| >= 25: Hankel's asymptotic expansion (A&S 9.2.5-9.2.10), J = sqrt(2/(pi x)) (P cos chi - Q sin chi),
//   Y = sqrt(2/(pi x)) (P sin chi + Q cos chi), chi = x - (2 nu + 1) pi/4, summed until its terms fall below
//   2^-60 (at x = 25 the smallest term is near e^-50); cos chi and sin chi from the float64 library's
//   sin x and cos x (exact argument reduction), so the error near the zeros is absolute, not relative.
// - J_n, n >= 2: forward recurrence from J_0, J_1 where n < |x| (stable there), else Miller's run started
//   above n; Y_n: forward recurrence from Y_0, Y_1 (always stable), stopped at -inf. Both loop about
//   max(n, |x|) times, as glibc's jn and yn do; J_n that certainly underflows is 0 without the loop.
struct nm_ld_miller {
    nm_f64 j0, j1, y0, y1, jn;
};
static inline nm_f64 nm_ld_bessel_const(ulong bits) { return nm_f64_from_bits(bits); }
// Miller's run for 2^-27 <= x < 25 (or any x > 0 when only J_n is wanted, n >= 2).
static inline nm_ld_miller nm_ld_bessel_miller(nm_f64 x, long n) {
    nm_f64 zero = nm_f64_from_bits(0UL), one = nm_ld_bessel_const(0x3FF0000000000000UL);
    long top = max(n, nm_f64_to_i64(nm_f64_ceil(x)));
    long big = top + 24L + long(3.0f * sqrt(float(top)));
    big += big & 1L;
    nm_f64 next = zero, t = one, two_over_x = nm_f64_div(nm_ld_bessel_const(0x4000000000000000UL), x);
    nm_f64 norm = zero, s0 = zero, s1 = zero, tn = zero, t1 = zero;
    int shifts_after_n = 0;
    nm_f64 limit = nm_ld_bessel_const(0x6570000000000000UL);   // 2^600
    for (long k = big; k >= 0L; --k) {   // t is t_k, next is t_{k+1}
        if (k == n) { tn = t; shifts_after_n = 0; }
        if (k == 1L) t1 = t;
        long m = k / 2L;
        if ((k & 1L) == 0L) {
            if (k > 0L) {
                norm = nm_f64_add(norm, nm_f64_add(t, t));
                nm_f64 term = nm_f64_div(t, nm_f64_from_i64(m));
                s0 = (m & 1L) != 0L ? nm_f64_sub(s0, term) : nm_f64_add(s0, term);
            } else {
                norm = nm_f64_add(norm, t);
            }
        } else if (k == 1L) {
            s1 = nm_f64_sub(s1, t);
        } else {   // k = 2m + 1: (-1)^(m+1) (2m + 1) / (m (m + 1))
            nm_f64 c = nm_f64_div(nm_f64_from_i64(k), nm_f64_from_i64(m * (m + 1L)));
            nm_f64 term = nm_f64_mul(c, t);
            s1 = (m & 1L) != 0L ? nm_f64_add(s1, term) : nm_f64_sub(s1, term);
        }
        if (k == 0L) break;
        nm_f64 prev = nm_f64_sub(nm_f64_mul(nm_f64_mul(nm_f64_from_i64(k), two_over_x), t), next);
        next = t;
        t = prev;
        if (nm_f64_gt(nm_f64_abs(t), limit)) {
            t = nm_f64_ldexp(t, -600); next = nm_f64_ldexp(next, -600);
            norm = nm_f64_ldexp(norm, -600); s0 = nm_f64_ldexp(s0, -600); s1 = nm_f64_ldexp(s1, -600);
            t1 = nm_f64_ldexp(t1, -600);
            ++shifts_after_n;
        }
    }
    nm_ld_miller r;
    r.j0 = nm_f64_div(t, norm);
    r.j1 = nm_f64_div(t1, norm);
    r.jn = nm_f64_ldexp(nm_f64_div(tn, norm), -600 * shifts_after_n);
    nm_f64 two_over_pi = nm_ld_bessel_const(0x3FE45F306DC9C883UL);
    nm_f64 lead = nm_f64_add(nm_f64_log(nm_f64_ldexp(x, -1)), nm_ld_bessel_const(0x3FE2788CFC6FB619UL));   // + Euler's gamma
    nm_f64 y0 = nm_f64_sub(nm_f64_mul(lead, r.j0), nm_f64_div(nm_f64_add(s0, s0), norm));
    nm_f64 y1 = nm_f64_add(nm_f64_sub(nm_f64_mul(lead, r.j1), nm_f64_div(r.j0, x)), nm_f64_div(s1, norm));
    r.y0 = nm_f64_mul(two_over_pi, y0);
    r.y1 = nm_f64_mul(two_over_pi, y1);
    return r;
}
// Hankel's expansion for x >= 25: J_nu and Y_nu (nu = 0 or 1) as (j, y).
struct nm_ld_bessel_pair {
    nm_f64 j, y;
};
static inline nm_ld_bessel_pair nm_ld_bessel_hankel(nm_f64 x, int nu) {
    nm_f64 zero = nm_f64_from_bits(0UL), one = nm_ld_bessel_const(0x3FF0000000000000UL);
    nm_f64 mu = nm_f64_from_i32(4 * nu * nu), eight_x = nm_f64_mul(nm_ld_bessel_const(0x4020000000000000UL), x);
    nm_f64 p = one, q = zero, term = one, tiny = nm_ld_bessel_const(0x3C30000000000000UL);   // 2^-60
    for (int k = 1; k < 80; ++k) {
        nm_f64 odd = nm_f64_from_i32(2 * k - 1);
        nm_f64 next = nm_f64_div(nm_f64_mul(term, nm_f64_sub(mu, nm_f64_mul(odd, odd))),
                                 nm_f64_mul(nm_f64_from_i32(k), eight_x));
        if (nm_f64_gt(nm_f64_abs(next), nm_f64_abs(term)) && k > 2) break;   // the series starts to diverge
        term = next;
        bool minus = ((k / 2) & 1) != 0;   // P = 1 - a_2 + a_4 - ..., Q = a_1 - a_3 + ...
        nm_f64 signed_term = minus ? nm_f64_neg(term) : term;
        if ((k & 1) != 0) q = nm_f64_add(q, signed_term); else p = nm_f64_add(p, signed_term);
        if (nm_f64_lt(nm_f64_abs(term), tiny)) break;
    }
    nm_f64 s = nm_f64_sin(x), c = nm_f64_cos(x);
    nm_f64 b = nm_f64_div(nm_ld_bessel_const(0x3FE20DD750429B6DUL), nm_f64_sqrt(x));   // 1/sqrt(pi x)
    nm_f64 cs = nm_f64_add(c, s), sc = nm_f64_sub(s, c);
    nm_ld_bessel_pair r;
    if (nu == 0) {
        r.j = nm_f64_mul(b, nm_f64_sub(nm_f64_mul(p, cs), nm_f64_mul(q, sc)));
        r.y = nm_f64_mul(b, nm_f64_add(nm_f64_mul(p, sc), nm_f64_mul(q, cs)));
    } else {
        r.j = nm_f64_mul(b, nm_f64_add(nm_f64_mul(p, sc), nm_f64_mul(q, cs)));
        r.y = nm_f64_mul(b, nm_f64_sub(nm_f64_mul(q, sc), nm_f64_mul(p, cs)));
    }
    return r;
}
// Near the zeros below 9 (CUDA promises 7 ulp below 8), Miller's absolute error would be a large relative
// one: there the function is its Taylor series about the zero z, sum_k a_k t^k with t = x - z (z as a
// double-float hi + lo; x - hi is exact), a_0 = 0, a_1 the derivative at z, and the other coefficients from
// Bessel's equation x^2 y'' + x y' + (x^2 - nu^2) y = 0 written at x = z + t:
// z^2 (k+1)(k+2) a_k+2 = -(z (k+1)(2k+1) a_k+1 + (k^2 + z^2 - nu^2) a_k + 2 z a_k-1 + a_k-2).
// Rows: function (0 J0, 1 J1, 2 Y0, 3 Y1), zero hi, zero lo, derivative there; from mpmath
// (tests/language/test_libdevice_bessel.py checks them).
constant ulong nm_ld_bessel_zeros[11][4] = {
    {0UL, 0x40033D152E971B40UL, 0xBCA0F539D7DA258EUL, 0xBFE09CDB36551280UL},   // J0: 2.4048255576957729
    {0UL, 0x4016148F5B2C2E45UL, 0x3C975054CD60A517UL, 0x3FD5C6E60A097823UL},   // J0: 5.5200781102863106
    {0UL, 0x40214EB56CCCDECAUL, 0xBCB51970714C7C25UL, 0xBFD15F7977A772D4UL},   // J0: 8.6537279129110125
    {1UL, 0x400EA75575AF6F09UL, 0xBCA60155A9D1B256UL, 0xBFD9C6CF582CBF7FUL},   // J1: 3.8317059702075125
    {1UL, 0x401C0FF5F3B47250UL, 0xBC9B226D9D243827UL, 0x3FD33518B3874E8AUL},   // J1: 7.0155866698156188
    {2UL, 0x3FEC982EB8D417EAUL, 0x3C7EA9D270347F83UL, 0x3FEC24371844B88AUL},   // Y0: 0.89357696627916749
    {2UL, 0x400FA9534D98569CUL, 0xBC9F06AE7804384EUL, 0xBFD9C34256A12A0CUL},   // Y0: 3.957678419314858
    {2UL, 0x401C581DC4E72103UL, 0xBC99774A495F56CFUL, 0x3FD334CCA0697A5BUL},   // Y0: 7.0860510603017728
    {3UL, 0x400193BED4DFF243UL, 0xBC8BD1E50D219BFDUL, 0x3FE0AA48442F014BUL},   // Y1: 2.1971413260310171
    {3UL, 0x4015B7FE4E87B02EUL, 0x3CBDFE7BAC228E8CUL, 0xBFD5C7C556F0C19AUL},   // Y1: 5.4296810407941347
    {3UL, 0x40213127AE6169B4UL, 0x3CB479CC068D9046UL, 0x3FD15F993FCEAB5CUL},   // Y1: 8.5960058683311686
};
// The function `fn` at x by its Taylor series when x is within min(1, z/3) of one of its zeros z in the
// table; otherwise `fallback`.
static inline nm_f64 nm_ld_bessel_at_zero(int fn, nm_f64 x, nm_f64 fallback) {
    for (int row = 0; row < 11; ++row) {
        if (int(nm_ld_bessel_zeros[row][0]) != fn) continue;
        nm_f64 z = nm_ld_bessel_const(nm_ld_bessel_zeros[row][1]);
        nm_f64 radius = nm_f64_div(z, nm_f64_from_i32(3));
        nm_f64 one = nm_ld_bessel_const(0x3FF0000000000000UL);
        if (nm_f64_gt(radius, one)) radius = one;
        nm_f64 d = nm_f64_sub(x, z);
        if (nm_f64_gt(nm_f64_abs(d), radius)) continue;
        nm_f64 t = nm_f64_sub(d, nm_ld_bessel_const(nm_ld_bessel_zeros[row][2]));
        nm_f64 zero = nm_f64_from_bits(0UL), nu2 = nm_f64_from_i32(fn & 1);
        nm_f64 z2 = nm_f64_mul(z, z);
        // b_k = a_k / a_1: b_-2 = b_-1 = b_0 = 0, b_1 = 1; the loop makes b_k+2 from b_k+1 ... b_k-2.
        nm_f64 bm2 = zero, bm1 = zero, b0 = zero, b1 = nm_ld_bessel_const(0x3FF0000000000000UL);
        nm_f64 power = t, sum = t, tiny = nm_ld_bessel_const(0x3C30000000000000UL);   // 2^-60
        for (int k = 0; k < 40; ++k) {
            nm_f64 kk = nm_f64_from_i32(k);
            nm_f64 c1 = nm_f64_mul(z, nm_f64_from_i32((k + 1) * (2 * k + 1)));
            nm_f64 c0 = nm_f64_sub(nm_f64_add(nm_f64_mul(kk, kk), z2), nu2);
            nm_f64 acc = nm_f64_add(nm_f64_mul(c1, b1), nm_f64_mul(c0, b0));
            acc = nm_f64_add(acc, nm_f64_add(nm_f64_mul(nm_f64_add(z, z), bm1), bm2));
            nm_f64 b2 = nm_f64_neg(nm_f64_div(acc, nm_f64_mul(z2, nm_f64_from_i32((k + 1) * (k + 2)))));
            power = nm_f64_mul(power, t);
            nm_f64 term = nm_f64_mul(b2, power);
            sum = nm_f64_add(sum, term);
            if (k > 2 && nm_f64_lt(nm_f64_abs(term), nm_f64_mul(tiny, nm_f64_abs(sum)))) break;
            bm2 = bm1; bm1 = b0; b0 = b1; b1 = b2;
        }
        return nm_f64_mul(nm_ld_bessel_const(nm_ld_bessel_zeros[row][3]), sum);
    }
    return fallback;
}
static inline bool nm_ld_bessel_far(nm_f64 a) { return nm_f64_ge(a, nm_ld_bessel_const(0x4039000000000000UL)); }   // 25
static inline bool nm_ld_bessel_tiny(nm_f64 a) { return nm_f64_lt(a, nm_ld_bessel_const(0x3E40000000000000UL)); }  // 2^-27
static inline nm_f64 nm_ld_j0_64(nm_f64 x) {
    nm_f64 a = nm_f64_abs(x);
    if (nm_f64_isnan(x)) return x;
    if (nm_f64_isinf(x)) return nm_f64_from_bits(0UL);
    if (nm_ld_bessel_tiny(a)) return nm_ld_bessel_const(0x3FF0000000000000UL);   // 1 - x^2/4 rounds to 1
    if (nm_ld_bessel_far(a)) return nm_ld_bessel_hankel(a, 0).j;
    return nm_ld_bessel_at_zero(0, a, nm_ld_bessel_miller(a, 0).j0);
}
static inline nm_f64 nm_ld_j1_64(nm_f64 x) {
    nm_f64 a = nm_f64_abs(x);
    if (nm_f64_isnan(x)) return x;
    if (nm_f64_isinf(x)) return nm_f64_copysign(nm_f64_from_bits(0UL), x);
    nm_f64 r;
    if (nm_ld_bessel_tiny(a)) r = nm_f64_ldexp(a, -1);   // x/2 (1 - x^2/8): the correction is below 2^-56
    else r = nm_ld_bessel_far(a) ? nm_ld_bessel_hankel(a, 1).j : nm_ld_bessel_at_zero(1, a, nm_ld_bessel_miller(a, 1).j1);
    return nm_f64_signbit(x) ? nm_f64_neg(r) : r;
}
// Y_0 and Y_1 of x, with their values at 0, below 0 and at +inf.
static inline nm_ld_bessel_pair nm_ld_y01_64(nm_f64 x) {
    nm_ld_bessel_pair r;
    nm_f64 zero = nm_f64_from_bits(0UL);
    if (nm_f64_isnan(x) || nm_f64_lt(x, zero)) {
        r.j = r.y = nm_f64_isnan(x) ? x : nm_f64_from_bits(0x7FF8000000000000UL);
        return r;
    }
    if (nm_f64_eq(x, zero)) { r.j = r.y = nm_f64_from_bits(0xFFF0000000000000UL); return r; }
    if (nm_f64_isinf(x)) { r.j = r.y = zero; return r; }
    nm_f64 two_over_pi = nm_ld_bessel_const(0x3FE45F306DC9C883UL);
    if (nm_ld_bessel_tiny(x)) {   // Y_0 = (2/pi)(ln(x/2) + gamma), Y_1 = -2/(pi x): next terms below 2^-50
        r.j = nm_f64_mul(two_over_pi, nm_f64_add(nm_f64_log(nm_f64_ldexp(x, -1)), nm_ld_bessel_const(0x3FE2788CFC6FB619UL)));
        r.y = nm_f64_neg(nm_f64_div(two_over_pi, x));
        return r;
    }
    if (nm_ld_bessel_far(x)) {
        r.j = nm_ld_bessel_hankel(x, 0).y;
        r.y = nm_ld_bessel_hankel(x, 1).y;
        return r;
    }
    nm_ld_miller m = nm_ld_bessel_miller(x, 0);
    r.j = nm_ld_bessel_at_zero(2, x, m.y0);
    r.y = nm_ld_bessel_at_zero(3, x, m.y1);
    return r;
}
static inline nm_f64 nm_ld_y0_64(nm_f64 x) { return nm_ld_y01_64(x).j; }
static inline nm_f64 nm_ld_y1_64(nm_f64 x) { return nm_ld_y01_64(x).y; }
// libdevice's __nv_jn/__nv_yn (numba.cuda's specification) return NaN for a negative order.
static inline nm_f64 nm_ld_jn_64(int n, nm_f64 x) {
    if (nm_f64_isnan(x)) return x;
    if (n < 0) return nm_f64_from_bits(0x7FF8000000000000UL);
    long order = long(n);
    bool negate = (order & 1L) != 0L && nm_f64_signbit(x);
    nm_f64 a = nm_f64_abs(x), r, zero = nm_f64_from_bits(0UL);
    if (order == 0L) return nm_ld_j0_64(x);
    if (order == 1L) r = nm_ld_j1_64(a);
    else if (nm_f64_isinf(a) || nm_f64_eq(a, zero)) r = zero;
    else {
        // |J_n(x)| <= (x/2)^n / n! <= (e x / (2n))^n (A&S 9.1.62): below e^-770 it underflows to 0.
        nm_f64 on = nm_f64_from_i64(order);
        nm_f64 lg = nm_f64_mul(on, nm_f64_sub(nm_f64_log(nm_f64_mul(a, nm_ld_bessel_const(0x3FF5BF0A8B145769UL))),
                                              nm_f64_log(on)));   // e/2
        if (nm_f64_lt(lg, nm_f64_from_i32(-770))) {
            r = zero;
        } else if (nm_ld_bessel_tiny(a)) {   // (x/2)^n / n!: the next term is below 2^-56 of it
            r = nm_ld_bessel_const(0x3FF0000000000000UL);
            nm_f64 h = nm_f64_ldexp(a, -1);
            for (long k = 1L; k <= order; ++k) r = nm_f64_div(nm_f64_mul(r, h), nm_f64_from_i64(k));
        } else if (nm_ld_bessel_far(a) && nm_f64_lt(nm_f64_from_i64(order), a)) {
            nm_f64 prev = nm_ld_bessel_hankel(a, 0).j, cur = nm_ld_bessel_hankel(a, 1).j;
            nm_f64 two_over_x = nm_f64_div(nm_ld_bessel_const(0x4000000000000000UL), a);
            for (long k = 1L; k < order; ++k) {
                nm_f64 next = nm_f64_sub(nm_f64_mul(nm_f64_mul(nm_f64_from_i64(k), two_over_x), cur), prev);
                prev = cur;
                cur = next;
            }
            r = cur;
        } else {
            r = nm_ld_bessel_miller(a, order).jn;
        }
    }
    return negate ? nm_f64_neg(r) : r;
}
static inline nm_f64 nm_ld_yn_64(int n, nm_f64 x) {
    if (n < 0) return nm_f64_isnan(x) ? x : nm_f64_from_bits(0x7FF8000000000000UL);
    long order = long(n);
    nm_ld_bessel_pair y = nm_ld_y01_64(x);
    nm_f64 r = y.y;
    if (order == 0L) r = y.j;
    else if (order > 1L && nm_f64_isfinite(y.y) && !nm_f64_isinf(x)) {
        nm_f64 prev = y.j, cur = y.y, two_over_x = nm_f64_div(nm_ld_bessel_const(0x4000000000000000UL), x);
        for (long k = 1L; k < order && !nm_f64_isinf(cur); ++k) {
            nm_f64 next = nm_f64_sub(nm_f64_mul(nm_f64_mul(nm_f64_from_i64(k), two_over_x), cur), prev);
            prev = cur;
            cur = next;
        }
        r = cur;
    }
    return r;
}
static inline float nm_ld_j0f(float x) { return nm_f64_to_f32(nm_ld_j0_64(nm_f64_from_f32(x))); }
static inline float nm_ld_j1f(float x) { return nm_f64_to_f32(nm_ld_j1_64(nm_f64_from_f32(x))); }
static inline float nm_ld_y0f(float x) { return nm_f64_to_f32(nm_ld_y0_64(nm_f64_from_f32(x))); }
static inline float nm_ld_y1f(float x) { return nm_f64_to_f32(nm_ld_y1_64(nm_f64_from_f32(x))); }
static inline float nm_ld_jnf(int n, float x) { return nm_f64_to_f32(nm_ld_jn_64(n, nm_f64_from_f32(x))); }
static inline float nm_ld_ynf(int n, float x) { return nm_f64_to_f32(nm_ld_yn_64(n, nm_f64_from_f32(x))); }
