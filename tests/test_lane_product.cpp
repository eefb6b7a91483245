// The tiled lane products of the large-token kernels (lane_product.hpp) against their frozen naive
// reference, bitwise: every operand kind (lanes x lanes, weights x lanes, lanes x weights), both
// orientations of each operand, the three inits, the symmetric (upper) mode, and sizes that leave edge
// tiles and cross the m-blocks.  The model-level check (the whole layer at D > 16 against model_ref,
// and its gradient against central differences) is in test_model.cpp.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "icl/base/lane.hpp"
#include "icl/base/rng.hpp"
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
template <class T, class TA, class TB>
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
  lane_product(p);
  p.out = out_ref.data();
  lane_product_ref(p);
  for (int i = 0; i < s.I; ++i)
    for (int k = upper ? i : 0; k < s.K; ++k)
      ASSERT_EQ(0, std::memcmp(&out_tiled[i * s.K + k], &out_ref[i * s.K + k], sizeof(L)))
          << "I " << s.I << " K " << s.K << " M " << s.M << " at (" << i << ", " << k << ") A^T " << a_transposed
          << " B^T " << b_transposed << " init " << static_cast<int>(init) << " upper " << upper;
}

template <class T>
void check_all() {
  using L = Lane<T>;
  // Edges in both output dimensions (tiles of 5), m-blocks of 64 crossed and not, single terms.
  const std::vector<Shape> shapes = {{1, 1, 1}, {7, 13, 3}, {13, 7, 64}, {18, 23, 65}, {5, 5, 129}, {131, 9, 130}};
  uint64_t seed = 100;
  for (const Shape& s : shapes)
    for (const bool at : {false, true})
      for (const bool bt : {false, true})
        for (const ProductInit init : {ProductInit::zero, ProductInit::out, ProductInit::x}) {
          check<T, L, L>(s, at, bt, init, false, seed += 10);
          check<T, T, L>(s, at, bt, init, false, seed += 10);
          check<T, L, T>(s, at, bt, init, false, seed += 10);
        }
  for (const int D : {1, 6, 17, 66, 131})   // symmetric products (the Gram matrix): the upper triangle
    for (const int M : {1, 40, 70})
      for (const ProductInit init : {ProductInit::zero, ProductInit::out})
        check<T, L, L>({D, D, M}, false, true, init, true, seed += 10);
}

TEST(LaneProduct, Float32TiledEqualsReferenceBitwise) { check_all<float>(); }
TEST(LaneProduct, Float64TiledEqualsReferenceBitwise) { check_all<double>(); }

}  // namespace
}  // namespace icl
