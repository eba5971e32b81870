// numba-metal float64 math library: Python's `math` functions on the emulated float64 of float64.metal,
// in integer MSL (Apple GPUs have no double precision and float32 arithmetic is far too coarse here).
//
// Every function returns what C99 Annex F (and so Numba's @njit, which calls the C library) gives for
// special operands: signed zeros, infinities, NaN, exact cases such as pow(x, 0) = 1. NaN operands are
// returned quieted (payload and sign kept); an invalid operation gives float64.metal's default NaN.
// The entry points are listed, one row each, in float64_math_ops.py next to this file, with their MSL
// types, section, the Python function they implement and their measured maximum error in ulps; the
// tests in tests/float64/ (test_fm_*.py) check every row against mpmath.
//
// Sections start with `//@@ name requires: ...` as in float64.metal, whose sections (f64_*) they may
// require. Tables and coefficients sit between `//@generated NAME` and `//@end` lines: they are written
// by tests/float64/fm_constants.py (mpmath), the one owner of every constant here.
//
// Method. Results are computed in integer fixed point and in two extended formats, then rounded once
// with float64.metal's round-and-pack (which also handles subnormal and infinite results):
//   - nm_fm_x: a 64-bit significand with an int exponent and a sign (relative error 2^-63 per operation,
//     no overflow or underflow inside a computation);
//   - nm_fm_x2: a 128-bit significand, used where ~2^-75 is needed (the logarithm inside pow, log2,
//     log10);
//   - polynomials evaluated by Horner's scheme on signed Q62 coefficients with metal::mulhi, in a
//     variable scaled so that |u| < 1/2 (so every partial sum stays below 2).
// A final error of about 2^-61 relative before the one rounding gives results within 0.5 + 2^-8 ulp
// (correctly rounded except very close to a rounding boundary). Apple GPUs have 32-bit registers: a
// 64-bit multiply-high costs ~22 cycles (philipturner/metal-benchmarks), still far below one emulated
// float64 multiplication, so fixed-point Horner steps are the cheap operation here.
//
// Algorithms (cited per function): the table-driven exponential and logarithm of ARM's
// optimized-routines (Szabolcs Nagy, 2018: exp with 2^(j/N) table, log with a table of 1/c and log c
// and r = z c - 1 computed exactly) with N = 128; the structure and special-case handling of fdlibm
// (Sun Microsystems, 1993) and musl for expm1, log1p, the hyperbolic and inverse hyperbolic
// functions, pow and atan2; Cody & Waite (1980) and Payne & Hanek (1983) argument reduction for the
// trigonometric functions; J.-M. Muller, Elementary Functions, 3rd ed. (2016), ch. 11 (reduction),
// for the error analysis. No code was copied; constants are computed with mpmath.

//@@ fm_core requires: f64_base f64_recip f64_sqrt
//@generated nm_fm_scalars
#define NM_FM_LN2_Q63 0x58B90BFBE8E7BCD6UL
#define NM_FM_LN2_Q116_HI 0x000B17217F7D1CF7UL
#define NM_FM_LN2_Q116_LO 0x9ABC9E3B39803F2FUL
#define NM_FM_INV_LN2_HI 0xB8AA3B295C17F0BBUL
#define NM_FM_INV_LN2_LO 0xBE87FED0691D3E89UL
#define NM_FM_INV_LN2_E (0)
#define NM_FM_INV_LN10_HI 0xDE5BD8A937287195UL
#define NM_FM_INV_LN10_LO 0x355BAAAFAD33DC32UL
#define NM_FM_INV_LN10_E (-2)
#define NM_FM_HALF_LOG_2PI_Q116_HI 0x000EB3F8E4325F5AUL
#define NM_FM_HALF_LOG_2PI_Q116_LO 0x53494BC900144192UL
#define NM_FM_THIRD_Q64 0x5555555555555555UL
#define NM_FM_PIO2_M 0xC90FDAA22168C235UL
#define NM_FM_PIO2_E (0)
#define NM_FM_PI_M 0xC90FDAA22168C235UL
#define NM_FM_PI_E (1)
#define NM_FM_PIO4_M 0xC90FDAA22168C235UL
#define NM_FM_PIO4_E (-1)
#define NM_FM_LN2_M 0xB17217F7D1CF79ACUL
#define NM_FM_LN2_E (-1)
#define NM_FM_HALF_LOG_2PI_M 0xEB3F8E4325F5A535UL
#define NM_FM_HALF_LOG_2PI_E (-1)
#define NM_FM_LOG_PI_M 0x928682473D0DE85FUL
#define NM_FM_LOG_PI_E (0)
//@end

// An extended value (-1)^neg m 2^(e - 63): m has its leading one at bit 63, or is 0 for zero.
struct nm_fm_x {
    ulong m;
    int e;
    uint neg;
};

// A 128-bit extended value (-1)^neg (hi 2^64 + lo) 2^(e - 127): hi's bit 63 is set, or hi == lo == 0.
struct nm_fm_x2 {
    ulong hi;
    ulong lo;
    int e;
    uint neg;
};

static inline nm_f64_u128 nm_fm_u128(ulong hi, ulong lo) {
    nm_f64_u128 r;
    r.hi = hi;
    r.lo = lo;
    return r;
}

static inline nm_f64_u128 nm_fm_add128(nm_f64_u128 a, nm_f64_u128 b) {
    ulong lo = a.lo + b.lo;
    return nm_fm_u128(a.hi + b.hi + ulong(lo < a.lo), lo);
}

static inline nm_f64_u128 nm_fm_sub128(nm_f64_u128 a, nm_f64_u128 b) {
    return nm_fm_u128(a.hi - b.hi - ulong(a.lo < b.lo), a.lo - b.lo);
}

static inline nm_f64_u128 nm_fm_neg128(nm_f64_u128 a) {
    return nm_fm_sub128(nm_fm_u128(0UL, 0UL), a);
}

static inline bool nm_fm_is_neg128(nm_f64_u128 a) {
    return (a.hi >> 63) != 0UL;
}

// a >> s (logical) for any s >= 0.
static inline nm_f64_u128 nm_fm_shr128(nm_f64_u128 a, uint s) {
    if (s >= 128u) {
        return nm_fm_u128(0UL, 0UL);
    }
    if (s >= 64u) {
        return nm_fm_u128(0UL, a.hi >> (s - 64u));
    }
    if (s == 0u) {
        return a;
    }
    return nm_fm_u128(a.hi >> s, (a.lo >> s) | (a.hi << (64u - s)));
}

// a << s for any s >= 0 (bits beyond 128 are lost).
static inline nm_f64_u128 nm_fm_shl128(nm_f64_u128 a, uint s) {
    if (s >= 128u) {
        return nm_fm_u128(0UL, 0UL);
    }
    if (s >= 64u) {
        return nm_fm_u128(a.lo << (s - 64u), 0UL);
    }
    if (s == 0u) {
        return a;
    }
    return nm_fm_u128((a.hi << s) | (a.lo >> (64u - s)), a.lo << s);
}

// a 2^s truncated to an unsigned 128-bit integer, for any s.
static inline nm_f64_u128 nm_fm_scale128(ulong a, int s) {
    if (s >= 0) {
        return nm_fm_shl128(nm_fm_u128(0UL, a), uint(s));
    }
    return nm_fm_u128(0UL, s > -64 ? a >> uint(-s) : 0UL);
}

static inline uint nm_fm_clz128(nm_f64_u128 a) {
    return a.hi != 0UL ? uint(metal::clz(a.hi)) : 64u + uint(metal::clz(a.lo));
}

static inline nm_fm_x nm_fm_x_make(uint neg, int e, ulong m) {
    uint s = m != 0UL ? uint(metal::clz(m)) : 0u;
    nm_fm_x r;
    r.m = m << s;
    r.e = e - int(s);
    r.neg = neg;
    return r;
}

static inline nm_fm_x nm_fm_x_const(ulong m, int e) {
    nm_fm_x r;
    r.m = m;
    r.e = e;
    r.neg = 0u;
    return r;
}

static inline nm_fm_x nm_fm_x_neg(nm_fm_x a) {
    a.neg ^= 1u;
    return a;
}

// A finite float64 (zeros and subnormals included) as an extended value, exactly.
static inline nm_fm_x nm_fm_x_from_bits(ulong u) {
    int exp = int(u >> 52) & 0x7FF;
    ulong frac = u & NM_F64_FRAC;
    return nm_fm_x_make(uint(u >> 63), exp == 0 ? -1011 : exp - 1012, exp == 0 ? frac : (frac | NM_F64_HIDDEN));
}

// The value v (-1)^neg 2^-scale of an unsigned 128-bit v, truncated to an extended value.
static inline nm_fm_x nm_fm_x_from128(uint neg, nm_f64_u128 v, int scale) {
    if ((v.hi | v.lo) == 0UL) {
        return nm_fm_x_make(neg, 0, 0UL);
    }
    uint z = nm_fm_clz128(v);
    nm_f64_u128 n = nm_fm_shl128(v, z);
    nm_fm_x r;
    r.m = n.hi;
    r.e = 127 - int(z) - scale;
    r.neg = neg;
    return r;
}

// Rounds to the nearest float64 once; results below the subnormal range or above the largest finite
// value round to zero or infinity.
static inline nm_f64 nm_fm_x_round(nm_fm_x a) {
    ulong sign = ulong(a.neg) << 63;
    if (a.m == 0UL) {
        return nm_f64_from_bits(sign);
    }
    int exp = metal::clamp(a.e, -4000, 4000) + 1022;
    return nm_f64_from_bits(nm_f64_i_round_pack(sign, exp, (a.m >> 1) | (a.m & 1UL)));
}

static inline nm_fm_x nm_fm_x_mul(nm_fm_x a, nm_fm_x b) {
    nm_f64_u128 p = nm_f64_i_mul64(a.m, b.m);
    nm_fm_x r;
    r.neg = a.neg ^ b.neg;
    if ((p.hi >> 63) != 0UL) {
        r.m = p.hi;
        r.e = a.e + b.e + 1;
    } else {
        r.m = (p.hi << 1) | (p.lo >> 63);
        r.e = a.e + b.e;
    }
    return r;
}

// a + b. A difference is exact before its truncation to 64 bits (it is formed in 128 bits), so
// cancellation loses nothing that the operands had.
static inline nm_fm_x nm_fm_x_add(nm_fm_x a, nm_fm_x b) {
    if (b.m == 0UL) {
        return a;
    }
    if (a.m == 0UL) {
        return b;
    }
    if (a.e < b.e || (a.e == b.e && a.m < b.m)) {
        nm_fm_x t = a;
        a = b;
        b = t;
    }
    uint d = uint(a.e - b.e);
    if (d >= 128u) {
        return a;
    }
    nm_f64_u128 bs = nm_fm_shr128(nm_fm_u128(b.m, 0UL), d);
    if (a.neg == b.neg) {
        ulong s = a.m + bs.hi;
        if (s < a.m) {
            return nm_fm_x_make(a.neg, a.e + 1, (s >> 1) | NM_F64_SIGN);
        }
        nm_fm_x r;
        r.m = s;
        r.e = a.e;
        r.neg = a.neg;
        return r;
    }
    return nm_fm_x_from128(a.neg, nm_fm_sub128(nm_fm_u128(a.m, 0UL), bs), 127 - a.e);
}

static inline nm_fm_x nm_fm_x_sub(nm_fm_x a, nm_fm_x b) {
    return nm_fm_x_add(a, nm_fm_x_neg(b));
}

// 2^127 / b for b in [2^63, 2^64), b > 2^63, within a few units: float64.metal's 2^116 / b53 for the top
// 53 bits of b (relative error below 2^-52), then one Newton step y + y (2^127 - b y) / 2^127.
static inline ulong nm_fm_recip64(ulong b) {
    ulong y = nm_f64_i_recip(b >> 11);
    nm_f64_u128 p = nm_f64_i_mul64(b, y);
    // d = 2^127 - b y, |d| < 2^76; its top bits as a signed value d / 2^13
    nm_f64_u128 d = nm_fm_sub128(nm_fm_u128(NM_F64_SIGN, 0UL), p);
    long ds = long((d.hi << 51) | (d.lo >> 13));
    ulong corr = metal::mulhi(y, ulong(ds < 0L ? -ds : ds)) >> 50;
    return ds < 0L ? y - corr : y + corr;
}

static inline nm_fm_x nm_fm_x_div(nm_fm_x a, nm_fm_x b) {
    nm_fm_x r;
    r.neg = a.neg ^ b.neg;
    if (b.m == NM_F64_SIGN) {
        r.m = a.m;
        r.e = a.e - b.e;
        return r;
    }
    nm_f64_u128 q = nm_f64_i_mul64(a.m, nm_fm_recip64(b.m));
    // a.m y / 2^64 ~ a.m 2^63 / b.m in (2^62, 2^64)
    if ((q.hi >> 63) != 0UL) {
        r.m = q.hi;
        r.e = a.e - b.e;
    } else {
        r.m = (q.hi << 1) | (q.lo >> 63);
        r.e = a.e - b.e - 1;
    }
    return r;
}

// floor(sqrt(A)) for A = (hi, lo) in [2^126, 2^128), and whether the remainder A - root^2 is nonzero.
// float64.metal's 32-bit reciprocal square root seed r ~ 2^32 / sqrt(m) and root s ~ sqrt(m) 2^31
// (m = A / 2^96 in [1, 4), relative errors below 2^-28), two Newton steps on the exact residual
// (2^-56, then below 2^-60 plus truncation), and a final correction by the exact remainder.
struct nm_fm_isqrt {
    ulong root;
    bool inexact;
};

static inline nm_fm_isqrt nm_fm_isqrt128(nm_f64_u128 a) {
    nm_f64_i_rsqrt seed = nm_f64_i_rsqrt_seed(a.hi >> 32);
    ulong r = ulong(seed.r);
    ulong s = ulong(seed.s) << 32;
    // s has a relative error below 2^-28, so |A - s^2| < 2^102; after one step below 2^75.
    nm_f64_u128 res = nm_fm_sub128(a, nm_f64_i_mul64(s, s));
    long rs = long((res.hi << 24) | (res.lo >> 40));
    ulong c = metal::mulhi(ulong(rs < 0L ? -rs : rs), r) << 8;             // |res| r 2^-96
    s = rs < 0L ? s - c : s + c;
    res = nm_fm_sub128(a, nm_f64_i_mul64(s, s));
    rs = long((res.hi << 52) | (res.lo >> 12));
    c = metal::mulhi(ulong(rs < 0L ? -rs : rs), r) >> 20;
    s = rs < 0L ? s - c : s + c;
    nm_f64_u128 rem = nm_fm_sub128(a, nm_f64_i_mul64(s, s));
    for (int i = 0; i < 3 && nm_fm_is_neg128(rem); ++i) {
        // (s - 1)^2 = s^2 - 2 s + 1
        rem = nm_fm_add128(rem, nm_fm_sub128(nm_fm_u128(s >> 63, s << 1), nm_fm_u128(0UL, 1UL)));
        s -= 1UL;
    }
    for (int i = 0; i < 3; ++i) {
        nm_f64_u128 twice = nm_fm_u128(s >> 63, s << 1);
        if (nm_fm_is_neg128(nm_fm_sub128(twice, rem))) {
            // rem > 2 s: (s + 1)^2 = s^2 + 2 s + 1 is still below A
            rem = nm_fm_sub128(rem, nm_fm_add128(twice, nm_fm_u128(0UL, 1UL)));
            s += 1UL;
        }
    }
    nm_fm_isqrt out;
    out.root = s;
    out.inexact = (rem.hi | rem.lo) != 0UL;
    return out;
}

static inline nm_fm_x nm_fm_x_sqrt(nm_fm_x a) {
    if (a.m == 0UL) {
        return a;
    }
    // e even: sqrt(m 2^63) 2^(e/2 - 63); e odd: sqrt(m 2^64) 2^((e - 1)/2 - 63)
    uint odd = uint(a.e) & 1u;
    nm_f64_u128 v = odd != 0u ? nm_fm_u128(a.m, 0UL) : nm_fm_u128(a.m >> 1, a.m << 63);
    nm_fm_x r;
    r.m = nm_fm_isqrt128(v).root;
    r.e = a.e >> 1;
    r.neg = 0u;
    return r;
}

// |a| 2^q truncated toward zero, as a signed 64-bit integer with the sign of a (|a| 2^q < 2^63).
static inline long nm_fm_x_to_fixed(nm_fm_x a, int q) {
    int d = 63 - a.e - q;
    long v = d < 64 ? long(a.m >> uint(d)) : 0L;
    return a.neg != 0u ? -v : v;
}

// A Q62 value (|v| < 2) as an extended value.
static inline nm_fm_x nm_fm_x_from_q62(long v) {
    return nm_fm_x_make(uint(v < 0L), 1, ulong(v < 0L ? -v : v));
}

// sum c[k] u^k for Q62 coefficients (stored as their two's-complement bits) and u in Q64 (|u| < 1/2).
static inline long nm_fm_horner(long u, constant ulong* c, int n) {
    long p = long(c[n - 1]);
    for (int k = n - 2; k >= 0; --k) {
        p = long(c[k]) + metal::mulhi(p, u);
    }
    return p;
}

// |x| 2^q of a finite float64 as an unsigned 128-bit integer, truncated.
static inline nm_f64_u128 nm_fm_fixed128(ulong u, int q) {
    int exp = int(u >> 52) & 0x7FF;
    ulong sig = (u & NM_F64_FRAC) | (exp != 0 ? NM_F64_HIDDEN : 0UL);
    return nm_fm_scale128(sig, (exp != 0 ? exp : 1) - 1075 + q);
}

static inline nm_fm_x2 nm_fm_x2_from128(uint neg, nm_f64_u128 v, int scale) {
    nm_fm_x2 r;
    r.neg = neg;
    if ((v.hi | v.lo) == 0UL) {
        r.hi = 0UL;
        r.lo = 0UL;
        r.e = 0;
        return r;
    }
    uint z = nm_fm_clz128(v);
    nm_f64_u128 n = nm_fm_shl128(v, z);
    r.hi = n.hi;
    r.lo = n.lo;
    r.e = 127 - int(z) - scale;
    return r;
}

static inline nm_f64 nm_fm_x2_round(nm_fm_x2 a) {
    ulong sign = ulong(a.neg) << 63;
    if (a.hi == 0UL) {
        return nm_f64_from_bits(sign);
    }
    int exp = metal::clamp(a.e, -4000, 4000) + 1022;
    ulong sticky = ulong(((a.hi & 1UL) | a.lo) != 0UL);
    return nm_f64_from_bits(nm_f64_i_round_pack(sign, exp, (a.hi >> 1) | sticky));
}

// a truncated to 64 bits.
static inline nm_fm_x nm_fm_x2_to_x(nm_fm_x2 a) {
    nm_fm_x r;
    r.m = a.hi;
    r.e = a.e;
    r.neg = a.neg;
    return r;
}

// a times a positive 128-bit constant (hi, lo, e), truncated.
static inline nm_fm_x2 nm_fm_x2_mul_const(nm_fm_x2 a, ulong chi, ulong clo, int ce) {
    nm_f64_u128 p = nm_f64_i_mul64(a.hi, chi);
    p = nm_fm_add128(p, nm_fm_u128(0UL, metal::mulhi(a.hi, clo)));
    p = nm_fm_add128(p, nm_fm_u128(0UL, metal::mulhi(a.lo, chi)));
    if (a.hi == 0UL) {
        return a;
    }
    return nm_fm_x2_from128(a.neg, p, 126 - a.e - ce);
}

static inline nm_f64 nm_fm_quiet(ulong u) {
    return nm_f64_from_bits(u | NM_F64_QUIET);
}

//@@ fm_exp requires: fm_core
// e^x as 2^(k/128) e^r (ARM optimized-routines' exp, N = 128): t = x 128/ln2 is formed as a 128-bit
// product of x (exact in 116 fractional bits) and 128/ln2 (128 bits), k = round(t), r = (t - k) ln2/128
// with |r| <= ln2/256 < 2^-8.5, e^r - 1 = r (1 + r/2 + ... + r^5/6!) (truncation below r^7/7! < 2^-72),
// 2^(k/128) = 2^(k >> 7) tab[k & 127] (Q62). Relative error before rounding below 2^-62.
//@generated nm_fm_exp_tab
constant ulong nm_fm_exp_tab[128] = {
    0x4000000000000000UL, 0x4058F6A7ECCCD5B6UL, 0x40B268F9DE0183BAUL, 0x410C57A1B9FE12F6UL,
    0x4166C34C5615D0ECUL, 0x41C1ACA777DB771BUL, 0x421D1461D66F2023UL, 0x4278FB2B1BCE0D15UL,
    0x42D561B3E6243D8AUL, 0x433248ADC91FDD02UL, 0x438FB0CB4F468808UL, 0x43ED9ABFFB4C6BC9UL,
    0x444C0740496D4294UL, 0x44AAF701B0C72FEEUL, 0x450A6ABAA4B77ECDUL, 0x456A632296394492UL,
    0x45CAE0F1F545EB73UL, 0x462BE4E23237A6EFUL, 0x468D6FADBF2DD4F3UL, 0x46EF821011734E6BUL,
    0x47521CC5A2E6A9E0UL, 0x47B5408BF36472E2UL, 0x4818EE218A3358EEUL, 0x487D2645F7725895UL,
    0x48E1E9B9D588E19BUL, 0x4947393ECA98FCD6UL, 0x49AD159789F37496UL, 0x4A137F87D58E025BUL,
    0x4A7A77D47F7B84B1UL, 0x4AE1FF436B663FF7UL, 0x4B4A169B900C2D00UL, 0x4BB2BEA4F8BD5847UL,
    0x4C1BF828C6DC54B8UL, 0x4C85C3F13360C4D5UL, 0x4CF022C9905BFD32UL, 0x4D5B157E4A7FC325UL,
    0x4DC69CDCEAA72A9CUL, 0x4E32B9B417619617UL, 0x4E9F6CD3967FDBA8UL, 0x4F0CB70C4EA39210UL,
    0x4F7A993048D088D7UL, 0x4FE91412B2006E83UL, 0x50582887DCB8A7E1UL, 0x50C7D76542A25B72UL,
    0x513821818624B40CUL, 0x51A907B474015DC9UL, 0x521A8AD704F3404FUL, 0x528CABC35F4F799DUL,
    0x52FF6B54D8A89C75UL, 0x5372CA67F774358FUL, 0x53E6C9DA74B29AB5UL, 0x545B6A8B3D990704UL,
    0x54D0AD5A753E077CUL, 0x5546932976483B15UL, 0x55BD1CDAD49F699CUL, 0x56344B525F1FF495UL,
    0x56AC1F752150A563UL, 0x57249A29651ADC07UL, 0x579DBC56B48521BAUL, 0x581786E5DB7022C2UL,
    0x5891FAC0E95612C8UL, 0x590D18D3330C7F1EUL, 0x5988E20954889245UL, 0x5A05575132A5CC20UL,
    0x5A827999FCEF3242UL, 0x5B0049D42F6AFBB6UL, 0x5B7EC8F19468BBC9UL, 0x5BFDF7E546520F3EUL,
    0x5C7DD7A3B17DCF75UL, 0x5CFE69229605CEF5UL, 0x5D7FAD59099F22FEUL, 0x5E01A53F7974FD86UL,
    0x5E8451CFAC061B5FUL, 0x5F07B404C304C9F1UL, 0x5F8BCCDB3D398841UL, 0x60109D50F86846D8UL,
    0x6096266533384A2BUL, 0x611C69188F1EB339UL, 0x61A3666D124BB204UL, 0x622B1F66299A6599UL,
    0x62B39508AA836D6FUL, 0x633CC85AD5122FBDUL, 0x63C6BA6455DCD8AEUL, 0x64516C2E47FF1623UL,
    0x64DCDEC3371793D1UL, 0x6569132F21483BA7UL, 0x65F60A7F79393E2EUL, 0x6683C5C3281EE6E9UL,
    0x6712460A8FC24072UL, 0x67A18C678C8C8C61UL, 0x683199ED779592CAUL, 0x68C26FB128B4CD63UL,
    0x69540EC8F895722DUL, 0x69E6784CC2CD61BDUL, 0x6A79AD55E7F6FD10UL, 0x6B0DAEFF4FCDE703UL,
    0x6BA27E656B4EB57AUL, 0x6C381CA636D99642UL, 0x6CCE8AE13C57EBDBUL, 0x6D65CA379564E639UL,
    0x6DFDDBCBED791BABUL, 0x6E96C0C284192610UL, 0x6F307A412F074892UL, 0x6FCB096F5C782210UL,
    0x70666F76154A7089UL, 0x7102AD7FFF41E9B4UL, 0x719FC4B95F452D29UL, 0x723DB6501B9ED447UL,
    0x72DC8373BE41A454UL, 0x737C2D55770FE711UL, 0x741CB5281E25EE34UL, 0x74BE1C203627C62BUL,
    0x75606373EE921C97UL, 0x76038C5B260E5EEEUL, 0x76A7980F6CCA15C2UL, 0x774C87CC06D1812EUL,
    0x77F25CCDEE6D7AE6UL, 0x78991853D684A285UL, 0x7940BB9E2CFFD89DUL, 0x79E947EF1D320D2DUL,
    0x7A92BE8A92436616UL, 0x7B3D20B6399FC237UL, 0x7BE86FB985689DDCUL, 0x7C94ACDDAEEA5D3AUL,
    0x7D41D96DB915019DUL, 0x7DEFF6B672F84E24UL, 0x7E9F06067A4360BAUL, 0x7F4F08AE3DC7C426UL,
};
//@end
//@generated nm_fm_exp_poly
constant ulong nm_fm_exp_poly[6] = {
    0x4000000000000000UL, 0x0080000000000000UL, 0x0000AAAAAAAAAAABUL, 0x000000AAAAAAAAABUL,
    0x0000000088888889UL, 0x00000000005B05B0UL,
};
//@end
//@generated nm_fm_inv_ln2_n
constant ulong nm_fm_inv_ln2_n[2] = {
    0xB8AA3B295C17F0BBUL, 0xBE87FED0691D3E89UL,
};
//@end

// x (128/ln2) 2^64 >> shift for an unsigned x in Q116 (the top 128 bits of a 256-bit product; the
// dropped partial products are below 3 units of the result before the shift).
static inline nm_f64_u128 nm_fm_times_inv_ln2(nm_f64_u128 x, uint shift) {
    nm_f64_u128 p = nm_f64_i_mul64(x.hi, nm_fm_inv_ln2_n[0]);
    p = nm_fm_add128(p, nm_fm_u128(0UL, metal::mulhi(x.hi, nm_fm_inv_ln2_n[1])));
    p = nm_fm_add128(p, nm_fm_u128(0UL, metal::mulhi(x.lo, nm_fm_inv_ln2_n[0])));
    return nm_fm_shr128(p, shift);
}

// 2^(t/128) for t 2^64 given as a signed 128-bit integer (|t| < 2^19).
static inline nm_fm_x nm_fm_exp_t(nm_f64_u128 t) {
    long k = long(t.hi) + long(t.lo >> 63);
    long r = metal::mulhi(long(t.lo), long(NM_FM_LN2_Q63));              // r 2^70
    long p = metal::mulhi(r, nm_fm_horner(r, nm_fm_exp_poly, 6));       // (e^r - 1) 2^68
    long s = long(nm_fm_exp_tab[uint(k) & 127u]);                        // 2^((k & 127)/128) 2^62
    s += metal::mulhi(s, p) >> 4;
    return nm_fm_x_make(0u, int(k >> 7) + 1, ulong(s));
}

// e^x for x a signed 128-bit integer in Q116 (|x| < 2^11).
static inline nm_fm_x nm_fm_exp_q116(nm_f64_u128 x) {
    bool neg = nm_fm_is_neg128(x);
    nm_f64_u128 t = nm_fm_times_inv_ln2(neg ? nm_fm_neg128(x) : x, 44u);
    return nm_fm_exp_t(neg ? nm_fm_neg128(t) : t);
}

// A finite float64 with |x| < 2^11 in Q116, signed.
static inline nm_f64_u128 nm_fm_q116(ulong u) {
    nm_f64_u128 v = nm_fm_fixed128(u & NM_F64_ABS, 116);
    return (u >> 63) != 0UL ? nm_fm_neg128(v) : v;
}

// e^x, unrounded, for a finite float64 x with |x| < 2^11.
static inline nm_fm_x nm_fm_exp_x(ulong u) {
    return nm_fm_exp_q116(nm_fm_q116(u));
}

static inline nm_f64 nm_f64_exp(nm_f64 x) {
    ulong u = x.bits;
    ulong a = u & NM_F64_ABS;
    if (a >= 0x4087500000000000UL) {                          // |x| >= 746, inf, NaN
        if (a > NM_F64_EXP) {
            return nm_fm_quiet(u);
        }
        return nm_f64_from_bits((u >> 63) != 0UL ? 0UL : NM_F64_EXP);
    }
    return nm_fm_x_round(nm_fm_exp_x(u));
}

// 2^x: t = 128 x is exact, so only the table and polynomial err.
static inline nm_f64 nm_f64_exp2(nm_f64 x) {
    ulong u = x.bits;
    ulong a = u & NM_F64_ABS;
    if (a >= 0x4091300000000000UL) {                          // |x| >= 1100, inf, NaN
        if (a > NM_F64_EXP) {
            return nm_fm_quiet(u);
        }
        return nm_f64_from_bits((u >> 63) != 0UL ? 0UL : NM_F64_EXP);
    }
    nm_f64_u128 t = nm_fm_fixed128(a, 71);
    return nm_fm_x_round(nm_fm_exp_t((u >> 63) != 0UL ? nm_fm_neg128(t) : t));
}

// expm1 after fdlibm: k = round(x/ln2), r = x - k ln2 (|r| <= ln2/2), expm1(r) = r (1 + r/2 + ... +
// r^14/15!) (truncation below 2^-67 relative), then 2^k (1 + expm1(r)) - 1 formed exactly in 128 bits.
// For k = 0, r = x exactly, so tiny results keep their relative accuracy.
//@generated nm_fm_expm1_poly
constant ulong nm_fm_expm1_poly[15] = {
    0x4000000000000000UL, 0x2000000000000000UL, 0x0AAAAAAAAAAAAAABUL, 0x02AAAAAAAAAAAAABUL,
    0x0088888888888889UL, 0x0016C16C16C16C17UL, 0x0003403403403403UL, 0x0000680680680680UL,
    0x00000B8EF1D2AB64UL, 0x00000127E4FB778AUL, 0x0000001AE64567F5UL, 0x000000023DDB1DFFUL,
    0x000000002C248C27UL, 0x0000000003272E95UL, 0x000000000035CFE8UL,
};
//@end

// expm1 of a finite float64 with -45 < x < 710.
static inline nm_fm_x nm_fm_expm1_core(ulong u) {
    nm_f64_u128 t = nm_fm_times_inv_ln2(nm_fm_fixed128(u & NM_F64_ABS, 116), 51u);   // x/ln2 2^64
    if ((u >> 63) != 0UL) {
        t = nm_fm_neg128(t);
    }
    long k = long(t.hi) + long(t.lo >> 63);
    if (k == 0L) {
        nm_fm_x r = nm_fm_x_from_bits(u);
        long q = nm_fm_horner(nm_fm_x_to_fixed(r, 64), nm_fm_expm1_poly, 15);
        return nm_fm_x_mul(r, nm_fm_x_from_q62(q));
    }
    long r = metal::mulhi(long(t.lo), long(NM_FM_LN2_Q63)) << 1;             // r 2^64
    long e = metal::mulhi(r, nm_fm_horner(r, nm_fm_expm1_poly, 15));        // expm1(r) 2^62
    ulong big = ulong(e + (1L << 62));                                         // e^r 2^62
    if (k > 60L) {
        return nm_fm_x_make(0u, int(k) + 1, big);
    }
    if (k > 0L) {
        return nm_fm_x_from128(0u, nm_fm_sub128(nm_fm_shl128(nm_fm_u128(0UL, big), uint(k)),
                                                nm_fm_u128(0UL, 1UL << 62)), 62);
    }
    return nm_fm_x_from128(1u, nm_fm_sub128(nm_fm_u128(1UL << 62, 0UL),
                                            nm_fm_shl128(nm_fm_u128(0UL, big), uint(64L + k))), 126);
}

static inline nm_f64 nm_f64_expm1(nm_f64 x) {
    ulong u = x.bits;
    ulong a = u & NM_F64_ABS;
    if (a > NM_F64_EXP) {
        return nm_fm_quiet(u);
    }
    if ((u >> 63) != 0UL) {
        if (a >= 0x4044000000000000UL) {                      // x <= -40: -1 + e^x rounds to -1
            return nm_f64_from_bits(0xBFF0000000000000UL);
        }
    } else if (a >= 0x4086300000000000UL) {                   // x >= 710: overflow
        return nm_f64_from_bits(NM_F64_EXP);
    }
    if (a < 0x3C90000000000000UL) {                           // |x| < 2^-54: x (zeros and subnormals too)
        return x;
    }
    return nm_fm_x_round(nm_fm_expm1_core(u));
}

// cosh and sinh from e^|x| and e^-|x| (both through nm_fm_exp_t; e^-|x| <= e^-1 |x| e^|x| costs at most
// 0.3 bits of cancellation in sinh for |x| >= 1); sinh(x) for |x| < 1 as x (1 + x^2/3! + ... + x^20/21!)
// (truncation below 1/23! < 2^-74).
//@generated nm_fm_sinh_poly
constant ulong nm_fm_sinh_poly[11] = {
    0x4000000000000000UL, 0x1555555555555555UL, 0x0222222222222222UL, 0x001A01A01A01A01AUL,
    0x0000B8EF1D2AB63AUL, 0x0000035CC8ACFEA9UL, 0x0000000B092309D4UL, 0x000000001AE7F3E7UL,
    0x000000000032A58FUL, 0x0000000000004BD2UL, 0x000000000000005CUL,
};
//@end

// cosh |x| and sinh x, unrounded, for a finite x with |x| < 2^11.
static inline nm_fm_x nm_fm_cosh_x(ulong u) {
    nm_f64_u128 t = nm_fm_times_inv_ln2(nm_fm_fixed128(u & NM_F64_ABS, 116), 44u);
    nm_fm_x s = nm_fm_x_add(nm_fm_exp_t(t), nm_fm_exp_t(nm_fm_neg128(t)));
    s.e -= 1;
    return s;
}

static inline nm_fm_x nm_fm_sinh_x(ulong u) {
    ulong a = u & NM_F64_ABS;
    nm_fm_x s;
    if (a < NM_F64_ONE) {
        s = nm_fm_x_from_bits(a);
        int sh = -2 * s.e - 1;                                 // x^2/2 2^64 = mulhi(m, m) 2^(2e + 1)
        long w = s.m != 0UL && sh < 64 ? long(metal::mulhi(s.m, s.m) >> uint(sh)) : 0L;
        s = nm_fm_x_mul(s, nm_fm_x_from_q62(nm_fm_horner(w, nm_fm_sinh_poly, 11)));
    } else {
        nm_f64_u128 t = nm_fm_times_inv_ln2(nm_fm_fixed128(a, 116), 44u);
        s = nm_fm_x_sub(nm_fm_exp_t(t), nm_fm_exp_t(nm_fm_neg128(t)));
        s.e -= 1;
    }
    s.neg = uint(u >> 63);
    return s;
}

static inline nm_f64 nm_f64_cosh(nm_f64 x) {
    ulong u = x.bits;
    ulong a = u & NM_F64_ABS;
    if (a >= 0x4086380000000000UL) {                          // |x| >= 711, inf, NaN
        return a > NM_F64_EXP ? nm_fm_quiet(u) : nm_f64_from_bits(NM_F64_EXP);
    }
    return nm_fm_x_round(nm_fm_cosh_x(u));
}

static inline nm_f64 nm_f64_sinh(nm_f64 x) {
    ulong u = x.bits;
    ulong a = u & NM_F64_ABS;
    if (a >= 0x4086380000000000UL) {                          // |x| >= 711, inf, NaN
        return a > NM_F64_EXP ? nm_fm_quiet(u) : nm_f64_from_bits((u & NM_F64_SIGN) | NM_F64_EXP);
    }
    if (a == 0UL) {
        return x;
    }
    return nm_fm_x_round(nm_fm_sinh_x(u));
}

// tanh(x) = E / (E + 2) with E = expm1(2|x|) (fdlibm's formula; E keeps relative accuracy for small x);
// |x| >= 22 rounds to +-1.
// tanh x, unrounded, for a finite nonzero x with |x| < 22.
static inline nm_fm_x nm_fm_tanh_x(ulong u) {
    ulong a = u & NM_F64_ABS;
    ulong twice = (a >> 52) == 0UL ? a << 1 : a + NM_F64_HIDDEN;
    nm_fm_x e = nm_fm_expm1_core(twice);
    nm_fm_x r = nm_fm_x_div(e, nm_fm_x_add(e, nm_fm_x_const(NM_F64_SIGN, 1)));
    r.neg = uint(u >> 63);
    return r;
}

static inline nm_f64 nm_f64_tanh(nm_f64 x) {
    ulong u = x.bits;
    ulong a = u & NM_F64_ABS;
    if (a > NM_F64_EXP) {
        return nm_fm_quiet(u);
    }
    if (a >= 0x4036000000000000UL) {
        return nm_f64_from_bits((u & NM_F64_SIGN) | NM_F64_ONE);
    }
    if (a == 0UL) {
        return x;
    }
    return nm_fm_x_round(nm_fm_tanh_x(u));
}

//@@ fm_log requires: fm_core
// log after ARM optimized-routines' log (N = 128 subintervals): x = 2^k z with z in [0.705, 1.414), c a
// 11-bit approximation of 1/z for z's subinterval, r = z c/2^10 - 1 computed exactly (|r| < 2^-7.87),
// log x = k ln2 - log(c/2^10) + log1p(r), log1p(r) = r - r^2/2 + r^3 P(r) with P(r) = 1/3 - r/4 + ... +
// r^8/11 (truncation below 2^-70 |r|^3 ... well below the budget). The sum is formed in 128-bit fixed
// point with 116 fractional bits (ln2 and the table to 2^-116, r exact, r^2 exact, r^3 P to 2^-84), so
// log x has a relative error below 2^-71 wherever |log x| >= 2^-9. Around 1 (z in [1 - 2^-9, 1 + 2^-8),
// where c = 1) the same series is formed in a floating 128-bit frame scaled to r, so the relative error
// stays below 2^-75 however close x is to 1. That precision is what pow needs; log, log2 and log10 round
// the 128-bit result once.
//@generated nm_fm_log_c
constant ushort nm_fm_log_c[128] = {
    0x0400, 0x03F8, 0x03F0, 0x03E9, 0x03E1, 0x03DA, 0x03D2, 0x03CB, 0x03C4, 0x03BD, 0x03B6, 0x03AF, 0x03A8, 0x03A2, 0x039B, 0x0395,
    0x038E, 0x0388, 0x0382, 0x037C, 0x0376, 0x0370, 0x036A, 0x0364, 0x035E, 0x0359, 0x0353, 0x034E, 0x0348, 0x0343, 0x033E, 0x0338,
    0x0333, 0x032E, 0x0329, 0x0324, 0x031F, 0x031A, 0x0316, 0x0311, 0x030C, 0x0308, 0x0303, 0x02FF, 0x02FA, 0x02F6, 0x02F1, 0x02ED,
    0x02E9, 0x02E5, 0x02E0, 0x02DC, 0x02D8, 0x05A8, 0x05A0, 0x0598, 0x0591, 0x0589, 0x0581, 0x057A, 0x0572, 0x056B, 0x0564, 0x055C,
    0x0555, 0x054E, 0x0547, 0x0540, 0x0539, 0x0533, 0x052C, 0x0525, 0x051F, 0x0518, 0x0512, 0x050B, 0x0505, 0x04FF, 0x04F9, 0x04F2,
    0x04EC, 0x04E6, 0x04E0, 0x04DA, 0x04D5, 0x04CF, 0x04C9, 0x04C3, 0x04BE, 0x04B8, 0x04B2, 0x04AD, 0x04A8, 0x04A2, 0x049D, 0x0498,
    0x0492, 0x048D, 0x0488, 0x0483, 0x047E, 0x0479, 0x0474, 0x046F, 0x046A, 0x0465, 0x0460, 0x045C, 0x0457, 0x0452, 0x044D, 0x0449,
    0x0444, 0x0440, 0x043B, 0x0437, 0x0432, 0x042E, 0x042A, 0x0425, 0x0421, 0x041D, 0x0419, 0x0414, 0x0410, 0x040C, 0x0408, 0x0404,
};
//@end
//@generated nm_fm_log_l
constant ulong nm_fm_log_l[256] = {
    0x0000000000000000UL, 0x0000000000000000UL, 0x000020202AEB11BCUL, 0xE251998B505F3B40UL,
    0x0000408159624D61UL, 0x1D27C8E8416E71EFUL, 0x00005D0C874F401BUL, 0x4A690FE9477840B9UL,
    0x00007DEA6C59E0A1UL, 0x56C938DF3EB88A9FUL, 0x00009AE45FD50983UL, 0x57D5EF9EB35578B9UL,
    0x0000BC42CAD1ABBDUL, 0xD3CBDF1316CF2464UL, 0x0000D9AEECDAC5D5UL, 0x674D6CF558E43106UL,
    0x0000F7518E0035C3UL, 0xDD83606D89093279UL, 0x0001152B799BB3CCUL, 0x89ADF1F9EFADE027UL,
    0x0001333D7F8183F4UL, 0xB6A4ABF23BDC2C4FUL, 0x0001518874226130UL, 0xA1D96258B3D8A8F8UL,
    0x0001700D30AEAC0EUL, 0x0F46D4CEF69917D8UL, 0x00018A6477A91DC2UL, 0x8C0AF9BD6DF6F7B8UL,
    0x0001A956D3ECADE6UL, 0x3794C02C4AF5576DUL, 0x0001C40D6425A5CBUL, 0x1121D1930DC8ACD0UL,
    0x0001E3707EE30487UL, 0xB42733B355E76656UL, 0x0001FE89139DBD56UL, 0x594D82F7A81B1B25UL,
    0x000219CFD9B99851UL, 0x94B6AFFD511B534BUL, 0x000235456FC47EE5UL, 0x3C7221C4C9A21033UL,
    0x000250EA77823574UL, 0x94E359302E667772UL, 0x00026CBF9602B202UL, 0xC5F504696E512B2AUL,
    0x000288C573B9367BUL, 0x7A758EE4F9E71EDAUL, 0x0002A4FCBC9436B1UL, 0x9F472B4BEE352015UL,
    0x0002C1662016128EUL, 0xBA9367707EBFA541UL, 0x0002D93A0FA407F8UL, 0xE3014099348D8C1CUL,
    0x0002F60122CA2A51UL, 0x8A034F981A8C6404UL, 0x00030E2426EA1D32UL, 0x8EB42F9AF7514FF3UL,
    0x00032B4B5B9EE02FUL, 0xE450B141FEDE8F43UL, 0x000343BF881E36FEUL, 0x1F0FFB0C87F380BDUL,
    0x00035C594DECE57AUL, 0x8D5AE54F550444EDUL, 0x00037A10E7077B15UL, 0xA1DD355F6A516D74UL,
    0x000392FF00F3A89DUL, 0x8B0D4637362773A9UL, 0x0003AC142FF206A2UL, 0x91F903DF2C724311UL,
    0x0003C550EF4D6582UL, 0x38177870819AF3E9UL, 0x0003DEB5BC9B9FFCUL, 0xBBDD53488E3DD7E6UL,
    0x0003F84317CC414BUL, 0xBA46F1CF69F9E03DUL, 0x000411F98337A0EDUL, 0xEF8869CBF9E34426UL,
    0x000426A95CB9B1B5UL, 0x0A1E17343426A942UL, 0x000440AB028D7307UL, 0x021101014BCD1676UL,
    0x00045AD732EB3EDCUL, 0xD66FBD28B409352CUL, 0x00046FE658D69AE5UL, 0x376A8A3DEDB6EE58UL,
    0x00048A607EFBDE5EUL, 0xBDE9F6A7F2628401UL, 0x00049FAEBD636327UL, 0x33BFFA5A12C9B4B0UL,
    0x0004BA78AF3848A1UL, 0x80609468EE0F65E7UL, 0x0004D00784ABB2E8UL, 0x38CAA91D6E2E4FE7UL,
    0x0004EB2328E39717UL, 0xA0821FEA0DAC1181UL, 0x000500F421B3A9E6UL, 0xEF574487308325A4UL,
    0x000516E30285F7C4UL, 0xDDBE305EAF5A2008UL, 0x00052CF01DC99FA6UL, 0x92E5FBEB518507E9UL,
    0x000548AB81CE28F5UL, 0xF3840B263ACB4351UL, 0x00055EFDD4F2347EUL, 0xB7B7B97503BA4E73UL,
    0x0005756F77D657CBUL, 0xE9ABEEB734475D8AUL, 0xFFFA74DF43518E1AUL, 0xB4242837567F8D74UL,
    0xFFFA8B909029FD8DUL, 0x6BDC9C7C23801EEAUL, 0xFFFAA2623A2EA964UL, 0xEAD9524D7C99F430UL,
    0xFFFAB67484519DE1UL, 0xB9F70894A00C17C7UL, 0xFFFACD83D87AB4F0UL, 0xEEF387016EFC755AUL,
    0xFFFAE4B498F5FEA6UL, 0x4D8A09808A5E9B20UL, 0xFFFAF91AF8CC7D04UL, 0x69013E43FC890A36UL,
    0xFFFB108B6C53AD25UL, 0x7B4970E6ED960C0FUL, 0xFFFB252A2250FBBAUL, 0x5A1E958F770385B7UL,
    0xFFFB39E38DAAEF9EUL, 0xC151ACC4C09B3794UL, 0xFFFB51B3F151D8B6UL, 0xD896B5FD852AD441UL,
    0xFFFB66A783B31E74UL, 0xB7799055BA1751CDUL, 0xFFFB7BB6A99E7A7DUL, 0x18745D6AF3C50AF8UL,
    0xFFFB90E1AC0B8DCCUL, 0xF0C747BA7BE12185UL, 0xFFFBA628D515167CUL, 0x7F18CE0AA3BE4748UL,
    0xFFFBBB8C6FFF046CUL, 0xC8DC25AD2DAD94D2UL, 0xFFFBCDF8ADE7D5E5UL, 0xBCF401D17312E8BCUL,
    0xFFFBE391E80CA9BCUL, 0xB8BA3E01A1085FF8UL, 0xFFFBF94871BB1842UL, 0x24C3337054825235UL,
    0xFFFC0BFC78895068UL, 0x7DC7EB875E170A51UL, 0xFFFC21EA468474D9UL, 0x35BCE435791EF9BDUL,
    0xFFFC34CE254AF03AUL, 0x26979E3D31419625UL, 0xFFFC4AF453BE635FUL, 0xF359F499C0A0578DUL,
    0xFFFC5E0901BB5435UL, 0xEA5640C676526226UL, 0xFFFC71348C3652E5UL, 0x494C9689093C084CUL,
    0xFFFC84772A39769DUL, 0xA4BFDC29AFA988C7UL, 0xFFFC9B0D023739BEUL, 0x88A906D00A8E7B83UL,
    0xFFFCAE82606EFA1CUL, 0xE7A30DE4630E7ABBUL, 0xFFFCC20F85B12CB9UL, 0x85BD9FCE6FFCE95FUL,
    0xFFFCD5B4AC617529UL, 0x7137D9F158E8ED31UL, 0xFFFCE9720FBB93B4UL, 0x9837BF48A0DB44E7UL,
    0xFFFCF9F7E6DC861AUL, 0x48E391990CDE628AUL, 0xFFFD0DE25623B399UL, 0x910AC622E429E98CUL,
    0xFFFD21E5AEA35296UL, 0x8C836CC8C25CC938UL, 0xFFFD36022EFB4076UL, 0x9035D6777B57436EUL,
    0xFFFD46D7FF14D1A8UL, 0xD948CD233218CEBBUL, 0xFFFD5B23438BC979UL, 0x0BA37FC523869CCBUL,
    0xFFFD6F8866632384UL, 0x56B63702725A6EE3UL, 0xFFFD809B4B4D5AE6UL, 0xA4194CA7008A4D78UL,
    0xFFFD91C07BFC2E11UL, 0x78864D275439D80DUL, 0xFFFDA66BE14141B5UL, 0xEF191AFF11F80B0EUL,
    0xFFFDB7B9DD88B5E3UL, 0xA0078EE9D9BF269DUL, 0xFFFDC91AA55A130BUL, 0xFADF3F72E34CA318UL,
    0xFFFDDE0E37BB58C9UL, 0xD9C219CB183920A4UL, 0xFFFDEF98EA00BAFAUL, 0xCC3537DC1D8EDCF5UL,
    0xFFFE0136ECE24154UL, 0x555D1AE6606CDB1CUL, 0xFFFE12E86B17C87FUL, 0x450DD274120F7272UL,
    0xFFFE24AD8FE7826DUL, 0x887A951E7E0B54E8UL, 0xFFFE36868728716EUL, 0x010977D18839CA45UL,
    0xFFFE48737D44F125UL, 0xEF7BC3987E6C0EFBUL, 0xFFFE5A749F3D4DCDUL, 0xC735C5C9F29E60EBUL,
    0xFFFE6C8A1AAA6A12UL, 0x23C8C7F3C9BB23F1UL, 0xFFFE7EB41DC073FCUL, 0x9B8FC4AFA0406FB1UL,
    0xFFFE90F2D751A94BUL, 0x4641B664612E649CUL, 0xFFFE9F9A756C8AF3UL, 0xC4E21163B086DA64UL,
    0xFFFEB1FEEF75CA51UL, 0xA3020D3A51B6EB61UL, 0xFFFEC478A674E491UL, 0x20ACA5651894BD17UL,
    0xFFFED707CBAF1257UL, 0x28A55EE68976D72EUL, 0xFFFEE5F045E4075AUL, 0xE019E731491F21C9UL,
    0xFFFEF8A67CA671B8UL, 0xECFE4B5998774901UL, 0xFFFF07AE79FF74EAUL, 0xCCF419B47488A668UL,
    0xFFFF1A8C682351EFUL, 0xABF2025B1BE7E1B8UL, 0xFFFF29B46EF47703UL, 0x96087F66EE9CFEABUL,
    0xFFFF3CBABE7BE049UL, 0x88E84D2B1A4A1ED7UL, 0xFFFF4C03587B5A13UL, 0x3E0C181B1294D2A0UL,
    0xFFFF5B5A99E59377UL, 0x1C3AD4816DC66760UL, 0xFFFF6E9C7218ABE2UL, 0xD7E707807770FAACUL,
    0xFFFF7E1513D0C608UL, 0x8769F12D6314F89BUL, 0xFFFF8D9CB9CBFCDFUL, 0xB0A82C4EF8792DF7UL,
    0xFFFF9D33814D593FUL, 0xC78A96E496426239UL, 0xFFFFB0C56EF2E56AUL, 0x2C432D6A40ACE86FUL,
    0xFFFFC07EAE9E07F8UL, 0x3860C24B16590A85UL, 0xFFFFD0477140FDEBUL, 0x1245B5DA1F4F7C83UL,
    0xFFFFE01FD594EF98UL, 0x7703C896FC6E23D8UL, 0xFFFFF007FAAEA77AUL, 0x1FDAFBCA54B2595AUL,
};
//@end
//@generated nm_fm_log_poly
constant ulong nm_fm_log_poly[9] = {
    0x1555555555555555UL, 0xFFC0000000000000UL, 0x0000CCCCCCCCCCCDUL, 0xFFFFFD5555555555UL,
    0x0000000924924925UL, 0xFFFFFFFFE0000000UL, 0x000000000071C71CUL, 0xFFFFFFFFFFFE6666UL,
    0x00000000000005D1UL,
};
//@end

// log1p(r) for r = (-1)^neg a 2^(er - 63), a with its leading one at bit 63, |r| < 2^-7.8.
static inline nm_fm_x2 nm_fm_log1p_small(uint neg, ulong a, int er) {
    // In units of 2^(er - 126): r = a 2^63, r^2/2 = a^2 2^(er - 1), r^3 P ~ mulhi(a^2 hi, a P) 2^(2er + 67).
    nm_f64_u128 sq = nm_f64_i_mul64(a, a);
    nm_f64_u128 half_sq = nm_fm_shr128(sq, uint(1 - er));
    long u = er + 7 > -64 ? long(a >> uint(-(er + 7))) : 0L;                     // |r| 2^70
    long p = nm_fm_horner(neg != 0u ? -u : u, nm_fm_log_poly, 9);
    ulong t = metal::mulhi(sq.hi, metal::mulhi(a, ulong(p)));
    int ts = 2 * er + 67;
    nm_f64_u128 t3 = ts >= 0 ? nm_fm_shl128(nm_fm_u128(0UL, t), uint(ts)) : nm_fm_shr128(nm_fm_u128(0UL, t), uint(-ts));
    nm_f64_u128 f = nm_fm_add128(nm_fm_u128(a >> 1, a << 63), t3);
    f = neg != 0u ? nm_fm_add128(f, half_sq) : nm_fm_sub128(f, half_sq);
    return nm_fm_x2_from128(neg, f, 126 - er);
}

// log((m 2^64 + ml) 2^(e - 127)) for m with its leading one at bit 63. r is exact for a 53-bit
// significand (a float64's); with more bits r^2 and r^3 P see r to 2^-70, an absolute error below 2^-76,
// which callers that pass one (log1p, the inverse hyperbolic functions) can afford.
static inline nm_fm_x2 nm_fm_log_core(ulong m, ulong ml, int e) {
    uint j = uint((m >> 56) + ((m >> 55) & 1UL)) - 128u;        // round(z 128) - 128 in [0, 128]
    uint halved = uint(j >= 53u);
    j &= 127u;
    int k = e + int(halved);
    if (j == 0u && k == 0) {
        // |z - 1| 2^127 or 2^128, exactly
        nm_f64_u128 d = halved != 0u ? nm_fm_neg128(nm_fm_u128(m, ml)) : nm_fm_u128(m - NM_F64_SIGN, ml);
        if ((d.hi | d.lo) == 0UL) {
            return nm_fm_x2_from128(0u, d, 0);
        }
        uint s = nm_fm_clz128(d);
        return nm_fm_log1p_small(halved, nm_fm_shl128(d, s).hi, -int(s) - int(halved));
    }
    // r 2^106 = (m 2^64 + ml) c 2^(-31 - halved) - 2^106, exact for the m part
    ulong c = ulong(nm_fm_log_c[j]);
    nm_f64_u128 big_r = nm_fm_shl128(nm_f64_i_mul64(m, c), 33u - halved);
    big_r = nm_fm_add128(big_r, nm_fm_shr128(nm_f64_i_mul64(ml, c), 31u + halved));
    big_r = nm_fm_sub128(big_r, nm_fm_u128(1UL << 42, 0UL));
    long rs = long((big_r.hi << 28) | (big_r.lo >> 36));                         // r 2^70
    ulong ar = ulong(rs < 0L ? -rs : rs);
    nm_f64_u128 sq = nm_f64_i_mul64(ar, ar);                                     // r^2 2^140
    long p = nm_fm_horner(rs, nm_fm_log_poly, 9);
    ulong t = metal::mulhi(sq.hi, metal::mulhi(ar, ulong(p)));                   // |r|^3 P 2^80
    // Q116: r 2^116 = big_r << 10, r^2/2 2^116 = sq >> 25, r^3 P 2^116 = t << 36
    nm_f64_u128 s = nm_fm_shl128(big_r, 10u);
    s = nm_fm_sub128(s, nm_fm_shr128(sq, 25u));
    nm_f64_u128 t3 = nm_fm_shl128(nm_fm_u128(0UL, t), 36u);
    s = rs < 0L ? nm_fm_sub128(s, t3) : nm_fm_add128(s, t3);
    s = nm_fm_add128(s, nm_fm_u128(nm_fm_log_l[2u * j], nm_fm_log_l[2u * j + 1u]));
    ulong ak = ulong(k < 0 ? -k : k);
    nm_f64_u128 kl = nm_f64_i_mul64(ak, NM_FM_LN2_Q116_LO);
    kl.hi += ak * NM_FM_LN2_Q116_HI;
    s = k < 0 ? nm_fm_sub128(s, kl) : nm_fm_add128(s, kl);
    bool negative = nm_fm_is_neg128(s);
    return nm_fm_x2_from128(uint(negative), negative ? nm_fm_neg128(s) : s, 116);
}

// The special cases of log, log2, log10: NaN, negative, zero, +inf. Returns true with the result in *r.
static inline bool nm_fm_log_special(ulong u, thread nm_f64& r) {
    ulong a = u & NM_F64_ABS;
    if (a > NM_F64_EXP) {
        r = nm_fm_quiet(u);
        return true;
    }
    if (a == 0UL) {
        r = nm_f64_from_bits(NM_F64_SIGN | NM_F64_EXP);
        return true;
    }
    if ((u >> 63) != 0UL) {
        r = nm_f64_from_bits(NM_F64_DEFAULT_NAN);
        return true;
    }
    if (a == NM_F64_EXP) {
        r = nm_f64_from_bits(NM_F64_EXP);
        return true;
    }
    return false;
}

static inline nm_fm_x2 nm_fm_log_bits(ulong u) {
    nm_fm_x v = nm_fm_x_from_bits(u);
    return nm_fm_log_core(v.m, 0UL, v.e);
}

static inline nm_f64 nm_f64_log(nm_f64 x) {
    nm_f64 r;
    if (nm_fm_log_special(x.bits, r)) {
        return r;
    }
    return nm_fm_x2_round(nm_fm_log_bits(x.bits));
}

static inline nm_f64 nm_f64_log2(nm_f64 x) {
    nm_f64 r;
    if (nm_fm_log_special(x.bits, r)) {
        return r;
    }
    return nm_fm_x2_round(nm_fm_x2_mul_const(nm_fm_log_bits(x.bits), NM_FM_INV_LN2_HI, NM_FM_INV_LN2_LO,
                                             NM_FM_INV_LN2_E));
}

static inline nm_f64 nm_f64_log10(nm_f64 x) {
    nm_f64 r;
    if (nm_fm_log_special(x.bits, r)) {
        return r;
    }
    return nm_fm_x2_round(nm_fm_x2_mul_const(nm_fm_log_bits(x.bits), NM_FM_INV_LN10_HI, NM_FM_INV_LN10_LO,
                                             NM_FM_INV_LN10_E));
}

// log(1 + x) of an extended value x > -1 (fdlibm's log1p splits the same way): for |x| < 2^-8 the series
// with r = x exactly; otherwise the logarithm of 1 + x formed exactly in 128 bits (for |x| < 2^63).
static inline nm_fm_x2 nm_fm_log1p_x(nm_fm_x v) {
    if (v.m == 0UL) {
        return nm_fm_x2_from128(v.neg, nm_fm_u128(0UL, 0UL), 0);             // log1p(+-0) = +-0
    }
    if (v.e < -8) {
        return nm_fm_log1p_small(v.neg, v.m, v.e);
    }
    int top = metal::max(v.e, 0) + 1;                          // 1 + x < 2^top; units of 2^(top - 127)
    nm_f64_u128 one = top <= 127 ? nm_fm_shl128(nm_fm_u128(0UL, 1UL), uint(127 - top)) : nm_fm_u128(0UL, 0UL);
    nm_f64_u128 xv = nm_fm_shr128(nm_fm_u128(v.m, 0UL), uint(top - v.e));
    nm_fm_x2 w = nm_fm_x2_from128(0u, v.neg != 0u ? nm_fm_sub128(one, xv) : nm_fm_add128(one, xv), 127 - top);
    return nm_fm_log_core(w.hi, w.lo, w.e);
}

static inline nm_f64 nm_f64_log1p(nm_f64 x) {
    ulong u = x.bits;
    ulong a = u & NM_F64_ABS;
    if (a > NM_F64_EXP) {
        return nm_fm_quiet(u);
    }
    if ((u >> 63) != 0UL && a >= NM_F64_ONE) {
        return nm_f64_from_bits(a == NM_F64_ONE ? (NM_F64_SIGN | NM_F64_EXP) : NM_F64_DEFAULT_NAN);
    }
    if (a == NM_F64_EXP) {
        return x;
    }
    if (a < 0x3C90000000000000UL) {                            // |x| < 2^-54: x (zeros and subnormals too)
        return x;
    }
    return nm_fm_x2_round(nm_fm_log1p_x(nm_fm_x_from_bits(u)));
}

//@@ fm_pow requires: fm_exp fm_log f64_mul f64_div f64_int
// pow(x, y) = e^(y log x) (the structure of fdlibm's and ARM's pow): log x to about 2^-71 relative (the
// 128-bit nm_fm_log_core), y log x formed in 128 bits and handed to the exponential in Q116 fixed point,
// so its absolute error stays below 2^10 2^-71 < 2^-60; overflow and underflow come out of the final
// rounding. Special cases follow C99 Annex F (F.9.4.4), as Numba's x ** y and math.pow on floats do.
//
// Whether y is an integer, and an odd one: 0 = not an integer, 1 = even, 2 = odd.
static inline int nm_fm_integer_kind(ulong y) {
    int exp = int(y >> 52) & 0x7FF;
    if (exp >= 0x434) {
        return 1;                                              // |y| >= 2^53: even
    }
    if (exp < 0x3FF) {
        return (y & NM_F64_ABS) == 0UL ? 1 : 0;
    }
    uint units = uint(0x433 - exp);                            // bits below the units place
    ulong frac = y & NM_F64_FRAC;
    if ((frac & ((1UL << units) - 1UL)) != 0UL) {
        return 0;
    }
    return units == 52u ? 2 : 1 + int(((frac | NM_F64_HIDDEN) >> units) & 1UL);
}

static inline nm_f64 nm_f64_pow(nm_f64 x, nm_f64 y) {
    ulong ux = x.bits;
    ulong uy = y.bits;
    ulong ax = ux & NM_F64_ABS;
    ulong ay = uy & NM_F64_ABS;
    if (ay == 0UL || ux == NM_F64_ONE) {
        return nm_f64_from_bits(NM_F64_ONE);
    }
    if (ax > NM_F64_EXP || ay > NM_F64_EXP) {
        return nm_f64_from_bits(nm_f64_i_nan2(ux, uy));
    }
    bool ypos = (uy >> 63) == 0UL;
    if (ay == NM_F64_EXP) {
        if (ax == NM_F64_ONE) {
            return nm_f64_from_bits(NM_F64_ONE);               // (-1) ** +-inf
        }
        return nm_f64_from_bits((ax > NM_F64_ONE) == ypos ? NM_F64_EXP : 0UL);
    }
    int kind = nm_fm_integer_kind(uy);
    ulong sign = (ux >> 63) != 0UL && kind == 2 ? NM_F64_SIGN : 0UL;
    if (ax == 0UL || ax == NM_F64_EXP) {
        // zero: y < 0 gives infinity; infinity: y > 0 gives infinity; the sign only for odd integers
        return nm_f64_from_bits(sign | ((ax == 0UL) != ypos ? NM_F64_EXP : 0UL));
    }
    if ((ux >> 63) != 0UL && kind == 0) {
        return nm_f64_from_bits(NM_F64_DEFAULT_NAN);
    }
    nm_fm_x2 l = nm_fm_log_bits(ax);
    if (l.hi == 0UL) {
        return nm_f64_from_bits(sign | NM_F64_ONE);            // |x| == 1
    }
    // y log x = My (hi, lo) 2^(ey - 52 + e - 127) with My the 53-bit significand of y
    nm_fm_x yv = nm_fm_x_from_bits(ay);
    int e = yv.e + l.e;
    uint neg = uint(!ypos) ^ l.neg;
    if (e >= 10) {                                             // |y log x| >= 1024
        return nm_f64_from_bits(sign | (neg != 0u ? 0UL : NM_F64_EXP));
    }
    // p = the top 128 bits of yv.m (l.hi, l.lo), so y log x = p 2^(e - 126), which in Q116 is p >> (10 - e)
    nm_f64_u128 p = nm_f64_i_mul64(yv.m, l.hi);
    p = nm_fm_add128(p, nm_fm_u128(0UL, metal::mulhi(yv.m, l.lo)));
    nm_f64_u128 t = nm_fm_shr128(p, uint(10 - e));
    nm_fm_x r = nm_fm_exp_q116(neg != 0u ? nm_fm_neg128(t) : t);
    r.neg = uint(sign >> 63);
    return nm_fm_x_round(r);
}

// x ** n for an integer n as Numba computes float ** int: repeated squaring with correctly rounded
// multiplications, 1/r for a negative n, and pow for |n| > 65536.
static inline nm_f64 nm_f64_powi(nm_f64 x, long n) {
    ulong e = n < 0L ? 0UL - ulong(n) : ulong(n);
    if (e > 65536UL) {
        return nm_f64_pow(x, nm_f64_from_i64(n));
    }
    nm_f64 r = nm_f64_from_bits(NM_F64_ONE);
    nm_f64 b = x;
    while (e != 0UL) {
        if ((e & 1UL) != 0UL) {
            r = nm_f64_mul(r, b);
        }
        e >>= 1;
        b = nm_f64_mul(b, b);
    }
    return n < 0L ? nm_f64_div(nm_f64_from_bits(NM_F64_ONE), r) : r;
}

//@@ fm_trig requires: fm_core
// sin, cos, tan: x = k pi/2 + r with |r| <= pi/4, then sin r = r (1 - r^2/3! + ... - r^18/19!) and
// cos r = 1 - r^2/2! + ... + r^20/20! (truncation below 2^-68 for |r| <= pi/4), both in u = r^2/2.
// Reduction for |x| < 2^20 (Cody & Waite's additive scheme, carried out exactly in integers): k from
// x times the top 64 bits of 2/pi, then x - k pi/2 in 192-bit fixed point with pi/2 to 2^-170, so the
// reduced argument has an absolute error below 2^-149. For |x| >= 2^20 (Payne & Hanek): the 192 bits
// of 2/pi that matter for x's exponent (bits below contribute less than 2^-137 to x 2/pi, bits above
// only multiples of 4) times x's 53-bit significand, three 64x64->128 products; k mod 4 and the
// fraction come from the product's top 130 bits. The smallest |r| over all float64 x is about 2^-61
// (Muller, Elementary Functions, 3rd ed., table 11.1), so both reductions keep r to a relative error
// below 2^-63 (r = fraction x pi/2 costs one more 2^-63).
//@generated nm_fm_two_over_pi
constant ulong nm_fm_two_over_pi[20] = {
    0x0000000000000000UL, 0xA2F9836E4E441529UL, 0xFC2757D1F534DDC0UL, 0xDB6295993C439041UL,
    0xFE5163ABDEBBC561UL, 0xB7246E3A424DD2E0UL, 0x06492EEA09D1921CUL, 0xFE1DEB1CB129A73EUL,
    0xE88235F52EBB4484UL, 0xE99C7026B45F7E41UL, 0x3991D639835339F4UL, 0x9C845F8BBDF9283BUL,
    0x1FF897FFDE05980FUL, 0xEF2F118B5A0A6D1FUL, 0x6D367ECF27CB09B7UL, 0x4F463F669E5FEA2DUL,
    0x7527BAC7EBE5F17BUL, 0x3D0739F78A5292EAUL, 0x6BFB5FB11F8D5D08UL, 0x56033046FC7B6BABUL,
};
//@end
//@generated nm_fm_pio2_cw
constant ulong nm_fm_pio2_cw[3] = {
    0x000006487ED5110BUL, 0x4611A62633145C06UL, 0xE0E6894812704453UL,
};
//@end
//@generated nm_fm_sin_poly
constant ulong nm_fm_sin_poly[10] = {
    0x4000000000000000UL, 0xEAAAAAAAAAAAAAABUL, 0x0222222222222222UL, 0xFFE5FE5FE5FE5FE6UL,
    0x0000B8EF1D2AB63AUL, 0xFFFFFCA337530157UL, 0x0000000B092309D4UL, 0xFFFFFFFFE5180C19UL,
    0x000000000032A58FUL, 0xFFFFFFFFFFFFB42EUL,
};
//@end
//@generated nm_fm_cos_poly
constant ulong nm_fm_cos_poly[11] = {
    0x4000000000000000UL, 0xC000000000000000UL, 0x0AAAAAAAAAAAAAABUL, 0xFF49F49F49F49F4AUL,
    0x0006806806806807UL, 0xFFFFDB0360910EC1UL, 0x0000008F76C77FC7UL, 0xFFFFFFFE6C68B574UL,
    0x00000000035CFE7DUL, 0xFFFFFFFFFFFA5F62UL, 0x0000000000000795UL,
};
//@end

struct nm_fm_reduced {
    nm_fm_x r;
    uint q;                                                    // k mod 4
};

// Cody-Waite: |x| = M 2^(E - 52) with -1 <= E < 20.
static inline nm_fm_reduced nm_fm_reduce_cw(ulong a) {
    int e = int(a >> 52) - 1023;
    ulong m = (a & NM_F64_FRAC) | NM_F64_HIDDEN;
    // k = round(|x| 2/pi) from mulhi(M, 2/pi 2^64) 2^(E - 52)
    ulong k = ((metal::mulhi(m, nm_fm_two_over_pi[1]) >> uint(51 - e)) + 1UL) >> 1;
    // |x| 2^170 = M << (E + 118) (E + 118 in [117, 137]) as words x2:x1 (x0 = 0)
    uint p = uint(e + 118);
    ulong x2 = p >= 128u ? m << (p - 128u) : m >> (128u - p);
    ulong x1 = p >= 128u ? 0UL : m << (p - 64u);
    // k pi/2 2^170 (k < 2^21, the top word of pi/2 2^170 is below 2^43)
    nm_f64_u128 k0 = nm_f64_i_mul64(k, nm_fm_pio2_cw[2]);
    nm_f64_u128 k1 = nm_f64_i_mul64(k, nm_fm_pio2_cw[1]);
    ulong p1 = k0.hi + k1.lo;
    ulong p2 = k1.hi + k * nm_fm_pio2_cw[0] + ulong(p1 < k0.hi);
    // d = x - k pi/2, 192 bits
    ulong d0 = 0UL - k0.lo;
    ulong b0 = ulong(k0.lo != 0UL);
    ulong d1 = x1 - p1 - b0;
    ulong b1 = ulong(x1 < p1 || (x1 == p1 && b0 != 0UL));
    ulong d2 = x2 - p2 - b1;
    uint neg = uint(d2 >> 63);
    if (neg != 0u) {
        d0 = ~d0 + 1UL;
        ulong c = ulong(d0 == 0UL);
        d1 = ~d1 + c;
        c = ulong(c != 0UL && d1 == 0UL);
        d2 = ~d2 + c;
    }
    nm_fm_reduced out;
    out.q = uint(k) & 3u;
    if (d2 != 0UL) {
        out.r = nm_fm_x_from128(neg, nm_fm_u128(d2, d1), 106);
    } else {
        out.r = nm_fm_x_from128(neg, nm_fm_u128(d1, d0), 170);
    }
    return out;
}

// Payne-Hanek: |x| = M 2^(E - 52) with E >= 20 (x finite).
static inline nm_fm_reduced nm_fm_reduce_ph(ulong a) {
    int e = int(a >> 52) - 1023;
    ulong m = (a & NM_F64_FRAC) | NM_F64_HIDDEN;
    // The window starts at bit E - 53 of 2/pi (bit 1 is the first after the point); the table starts
    // with a zero word, so that bit is at position E + 10 counted from the table's first bit.
    uint p = uint(e + 10);
    uint w = p >> 6;
    uint b = p & 63u;
    ulong g0 = nm_fm_two_over_pi[w];
    ulong g1 = nm_fm_two_over_pi[w + 1u];
    ulong g2 = nm_fm_two_over_pi[w + 2u];
    ulong g3 = nm_fm_two_over_pi[w + 3u];
    ulong w0 = b != 0u ? (g0 << b) | (g1 >> (64u - b)) : g0;
    ulong w1 = b != 0u ? (g1 << b) | (g2 >> (64u - b)) : g1;
    ulong w2 = b != 0u ? (g2 << b) | (g3 >> (64u - b)) : g2;
    // x 2/pi = M (w0:w1:w2) 2^-190 modulo 4
    nm_f64_u128 lo = nm_f64_i_mul64(m, w2);
    nm_f64_u128 mid = nm_f64_i_mul64(m, w1);
    ulong p1 = lo.hi + mid.lo;
    ulong p2 = mid.hi + m * w0 + ulong(p1 < lo.hi);
    // the fraction's top 128 bits, as a signed value when rounding k up
    nm_f64_u128 f = nm_fm_u128((p2 << 2) | (p1 >> 62), (p1 << 2) | (lo.lo >> 62));
    uint neg = uint(f.hi >> 63);
    nm_fm_reduced out;
    out.q = uint((p2 >> 62) + ulong(neg)) & 3u;
    out.r = nm_fm_x_mul(nm_fm_x_from128(neg, neg != 0u ? nm_fm_neg128(f) : f, 128),
                        nm_fm_x_const(NM_FM_PIO2_M, NM_FM_PIO2_E));
    return out;
}

// |x| = k pi/2 + r for a finite |x|.
static inline nm_fm_reduced nm_fm_reduce(ulong a) {
    if (a < 0x3FE921FB54442D18UL) {                           // |x| < pi/4
        nm_fm_reduced out;
        out.r = nm_fm_x_from_bits(a);
        out.q = 0u;
        return out;
    }
    return a < 0x4130000000000000UL ? nm_fm_reduce_cw(a) : nm_fm_reduce_ph(a);
}

// r^2/2 2^64 for |r| < 1.
static inline long nm_fm_half_square(nm_fm_x r) {
    int sh = -2 * r.e - 1;
    return sh < 64 ? long(metal::mulhi(r.m, r.m) >> uint(sh)) : 0L;
}

static inline nm_fm_x nm_fm_sin_kernel(nm_fm_x r) {
    return nm_fm_x_mul(r, nm_fm_x_from_q62(nm_fm_horner(nm_fm_half_square(r), nm_fm_sin_poly, 10)));
}

static inline nm_fm_x nm_fm_cos_kernel(nm_fm_x r) {
    return nm_fm_x_from_q62(nm_fm_horner(nm_fm_half_square(r), nm_fm_cos_poly, 11));
}

// sin x and cos x, unrounded, for a finite x.
struct nm_fm_sincos {
    nm_fm_x s;
    nm_fm_x c;
};

static inline nm_fm_sincos nm_fm_sincos_x(ulong u) {
    nm_fm_reduced red = nm_fm_reduce(u & NM_F64_ABS);
    nm_fm_x sr = nm_fm_sin_kernel(red.r);
    nm_fm_x cr = nm_fm_cos_kernel(red.r);
    nm_fm_sincos out;
    out.s = (red.q & 1u) != 0u ? cr : sr;
    out.c = (red.q & 1u) != 0u ? sr : cr;
    out.s.neg ^= (red.q >> 1) ^ uint(u >> 63);
    out.c.neg ^= ((red.q + 1u) >> 1) & 1u;
    return out;
}

static inline nm_f64 nm_f64_sin(nm_f64 x) {
    ulong u = x.bits;
    ulong a = u & NM_F64_ABS;
    if (a >= NM_F64_EXP) {
        return a > NM_F64_EXP ? nm_fm_quiet(u) : nm_f64_from_bits(NM_F64_DEFAULT_NAN);
    }
    if (a < 0x3E50000000000000UL) {                           // |x| < 2^-26: x (zeros, subnormals)
        return x;
    }
    nm_fm_reduced red = nm_fm_reduce(a);
    nm_fm_x v = (red.q & 1u) != 0u ? nm_fm_cos_kernel(red.r) : nm_fm_sin_kernel(red.r);
    v.neg ^= (red.q >> 1) ^ uint(u >> 63);
    return nm_fm_x_round(v);
}

static inline nm_f64 nm_f64_cos(nm_f64 x) {
    ulong u = x.bits;
    ulong a = u & NM_F64_ABS;
    if (a >= NM_F64_EXP) {
        return a > NM_F64_EXP ? nm_fm_quiet(u) : nm_f64_from_bits(NM_F64_DEFAULT_NAN);
    }
    if (a < 0x3E40000000000000UL) {                           // |x| < 2^-27: 1
        return nm_f64_from_bits(NM_F64_ONE);
    }
    nm_fm_reduced red = nm_fm_reduce(a);
    nm_fm_x v = (red.q & 1u) != 0u ? nm_fm_sin_kernel(red.r) : nm_fm_cos_kernel(red.r);
    v.neg ^= ((red.q + 1u) >> 1) & 1u;
    return nm_fm_x_round(v);
}

static inline nm_f64 nm_f64_tan(nm_f64 x) {
    ulong u = x.bits;
    ulong a = u & NM_F64_ABS;
    if (a >= NM_F64_EXP) {
        return a > NM_F64_EXP ? nm_fm_quiet(u) : nm_f64_from_bits(NM_F64_DEFAULT_NAN);
    }
    if (a < 0x3E40000000000000UL) {                           // |x| < 2^-27: x
        return x;
    }
    nm_fm_sincos sc = nm_fm_sincos_x(u);
    return nm_fm_x_round(nm_fm_x_div(sc.s, sc.c));
}

//@@ fm_atan requires: fm_core
// atan(q) for 0 <= q <= 1: q < 1/16: q (1 - q^2/3 + ... - q^14/15) (truncation below 2^-68); otherwise
// atan(c) + atan(t) with c = j/64 the nearest multiple of 1/64, t = (q - c)/(1 + q c), |t| <= 1/128 (the
// same series; atan(c) from a table to 2^-64). atan, atan2, asin = atan2(x, sqrt(1 - x^2)) and
// acos = atan2(sqrt(1 - x^2), x) reduce to it with the octant identities (fdlibm's atan2 special cases);
// 1 - x^2 is exact in 128 bits, so asin and acos stay accurate next to +-1.
//@generated nm_fm_atan_tab
constant ulong nm_fm_atan_tab[65] = {
    0x0000000000000000UL, 0x03FFEAAB776E5357UL, 0x07FF556EEA5D892AUL, 0x0BFDC0C2186D14FDUL,
    0x0FFAADDB967EF4E3UL, 0x13F59F0E7C559D6BUL, 0x17EE182602F10E8CUL, 0x1BE39EBE6F07C37EUL,
    0x1FD5BA9AAC2F6DC6UL, 0x23C3F5F6086E4DC9UL, 0x27ADDDD18CC4D8B1UL, 0x2B93023C7D84D3BFUL,
    0x2F72F6979CB6044DUL, 0x334D51D2D90C4C3AUL, 0x3721AEA524C14409UL, 0x3AEFABBE40AE6CE3UL,
    0x3EB6EBF25901BAC5UL, 0x4277165F618D8963UL, 0x462FD68C2FC5E098UL, 0x49E0DC815FBD16F9UL,
    0x4D89DCDC1FAF2F35UL, 0x512A90DB0ABC26A3UL, 0x54C2B6654735276DUL, 0x5852100C273F8659UL,
    0x5BD86507937BC23AUL, 0x5F55812D8ECFDD6AUL, 0x62C934E5286C95B7UL, 0x6633551535AC619EUL,
    0x6993BB0F308FF2DBUL, 0x6CEA44769971B1AEUL, 0x7036D3253B27BE34UL, 0x73794D0CB04D425DUL,
    0x76B19C1586ED3DA3UL, 0x79DFADFC5D68D10EUL, 0x7D03742D50505F2EUL, 0x801CE39E0D205C9AUL,
    0x832BF4A6D9867E2AUL, 0x8630A2DADA1ED066UL, 0x892AECDFDE9547B5UL, 0x8C1AD445F3E09B8CUL,
    0x8F005D5EF7F59F9BUL, 0x91DB8F1664F350E2UL, 0x94AC72C9847186F6UL, 0x97731420365E538CUL,
    0x9A2F80E671BDDA20UL, 0x9CE1C8E6A0B8CDBAUL, 0x9F89FDC4F4B7A1EDUL, 0xA22832DBCADAAE09UL,
    0xA4BC7D1934F70924UL, 0xA746F2DDB7602294UL, 0xA9C7ABDC4830F5C9UL, 0xAC3EC0FB997DD6A2UL,
    0xAEAC4C38B4D8C080UL, 0xB110688AEBDC6F6AUL, 0xB36B31C91F043691UL, 0xB5BCC49059ECC4B0UL,
    0xB8053E2BC2319E74UL, 0xBA44BC7DD470782FUL, 0xBC7B5DEAE98AF281UL, 0xBEA94144FD049AACUL,
    0xC0CE85B8AC526641UL, 0xC2EB4ABB661628B6UL, 0xC4FFAFFABF8FBD55UL, 0xC70BD54CE602EE14UL,
    0xC90FDAA22168C235UL,
};
//@end
//@generated nm_fm_atan_poly
constant ulong nm_fm_atan_poly[8] = {
    0x4000000000000000UL, 0xFFD5555555555555UL, 0x0000333333333333UL, 0xFFFFFFB6DB6DB6DBUL,
    0x0000000071C71C72UL, 0xFFFFFFFFFF45D174UL, 0x0000000000013B14UL, 0xFFFFFFFFFFFFFDDEUL,
};
//@end

// q A(q^2) for |q| < 1/16.
static inline nm_fm_x nm_fm_atan_series(nm_fm_x q) {
    int sh = -2 * q.e - 9;                                     // q^2 2^71 = mulhi(m, m) 2^(2e + 9)
    long w = sh < 64 ? long(metal::mulhi(q.m, q.m) >> uint(sh)) : 0L;
    return nm_fm_x_mul(q, nm_fm_x_from_q62(nm_fm_horner(w, nm_fm_atan_poly, 8)));
}

static inline nm_fm_x nm_fm_atan_core(nm_fm_x q) {
    if (q.m == 0UL || q.e < -4) {
        return nm_fm_atan_series(q);
    }
    ulong qq = q.e >= 0 ? NM_F64_SIGN : q.m >> uint(-q.e);    // q 2^63
    ulong j = (qq + (1UL << 56)) >> 57;                        // round(64 q), 4..64
    long num = long(qq - (j << 57));                           // (q - c) 2^63
    ulong den = (1UL << 62) + metal::mulhi(qq, j << 57);       // (1 + q c) 2^62
    nm_fm_x t = nm_fm_x_div(nm_fm_x_make(uint(num < 0L), 0, ulong(num < 0L ? -num : num)),
                            nm_fm_x_make(0u, 1, den));
    ulong sum = nm_fm_atan_tab[j] + ulong(nm_fm_x_to_fixed(nm_fm_atan_series(t), 64));
    return nm_fm_x_make(0u, -1, sum);
}

// atan2(y, x) for y, x >= 0, not both zero: in [0, pi/2].
static inline nm_fm_x nm_fm_atan2_pos(nm_fm_x y, nm_fm_x x) {
    if (y.e < x.e || (y.e == x.e && y.m <= x.m)) {
        return nm_fm_atan_core(nm_fm_x_div(y, x));
    }
    return nm_fm_x_sub(nm_fm_x_const(NM_FM_PIO2_M, NM_FM_PIO2_E), nm_fm_atan_core(nm_fm_x_div(x, y)));
}

static inline nm_f64 nm_f64_atan(nm_f64 x) {
    ulong u = x.bits;
    ulong a = u & NM_F64_ABS;
    if (a > NM_F64_EXP) {
        return nm_fm_quiet(u);
    }
    if (a < 0x3E40000000000000UL) {                           // |x| < 2^-27: x
        return x;
    }
    nm_fm_x v = a == NM_F64_EXP ? nm_fm_x_const(NM_FM_PIO2_M, NM_FM_PIO2_E)
                                : nm_fm_atan2_pos(nm_fm_x_from_bits(a), nm_fm_x_const(NM_F64_SIGN, 0));
    v.neg = uint(u >> 63);
    return nm_fm_x_round(v);
}

static inline nm_f64 nm_f64_atan2(nm_f64 y, nm_f64 x) {
    ulong uy = y.bits;
    ulong ux = x.bits;
    ulong ay = uy & NM_F64_ABS;
    ulong ax = ux & NM_F64_ABS;
    if (ay > NM_F64_EXP || ax > NM_F64_EXP) {
        return nm_f64_from_bits(nm_f64_i_nan2(uy, ux));
    }
    bool xneg = (ux >> 63) != 0UL;
    nm_fm_x v;
    if (ay == 0UL) {
        // +-0 for x > 0 or +0, +-pi for x < 0 or -0
        v = xneg ? nm_fm_x_const(NM_FM_PI_M, NM_FM_PI_E) : nm_fm_x_make(0u, 0, 0UL);
    } else if (ax == 0UL) {
        v = nm_fm_x_const(NM_FM_PIO2_M, NM_FM_PIO2_E);
    } else if (ay == NM_F64_EXP || ax == NM_F64_EXP) {
        if (ay != NM_F64_EXP) {
            v = xneg ? nm_fm_x_const(NM_FM_PI_M, NM_FM_PI_E) : nm_fm_x_make(0u, 0, 0UL);
        } else if (ax != NM_F64_EXP) {
            v = nm_fm_x_const(NM_FM_PIO2_M, NM_FM_PIO2_E);
        } else {
            v = nm_fm_x_const(NM_FM_PIO4_M, NM_FM_PIO4_E);
            if (xneg) {
                v = nm_fm_x_sub(nm_fm_x_const(NM_FM_PI_M, NM_FM_PI_E), v);
            }
        }
    } else {
        v = nm_fm_atan2_pos(nm_fm_x_from_bits(ay), nm_fm_x_from_bits(ax));
        if (xneg) {
            v = nm_fm_x_sub(nm_fm_x_const(NM_FM_PI_M, NM_FM_PI_E), v);
        }
    }
    v.neg = uint(uy >> 63);
    return nm_fm_x_round(v);
}

// sqrt(1 - x^2) for |x| < 1 (1 - x^2 exact in Q127 down to |x| = 2^-11.5, truncated below).
static inline nm_fm_x nm_fm_sqrt_one_minus_square(ulong a) {
    int e = int(a >> 52) - 1023;
    ulong m = (a & NM_F64_FRAC) | (e > -1023 ? NM_F64_HIDDEN : 0UL);
    nm_f64_u128 sq = nm_f64_i_mul64(m, m);                     // x^2 = sq 2^(2e - 104)
    int s = 2 * e + 23;
    sq = s >= 0 ? nm_fm_shl128(sq, uint(s)) : nm_fm_shr128(sq, uint(-s));
    return nm_fm_x_sqrt(nm_fm_x_from128(0u, nm_fm_sub128(nm_fm_u128(NM_F64_SIGN, 0UL), sq), 127));
}

static inline nm_f64 nm_f64_asin(nm_f64 x) {
    ulong u = x.bits;
    ulong a = u & NM_F64_ABS;
    if (a > NM_F64_EXP) {
        return nm_fm_quiet(u);
    }
    if (a > NM_F64_ONE) {
        return nm_f64_from_bits(NM_F64_DEFAULT_NAN);
    }
    if (a < 0x3E50000000000000UL) {                           // |x| < 2^-26: x
        return x;
    }
    nm_fm_x v = a == NM_F64_ONE ? nm_fm_x_const(NM_FM_PIO2_M, NM_FM_PIO2_E)
                                : nm_fm_atan2_pos(nm_fm_x_from_bits(a), nm_fm_sqrt_one_minus_square(a));
    v.neg = uint(u >> 63);
    return nm_fm_x_round(v);
}

static inline nm_f64 nm_f64_acos(nm_f64 x) {
    ulong u = x.bits;
    ulong a = u & NM_F64_ABS;
    if (a > NM_F64_EXP) {
        return nm_fm_quiet(u);
    }
    if (a > NM_F64_ONE) {
        return nm_f64_from_bits(NM_F64_DEFAULT_NAN);
    }
    nm_fm_x v;
    if (a == NM_F64_ONE) {
        v = nm_fm_x_make(0u, 0, 0UL);
    } else if (a == 0UL) {
        v = nm_fm_x_const(NM_FM_PIO2_M, NM_FM_PIO2_E);
    } else {
        v = nm_fm_atan2_pos(nm_fm_sqrt_one_minus_square(a), nm_fm_x_from_bits(a));
    }
    if ((u >> 63) != 0UL) {
        v = nm_fm_x_sub(nm_fm_x_const(NM_FM_PI_M, NM_FM_PI_E), v);
    }
    return nm_fm_x_round(v);
}

//@@ fm_ahyp requires: fm_log
// asinh, acosh, atanh as logarithms (fdlibm's case split): asinh x = log1p(x + x^2/(1 + sqrt(1 + x^2)))
// for |x| < 1, log(x + sqrt(x^2 + 1)) up to 2^28, log(2x) beyond; acosh x = log1p(t + sqrt(2t + t^2))
// with t = x - 1 exact for x <= 2, log(x + sqrt(x^2 - 1)) up to 2^28, log(2x) beyond; atanh x =
// log1p(2x/(1 - x))/2. The arguments are formed in the 64-bit extended format (relative error below
// 2^-61) and the logarithms are relatively accurate, so no cancellation is left.
// asinh of a finite extended value v != 0, unrounded.
static inline nm_fm_x2 nm_fm_asinh_x(nm_fm_x v) {
    uint neg = v.neg;
    v.neg = 0u;
    nm_fm_x one = nm_fm_x_const(NM_F64_SIGN, 0);
    nm_fm_x2 l;
    if (v.e < -28) {                                           // |v| < 2^-28: v (the rest is below 2^-57 v)
        l = nm_fm_x2_from128(0u, nm_fm_u128(v.m, 0UL), 127 - v.e);
    } else if (v.e >= 28) {                                    // log(2|v|)
        l = nm_fm_log_core(v.m, 0UL, v.e + 1);
    } else {
        nm_fm_x root = nm_fm_x_sqrt(nm_fm_x_add(nm_fm_x_mul(v, v), one));
        if (v.e >= 0) {
            nm_fm_x w = nm_fm_x_add(v, root);
            l = nm_fm_log_core(w.m, 0UL, w.e);
        } else {
            l = nm_fm_log1p_x(nm_fm_x_add(v, nm_fm_x_div(nm_fm_x_mul(v, v), nm_fm_x_add(one, root))));
        }
    }
    l.neg = neg;
    return l;
}

static inline nm_f64 nm_f64_asinh(nm_f64 x) {
    ulong u = x.bits;
    ulong a = u & NM_F64_ABS;
    if (a >= NM_F64_EXP) {
        return a > NM_F64_EXP ? nm_fm_quiet(u) : x;
    }
    if (a < 0x3E30000000000000UL) {                           // |x| < 2^-28: x
        return x;
    }
    return nm_fm_x2_round(nm_fm_asinh_x(nm_fm_x_from_bits(u)));
}

static inline nm_f64 nm_f64_acosh(nm_f64 x) {
    ulong u = x.bits;
    if (u > NM_F64_EXP) {                                      // NaN, or negative
        return (u & NM_F64_ABS) > NM_F64_EXP ? nm_fm_quiet(u) : nm_f64_from_bits(NM_F64_DEFAULT_NAN);
    }
    if (u < NM_F64_ONE) {
        return nm_f64_from_bits(NM_F64_DEFAULT_NAN);
    }
    if (u == NM_F64_EXP) {
        return x;
    }
    nm_fm_x v = nm_fm_x_from_bits(u);
    nm_fm_x one = nm_fm_x_const(NM_F64_SIGN, 0);
    if (u >= 0x41B0000000000000UL) {                          // 2^28
        return nm_fm_x2_round(nm_fm_log_core(v.m, 0UL, v.e + 1));
    }
    if (u > 0x4000000000000000UL) {                           // x > 2
        nm_fm_x w = nm_fm_x_add(v, nm_fm_x_sqrt(nm_fm_x_sub(nm_fm_x_mul(v, v), one)));
        return nm_fm_x2_round(nm_fm_log_core(w.m, 0UL, w.e));
    }
    nm_fm_x t = nm_fm_x_sub(v, one);
    nm_fm_x two_plus_t = nm_fm_x_add(t, nm_fm_x_const(NM_F64_SIGN, 1));
    return nm_fm_x2_round(nm_fm_log1p_x(nm_fm_x_add(t, nm_fm_x_sqrt(nm_fm_x_mul(t, two_plus_t)))));
}

static inline nm_f64 nm_f64_atanh(nm_f64 x) {
    ulong u = x.bits;
    ulong a = u & NM_F64_ABS;
    if (a > NM_F64_EXP) {
        return nm_fm_quiet(u);
    }
    if (a >= NM_F64_ONE) {
        return nm_f64_from_bits(a == NM_F64_ONE ? ((u & NM_F64_SIGN) | NM_F64_EXP) : NM_F64_DEFAULT_NAN);
    }
    if (a < 0x3E30000000000000UL) {                           // |x| < 2^-28: x
        return x;
    }
    nm_fm_x v = nm_fm_x_from_bits(a);
    nm_fm_x w = nm_fm_x_div(v, nm_fm_x_sub(nm_fm_x_const(NM_F64_SIGN, 0), v));
    w.e += 1;
    nm_fm_x2 l = nm_fm_log1p_x(w);
    l.e -= 1;
    l.neg = uint(u >> 63);
    return nm_fm_x2_round(l);
}

//@@ fm_cbrt requires: fm_core
// cbrt: |x| = z 2^(3k) with z in [1, 8); y ~ z^(-1/3) from a 24-entry table (relative error below 2^-5.6),
// four Newton steps y += y (1 - z y^3)/3 (quadratic: 2^-10, 2^-19, 2^-37, then the 2^-62 of the
// arithmetic; 1 - z y^3 is formed from a 128-bit product), then cbrt z = z y^2.
//@generated nm_fm_cbrt_seed
constant ulong nm_fm_cbrt_seed[24] = {
    0x7D7076A03AFF6C63UL, 0x78DFAFEBF19293B5UL, 0x74E8665D0773A20CUL, 0x716A79B529D3A2E8UL,
    0x6E4E9B3B02CEC510UL, 0x6B836532F262E4B6UL, 0x68FB8B41597D22BAUL, 0x66ACAE237E1E6A06UL,
    0x638FADD8021BC343UL, 0x5FF00553433BACF1UL, 0x5CCA2FCC1EB1D578UL, 0x5A04ADAC794491D9UL,
    0x578CFF2995A90BD6UL, 0x5555555555555555UL, 0x5353222550121E05UL, 0x517E2A1E30445299UL,
    0x4F05959403482841UL, 0x4C254D2A6B5F3715UL, 0x49A5B5E2544789C8UL, 0x477292C8DE93DB9EUL,
    0x457D3511189C91C9UL, 0x43BAA70DF925F6B2UL, 0x422288230FF8A104UL, 0x40AE4F9AC247BF07UL,
};
//@end

static inline nm_f64 nm_f64_cbrt(nm_f64 x) {
    ulong u = x.bits;
    ulong a = u & NM_F64_ABS;
    if (a >= NM_F64_EXP || a == 0UL) {
        return a > NM_F64_EXP ? nm_fm_quiet(u) : x;
    }
    nm_fm_x v = nm_fm_x_from_bits(a);
    int rho = v.e % 3;
    if (rho < 0) {
        rho += 3;
    }
    int k = (v.e - rho) / 3;
    ulong z = v.m >> uint(3 - rho);                            // z 2^60
    ulong y = nm_fm_cbrt_seed[uint(rho) * 8u + uint(v.m >> 60) - 8u];   // z^(-1/3) 2^63
    for (int i = 0; i < 4; ++i) {
        ulong y3 = metal::mulhi(metal::mulhi(y, y), y);           // y^3 2^61
        nm_f64_u128 d = nm_fm_sub128(nm_fm_u128(1UL << 57, 0UL), nm_f64_i_mul64(z, y3));   // (1 - z y^3) 2^121
        long eps = long((d.hi << 10) | (d.lo >> 54));             // (1 - z y^3) 2^67, |1 - z y^3| < 2^-4
        ulong c = metal::mulhi(metal::mulhi(y, ulong(eps < 0L ? -eps : eps)), NM_FM_THIRD_Q64) >> 3;
        y = eps < 0L ? y - c : y + c;
    }
    nm_f64_u128 c = nm_f64_i_mul64(z, nm_f64_i_mul64(y, y).hi);  // z y^2 2^122
    return nm_fm_x_round(nm_fm_x_from128(uint(u >> 63), c, 122 - k));
}

//@@ fm_hypot requires: fm_core
// hypot, correctly rounded: the exact x^2 + y^2 of the two 53-bit significands (to 128 bits and a
// sticky bit), its exact integer square root and remainder (nm_fm_isqrt128), one rounding. No overflow
// or underflow happens before that rounding. hypot(+-inf, y) = +inf even for a NaN y (C99 F.9.4.3).
static inline nm_f64 nm_f64_hypot(nm_f64 x, nm_f64 y) {
    ulong ax = x.bits & NM_F64_ABS;
    ulong ay = y.bits & NM_F64_ABS;
    if (ax == NM_F64_EXP || ay == NM_F64_EXP) {
        return nm_f64_from_bits(NM_F64_EXP);
    }
    if (ax > NM_F64_EXP || ay > NM_F64_EXP) {
        return nm_f64_from_bits(nm_f64_i_nan2(x.bits, y.bits));
    }
    ulong big = metal::max(ax, ay);
    ulong small = metal::min(ax, ay);
    if (small == 0UL) {
        return nm_f64_from_bits(big);
    }
    nm_fm_x a = nm_fm_x_from_bits(big);
    nm_fm_x b = nm_fm_x_from_bits(small);
    int d = a.e - b.e;
    if (d > 60) {
        return nm_f64_from_bits(big);                          // big (1 + less than 2^-121)
    }
    ulong ma = a.m >> 11;
    ulong mb = b.m >> 11;
    nm_f64_u128 sa = nm_f64_i_mul64(ma, ma);                   // in [2^104, 2^106)
    nm_f64_u128 sb = nm_f64_i_mul64(mb, mb);
    // S = (sa + sb 2^-2d) 2^shift in [2^126, 2^128), shift even
    uint shift = 20u;
    nm_f64_u128 s;
    bool sticky = false;
    for (int pass = 0; pass < 2; ++pass) {
        int sbs = int(shift) - 2 * d;
        nm_f64_u128 part = sbs >= 0 ? nm_fm_shl128(sb, uint(sbs)) : nm_fm_shr128(sb, uint(-sbs));
        if (sbs < 0) {
            nm_f64_u128 lost = nm_fm_sub128(sb, nm_fm_shl128(part, uint(-sbs)));
            sticky = (lost.hi | lost.lo) != 0UL;
        }
        s = nm_fm_add128(nm_fm_shl128(sa, shift), part);
        if ((s.hi >> 62) != 0UL) {
            break;
        }
        shift = 22u;
    }
    nm_fm_isqrt r = nm_fm_isqrt128(s);
    // hypot = root 2^(a.e - 52 - shift/2), root in [2^63, 2^64)
    ulong sig = (r.root >> 1) | ulong((r.root & 1UL) != 0UL || r.inexact || sticky);
    return nm_f64_from_bits(nm_f64_i_round_pack(0UL, a.e + 1033 - int(shift >> 1), sig));
}

//@@ fm_erf requires: fm_exp
// erf(x) for |x| < 1: x (2/sqrt(pi)) sum (-1)^n x^2n/(n! (2n+1)), n <= 20 (truncation below 2^-70).
// erfc(x) for x >= 1: e^(-x^2) G(1/x) / x with G(t) = x erfc(x) e^(x^2) smooth on t in [0, 1], fitted on
// six t-intervals by degree-15 polynomials (errors below 2^-67); x^2 is exact in Q116, so e^(-x^2)
// keeps its 2^-62 even where x^2 is large (the error amplification that fdlibm avoids by splitting x).
// The other cases by erf = 1 - erfc, erfc = 1 - erf (never cancelling more than 2.7 bits) and
// erfc(-x) = 2 - erfc(x). erf(x) = +-1 for |x| >= 6; erfc(x) = 0 for x >= 27.3.
//@generated nm_fm_erf_poly
constant ulong nm_fm_erf_poly[21] = {
    0x48375D410A6DB447UL, 0xCFDB1729F90C327CUL, 0x1CE2F21A042BE1B6UL, 0xF23E98E76BBA5791UL,
    0x05596F3439A94FB9UL, 0xFE3FD24BFFBF47A7UL, 0x007E68C9BE6E26DEUL, 0xFFE0B2DA3C1F3D15UL,
    0x0006E79B27719469UL, 0xFFFEA08BD13BC18EUL, 0x00003F98AE40C498UL, 0xFFFFF571473F1D16UL,
    0x0000019E6AD5E55AUL, 0xFFFFFFC4F75869E7UL, 0x00000007DA0EB92AUL, 0xFFFFFFFF05487C73UL,
    0x000000001D70B353UL, 0xFFFFFFFFFCBBFF0AUL, 0x000000000057DE46UL, 0xFFFFFFFFFFF7399CUL,
    0x000000000000D5AEUL,
};
//@end
//@generated nm_fm_erfc_poly
constant ulong nm_fm_erfc_poly[96] = {
    0x1CA26F5533DCBCE9UL, 0xFD658D9091E95208UL, 0x001F20950DED035FUL, 0x00052FD1AD3D4B18UL,
    0xFFFE046F3E5F2DE0UL, 0x000066D597BBCFDDUL, 0xFFFFF0E4161BE817UL, 0x00000165A7A1D967UL,
    0x0000000E7B80713DUL, 0xFFFFFFEEDBC2FDF9UL, 0x000000053ECDBFE3UL, 0xFFFFFFFED5534FF5UL,
    0x00000000355E7B82UL, 0xFFFFFFFFF8B2000FUL, 0x00000000006DF2BAUL, 0x0000000000234D68UL,
    0x1F545FC65DE775DDUL, 0xFD412F673D60A250UL, 0xFFFEACA4F9DAD56FUL, 0x00127549B0900AA6UL,
    0xFFFB016AEACCB7C1UL, 0x0000CB29B494C76DUL, 0xFFFFF5ABF7E1B731UL, 0xFFFFF9BDCFEF6E06UL,
    0x000002DDB6A86C57UL, 0xFFFFFF3C8878E7F2UL, 0x00000023C2D14E4EUL, 0xFFFFFFFD0F660E5EUL,
    0xFFFFFFFF00FB6611UL, 0x00000000A01A1D84UL, 0xFFFFFFFFC7A60497UL, 0x000000000D964307UL,
    0x21592E70D56A120FUL, 0xFEB60236E581822BUL, 0xFFF03C4D7F933385UL, 0x0004B8BB484FC2D5UL,
    0xFFFF86879780E1B4UL, 0x000002293CE95BE9UL, 0x0000019EE726CCFFUL, 0xFFFFFFA5AA30AD86UL,
    0x0000000A5648A4E9UL, 0xFFFFFFFFAF97C6A7UL, 0xFFFFFFFFD62C2A9BUL, 0x000000000BD65417UL,
    0xFFFFFFFFFE23DA2BUL, 0x000000000029B68DUL, 0x0000000000025E3FUL, 0xFFFFFFFFFFFE4228UL,
    0x228E362E2DBEC249UL, 0xFEE597F885003C55UL, 0xFFDF4487BB550F89UL, 0x000685353C30BFD0UL,
    0xFFFFA3284DF81F0FUL, 0xFFFFEEE144C201E9UL, 0x00000513DFACC9E7UL, 0xFFFFFF7103258193UL,
    0xFFFFFFFA20A47D35UL, 0x00000005A1AB4E66UL, 0xFFFFFFFED7E132CDUL, 0x0000000018EF73D7UL,
    0x00000000042D2341UL, 0xFFFFFFFFFDE98443UL, 0x00000000006AEC6BUL, 0xFFFFFFFFFFF73121UL,
    0x2381176552417A3DUL, 0xFF3B9A5BB4A02F7EUL, 0xFFCA894B50850F45UL, 0x0006D7FCE19D049DUL,
    0x000053149B16CACAUL, 0xFFFFC9F3462AC772UL, 0x00000581B7F6CED3UL, 0x000000F4D39DBFC9UL,
    0xFFFFFF9AF730FFE0UL, 0x00000009E929DA02UL, 0x00000002A1534D37UL, 0xFFFFFFFEDEEA9ED3UL,
    0x0000000023293AD0UL, 0x0000000007ABE311UL, 0xFFFFFFFFFBC88F5FUL, 0x0000000000AC1A90UL,
    0x2409BB9B2CE6E637UL, 0xFFB89E2AE601E717UL, 0xFFBA431BB08E9CEEUL, 0x000339D794CB6D74UL,
    0x000175AC301CE7BBUL, 0xFFFFD338E83B928BUL, 0xFFFFF4C6271588DFUL, 0x000002D9CEA72FB1UL,
    0x00000057C396D951UL, 0xFFFFFFCC4DCE4D79UL, 0xFFFFFFFFA9E02B38UL, 0x00000003D4E6370BUL,
    0xFFFFFFFF8BB51FD7UL, 0xFFFFFFFFBA9456E5UL, 0x000000001281BB94UL, 0x0000000003B671CAUL,
};
//@end
//@generated nm_fm_erfc_centre
constant ulong nm_fm_erfc_centre[6] = {
    0x7000000000000000UL, 0x5000000000000000UL, 0x3800000000000000UL, 0x2800000000000000UL,
    0x1800000000000000UL, 0x0800000000000000UL,
};
//@end

// erf(x) for 0 < |x| < 1, signed.
static inline nm_fm_x nm_fm_erf_small(ulong u) {
    nm_fm_x v = nm_fm_x_from_bits(u);
    int sh = -2 * v.e - 1;                                     // x^2/2 2^64
    long w = sh < 64 ? long(metal::mulhi(v.m, v.m) >> uint(sh)) : 0L;
    return nm_fm_x_mul(v, nm_fm_x_from_q62(nm_fm_horner(w, nm_fm_erf_poly, 21)));
}

// erfc(x) for 1 <= x < 27.3.
static inline nm_fm_x nm_fm_erfc_large(ulong a) {
    nm_fm_x t = nm_fm_x_div(nm_fm_x_const(NM_F64_SIGN, 0), nm_fm_x_from_bits(a));
    ulong tq = t.e >= 0 ? NM_F64_SIGN - 1UL : t.m >> uint(-t.e);    // t 2^63 (t = 1 as 1 - 2^-63: u < 1/2)
    uint j = tq >= 0x6000000000000000UL ? 0u : tq >= 0x4000000000000000UL ? 1u : tq >= 0x3000000000000000UL ? 2u
           : tq >= 0x2000000000000000UL ? 3u : tq >= 0x1000000000000000UL ? 4u : 5u;
    long dt = long(tq - nm_fm_erfc_centre[j]);                // (t - centre) 2^63
    long uu = dt << (j < 2u ? 3u : 4u);                        // (t - centre)/width 2^64
    long g = nm_fm_horner(uu, nm_fm_erfc_poly + 16u * j, 16);
    nm_fm_x x = nm_fm_x_from_bits(a);
    nm_f64_u128 sq = nm_fm_shl128(nm_f64_i_mul64(x.m >> 11, x.m >> 11), uint(2 * x.e + 12));   // x^2 2^116
    return nm_fm_x_mul(nm_fm_x_mul(nm_fm_exp_q116(nm_fm_neg128(sq)), nm_fm_x_from_q62(g)), t);
}

static inline nm_f64 nm_f64_erf(nm_f64 x) {
    ulong u = x.bits;
    ulong a = u & NM_F64_ABS;
    if (a > NM_F64_EXP) {
        return nm_fm_quiet(u);
    }
    if (a >= 0x4018000000000000UL) {                          // |x| >= 6: +-1
        return nm_f64_from_bits((u & NM_F64_SIGN) | NM_F64_ONE);
    }
    if (a < 0x3C90000000000000UL) {                           // |x| < 2^-54: 2x/sqrt(pi), x = 0 included
        return nm_fm_x_round(nm_fm_x_mul(nm_fm_x_from_bits(u), nm_fm_x_from_q62(long(nm_fm_erf_poly[0]))));
    }
    if (a < NM_F64_ONE) {
        return nm_fm_x_round(nm_fm_erf_small(u));
    }
    nm_fm_x v = nm_fm_x_sub(nm_fm_x_const(NM_F64_SIGN, 0), nm_fm_erfc_large(a));
    v.neg = uint(u >> 63);
    return nm_fm_x_round(v);
}

static inline nm_f64 nm_f64_erfc(nm_f64 x) {
    ulong u = x.bits;
    ulong a = u & NM_F64_ABS;
    if (a > NM_F64_EXP) {
        return nm_fm_quiet(u);
    }
    nm_fm_x one = nm_fm_x_const(NM_F64_SIGN, 0);
    if ((u >> 63) != 0UL) {
        if (a >= 0x4018000000000000UL) {                      // x <= -6: 2
            return nm_f64_from_bits(0x4000000000000000UL);
        }
        if (a >= NM_F64_ONE) {
            return nm_fm_x_round(nm_fm_x_sub(nm_fm_x_const(NM_F64_SIGN, 1), nm_fm_erfc_large(a)));
        }
    } else if (a >= 0x403B4CCCCCCCCCCDUL) {                   // x >= 27.3: 0
        return nm_f64_from_bits(0UL);
    } else if (a >= NM_F64_ONE) {
        return nm_fm_x_round(nm_fm_erfc_large(a));
    }
    if (a < 0x3C80000000000000UL) {                           // |x| < 2^-55: 1 - 2x/sqrt(pi) rounds to 1
        return nm_f64_from_bits(NM_F64_ONE);
    }
    return nm_fm_x_round(nm_fm_x_sub(one, nm_fm_erf_small(u)));
}

//@@ fm_gamma requires: fm_exp fm_log fm_trig
// gamma and lgamma. Around the zeros of lgamma: lgamma(2 + t) = t H(t) for |t| <= 1/2, H fitted by a
// degree-22 polynomial (Chebyshev interpolation, error below 2^-72); lgamma(1 + t) = lgamma(2 + t) -
// log1p(t), so both zeros keep their relative accuracy. Between 2.5 and 12 the recurrence
// Gamma(x) = (x - 1)...(x - n) Gamma(x - n) with exact factors; from 12 on Stirling's series
// (x - 1/2) log x - x + log(2 pi)/2 + sum B_2k/(2k(2k-1) x^(2k-1)), ten terms (below 2^-67 at 12). gamma
// evaluates it in Q116 fixed point from the 128-bit logarithm, so e^lgamma keeps 2^-62 up to the
// overflow at 171.62. Negative x by reflection, Gamma(x) = -pi/(x sin(pi x) Gamma(-x)) with sin(pi x)
// from the exactly reduced x - round(x); lgamma there is log(pi/|x sin(pi x)|) - lgamma(-x), accurate to
// 2^-60 absolutely, so only relatively inaccurate next to its negative zeros (as in every libm that
// does not special-case each zero). C99 results for poles: gamma(+-0) = +-inf, gamma(negative integer) =
// gamma(-inf) = NaN; lgamma of 0, of negative integers and of +-inf is +inf.
//@generated nm_fm_lgamma_poly
constant ulong nm_fm_lgamma_poly[23] = {
    0x1B0EE6072093CE17UL, 0x14A34CC4A60FA646UL, 0xFBB07FF96AA27E60UL, 0x0151322AC7D8482FUL,
    0xFF86FEC0F79C283DUL, 0x002F5BADD5B6DB60UL, 0xFFEC753A3D407087UL, 0x000859B57C313BCEUL,
    0xFFFC580567129F0DUL, 0x0001A127B1006559UL, 0xFFFF4390D20CF273UL, 0x0000560372C81B9BUL,
    0xFFFFD8686DAC6C8DUL, 0x000012598404A22EUL, 0xFFFFF77263EFEE5EUL, 0x0000040150D7A634UL,
    0xFFFFFE1DBFD62C1BUL, 0x000000E4D96094FEUL, 0xFFFFFF939D587760UL, 0x000000301D30651CUL,
    0xFFFFFFE91AA02458UL, 0x000000104DF7C55FUL, 0xFFFFFFF83164A7DDUL,
};
//@end
//@generated nm_fm_stirling_poly
constant ulong nm_fm_stirling_poly[10] = {
    0x0555555555555555UL, 0xFFFF49F49F49F49FUL, 0x000000D00D00D00DUL, 0xFFFFFFFD8FD8FD90UL,
    0x000000000DCA8F16UL, 0xFFFFFFFFFF82553DUL, 0x0000000000069069UL, 0xFFFFFFFFFFFF86F6UL,
    0x0000000000000B7FUL, 0xFFFFFFFFFFFFFE9CUL,
};
//@end

// |a| 2^116 as a signed 128-bit integer (|a| < 2^11).
static inline nm_f64_u128 nm_fm_x_to_q116(nm_fm_x a) {
    nm_f64_u128 v = a.m == 0UL ? nm_fm_u128(0UL, 0UL) : nm_fm_scale128(a.m, a.e + 53);
    return a.neg != 0u ? nm_fm_neg128(v) : v;
}

// lgamma(2 + t) for |t| <= 1/2.
static inline nm_fm_x nm_fm_lgamma2(nm_fm_x t) {
    return nm_fm_x_mul(t, nm_fm_x_from_q62(nm_fm_horner(nm_fm_x_to_fixed(t, 64), nm_fm_lgamma_poly, 23)));
}

// round(x) for 0 <= x < 2^31 (halves up).
static inline int nm_fm_nearest(ulong a) {
    int e = int(a >> 52) - 1023;
    if (e < -1) {
        return 0;
    }
    ulong m = (a & NM_F64_FRAC) | NM_F64_HIDDEN;
    return int((m + (1UL << uint(51 - e))) >> uint(52 - e));
}

static inline nm_fm_x nm_fm_x_from_int(int k) {
    return nm_fm_x_make(uint(k < 0), 63, ulong(k < 0 ? -k : k));
}

// The Stirling sum B(1/x) = sum B_2k/(2k(2k-1) x^(2k-1)) for x >= 12.
static inline nm_fm_x nm_fm_stirling_tail(nm_fm_x x) {
    nm_fm_x w = nm_fm_x_div(nm_fm_x_const(NM_F64_SIGN, 0), x);
    int sh = -2 * w.e - 8;                                     // w^2 2^70 = mulhi(m, m) 2^(2e + 8)
    long u = sh < 64 ? long(metal::mulhi(w.m, w.m) >> uint(sh)) : 0L;
    return nm_fm_x_mul(w, nm_fm_x_from_q62(nm_fm_horner(u, nm_fm_stirling_poly, 10)));
}

// lgamma(x) for x >= 12 in Q116 (x < 200).
static inline nm_f64_u128 nm_fm_stirling_q116(ulong a) {
    nm_fm_x x = nm_fm_x_from_bits(a);
    nm_fm_x2 l = nm_fm_log_core(x.m, 0UL, x.e);
    nm_fm_x hm = nm_fm_x_sub(x, nm_fm_x_const(NM_F64_SIGN, -1));
    nm_f64_u128 p = nm_f64_i_mul64(hm.m, l.hi);
    p = nm_fm_add128(p, nm_fm_u128(0UL, metal::mulhi(hm.m, l.lo)));
    nm_f64_u128 s = nm_fm_shr128(p, uint(10 - hm.e - l.e));    // (x - 1/2) log x
    s = nm_fm_sub128(s, nm_fm_fixed128(a, 116));
    s = nm_fm_add128(s, nm_fm_u128(NM_FM_HALF_LOG_2PI_Q116_HI, NM_FM_HALF_LOG_2PI_Q116_LO));
    return nm_fm_add128(s, nm_fm_x_to_q116(nm_fm_stirling_tail(x)));
}

// lgamma(x) for x >= 12 in the extended format (any finite x).
static inline nm_fm_x nm_fm_stirling_x(nm_fm_x x) {
    nm_fm_x lx = nm_fm_x2_to_x(nm_fm_log_core(x.m, 0UL, x.e));
    nm_fm_x hm = nm_fm_x_sub(x, nm_fm_x_const(NM_F64_SIGN, -1));
    nm_fm_x s = nm_fm_x_sub(nm_fm_x_mul(hm, lx), x);
    s = nm_fm_x_add(s, nm_fm_x_const(NM_FM_HALF_LOG_2PI_M, NM_FM_HALF_LOG_2PI_E));
    return nm_fm_x_add(s, nm_fm_stirling_tail(x));
}

// Gamma(x) for 0 < x < 200, unrounded.
static inline nm_fm_x nm_fm_gamma_pos(ulong a) {
    if (a >= 0x4028000000000000UL) {                          // x >= 12
        return nm_fm_exp_q116(nm_fm_stirling_q116(a));
    }
    nm_fm_x x = nm_fm_x_from_bits(a);
    nm_fm_x one = nm_fm_x_const(NM_F64_SIGN, 0);
    if (a < 0x3FE0000000000000UL) {                           // x < 1/2: Gamma(x + 2)/(x (x + 1))
        nm_fm_x g = nm_fm_exp_q116(nm_fm_x_to_q116(nm_fm_lgamma2(x)));
        return nm_fm_x_div(g, nm_fm_x_mul(x, nm_fm_x_add(x, one)));
    }
    if (a < 0x3FF8000000000000UL) {                           // x < 3/2: Gamma(x + 1)/x
        nm_fm_x g = nm_fm_exp_q116(nm_fm_x_to_q116(nm_fm_lgamma2(nm_fm_x_sub(x, one))));
        return nm_fm_x_div(g, x);
    }
    // x = k + t: Gamma(x) = (x - 1)...(x - (k - 2)) Gamma(t + 2)
    int k = nm_fm_nearest(a);
    nm_fm_x g = nm_fm_exp_q116(nm_fm_x_to_q116(nm_fm_lgamma2(nm_fm_x_sub(x, nm_fm_x_from_int(k)))));
    for (int i = 1; i <= k - 2; ++i) {
        g = nm_fm_x_mul(g, nm_fm_x_sub(x, nm_fm_x_from_int(i)));
    }
    return g;
}

// |sin(pi x)| for a non-integer |x| < 2^52, and the parity of floor(|x|).
struct nm_fm_sinpi {
    nm_fm_x s;
    uint odd;
};

static inline nm_fm_sinpi nm_fm_abs_sinpi(ulong a) {
    int e = int(a >> 52) - 1023;
    ulong m = (a & NM_F64_FRAC) | NM_F64_HIDDEN;
    nm_fm_sinpi out;
    // floor(|x|) and the fraction |x| - floor(|x|) in [0, 1), exactly
    ulong fl = e >= 0 ? m >> uint(52 - e) : 0UL;
    out.odd = uint(fl & 1UL);
    nm_fm_x f = e >= 0 ? nm_fm_x_make(0u, 11, (m << uint(e + 12)) >> 12) : nm_fm_x_from_bits(a);
    // sin(pi f) = sin(pi (1 - f)); fold to g = min(f, 1 - f) in [0, 1/2], then to r <= 1/4
    nm_fm_x one = nm_fm_x_const(NM_F64_SIGN, 0);
    nm_fm_x one_half = nm_fm_x_const(NM_F64_SIGN, -1);
    nm_fm_x g = f;
    if (f.e >= -1) {                                           // f >= 1/2
        g = nm_fm_x_sub(one, f);
    }
    nm_fm_x pi = nm_fm_x_const(NM_FM_PI_M, NM_FM_PI_E);
    if (g.e >= -2 && !(g.e == -2 && g.m == NM_F64_SIGN)) {     // g > 1/4: cos(pi (1/2 - g))
        out.s = nm_fm_cos_kernel(nm_fm_x_mul(pi, nm_fm_x_sub(one_half, g)));
    } else {
        out.s = nm_fm_sin_kernel(nm_fm_x_mul(pi, g));
    }
    return out;
}

static inline bool nm_fm_is_integer(ulong a) {
    int e = int(a >> 52) - 1023;
    if (e >= 52) {
        return true;
    }
    if (e < 0) {
        return a == 0UL;
    }
    return (a & ((1UL << uint(52 - e)) - 1UL) & NM_F64_FRAC) == 0UL;
}

static inline nm_f64 nm_f64_gamma(nm_f64 x) {
    ulong u = x.bits;
    ulong a = u & NM_F64_ABS;
    if (a > NM_F64_EXP) {
        return nm_fm_quiet(u);
    }
    if (a == 0UL) {
        return nm_f64_from_bits((u & NM_F64_SIGN) | NM_F64_EXP);
    }
    if ((u >> 63) == 0UL) {
        if (a >= 0x4065800000000000UL) {                      // x >= 172 (inf included): overflow
            return nm_f64_from_bits(NM_F64_EXP);
        }
        return nm_fm_x_round(nm_fm_gamma_pos(a));
    }
    if (a == NM_F64_EXP || nm_fm_is_integer(a)) {
        return nm_f64_from_bits(NM_F64_DEFAULT_NAN);
    }
    nm_fm_sinpi sp = nm_fm_abs_sinpi(a);
    // Gamma(x) = pi / (|x| |sin(pi x)| Gamma(|x|)) with the sign (-1)^(floor(|x|) + 1)
    ulong sign = sp.odd != 0u ? 0UL : NM_F64_SIGN;
    if (a >= 0x4067000000000000UL) {                          // x <= -184: below the subnormals
        return nm_f64_from_bits(sign);
    }
    nm_fm_x d = nm_fm_x_mul(nm_fm_x_mul(nm_fm_x_from_bits(a), sp.s), nm_fm_gamma_pos(a));
    nm_fm_x r = nm_fm_x_div(nm_fm_x_const(NM_FM_PI_M, NM_FM_PI_E), d);
    r.neg = uint(sign >> 63);
    return nm_fm_x_round(r);
}

// lgamma(x) for x > 0, unrounded.
static inline nm_fm_x nm_fm_lgamma_pos(ulong a) {
    nm_fm_x x = nm_fm_x_from_bits(a);
    nm_fm_x one = nm_fm_x_const(NM_F64_SIGN, 0);
    if (a >= 0x4028000000000000UL) {                          // x >= 12
        return nm_fm_stirling_x(x);
    }
    if (a < 0x3FE0000000000000UL) {                           // x < 1/2: lgamma(x + 2) - log x - log1p(x)
        nm_fm_x l = nm_fm_x_add(nm_fm_x2_to_x(nm_fm_log_core(x.m, 0UL, x.e)), nm_fm_x2_to_x(nm_fm_log1p_x(x)));
        return nm_fm_x_sub(nm_fm_lgamma2(x), l);
    }
    if (a < 0x3FF8000000000000UL) {                           // x < 3/2: lgamma(t + 2) - log1p(t), t = x - 1
        nm_fm_x t = nm_fm_x_sub(x, one);
        return nm_fm_x_sub(nm_fm_lgamma2(t), nm_fm_x2_to_x(nm_fm_log1p_x(t)));
    }
    int k = nm_fm_nearest(a);
    nm_fm_x t = nm_fm_x_sub(x, nm_fm_x_from_int(k));
    nm_fm_x l = nm_fm_lgamma2(t);
    if (k <= 2) {
        return l;
    }
    nm_fm_x p = nm_fm_x_sub(x, one);
    for (int i = 2; i <= k - 2; ++i) {
        p = nm_fm_x_mul(p, nm_fm_x_sub(x, nm_fm_x_from_int(i)));
    }
    return nm_fm_x_add(l, nm_fm_x2_to_x(nm_fm_log_core(p.m, 0UL, p.e)));
}

static inline nm_f64 nm_f64_lgamma(nm_f64 x) {
    ulong u = x.bits;
    ulong a = u & NM_F64_ABS;
    if (a > NM_F64_EXP) {
        return nm_fm_quiet(u);
    }
    if (a == NM_F64_EXP || a == 0UL || ((u >> 63) != 0UL && nm_fm_is_integer(a))) {
        return nm_f64_from_bits(NM_F64_EXP);
    }
    if ((u >> 63) == 0UL) {
        return nm_fm_x_round(nm_fm_lgamma_pos(a));
    }
    // log(pi / (|x| |sin(pi x)|)) - lgamma(|x|)
    nm_fm_sinpi sp = nm_fm_abs_sinpi(a);
    nm_fm_x d = nm_fm_x_mul(nm_fm_x_from_bits(a), sp.s);
    nm_fm_x l = nm_fm_x_sub(nm_fm_x_const(NM_FM_LOG_PI_M, NM_FM_LOG_PI_E), nm_fm_x2_to_x(nm_fm_log_core(d.m, 0UL, d.e)));
    return nm_fm_x_round(nm_fm_x_sub(l, nm_fm_lgamma_pos(a)));
}

//@@ fm_misc requires: f64_fmod f64_add f64_mul f64_compare f64_round
// math.remainder (IEEE 754 remainder, exact): fmod by 2|y|, then at most two exact subtractions of |y|
// choose the nearest multiple, ties to even (fdlibm's __ieee754_remainder).
static inline nm_f64 nm_f64_remainder(nm_f64 x, nm_f64 y) {
    ulong ux = x.bits;
    ulong uy = y.bits;
    if (nm_f64_i_isnan(ux) || nm_f64_i_isnan(uy)) {
        return nm_f64_from_bits(nm_f64_i_nan2(ux, uy));
    }
    ulong ax = ux & NM_F64_ABS;
    ulong ay = uy & NM_F64_ABS;
    if (ax == NM_F64_EXP || ay == 0UL) {
        return nm_f64_from_bits(NM_F64_DEFAULT_NAN);
    }
    if (ay == NM_F64_EXP) {
        return x;
    }
    nm_f64 a = nm_f64_from_bits(ax);
    nm_f64 b = nm_f64_from_bits(ay);
    if (ay < 0x7FE0000000000000UL) {                          // 2|y| is finite
        a = nm_f64_fmod(a, nm_f64_add(b, b));
    }
    if (ay < 0x0020000000000000UL) {                          // |y| < 2^-1021: compare 2a with b
        if (nm_f64_gt(nm_f64_add(a, a), b)) {
            a = nm_f64_sub(a, b);
            if (nm_f64_ge(nm_f64_add(a, a), b)) {
                a = nm_f64_sub(a, b);
            }
        }
    } else {
        nm_f64 halfway = nm_f64_mul(b, nm_f64_from_bits(0x3FE0000000000000UL));
        if (nm_f64_gt(a, halfway)) {
            a = nm_f64_sub(a, b);
            if (nm_f64_ge(a, halfway)) {
                a = nm_f64_sub(a, b);
            }
        }
    }
    return nm_f64_from_bits(a.bits ^ (ux & NM_F64_SIGN));
}

// math.modf: (fractional part, integral part), both with the sign of x; modf(+-inf) = (+-0, +-inf).
static inline nm_f64_pair nm_f64_modf(nm_f64 x) {
    nm_f64_pair out;
    out.second = nm_f64_trunc(x);
    ulong frac = nm_f64_isinf(x) ? 0UL : nm_f64_sub(x, out.second).bits;
    out.first = nm_f64_from_bits(nm_f64_i_isnan(frac) ? frac : ((frac & NM_F64_ABS) | (x.bits & NM_F64_SIGN)));
    return out;
}

// math.degrees and math.radians as Numba computes them: one multiplication by the float64 constant.
static inline nm_f64 nm_f64_degrees(nm_f64 x) {
    return nm_f64_mul(x, nm_f64_from_bits(0x404CA5DC1A63C1F8UL));   // 180/pi
}

static inline nm_f64 nm_f64_radians(nm_f64 x) {
    return nm_f64_mul(x, nm_f64_from_bits(0x3F91DF46A2529D39UL));   // pi/180
}

// math.isclose(a, b, rel_tol=, abs_tol=) as CPython computes it: equal values (infinities included) are
// close, an infinity is close to nothing else, otherwise |b - a| <= max(rel_tol |b|, rel_tol |a|, abs_tol)
// (NaN is close to nothing). Negative tolerances, which CPython refuses with ValueError, are used as given.
static inline bool nm_f64_math_isclose(nm_f64 a, nm_f64 b, nm_f64 rel_tol, nm_f64 abs_tol) {
    if (nm_f64_eq(a, b)) {
        return true;
    }
    if (nm_f64_isinf(a) || nm_f64_isinf(b)) {
        return false;
    }
    nm_f64 diff = nm_f64_abs(nm_f64_sub(b, a));
    return nm_f64_le(diff, nm_f64_abs(nm_f64_mul(rel_tol, b))) || nm_f64_le(diff, nm_f64_abs(nm_f64_mul(rel_tol, a))) ||
           nm_f64_le(diff, abs_tol);
}

// np.isclose(x, y, rtol, atol, equal_nan) for scalars, as Numba computes it:
// |x - y| <= atol + rtol |y|, infinities close only to themselves, NaN to NaN only with equal_nan.
static inline bool nm_f64_isclose(nm_f64 x, nm_f64 y, nm_f64 rtol, nm_f64 atol, bool equal_nan) {
    if (nm_f64_isnan(x) && nm_f64_isnan(y)) {
        return equal_nan;
    }
    if (nm_f64_isinf(x) && nm_f64_isinf(y)) {
        return (x.bits >> 63) == (y.bits >> 63);
    }
    if (nm_f64_isinf(x) || nm_f64_isinf(y)) {
        return false;
    }
    return nm_f64_le(nm_f64_abs(nm_f64_sub(x, y)), nm_f64_add(atol, nm_f64_mul(rtol, nm_f64_abs(y))));
}

//@@ fm_round requires: f64_base
// round(x, ndigits) as CPython's float round (Objects/floatobject.c): x rounded to the nearest multiple of
// 10^-ndigits, ties to the even multiple, judged on x's exact binary value (CPython's dtoa in mode 3),
// then to the nearest float64 (CPython's strtod); NaN and infinities unchanged; ndigits > 323 gives x and
// ndigits < -308 gives +-0, as CPython. Exact integer arithmetic: with x = m 2^e, the multiple is
// N = round(m 5^nd / 2^-(e+nd)) (nd >= 0) or round(m 2^e / 10^-nd) (nd < 0), and the result N / 10^nd
// rounded once (a 128-bit dividend divided by 5^nd, or the 128-bit product N 5^-nd, with a sticky bit).
// Shortcuts that are exact for every ndigits: x already a multiple of 10^-ndigits, or 10^-ndigits below
// half of x's ulp (the result is x); |x| below half of 10^-ndigits (the result is +-0). |ndigits| <= 22
// (5^22 < 2^52) computes in 128-bit integers; beyond, 1280-bit ones (nm_fm_round_big). Where CPython
// raises OverflowError the result is infinite.
// (hi, lo) / d for d < 2^56, by bytes: the quotient (which the caller knows is below 2^64) and remainder.
static inline nm_f64_u128 nm_fm_divmod128(nm_f64_u128 n, ulong d) {
    ulong q = 0UL;
    ulong r = 0UL;
    for (int i = 15; i >= 0; --i) {
        ulong byte = ((i >= 8 ? n.hi >> (8 * (i - 8)) : n.lo >> (8 * i)) & 0xFFUL);
        r = (r << 8) | byte;
        q = (q << 8) | (r / d);
        r = r % d;
    }
    nm_f64_u128 out;
    out.hi = q;
    out.lo = r;
    return out;
}

static inline int nm_fm_bitlen(ulong v) {
    return 64 - int(metal::clz(v));
}

// 5^n for 0 <= n <= 22.
static inline ulong nm_fm_pow5(int n) {
    ulong p = 1UL;
    for (int i = 0; i < n; ++i) {
        p *= 5UL;
    }
    return p;
}

// True if n log2(10) > t (n >= 0; never equal: 10^n is no power of two for n >= 1). 32-bit fixed point
// suffices: for n <= 1100, n log2(10) stays more than 1e-3 from every integer.
static inline bool nm_fm_log2_10_times_above(long n, long t) {
    if (t < 0) {
        return true;
    }
    return ulong(n) * 14267572527UL > (ulong(t) << 32);
}

// sign | (n / f) 2^scale rounded once, for 1 <= n < 2^56 and odd 1 <= f < 2^52.
static inline ulong nm_fm_div_round(ulong sign, ulong n, ulong f, int scale) {
    int s = 63 - (nm_fm_bitlen(n) - 1) + (nm_fm_bitlen(f) - 1);   // n 2^s / f in (2^62, 2^64)
    nm_f64_u128 num;
    num.hi = s >= 64 ? n << (s - 64) : (s == 0 ? 0UL : n >> (64 - s));
    num.lo = s >= 64 ? 0UL : n << s;
    nm_f64_u128 qr = nm_fm_divmod128(num, f);
    ulong q = qr.hi | ulong(qr.lo != 0UL);
    if ((q >> 63) != 0UL) {
        q = (q >> 1) | (q & 1UL);
        s -= 1;
    }
    return nm_f64_i_round_pack(sign, 1084 + scale - s, q);
}

// sign | p 2^scale rounded once, for 0 < p < 2^126.
static inline ulong nm_fm_pack128(ulong sign, nm_f64_u128 p, int scale) {
    int top = p.hi != 0UL ? 63 + nm_fm_bitlen(p.hi) : nm_fm_bitlen(p.lo) - 1;   // index of the top bit
    int t = top - 62;
    ulong q = t <= 0 ? p.lo << (-t) : (p.hi << (64 - t)) | (p.lo >> t) | ulong((p.lo << (64 - t)) != 0UL);
    return nm_f64_i_round_pack(sign, 1084 + t + scale, q);
}

// Beyond 22 digits: the same arithmetic on 1280-bit integers (40 little-endian 32-bit limbs, in thread
// memory), for the few values the shortcuts leave (|x| within 2^54 of 10^-ndigits in scale). Quotients
// below 2^64 are found bit by bit with products and comparisons.
#define NM_FM_LIMBS 40

static inline uint nm_fm_bn_limb(thread const uint* a, int i) {
    return i >= 0 && i < NM_FM_LIMBS ? a[i] : 0u;
}

// a = v 2^shift (0 <= shift < 32 * (NM_FM_LIMBS - 2)).
static inline void nm_fm_bn_shifted(thread uint* a, ulong v, int shift) {
    for (int i = 0; i < NM_FM_LIMBS; ++i) {
        a[i] = 0u;
    }
    int w = shift >> 5;
    int b = shift & 31;
    ulong lo = v << b;
    ulong hi = b == 0 ? 0UL : v >> (64 - b);
    a[w] = uint(lo);
    a[w + 1] = uint(lo >> 32);
    a[w + 2] = uint(hi);
}

static inline void nm_fm_bn_mul32(thread uint* a, uint v) {
    ulong carry = 0UL;
    for (int i = 0; i < NM_FM_LIMBS; ++i) {
        ulong t = ulong(a[i]) * ulong(v) + carry;
        a[i] = uint(t);
        carry = t >> 32;
    }
}

// out = a v (the product fits).
static inline void nm_fm_bn_mul64(thread uint* out, thread const uint* a, ulong v) {
    ulong carry = 0UL;
    for (int i = 0; i < NM_FM_LIMBS; ++i) {
        ulong t = ulong(a[i]) * (v & 0xFFFFFFFFUL) + carry;
        out[i] = uint(t);
        carry = t >> 32;
    }
    carry = 0UL;
    for (int i = 0; i + 1 < NM_FM_LIMBS; ++i) {
        ulong t = ulong(a[i]) * (v >> 32) + ulong(out[i + 1]) + carry;
        out[i + 1] = uint(t);
        carry = t >> 32;
    }
}

static inline int nm_fm_bn_cmp(thread const uint* a, thread const uint* b) {
    for (int i = NM_FM_LIMBS - 1; i >= 0; --i) {
        if (a[i] != b[i]) {
            return a[i] < b[i] ? -1 : 1;
        }
    }
    return 0;
}

// The index of the top set bit (-1 for zero).
static inline int nm_fm_bn_top(thread const uint* a) {
    for (int i = NM_FM_LIMBS - 1; i >= 0; --i) {
        if (a[i] != 0u) {
            return 32 * i + 31 - int(metal::clz(a[i]));
        }
    }
    return -1;
}

// Bits [k, k + 64) of a, and whether any bit below k is set.
static inline ulong nm_fm_bn_bits64(thread const uint* a, int k) {
    int w = k >> 5;
    int b = k & 31;
    ulong low = ulong(nm_fm_bn_limb(a, w)) | (ulong(nm_fm_bn_limb(a, w + 1)) << 32);
    return b == 0 ? low : (low >> b) | (ulong(nm_fm_bn_limb(a, w + 2)) << (64 - b));
}

static inline bool nm_fm_bn_any_below(thread const uint* a, int k) {
    int w = k >> 5;
    for (int i = 0; i < w && i < NM_FM_LIMBS; ++i) {
        if (a[i] != 0u) {
            return true;
        }
    }
    return (k & 31) != 0 && (nm_fm_bn_limb(a, w) & ((1u << (k & 31)) - 1u)) != 0u;
}

static inline void nm_fm_bn_pow5(thread uint* a, int n) {
    nm_fm_bn_shifted(a, 1UL, 0);
    for (; n >= 13; n -= 13) {
        nm_fm_bn_mul32(a, 1220703125u);   // 5^13
    }
    nm_fm_bn_mul32(a, uint(nm_fm_pow5(n)));
}

// floor(num / d), known to be below 2^64; tmp is scratch.
static inline ulong nm_fm_bn_quotient(thread const uint* num, thread const uint* d, thread uint* tmp) {
    ulong q = 0UL;
    for (int bit = 63; bit >= 0; --bit) {
        ulong t = q | (1UL << bit);
        nm_fm_bn_mul64(tmp, d, t);
        if (nm_fm_bn_cmp(tmp, num) <= 0) {
            q = t;
        }
    }
    return q;
}

// round(x, nd) for 22 < |nd| where no shortcut applies: x = m 2^e, x 10^nd < 2^54.
static inline ulong nm_fm_round_big(ulong sign, ulong m, int e, int nd) {
    uint d[NM_FM_LIMBS];
    uint num[NM_FM_LIMBS];
    uint tmp[NM_FM_LIMBS];
    if (nd > 0) {
        nm_fm_bn_pow5(d, nd);
        nm_fm_bn_mul64(num, d, m);              // x 10^nd = num / 2^k
        int k = -(e + nd);
        if (k > nm_fm_bn_top(num) + 1) {
            return sign;                         // below 1/2
        }
        ulong n = nm_fm_bn_bits64(num, k);
        bool round_bit = ((nm_fm_bn_bits64(num, k - 1) & 1UL) != 0UL);
        bool sticky = nm_fm_bn_any_below(num, k - 1);
        n += ulong(round_bit && (sticky || (n & 1UL) != 0UL));
        if (n == 0UL) {
            return sign;
        }
        // n / 5^nd 2^-nd: the quotient of n 2^s by 5^nd in (2^62, 2^64), a sticky bit from the remainder
        int s = 63 - (nm_fm_bitlen(n) - 1) + nm_fm_bn_top(d);
        nm_fm_bn_shifted(num, n, s);
        ulong q = nm_fm_bn_quotient(num, d, tmp);
        nm_fm_bn_mul64(tmp, d, q);
        q |= ulong(nm_fm_bn_cmp(tmp, num) != 0);
        if ((q >> 63) != 0UL) {
            q = (q >> 1) | (q & 1UL);
            s -= 1;
        }
        return nm_f64_i_round_pack(sign, 1084 - nd - s, q);
    }
    int q10 = -nd;                              // x / 10^q10 = m 2^(e - q10) / 5^q10
    nm_fm_bn_pow5(d, q10);
    int shift = e - q10;
    nm_fm_bn_shifted(num, m, shift > 0 ? shift : 0);
    for (int sh = shift < 0 ? -shift : 0; sh > 0; sh -= 31) {
        nm_fm_bn_mul32(d, 1u << metal::min(sh, 31));
    }
    ulong n = nm_fm_bn_quotient(num, d, tmp);
    nm_fm_bn_mul64(tmp, d, 2UL * n + 1UL);      // against (n + 1/2) d: half-even
    nm_fm_bn_mul32(num, 2u);
    int c = nm_fm_bn_cmp(num, tmp);
    n += ulong(c > 0 || (c == 0 && (n & 1UL) != 0UL));
    if (n == 0UL) {
        return sign;
    }
    nm_fm_bn_pow5(d, q10);
    nm_fm_bn_mul64(num, d, n);                  // the result is num 2^q10, rounded once
    int t = nm_fm_bn_top(num) - 62;
    ulong top64 = t <= 0 ? nm_fm_bn_bits64(num, 0) << (-t) : nm_fm_bn_bits64(num, t) | ulong(nm_fm_bn_any_below(num, t));
    return nm_f64_i_round_pack(sign, 1084 + t + q10, top64);
}

static inline nm_f64 nm_f64_round_ndigits(nm_f64 x, long nd) {
    ulong u = x.bits;
    ulong sign = u & NM_F64_SIGN;
    int biased = int(u >> 52) & 0x7FF;
    if (biased == 0x7FF && (u & NM_F64_FRAC) != 0UL) {
        return nm_f64_from_bits(u | NM_F64_QUIET);   // a NaN, quieted as NumPy's np.round returns it
    }
    if (biased == 0x7FF || (u & NM_F64_ABS) == 0UL || nd > 323) {
        return x;
    }
    if (nd < -308) {
        return nm_f64_from_bits(sign);
    }
    ulong m = u & NM_F64_FRAC;
    int e = -1074;
    if (biased != 0) {
        m |= NM_F64_HIDDEN;
        e = biased - 1075;
    }
    int top = e + nm_fm_bitlen(m) - 1;          // 2^top <= |x| < 2^(top + 1)
    int exact_e = e + int(metal::ctz(m));       // x = odd 2^exact_e
    if (nd >= 0) {
        if (long(exact_e) + nd >= 0 || nm_fm_log2_10_times_above(nd, 53 - top)) {
            return x;                            // a multiple of 10^-nd, or 10^-nd below half an ulp
        }
        if (nd > 22) {
            return nm_f64_from_bits(nm_fm_round_big(sign, m, e, int(nd)));
        }
        ulong f = nm_fm_pow5(int(nd));
        nm_f64_u128 p;                           // m 5^nd < 2^105
        p.lo = m * f;
        p.hi = metal::mulhi(m, f);
        int k = -(e + int(nd));                 // x 10^nd = p / 2^k, k >= 1
        if (k >= 107) {
            return nm_f64_from_bits(sign);       // below 1/2
        }
        ulong n;
        bool above_half;
        bool at_half;
        if (k < 64) {                           // (x 10^nd < 2^54 here: n fits)
            n = (p.lo >> k) | (p.hi << (64 - k));
            ulong rest = p.lo & ((1UL << k) - 1UL);
            ulong halfway = 1UL << (k - 1);
            above_half = rest > halfway;
            at_half = rest == halfway;
        } else {
            n = k == 64 ? p.hi : p.hi >> (k - 64);
            ulong rest_hi = k == 64 ? 0UL : p.hi & ((1UL << (k - 64)) - 1UL);
            ulong half_hi = k == 64 ? 0UL : 1UL << (k - 65);
            if (k == 64) {
                above_half = p.lo > NM_F64_SIGN;
                at_half = p.lo == NM_F64_SIGN;
            } else {
                above_half = rest_hi > half_hi || (rest_hi == half_hi && p.lo != 0UL);
                at_half = rest_hi == half_hi && p.lo == 0UL;
            }
        }
        n += ulong(above_half || (at_half && (n & 1UL) != 0UL));
        if (n == 0UL) {
            return nm_f64_from_bits(sign);
        }
        return nm_f64_from_bits(nm_fm_div_round(sign, n, f, -int(nd)));
    }
    long q = -nd;
    if (q > 22) {
        if (nm_fm_log2_10_times_above(q, top + 2)) {
            return nm_f64_from_bits(sign);       // |x| < 2^(top + 1) <= 10^q / 2
        }
        if (!nm_fm_log2_10_times_above(q, top - 54)) {
            return x;                            // |x| / 10^q >= 2^54: 10^q below a quarter of an ulp
        }
        return nm_f64_from_bits(nm_fm_round_big(sign, m, e, int(nd)));
    }
    ulong f = nm_fm_pow5(int(q));
    ulong n;
    int shift = e - int(q);                     // |x| / 10^q = m 2^shift / 5^q
    if (shift >= 0) {
        if (nm_fm_bitlen(m) + shift - nm_fm_bitlen(f) >= 56) {
            return x;                            // |x| / 10^q >= 2^54: 10^q below a quarter of an ulp
        }
        nm_f64_u128 num;                         // m 2^shift < 2^(56 + 52 + 1)
        num.hi = shift >= 64 ? m << (shift - 64) : (shift == 0 ? 0UL : m >> (64 - shift));
        num.lo = shift >= 64 ? 0UL : m << shift;
        nm_f64_u128 qr = nm_fm_divmod128(num, f);
        n = qr.hi + ulong(qr.lo > f - qr.lo);   // f is odd: no ties
    } else {
        if (nm_fm_bitlen(f) - shift > 63) {
            return nm_f64_from_bits(sign);       // m / (5^q 2^-shift) < 2^53 / 2^63
        }
        ulong d = f << (-shift);
        n = m / d;
        ulong r = m % d;
        n += ulong(r > d - r || (r == d - r && (n & 1UL) != 0UL));
    }
    if (n == 0UL) {
        return nm_f64_from_bits(sign);
    }
    nm_f64_u128 p;                               // n 5^q < 2^109; the result is p 2^q
    p.lo = n * f;
    p.hi = metal::mulhi(n, f);
    return nm_f64_from_bits(nm_fm_pack128(sign, p, int(q)));
}
