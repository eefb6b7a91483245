#pragma once
// A context's sums, all a task spectrum, dMMSE or a change of basis starts from (baselines.hpp), defined alike for
// one task and for a block of tasks side by side (the analysis sets and GD++'s tuning set; context_curve and the
// probes grow theirs a token at a time instead):
//   (X X^T)_rk = sum_j x_rj x_kj,   (X y)_r = sum_j x_rj y_j,   |y|^2 = sum_j y_j^2
// over the context's tokens j = 0..n-1, each a chain of multiply-adds in token order from +0, fused where the
// target fuses (fused_madd, lanes::madd).  X X^T is symmetric to the bit.  On float tasks each product is exact
// in double, so these sums have the same bits with or without FMA.
#include <vector>

#include "icl/analysis/lanes.hpp"
#include "icl/base/eigen.hpp"
#include "icl/data/data.hpp"

namespace icl {

// One task: X (d x n) and y (n).
void context_sums(const Eigen::MatrixXd& X, const Eigen::VectorXd& y, Eigen::MatrixXd* XXt, Eigen::VectorXd* Xy, double* yy);

// kTaskLanes tasks of a batch side by side: lane j of XXt(r, k) at XXt[(r d + k) kTaskLanes + j], of (X y)_i and
// x_q,i at [i kTaskLanes + j]; the lanes from `count` on are the batch's padding, not tasks.
struct ContextBlock {
  int d = 0, n = 0, count = 0;
  std::vector<double> XXt, Xy, xq;
  double yy[kTaskLanes] = {}, y_query[kTaskLanes] = {};   // |y|^2 over the context; the query's label
  std::vector<double> tokens;   // scratch: the block's tokens in double
  void task(int j, Eigen::MatrixXd* XXt_j, Eigen::VectorXd* Xy_j, Eigen::VectorXd* xq_j) const;   // lane j's, as matrices
};

// Tasks first .. first + kTaskLanes - 1 of `batch` (first a multiple of kTaskLanes; count: those below batch.B).
template <class T>
void context_block(const TaskBatch<T>& batch, int first, ContextBlock* out);

}  // namespace icl
