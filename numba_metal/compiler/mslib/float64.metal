// numba-metal float64 library: IEEE 754 binary64 computed in software with 32- and 64-bit integer
// operations, for Apple GPUs, which have no double precision.
//
// Every operation rounds to nearest, ties to even, keeps subnormals (nothing is flushed) and gives the
// bit pattern NumPy's float64 gives on the CPU. The entry points, their MSL types and their meaning
// are listed, one row each, in float64_ops.py next to this file (the compiler's tables refer to that
// list; tests/float64/ checks that the two agree and that every row is bit-exact against NumPy).
//
// Sections start with `//@@ name requires: dep ...` as in prelude.metal, so a kernel includes only the
// sections it uses. Plain MSL (C++14 subset): no double, no 128-bit integers, no templates, no
// recursion, no goto, no function pointers, no static locals, no program-scope tables; shift counts
// always lie in [0, width) because MSL masks them and C++ leaves larger counts undefined.
//
// Representation. A float64 is `struct nm_f64 { ulong bits; }`: its IEEE binary64 bit pattern, so a
// float64 array element is read in place (8 bytes, as a ulong or as two uint halves for SIMD
// shuffles), and the struct cannot be mixed with integers by accident (no arithmetic, no implicit
// conversion). Apple GPUs have 32-bit registers: a ulong is a register pair, the high word (sign,
// exponent, top fraction bits) is a free register selection, and the compiler expands 64-bit adds
// (~4 instructions) and shifts. Measured costs (philipturner/metal-benchmarks, Apple 7/8, cycles of
// throughput): 32x32->64 multiply 8, 64x64->64 multiply 16, mulhi(ulong) 22, 64-bit add 4.7. A
// full 106-bit significand product as `a * b` plus `metal::mulhi(a, b)` therefore costs ~38 cycles,
// less than four 32x32->64 partial products (32) plus the 64-bit carry additions that combine them
// (~25); the reciprocal and square-root iterations work on 32-bit quantities and use 32x32->64
// products.
//
// Structure (after Berkeley SoftFloat 3e, J. R. Hauser): unpack, a fast path for normal operands, a
// slow path for zeros, subnormals, infinities and NaN, then one rounding step. Internally a
// significand `sig` carries its leading one at bit 62 and 10 bits below the result's last place;
// bits shifted out are ORed into bit 0 ("jamming", a sticky bit), so rounding to nearest-even sees
// whether the discarded part is below, at or above one half. `exp` is the biased exponent minus one,
// so packing adds sig >> 10 (whose bit 52 is the hidden one) to exp << 52.
//
// Division and square root: Newton-Raphson on 32-bit fixed point from a linear seed, one more
// Newton step in 64-bit, a quotient (or root) that is provably at most one unit off, and an exact
// integer remainder that corrects it and gives the sticky bit. The error budgets are stated
// at each function and checked exhaustively over every 32-bit seed input by
// tests/float64/long_run.py. References: J.-M. Muller et al., Handbook of Floating-Point Arithmetic,
// 2nd ed. (2018), ch. 4-5 and 7-8; P. Markstein, IA-64 and Elementary Functions (2000), ch. 8;
// N. Moller and T. Granlund, Improved division by invariant integers, IEEE Trans. Computers 60(2),
// 2011 (an under-estimated reciprocal whose quotient is fixed by a remainder computed modulo 2^64).
//
// NaN results (IEEE 754 leaves payloads open; these are x86's rules, which NumPy's results follow on
// x86): an operation with NaN operands returns the first NaN operand, quieted (quiet bit 51 set, the
// rest of the payload and the sign kept); an invalid operation (inf - inf, 0 * inf, 0 / 0,
// inf / inf, sqrt(-1), fmod(inf, y), fmod(x, 0)) returns the default NaN 0xFFF8000000000000.
// Sign and selection operations (neg, abs, copysign, min/max) and frexp/ldexp never change a payload.
// float16 NaNs follow NumPy's conversion: payload truncated or shifted, quiet bit not forced.
//
// Float to integer (nm_f64_to_i8 ... nm_f64_to_u64): truncation toward zero; NaN and out-of-range
// values give what Numba's njit gives on Apple silicon (AArch64 fcvtzs/fcvtzu): NaN -> 0, 32- and
// 64-bit targets saturate (unsigned: negative -> 0), 8- and 16-bit targets take the low bits of the
// saturated int32. (On x86 njit returns the "integer indefinite" INT_MIN instead, and AVX-512 all
// ones for unsigned; both are undefined behaviour in Numba's LLVM IR.) See docs/limitations.md.

//@@ f64_base
#define NM_F64_SIGN 0x8000000000000000UL
#define NM_F64_ABS 0x7FFFFFFFFFFFFFFFUL
#define NM_F64_EXP 0x7FF0000000000000UL
#define NM_F64_FRAC 0x000FFFFFFFFFFFFFUL
#define NM_F64_HIDDEN 0x0010000000000000UL
#define NM_F64_QUIET 0x0008000000000000UL
#define NM_F64_DEFAULT_NAN 0xFFF8000000000000UL
#define NM_F64_ONE 0x3FF0000000000000UL

struct nm_f64 {
    ulong bits;
};

// divmod's (quotient, remainder).
struct nm_f64_pair {
    nm_f64 first;
    nm_f64 second;
};

// frexp's (mantissa, exponent).
struct nm_f64_frexp_result {
    nm_f64 mantissa;
    int exponent;
};

static inline nm_f64 nm_f64_from_bits(ulong bits) {
    nm_f64 r;
    r.bits = bits;
    return r;
}

static inline ulong nm_f64_to_bits(nm_f64 x) {
    return x.bits;
}

static inline nm_f64 nm_f64_from_words(uint lo, uint hi) {
    return nm_f64_from_bits((ulong(hi) << 32) | ulong(lo));
}

static inline uint nm_f64_lo_word(nm_f64 x) {
    return uint(x.bits);
}

static inline uint nm_f64_hi_word(nm_f64 x) {
    return uint(x.bits >> 32);
}

static inline bool nm_f64_isnan(nm_f64 x) {
    return (x.bits & NM_F64_ABS) > NM_F64_EXP;
}

static inline bool nm_f64_isinf(nm_f64 x) {
    return (x.bits & NM_F64_ABS) == NM_F64_EXP;
}

static inline bool nm_f64_isfinite(nm_f64 x) {
    return (x.bits & NM_F64_EXP) != NM_F64_EXP;
}

static inline bool nm_f64_signbit(nm_f64 x) {
    return (x.bits >> 63) != 0UL;
}

// Python's truth value: everything but +-0 is true (NaN too).
static inline bool nm_f64_truth(nm_f64 x) {
    return (x.bits << 1) != 0UL;
}

static inline nm_f64 nm_f64_neg(nm_f64 x) {
    return nm_f64_from_bits(x.bits ^ NM_F64_SIGN);
}

static inline nm_f64 nm_f64_abs(nm_f64 x) {
    return nm_f64_from_bits(x.bits & NM_F64_ABS);
}

static inline nm_f64 nm_f64_copysign(nm_f64 x, nm_f64 y) {
    return nm_f64_from_bits((x.bits & NM_F64_ABS) | (y.bits & NM_F64_SIGN));
}

static inline bool nm_f64_i_isnan(ulong u) {
    return (u & NM_F64_ABS) > NM_F64_EXP;
}

// The first NaN of (a, b), quieted.
static inline ulong nm_f64_i_nan2(ulong a, ulong b) {
    return (nm_f64_i_isnan(a) ? a : b) | NM_F64_QUIET;
}

static inline uint nm_f64_i_clz(ulong a) {
    return uint(metal::clz(a));
}

// a >> dist for any dist, with the bits shifted out ORed into bit 0.
static inline ulong nm_f64_i_shr_jam(ulong a, uint dist) {
    uint d = metal::min(dist, 63u);
    ulong lost = a & ((1UL << d) - 1UL);
    ulong r = (a >> d) | ulong(lost != 0UL);
    return dist < 64u ? r : ulong(a != 0UL);
}

// A 128-bit unsigned value.
struct nm_f64_u128 {
    ulong hi;
    ulong lo;
};

static inline nm_f64_u128 nm_f64_i_mul64(ulong a, ulong b) {
    nm_f64_u128 r;
    r.hi = metal::mulhi(a, b);
    r.lo = a * b;
    return r;
}

// Rounds to nearest even and packs sign | exp, sig (conventions at the top of the file). exp may be
// out of range: below 0 the result is subnormal (sig is shifted right, jamming, and rounded once),
// above 0x7FC it may overflow to infinity. A sig whose leading one is below bit 62 is only valid
// with exp == 0 (an exact subnormal).
static inline ulong nm_f64_i_round_pack(ulong sign, int exp, ulong sig) {
    if (uint(exp) >= 0x7FDu) {
        if (exp < 0) {
            sig = nm_f64_i_shr_jam(sig, uint(-exp));
            exp = 0;
        } else if (exp > 0x7FD || sig + 0x200UL >= NM_F64_SIGN) {
            return sign | NM_F64_EXP;
        }
    }
    uint round_bits = uint(sig) & 0x3FFu;
    sig = (sig + 0x200UL) >> 10;
    sig &= ~ulong(round_bits == 0x200u);
    return sign + (ulong(exp) << 52) + sig;
}

// round_pack for a nonzero sig with bit 63 clear whose leading one may be anywhere.
static inline ulong nm_f64_i_norm_round_pack(ulong sign, int exp, ulong sig) {
    int shift = int(nm_f64_i_clz(sig)) - 1;
    exp -= shift;
    if (shift >= 10 && uint(exp) < 0x7FDu) {
        return sign + (ulong(exp) << 52) + (sig << uint(shift - 10));
    }
    return nm_f64_i_round_pack(sign, exp, sig << uint(shift));
}

// A nonzero subnormal's fraction with its leading one moved to bit 52 (the hidden bit), and the
// biased exponent (<= 0) that keeps its value.
struct nm_f64_i_norm {
    int exp;
    ulong sig;
};

static inline nm_f64_i_norm nm_f64_i_normalize_subnormal(ulong frac) {
    uint shift = nm_f64_i_clz(frac) - 11u;
    nm_f64_i_norm r;
    r.exp = 1 - int(shift);
    r.sig = frac << shift;
    return r;
}

//@@ f64_add requires: f64_base
// a + (b with its sign flipped when flip is NM_F64_SIGN). NaN operands propagate unflipped.
static inline ulong nm_f64_i_add(ulong ua, ulong ub, ulong flip) {
    ulong ubs = ub ^ flip;
    int exp_a = int(ua >> 52) & 0x7FF;
    int exp_b = int(ubs >> 52) & 0x7FF;
    ulong sign_a = ua & NM_F64_SIGN;
    ulong sign_b = ubs & NM_F64_SIGN;
    ulong sig_a = ua & NM_F64_FRAC;
    ulong sig_b = ubs & NM_F64_FRAC;
    if (exp_a == 0x7FF || exp_b == 0x7FF) {
        if (nm_f64_i_isnan(ua) || nm_f64_i_isnan(ub)) {
            return nm_f64_i_nan2(ua, ub);
        }
        if (exp_a == 0x7FF) {
            return (exp_b == 0x7FF && sign_a != sign_b) ? NM_F64_DEFAULT_NAN : ua;
        }
        return ubs;
    }
    int diff = exp_a - exp_b;
    if (sign_a == sign_b) {
        if (diff == 0) {
            if (exp_a == 0) {
                // Two subnormals (or zeros): the fraction sum is exact and carries into the exponent.
                return ua + sig_b;
            }
            return nm_f64_i_round_pack(sign_a, exp_a, (NM_F64_HIDDEN + NM_F64_HIDDEN + sig_a + sig_b) << 9);
        }
        if (diff < 0) {
            ulong t = sig_a;
            sig_a = sig_b;
            sig_b = t;
            int e = exp_a;
            exp_a = exp_b;
            exp_b = e;
            diff = -diff;
        }
        // The leading one at bit 61; a subnormal B counts with exponent 1, i.e. doubled at exponent 0.
        sig_a = (sig_a | NM_F64_HIDDEN) << 9;
        sig_b = (exp_b != 0 ? (sig_b | NM_F64_HIDDEN) : (sig_b << 1)) << 9;
        ulong sum = sig_a + nm_f64_i_shr_jam(sig_b, uint(diff));
        int exp = exp_a;
        if (sum < 0x4000000000000000UL) {
            sum <<= 1;
            exp -= 1;
        }
        return nm_f64_i_round_pack(sign_a, exp, sum);
    }
    if (diff == 0) {
        // Same exponent: the hidden bits cancel and the difference is exact.
        long d = long(sig_a) - long(sig_b);
        if (d == 0) {
            return 0UL;
        }
        ulong sign = sign_a;
        if (d < 0) {
            sign ^= NM_F64_SIGN;
            d = -d;
        }
        ulong m = ulong(d);
        if (exp_a == 0) {
            return sign | m;
        }
        int shift = int(nm_f64_i_clz(m)) - 11;
        int e = exp_a - shift;
        if (e >= 1) {
            return sign | ((ulong(e - 1) << 52) + (m << uint(shift)));
        }
        return sign | (m << uint(exp_a - 1));
    }
    ulong sign = sign_a;
    if (diff < 0) {
        ulong t = sig_a;
        sig_a = sig_b;
        sig_b = t;
        int e = exp_a;
        exp_a = exp_b;
        exp_b = e;
        diff = -diff;
        sign = sign_b;
    }
    sig_a = (sig_a | NM_F64_HIDDEN) << 10;
    sig_b = (exp_b != 0 ? (sig_b | NM_F64_HIDDEN) : (sig_b << 1)) << 10;
    // Cancellation of many bits only happens for diff == 1, where the shift lost at most one bit
    // into the 10 guard bits: the normalisation below is then exact.
    return nm_f64_i_norm_round_pack(sign, exp_a - 1, sig_a - nm_f64_i_shr_jam(sig_b, uint(diff)));
}

static inline nm_f64 nm_f64_add(nm_f64 a, nm_f64 b) {
    return nm_f64_from_bits(nm_f64_i_add(a.bits, b.bits, 0UL));
}

static inline nm_f64 nm_f64_sub(nm_f64 a, nm_f64 b) {
    return nm_f64_from_bits(nm_f64_i_add(a.bits, b.bits, NM_F64_SIGN));
}

//@@ f64_mul requires: f64_base
static inline nm_f64 nm_f64_mul(nm_f64 a, nm_f64 b) {
    ulong ua = a.bits;
    ulong ub = b.bits;
    ulong sign = (ua ^ ub) & NM_F64_SIGN;
    int exp_a = int(ua >> 52) & 0x7FF;
    int exp_b = int(ub >> 52) & 0x7FF;
    ulong sig_a = ua & NM_F64_FRAC;
    ulong sig_b = ub & NM_F64_FRAC;
    if (uint(exp_a - 1) >= 0x7FEu || uint(exp_b - 1) >= 0x7FEu) {
        if (exp_a == 0x7FF || exp_b == 0x7FF) {
            if (nm_f64_i_isnan(ua) || nm_f64_i_isnan(ub)) {
                return nm_f64_from_bits(nm_f64_i_nan2(ua, ub));
            }
            if ((ua & NM_F64_ABS) == 0UL || (ub & NM_F64_ABS) == 0UL) {
                return nm_f64_from_bits(NM_F64_DEFAULT_NAN);
            }
            return nm_f64_from_bits(sign | NM_F64_EXP);
        }
        if ((ua & NM_F64_ABS) == 0UL || (ub & NM_F64_ABS) == 0UL) {
            return nm_f64_from_bits(sign);
        }
        if (exp_a == 0) {
            nm_f64_i_norm n = nm_f64_i_normalize_subnormal(sig_a);
            exp_a = n.exp;
            sig_a = n.sig;
        }
        if (exp_b == 0) {
            nm_f64_i_norm n = nm_f64_i_normalize_subnormal(sig_b);
            exp_b = n.exp;
            sig_b = n.sig;
        }
    }
    // (2^52..2^53) << 10 times (2^52..2^53) << 11: the high word holds the product's leading one
    // at bit 61 or 62, the low word only matters as a sticky bit.
    nm_f64_u128 p = nm_f64_i_mul64((sig_a | NM_F64_HIDDEN) << 10, (sig_b | NM_F64_HIDDEN) << 11);
    ulong sig = p.hi | ulong(p.lo != 0UL);
    int exp = exp_a + exp_b - 0x3FF;
    if (sig < 0x4000000000000000UL) {
        sig <<= 1;
        exp -= 1;
    }
    return nm_f64_from_bits(nm_f64_i_round_pack(sign, exp, sig));
}

//@@ f64_recip requires: f64_base
// y with 2^116/b - 87 < y <= 2^116/b, for an integer b in [2^52, 2^53).
//
// Step 1 (32-bit, depends only on bh = b >> 21): y0 ~ 2^63 / D with D = bh + 1, i.e. the reciprocal
// of d = D / 2^32 in (1/2, 1] in 32-bit fixed point with 31 fraction bits. Seed 48/17 - 32/17 d
// (relative error <= 1/17), then three Newton steps r <- r (2 - d r), each truncating, so the error
// goes 2^-4.1, 2^-8.2, 2^-16.3, then is set by truncation. Checked over all 2^31 values of bh
// (tests/float64/long_run.py): 0.1 <= 2^63/D - y0 <= 3.625 after subtracting 2. As every b of the
// class is below D 2^21, y0 <= 2^84 / b, and as b >= (D - 1) 2^21 the relative error
// e = 1 - y0 b / 2^84 <= (3.625 + 1) / 2^31 < 2^-28.79.
// Step 2 (64-bit Newton step): t = 2^84 - b y0 = 2^84 e (computed modulo 2^64; 0 <= t < 2^56), and
// y = y0 2^32 + floor(y0 t / 2^52) = (2^116 / b)(1 - e^2) - (less than 1), so
// 2^116/b - y < 2^64 e^2 + 1 < 87.
static inline uint nm_f64_i_recip32(ulong bh) {
    // Products of bh with r, plus r, give D r with D = bh + 1 without a 33-bit operand.
    uint r = uint(0x169696969UL - ((bh * 0xF0F0F0F1UL + 0xF0F0F0F1UL) >> 32));
    for (int i = 0; i < 3; ++i) {
        ulong dr = (bh * ulong(r) + ulong(r)) >> 32;          // d r, 31 fraction bits
        ulong e = 0x100000000UL - dr;                          // 2 - d r
        r = uint(metal::min((ulong(r) * e) >> 31, 0xFFFFFFFFUL));
    }
    return r - 2u;
}

static inline ulong nm_f64_i_recip(ulong b) {
    ulong y0 = ulong(nm_f64_i_recip32(b >> 21));
    ulong t = 0UL - b * y0;
    return (y0 << 32) + metal::mulhi(y0 << 12, t);
}

//@@ f64_div requires: f64_recip
// a / b for integers b in [2^52, 2^53), a in [b, 2b): the quotient floor(a 2^55 / b) in [2^55, 2^56)
// shifted to bit 62, with a sticky bit for a nonzero remainder.
// q = floor(a y / 2^61) with y from nm_f64_i_recip is at most Q = floor(a 2^55 / b) and, as
// a (2^116/b - y) / 2^61 < 2^54 * 87 / 2^61 < 1, at least Q - 1 (one correction step would do; a
// second one costs little and covers a margin of 3x in the recip error). The remainder
// a 2^55 - q b lies in [0, 3b) and is exact when computed modulo 2^64.
static inline ulong nm_f64_i_div_estimate(ulong a, ulong b) {
    return metal::mulhi(a << 3, nm_f64_i_recip(b));
}

static inline ulong nm_f64_i_div_sig(ulong a, ulong b) {
    ulong q = nm_f64_i_div_estimate(a, b);
    ulong rem = (a << 55) - q * b;
    if (rem >= b) {
        rem -= b;
        q += 1UL;
    }
    if (rem >= b) {
        rem -= b;
        q += 1UL;
    }
    return (q << 7) | ulong(rem != 0UL);
}

static inline nm_f64 nm_f64_div(nm_f64 a, nm_f64 b) {
    ulong ua = a.bits;
    ulong ub = b.bits;
    ulong sign = (ua ^ ub) & NM_F64_SIGN;
    int exp_a = int(ua >> 52) & 0x7FF;
    int exp_b = int(ub >> 52) & 0x7FF;
    ulong sig_a = ua & NM_F64_FRAC;
    ulong sig_b = ub & NM_F64_FRAC;
    if (uint(exp_a - 1) >= 0x7FEu || uint(exp_b - 1) >= 0x7FEu) {
        if (nm_f64_i_isnan(ua) || nm_f64_i_isnan(ub)) {
            return nm_f64_from_bits(nm_f64_i_nan2(ua, ub));
        }
        bool inf_a = exp_a == 0x7FF;
        bool inf_b = exp_b == 0x7FF;
        bool zero_a = (ua & NM_F64_ABS) == 0UL;
        bool zero_b = (ub & NM_F64_ABS) == 0UL;
        if ((inf_a && inf_b) || (zero_a && zero_b)) {
            return nm_f64_from_bits(NM_F64_DEFAULT_NAN);
        }
        if (inf_a || zero_b) {
            return nm_f64_from_bits(sign | NM_F64_EXP);
        }
        if (inf_b || zero_a) {
            return nm_f64_from_bits(sign);
        }
        if (exp_a == 0) {
            nm_f64_i_norm n = nm_f64_i_normalize_subnormal(sig_a);
            exp_a = n.exp;
            sig_a = n.sig;
        }
        if (exp_b == 0) {
            nm_f64_i_norm n = nm_f64_i_normalize_subnormal(sig_b);
            exp_b = n.exp;
            sig_b = n.sig;
        }
    }
    sig_a |= NM_F64_HIDDEN;
    sig_b |= NM_F64_HIDDEN;
    int exp = exp_a - exp_b + 0x3FE;
    if (sig_a < sig_b) {
        sig_a <<= 1;
        exp -= 1;
    }
    return nm_f64_from_bits(nm_f64_i_round_pack(sign, exp, nm_f64_i_div_sig(sig_a, sig_b)));
}

//@@ f64_sqrt requires: f64_base
// 1/sqrt(m) and m * 1/sqrt(m) ~ sqrt(m) for m = mh / 2^30 in [1, 4), mh the top 32 bits of A below.
// Seed c0 - c1 m (minimax relative error 2^-5.5 on [1, 2) and on [2, 4)), three Newton steps
// r <- r (3 - m r^2) / 2 in 32-bit fixed point (r with 32 fraction bits), then s = m r with 31
// fraction bits, lowered by 5 units. Checked over all 3 * 2^30 values of mh
// (tests/float64/long_run.py): s^2 <= mh 2^32 (s never exceeds sqrt(A) / 2^24); s falls short of
// sqrt(mh + 1) 2^16 by a relative eta <= 2^-28; and |r sqrt(m) / 2^32 - 1| <= 2^-29.5.
struct nm_f64_i_rsqrt {
    uint r;
    uint s;
};

static inline nm_f64_i_rsqrt nm_f64_i_rsqrt_seed(ulong mh) {
    bool low = mh < 0x80000000UL;
    ulong c0 = low ? 0x1439CF2EAUL : 0xE4D44567UL;
    ulong c1 = low ? 0x494FBE77UL : 0x19EB6AE8UL;
    ulong r = c0 - ((mh * c1) >> 30);
    for (int i = 0; i < 3; ++i) {
        ulong r2 = (r * r) >> 32;                              // r^2
        ulong h = 0xC0000000UL - ((mh * r2) >> 32);            // 3 - m r^2, 30 fraction bits
        r = metal::min((r * h) >> 31, 0xFFFFFFFFUL);           // r (3 - m r^2) / 2
    }
    nm_f64_i_rsqrt out;
    out.r = uint(r);
    out.s = uint(metal::min((mh * r) >> 31, 0xFFFFFFFFUL)) - 5u;
    return out;
}

// floor(sqrt(A)) in [2^55, 2^56) shifted to bit 62 with a sticky bit, for A = sig 2^(58 + odd),
// sig in [2^52, 2^53), odd in {0, 1}.
// With S = sqrt(A) < 2^56 and S0 = s 2^24 = S (1 - eta') (0 <= eta' <= 2^-28, as A < (mh + 1) 2^80),
// the residual A - S0^2 = 2^48 res is exact, nonnegative and below 2^85, and r / 2^32 stands for
// 2^55 / S with a relative error |e| <= 2^-29.5 + 2^-31 (the 2^-31 for m's bits below mh). Then
// S1 = S0 + floor(res r / 2^40) = S (1 - eta'^2/2 + e eta' (1 - eta'/2)) minus a truncation below 1,
// so S1 - S lies in (-1 - 0.5 - 0.47, 0.47]: S1 is floor(S) - 1, floor(S) or floor(S) + 1, and one
// step each way on the exact remainder A - S1^2 (computed modulo 2^64, |A - S1^2| < 2^58) settles it.
static inline ulong nm_f64_i_sqrt_estimate(ulong sig, uint odd) {
    nm_f64_i_rsqrt e = nm_f64_i_rsqrt_seed(sig >> (22u - odd));
    ulong s = ulong(e.s);
    ulong res = (sig << (10u + odd)) - s * s;
    return (s << 24) + metal::mulhi(res << 24, ulong(e.r));
}

static inline ulong nm_f64_i_sqrt_sig(ulong sig, uint odd) {
    ulong root = nm_f64_i_sqrt_estimate(sig, odd);
    ulong rem = (sig << (58u + odd)) - root * root;
    if (long(rem) < 0L) {
        rem += 2UL * root - 1UL;
        root -= 1UL;
    }
    if (rem > 2UL * root) {
        rem -= 2UL * root + 1UL;
        root += 1UL;
    }
    return (root << 7) | ulong(rem != 0UL);
}

static inline nm_f64 nm_f64_sqrt(nm_f64 x) {
    ulong ux = x.bits;
    int exp = int(ux >> 52) & 0x7FF;
    ulong sig = ux & NM_F64_FRAC;
    if (uint(exp - 1) >= 0x7FEu || (ux >> 63) != 0UL) {
        if (nm_f64_i_isnan(ux)) {
            return nm_f64_from_bits(ux | NM_F64_QUIET);
        }
        if ((ux & NM_F64_ABS) == 0UL) {
            return x;
        }
        if ((ux >> 63) != 0UL) {
            return nm_f64_from_bits(NM_F64_DEFAULT_NAN);
        }
        if (exp == 0x7FF) {
            return x;
        }
        nm_f64_i_norm n = nm_f64_i_normalize_subnormal(sig);
        exp = n.exp;
        sig = n.sig;
    }
    // x = sig 2^(e - 52), e = exp - 1023; sqrt(x) = sqrt(sig 2^(58 + odd)) 2^((e - odd)/2 - 55).
    int e = exp - 0x3FF;
    uint odd = uint(e & 1);
    ulong root = nm_f64_i_sqrt_sig(sig | NM_F64_HIDDEN, odd);
    return nm_f64_from_bits(nm_f64_i_round_pack(0UL, (e >> 1) + 0x3FE, root));
}

//@@ f64_fma requires: f64_mul
static inline nm_f64_u128 nm_f64_i_shr_jam128(nm_f64_u128 a, uint dist) {
    nm_f64_u128 r;
    if (dist == 0u) {
        return a;
    }
    if (dist < 64u) {
        r.hi = a.hi >> dist;
        r.lo = (a.lo >> dist) | (a.hi << (64u - dist)) | ulong((a.lo << (64u - dist)) != 0UL);
    } else {
        r.hi = 0UL;
        r.lo = nm_f64_i_shr_jam(a.hi, dist - 64u) | ulong(a.lo != 0UL);
    }
    return r;
}

static inline nm_f64_u128 nm_f64_i_shl128(nm_f64_u128 a, uint dist) {
    nm_f64_u128 r;
    if (dist == 0u) {
        return a;
    }
    if (dist < 64u) {
        r.hi = (a.hi << dist) | (a.lo >> (64u - dist));
        r.lo = a.lo << dist;
    } else {
        r.hi = a.lo << (dist - 64u);
        r.lo = 0UL;
    }
    return r;
}

// a * b + c with one rounding.
// The exact product P = sig_a sig_b 2^20 (leading one at bit 124 or 125) and C = sig_c 2^72 (leading
// one at bit 124) are aligned in a 128-bit frame: whichever has the smaller exponent is shifted
// right, jamming. The sum stays below 2^127. A difference loses many leading bits only when the
// exponents are within a couple of places, and then the shifted operand lost no bits (P has 20 and
// C 72 zero bits at the bottom); otherwise the sticky bit stays far below the rounding place.
static inline nm_f64 nm_f64_fma(nm_f64 a, nm_f64 b, nm_f64 c) {
    ulong ua = a.bits;
    ulong ub = b.bits;
    ulong uc = c.bits;
    ulong sign_p = (ua ^ ub) & NM_F64_SIGN;
    ulong sign_c = uc & NM_F64_SIGN;
    int exp_a = int(ua >> 52) & 0x7FF;
    int exp_b = int(ub >> 52) & 0x7FF;
    int exp_c = int(uc >> 52) & 0x7FF;
    ulong sig_a = ua & NM_F64_FRAC;
    ulong sig_b = ub & NM_F64_FRAC;
    ulong sig_c = uc & NM_F64_FRAC;
    if (uint(exp_a - 1) >= 0x7FEu || uint(exp_b - 1) >= 0x7FEu || uint(exp_c - 1) >= 0x7FEu) {
        if (exp_a == 0x7FF || exp_b == 0x7FF || exp_c == 0x7FF) {
            if (nm_f64_i_isnan(ua) || nm_f64_i_isnan(ub) || nm_f64_i_isnan(uc)) {
                return nm_f64_from_bits(nm_f64_i_nan2(nm_f64_i_isnan(ua) ? ua : ub, uc));
            }
            if (exp_a == 0x7FF || exp_b == 0x7FF) {
                if ((ua & NM_F64_ABS) == 0UL || (ub & NM_F64_ABS) == 0UL) {
                    return nm_f64_from_bits(NM_F64_DEFAULT_NAN);
                }
                if (exp_c == 0x7FF && sign_c != sign_p) {
                    return nm_f64_from_bits(NM_F64_DEFAULT_NAN);
                }
                return nm_f64_from_bits(sign_p | NM_F64_EXP);
            }
            return c;
        }
        if ((ua & NM_F64_ABS) == 0UL || (ub & NM_F64_ABS) == 0UL) {
            // An exact zero product: c, or a zero whose sign follows (+0) + (-0) = +0.
            if ((uc & NM_F64_ABS) == 0UL) {
                return nm_f64_from_bits(sign_p & sign_c);
            }
            return c;
        }
        if ((uc & NM_F64_ABS) == 0UL) {
            return nm_f64_mul(a, b);
        }
        if (exp_a == 0) {
            nm_f64_i_norm n = nm_f64_i_normalize_subnormal(sig_a);
            exp_a = n.exp;
            sig_a = n.sig;
        }
        if (exp_b == 0) {
            nm_f64_i_norm n = nm_f64_i_normalize_subnormal(sig_b);
            exp_b = n.exp;
            sig_b = n.sig;
        }
        if (exp_c == 0) {
            nm_f64_i_norm n = nm_f64_i_normalize_subnormal(sig_c);
            exp_c = n.exp;
            sig_c = n.sig;
        }
    }
    nm_f64_u128 p = nm_f64_i_mul64((sig_a | NM_F64_HIDDEN) << 10, (sig_b | NM_F64_HIDDEN) << 10);
    nm_f64_u128 q;
    q.hi = (sig_c | NM_F64_HIDDEN) << 8;
    q.lo = 0UL;
    // The frame's unit is 2^frame: P is worth p 2^(exp_a + exp_b - 2170); C, placed at bit 124, is
    // worth q 2^(exp_c - 1147), i.e. q 2^k in P's frame.
    int frame = exp_a + exp_b - 2170;
    int k = exp_c - exp_a - exp_b + 1023;
    if (k <= 0) {
        q = nm_f64_i_shr_jam128(q, uint(-k));
    } else {
        p = nm_f64_i_shr_jam128(p, uint(k));
        frame += k;
    }
    ulong sign = sign_p;
    nm_f64_u128 x;
    if (sign_p == sign_c) {
        x.lo = p.lo + q.lo;
        x.hi = p.hi + q.hi + ulong(x.lo < p.lo);
    } else {
        bool p_smaller = p.hi < q.hi || (p.hi == q.hi && p.lo < q.lo);
        if (p_smaller) {
            nm_f64_u128 t = p;
            p = q;
            q = t;
            sign = sign_c;
        }
        x.lo = p.lo - q.lo;
        x.hi = p.hi - q.hi - ulong(p.lo < q.lo);
        if ((x.hi | x.lo) == 0UL) {
            return nm_f64_from_bits(0UL);
        }
    }
    uint z = x.hi != 0UL ? nm_f64_i_clz(x.hi) : 64u + nm_f64_i_clz(x.lo);
    x = nm_f64_i_shl128(x, z - 1u);
    ulong sig = x.hi | ulong(x.lo != 0UL);
    return nm_f64_from_bits(nm_f64_i_round_pack(sign, frame + 1149 - int(z), sig));
}

//@@ f64_compare requires: f64_base
// A signed integer that orders non-NaN values as the reals do (+0 and -0 both map to 0).
static inline long nm_f64_i_order_key(ulong u) {
    long m = long(u & NM_F64_ABS);
    return (u >> 63) != 0UL ? -m : m;
}

static inline bool nm_f64_eq(nm_f64 a, nm_f64 b) {
    return !nm_f64_i_isnan(a.bits) && !nm_f64_i_isnan(b.bits) &&
           nm_f64_i_order_key(a.bits) == nm_f64_i_order_key(b.bits);
}

static inline bool nm_f64_ne(nm_f64 a, nm_f64 b) {
    return !nm_f64_eq(a, b);
}

static inline bool nm_f64_lt(nm_f64 a, nm_f64 b) {
    return !nm_f64_i_isnan(a.bits) && !nm_f64_i_isnan(b.bits) &&
           nm_f64_i_order_key(a.bits) < nm_f64_i_order_key(b.bits);
}

static inline bool nm_f64_le(nm_f64 a, nm_f64 b) {
    return !nm_f64_i_isnan(a.bits) && !nm_f64_i_isnan(b.bits) &&
           nm_f64_i_order_key(a.bits) <= nm_f64_i_order_key(b.bits);
}

static inline bool nm_f64_gt(nm_f64 a, nm_f64 b) {
    return nm_f64_lt(b, a);
}

static inline bool nm_f64_ge(nm_f64 a, nm_f64 b) {
    return nm_f64_le(b, a);
}

// Python's min(a, b) and max(a, b) as Numba evaluates them: the first argument unless the second
// compares strictly smaller (larger); so min(nan, 1) is nan, min(1, nan) is 1, min(0.0, -0.0) is 0.0.
static inline nm_f64 nm_f64_py_min(nm_f64 a, nm_f64 b) {
    return nm_f64_lt(b, a) ? b : a;
}

static inline nm_f64 nm_f64_py_max(nm_f64 a, nm_f64 b) {
    return nm_f64_gt(b, a) ? b : a;
}

// np.minimum / np.maximum: a NaN operand wins (the first one if both are NaN); equal values, +0 and
// -0 included, give b, as NumPy does on x86.
static inline nm_f64 nm_f64_np_minimum(nm_f64 a, nm_f64 b) {
    return (nm_f64_lt(a, b) || nm_f64_isnan(a)) ? a : b;
}

static inline nm_f64 nm_f64_np_maximum(nm_f64 a, nm_f64 b) {
    return (nm_f64_gt(a, b) || nm_f64_isnan(a)) ? a : b;
}

// np.fmin / np.fmax: a NaN operand loses, signalling or not (a if both are NaN); equal values give b, as
// the SIMD body of NumPy's loops does on x86 (its scalar tail, libm's fmin, gives a for +0/-0 and a
// quiet NaN for a signalling NaN operand).
static inline nm_f64 nm_f64_np_fmin(nm_f64 a, nm_f64 b) {
    return (nm_f64_lt(a, b) || nm_f64_isnan(b)) ? a : b;
}

static inline nm_f64 nm_f64_np_fmax(nm_f64 a, nm_f64 b) {
    return (nm_f64_gt(a, b) || nm_f64_isnan(b)) ? a : b;
}

//@@ f64_int requires: f64_base
// A nonzero magnitude m < 2^32 exactly as a float64.
static inline ulong nm_f64_i_from_u32_mag(ulong sign, uint m) {
    if (m == 0u) {
        return 0UL;
    }
    uint top = 31u - uint(metal::clz(m));
    return sign | ((ulong(top + 1022u) << 52) + (ulong(m) << (52u - top)));
}

// A magnitude m < 2^64 rounded to a float64.
static inline ulong nm_f64_i_from_u64_mag(ulong sign, ulong m) {
    if (m == 0UL) {
        return 0UL;
    }
    if ((m >> 63) != 0UL) {
        return nm_f64_i_round_pack(sign, 0x43D, nm_f64_i_shr_jam(m, 1u));
    }
    return nm_f64_i_norm_round_pack(sign, 0x43C, m);
}

static inline nm_f64 nm_f64_from_i8(char v) {
    int i = int(v);
    return nm_f64_from_bits(nm_f64_i_from_u32_mag(i < 0 ? NM_F64_SIGN : 0UL, uint(i < 0 ? -i : i)));
}

static inline nm_f64 nm_f64_from_u8(uchar v) {
    return nm_f64_from_bits(nm_f64_i_from_u32_mag(0UL, uint(v)));
}

static inline nm_f64 nm_f64_from_i16(short v) {
    int i = int(v);
    return nm_f64_from_bits(nm_f64_i_from_u32_mag(i < 0 ? NM_F64_SIGN : 0UL, uint(i < 0 ? -i : i)));
}

static inline nm_f64 nm_f64_from_u16(ushort v) {
    return nm_f64_from_bits(nm_f64_i_from_u32_mag(0UL, uint(v)));
}

static inline nm_f64 nm_f64_from_i32(int v) {
    // 0 - uint(v) is |v| for every int, INT_MIN included.
    return nm_f64_from_bits(nm_f64_i_from_u32_mag(v < 0 ? NM_F64_SIGN : 0UL, v < 0 ? 0u - uint(v) : uint(v)));
}

static inline nm_f64 nm_f64_from_u32(uint v) {
    return nm_f64_from_bits(nm_f64_i_from_u32_mag(0UL, v));
}

static inline nm_f64 nm_f64_from_i64(long v) {
    return nm_f64_from_bits(nm_f64_i_from_u64_mag(v < 0L ? NM_F64_SIGN : 0UL, v < 0L ? 0UL - ulong(v) : ulong(v)));
}

static inline nm_f64 nm_f64_from_u64(ulong v) {
    return nm_f64_from_bits(nm_f64_i_from_u64_mag(0UL, v));
}

// floor(|x|) for finite x, saturated to 2^64 - 1 (infinities too); NaN is the caller's business.
static inline ulong nm_f64_i_trunc_mag(ulong u) {
    int exp = int(u >> 52) & 0x7FF;
    if (exp < 0x3FF) {
        return 0UL;
    }
    if (exp >= 0x3FF + 64) {
        return 0xFFFFFFFFFFFFFFFFUL;
    }
    ulong sig = (u & NM_F64_FRAC) | NM_F64_HIDDEN;
    return exp >= 0x433 ? sig << uint(exp - 0x433) : sig >> uint(0x433 - exp);
}

static inline long nm_f64_to_i64(nm_f64 x) {
    if (nm_f64_i_isnan(x.bits)) {
        return 0L;
    }
    ulong m = nm_f64_i_trunc_mag(x.bits);
    if ((x.bits >> 63) != 0UL) {
        return m >= NM_F64_SIGN ? (-0x7FFFFFFFFFFFFFFFL - 1L) : -long(m);
    }
    return m >= NM_F64_SIGN ? long(NM_F64_ABS) : long(m);
}

static inline ulong nm_f64_to_u64(nm_f64 x) {
    if (nm_f64_i_isnan(x.bits) || (x.bits >> 63) != 0UL) {
        return 0UL;
    }
    return nm_f64_i_trunc_mag(x.bits);
}

static inline int nm_f64_to_i32(nm_f64 x) {
    if (nm_f64_i_isnan(x.bits)) {
        return 0;
    }
    ulong m = nm_f64_i_trunc_mag(x.bits);
    if ((x.bits >> 63) != 0UL) {
        return m >= 0x80000000UL ? (-0x7FFFFFFF - 1) : -int(m);
    }
    return m >= 0x7FFFFFFFUL ? 0x7FFFFFFF : int(m);
}

static inline uint nm_f64_to_u32(nm_f64 x) {
    if (nm_f64_i_isnan(x.bits) || (x.bits >> 63) != 0UL) {
        return 0u;
    }
    return uint(metal::min(nm_f64_i_trunc_mag(x.bits), 0xFFFFFFFFUL));
}

static inline char nm_f64_to_i8(nm_f64 x) {
    return char(nm_f64_to_i32(x));
}

static inline uchar nm_f64_to_u8(nm_f64 x) {
    return uchar(nm_f64_to_i32(x));
}

static inline short nm_f64_to_i16(nm_f64 x) {
    return short(nm_f64_to_i32(x));
}

static inline ushort nm_f64_to_u16(nm_f64 x) {
    return ushort(nm_f64_to_i32(x));
}

//@@ f64_float requires: f64_base
// float32 and float16 arrive and leave as bit patterns (as_type), so no float arithmetic touches them
// and a GPU that flushes float32 subnormals in arithmetic still converts them exactly.
static inline nm_f64 nm_f64_from_f32(float f) {
    uint u = as_type<uint>(f);
    ulong sign = ulong(u >> 31) << 63;
    uint exp = (u >> 23) & 0xFFu;
    uint frac = u & 0x7FFFFFu;
    if (exp == 0xFFu) {
        // Infinity, or a NaN quieted with its payload kept (x86's cvtss2sd).
        return nm_f64_from_bits(sign | NM_F64_EXP | (frac != 0u ? NM_F64_QUIET : 0UL) | (ulong(frac) << 29));
    }
    if (exp == 0u) {
        if (frac == 0u) {
            return nm_f64_from_bits(sign);
        }
        uint top = 31u - uint(metal::clz(frac));
        return nm_f64_from_bits(sign | ((ulong(top + 873u) << 52) + (ulong(frac) << (52u - top))));
    }
    return nm_f64_from_bits(sign | (ulong(exp + 896u) << 52) | (ulong(frac) << 29));
}

// Rounds sign | exp, sig to a narrower format with `frac_bits` fraction bits and exponent field all
// ones at `exp_max`: sig has its leading one at bit 62 (exp = biased exponent in the target format,
// 1 for the smallest normal) and exp may be below 1 (subnormal result) or above exp_max - 1
// (overflow). Returns the target's bits without the sign.
static inline uint nm_f64_i_round_narrow(int exp, ulong sig, uint frac_bits, int exp_max) {
    uint drop = 62u - frac_bits;                     // bits below the target's last place
    if (exp >= exp_max) {
        return uint(exp_max) << frac_bits;
    }
    if (exp < 1) {
        // Subnormal: the value scaled to the smallest normal's exponent, rounded once; a carry
        // into bit frac_bits gives the smallest normal.
        sig = nm_f64_i_shr_jam(sig, uint(1 - exp));
        exp = 1;
    }
    ulong half = 1UL << (drop - 1u);
    ulong rest = sig & ((1UL << drop) - 1UL);
    ulong q = sig >> drop;
    q += ulong(rest > half || (rest == half && (q & 1UL) != 0UL));
    // q's hidden bit (bit frac_bits, when set) adds one to exp - 1; a carry out of the fraction
    // moves to the next binade, and past the largest finite value to exactly infinity.
    return (uint(exp - 1) << frac_bits) + uint(q);
}

static inline float nm_f64_to_f32(nm_f64 x) {
    ulong u = x.bits;
    uint sign = uint(u >> 63) << 31;
    int exp = int(u >> 52) & 0x7FF;
    ulong frac = u & NM_F64_FRAC;
    if (exp == 0x7FF) {
        // Infinity, or a NaN quieted with the payload's top bits kept (x86's cvtsd2ss).
        return as_type<float>(sign | 0x7F800000u | (frac != 0UL ? 0x400000u : 0u) | uint(frac >> 29));
    }
    if ((u & NM_F64_ABS) == 0UL) {
        return as_type<float>(sign);
    }
    // A float64 subnormal is below 2^-1022, far under half the smallest float32 subnormal: the
    // rounding then gives zero through the subnormal path (its sticky bit alone is below one half).
    ulong sig = ((exp != 0 ? NM_F64_HIDDEN : 0UL) | frac) << 10;
    return as_type<float>(sign | nm_f64_i_round_narrow(exp - 896, sig, 23u, 0xFF));
}

static inline nm_f64 nm_f64_from_f16(half h) {
    uint u = uint(as_type<ushort>(h));
    ulong sign = ulong(u >> 15) << 63;
    uint exp = (u >> 10) & 0x1Fu;
    uint frac = u & 0x3FFu;
    if (exp == 0x1Fu) {
        // NumPy keeps a float16 NaN's payload as it is (no quiet bit forced).
        return nm_f64_from_bits(sign | NM_F64_EXP | (ulong(frac) << 42));
    }
    if (exp == 0u) {
        if (frac == 0u) {
            return nm_f64_from_bits(sign);
        }
        uint top = 31u - uint(metal::clz(frac));
        return nm_f64_from_bits(sign | ((ulong(top + 998u) << 52) + (ulong(frac) << (52u - top))));
    }
    return nm_f64_from_bits(sign | (ulong(exp + 1008u) << 52) | (ulong(frac) << 42));
}

static inline half nm_f64_to_f16(nm_f64 x) {
    ulong u = x.bits;
    uint sign = uint(u >> 63) << 15;
    int exp = int(u >> 52) & 0x7FF;
    ulong frac = u & NM_F64_FRAC;
    if (exp == 0x7FF) {
        // NumPy's rule: the payload's top 10 bits, and 1 if they are all zero, so it stays a NaN.
        uint payload = uint(frac >> 42);
        if (frac != 0UL && payload == 0u) {
            payload = 1u;
        }
        return as_type<half>(ushort(sign | 0x7C00u | payload));
    }
    if ((u & NM_F64_ABS) == 0UL) {
        return as_type<half>(ushort(sign));
    }
    ulong sig = ((exp != 0 ? NM_F64_HIDDEN : 0UL) | frac) << 10;
    return as_type<half>(ushort(sign | nm_f64_i_round_narrow(exp - 1008, sig, 10u, 0x1F)));
}

//@@ f64_round requires: f64_base
// floor, ceil, trunc and rint work on the bit pattern: the fraction bits below the units place are
// cleared, and adding one unit there increments the magnitude, carrying into the exponent.
static inline nm_f64 nm_f64_trunc(nm_f64 x) {
    ulong u = x.bits;
    int exp = int(u >> 52) & 0x7FF;
    if (exp >= 0x433) {
        return nm_f64_from_bits(nm_f64_i_isnan(u) ? (u | NM_F64_QUIET) : u);
    }
    if (exp < 0x3FF) {
        return nm_f64_from_bits(u & NM_F64_SIGN);
    }
    ulong mask = (1UL << uint(0x433 - exp)) - 1UL;
    return nm_f64_from_bits(u & ~mask);
}

static inline nm_f64 nm_f64_floor(nm_f64 x) {
    ulong u = x.bits;
    int exp = int(u >> 52) & 0x7FF;
    bool neg = (u >> 63) != 0UL;
    if (exp >= 0x433) {
        return nm_f64_from_bits(nm_f64_i_isnan(u) ? (u | NM_F64_QUIET) : u);
    }
    if (exp < 0x3FF) {
        // (-1, 0) goes to -1; -0 and [0, 1) keep their sign and become zero.
        return nm_f64_from_bits(neg && (u & NM_F64_ABS) != 0UL ? (NM_F64_SIGN | NM_F64_ONE) : (u & NM_F64_SIGN));
    }
    uint k = uint(0x433 - exp);
    ulong mask = (1UL << k) - 1UL;
    ulong r = u & ~mask;
    if (neg && (u & mask) != 0UL) {
        r += 1UL << k;
    }
    return nm_f64_from_bits(r);
}

static inline nm_f64 nm_f64_ceil(nm_f64 x) {
    ulong u = x.bits;
    int exp = int(u >> 52) & 0x7FF;
    bool neg = (u >> 63) != 0UL;
    if (exp >= 0x433) {
        return nm_f64_from_bits(nm_f64_i_isnan(u) ? (u | NM_F64_QUIET) : u);
    }
    if (exp < 0x3FF) {
        // (0, 1) goes to 1; +0 and (-1, -0] keep their sign and become zero.
        return nm_f64_from_bits(!neg && (u & NM_F64_ABS) != 0UL ? NM_F64_ONE : (u & NM_F64_SIGN));
    }
    uint k = uint(0x433 - exp);
    ulong mask = (1UL << k) - 1UL;
    ulong r = u & ~mask;
    if (!neg && (u & mask) != 0UL) {
        r += 1UL << k;
    }
    return nm_f64_from_bits(r);
}

// Round half to even (np.rint, np.round, Python's round()).
static inline nm_f64 nm_f64_rint(nm_f64 x) {
    ulong u = x.bits;
    int exp = int(u >> 52) & 0x7FF;
    if (exp >= 0x433) {
        return nm_f64_from_bits(nm_f64_i_isnan(u) ? (u | NM_F64_QUIET) : u);
    }
    if (exp < 0x3FE) {
        return nm_f64_from_bits(u & NM_F64_SIGN);                   // |x| < 1/2
    }
    if (exp == 0x3FE) {
        // [1/2, 1): exactly 1/2 goes to 0 (even), above it to 1.
        return nm_f64_from_bits((u & NM_F64_SIGN) | ((u & NM_F64_FRAC) != 0UL ? NM_F64_ONE : 0UL));
    }
    uint k = uint(0x433 - exp);
    ulong unit = 1UL << k;
    ulong half = unit >> 1;
    ulong rest = u & (unit - 1UL);
    ulong r = u - rest;
    if (rest > half || (rest == half && (r & unit) != 0UL)) {
        r += unit;
    }
    return nm_f64_from_bits(r);
}

//@@ f64_fmod requires: f64_recip
// C's fmod: x - trunc(x / y) y, exact, with the sign of x.
// The significands are reduced 54 bits at a time: r < b becomes (r 2^s) mod b with the quotient
// estimate q = floor(r y 2^s / 2^116), y from nm_f64_i_recip: q <= floor(r 2^s / b) and, as
// r 2^s (2^116/b - y) / 2^116 < 2^(53 + 54 + 7 - 116) < 1, q is at most one short; the new remainder
// is exact modulo 2^64 and one subtraction corrects it.
static inline nm_f64 nm_f64_fmod(nm_f64 x, nm_f64 y) {
    ulong ux = x.bits;
    ulong uy = y.bits;
    ulong sign = ux & NM_F64_SIGN;
    int exp_x = int(ux >> 52) & 0x7FF;
    int exp_y = int(uy >> 52) & 0x7FF;
    ulong sig_x = ux & NM_F64_FRAC;
    ulong sig_y = uy & NM_F64_FRAC;
    if (nm_f64_i_isnan(ux) || nm_f64_i_isnan(uy)) {
        return nm_f64_from_bits(nm_f64_i_nan2(ux, uy));
    }
    if (exp_x == 0x7FF || (uy & NM_F64_ABS) == 0UL) {
        return nm_f64_from_bits(NM_F64_DEFAULT_NAN);
    }
    if ((ux & NM_F64_ABS) < (uy & NM_F64_ABS)) {
        return x;                                    // |x| < |y|, zero x and infinite y included
    }
    if (exp_x == 0) {
        nm_f64_i_norm n = nm_f64_i_normalize_subnormal(sig_x);
        exp_x = n.exp;
        sig_x = n.sig;
    }
    if (exp_y == 0) {
        nm_f64_i_norm n = nm_f64_i_normalize_subnormal(sig_y);
        exp_y = n.exp;
        sig_y = n.sig;
    }
    ulong b = sig_y | NM_F64_HIDDEN;
    ulong r = sig_x | NM_F64_HIDDEN;
    if (r >= b) {
        r -= b;
    }
    int left = exp_x - exp_y;
    if (left > 0) {
        ulong recip = nm_f64_i_recip(b);
        while (left > 0 && r != 0UL) {
            uint s = uint(metal::min(left, 54));
            ulong q = metal::mulhi(r << 11, recip) >> (63u - s);
            r = (r << s) - q * b;
            if (r >= b) {
                r -= b;
            }
            left -= int(s);
        }
    }
    if (r == 0UL) {
        return nm_f64_from_bits(sign);
    }
    // r 2^(exp_y - 1075) is exactly representable (r < b); packing does not round.
    return nm_f64_from_bits(nm_f64_i_norm_round_pack(sign, exp_y - 1, r << 10));
}

//@@ f64_pymod requires: f64_fmod f64_add f64_mul f64_div f64_round f64_compare
// Python's divmod for floats as Numba computes it (CPython's float_divmod), for y != 0:
//   mod = fmod(x, y); div = (x - mod) / y
//   if mod (NaN counts): if (y < 0) != (mod < 0): mod += y; div -= 1
//   else: mod = copysign(0, y)
//   if div != 0: floordiv = floor(div), plus 1 if div - floordiv > 1/2
//   else: floordiv = (div * div) * x / y       (a zero with the sign of x / y)
// For y == 0 Numba's NumPy error model gives (x / y, fmod(x, y)): +-inf or NaN, and NaN.
static inline nm_f64_pair nm_f64_divmod(nm_f64 x, nm_f64 y) {
    nm_f64_pair out;
    nm_f64 zero = nm_f64_from_bits(0UL);
    nm_f64 one = nm_f64_from_bits(NM_F64_ONE);
    nm_f64 mod = nm_f64_fmod(x, y);
    if ((y.bits & NM_F64_ABS) == 0UL) {
        out.first = nm_f64_div(x, y);
        out.second = mod;
        return out;
    }
    nm_f64 div = nm_f64_div(nm_f64_sub(x, mod), y);
    if (nm_f64_truth(mod)) {
        if (nm_f64_lt(y, zero) != nm_f64_lt(mod, zero)) {
            div = nm_f64_sub(div, one);
            mod = nm_f64_add(mod, y);
        }
    } else {
        mod = nm_f64_from_bits(nm_f64_lt(y, zero) ? NM_F64_SIGN : 0UL);
    }
    nm_f64 floordiv;
    if (nm_f64_ne(div, zero) && !nm_f64_isnan(div)) {
        floordiv = nm_f64_floor(div);
        if (nm_f64_gt(nm_f64_sub(div, floordiv), nm_f64_from_bits(0x3FE0000000000000UL))) {
            floordiv = nm_f64_add(floordiv, one);
        }
    } else {
        div = nm_f64_mul(div, div);
        floordiv = nm_f64_div(nm_f64_mul(div, x), y);
    }
    out.first = floordiv;
    out.second = mod;
    return out;
}

// Python's x % y on floats (the sign of y), Numba's NumPy error model for y == 0 (NaN).
static inline nm_f64 nm_f64_pymod(nm_f64 x, nm_f64 y) {
    return nm_f64_divmod(x, y).second;
}

// Python's x // y on floats, Numba's NumPy error model for y == 0 (x / y).
static inline nm_f64 nm_f64_floordiv(nm_f64 x, nm_f64 y) {
    return nm_f64_divmod(x, y).first;
}

//@@ f64_frexp requires: f64_base
// math.frexp: x = mantissa 2^exponent with |mantissa| in [1/2, 1); zeros, infinities and NaN come back
// unchanged (a signalling NaN too, as in Numba and NumPy) with exponent 0.
static inline nm_f64_frexp_result nm_f64_frexp(nm_f64 x) {
    ulong u = x.bits;
    int exp = int(u >> 52) & 0x7FF;
    ulong frac = u & NM_F64_FRAC;
    nm_f64_frexp_result out;
    out.exponent = 0;
    if (exp == 0x7FF || (u & NM_F64_ABS) == 0UL) {
        out.mantissa = x;
        return out;
    }
    if (exp == 0) {
        nm_f64_i_norm n = nm_f64_i_normalize_subnormal(frac);
        exp = n.exp;
        frac = n.sig & NM_F64_FRAC;
    }
    out.exponent = exp - 0x3FE;
    out.mantissa = nm_f64_from_bits((u & NM_F64_SIGN) | (0x3FEUL << 52) | frac);
    return out;
}

// math.ldexp: x 2^n rounded once (to a subnormal or infinity when out of range); zeros, infinities and
// NaN come back unchanged (a signalling NaN too, as Numba's math.ldexp; np.ldexp would quiet it).
static inline nm_f64 nm_f64_ldexp(nm_f64 x, int n) {
    ulong u = x.bits;
    int exp = int(u >> 52) & 0x7FF;
    ulong sig = u & NM_F64_FRAC;
    if (exp == 0x7FF || (u & NM_F64_ABS) == 0UL) {
        return x;
    }
    if (exp == 0) {
        nm_f64_i_norm nrm = nm_f64_i_normalize_subnormal(sig);
        exp = nrm.exp;
        sig = nrm.sig;
    }
    // Beyond +-2200 every result is already 0 or infinity; clamping keeps exp + n in int range.
    int e = exp + metal::clamp(n, -2200, 2200);
    return nm_f64_from_bits(nm_f64_i_round_pack(u & NM_F64_SIGN, e - 1, (sig | NM_F64_HIDDEN) << 10));
}

//@@ f64_nextafter requires: f64_compare
// np.nextafter / math.nextafter: the neighbour of x in the direction of y; y itself when x == y.
static inline nm_f64 nm_f64_nextafter(nm_f64 x, nm_f64 y) {
    ulong ux = x.bits;
    ulong uy = y.bits;
    if (nm_f64_i_isnan(ux) || nm_f64_i_isnan(uy)) {
        return nm_f64_from_bits(nm_f64_i_nan2(ux, uy));
    }
    if (nm_f64_eq(x, y)) {
        return y;
    }
    if ((ux & NM_F64_ABS) == 0UL) {
        return nm_f64_from_bits((uy & NM_F64_SIGN) | 1UL);
    }
    // Away from zero when y is beyond x on x's side, else toward zero.
    bool away = nm_f64_lt(x, y) == ((ux >> 63) == 0UL);
    return nm_f64_from_bits(away ? ux + 1UL : ux - 1UL);
}

//@@ f64_simd requires: f64_add f64_mul f64_compare
// SIMD-group reductions and scans of float64 (MSL's simd_sum ... take no 64-bit type): the two 32-bit
// halves move with simd_shuffle and the emulated operations combine them, in an order fixed by the lane
// positions alone, so every device and every run gives the same bits:
// - sum, product, min, max: the pairwise tree over the 32 lane positions, ((x0 op x1) op (x2 op x3)) op
//   ..., where a subtree holding no active lane is left out (its sibling passes up unchanged). Lane i
//   holds a subtree's value when it is the subtree's lowest active lane, so every shuffle reads an active
//   lane (MSL: a thread may only read from an active thread) and inactive lanes cost nothing. min and
//   max are np.fmin and np.fmax (a NaN loses, as metal::min/max in float32's simd_min/simd_max).
// - prefix sums: sequential in lane order over the active lanes, (((x0 + x1) + x2) + ...), so the
//   inclusive sums are np.cumsum's bits; the exclusive sum of the first active lane is +0.0 (MSL's T(0)).
// `lane` is the caller's thread_index_in_simdgroup. Every loop has a constant trip count, so all active
// lanes execute every shuffle together.
static inline nm_f64 nm_f64_i_simd_shuffle(nm_f64 x, ushort lane) {
    uint lo = simd_shuffle(uint(x.bits & 0xFFFFFFFFUL), lane);
    uint hi = simd_shuffle(uint(x.bits >> 32), lane);
    return nm_f64_from_bits((ulong(hi) << 32) | ulong(lo));
}

static inline uint nm_f64_i_simd_active() {
    return uint(static_cast<simd_vote::vote_t>(simd_active_threads_mask()) & 0xFFFFFFFFUL);
}

// op: 0 sum, 1 product, 2 min, 3 max (a constant at every call, so the switch folds away).
static inline nm_f64 nm_f64_i_simd_tree(nm_f64 x, uint lane, int op) {
    uint active = nm_f64_i_simd_active();
    nm_f64 v = x;
    for (uint d = 1u; d < 32u; d <<= 1) {
        uint base = lane & ~(2u * d - 1u);
        uint half_mask = (1u << d) - 1u;
        uint left = (active >> base) & half_mask;
        uint right = (active >> (base + d)) & half_mask;
        uint source = right != 0u ? base + d + metal::ctz(right) : lane;
        nm_f64 other = nm_f64_i_simd_shuffle(v, ushort(source));
        if (left != 0u && right != 0u && lane == base + metal::ctz(left)) {
            switch (op) {
                case 0: v = nm_f64_add(v, other); break;
                case 1: v = nm_f64_mul(v, other); break;
                case 2: v = nm_f64_np_fmin(v, other); break;
                default: v = nm_f64_np_fmax(v, other); break;
            }
        }
    }
    return nm_f64_i_simd_shuffle(v, ushort(metal::ctz(active)));
}

static inline nm_f64 nm_f64_simd_sum(nm_f64 x, uint lane) {
    return nm_f64_i_simd_tree(x, lane, 0);
}

static inline nm_f64 nm_f64_simd_product(nm_f64 x, uint lane) {
    return nm_f64_i_simd_tree(x, lane, 1);
}

static inline nm_f64 nm_f64_simd_min(nm_f64 x, uint lane) {
    return nm_f64_i_simd_tree(x, lane, 2);
}

static inline nm_f64 nm_f64_simd_max(nm_f64 x, uint lane) {
    return nm_f64_i_simd_tree(x, lane, 3);
}

static inline nm_f64 nm_f64_i_simd_scan(nm_f64 x, uint lane, bool inclusive) {
    uint active = nm_f64_i_simd_active();
    nm_f64 total = nm_f64_from_bits(0UL);
    nm_f64 mine = total;
    bool started = false;
    for (uint k = 0u; k < 32u; ++k) {
        if (((active >> k) & 1u) != 0u) {
            nm_f64 xk = nm_f64_i_simd_shuffle(x, ushort(k));
            if (k == lane && !inclusive) {
                mine = total;
            }
            total = started ? nm_f64_add(total, xk) : xk;
            started = true;
            if (k == lane && inclusive) {
                mine = total;
            }
        }
    }
    return mine;
}

static inline nm_f64 nm_f64_simd_prefix_inclusive_sum(nm_f64 x, uint lane) {
    return nm_f64_i_simd_scan(x, lane, true);
}

static inline nm_f64 nm_f64_simd_prefix_exclusive_sum(nm_f64 x, uint lane) {
    return nm_f64_i_simd_scan(x, lane, false);
}
