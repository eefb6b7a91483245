#pragma once
// The three products of one linear layer at token size D (C = Z Z^T's upper triangle, dK = G Z^T,
// Z' = Z + K Z; N = 2D - 1 terms; float lanes) and their timing: what bench_tiles and bench_simd measure.
#include <chrono>
#include <cstddef>

#include "icl/base/lane.hpp"
#include "icl/model/lane_product.hpp"

namespace icl::bench {

using L = Lane<float>;

struct Operands {
  int D, N;
  LaneVec<float> Z, G, K, C, out;

  explicit Operands(int D_) : D(D_), N(2 * D_ - 1) {
    const size_t DN = static_cast<size_t>(D) * N;
    Z.assign(DN, L{});
    G.assign(DN, L{});
    out.assign(DN, L{});
    K.assign(static_cast<size_t>(D) * D, L{});
    C.assign(K.size(), L{});
    for (size_t x = 0; x < DN; ++x)
      for (int v = 0; v < kLanes<float>; ++v) {
        Z[x][v] = 0.01f * static_cast<float>((x * 7 + v) % 13) - 0.06f;
        G[x][v] = 0.01f * static_cast<float>((x * 5 + v) % 11) - 0.05f;
      }
  }
  // Multiply-adds x 2 of one layer: the Gram's upper triangle, G Z^T, K Z.
  double flops() const {
    const double d = D, n = N;
    return 2.0 * kLanes<float> * (d * (d + 1) / 2 * n + d * d * n + d * n * d);
  }
};

// The layer's three products, each by `product` (a callable taking a LaneProduct<L, L, L>).
template <class Product>
void layer(Operands& o, Product product) {
  const int D = o.D, N = o.N;
  product(LaneProduct<L, L, L>{D, D, N, o.Z.data(), N, 1, o.Z.data(), 1, N, o.C.data(), D, ProductInit::zero, nullptr,
                               true});
  product(LaneProduct<L, L, L>{D, D, N, o.G.data(), N, 1, o.Z.data(), 1, N, o.K.data(), D});
  product(LaneProduct<L, L, L>{D, N, D, o.K.data(), D, 1, o.Z.data(), N, 1, o.out.data(), N, ProductInit::x,
                               o.Z.data()});
}

// GFLOP/s of `step` (flops each) over about `seconds`, after one warm call.
template <class Step>
double gflops(Step step, double flops, double seconds) {
  step();
  long steps = 0;
  const auto t0 = std::chrono::steady_clock::now();
  double t = 0;
  while (t < seconds) {
    for (int r = 0; r < 8; ++r) step();
    steps += 8;
    t = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  return flops * static_cast<double>(steps) / t / 1e9;
}

}  // namespace icl::bench
