#pragma once
// A lane vector: V = 64 / sizeof(T) tasks side by side (16 floats or 8 doubles, one 512-bit register or
// two 256-bit ones).  Batched kernels store every per-task quantity as lanes, so a per-task 6 x 21
// matrix product becomes long streams of vector FMAs with the batch as the innermost dimension.
#include <vector>

namespace icl {

template <class T>
struct LaneOf {
  typedef T type __attribute__((vector_size(64)));
};
template <class T>
using Lane = typename LaneOf<T>::type;
template <class T>
inline constexpr int kLanes = 64 / static_cast<int>(sizeof(T));

template <class T>
using LaneVec = std::vector<Lane<T>>;   // 64-byte aligned by C++17's aligned operator new

template <class T>
inline Lane<T> lane_zero() { return Lane<T>{}; }

template <class T>
inline T lane_sum(const Lane<T>& x) {   // fixed order: deterministic
  T s = 0;
  for (int v = 0; v < kLanes<T>; ++v) s += x[v];
  return s;
}

}  // namespace icl
