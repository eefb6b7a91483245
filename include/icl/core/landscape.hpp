#pragma once
// [A24]'s optimisation-landscape measurements at chosen steps of a training run (option `landscape`),
// in double precision on seeded sets of their own (Stream::analysis):
//   gradient noise     |g_B - g_full| for kNoiseBatches mini-batches of the point's batch size, with
//                      g_full the gradient on the "full" set (kFullBatches x batch tasks, at most 65,536)
//   Hessian diagonal   H_ii by central differences of the analytic gradient (exact up to O(h^2));
//                      robust condition number max_i |H_ii| / median_i |H_ii|
//   smoothness         u^T H u / |u|^2 along the update u the optimiser takes at that step
// Each measurement costs about 2 x #params full-set gradients: opt-in, never part of training time.
#include <cstdint>
#include <vector>

#include "icl/core/data.hpp"
#include "icl/core/objective.hpp"
#include "icl/core/train.hpp"

namespace icl {

// Diagonal of the Hessian of obj's loss on `batch` at theta (central differences of the gradient).
std::vector<double> hessian_diagonal(Objective<double>& obj, const TaskBatch<double>& batch, const std::vector<double>& theta);
// u^T H u / |u|^2 at theta (central difference of the gradient along u).
double directional_smoothness(Objective<double>& obj, const TaskBatch<double>& batch, const std::vector<double>& theta,
                              const std::vector<double>& u);

class Landscape {
 public:
  Landscape(const Point& p, const TaskLaw& law);
  bool wanted(int64_t step) const;
  // Records the measurements at `step` into r.series (landscape_*); `update` is the optimiser's step
  // from theta (empty when there is none, e.g. after the last step).
  void measure(int64_t step, const std::vector<double>& theta, const std::vector<double>& update, Result& r);

 private:
  static constexpr int kNoiseBatches = 32, kFullBatches = 16;
  const Point& p_;
  Objective<double> obj_;
  TaskBatch<double> full_;
  std::vector<TaskBatch<double>> batches_;
};

}  // namespace icl
