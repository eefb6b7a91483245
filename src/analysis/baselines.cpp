// Derivations in baselines.hpp.  Eigenvalues below kRankTol * max(s) count as zero (pseudo-inverse).
#include "icl/analysis/baselines.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>


namespace icl {
namespace {
constexpr double kRankTol = 1e-10;
}

double predict_ridge(const TaskSpectrum& t, double lambda) {
  double yhat = 0.0;
  for (int i = 0; i < t.s.size(); ++i) yhat += t.z(i) * t.b(i) / (t.s(i) + lambda);
  return yhat;
}

double predict_ols(const TaskSpectrum& t) {
  const double tol = kRankTol * std::max(t.s.maxCoeff(), 1e-300);
  double yhat = 0.0;
  for (int i = 0; i < t.s.size(); ++i)
    if (t.s(i) > tol) yhat += t.z(i) * t.b(i) / t.s(i);
  return yhat;
}

// x^K by repeated squaring (K >= 0): the tuning loops call this millions of times.
double int_pow(double x, int K) {
  double r = 1.0;
  for (; K > 0; K >>= 1, x *= x)
    if (K & 1) r *= x;
  return r;
}

double predict_gd(const TaskSpectrum& t, double eta, int K) {
  double yhat = 0.0;
  for (int i = 0; i < t.s.size(); ++i) {
    const double s = t.s(i);
    // (1 - (1 - eta s)^K) / s, and K eta as s -> 0
    const double f = s > 1e-12 ? (1.0 - int_pow(1.0 - eta * s, K)) / s : K * eta;
    yhat += t.z(i) * t.b(i) * f;
  }
  return yhat;
}

SpectraBlocks::SpectraBlocks(const std::vector<TaskSpectrum>& spectra)
    : d(spectra.empty() ? 0 : static_cast<int>(spectra[0].s.size())), tasks(spectra.size()) {
  const size_t size = (tasks + kTaskLanes - 1) / kTaskLanes * kTaskLanes * d;
  s.assign(size, 0.0);
  b.assign(size, 0.0);
  z.assign(size, 0.0);
  for (size_t t = 0; t < tasks; ++t)
    for (int i = 0; i < d; ++i) {
      const size_t at = (t / kTaskLanes * d + i) * kTaskLanes + t % kTaskLanes;
      s[at] = spectra[t].s(i);
      b[at] = spectra[t].b(i);
      z[at] = spectra[t].z(i);
    }
}

namespace {

using lanes::kWidth;
using lanes::load;
using lanes::madd;
using lanes::Vd;

// yhat[t] = the sum over i, in increasing i, of task t's terms: term(&acc, block's entry i, h) adds to acc
// lanes h.. h + kWidth - 1 of a block (one register), a block's tasks side by side.
template <class Term>
std::vector<double> lanes_sum(const SpectraBlocks& set, Term term) {
  std::vector<double> yhat(set.tasks);
  for (size_t first = 0; first < set.tasks; first += kTaskLanes)
    for (int h = 0; h < kTaskLanes; h += kWidth) {
      Vd acc{};
      for (int i = 0; i < set.d; ++i) term(acc, (first / kTaskLanes * set.d + i) * kTaskLanes + h, first + h);
      for (int j = 0; j < kWidth && first + h + j < set.tasks; ++j) yhat[first + h + j] = acc[j];
    }
  return yhat;
}

}  // namespace

std::vector<double> predict_ridge_all(const SpectraBlocks& set, const std::vector<double>& lambda) {
  return lanes_sum(set, [&](Vd& acc, size_t at, size_t task) {
    Vd l = Vd{} + 1.0;   // the padding's: 0 / 1
    for (int j = 0; j < kWidth && task + j < set.tasks; ++j) l[j] = lambda[task + j];
    acc += load<Vd>(&set.z[at]) * load<Vd>(&set.b[at]) / (load<Vd>(&set.s[at]) + l);
  });
}

// predict_gd's arithmetic with its contractions written out (1 - eta s and the sum's multiply-add fused, as GCC
// compiles the one-task form).
std::vector<double> predict_gd_all(const SpectraBlocks& set, double eta, int K) {
  const Vd one = Vd{} + 1.0, eta_v = Vd{} + eta, tiny = Vd{} + 1e-12, K_eta = Vd{} + K * eta;
  return lanes_sum(set, [&](Vd& acc, size_t at, size_t) {
    const Vd s = load<Vd>(&set.s[at]);
    Vd x = madd(-s, eta_v, one), r = one;
    for (int k = K; k > 0; k >>= 1, x *= x)   // int_pow's squarings
      if (k & 1) r *= x;
    acc = madd(load<Vd>(&set.z[at]) * load<Vd>(&set.b[at]), s > tiny ? (one - r) / s : K_eta, acc);
  });
}

double newton_alpha(const TaskSpectrum& t) {
  return 1 / t.s.array().square().matrix().norm();   // 1 / |S S^T|_F = 1 / sqrt(sum_i s_i^4)
}

double predict_newton(const TaskSpectrum& t, int K) {
  const double s_max = t.s.maxCoeff();
  if (!(s_max > 0)) return 0.0;
  const double alpha = newton_alpha(t);
  double yhat = 0.0;
  for (int i = 0; i < t.s.size(); ++i) {
    const double s = t.s(i);
    if (s <= kRankTol * s_max) continue;   // the null space, exactly 0 in exact arithmetic (round-off grows it)
    double m = alpha * s;
    for (int k = 0; k < K; ++k) m = 2 * m - s * m * m;
    yhat += t.z(i) * t.b(i) * m;
  }
  return yhat;
}

double noise_estimate(const TaskSpectrum& t) {
  double fit = 0.0;   // |P_X y|^2 = sum_i b_i^2 / s_i
  const double tol = kRankTol * std::max(t.s.maxCoeff(), 1e-300);
  int rank = 0;
  for (int i = 0; i < t.s.size(); ++i)
    if (t.s(i) > tol) {
      fit += t.b(i) * t.b(i) / t.s(i);
      ++rank;
    }
  return std::max(t.yy - fit, 0.0) / std::max(t.n - rank, 1);
}

double predict_bayes(const TaskSpectrum& t, const std::vector<double>& sigma, const std::vector<double>& weight) {
  const int d = static_cast<int>(t.s.size());
  std::vector<double> logp(sigma.size());
  double best = -std::numeric_limits<double>::infinity();
  for (size_t k = 0; k < sigma.size(); ++k) {
    const double v = sigma[k] * sigma[k];
    double logdet = (t.n - d) * std::log(v), quad = t.yy, prod = 1.0;
    for (int i = 0; i < d; ++i) {
      prod *= v + t.s(i);   // one log per 8 factors instead of one per factor
      if (i % 8 == 7 || i == d - 1) {
        logdet += std::log(prod);
        prod = 1.0;
      }
      quad -= t.b(i) * t.b(i) / (t.s(i) + v);
    }
    logp[k] = std::log(weight[k]) - 0.5 * (logdet + std::max(quad, 0.0) / v);
    best = std::max(best, logp[k]);
  }
  double norm = 0.0, yhat = 0.0;
  for (size_t k = 0; k < sigma.size(); ++k) {
    const double p = std::exp(logp[k] - best);
    norm += p;
    yhat += p * predict_ridge(t, sigma[k] * sigma[k]);
  }
  return yhat / norm;
}

// Posterior weights below e^kNegligible of the largest (1), about 1e-261, are taken as 0.  Beside the largest
// term every sum absorbs them (the denominator is at least 1; the numerator would have to cancel to 1e-245 of
// the predictions to feel them).  Computed, the weights of e^-708 and less and their products with the
// predictions are subnormal numbers, each a microcode assist on x86: with a pool of 4,096 tasks, dMMSE took
// 101 us a task, half of it here in those assists (perf); 57 us without them.
constexpr double kNegligible = -600.0;

// dMMSE's posterior mean from each pool task's residual sum of squares `rss` and prediction `pred` (M each).
double dmmse_posterior(const Eigen::VectorXd& rss, const Eigen::VectorXd& pred, double n, const std::vector<double>& sigma,
                       const std::vector<double>& weight) {
  Eigen::MatrixXd logp(rss.size(), sigma.size());
  for (size_t k = 0; k < sigma.size(); ++k)
    logp.col(k) = (std::log(weight[k]) - n * std::log(sigma[k])) - rss.array() / (2 * sigma[k] * sigma[k]);
  const Eigen::ArrayXXd x = logp.array() - logp.maxCoeff();
  Eigen::MatrixXd p = x.max(kNegligible).exp();   // Eigen's vectorised exp, as before (its select is not vectorised)
  for (Eigen::Index i = 0; i < p.size(); ++i) p.data()[i] = x.data()[i] < kNegligible ? 0.0 : p.data()[i];
  return (p.transpose() * pred).sum() / p.sum();
}

double predict_dmmse(const Eigen::MatrixXd& X, const Eigen::VectorXd& y, const Eigen::VectorXd& xq,
                     const Eigen::MatrixXd& pool, const std::vector<double>& sigma, const std::vector<double>& weight) {
  // Each pool task's labels for the context, 256 pool tasks at a time (their block stays in cache), and their
  // squared residuals summed a context column at a time (contiguous).
  const Eigen::Index M = pool.cols(), block = 256;
  Eigen::VectorXd rss(M);
  Eigen::MatrixXd fit;
  for (Eigen::Index m0 = 0; m0 < M; m0 += block) {
    const Eigen::Index b = std::min(block, M - m0);
    fit.noalias() = pool.middleCols(m0, b).transpose() * X;
    auto r = rss.segment(m0, b).array();
    r.setZero();
    for (int j = 0; j < X.cols(); ++j) r += (fit.col(j).array() - y(j)).square();
  }
  return dmmse_posterior(rss, pool.transpose() * xq, static_cast<double>(y.size()), sigma, weight);
}

double predict_dmmse_sums(const Eigen::MatrixXd& XXt, const Eigen::VectorXd& Xy, double yy, int n, const Eigen::VectorXd& xq,
                          const Eigen::MatrixXd& pool, const std::vector<double>& sigma, const std::vector<double>& weight) {
  const Eigen::VectorXd quad = (pool.array() * (XXt * pool).array()).colwise().sum().transpose();
  const Eigen::VectorXd rss = ((yy - 2 * (pool.transpose() * Xy).array()) + quad.array()).cwiseMax(0.0);
  return dmmse_posterior(rss, pool.transpose() * xq, n, sigma, weight);
}

double minimise_log(const std::function<double(double)>& f, double lo, double hi, int grid) {
  const double a = std::log(lo), b = std::log(hi);
  int best = 0;
  double fbest = std::numeric_limits<double>::infinity();
  for (int i = 0; i < grid; ++i) {
    const double v = f(std::exp(a + (b - a) * i / (grid - 1)));
    if (v < fbest) { fbest = v; best = i; }
  }
  double l = a + (b - a) * std::max(best - 1, 0) / (grid - 1), r = a + (b - a) * std::min(best + 1, grid - 1) / (grid - 1);
  const double g = 0.5 * (std::sqrt(5.0) - 1.0);
  double x1 = r - g * (r - l), x2 = l + g * (r - l), f1 = f(std::exp(x1)), f2 = f(std::exp(x2));
  for (int it = 0; it < 24; ++it) {
    if (f1 < f2) { r = x2; x2 = x1; f2 = f1; x1 = r - g * (r - l); f1 = f(std::exp(x1)); }
    else { l = x1; x1 = x2; f1 = f2; x2 = l + g * (r - l); f2 = f(std::exp(x2)); }
  }
  const double x = f1 < f2 ? x1 : x2;
  return f(std::exp(x)) <= fbest ? std::exp(x) : std::exp(a + (b - a) * best / (grid - 1));
}

}  // namespace icl
