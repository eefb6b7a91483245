#pragma once
// In-context linear regression tasks (science.md section 1), drawn in the batched lane layout.
// Task t of a draw uses only rng_key(seed, stream, block, t): a batch's content does not depend on how
// it is split into chunks, on the rank, or on the order of draws.
#include "icl/core/eigen.hpp"
#include <cstdint>
#include <vector>

#include "icl/core/lane.hpp"
#include "icl/core/point.hpp"
#include "icl/core/rng.hpp"

namespace icl {

// Everything needed to draw tasks, fixed once per point.
struct TaskLaw {
  int d = 0, n = 0;
  XDist x_dist = XDist::gaussian;
  double x_param = 0.0;
  Eigen::MatrixXd Sigma;        // d x d input covariance (identity for non-gaussian laws: see below)
  Eigen::MatrixXd Sigma_half;   // d x d, x = Sigma_half g; empty when Sigma = I
  Eigen::MatrixXd w_half;       // d x d, w = w_half g; empty when w ~ N(0, I)
  NoiseKind noise = NoiseKind::none;
  std::vector<double> noise_sigma;
  double x_scale = 1.0;         // out-of-distribution inputs: every x multiplied by this (labels follow)
};

// Builds the law of point p; a rotated covariance draws U from rng_key(p.seed, Stream::rotation).
// For uniform, sphere and gamma inputs Sigma is their true covariance (a^2/3 I, I/d, E[G]/d I).
TaskLaw make_task_law(const Point& p);

// B tasks in lane layout: chunk c holds tasks c*V .. c*V+V-1 (V = kLanes<T>); the last chunk is padded
// with all-zero tasks whose mask is 0.
template <class T>
struct TaskBatch {
  int B = 0, d = 0, n = 0, chunks = 0;
  LaneVec<T> Z;          // chunks x (d+1) x (n+1): token matrices; query column (x_q, 0)
  LaneVec<T> y;          // chunks: the query's (noiseless) label
  LaneVec<T> mask;       // chunks: 1 for a task, 0 for padding
  std::vector<double> sigma;   // B: the task's noise std
  std::vector<double> w;       // B x d: the task's weight vector
  LaneVec<T> scratch;          // one chunk's normals, w and sigma: sized once, reused by every draw

  void resize(int B_, int d_, int n_);
  const Lane<T>* chunk_Z(int c) const { return Z.data() + static_cast<size_t>(c) * (d + 1) * (n + 1); }
};

// Draws batch.B tasks of `law` with keys rng_key(seed, stream, block, t), t = 0..B-1.
template <class T>
void sample_tasks(const TaskLaw& law, uint64_t seed, Stream stream, uint64_t block, TaskBatch<T>& batch);

// Task t of a batch unpacked to double: X is d x (n+1) (columns x_1..x_{n+1}), y has n+1 entries with
// y[n] the query's label.  For tests, references and per-task analyses.
template <class T>
void batch_task(const TaskBatch<T>& batch, int t, Eigen::MatrixXd* X, Eigen::VectorXd* y);

}  // namespace icl
