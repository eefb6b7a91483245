#pragma once
// The task sampler's standard normals, as named, versioned streams (option `sampler`, stored in every
// file's /points/sampler).  Both are Box-Muller over the same counter-based bits: pair q of a task with key k
// takes b = rng_bits(k, q) (float) and gives the normals r cos(theta) and r sin(theta) with r = sqrt(-2 log u1),
// theta = 2 pi u2.  They differ in how the functions are computed, so in the last bits of every normal:
//   v1  Eigen's array functions at width kLanes<T> (EIGEN_FAST_MATH's sqrt: rsqrt and a Newton step).
//   v2  (float) the kernel below, written once for a scalar and for a register, with no special cases: u1 and
//       u2 lie in (0, 1) by construction.  log is Cephes' logf (mantissa in [sqrt(1/2), sqrt(2)), a degree-9
//       polynomial); sqrt is IEEE; theta is split exactly in integers: octant o = top 3 of u2's 24 bits,
//       the angle a in (0, pi/4) from the other 21 (mirrored in odd octants), Cephes' sinf and cosf
//       polynomials on a, then a swap and two sign flips by o.  2-2.7x faster than v1 (bench/bench_normals).
//       Double tasks (precision = float64) draw as v1.
// Every a b + c is one fused multiply-add when the target has FMA (fused_madd), in the scalar and the register
// instantiation alike, so that tests/data_ref.hpp's scalar transcription gives the same bits.  Every add has
// at most one product among its operands, so the compiler's contraction of the register form is unambiguous.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#elif defined(__aarch64__)
#include <arm_neon.h>
#endif

#include "icl/base/point.hpp"
#include "icl/base/simd.hpp"

namespace icl {

namespace normals_v2 {

template <class To, class From>
inline To bits_as(From x) {
  static_assert(sizeof(To) == sizeof(From));
  To y;
  std::memcpy(&y, &x, sizeof y);
  return y;
}

// F is float or a register of floats, I the int32 of the same shape.
template <class F, class I>
inline F to_float(I x) {
  if constexpr (std::is_arithmetic_v<I>) return static_cast<F>(x);
  else return __builtin_convertvector(x, F);
}

// The correctly rounded square root, as one instruction on a register where the target has it (GCC
// vectorises no std::sqrt loop while errno may be set: -fmath-errno, the default we keep).
template <class F>
inline F sqrt_ieee(F x) {
  if constexpr (std::is_arithmetic_v<F>) {
    return std::sqrt(x);
  } else {
#if defined(__AVX512F__)
    if constexpr (sizeof(F) == 64) return reinterpret_cast<F>(_mm512_sqrt_ps(reinterpret_cast<__m512>(x)));
#endif
#if defined(__AVX__)
    if constexpr (sizeof(F) == 32) return reinterpret_cast<F>(_mm256_sqrt_ps(reinterpret_cast<__m256>(x)));
#endif
#if defined(__SSE2__)
    if constexpr (sizeof(F) == 16) return reinterpret_cast<F>(_mm_sqrt_ps(reinterpret_cast<__m128>(x)));
#endif
#if defined(__aarch64__)
    if constexpr (sizeof(F) == 16) return reinterpret_cast<F>(vsqrtq_f32(reinterpret_cast<float32x4_t>(x)));
#endif
    for (int i = 0; i < static_cast<int>(sizeof(F) / sizeof(float)); ++i) x[i] = std::sqrt(x[i]);
    return x;
  }
}

// log(x) for a normal float x in (0, 1): Cephes' logf (its polynomial and split of log 2) without its
// special cases, its last three sums in another order.
template <class F, class I>
inline F log_unit(F x) {
  const I bits = bits_as<I>(x);
  I e = (bits >> 23) - 126;
  const F m = bits_as<F>((bits & 0x007fffff) | 0x3f000000);   // x = m 2^e, m in [1/2, 1)
  const auto below = m < 0.707106781186547524f;
  e = below ? e - 1 : e;
  const F f = below ? m + m - 1.0f : m - 1.0f;                // log x = e log 2 + log(1 + f)
  const F z = f * f;
  F p = fused_madd<F>(f, 7.0376836292E-2f, -1.1514610310E-1f);
  p = fused_madd<F>(p, f, 1.1676998740E-1f);
  p = fused_madd<F>(p, f, -1.2420140846E-1f);
  p = fused_madd<F>(p, f, 1.4249322787E-1f);
  p = fused_madd<F>(p, f, -1.6668057665E-1f);
  p = fused_madd<F>(p, f, 2.0000714765E-1f);
  p = fused_madd<F>(p, f, -2.4999993993E-1f);
  p = fused_madd<F>(p, f, 3.3333331174E-1f);
  const F fe = to_float<F>(e);
  F y = fused_madd<F>(z, -0.5f, f);                            // f - f^2/2
  y = fused_madd<F>(fe, -2.12194440e-4f, y);                   // + e (log 2 - 0.693359375)
  y = fused_madd<F>(p * f, z, y);                              // + f^3 P(f)
  return fused_madd<F>(fe, 0.693359375f, y);                   // + e 0.693359375 (exact in float)
}

// The pair of normals of 24-bit integers b1, b2: u1 = (b1 + 1/2) 2^-24 in float, as v1's (rounded for
// b1 >= 2^23), and u2 = (b2 + 1/2) 2^-24, used exactly through its bits.
template <class F, class I>
inline void box_muller(I b1, I b2, F* zc, F* zs) {
  const F u1 = (to_float<F>(b1) + 0.5f) * 0x1p-24f;
  const F r = sqrt_ieee(log_unit<F, I>(u1) * -2.0f);
  const I o = b2 >> 21;                                        // theta's octant, 0..7
  const I j = (b2 & 0x1fffff) ^ (-(o & 1) & 0x1fffff);        // odd octants count from their end
  constexpr float kStep = static_cast<float>(0.78539816339744830962 * 0x1p-21);   // pi/4 2^-21, exact scaling
  const F a = (to_float<F>(j) + 0.5f) * kStep;                 // in (0, pi/4)
  const F z = a * a;
  F s = fused_madd<F>(z, -1.9515295891E-4f, 8.3321608736E-3f);
  s = fused_madd<F>(s, z, -1.6666654611E-1f);
  s = fused_madd<F>(s * z, a, a);                              // sin a (Cephes' sinf)
  F c = fused_madd<F>(z, 2.443315711809948E-5f, -1.388731625493765E-3f);
  c = fused_madd<F>(c, z, 4.166664568298827E-2f);
  c = fused_madd<F>(c * z, z, fused_madd<F>(z, -0.5f, 1.0f));  // cos a (Cephes' cosf)
  const auto swap = ((o ^ (o >> 1)) & 1) != 0;                 // octants 1, 2, 5, 6: cos theta = +-sin a
  const F x = swap ? s : c, y = swap ? c : s;
  const I flip_c = -(((o >> 1) ^ (o >> 2)) & 1) & INT32_MIN;   // cos theta < 0 in octants 2..5
  const I flip_s = -((o >> 2) & 1) & INT32_MIN;                // sin theta < 0 in octants 4..7
  *zc = bits_as<F>(bits_as<I>(r * x) ^ flip_c);
  *zs = bits_as<F>(bits_as<I>(r * y) ^ flip_s);
}

}  // namespace normals_v2
}  // namespace icl
