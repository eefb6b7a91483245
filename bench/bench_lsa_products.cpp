// The LSA model's products alone (docs/performance.md, "The LSA model's products alone"): the kernels of
// model/lane_kernels.hpp called as linear_forward and linear_backward call them (src/model/model.cpp; keep the
// two in step), one head, L = 2 layers each on buffers of its own, over one step's chunks of bench_train d:d
// (n = 2d, its batch_for_d: about 2^15 / d tasks, at least 64), float, single thread.  Nothing else: no
// drawing, no loss, no Adam, no zeroing, so its GFLOP/s against bench_train's "model only" splits the model's
// time into its products and the rest.  FLOPs are counted as bench_train counts them.
//   bench_lsa_products d [which=all|large|small]   (large: the D x D x N and D x N x D products; small: D x D x D)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "icl/base/lane.hpp"
#include "icl/model/lane_kernels.hpp"

using namespace icl;

namespace {

using L = Lane<float>;

LaneVec<float> lanes(size_t count) {
  LaneVec<float> v(count);
  for (size_t i = 0; i < count; ++i) v[i] = L{} + 0.001f * static_cast<float>(i % 7);
  return v;
}

template <int FixedD>
int run(int d, bool large, bool small) {
  constexpr int kLayers = 2;
  const int D = d + 1, N = 2 * d + 1, n = 2 * d;
  const int chunks = std::max(64, (32768 / d) / 16 * 16) / kLanes<float>;   // bench_train's batch_for_d
  const size_t DD = static_cast<size_t>(D) * D, DN = static_cast<size_t>(D) * N;
  std::vector<LaneVec<float>> Z, C, CQ, K, dPc, dQ;
  for (int l = 0; l <= kLayers; ++l) Z.push_back(lanes(DN));
  for (int l = 0; l < kLayers; ++l)
    for (auto* v : {&C, &CQ, &K, &dPc, &dQ}) v->push_back(lanes(DD));
  const std::vector<float> Pc(DD, 0.01f), Q(DD, 0.01f);
  LaneVec<float> G = lanes(DN), dZ = lanes(DN), dK = lanes(DD), dCQ = lanes(DD), dC = lanes(DD);
  auto step = [&] {
    for (int c = 0; c < chunks; ++c) {
      for (int l = 0; l < kLayers; ++l) {
        if (large) gram<FixedD>(D, N, n, Z[l].data(), C[l].data());
        if (small) {
          matmul_rows<FixedD, false>(D, C[l].data(), D, 1, Q.data(), CQ[l].data());
          matmul_rows<FixedD, true>(D, Pc.data(), D, 1, CQ[l].data(), K[l].data());
        }
        if (large) apply_columns<FixedD, true>(D, N, N, K[l].data(), D, 1, Z[l].data(), Z[l + 1].data());
      }
      for (int l = kLayers - 1; l >= 0; --l) {
        if (large) {
          outer_sum<FixedD>(D, N, G.data(), Z[l].data(), dK.data());
          apply_columns<FixedD, true>(D, N, N, K[l].data(), 1, D, G.data(), dZ.data());
        }
        if (small) {
          add_matmul_bt<FixedD>(D, dK.data(), CQ[l].data(), dPc[l].data());
          matmul_rows<FixedD, false>(D, Pc.data(), 1, D, dK.data(), dCQ.data());
          matmul_rows<FixedD, true>(D, C[l].data(), D, 1, dCQ.data(), dQ[l].data());
          add_matmul_bt<FixedD>(D, dCQ.data(), Q.data(), dC.data());
        }
        if (large) apply_columns<FixedD, false>(D, N, n, dC.data(), D, 1, Z[l].data(), dZ.data());
      }
    }
  };
  // Multiply-adds x 2 per lane, as model_flops_per_task: the Gram's upper triangle, the rest whole.
  const double per_lane = 2.0 * kLanes<float> * chunks * kLayers;
  double flops = 0;
  if (large) flops += per_lane * (double(D) * (D + 1) / 2 * n + 2.0 * D * N * D + double(D) * D * N + double(D) * n * D);
  if (small) flops += per_lane * 6.0 * D * D * D;
  step();
  double best = 1e30;
  for (int r = 0; r < 7; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    step();
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  std::printf("d=%d D=%d kernels=%s chunks=%d ms_per_step=%.3f gflops=%.2f\n", d, D, FixedD ? "fixed" : "tiled", chunks,
              best * 1e3, flops / best / 1e9);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const int d = argc > 1 ? std::atoi(argv[1]) : 0;
  const char* which = argc > 2 ? argv[2] : "all";
  const bool all = !std::strcmp(which, "all"), large = all || !std::strcmp(which, "large"),
             small = all || !std::strcmp(which, "small");
  if (d < 1 || d > 255 || !(large || small)) {
    std::fprintf(stderr, "usage: bench_lsa_products d [all|large|small]  (d in 1..255)\n");
    return 2;
  }
  // model.cpp's choice: the fixed kernels for D = d + 1 in 2..16 (those instantiated here: the d of
  // run_bench_d.sh below 16), the tiled lane products above.
  switch (d + 1) {
    case 6: return run<6>(d, large, small);
    case 11: return run<11>(d, large, small);
    default: return run<0>(d, large, small);
  }
}
