#pragma once
// In-context linear regression tasks (docs/science.md section 1), drawn in the batched lane layout.
// Task t of a draw uses only rng_key(seed, stream, block, t): a batch's content does not depend on how
// it is split into chunks, on the rank, or on the order of draws.
#include "icl/base/eigen.hpp"
#include <cmath>
#include <cstdint>
#include <vector>

#include "icl/base/lane.hpp"
#include "icl/base/point.hpp"
#include "icl/base/rng.hpp"
#include "icl/data/normals.hpp"

namespace icl {

// Everything needed to draw tasks, fixed once per point.
struct TaskLaw {
  int d = 0, n = 0;
  Task task = Task::linear;
  XDist x_dist = XDist::gaussian;
  double x_param = 0.0;
  Eigen::MatrixXd Sigma;        // d x d input covariance (identity for non-gaussian laws: see below)
  Eigen::MatrixXd Sigma_half;   // d x d, x = Sigma_half g; empty when Sigma = I
  Eigen::MatrixXd w_half;       // d x d, w = w_half g; empty when w ~ N(0, I)
  Eigen::VectorXd task_spectrum;   // d, rotated_per_task: x = U_t diag(l)^1/2 g, U_t Haar per task (else empty);
                                   // Sigma is then the mean covariance (tr l / d) I
  NoiseKind noise = NoiseKind::none;
  std::vector<double> noise_sigma;
  double x_scale = 1.0;         // out-of-distribution inputs: every x multiplied by this (labels follow)
  double w_scale = 1.0;         // out-of-distribution teachers: every w multiplied by this (linear tasks)
  bool other_inputs = false;    // [VO23]'s other input laws (the analysis's OOD sets only; contract step 3)
  Eigen::MatrixXd pool;         // d x M: w drawn uniformly from these columns (empty: w from the prior)
  int64_t contexts = 0;         // > 0: every task is one of this many fixed contexts
  Sampler sampler = Sampler::v2;   // the normals' stream (data/normals.hpp)
};

// Haar-random rotation: QR of a d x d matrix of rng_normals(key, 0, d^2) (row-major), the signs of R's diagonal
// folded into Q.
Eigen::MatrixXd haar_rotation(int d, uint64_t key);

// Builds the law of point p; a rotated covariance draws U from rng_key(p.seed, Stream::rotation).
// For uniform, sphere and gamma inputs Sigma is their true covariance (a^2/3 I, I/d, E[G]/d I).
// This is the law of fresh tasks: the test loss, the baselines' tuning and every analysis set draw from it.
TaskLaw make_task_law(const Point& p);
// The typical size of one input coordinate under x_dist (before cov, which only gaussian takes): gaussian 1,
// uniform:a a/sqrt(3), sphere 1/sqrt(d), gamma:k sqrt(G/d) with G's median, scale (k - 1/3) for k >= 1 and,
// for k < 1 where G = scale Gamma(k+1) U^(1/k), scale (k + 2/3) 2^(-1/k) (the median of U^(1/k)): a law with
// k -> 0 keeps a finite mean while almost every input underflows to 0.  Validation (options.cpp) bounds it.
double typical_input_scale(XDist x_dist, double x_param, int d);
// What training draws from: make_task_law(p) with the pool of task_pool tasks and the set of
// train_contexts contexts (each off when 0).
TaskLaw training_law(const Point& p);
// Fresh inputs and noise with w from the pool (task_pool > 0): the analysis's in-distribution set.
TaskLaw pool_law(const Point& p);

// The evaluation set (the test loss, the analysis's main set, the copy curve): eval_tasks tasks of
// make_task_law(p) drawn from (p.seed, draws::eval_set), or with eval_seed >= 0 from (eval_seed,
// draws::shared_eval_set): then every point of a sweep sees the same tasks, whatever its seed.
struct EvalDraw {
  uint64_t seed;
  Draw which;
};
inline EvalDraw eval_draw(const Point& p) {
  if (p.eval_seed >= 0) return {static_cast<uint64_t>(p.eval_seed), draws::shared_eval_set};
  return {p.seed, draws::eval_set};
}

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
//
// Reproducibility contract (bitwise; tests/data_ref.hpp transcribes it in scalar loops and test_data.cpp
// holds the vectorised code to it).  Task t has key k = rng_key(seed, stream, block, t), or with a set of
// P = law.contexts contexts k = rng_key(seed, Stream::contexts, 0, c), c = min(P - 1, floor(P u)),
// u = rng_uniform(rng_key(k_t, kContextIndex), 0) of k_t = rng_key(seed, stream, block, t) (so every draw
// of that law picks contexts uniformly with replacement from one fixed set); with N = n+1
// tokens (token n is the query) it uses m = d + N d + n normals from mp = ceil(m/2) Box-Muller pairs:
//  1. Pair q: double: u1 = rng_uniform(k, 2q), u2 = rng_uniform(k, 2q+1); float: b = rng_bits(k, q),
//     u1 = ((b >> 40) + 0.5) 2^-24, u2 = (((b >> 8) & 0xffffff) + 0.5) 2^-24.  In T: r = sqrt(-2 log u1),
//     theta = T(2 pi) u2, normal q = r cos theta, normal mp+q = r sin theta.  Sampler v1 (and every double
//     draw): log, sqrt, cos and sin are Eigen's array functions at width kLanes<T> (vectorised kernels,
//     EIGEN_FAST_MATH's sqrt among them: not libm's in the last bits), so these normals are not
//     rng_normal's, whose order (cos, sin interleaved) differs as well.  Sampler v2 (float):
//     normals_v2::box_muller(b >> 40, (b >> 8) & 0xffffff) (data/normals.hpp) instead.
//  2. w (T): w_i = normal i, or sum_k T(w_half(i,k)) normal k when w_half is set; with a pool of M columns,
//     w_i = T(pool(i, m)) instead, m = min(M - 1, floor(M rng_uniform(rng_key(k, kPoolIndex), 0))).  Pool
//     column m is w_half g (or g) in double, g = rng_normals(rng_key(seed, Stream::pool, m), 0, d).  Then,
//     when w_scale != 1, every w_i *= T(w_scale).
//  3. x_j (T), coordinate i of token j = 0..n, from g_ji = normal d + j d + i:
//       gaussian  g_ji, or sum_k T(Sigma_half(i,k)) g_jk when Sigma_half is set, or with a task spectrum l
//                 sum_k T(A(i,k)) g_jk, A = haar_rotation(d, rng_key(k, kTaskRotation)) diag(sqrt l) in double
//                 (a d x d QR per task, whose Eigen temporaries allocate: the one draw that does)
//       uniform   T(a (2 rng_uniform(k, 2mp + 1 + j d + i) - 1)),  a = x_param (the g_ji are not read:
//                 the pairs whose two normals are both g's, q = d .. d + N d - mp - 1, are not computed;
//                 for a noiseless linear task, whose labels read no eps, none past w's, q = d .. mp - 1)
//       sphere    g_ji * (T(1) / std::sqrt(sum_i g_ji^2))
//       gamma     as sphere with the radius times T(sqrt(G_j)), G_j ~ Gamma(shape a, scale sqrt(10/a)) in
//                 double (libm) by Marsaglia-Tsang from kj = rng_key(k, kGammaRadius, j): normals
//                 rng_normal(rng_key(kj, kGammaNormals), 0, 1, ..) and uniforms rng_uniform(rng_key(kj,
//                 kGammaUniforms), 0, 1, ..); for a < 1 uniform 0 gives the boost U^(1/a) and a += 1; then
//                 dd = a - 1/3, c = 1/sqrt(9 dd), repeat { z = next normal, v = 1 + c z, skip if v <= 0,
//                 v = v^3, u = next uniform } until log u < z^2/2 + dd - dd v + dd log v; G = scale dd v boost.
//       other     (other_inputs, whatever x_dist says: [VO23]'s create_ood_data) law f = min(2, floor(3 u_f)),
//                 u_f = rng_uniform(rng_key(k, kOtherLaw), 0); in double, s_ji = T's g_ji (f = 1, normal),
//                 -log u_ji (f = 0, exponential) or, f = 2 (Laplace), log(2 u_ji) when u_ji < 1/2 and
//                 -log(2 - 2 u_ji) otherwise, u_ji = rng_uniform(k, 2mp + 1 + j d + i); x_ji = T(s_ji / F),
//                 F = sqrt(sum over context tokens j < n and i of s_ji^2), summed in that order (j outer): the
//                 context's inputs have Frobenius norm 1, and the query is divided by the context's F.
//     then, when x_scale != 1, every x_ji *= T(x_scale).
//  4. sigma (double) from us = rng_uniform(k, 2mp): none 0, fixed s_0, uniform s_0 us,
//     set s[min(size-1, floor(us size))].
//  5. Labels (T): l_j = sum_i w_i x_ji; context y_j = l_j + T(sigma) eps_j with eps_j = normal d + N d + j
//     (noise none: y_j = l_j, the same bits, since l_j is never -0);
//     the query's l_n is batch.y, and Z(d, n) = 0.  Task sine ([VO23]'s create_reg_data_sin, d = 1): with
//     u = rng_uniform(k, 2mp + 1 + N d), a = 0.1 + 0.4 u and rho = pi u (the code draws both from one key:
//     amplitude and phase are one variable), l_j = T(a sin(double(x_j) + rho)) in double (libm), and w_0 = a.
// Sums run in the order written, from 0, in T, and every a b + c of steps 2, 3 and 5 is one fused
// multiply-add when the target has FMA (-ffp-contract=fast, -march: recorded build flags).  batch.w
// holds w converted to double; padding lanes are all zero.
// [VO23]'s sine task from its uniform u: amplitude a = 0.1 + 0.4 u, label a sin(x + pi u).
inline double sine_amplitude(double u) { return fused_madd(0.4, u, 0.1); }
template <class T>
T sine_label(double u, T x) {
  return static_cast<T>(sine_amplitude(u) * std::sin(fused_madd(3.14159265358979323846, u, static_cast<double>(x))));
}

// Where chunk_normals puts normal t (pair t's cosine for t < mp, pair t - mp's sine after): G[t]; with X, the
// inputs' normals t = d + j d + i (i < d, j < N) go to X[i N + j] instead, the chunk's tokens, where the
// identity Gaussian inputs (x_is_normals) are those normals themselves.  G is the chunk's whole scratch of 2 mp
// lanes either way (the integers the normals are made from pass through it).
template <class T>
struct NormalsOut {
  Lane<T>* G;
  Lane<T>* X = nullptr;
  int d = 0, N = 0;
  Lane<T>* at(int t) const {
    const int u = t - d;
    return X && u >= 0 && u < N * d ? X + (u % d) * N + u / d : G + t;
  }
};

// Contract step 1 for a chunk of kLanes<T> tasks with these keys: pair q's normals to G[q] (cosine) and
// G[mp + q] (sine), or where `out` puts them, by `sampler` (v2 for float only; double draws as v1).  The pairs
// in [unused_begin, unused_end), which nothing of the law reads, are not computed: their lanes are set to NaN.
// A pair's normals depend only on its key and q, so the others keep their bits.
template <class T>
void chunk_normals(Sampler sampler, const uint64_t* keys, int mp, NormalsOut<T> out, int unused_begin = 0,
                   int unused_end = 0);
template <class T>
void chunk_normals(Sampler sampler, const uint64_t* keys, int mp, Lane<T>* G, int unused_begin = 0, int unused_end = 0) {
  chunk_normals<T>(sampler, keys, mp, NormalsOut<T>{G}, unused_begin, unused_end);
}

template <class T>
void sample_tasks(const TaskLaw& law, uint64_t seed, Stream stream, uint64_t block, TaskBatch<T>& batch);

// Task t of a batch unpacked to double: X is d x (n+1) (columns x_1..x_{n+1}), y has n+1 entries with
// y[n] the query's label.  For tests, references and per-task analyses.
template <class T>
void batch_task(const TaskBatch<T>& batch, int t, Eigen::MatrixXd* X, Eigen::VectorXd* y);

}  // namespace icl
