// Minimal host stand-in for the parts of <metal_stdlib> that numba_metal/compiler/mathlib.metal
// uses, so the library can be compiled as C++ by clang and measured on the CPU
// (tests/compiler/test_mathlib.py). Not the CPU reference device's shim.
//
// No system header is included: the tests compile with -Ddouble=__no_double_in_MSL__, so any use
// of `double` in mathlib.metal (or here) fails to compile. Every metal:: function below is one
// that MSL's Table 6.4 provides and that is exact or correctly rounded in MSL's precise mode
// (Table 8.1), so the host results equal the GPU's in safe mode up to subnormal flushing
// (set FTZ/DAZ in the caller to model Apple GPUs).
#pragma once

typedef _Float16 half;
typedef unsigned int uint;

#define NM_INLINE inline __attribute__((__always_inline__))

#ifndef INFINITY
#define INFINITY __builtin_inff()
#endif
#ifndef NAN
#define NAN __builtin_nanf("")
#endif

namespace metal {
inline float fabs(float x) { return __builtin_fabsf(x); }
inline float fma(float a, float b, float c) { return __builtin_fmaf(a, b, c); }
inline float rint(float x) { return __builtin_rintf(x); }
inline float floor(float x) { return __builtin_floorf(x); }
inline float sqrt(float x) { return __builtin_sqrtf(x); }
inline float copysign(float x, float y) { return __builtin_copysignf(x, y); }
inline float ldexp(float x, int k) { return __builtin_ldexpf(x, k); }
inline float frexp(float x, int &e) { return __builtin_frexpf(x, &e); }
}  // namespace metal

using namespace metal;
