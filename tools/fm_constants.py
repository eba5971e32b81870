"""Every table and polynomial coefficient of numba_metal/compiler/mslib/float64_math.metal, computed with mpmath.

float64_math.metal holds the constants between `//@generated NAME` and `//@end` lines; this module is their
owner. `python tools/fm_constants.py --write` rewrites those blocks from the definitions below;
tests/float64/test_fm_library.py checks that the file and this module agree.

Conventions: a fixed-point constant "Qn" is round(value * 2^n), stored as the 64-bit two's-complement
pattern (MSL reads tables as ulong and casts); a 128-bit constant is two words, high first. Polynomials are
truncated Taylor series of the stated function (their truncation error is bounded where they are used in
float64_math.metal), rescaled to the variable the MSL evaluates them in so that every coefficient and partial
sum of the fixed-point Horner scheme stays below 2 in magnitude.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import mpmath as mp

PREC = 400      # every constant is computed at this precision (other test modules set mpmath's default lower)

METAL = Path(__file__).resolve().parents[1] / "numba_metal" / "compiler" / "mslib" / "float64_math.metal"
COMPLEX_METAL = Path(__file__).resolve().parents[1] / "numba_metal" / "compiler" / "mslib" / "complex.metal"

M64 = (1 << 64) - 1


def q(value, bits: int) -> int:
    """round(value * 2^bits) as an integer (nearest)."""
    return int(mp.nint(mp.mpf(value) * mp.mpf(2) ** bits))


def word(v: int) -> int:
    return v & M64


def split128(v: int) -> list[int]:
    """A 128-bit two's-complement value as [high word, low word]."""
    v &= (1 << 128) - 1
    return [v >> 64, v & M64]


def taylor(coeffs_fn, count: int, scale_log2: int):
    """Q62 coefficients c_k = a_k * 2^(-scale_log2 * k) for k < count."""
    return [word(q(coeffs_fn(k) * mp.mpf(2) ** (-scale_log2 * k), 62)) for k in range(count)]


# ---------------------------------------------------------------------------------------------------
# exp, expm1, sinh

EXP_N = 128


def exp_tab():
    return [q(mp.mpf(2) ** (mp.mpf(j) / EXP_N), 62) for j in range(EXP_N)]


def exp_poly():
    # expm1(r)/r = sum r^k/(k+1)!, evaluated in u = r 2^6 (|r| <= ln2/256)
    return taylor(lambda k: 1 / mp.factorial(k + 1), 6, 6)


def expm1_poly():
    # expm1(r)/r = sum r^k/(k+1)!, evaluated in u = r (|r| <= ln2/2 + 2^-60)
    return taylor(lambda k: 1 / mp.factorial(k + 1), 15, 0)


def sinh_poly():
    # sinh(x)/x = sum x^2k/(2k+1)! = sum 2^k u^k/(2k+1)! with u = x^2/2 (|x| < 1)
    return taylor(lambda k: mp.mpf(2) ** k / mp.factorial(2 * k + 1), 11, 0)


def inv_ln2_n():
    return split128(q(EXP_N / mp.log(2), 120))


# ---------------------------------------------------------------------------------------------------
# log

LOG_N = 128
LOG_HALVED_FROM = 53   # indices j >= this take z = m / 2^64 (z in [0.705, 1)), the others z = m / 2^63


def log_centers():
    """(c_j, center_j) for the 128 subintervals: c_j = round(2^10 / center_j), c_0 = 2^10."""
    out = []
    for j in range(LOG_N):
        center = 1 + mp.mpf(j) / LOG_N
        if j >= LOG_HALVED_FROM:
            center /= 2
        c = 1024 if j == 0 else int(mp.nint(1024 / center))
        out.append((c, center))
    return out


def log_c():
    return [c for c, _ in log_centers()]


def log_l():
    """-log(c_j / 2^10) in Q116 as two words per entry."""
    words = []
    for c, _ in log_centers():
        words += split128(q(-mp.log(mp.mpf(c) / 1024), 116))
    return words


def log_r_bound():
    """max |z c_j / 2^10 - 1| over every subinterval (the bound the polynomial is used on)."""
    worst = mp.mpf(0)
    for j, (c, center) in enumerate(log_centers()):
        half = mp.mpf(1) / (2 * LOG_N) / (2 if j >= LOG_HALVED_FROM else 1)
        lo, hi = center - half, center + half
        if j == 0:
            lo, hi = 1 - mp.mpf(2) ** -9, 1 + mp.mpf(2) ** -8
        for z in (lo, hi):
            worst = max(worst, abs(z * c / 1024 - 1))
    return worst


def log_poly():
    # (log1p(r) - r + r^2/2) / r^3 = sum (-1)^k r^k / (k + 3), in u = r 2^6 (|r| < 2^-7.6)
    return taylor(lambda k: mp.mpf(-1) ** k / (k + 3), 9, 6)


def x2_const(value):
    """A positive value as the library's 128-bit extended constant: [high word, low word, exponent e]
    with value = (hi 2^64 + lo) 2^(e - 127), hi's bit 63 set."""
    e = int(mp.floor(mp.log(value, 2)))
    sig = q(value * mp.mpf(2) ** (127 - e), 0)
    if sig >> 128:
        e += 1
        sig = q(value * mp.mpf(2) ** (127 - e), 0)
    return split128(sig) + [e]


# ---------------------------------------------------------------------------------------------------
# trigonometric

def two_over_pi_words(count=19):
    """A zero word, then the first 64 * count bits of 2/pi after the binary point."""
    with mp.workprec(64 * count + 128):
        v = int(mp.floor(2 / mp.pi * mp.mpf(2) ** (64 * count)))
    return [0] + [(v >> (64 * (count - 1 - k))) & M64 for k in range(count)]


def pio2_cw():
    """pi/2 * 2^170, three words, high first."""
    v = q(mp.pi / 2, 170)
    return [v >> 128, (v >> 64) & M64, v & M64]


def sin_poly():
    # sin(r)/r = sum (-1)^k r^2k/(2k+1)! in u = r^2/2
    return taylor(lambda k: mp.mpf(-2) ** k / mp.factorial(2 * k + 1), 10, 0)


def cos_poly():
    return taylor(lambda k: mp.mpf(-2) ** k / mp.factorial(2 * k), 11, 0)


def x_const(value):
    """A positive value as the library's 64-bit extended constant: [m, e] with value = m 2^(e - 63)."""
    e = int(mp.floor(mp.log(value, 2)))
    m = q(value * mp.mpf(2) ** (63 - e), 0)
    if m >> 64:
        e += 1
        m = q(value * mp.mpf(2) ** (63 - e), 0)
    return [m, e]


# ---------------------------------------------------------------------------------------------------
# atan

ATAN_N = 64


def atan_tab():
    return [q(mp.atan(mp.mpf(j) / ATAN_N), 64) for j in range(ATAN_N + 1)]


def atan_poly():
    # atan(t)/t = sum (-1)^k t^2k/(2k+1) in u = t^2 2^7 (|t| <= 1/16)
    return taylor(lambda k: mp.mpf(-1) ** k / (2 * k + 1), 8, 7)


# ---------------------------------------------------------------------------------------------------
# cbrt

def cbrt_seed():
    """z^(-1/3) in Q63 at the midpoints of z = 2^rho (1 + i/8 .. (i+1)/8), rho in 0..2, i in 0..7."""
    return [q((mp.mpf(2) ** rho * (1 + (i + mp.mpf(0.5)) / 8)) ** (-mp.mpf(1) / 3), 63)
            for rho in range(3) for i in range(8)]


# ---------------------------------------------------------------------------------------------------
# erf, erfc

def _chebyfit(f, interval, degree):
    """mpmath.chebyfit's polynomial in ascending powers, with its error estimate (mpmath 1.4 takes ``asc``
    and deprecates the descending order it returns by default; mpmath 1.3 has only that order)."""
    import inspect
    if "asc" in inspect.signature(mp.chebyfit).parameters:
        return mp.chebyfit(f, interval, degree, error=True, asc=True)
    poly, err = mp.chebyfit(f, interval, degree, error=True)
    return list(reversed(poly)), err


def erf_poly():
    # erf(x)/x = 2/sqrt(pi) sum (-1)^n x^2n / (n! (2n+1)) in u = x^2/2 (|x| < 1); the alternating series'
    # truncation after n = 20 is below its first omitted term, 2/sqrt(pi)/(21! 43) < 2^-70
    return taylor(lambda n: 2 / mp.sqrt(mp.pi) * mp.mpf(-2) ** n / (mp.factorial(n) * (2 * n + 1)), 21, 0)


# x erfc(x) e^(x^2) as a function of t = 1/x on t-intervals of power-of-two width (t from 1 down to 0):
# (lower end, width) per interval, each fitted by Chebyshev interpolation (mpmath.chebyfit) of degree 15
# in u = (t - centre)/width in [-1/2, 1/2]; the fit errors are below 2^-67.
ERFC_INTERVALS = ((0.75, 0.25), (0.5, 0.25), (0.375, 0.125), (0.25, 0.125), (0.125, 0.125), (0.0, 0.125))
ERFC_DEGREE = 16


def _erfc_g(t):
    if t == 0:
        return 1 / mp.sqrt(mp.pi)
    x = 1 / t
    return x * mp.erfc(x) * mp.exp(x * x)


def erfc_fits():
    out = []
    with mp.workprec(200):
        for lo, width in ERFC_INTERVALS:
            centre = mp.mpf(lo) + mp.mpf(width) / 2
            poly, err = _chebyfit(lambda u: _erfc_g(centre + u * width), [-0.5, 0.5], ERFC_DEGREE)
            out.append((centre, poly, err))
    return out


def erfc_poly():
    words = []
    for _, coeffs, _ in erfc_fits():
        words += [word(q(c, 62)) for c in coeffs]
    return words


def erfc_centres():
    return [q(centre, 63) for centre, _, _ in erfc_fits()]


# ---------------------------------------------------------------------------------------------------
# gamma, lgamma

LGAMMA_DEGREE = 23


def lgamma_fit():
    """H(t) = lgamma(2 + t)/t on [-1/2, 1/2] (H(0) = 1 - Euler's gamma), Chebyshev interpolation."""
    with mp.workprec(200):
        h = lambda t: mp.loggamma(2 + t) / t if t != 0 else 1 - mp.euler
        poly, err = _chebyfit(h, [-0.5, 0.5], LGAMMA_DEGREE)
    return poly, err


def lgamma_poly():
    return [word(q(c, 62)) for c in lgamma_fit()[0]]


def stirling_poly():
    # lgamma(x) - ((x - 1/2) log x - x + log(2 pi)/2) ~ sum B_2k/(2k(2k-1)) w^(2k-1), w = 1/x, written as
    # w S(w^2) with S in u = w^2 2^6 (x >= 12, so u < 0.45); ten terms leave less than 2^-67 at x = 12
    return taylor(lambda k: mp.bernoulli(2 * k + 2) / ((2 * k + 2) * (2 * k + 1)), 10, 6)


# ---------------------------------------------------------------------------------------------------
# The blocks of float64_math.metal: name -> (C element type, values, values per line)

def blocks():
    return {
        "nm_fm_exp_tab": ("ulong", exp_tab(), 4),
        "nm_fm_exp_poly": ("ulong", exp_poly(), 4),
        "nm_fm_expm1_poly": ("ulong", expm1_poly(), 4),
        "nm_fm_sinh_poly": ("ulong", sinh_poly(), 4),
        "nm_fm_inv_ln2_n": ("ulong", inv_ln2_n(), 4),
        "nm_fm_log_c": ("ushort", log_c(), 16),
        "nm_fm_log_l": ("ulong", log_l(), 4),
        "nm_fm_log_poly": ("ulong", log_poly(), 4),
        "nm_fm_two_over_pi": ("ulong", two_over_pi_words(), 4),
        "nm_fm_pio2_cw": ("ulong", pio2_cw(), 4),
        "nm_fm_sin_poly": ("ulong", sin_poly(), 4),
        "nm_fm_cos_poly": ("ulong", cos_poly(), 4),
        "nm_fm_atan_tab": ("ulong", atan_tab(), 4),
        "nm_fm_atan_poly": ("ulong", atan_poly(), 4),
        "nm_fm_cbrt_seed": ("ulong", cbrt_seed(), 4),
        "nm_fm_erf_poly": ("ulong", erf_poly(), 4),
        "nm_fm_erfc_poly": ("ulong", erfc_poly(), 4),
        "nm_fm_erfc_centre": ("ulong", erfc_centres(), 4),
        "nm_fm_lgamma_poly": ("ulong", lgamma_poly(), 4),
        "nm_fm_stirling_poly": ("ulong", stirling_poly(), 4),
    }


# Scalar constants: name -> value, emitted as #define lines inside the `nm_fm_scalars` block.
def scalars():
    s = {}
    s["NM_FM_LN2_Q63"] = q(mp.log(2), 63)
    hi, lo = split128(q(mp.log(2), 116))
    s["NM_FM_LN2_Q116_HI"], s["NM_FM_LN2_Q116_LO"] = hi, lo
    for name, value in (("INV_LN2", 1 / mp.log(2)), ("INV_LN10", 1 / mp.log(10))):
        hi, lo, e = x2_const(value)
        s[f"NM_FM_{name}_HI"], s[f"NM_FM_{name}_LO"], s[f"NM_FM_{name}_E"] = hi, lo, e
    hi, lo = split128(q(mp.log(2 * mp.pi) / 2, 116))
    s["NM_FM_HALF_LOG_2PI_Q116_HI"], s["NM_FM_HALF_LOG_2PI_Q116_LO"] = hi, lo
    s["NM_FM_THIRD_Q64"] = q(mp.mpf(1) / 3, 64)
    for name, value in (("PIO2", mp.pi / 2), ("PI", mp.pi), ("PIO4", mp.pi / 4), ("LN2", mp.log(2)),
                        ("HALF_LOG_2PI", mp.log(2 * mp.pi) / 2), ("LOG_PI", mp.log(mp.pi))):
        m, e = x_const(value)
        s[f"NM_FM_{name}_M"], s[f"NM_FM_{name}_E"] = m, e
    return s


def render_block(name: str) -> str:
    with mp.workprec(PREC):
        return _render_block(name)


def _render_block(name: str) -> str:
    if name == "nm_fm_scalars":
        lines = []
        for key, value in scalars().items():
            if key.endswith("_E"):
                lines.append(f"#define {key} ({value})")
            else:
                lines.append(f"#define {key} 0x{value:016X}UL")
        return "\n".join(lines) + "\n"
    ctype, values, per_line = blocks()[name]
    width = 4 if ctype == "ushort" else 16
    suffix = "" if ctype == "ushort" else "UL"
    rows = []
    for k in range(0, len(values), per_line):
        rows.append("    " + ", ".join(f"0x{v:0{width}X}{suffix}" for v in values[k:k + per_line]) + ",")
    return f"constant {ctype} {name}[{len(values)}] = {{\n" + "\n".join(rows) + "\n};\n"


_BLOCK = re.compile(r"^//@generated (\S+)\n(.*?)^//@end\n", re.M | re.S)


def generated_blocks(text: str) -> dict[str, str]:
    return {m.group(1): m.group(2) for m in _BLOCK.finditer(text)}


def rewrite(text: str) -> str:
    return _BLOCK.sub(lambda m: f"//@generated {m.group(1)}\n{render_block(m.group(1))}//@end\n", text)


if __name__ == "__main__":
    if "--write" in sys.argv:
        for path in (METAL, COMPLEX_METAL):
            if path.exists():
                path.write_text(rewrite(path.read_text(encoding="utf-8")), encoding="utf-8")
    with mp.workprec(PREC):
        print("log |r| bound: 2^%.3f" % float(mp.log(log_r_bound(), 2)))
