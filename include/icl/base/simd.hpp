#pragma once
// The target's vector register file, from the compiler's instruction-set macros: one build, one answer.
// The register-tiled kernels (model/lane_product.hpp, model/lane_kernels.hpp) compute in registers of its
// width and size their tiles from its count, on every instruction set a cluster has:
//   AVX-512 (Skylake-SP .. Sapphire Rapids, Zen 4/5): 32 registers of 64 bytes, a 64-byte lane (lane.hpp) in one;
//   AVX, AVX2 (Sandy Bridge .. Broadwell, Zen 1-3):     16 of 32 bytes, a lane in two;
//   NEON (Graviton, Grace, A64FX without SVE lowering): 32 of 16 bytes, a lane in four;
//   SSE (x86-64-v1/v2):                                 16 of 16 bytes, a lane in four.
// A tile's shape never changes a result: every output is accumulated in the same order whatever the tile
// (test_lane_product forces each shape in one build and compares bit for bit).
//
// The kernels compute in registers of the target's width, never in 64-byte vectors the target lacks: GCC
// keeps a vector wider than the hardware's in memory and lowers each operation to loads and stores
// (measured: AVX2 builds of the 64-byte kernels ran at 2-11 GFLOP/s of a 117 GFLOP/s peak, bench_tiles).
// A lane is kLaneParts registers; lane arithmetic is element-wise, so a kernel run once per part on the
// parts (`part`) computes the lane kernel's bits exactly.
#include <cmath>
#include <type_traits>

namespace icl {

struct VectorRegisters {
  int count;          // architectural vector registers
  int bytes;          // bytes per register
  bool fma;           // fused multiply-add (without it a product needs a register of its own)
  const char* name;   // the instruction set, as the benchmarks print it
};

#if defined(__AVX512F__)
inline constexpr VectorRegisters kVectorRegisters{32, 64, true, "AVX-512"};
#elif defined(__AVX2__) && defined(__FMA__)
inline constexpr VectorRegisters kVectorRegisters{16, 32, true, "AVX2"};
#elif defined(__AVX__)
inline constexpr VectorRegisters kVectorRegisters{16, 32, false, "AVX"};
#elif defined(__aarch64__)
inline constexpr VectorRegisters kVectorRegisters{32, 16, true, "NEON"};
#else
inline constexpr VectorRegisters kVectorRegisters{16, 16, false, "SSE"};
#endif

// a b + c as one fused multiply-add where the target has FMA, else two roundings, for a scalar or a register.
// The register form is left to the compiler, which contracts it (-ffp-contract=fast); a scalar one is explicit,
// since GCC contracts scalar code or not depending on the code around it.
template <class F, class B, class C>
inline F fused_madd(F a, B b, C c) {
  if constexpr (std::is_same_v<F, float>) {
#if defined(FP_FAST_FMAF)
    return std::fma(a, b, c);
#endif
  } else if constexpr (std::is_same_v<F, double>) {
#if defined(FP_FAST_FMA)
    return std::fma(a, b, c);
#endif
  }
  return a * b + c;
}

// Registers per 64-byte lane: 1 (AVX-512), 2 (AVX2), 4 (SSE, NEON).
inline constexpr int kLaneParts = 64 / kVectorRegisters.bytes;

// One register of T.  A register and the lane it is a part of may alias: GCC gives a vector type its
// element type's alias set (checked: a float store through one is reloaded through the other).
template <class T>
struct RegisterOf {
  typedef T type __attribute__((vector_size(kVectorRegisters.bytes)));
};
template <class T>
using Register = typename RegisterOf<T>::type;

// Part h of an array of lanes: element x is the h-th register of lane x.
template <class R>
struct LanePart {
  R* first;
  R& operator[](long x) const { return first[x * kLaneParts]; }
  LanePart operator+(long x) const { return {first + x * kLaneParts}; }   // from element x on
};

// part(x, h): lanes as their part h; scalars (weights shared by the lanes) as they are.
template <class X>
inline auto part(X* x, int h) {
  using E = std::remove_const_t<X>;
  if constexpr (std::is_arithmetic_v<E>) {
    return x;
  } else {
    using T = std::remove_reference_t<decltype(std::declval<E&>()[0])>;
    using R = std::conditional_t<std::is_const_v<X>, const Register<T>, Register<T>>;
    return LanePart<R>{reinterpret_cast<R*>(x) + h};
  }
}

// What a part view holds: Register<T>, or T for the weights.
template <class V>
using PartElement = std::remove_const_t<std::remove_reference_t<decltype(std::declval<const V&>()[0])>>;

// x, held in a register for the code that follows: a value read once and used by several multiply-adds, which
// GCC would otherwise read again from memory as an operand of each (a load per multiply-add, the limit of
// the lane kernels on cores that load one vector per multiply-add).  Only where it names the register; no
// instruction, the same value.
template <class R>
__attribute__((always_inline)) inline R in_register(R x) {
  if constexpr (!std::is_arithmetic_v<R>) {
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
    asm("" : "+v"(x));
#elif defined(__GNUC__) && defined(__aarch64__)
    asm("" : "+w"(x));
#endif
  }
  return x;
}

}  // namespace icl
