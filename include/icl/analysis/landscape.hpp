#pragma once
// [A24]'s optimisation-landscape measurements at chosen steps of a training run (option `landscape`),
// in double precision on seeded sets of their own (Stream::analysis), as [A24]'s official code
// (chengxiang/LinearTransformer: plot_condition_number.ipynb, plot_smoothness_vs_gradnorm.ipynb,
// plot_stochastic_noise.ipynb):
//   the fixed set      hessian_tasks tasks (the code: 1000, seed 99) drawn from kFixedSeed, NOT the
//                      point's seed: the same tasks for every run, optimiser, rate and step of a sweep
//                      (for a law without a seed-drawn rotation), so condition numbers are comparable
//   Hessian diagonal   H_ii on the fixed set, over every trained parameter, by central differences of
//                      the analytic gradient in double (step h = 1e-5, error O(h^2); a parameter
//                      that cannot move the output, e.g. the last layer's B block, gives exactly 0)
//   robust condition   R = max_i |H_ii| / median_i |H_ii| with torch.median's convention: the LOWER of
//                      the two middle values of an even count
//   grad norm, smoothness  |g| and u^T H u / |u|^2 on the fixed set, u the optimiser's update at that step
//   gradient noise     |g_B - g_full| for kNoiseBatches mini-batches of the point's batch size, with
//                      g_full the gradient on the "full" set (kFullBatches x batch tasks, at most 65,536)
// Each measurement costs about 2 x #params gradients on the fixed set plus 1 + kNoiseBatches / kFullBatches
// full-set ones: opt-in, never part of training time.
#include <atomic>
#include <cstdint>
#include <vector>

#include "icl/data/data.hpp"
#include "icl/train/objective.hpp"
#include "icl/train/train.hpp"

namespace icl {

// Diagonal of the Hessian of obj's loss on `batch` at theta (central differences of the gradient); `stop`
// (optional, cancel.hpp) is polled before each parameter's pair of gradients: set, it throws Cancelled.
std::vector<double> hessian_diagonal(Objective<double>& obj, const TaskBatch<double>& batch, const std::vector<double>& theta,
                                     const std::atomic<bool>* stop = nullptr);
// u^T H u / |u|^2 at theta (central difference of the gradient along u).
double directional_smoothness(Objective<double>& obj, const TaskBatch<double>& batch, const std::vector<double>& theta,
                              const std::vector<double>& u);

// max_i |H_ii| / median_i |H_ii|, the median being the lower middle value of an even count (torch.median);
// NaN when that median is 0.
double robust_condition_number(const std::vector<double>& H);

// Seed of the fixed landscape set: a constant, so the set never depends on a point's seed.
constexpr uint64_t kFixedSeed = 0xA24;

// True for the points that measure the landscape (`landscape` set).
inline bool landscape_applies(const Point& p) { return !p.landscape.empty() || p.landscape_every > 0; }

// Observes a training run (train.hpp) at the steps the point's `landscape` option names.
class Landscape : public TrainObserver {
 public:
  static constexpr int kNoiseBatches = 32, kFullBatches = 16, kFullMax = 65536;
  // `stop` (optional): polled between the measurement's gradients (cancel.hpp); set, measure throws Cancelled.
  explicit Landscape(const Point& p, const std::atomic<bool>* stop = nullptr);
  bool on() const { return landscape_applies(p_); }
  bool wanted(int64_t step) const override;
  const TaskBatch<double>& fixed_set() const { return fixed_; }
  // Records the measurements at `step` (series landscape_*); `update` is the optimiser's step from
  // theta (empty when there is none, e.g. after the last step).
  void measure(int64_t step, const std::vector<double>& theta, const std::vector<double>& update) override;
  // What was measured so far (moved out).
  Analysis take() override { return std::move(measured_); }

 private:
  const Point& p_;
  const std::atomic<bool>* stop_;
  Objective<double> obj_;
  TaskBatch<double> fixed_, full_;
  std::vector<TaskBatch<double>> batches_;
  Analysis measured_;
};

}  // namespace icl
