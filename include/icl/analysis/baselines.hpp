#pragma once
// Closed-form predictors on one task's context (docs/science.md section 4), from one eigendecomposition.
// With X the d x n context inputs (in some basis, see below), X X^T = U diag(s) U^T, b = U^T X y and
// z = U^T x_q:
//   ridge(lambda)          yhat = sum_i z_i b_i / (s_i + lambda)          (lambda -> 0: minimum-norm OLS)
//   K steps of GD, rate eta, on 1/2 sum_j (<w, x_j> - y_j)^2 from w = 0:
//                          yhat = sum_i z_i b_i (1 - (1 - eta s_i)^K) / s_i
//   Bayes mixture over sigma (prior weights pi_k on levels sigma_k), w ~ N(0, I):
//     log p(y | X, sigma) = -1/2 [(n - d) log sigma^2 + sum_i log(sigma^2 + s_i) + (|y|^2 - sum_i b_i^2/(s_i + sigma^2)) / sigma^2]
//     yhat = sum_k p(sigma_k | context) ridge(sigma_k^2)
// The basis: for the ridge family and the Bayes predictor, inputs are whitened by the task prior
// (x -> Omega^{1/2} x for w ~ N(0, Omega)), which makes ridge(sigma^2) the posterior mean; for
// preconditioned GD ([A23], preconditioner Sigma^-1), by the input covariance (x -> Sigma^{-1/2} x).
#include <functional>
#include <vector>

#include "icl/analysis/lanes.hpp"
#include "icl/base/eigen.hpp"

namespace icl {

struct ContextBlock;   // context_sums.hpp

// One task's spectrum as every predictor below reads it: views of s, b, z aligned as Eigen's own vectors, so that
// Eigen's reductions over them take the same path (the same bits) as over a TaskSpectrum's.
struct SpectrumRef {
  using Vec = Eigen::Map<const Eigen::VectorXd, Eigen::AlignedMax>;
  Vec s, b, z;   // d each
  double yy;     // |y|^2 over the context
  int n;
};

// One task's spectrum, owned (task_spectrum; the many tasks of a set are a Spectra).
struct TaskSpectrum {
  Eigen::VectorXd s, b, z;   // d each
  double yy = 0;             // |y|^2 over the context
  int n = 0;
  operator SpectrumRef() const {
    return {SpectrumRef::Vec(s.data(), s.size()), SpectrumRef::Vec(b.data(), b.size()),
            SpectrumRef::Vec(z.data(), z.size()), yy, n};
  }
};

// Many tasks' spectra of one d in one allocation (TaskSpectra::take): task t's s, b and z each a segment of
// `stride` doubles (d rounded up to Eigen's alignment), one after the other.
class Spectra {
 public:
  Spectra() = default;
  Spectra(int d, size_t tasks);   // every entry 0
  size_t size() const { return yy_.size(); }
  bool empty() const { return yy_.empty(); }
  int d() const { return d_; }
  SpectrumRef operator[](size_t t) const {
    const double* at = data_.data() + t * 3 * stride_;
    return {SpectrumRef::Vec(at, d_), SpectrumRef::Vec(at + stride_, d_), SpectrumRef::Vec(at + 2 * stride_, d_), yy_[t],
            n_[t]};
  }
  // Task t's s, b, z (d each, `stride` apart) and its |y|^2 and n, to be written.
  double* entries(size_t t) { return data_.data() + t * 3 * stride_; }
  size_t stride() const { return stride_; }
  void set_context(size_t t, double yy, int n) {
    yy_[t] = yy;
    n_[t] = n;
  }

 private:
  int d_ = 0;
  size_t stride_ = 0;
  std::vector<double, Eigen::aligned_allocator<double>> data_;
  std::vector<double> yy_;
  std::vector<int> n_;
};

// X: d x n context inputs, y: n labels, xq: the query, all already in the chosen basis (src/analysis/spectra.cpp).
TaskSpectrum task_spectrum(const Eigen::MatrixXd& X, const Eigen::VectorXd& y, const Eigen::VectorXd& xq);

// The same for many tasks of one d, kTaskLanes side by side (spectra.cpp): add() collects a task, reducing
// each full block to tridiagonal form; take() finishes every task added since the last take() and returns
// them in order.  A task's spectrum does not depend on the others.

class TaskSpectra {
 public:
  void add(const Eigen::MatrixXd& X, const Eigen::VectorXd& y, const Eigen::VectorXd& xq);
  // The same from the context's sums: X X^T, X y, |y|^2 and n (a context grown a token at a time keeps them).
  void add_sums(const Eigen::MatrixXd& XXt, const Eigen::VectorXd& Xy, double yy, int n, const Eigen::VectorXd& xq);
  // The same for a block's tasks (context_sums.hpp), in order.
  void add_block(const ContextBlock& block);
  Spectra take();
  void reserve(size_t tasks);   // room for this many tasks before the next take() (the reduced blocks grow without copies)

 private:
  void reduce_block();
  void dimension(int d);   // the first task's: sizes the block being added
  // One task's sums in dimension d: X X^T (r, c) at G[r rs + c cs], (X y)_i and x_q,i at Xy[i vs] and xq[i vs].
  void put(int d, const double* G, size_t rs, size_t cs, const double* Xy, const double* xq, size_t vs, double yy, int n);
  struct Sums {
    double scale = 0, yy = 0;   // X X^T's largest entry (the reduction's is X X^T / scale), |y|^2
    int n = 0;
  };
  int d_ = -1;
  std::vector<Sums> sums_;                // every task added since the last take()
  std::vector<double> G_, P_;             // the block being added: X X^T / scale and (X y, x_q), kTaskLanes side by side
  std::vector<double> a_, e_, p_, q_;     // the reduced blocks: tridiagonal and Q^T (X y, x_q), d kTaskLanes each
  std::vector<lanes::Vd> vw_;             // the reduction's Householder vector and its w, d registers each
};

// Many tasks' spectra of one d in blocks of kTaskLanes tasks, a block's entry i of every task side by side
// ([(block d + i) kTaskLanes + lane]), so that loops over a block's lanes vectorise; the last block is padded
// with empty tasks (s = b = z = 0).  `c`: the spectra in the basis x -> c x, each s_i (c c), b_i c, z_i c (c = 1:
// as they are).
struct SpectraBlocks {
  int d = 0;
  size_t tasks = 0;
  std::vector<double> s, b, z;
  explicit SpectraBlocks(const Spectra& spectra, double c = 1.0);
  explicit SpectraBlocks(const std::vector<TaskSpectrum>& spectra, double c = 1.0);
};

double predict_ridge(SpectrumRef t, double lambda);
double predict_ols(SpectrumRef t);   // minimum norm (pseudo-inverse) when n < d
double predict_gd(SpectrumRef t, double eta, int K);
// predict_ridge (lambda[t] for task t) and predict_gd of every task, kTaskLanes at a time, each lane one
// task's arithmetic in that task's order: the same bits as the one-task forms (the tunings' many passes).
std::vector<double> predict_ridge_all(const SpectraBlocks& set, const std::vector<double>& lambda);
std::vector<double> predict_gd_all(const SpectraBlocks& set, double eta, int K);
// AdaRR's noise estimate RSS_OLS / (n - d) (docs/science.md section 4); requires n > d.
double noise_estimate(SpectrumRef t);
// Posterior-weighted ridge over the support `sigma` with prior weights `weight` (same length).
double predict_bayes(SpectrumRef t, const std::vector<double>& sigma, const std::vector<double>& weight);

// K steps of iterative Newton for the pseudo-inverse of S = X X^T (Fu et al. 2023): M_0 = alpha S,
// M_{k+1} = 2 M_k - M_k S M_k, yhat = x_q^T M_K X y, with alpha as Fu et al.'s current code (kNewtonAlpha).
// Every M_k is a polynomial in S, so per eigenvalue m_0 = alpha s, m_{k+1} = 2 m_k - s m_k^2
// (1 - s m_{k+1} = (1 - s m_k)^2: quadratic convergence to 1/s from any 0 < alpha s^2 < 2; m stays 0 where
// s = 0, the minimum-norm solution: eigenvalues below the pseudo-inverse's tolerance count as 0),
// yhat = sum_i z_i b_i m_K(s_i).
//
// The one declaration of the start: alpha = 1 / |S S^T|_F = 1 / sqrt(sum_i s_i^4), as `newton_inv` in
// DeqingFu/transformers-icl-second-order src/models.py:514-515 (`torch.linalg.norm(A @ A.T)`, the Frobenius
// norm; A = X^T X in their row-per-example convention is our S) at 52376dd, the last commit to touch the
// file (unchanged at the newest, c99333c).  Their first commit (32b1021, src/models.py:361-362) had 2 / |.|_F;
// the paper's text writes the spectral norm.  Every output file names it (analysis_convention, and the doc of
// every Newton dataset).
constexpr const char* kNewtonAlpha =
    "M_0 = alpha S, alpha = 1/|S S^T|_F (Frobenius; Fu et al.'s code, DeqingFu/transformers-icl-second-order "
    "src/models.py:514-515 @52376dd)";
double newton_alpha(SpectrumRef t);
double predict_newton(SpectrumRef t, int K);
// Every step's prediction, yhat[k] = predict_newton(t, k) for k = 0..K, in one pass (cost K d, not K^2 d / 2).
void predict_newton_steps(SpectrumRef t, int K, double* yhat);

// dMMSE (Raventos et al. 2023): the posterior mean under the uniform prior over the pool's columns W
// (d x M) and the noise mixture (levels sigma_k, prior weights pi_k), in the raw basis:
//   log p(m, k | context) = log pi_k - n log sigma_k - |y - X^T w_m|^2 / (2 sigma_k^2) + const
//   yhat = sum_{m,k} p(m, k | context) <w_m, x_q>
// X: d x n context inputs, y: n labels, xq: the query.  Cost M n d per task.  The reference form: the analyses
// use DmmseSums.
double predict_dmmse(const Eigen::MatrixXd& X, const Eigen::VectorXd& y, const Eigen::VectorXd& xq,
                     const Eigen::MatrixXd& pool, const std::vector<double>& sigma, const std::vector<double>& weight);
// Its posterior mean from each pool task's residual sum of squares `rss` and prediction <w_m, x_q> `pred`
// (M each), n context pairs.
double dmmse_posterior(Eigen::Ref<const Eigen::VectorXd> rss, Eigen::Ref<const Eigen::VectorXd> pred, double n,
                       const std::vector<double>& sigma, const std::vector<double>& weight);

// dMMSE for many tasks from their contexts' sums (TaskSpectra::add_sums), kBlock tasks at a time:
//   |y - X^T w_m|^2 = |y|^2 - 2 w_m.(X y) + w_m^T (X X^T) w_m   (floored at 0)
// for every pool task m is one product of the pool's features phi_m = (w_i w_j for i <= j, w) with each task's
// (c_ij (X X^T)_ij, -2 X y), c_ij = 1 on the diagonal and 2 off it; the predictions <w_m, x_q> another.  Both are
// large GEMMs: about M (d^2 / 2 + 2 d) multiply-adds a task, whatever n, against M n d for the residuals.
// Rounding: the sums cancel where a pool task fits (|y|^2 against its residual); DmmseSums' predictions are
// within 1e-9 (relative) of predict_dmmse's, noiseless contexts included (test_baselines).
class DmmseSums {
 public:
  static constexpr int kBlock = 32;
  DmmseSums(const Eigen::MatrixXd& pool, std::vector<double> sigma, std::vector<double> weight);   // keeps &pool
  DmmseSums(Eigen::MatrixXd&&, std::vector<double>, std::vector<double>) = delete;
  void add(const Eigen::MatrixXd& XXt, const Eigen::VectorXd& Xy, double yy, int n, const Eigen::VectorXd& xq);
  std::vector<double> take();   // every task added since the last take, its prediction, in the order added

 private:
  void flush();
  const Eigen::MatrixXd& pool_;
  std::vector<double> sigma_, weight_;
  Eigen::MatrixXd phi_;            // M x (d (d + 1) / 2 + d): each pool task's features, a row
  Eigen::MatrixXd a_, q_, r_, p_;  // a block's sums (features x kBlock) and queries (d x kBlock); rss and predictions
  std::vector<double> yy_, n_, out_;
};

// Minimises f over [lo, hi] by golden-section search on log(x) after a coarse grid of `grid` points.
double minimise_log(const std::function<double(double)>& f, double lo, double hi, int grid = 24);

// The one-step GD rate of least squared error over the tasks of `set` (labels y), on [lo, hi]: one step from
// w = 0 predicts eta a_t, a_t = sum_i z_i b_i (predict_gd's (1 - (1 - eta s)) / s is eta in exact arithmetic),
// so the loss is quadratic in eta and its minimiser is sum_t y_t a_t / sum_t a_t^2, clamped to [lo, hi]; lo
// when every a_t is 0 (any rate then predicts 0).  What minimise_log finds to its tolerance, in one pass.
double gd_one_step_eta(const SpectraBlocks& set, const std::vector<double>& y, double lo, double hi);

}  // namespace icl
