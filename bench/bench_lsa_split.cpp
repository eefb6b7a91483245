// The LSA step split into its parts, each timed alone, best of 7, alternated (this machine's speed moves between
// them; the peak kernel is a best-of too), at bench_train d:d's shapes (large_d.hpp), float, single thread:
// - products: the kernels of model/lane_kernels.hpp called as linear_forward and linear_backward call them in
//   training (src/model/model.cpp, model_forward with Next::params_backward, then params_backward: the last
//   layer's Z' at the readout alone, layer 0 without the input's gradient, the last layer's readout products;
//   keep the two in step),
//   one head, L = 2 layers each on buffers of its own, over one step's chunks, and nothing else: no loss, no
//   zeroing;
// - model: the model's own loss and gradient (Objective::loss_grad) on one batch drawn once, the "model only"
//   of bench/run_bench_d.sh;
// - draw: drawing that batch (sample_tasks); draw_then_model: both in turn, as a training step runs them less
//   Adam, so that `interaction`, (draw_then_model - draw - model) / draw_then_model, shows what the draw's
//   writes cost the model after it.
// FLOPs are model_train_flops_per_task's, as bench_train counts them.  The products are timed only where this
// program has the model's own kernels: the fixed-size ones of d = 5 and 10 (run_bench_d.sh's) and the tiled ones
// for D = d + 1 above kMaxFixedD.  At the other d below 16 the model runs fixed-size kernels not instantiated
// here, and the products print as nan (kernels=fixed_not_here); the model and the draws are timed as always.
//   bench_lsa_split d      (d in 1..255)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <vector>

#include "icl/base/lane.hpp"
#include "icl/data/data.hpp"
#include "icl/model/lane_kernels.hpp"
#include "icl/model/model.hpp"
#include "icl/train/objective.hpp"
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
int run(int d, bool time_products) {
  const int D = d + 1, N = 2 * d + 1, n = 2 * d;
  const int batch = bench::batch_for_d(d), chunks = batch / kLanes<float>;
  const size_t DD = static_cast<size_t>(D) * D, DN = static_cast<size_t>(D) * N;
  std::vector<LaneVec<float>> Z, C, CQ, K, dPc, dQ;
  for (int l = 0; l <= kLayers; ++l) Z.push_back(lanes(DN));
  for (int l = 0; l < kLayers; ++l)
    for (auto* v : {&C, &CQ, &K, &dPc, &dQ}) v->push_back(lanes(DD));
  const std::vector<float> Pc(DD, 0.01f), Q(DD, 0.01f);
  LaneVec<float> G = lanes(DN), dZ = lanes(DN), dK = lanes(DD), dCQ = lanes(DD), dC = lanes(DD);
  auto products = [&] {
    for (int c = 0; c < chunks; ++c) {
      for (int l = 0; l < kLayers; ++l) {
        gram<FixedD>(D, N, n, Z[l].data(), C[l].data());
        matmul_rows<FixedD, false>(D, C[l].data(), D, 1, Q.data(), CQ[l].data());
        matmul_rows<FixedD, false>(D, Pc.data(), D, 1, CQ[l].data(), K[l].data());
        if (l < kLayers - 1) apply_columns<FixedD, ProductInit::x>(D, N, N, K[l].data(), D, 1, Z[l].data(), Z[l + 1].data());
        else readout_entry(D, N, n, K[l].data(), Z[l].data(), Z[l + 1].data());   // the readout layer (K whole at l > 0)
      }
      for (int l = kLayers - 1; l >= 0; --l) {
        if (l == kLayers - 1) {   // the readout layer
          readout_outer_sum(D, N, G.data(), Z[l].data(), dK.data());
          readout_residual(D, N, n, K[l].data(), G.data(), dZ.data());
          readout_head(D, dK.data(), CQ[l].data(), Pc.data(), dPc[l].data(), dCQ.data());
        } else {
          outer_sum<FixedD>(D, N, G.data(), Z[l].data(), dK.data());
          if (l > 0) apply_columns<FixedD, ProductInit::x>(D, N, N, K[l].data(), 1, D, G.data(), dZ.data());
          add_matmul_bt<FixedD>(D, dK.data(), CQ[l].data(), dPc[l].data());
          matmul_rows<FixedD, false>(D, Pc.data(), 1, D, dK.data(), dCQ.data());
        }
        matmul_rows<FixedD, true>(D, C[l].data(), D, 1, dCQ.data(), dQ[l].data());
        if (l == 0) continue;   // params_backward: no input gradient
        add_matmul_bt<FixedD>(D, dCQ.data(), Q.data(), dC.data());
        if (l == kLayers - 1) apply_columns<FixedD, ProductInit::zero>(D, N, n, dC.data(), D, 1, Z[l].data(), dZ.data());
        else apply_columns<FixedD, ProductInit::out>(D, N, n, dC.data(), D, 1, Z[l].data(), dZ.data());
      }
    }
  };
  // The model's own loss and gradient, on one batch drawn as bench_train d:d draws it.
  Point p;
  p.d = d;
  p.n = n;
  p.layers = kLayers;
  p.batch = batch;
  const double flops = model_train_flops_per_task(model_shape(p)) * batch;
  Objective<float> objective(p);
  TaskBatch<float> tasks;
  tasks.resize(batch, d, n);
  const TaskLaw law = make_task_law(p);
  sample_tasks(law, p.seed, Stream::train, 0, tasks);
  const std::vector<double> theta = objective.init(p);
  std::vector<double> g;
  auto model_step = [&] { objective.loss_grad(tasks, theta, &g); };
  auto seconds = [](auto&& f) {
    const auto t0 = std::chrono::steady_clock::now();
    f();
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
  uint64_t block = 1;
  auto draw = [&] { sample_tasks(law, p.seed, Stream::train, block++, tasks); };
  auto draw_then_model = [&] {
    draw();
    model_step();
  };
  if (time_products) products();
  model_step();
  double t_products = time_products ? 1e30 : std::numeric_limits<double>::quiet_NaN();
  double t_model = 1e30, t_draw = 1e30, t_both = 1e30;
  for (int r = 0; r < 7; ++r) {
    if (time_products) t_products = std::min(t_products, seconds(products));
    t_model = std::min(t_model, seconds(model_step));
    t_draw = std::min(t_draw, seconds(draw));
    t_both = std::min(t_both, seconds(draw_then_model));
  }
  std::printf("d=%d D=%d kernels=%s chunks=%d products_gflops=%.2f model_gflops=%.2f products_ms=%.3f model_ms=%.3f "
              "draw_ms=%.3f draw_then_model_ms=%.3f interaction=%.3f\n",
              d, D, FixedD ? "fixed" : time_products ? "tiled" : "fixed_not_here", chunks, flops / t_products / 1e9,
              flops / t_model / 1e9, t_products * 1e3, t_model * 1e3, t_draw * 1e3, t_both * 1e3, (t_both - t_draw - t_model) / t_both);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const int d = argc == 2 ? std::atoi(argv[1]) : 0;
  if (d < 1 || d > 255) {
    std::fprintf(stderr, "bench_lsa_split: d = '%s': give one d in 1..255\n", argc > 1 ? argv[1] : "");
    return 2;
  }
  switch (d + 1) {   // model.cpp's choice of kernels, where this program has them
    case 6: return run<6>(d, true);
    case 11: return run<11>(d, true);
    default: return run<0>(d, d + 1 > kMaxFixedD);
  }
}
