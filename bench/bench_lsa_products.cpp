// The LSA model's products alone (docs/performance.md, "The LSA model's products alone"): the kernels of
// model/lane_kernels.hpp called as linear_forward and linear_backward call them (src/model/model.cpp; keep the
// two in step), one head, L = 2 layers each on buffers of its own, over one step's chunks of bench_train d:d
// (large_d.hpp), float, single thread.  Nothing else: no drawing, no loss, no Adam, no zeroing, so its GFLOP/s
// against bench_train's "model only" splits the model's time into its products and the rest.  FLOPs are
// model_flops_per_task's, as bench_train counts them.
//   bench_lsa_products d      (d in 1..255)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "icl/base/lane.hpp"
#include "icl/model/lane_kernels.hpp"
#include "icl/model/model.hpp"
#include "large_d.hpp"

using namespace icl;

namespace {

using L = Lane<float>;
constexpr int kLayers = 2;

LaneVec<float> lanes(size_t count) {
  LaneVec<float> v(count);
  for (size_t i = 0; i < count; ++i) v[i] = L{} + 0.001f * static_cast<float>(i % 7);
  return v;
}

template <int FixedD>
int run(int d) {
  const int D = d + 1, N = 2 * d + 1, n = 2 * d;
  const int batch = bench::batch_for_d(d), chunks = batch / kLanes<float>;
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
        gram<FixedD>(D, N, n, Z[l].data(), C[l].data());
        matmul_rows<FixedD, false>(D, C[l].data(), D, 1, Q.data(), CQ[l].data());
        matmul_rows<FixedD, true>(D, Pc.data(), D, 1, CQ[l].data(), K[l].data());
        apply_columns<FixedD, true>(D, N, N, K[l].data(), D, 1, Z[l].data(), Z[l + 1].data());
      }
      for (int l = kLayers - 1; l >= 0; --l) {
        outer_sum<FixedD>(D, N, G.data(), Z[l].data(), dK.data());
        apply_columns<FixedD, true>(D, N, N, K[l].data(), 1, D, G.data(), dZ.data());
        add_matmul_bt<FixedD>(D, dK.data(), CQ[l].data(), dPc[l].data());
        matmul_rows<FixedD, false>(D, Pc.data(), 1, D, dK.data(), dCQ.data());
        matmul_rows<FixedD, true>(D, C[l].data(), D, 1, dCQ.data(), dQ[l].data());
        add_matmul_bt<FixedD>(D, dCQ.data(), Q.data(), dC.data());
        apply_columns<FixedD, false>(D, N, n, dC.data(), D, 1, Z[l].data(), dZ.data());
      }
    }
  };
  ModelShape shape;
  shape.d = d;
  shape.n = n;
  shape.layers = kLayers;
  const double flops = model_flops_per_task(shape) * batch;
  step();
  double best = 1e30;   // the best of 7 steps: this machine's speed moves between them
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
  const int d = argc == 2 ? std::atoi(argv[1]) : 0;
  if (d < 1 || d > 255) {
    std::fprintf(stderr, "bench_lsa_products: d = '%s': give one d in 1..255\n", argc > 1 ? argv[1] : "");
    return 2;
  }
  // model.cpp's choice: the fixed kernels for D = d + 1 in 2..16 (those instantiated here: the d of
  // run_bench_d.sh below 16), the tiled lane products above.
  switch (d + 1) {
    case 6: return run<6>(d);
    case 11: return run<11>(d);
    default: return run<0>(d);
  }
}
