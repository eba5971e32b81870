//@@ mathlib
// numba-metal math library: Python `math` functions that MSL's metal:: library lacks.
//
// Plain MSL text. It is pasted into generated kernels after
//     #include <metal_stdlib>
//     using namespace metal;
// and must therefore stay valid MSL (C++14 subset): no double, no goto, no recursion, no static
// locals, no lambdas, no std::, float literals always carry an `f` suffix, half literals are
// written half(...).  Every metal:: call below is qualified and is one of the functions that are
// correctly rounded or exact in MSL's precision tables (fabs, fma, rint, floor, frexp, ldexp,
// copysign, sqrt); no transcendental metal:: function is used, so on an Apple GPU compiled in
// safe/precise mode the results are bit-for-bit those measured on the CPU, except that Apple GPUs
// flush float32 subnormals.  The compensated (error-free) sums and products below rely on every
// operation being rounded as written: under fastmath=True (reassociation) accuracy is NOT kept.
//
// Public functions (float and half overloads; half computes in float and rounds once):
//   nm_erf nm_erfc nm_tgamma nm_lgamma nm_expm1 nm_log1p nm_hypot nm_remainder nm_cbrt
// Methods, measured accuracy and how to re-run the measurements: docs/math-accuracy.md.
// Polynomial coefficients are minimax fits (relative error, Remez exchange on a dense Chebyshev
// grid, then coefficient-by-coefficient rounding to float32 with refitting of the remaining ones)
// made for this file by tools/minimax_mathlib.py, which regenerates every one of them
// (tests/tools/test_minimax_mathlib.py checks that bit for bit); none is copied from another library.
// Helpers whose names start with nm_i_ are internal.

#ifndef NM_INLINE
#define NM_INLINE inline __attribute__((__always_inline__))
#endif

#define NM_LN2_HI 0.693145751953125f        /* ln 2 rounded to 16 bits: k*NM_LN2_HI exact, |k| < 256 */
#define NM_LN2_LO 1.428606765e-06f          /* ln 2 - NM_LN2_HI */
#define NM_INV_LN2 1.442695022e+00f
#define NM_LOG_PI 1.144729853e+00f
#define NM_HALF_LOG_2PI 9.189385176e-01f
#define NM_FLT_MAX 3.402823466e+38f

// ---------------------------------------------------------------------------------------------
// Double-float ("df") helpers: a value hi + lo with |lo| <= ulp(hi)/2.
// ---------------------------------------------------------------------------------------------

struct nm_i_df {
    float hi;
    float lo;
};

NM_INLINE nm_i_df nm_i_make_df(float hi, float lo) {
    nm_i_df r;
    r.hi = hi;
    r.lo = lo;
    return r;
}

// a + b = s + e exactly, requires |a| >= |b| or a == 0 (Dekker's Fast2Sum).
NM_INLINE nm_i_df nm_i_fast_two_sum(float a, float b) {
    float s = a + b;
    float e = b - (s - a);
    return nm_i_make_df(s, e);
}

// a + b = s + e exactly, no precondition (Knuth's 2Sum).
NM_INLINE nm_i_df nm_i_two_sum(float a, float b) {
    float s = a + b;
    float bb = s - a;
    float e = (a - (s - bb)) + (b - bb);
    return nm_i_make_df(s, e);
}

// (a.hi + a.lo) * b for a float b.
NM_INLINE nm_i_df nm_i_df_mul_f(nm_i_df a, float b) {
    float p = a.hi * b;
    float e = metal::fma(a.hi, b, -p);
    e = metal::fma(a.lo, b, e);
    return nm_i_fast_two_sum(p, e);
}

// (a.hi + a.lo) * (1 + w.hi + w.lo) for |w| < 1.
NM_INLINE nm_i_df nm_i_df_mul_1p(nm_i_df a, nm_i_df w) {
    float p = a.hi * w.hi;
    float pe = metal::fma(a.hi, w.hi, -p);
    nm_i_df s = nm_i_fast_two_sum(a.hi, p);
    float lo = s.lo + (pe + metal::fma(a.hi, w.lo, metal::fma(a.lo, w.hi, a.lo)));
    return nm_i_fast_two_sum(s.hi, lo);
}

// 1 / (d.hi + d.lo), rounded once (d finite, nonzero).
NM_INLINE float nm_i_df_recip(nm_i_df d) {
    float r = 1.0f / d.hi;
    float e = metal::fma(-r, d.hi, 1.0f);
    e = metal::fma(-r, d.lo, e);
    return metal::fma(r, e, r);
}

// ---------------------------------------------------------------------------------------------
// Polynomial kernels (minimax, coefficients rounded to float32).
// ---------------------------------------------------------------------------------------------

// expm1(r) = r + r^2 * H(r) on |r| <= ln2/2; relative error of the fit 2^-31.1.
NM_INLINE float nm_i_poly_expm1(float r) {
    float p = 1.976019121e-04f;
    p = metal::fma(p, r, 1.393230865e-03f);
    p = metal::fma(p, r, 8.333547972e-03f);
    p = metal::fma(p, r, 4.166649282e-02f);
    p = metal::fma(p, r, 1.666666567e-01f);
    p = metal::fma(p, r, 5.000000000e-01f);
    return p;
}

// log(1+f) = 2s + s*z*T(z), s = f/(2+f), z = s^2 <= 0.02944 (|s| <= (sqrt2-1)/(sqrt2+1)).
// Error of s*z*T relative to log(1+f): 2^-35.2.
NM_INLINE float nm_i_poly_log(float z) {
    float p = 2.428610623e-01f;
    p = metal::fma(p, z, 2.849848866e-01f);
    p = metal::fma(p, z, 4.000097513e-01f);
    p = metal::fma(p, z, 6.666666269e-01f);
    return p;
}

// erf(x) = x + x*E(x^2) for |x| <= 1; relative error of the fit 2^-29.4.
NM_INLINE float nm_i_poly_erf(float z) {
    float p = 7.806903886e-05f;
    p = metal::fma(p, z, -7.997853099e-04f);
    p = metal::fma(p, z, 5.187162198e-03f);
    p = metal::fma(p, z, -2.685334720e-02f);
    p = metal::fma(p, z, 1.128357872e-01f);
    p = metal::fma(p, z, -3.761262596e-01f);
    p = metal::fma(p, z, 1.283791661e-01f);
    return p;
}

// Shepherd & Laframboise (1981): G(q) = (1+2a) exp(a^2) erfc(a) with q = (a-2)/(a+2), here for
// a in [0.5, 10.0546875], q in [-0.6, 0.6682]. Relative error of the fit 2^-27.2.
// Returns G as hi + lo (the last Horner step is done error-free).
NM_INLINE nm_i_df nm_i_poly_erfcx(float q) {
    float p = -2.378866484e-04f;
    p = metal::fma(p, q, -1.287047053e-03f);
    p = metal::fma(p, q, 1.165213180e-03f);
    p = metal::fma(p, q, 8.677124046e-03f);
    p = metal::fma(p, q, -8.014033549e-03f);
    p = metal::fma(p, q, -5.421622470e-02f);
    p = metal::fma(p, q, 1.640500873e-01f);
    p = metal::fma(p, q, -1.660303324e-01f);
    p = metal::fma(p, q, -9.276382625e-02f);
    float ph = p * q;
    float pl = metal::fma(p, q, -ph);
    nm_i_df s = nm_i_fast_two_sum(1.276978374e+00f, ph);
    return nm_i_fast_two_sum(s.hi, s.lo + pl);
}

// 1/Gamma(1+t) = 1 + t(t-1) S(t) for t in [-0.5, 1]; error of the fit relative to S 2^-26.4.
// Returns S as hi + lo (the last Horner step is done error-free).
NM_INLINE nm_i_df nm_i_poly_rgamma(float t) {
    float p = -1.541335951e-05f;
    p = metal::fma(p, t, 1.068199272e-04f);
    p = metal::fma(p, t, -1.213566429e-04f);
    p = metal::fma(p, t, -1.263181213e-03f);
    p = metal::fma(p, t, 5.950185470e-03f);
    p = metal::fma(p, t, -3.679718589e-03f);
    p = metal::fma(p, t, -4.587385803e-02f);
    p = metal::fma(p, t, 1.206654534e-01f);
    p = metal::fma(p, t, 7.866241038e-02f);
    float ph = p * t;
    float pl = metal::fma(p, t, -ph);
    nm_i_df s = nm_i_fast_two_sum(-5.772156715e-01f, ph);
    return nm_i_fast_two_sum(s.hi, s.lo + pl);
}

// sin(pi r) = r P(r^2) for |r| <= 1/2; relative error 2^-25.1.
NM_INLINE float nm_i_poly_sinpi(float u) {
    float p = 7.983576506e-02f;
    p = metal::fma(p, u, -5.994373560e-01f);
    p = metal::fma(p, u, 2.550269842e+00f);
    p = metal::fma(p, u, -5.167720795e+00f);
    p = metal::fma(p, u, 3.141592741e+00f);
    return p;
}

// cbrt(m) for m in [0.5, 1]; relative error 2^-13.7 (a starting value for Newton's method).
NM_INLINE float nm_i_poly_cbrt(float m) {
    float p = 1.467074305e-01f;
    p = metal::fma(p, m, -5.173965693e-01f);
    p = metal::fma(p, m, 9.319859147e-01f);
    p = metal::fma(p, m, 4.387762249e-01f);
    return p;
}

// ---------------------------------------------------------------------------------------------
// exp / log cores (double-float accurate, built from arithmetic only).
// ---------------------------------------------------------------------------------------------

// expm1(rh + rl) for |rh| <= ~0.35 and |rl| <= 2^-20 |rh| (or tiny), as hi + lo.
NM_INLINE nm_i_df nm_i_expm1_reduced(float rh, float rl) {
    float q = (rh * rh) * nm_i_poly_expm1(rh);
    float ph = rh + q;
    float pl = (rh - ph) + q;                       // exact: |rh| >= |q|
    pl = metal::fma(rl, 1.0f + ph, pl);             // + exp(rh) * rl
    return nm_i_make_df(ph, pl);
}

// exp(yh + yl) = (hi + lo) * 2^k with hi + lo in [0.7, 1.42]; the caller applies ldexp(., k).
// |yh| <= 150 and |yl| <= ulp(yh).
struct nm_i_dfe {
    float hi;
    float lo;
    int k;
};

NM_INLINE nm_i_dfe nm_i_exp_df(float yh, float yl) {
    float k = metal::rint(yh * NM_INV_LN2);
    float rh = metal::fma(-k, NM_LN2_HI, yh);      // exact
    float t = metal::fma(-k, NM_LN2_LO, yl);
    nm_i_df r = nm_i_two_sum(rh, t);
    nm_i_df p = nm_i_expm1_reduced(r.hi, r.lo);
    nm_i_df s = nm_i_fast_two_sum(1.0f, p.hi);
    nm_i_df v = nm_i_fast_two_sum(s.hi, s.lo + p.lo);
    nm_i_dfe out;
    out.hi = v.hi;
    out.lo = v.lo;
    out.k = int(k);
    return out;
}

// log(1+f) for f in [sqrt(1/2)-1, sqrt(2)-1], as hi + lo (relative error about 2^-30).
NM_INLINE nm_i_df nm_i_log1p_reduced(float f) {
    nm_i_df d = nm_i_fast_two_sum(2.0f, f);         // 2 + f
    float sh = f / d.hi;                             // s = f / (2 + f)
    float e = metal::fma(-sh, d.hi, f);              // exact remainder
    e = metal::fma(-sh, d.lo, e);
    float sl = e / d.hi;
    float z = sh * sh;
    float tail = metal::fma(sh * z, nm_i_poly_log(z), 2.0f * sl);
    return nm_i_fast_two_sum(2.0f * sh, tail);       // log(1+f) = 2 atanh(s)
}

// log(x) for finite x > 0, as hi + lo.
NM_INLINE nm_i_df nm_i_log_df(float x) {
    int e;
    float m = metal::frexp(x, e);                    // x = m 2^e, m in [0.5, 1)
    if (m < 7.071067691e-01f) {
        m = m * 2.0f;
        e = e - 1;
    }
    nm_i_df l = nm_i_log1p_reduced(m - 1.0f);        // m - 1 exact
    float k = float(e);
    nm_i_df s = nm_i_two_sum(k * NM_LN2_HI, l.hi);   // k * NM_LN2_HI exact
    float lo = s.lo + metal::fma(k, NM_LN2_LO, l.lo);
    return nm_i_fast_two_sum(s.hi, lo);
}

// ---------------------------------------------------------------------------------------------
// expm1, log1p
// ---------------------------------------------------------------------------------------------

// Method: x = k ln2 + r (Cody-Waite, two-part ln2, r kept as hi + lo), expm1(r) by a minimax
// polynomial, then 2^k (1 + expm1(r)) - 1 assembled with an error-free sum.
NM_INLINE float nm_expm1(float x) {
    if (!(metal::fabs(x) >= 2.980232239e-08f)) {     // |x| < 2^-25 (also +-0) or NaN
        return x;
    }
    if (x > 88.8f) {
        return INFINITY;
    }
    if (x < -17.5f) {                                // includes -inf
        return -1.0f;
    }
    float k = metal::rint(x * NM_INV_LN2);
    float r0 = metal::fma(-k, NM_LN2_HI, x);        // exact
    float rh = metal::fma(-k, NM_LN2_LO, r0);
    float rl = metal::fma(-k, NM_LN2_LO, r0 - rh);  // rounding error of rh
    nm_i_df p = nm_i_expm1_reduced(rh, rl);
    int ki = int(k);
    if (ki == 0) {
        return p.hi + p.lo;
    }
    if (ki > 24) {                                   // 2^k (1 + p) - 1; the -1 is below half an ulp
        nm_i_df s = nm_i_fast_two_sum(1.0f, p.hi);
        float v = s.hi + ((s.lo + p.lo) - metal::ldexp(1.0f, -ki));
        return metal::ldexp(v, ki);
    }
    float sc = metal::ldexp(1.0f, ki);
    if (ki < -1) {                                   // result in [-1, -0.64]
        return metal::fma(sc, 1.0f + (p.hi + p.lo), -1.0f);
    }
    float t = sc - 1.0f;                             // exact for -1 <= k <= 24
    nm_i_df s = nm_i_two_sum(t, sc * p.hi);          // sc * p.hi exact
    return s.hi + metal::fma(sc, p.lo, s.lo);
}

// Method: for x in [sqrt(1/2)-1, sqrt(2)-1] log(1+x) = 2 atanh(x/(2+x)) directly; otherwise
// u = 1 + x with its rounding error c recovered exactly (Fast2Sum), log(u) = k ln2 + log(m),
// and log1p(x) = log(u) + c/u (the msun/fdlibm reduction).
NM_INLINE float nm_log1p(float x) {
    if (x != x) {
        return x;
    }
    if (x < -1.0f) {
        return NAN;
    }
    if (x == -1.0f) {
        return -INFINITY;
    }
    if (x == INFINITY) {
        return x;
    }
    if (metal::fabs(x) < 2.980232239e-08f) {         // |x| < 2^-25 (also +-0)
        return x;
    }
    if (x >= -2.928932309e-01f && x <= 4.142135680e-01f) {
        nm_i_df l = nm_i_log1p_reduced(x);
        return l.hi + l.lo;
    }
    float u = 1.0f + x;
    float c = (x > 1.0f) ? (1.0f - (u - x)) : (x - (u - 1.0f));  // 1 + x = u + c exactly
    nm_i_df l = nm_i_log_df(u);
    return l.hi + (l.lo + c / u);
}

// ---------------------------------------------------------------------------------------------
// erf, erfc
// ---------------------------------------------------------------------------------------------

// erfc(a) for a >= 0.5 (a may be +inf). Shepherd-Laframboise form times exp(-a^2), where a^2 is
// split exactly into hi + lo so that exp(-a^2) keeps full accuracy.
NM_INLINE float nm_i_erfc_pos(float a) {
    if (a > 10.0546875f) {                           // erfc(a) < 2^-149; also +inf
        return 0.0f;
    }
    float q = (a - 2.0f) / (a + 2.0f);
    nm_i_df g = nm_i_poly_erfcx(q);
    nm_i_df d = nm_i_fast_two_sum(2.0f * a, 1.0f);   // 1 + 2a, |2a| >= 1
    float rh = g.hi / d.hi;                          // r = g / (1 + 2a) = exp(a^2) erfc(a)
    float e = metal::fma(-rh, d.hi, g.hi);
    e = e + (g.lo - rh * d.lo);
    float rl = e / d.hi;
    float sh = a * a;
    float sl = metal::fma(a, a, -sh);
    nm_i_dfe x = nm_i_exp_df(-sh, -sl);              // exp(-a^2) = (x.hi + x.lo) 2^x.k
    float ph = rh * x.hi;
    float pl = metal::fma(rh, x.hi, -ph);
    pl = pl + metal::fma(rh, x.lo, rl * x.hi);
    return metal::ldexp(ph + pl, x.k);
}

// Method: |x| < 1: odd minimax polynomial x + x E(x^2); 1 <= |x| < 4: 1 - erfc(|x|);
// |x| >= 4: +-1.
NM_INLINE float nm_erf(float x) {
    float a = metal::fabs(x);
    if (a < 1.0f) {
        return metal::fma(x, nm_i_poly_erf(x * x), x);
    }
    if (!(a < 4.0f)) {
        if (a != a) {
            return x;
        }
        return metal::copysign(1.0f, x);
    }
    return metal::copysign(1.0f - nm_i_erfc_pos(a), x);
}

// Method: |x| < 0.5: (1 - x) - x E(x^2) with 1 - x split exactly; x >= 0.5: Shepherd-Laframboise
// polynomial for (1+2x) exp(x^2) erfc(x) in q = (x-2)/(x+2), divided by 1 + 2x and multiplied
// by exp(-x^2) in double-float; x <= -0.5: 2 - erfc(-x).
NM_INLINE float nm_erfc(float x) {
    if (x != x) {
        return x;
    }
    float a = metal::fabs(x);
    if (a < 0.5f) {
        float xe = x * nm_i_poly_erf(x * x);
        nm_i_df s = nm_i_fast_two_sum(1.0f, -x);
        return s.hi + (s.lo - xe);
    }
    float c = nm_i_erfc_pos(a);
    return (x < 0.0f) ? (2.0f - c) : c;
}

// ---------------------------------------------------------------------------------------------
// tgamma, lgamma
// ---------------------------------------------------------------------------------------------

// w(t) = 1/Gamma(1+t) - 1 = t (t-1) S(t), t in [-0.5, 1], as hi + lo. t (t-1) is formed exactly,
// so relative accuracy is kept at both zeros (t = 0, t = 1).
NM_INLINE nm_i_df nm_i_rgamma_m1(float t) {
    nm_i_df s = nm_i_poly_rgamma(t);
    nm_i_df tt = nm_i_df_mul_f(nm_i_two_sum(t, -1.0f), t);
    float wh = tt.hi * s.hi;
    float wl = metal::fma(tt.hi, s.hi, -wh);
    wl = wl + metal::fma(tt.hi, s.lo, tt.lo * s.hi);
    return nm_i_fast_two_sum(wh, wl);
}

// log1p(w.hi + w.lo) for w in [-0.5, sqrt(2)-1], as hi + lo.
NM_INLINE nm_i_df nm_i_log1p_df(nm_i_df w) {
    if (w.hi >= -2.928932309e-01f) {
        nm_i_df l = nm_i_log1p_reduced(w.hi);
        return nm_i_fast_two_sum(l.hi, l.lo + w.lo / (1.0f + w.hi));
    }
    nm_i_df u = nm_i_fast_two_sum(1.0f, w.hi);       // 1 + w.hi = u.hi + u.lo exactly
    nm_i_df l = nm_i_log_df(u.hi);
    return nm_i_fast_two_sum(l.hi, l.lo + (u.lo + w.lo) / u.hi);
}

// For x < -0.5, not an integer, x > -42: D with Gamma(x) = 1/D,
// D = (1 + w(t)) * prod_{k=0..m} (x + k), m = -floor(x), t = x + m in (0, 1).
// All factors x + k are exact; the product is kept as hi + lo. The two factors of magnitude < 1
// (t and t - 1) come first so that partial products only grow.
NM_INLINE nm_i_df nm_i_gamma_neg_denominator(float x) {
    float fl = metal::floor(x);
    int m = int(-fl);
    float t = x - fl;                                // exact
    nm_i_df d = nm_i_make_df(t, 0.0f);
    for (int k = m - 1; k >= 0; --k) {
        d = nm_i_df_mul_f(d, x + float(k));
    }
    return nm_i_df_mul_1p(d, nm_i_rgamma_m1(t));
}

// Method: Gamma(x) = prod_{k=1}^{n-1}(x-k) / (1 + w(t)) for x = n + t >= 1 (product in
// double-float, exact factors), 1/(x (1 + w(x))) for -0.5 < x < 1, and 1/D (see above) for
// x < -0.5; 1/Gamma(1+t) - 1 = t(t-1)S(t) is a minimax polynomial on [-0.5, 1].
NM_INLINE float nm_tgamma(float x) {
    if (x != x) {
        return x;
    }
    if (x == 0.0f) {
        return 1.0f / x;                             // +-inf
    }
    if (x > 35.1f) {
        return INFINITY;                             // Gamma(x) > FLT_MAX for x > 35.0401
    }
    if (x < 1.0f && x > -0.5f) {
        nm_i_df d = nm_i_df_mul_1p(nm_i_make_df(x, 0.0f), nm_i_rgamma_m1(x));
        return nm_i_df_recip(d);
    }
    if (x < 0.0f) {
        float fl = metal::floor(x);
        if (x == fl) {
            return NAN;                              // negative integers and -inf
        }
        if (x < -42.0f) {                            // |Gamma(x)| < 2^-140: zero with the sign
            int m = int(-fl);                        // x in (-m, -m+1), |x| < 2^24 here
            return ((m & 1) != 0) ? -0.0f : 0.0f;
        }
        nm_i_df d = nm_i_gamma_neg_denominator(x);
        if (!(metal::fabs(d.hi) <= NM_FLT_MAX)) {
            return metal::copysign(0.0f, d.hi);      // result below 2^-128
        }
        return nm_i_df_recip(d);
    }
    float n = metal::floor(x);
    float t = x - n;                                 // exact
    int ni = int(n);
    nm_i_df p = nm_i_make_df(0.00390625f, 0.0f);    // 2^-8 keeps the product finite near 35
    for (int k = 1; k < ni; ++k) {
        p = nm_i_df_mul_f(p, x - float(k));          // x - k exact
    }
    nm_i_df w = nm_i_rgamma_m1(t);
    nm_i_df q = nm_i_fast_two_sum(1.0f, w.hi);
    q.lo = q.lo + w.lo;
    float r = p.hi / q.hi;
    float e = metal::fma(-r, q.hi, p.hi);
    e = e + (p.lo - r * q.lo);
    r = r + e / q.hi;
    return metal::ldexp(r, 8);
}

// lgamma(x) for x >= 8 by Stirling's series: (x - 1/2) log x - x + log(2 pi)/2 + 1/(12x) - ...,
// with x (log x - 1) formed in double-float.
NM_INLINE float nm_i_lgamma_stirling(float x) {
    nm_i_df l = nm_i_log_df(x);
    float bh = l.hi - 1.0f;                          // exact for log x >= 2
    float ph = x * bh;
    if (ph == INFINITY) {
        return INFINITY;
    }
    float pl = metal::fma(x, bh, -ph) + x * l.lo;
    float r = 1.0f / x;
    float r2 = r * r;
    float c = metal::fma(r2, -5.952381180e-04f, 7.936508046e-04f);
    c = metal::fma(r2, c, -2.777777845e-03f);
    c = metal::fma(r2, c, 8.333333582e-02f);
    c = c * r;
    float tail = (c + NM_HALF_LOG_2PI) - 0.5f * l.hi;
    tail = tail - 0.5f * l.lo;
    return ph + (pl + tail);
}

// Method: near the zeros, lgamma(1+t) = -log1p(w(t)) for x = 1 + t in [1, 2) and
// lgamma(x) = -log1p((x-1)(1 + x^2 S(x))) for x in [0.5, 1), so the zeros at 1 and 2 keep
// relative accuracy; (0, 0.5): -log x - log1p(w(x)); [2, 8): log(prod (x-k)) - log1p(w(t));
// >= 8: Stirling; (-20, 0): -log|D| with D as for tgamma; <= -20: reflection
// log(pi) - log|x sin(pi x)| - lgamma(-x). Logarithms are the double-float core above.
NM_INLINE float nm_lgamma(float x) {
    if (x != x) {
        return x;
    }
    float a = metal::fabs(x);
    if (a == INFINITY || x == 0.0f) {
        return INFINITY;
    }
    if (x >= 8.0f) {
        return nm_i_lgamma_stirling(x);
    }
    if (x > 0.0f) {
        if (x < 0.5f) {
            nm_i_df l = nm_i_log_df(x);
            nm_i_df w = nm_i_log1p_df(nm_i_rgamma_m1(x));
            nm_i_df s = nm_i_two_sum(l.hi, w.hi);
            return -(s.hi + ((s.lo + l.lo) + w.lo));
        }
        if (x < 1.0f) {
            // x Q(x) - 1 = (x - 1)(1 + x^2 S(x)), all in double-float
            nm_i_df sx = nm_i_poly_rgamma(x);
            float x2h = x * x;
            float x2l = metal::fma(x, x, -x2h);
            float ph = x2h * sx.hi;
            float pl = metal::fma(x2h, sx.hi, -ph) + metal::fma(x2h, sx.lo, x2l * sx.hi);
            nm_i_df v = nm_i_fast_two_sum(1.0f, ph);
            float xm = x - 1.0f;                     // exact
            float wh = xm * v.hi;
            float wl = metal::fma(xm, v.hi, -wh) + xm * (v.lo + pl);
            nm_i_df l = nm_i_log1p_df(nm_i_fast_two_sum(wh, wl));
            return 0.0f - (l.hi + l.lo);
        }
        if (x < 2.0f) {
            nm_i_df w = nm_i_log1p_df(nm_i_rgamma_m1(x - 1.0f));
            return 0.0f - (w.hi + w.lo);
        }
        float n = metal::floor(x);
        float t = x - n;
        int ni = int(n);
        nm_i_df p = nm_i_make_df(x - 1.0f, 0.0f);
        for (int k = 2; k < ni; ++k) {
            p = nm_i_df_mul_f(p, x - float(k));
        }
        nm_i_df l = nm_i_log_df(p.hi);
        float llo = l.lo + p.lo / p.hi;
        nm_i_df w = nm_i_log1p_df(nm_i_rgamma_m1(t));
        nm_i_df s = nm_i_two_sum(l.hi, -w.hi);
        return s.hi + ((s.lo + llo) - w.lo);
    }
    // x < 0
    float fl = metal::floor(x);
    if (x == fl) {
        return INFINITY;                             // poles
    }
    if (x > -0.5f) {
        nm_i_df l = nm_i_log_df(a);
        nm_i_df w = nm_i_log1p_df(nm_i_rgamma_m1(x));   // w in (-0.44, 0)
        return -(l.hi + (l.lo + (w.hi + w.lo)));
    }
    if (x > -20.0f) {
        nm_i_df d = nm_i_gamma_neg_denominator(x);
        if (d.hi < 0.0f) {
            d.hi = -d.hi;
            d.lo = -d.lo;
        }
        nm_i_df l = nm_i_log_df(d.hi);
        return 0.0f - (l.hi + (l.lo + d.lo / d.hi));
    }
    float r = metal::fabs(x - metal::rint(x));       // exact, in (0, 0.5]
    float s = r * nm_i_poly_sinpi(r * r);            // |sin(pi x)|
    nm_i_df l = nm_i_log_df(a * s);
    float lg = nm_i_lgamma_stirling(a);
    return ((NM_LOG_PI - l.hi) - l.lo) - lg;
}

// ---------------------------------------------------------------------------------------------
// hypot, remainder, cbrt
// ---------------------------------------------------------------------------------------------

// Method: scale by 2^-e (exact), sum of squares in double-float (products split with fma), sqrt,
// then one Newton correction h + (s - h^2)/(2h) with an fma residual (Borges 2019 style).
NM_INLINE float nm_hypot(float x, float y) {
    float a = metal::fabs(x);
    float b = metal::fabs(y);
    if (a == INFINITY || b == INFINITY) {
        return INFINITY;
    }
    if (a != a || b != b) {
        return x + y;
    }
    if (a < b) {
        float t = a;
        a = b;
        b = t;
    }
    if (b == 0.0f || b * 8192.0f < a) {              // b/a < 2^-13: result rounds to a
        return a;
    }
    int e;
    metal::frexp(a, e);
    float as = metal::ldexp(a, -e);                  // [0.5, 1)
    float bs = metal::ldexp(b, -e);                  // [2^-14, 1)
    float ah = as * as;
    float al = metal::fma(as, as, -ah);
    float bh = bs * bs;
    float bl = metal::fma(bs, bs, -bh);
    float sh = ah + bh;
    float sl = ((ah - sh) + bh) + (al + bl);
    float h = metal::sqrt(sh);
    float d = metal::fma(-h, h, sh) + sl;
    h = metal::fma(d, 0.5f / h, h);
    return metal::ldexp(h, e);
}

// Method: exact long division on the 24-bit significands (7 quotient bits per step, unsigned
// integer arithmetic), tracking the parity of the quotient; then round-half-even selects r or
// r - |y|. The result is always exact (IEEE 754 remainder, as Python's math.remainder).
NM_INLINE float nm_remainder(float x, float y) {
    if (x != x || y != y) {
        return x + y;
    }
    float ax = metal::fabs(x);
    float ay = metal::fabs(y);
    if (ax == INFINITY || ay == 0.0f) {
        return NAN;
    }
    if (ay == INFINITY || ax == 0.0f) {
        return x;
    }
    int ex;
    int ey;
    float fx = metal::frexp(ax, ex);
    float fy = metal::frexp(ay, ey);
    if (ex < ey - 1) {                               // |x| < |y| / 2
        return x;
    }
    uint mx = uint(metal::ldexp(fx, 24));
    uint my = uint(metal::ldexp(fy, 24));
    uint big_m = my << 1;                            // |y| in units of 2^(ey-25)
    uint rem = mx;                                   // < big_m
    uint qlast = 0u;
    int sh = ex - ey + 1;
    while (sh > 0) {
        int step = sh < 7 ? sh : 7;
        uint v = rem << step;
        qlast = v / big_m;
        rem = v - qlast * big_m;
        sh -= step;
    }
    uint twice = rem << 1;
    float res;
    if (twice > big_m || (twice == big_m && (qlast & 1u) != 0u)) {
        res = -float(big_m - rem);
    } else {
        res = float(rem);
    }
    res = metal::ldexp(res, ey - 25);
    return (x < 0.0f) ? -res : res;
}

// Method: x = m 2^(3q + r); cubic minimax start for cbrt(m), one Newton step, then a final
// Newton step whose residual y^3 - m is evaluated exactly with fma.
NM_INLINE float nm_cbrt(float x) {
    float a = metal::fabs(x);
    if (!(a > 0.0f) || a == INFINITY) {
        return x + x;                                // +-0, +-inf, NaN
    }
    int e;
    float m = metal::frexp(a, e);                    // a = m 2^e, m in [0.5, 1)
    int q = (e + 300) / 3 - 100;                     // floor(e / 3)
    int r = e - 3 * q;                               // 0, 1, 2
    float y = nm_i_poly_cbrt(m);
    if (r == 1) {
        y = y * 1.259921074e+00f;
    } else if (r == 2) {
        y = y * 1.587401032e+00f;
    }
    float mm = metal::ldexp(m, r);                   // target: y^3 = mm, mm in [0.5, 4)
    float y2 = y * y;
    y = y - (y2 * y - mm) / (3.0f * y2);
    y2 = y * y;
    float y2l = metal::fma(y, y, -y2);
    float res = metal::fma(y2, y, -mm) + y2l * y;
    y = y - res / (3.0f * y2);
    return metal::copysign(metal::ldexp(y, q), x);
}

// ---------------------------------------------------------------------------------------------
// half overloads: compute in float, round once.
// ---------------------------------------------------------------------------------------------

NM_INLINE half nm_erf(half x) { return half(nm_erf(float(x))); }
NM_INLINE half nm_erfc(half x) { return half(nm_erfc(float(x))); }
NM_INLINE half nm_tgamma(half x) { return half(nm_tgamma(float(x))); }
NM_INLINE half nm_lgamma(half x) { return half(nm_lgamma(float(x))); }
NM_INLINE half nm_expm1(half x) { return half(nm_expm1(float(x))); }
NM_INLINE half nm_log1p(half x) { return half(nm_log1p(float(x))); }
NM_INLINE half nm_hypot(half x, half y) { return half(nm_hypot(float(x), float(y))); }
NM_INLINE half nm_remainder(half x, half y) { return half(nm_remainder(float(x), float(y))); }
NM_INLINE half nm_cbrt(half x) { return half(nm_cbrt(float(x))); }
