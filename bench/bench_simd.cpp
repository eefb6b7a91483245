// Which SIMD layer for the kernels (issue 32, item 1), by measurement: the three products of a linear
// layer at token size D (as bench_tiles: C = Z Z^T's upper triangle, dK = G Z^T, Z' = Z + K Z; float lanes,
// one thread) by four routes, in one run:
//   ours    lane_product (model/lane_product.hpp): GCC vector extensions, run per register part
//           (base/simd.hpp), this build's tile kTile;
//   hwy     the same tiling and order written with Highway's ops (static target: this build's -march);
//   eigen   the same tiling and order written with Eigen's packet layer (Eigen::internal::pmadd, ...);
//   gemm    no hand-written SIMD: Eigen's own products per task, each task's matrices contiguous (what a
//           batched BLAS call sees; the PyTorch peer's layout).
// ours, hwy and eigen must give the same bits (checked: same terms, same order, one multiply-add each);
// gemm sums in its own order (its largest relative difference is printed).  GFLOP/s counts the same
// multiply-adds for every route (2 flops each).  bench/run_bench_kernels.sh prints it beside the FP32 peak.
//   bench_simd [D=33] [seconds per route=1]
#include <hwy/highway.h>

#include <Eigen/Dense>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "icl/base/simd.hpp"
#include "layer_products.hpp"

using namespace icl;
using bench::L;
namespace hn = hwy::HWY_NAMESPACE;

namespace {

constexpr int kV = kLanes<float>;

// One register of floats and its four operations, per library.
struct HwyOps {
  using D = hn::ScalableTag<float>;
  using V = hn::Vec<D>;
  static int width() { return static_cast<int>(hn::Lanes(D())); }
  static V zero() { return hn::Zero(D()); }
  static V load(const float* x) { return hn::LoadU(D(), x); }
  static void store(V v, float* x) { hn::StoreU(v, D(), x); }
  static V fma(V a, V b, V acc) { return hn::MulAdd(a, b, acc); }
};

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wignored-attributes"   // Eigen's packet types carry vector attributes
struct EigenOps {
  using V = Eigen::internal::packet_traits<float>::type;
  static int width() { return Eigen::internal::unpacket_traits<V>::size; }
  static V zero() { return Eigen::internal::pset1<V>(0.0f); }
  static V load(const float* x) { return Eigen::internal::ploadu<V>(x); }
  static void store(V v, float* x) { Eigen::internal::pstoreu(x, v); }
  static V fma(V a, V b, V acc) { return Eigen::internal::pmadd(a, b, acc); }
};
#pragma GCC diagnostic pop

// lane_product's algorithm for lane operands, over Ops' registers: part h of lane x is the floats
// x * kV + h * width .. + width.
template <class Ops>
struct Tiled {
  const LaneProduct<L, L, L>& p;
  int h;
  const float* at(const L* base, long x) const { return &base[x][0] + h * Ops::width(); }
  float* at(L* base, long x) const { return &base[x][0] + h * Ops::width(); }

  template <int RI, int RK>
  void tile(int i0, int k0, int m0, int m1, ProductInit init) const {
    typename Ops::V acc[RI][RK];   // unrolled as lane_product's tile is
#pragma GCC unroll 8
    for (int r = 0; r < RI; ++r)
#pragma GCC unroll 8
      for (int c = 0; c < RK; ++c) {
        const long x = (i0 + r) * p.o_row + k0 + c;
        acc[r][c] = init == ProductInit::zero ? Ops::zero() : Ops::load(init == ProductInit::out ? at(p.out, x) : at(p.X, x));
      }
    for (int m = m0; m < m1; ++m) {
      typename Ops::V a[RI];
#pragma GCC unroll 8
      for (int r = 0; r < RI; ++r) a[r] = Ops::load(at(p.A, (i0 + r) * p.a_row + m * p.a_col));
#pragma GCC unroll 8
      for (int c = 0; c < RK; ++c) {
        const typename Ops::V b = Ops::load(at(p.B, m * p.b_row + (k0 + c) * p.b_col));
#pragma GCC unroll 8
        for (int r = 0; r < RI; ++r) acc[r][c] = Ops::fma(a[r], b, acc[r][c]);
      }
    }
#pragma GCC unroll 8
    for (int r = 0; r < RI; ++r)
#pragma GCC unroll 8
      for (int c = 0; c < RK; ++c) Ops::store(acc[r][c], at(p.out, (i0 + r) * p.o_row + k0 + c));
  }

  template <int RI, int RK>
  void edge(int ri, int rk, int i0, int k0, int m0, int m1, ProductInit init) const {
    if constexpr (RI > 1) {
      if (ri < RI) return edge<RI - 1, RK>(ri, rk, i0, k0, m0, m1, init);
    }
    if constexpr (RK > 1) {
      if (rk < RK) return edge<RI, RK - 1>(ri, rk, i0, k0, m0, m1, init);
    }
    tile<RI, RK>(i0, k0, m0, m1, init);
  }

  void run() const {
    constexpr int RI = kTile.RI, RK = kTile.RK, MC = 64;
    for (int m0 = 0; m0 < std::max(p.M, 1); m0 += MC) {
      const int m1 = std::min(p.M, m0 + MC);
      const ProductInit init = m0 == 0 ? p.init : ProductInit::out;
      for (int k0 = 0; k0 < p.K; k0 += RK)
        for (int i0 = 0; i0 < p.I; i0 += RI) {
          const int rk = std::min(RK, p.K - k0), ri = std::min(RI, p.I - i0);
          if (p.upper && i0 >= k0 + rk) break;
          edge<RI, RK>(ri, rk, i0, k0, m0, m1, init);
        }
    }
  }
};

template <class Ops>
void product(const LaneProduct<L, L, L>& p) {
  for (int h = 0; h < kV / Ops::width(); ++h) Tiled<Ops>{p, h}.run();
}

using bench::Operands;
using Product = void (*)(const LaneProduct<L, L, L>&);

// The same products per task, by Eigen's GEMM on each task's contiguous matrices.
struct PerTask {
  std::vector<Eigen::MatrixXf> Z, G, K, C, out;
};

void layer_gemm(PerTask& t) {
  for (size_t v = 0; v < t.Z.size(); ++v) {
    t.C[v].setZero();
    t.C[v].selfadjointView<Eigen::Upper>().rankUpdate(t.Z[v]);
    t.K[v].noalias() = t.G[v] * t.Z[v].transpose();
    t.out[v] = t.Z[v];
    t.out[v].noalias() += t.K[v] * t.Z[v];
  }
}

bool same_bits(const LaneVec<float>& a, const LaneVec<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(L)) == 0;
}

}  // namespace

int main(int argc, char** argv) {
  const int D = argc > 1 ? std::atoi(argv[1]) : 33;
  const double seconds = argc > 2 ? std::atof(argv[2]) : 1.0;
  Operands o(D);
  const int N = o.N;
  const double flops = o.flops();
  std::printf("instruction set %s (this build's -march; Highway target %s, Eigen packet of %d floats), tile %dx%d, "
              "D=%d N=%d, %d tasks\n", kVectorRegisters.name, hwy::TargetName(HWY_STATIC_TARGET), EigenOps::width(),
              kTile.RI, kTile.RK, D, N, kV);

  // Bits: every hand-tiled route against ours.
  const Product ours_product = [](const LaneProduct<L, L, L>& p) { lane_product(p); };
  bench::layer(o, ours_product);
  const Operands ours = o;
  bool same = true;
  for (Product f : {Product(product<HwyOps>), Product(product<EigenOps>)}) {
    Operands x = o;
    x.C.assign(x.C.size(), L{});
    x.K.assign(x.K.size(), L{});
    x.out.assign(x.out.size(), L{});
    bench::layer(x, f);
    same = same && same_bits(x.C, ours.C) && same_bits(x.K, ours.K) && same_bits(x.out, ours.out);
  }
  PerTask t;
  for (int v = 0; v < kV; ++v) {
    Eigen::MatrixXf Z(D, N), G(D, N);
    for (int i = 0; i < D; ++i)
      for (int j = 0; j < N; ++j) {
        Z(i, j) = o.Z[static_cast<size_t>(i) * N + j][v];
        G(i, j) = o.G[static_cast<size_t>(i) * N + j][v];
      }
    t.Z.push_back(Z);
    t.G.push_back(G);
    t.K.emplace_back(D, D);
    t.C.emplace_back(D, D);
    t.out.emplace_back(D, N);
  }
  layer_gemm(t);
  double gemm_diff = 0, largest = 0;   // over Z' = Z + K Z, relative to its largest entry
  for (int v = 0; v < kV; ++v)
    for (int i = 0; i < D; ++i)
      for (int j = 0; j < N; ++j) {
        const double a = ours.out[static_cast<size_t>(i) * N + j][v], b = t.out[v](i, j);
        gemm_diff = std::max(gemm_diff, std::abs(a - b));
        largest = std::max(largest, std::abs(a));
      }
  std::printf("bits: ours, hwy and eigen %s; gemm differs from ours by at most %.2g of the largest entry (another "
              "order)\n", same ? "identical" : "DIFFER", gemm_diff / largest);

  std::printf("route=ours gflops=%.2f\n", bench::gflops([&] { bench::layer(o, ours_product); }, flops, seconds));
  std::printf("route=hwy gflops=%.2f\n", bench::gflops([&] { bench::layer(o, product<HwyOps>); }, flops, seconds));
  std::printf("route=eigen gflops=%.2f\n", bench::gflops([&] { bench::layer(o, product<EigenOps>); }, flops, seconds));
  std::printf("route=gemm gflops=%.2f\n", bench::gflops([&] { layer_gemm(t); }, flops, seconds));
  return same ? 0 : 1;
}
