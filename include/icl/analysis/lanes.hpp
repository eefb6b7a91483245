#pragma once
// Tasks side by side in the analyses' per-task loops (TaskSpectra, GD++'s loss, the baselines' tunings):
// kTaskLanes doubles, one 512-bit register or two of 256 bits, computed as registers of the target's width
// (base/simd.hpp).  Lane arithmetic is element-wise, so a lane's values are those of the same expressions on
// one task's scalars, whatever its neighbours.
#include <cmath>
#include <cstring>

#include "icl/base/simd.hpp"

namespace icl {

constexpr int kTaskLanes = 8;

namespace lanes {

using Vd = Register<double>;
using Mask = Register<long>;   // what comparing two Vd gives: all ones or zero per element
constexpr int kWidth = static_cast<int>(sizeof(Vd) / sizeof(double));
static_assert(kTaskLanes % kWidth == 0, "a block of tasks is a whole number of registers");

template <class V>
inline V load(const void* p) {
  V v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
inline void store(double* p, Vd v) { std::memcpy(p, &v, sizeof v); }

// a b + c in one rounding per element where the target fuses, as `fused_madd` on each element: written out,
// so that the compiler cannot fuse another product of a sum instead (it contracts `a * b + c * d` either way).
inline Vd madd(Vd a, Vd b, Vd c) {
  Vd r;
  for (int i = 0; i < kWidth; ++i) r[i] = fused_madd(a[i], b[i], c[i]);
  return r;
}

// Whether any element of a comparison's result is set.
inline bool any(Mask m) {
  long r = 0;
  for (int i = 0; i < kWidth; ++i) r |= m[i];
  return r != 0;
}

inline Vd vabs(Vd x) {
  for (int i = 0; i < kWidth; ++i) x[i] = std::fabs(x[i]);
  return x;
}

}  // namespace lanes
}  // namespace icl
