#pragma once
// Eigen, for every file of the project.  GCC 12 reports its own _mm512_undefined_* idiom (`__Y = __Y`)
// as uninitialised wherever Eigen's AVX-512 code is inlined (GCC bug 105593, fixed in GCC 13); the
// diagnostics are issued at the end of the translation unit, so they are silenced for the including
// file rather than around this include.
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ < 13
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
// Eigen 3.4 fuses its multiply-adds on aarch64 (vfmaq_f32) but says so (EIGEN_VECTORIZE_FMA) on x86 only.
// Its float tanh clamps its input where its rational approximation reaches exactly 1, at the point that
// suits unfused arithmetic; fused, tanh then stops at 1 - 2^-22 for every large input.  GELU's derivative
// (model/blocks.cpp) takes 1 - tanh^2 times a cubic in u, so in the tails it was off by up to 1e-4 (test_blocks'
// float check, 2.4e-3 against its 2e-3 bound; 2.7e-4 at -march=x86-64-v2).  x86 builds are unchanged.
#if defined(__aarch64__) && defined(__ARM_FEATURE_FMA) && !defined(EIGEN_VECTORIZE_FMA)
#define EIGEN_VECTORIZE_FMA
#endif
#include <Eigen/Dense>
