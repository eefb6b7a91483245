#pragma once
// Shared helpers of the numerical tests: small points, seeded batches, worst-entry comparisons.
#include <gtest/gtest.h>

#include "icl/base/eigen.hpp"
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "icl/base/point.hpp"
#include "icl/data/data.hpp"
#include "icl/run/options.hpp"

namespace icl::test {

// A point from "name=value" settings on top of the defaults; fails the test on a bad setting.
inline Point make_point(const std::vector<std::pair<std::string, std::string>>& settings) {
  Point p;
  for (const auto& [k, v] : settings) {
    const std::string why = point_set(p, k, v);
    EXPECT_EQ(why, "") << k << "=" << v;
  }
  EXPECT_TRUE(point_validate(p).empty());
  return p;
}

template <class T>
TaskBatch<T> make_batch(const Point& p, int B, uint64_t block = 7) {
  TaskBatch<T> batch;
  batch.resize(B, p.d, p.n);
  sample_tasks(make_task_law(p), p.seed, Stream::train, block, batch);
  return batch;
}

// The token matrix of task t: D x N, query label zeroed.
template <class T>
Eigen::MatrixXd task_Z(const TaskBatch<T>& batch, int t) {
  Eigen::MatrixXd X;
  Eigen::VectorXd y;
  batch_task(batch, t, &X, &y);
  Eigen::MatrixXd Z(X.rows() + 1, X.cols());
  Z.topRows(X.rows()) = X;
  Z.bottomRows(1) = y.transpose();
  Z(X.rows(), X.cols() - 1) = 0.0;
  return Z;
}

// max_i |a_i - b_i| / (|b_i| + floor), with floor = 1e-3 max(1, max|b|): the worst relative error,
// guarded where the reference entry is (near) zero.
inline double worst_rel(const std::vector<double>& a, const std::vector<double>& b) {
  double bmax = 1.0;
  for (double x : b) bmax = std::max(bmax, std::fabs(x));
  double worst = 0.0;
  for (size_t i = 0; i < a.size(); ++i)
    worst = std::max(worst, std::fabs(a[i] - b[i]) / (std::fabs(b[i]) + 1e-3 * bmax));
  return worst;
}

}  // namespace icl::test
