// The tiled lane products of the large-token kernels (lane_product.hpp) against their frozen naive
// reference, bitwise: every operand kind (lanes x lanes, weights x lanes, lanes x weights), both
// orientations of each operand, the three inits, the symmetric (upper) mode, and sizes that leave edge
// tiles and cross the m-blocks; each for every register tile an instruction set picks (lane_product.hpp:
// 5 x 5, 4 x 3, 3 x 3) and others, forced in this one build.  Then the fixed-size kernels of lane_kernels.hpp at
// every row block (30, 14 and others) against the generic path, bitwise.  Both run per register-wide part
// of the lanes as this build's instruction set has them (base/simd.hpp); the model-level checks in
// test_model.cpp compare with the naive model_ref.  The model-level check (the whole layer at D > 16 against model_ref,
// and its gradient against central differences) is in test_model.cpp.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "icl/base/lane.hpp"
#include "icl/base/rng.hpp"
#include "icl/model/lane_kernels.hpp"
#include "icl/model/lane_product.hpp"

namespace icl {
namespace {

// Standard normals into a vector of T or of Lane<T>.
template <class T, class X>
void fill(uint64_t seed, std::vector<X>* x) {
  std::vector<double> z(x->size() * sizeof(X) / sizeof(T));
  rng_normals(rng_key(seed, Stream::analysis), 0, static_cast<int>(z.size()), z.data());
  T* out = reinterpret_cast<T*>(x->data());
  for (size_t i = 0; i < z.size(); ++i) out[i] = static_cast<T>(z[i]);
}

struct Shape {
  int I, K, M;
};

// One product, tiled and by the reference, from the same operands; outputs compared bit for bit.
// TA, TB: Lane<T> or T.
template <class T, int RI, int RK, class TA, class TB>
void check(const Shape& s, bool a_transposed, bool b_transposed, ProductInit init, bool upper, uint64_t seed) {
  using L = Lane<T>;
  std::vector<TA> A0(static_cast<size_t>(s.I) * s.M);
  std::vector<TB> B0(static_cast<size_t>(s.M) * s.K);
  LaneVec<T> X(static_cast<size_t>(s.I) * s.K), out_tiled(X.size()), out_ref(X.size());
  fill<T>(seed, &A0);
  fill<T>(seed + 1, &B0);
  fill<T>(seed + 2, &X);
  fill<T>(seed + 3, &out_tiled);
  out_ref = out_tiled;
  const int a_row = a_transposed ? 1 : s.M, a_col = a_transposed ? s.I : 1;
  const int b_row = b_transposed ? 1 : s.K, b_col = b_transposed ? s.M : 1;
  LaneProduct<TA, TB, L> p{s.I, s.K, s.M, A0.data(), a_row, a_col, B0.data(), b_row, b_col,
                           out_tiled.data(), s.K, init, X.data(), upper};
  lane_product<RI, RK>(p);
  p.out = out_ref.data();
  lane_product_ref(p);
  for (int i = 0; i < s.I; ++i)
    for (int k = upper ? i : 0; k < s.K; ++k)
      ASSERT_EQ(0, std::memcmp(&out_tiled[i * s.K + k], &out_ref[i * s.K + k], sizeof(L)))
          << "I " << s.I << " K " << s.K << " M " << s.M << " at (" << i << ", " << k << ") A^T " << a_transposed
          << " B^T " << b_transposed << " init " << static_cast<int>(init) << " upper " << upper << " tile " << RI
          << " x " << RK;
}

template <class T, int RI, int RK>
void check_all() {
  using L = Lane<T>;
  // Edges in both output dimensions (tiles of 5), m-blocks of 64 crossed and not (M = 129, 130: a short last
  // block joins the one before; M = 145: 64 + 64 + 17), single terms, no terms (out = init).
  const std::vector<Shape> shapes = {{1, 1, 1},    {7, 13, 3},   {13, 7, 64}, {18, 23, 65},
                                     {5, 5, 129}, {131, 9, 130}, {9, 11, 145}, {6, 4, 0}};
  uint64_t seed = 100;
  for (const Shape& s : shapes)
    for (const bool at : {false, true})
      for (const bool bt : {false, true})
        for (const ProductInit init : {ProductInit::zero, ProductInit::out, ProductInit::x}) {
          check<T, RI, RK, L, L>(s, at, bt, init, false, seed += 10);
          check<T, RI, RK, T, L>(s, at, bt, init, false, seed += 10);
          check<T, RI, RK, L, T>(s, at, bt, init, false, seed += 10);
        }
  for (const int D : {1, 6, 17, 66, 131})   // symmetric products (the Gram matrix): the upper triangle
    for (const int M : {1, 40, 70})
      for (const ProductInit init : {ProductInit::zero, ProductInit::out})
        check<T, RI, RK, L, L>({D, D, M}, false, true, init, true, seed += 10);
}

// ICL_TEST_BUILD_SHAPES_ONLY (tests/test_isa.sh, the builds for other instruction sets): only the tile and
// row block this build's kernels use.  The other shapes check the order in which the source accumulates
// each sum, which no instruction set changes, so the native build checks them for all; in a -march=x86-64-v2
// build they cost about 80 of this file's 100 s of compilation, and under qemu-aarch64 most of its run.
#ifdef ICL_TEST_BUILD_SHAPES_ONLY
inline constexpr bool kOtherShapes = false;
#else
inline constexpr bool kOtherShapes = true;
#endif

template <class T>
void check_tiles() {
  static_assert(kTile.RI * kTile.RK + kTile.RI <= kVectorRegisters.count, "this build's accumulators and A's values fit its registers");
  check_all<T, kTile.RI, kTile.RK>();
  if constexpr (kOtherShapes) {
    check_all<T, 5, 5>();   // 32 registers: AVX-512, NEON
    check_all<T, 4, 3>();   // 16 with FMA: AVX2
    check_all<T, 3, 4>();
    check_all<T, 3, 3>();   // 16 without: SSE, AVX
    check_all<T, 1, 1>();
    check_all<T, 4, 7>();
  }
}

TEST(LaneProduct, Float32TiledEqualsReferenceBitwise) { check_tiles<float>(); }
TEST(LaneProduct, Float64TiledEqualsReferenceBitwise) { check_tiles<double>(); }

// The fixed-size kernels at row block KB, P rows (or columns) at a time (0: each kernel's own choice), against
// the generic path (FixedD = 0, the tiled products checked above), bit for bit, on the same operands: the five
// kernels of a linear layer, weights as lanes and as scalars where the layer has both.
template <class T, int D, int KB, int P = 0>
void check_kernels(uint64_t seed) {
  using L = Lane<T>;
  const int N = D + 3, n = D + 1, DD = D * D;
  LaneVec<T> A(DD), B(DD), X(static_cast<size_t>(D) * N), Y(X.size());
  std::vector<T> W(DD);
  fill<T>(seed, &A);
  fill<T>(seed + 1, &B);
  fill<T>(seed + 2, &X);
  fill<T>(seed + 3, &Y);
  fill<T>(seed + 4, &W);
  auto same = [&](const LaneVec<T>& fixed, const LaneVec<T>& generic, const char* what) {
    ASSERT_EQ(fixed.size(), generic.size());
    for (size_t x = 0; x < fixed.size(); ++x)
      ASSERT_EQ(0, std::memcmp(&fixed[x], &generic[x], sizeof(L)))
          << what << " D " << D << " KB " << KB << " P " << P << " at " << x;
  };
  auto both = [&](const char* what, const LaneVec<T>& init, auto&& run) {   // run(kernel's FixedD tag, out)
    LaneVec<T> fixed = init, generic = init;
    run(std::integral_constant<int, D>{}, fixed.data());
    run(std::integral_constant<int, 0>{}, generic.data());
    same(fixed, generic, what);
  };
  for (const bool transposed : {false, true}) {
    const int a_row = transposed ? 1 : D, a_col = transposed ? D : 1;
    both("matmul_rows (lanes x weights)", B, [&](auto F, L* out) {
      matmul_rows<decltype(F)::value, false, KB, P>(D, A.data(), a_row, a_col, W.data(), out);
    });
    both("matmul_rows += (weights x lanes)", B, [&](auto F, L* out) {
      matmul_rows<decltype(F)::value, true, KB, P>(D, W.data(), a_row, a_col, A.data(), out);
    });
    both("apply_columns, residual", Y, [&](auto F, L* out) {
      apply_columns<decltype(F)::value, ProductInit::x, KB, P>(D, N, N, A.data(), a_row, a_col, X.data(), out);
    });
    both("apply_columns +=, context columns", Y, [&](auto F, L* out) {
      apply_columns<decltype(F)::value, ProductInit::out, KB, P>(D, N, n, A.data(), a_row, a_col, X.data(), out);
    });
    both("apply_columns =, context columns", Y, [&](auto F, L* out) {
      apply_columns<decltype(F)::value, ProductInit::zero, KB, P>(D, N, n, A.data(), a_row, a_col, X.data(), out);
    });
  }
  both("add_matmul_bt (lanes)", B,
       [&](auto F, L* out) { add_matmul_bt<decltype(F)::value, KB, P>(D, A.data(), B.data(), out); });
  both("add_matmul_bt (weights)", B,
       [&](auto F, L* out) { add_matmul_bt<decltype(F)::value, KB, P>(D, A.data(), W.data(), out); });
  both("gram", A, [&](auto F, L* out) { gram<decltype(F)::value, KB>(D, N, n, X.data(), out); });
  both("outer_sum", A, [&](auto F, L* out) { outer_sum<decltype(F)::value, KB, P>(D, N, X.data(), Y.data(), out); });
}

template <class T, int D>
void check_blocks(uint64_t seed) {
  check_kernels<T, D, kRowBlock>(seed);
  if constexpr (kOtherShapes) {
    check_kernels<T, D, 30>(seed);   // 32 registers (AVX-512, NEON): the whole row
    check_kernels<T, D, 14>(seed);   // 16 (AVX2, SSE)
    check_kernels<T, D, 6>(seed);
    check_kernels<T, D, 1>(seed);
    check_kernels<T, D, 5>(seed);
    check_kernels<T, D, 30, 1>(seed);   // one row (or column) at a time
    check_kernels<T, D, 14, 1>(seed);
    check_kernels<T, D, 30, 2>(seed);   // two (N = D + 3 and n = D + 1 columns: one left alone when odd)
    check_kernels<T, D, 14, 2>(seed);
    check_kernels<T, D, 30, 3>(seed);   // three: groups of 3, then of 2 or 1
    check_kernels<T, D, 2, 2>(seed);
  }
}

template <class T>
void check_all_blocks() {
  check_blocks<T, 2>(7);
  check_blocks<T, 6>(11);
  check_blocks<T, 11>(13);
  check_blocks<T, 13>(17);
  check_blocks<T, 16>(19);
}

TEST(LaneKernels, Float32EveryRowBlockEqualsGenericBitwise) { check_all_blocks<float>(); }
TEST(LaneKernels, Float64EveryRowBlockEqualsGenericBitwise) { check_all_blocks<double>(); }

}  // namespace
}  // namespace icl
