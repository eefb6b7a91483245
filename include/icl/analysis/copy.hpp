#pragma once
// [VO23] Fig. 5's copy analysis of a classic-token transformer's first layer, as its code computes it
// (train.py: analyse_copy): for token k = 0 .. 2n-2 and t_k(X) = sum_c H_1(c, k) (the first layer's
// output at token k, summed over all channels), the gradient with respect to the raw tokens X (d x 2n+1),
// averaged over the evaluation tasks FIRST, then its norm per token, g_j = |mean_tasks d t_k / d x_j|:
//   own = g_k,  next = g_{k+1},  other = sum_{j != k} g_j / (2n - 1)
// each averaged over k.  ("other" includes the next token, and the divisor is the code's.)  At
// initialisation own = sqrt(d) (the residual); a model that copies each y next to its x has next > 0.
// Measured in double on the point's evaluation set, at every evaluation step along training (series
// copy_*) when the point is a classic-token transformer with analysis on.
#include <cstdint>
#include <vector>

#include "icl/base/result.hpp"
#include "icl/data/data.hpp"
#include "icl/model/transformer.hpp"
#include "icl/train/train.hpp"

namespace icl {

struct CopyNorms {
  double own = 0, next = 0, other = 0;
};
CopyNorms copy_norms(const TransformerShape& s, const std::vector<double>& theta, const TaskBatch<double>& set);

// True for the points the copy analysis applies to (arch = transformer, tokens = classic, analysis on).
bool copy_applies(const Point& p);

// Observes training at step 0, every eval_every steps and the last step: series copy_step, copy_own,
// copy_next, copy_other.
class CopyCurve : public TrainObserver {
 public:
  explicit CopyCurve(const Point& p);
  bool wanted(int64_t step) const override;
  void measure(int64_t step, const std::vector<double>& theta, const std::vector<double>& update) override;
  Analysis take() override { return std::move(measured_); }

 private:
  const Point& p_;
  TaskBatch<double> set_;
  Analysis measured_;
};

}  // namespace icl
