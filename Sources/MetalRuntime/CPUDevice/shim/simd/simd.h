/* simd/simd.h -- empty on purpose: MSL sources often include it; the types come from metal_stdlib. */
#pragma once
