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

double predict_ridge(SpectrumRef t, double lambda) {
  double yhat = 0.0;
  for (int i = 0; i < t.s.size(); ++i) yhat += t.z(i) * t.b(i) / (t.s(i) + lambda);
  return yhat;
}

double predict_ols(SpectrumRef t) {
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

// Its two multiply-adds written fused (fused_madd), as predict_gd_all computes them: left to the compiler, the
// sum's was fused or not by the tuning (-mtune=znver3 splits a loop's multiply-add chains: the two forms then
// differed in the last bits on a Zen 5 core's -march=native build).
double predict_gd(SpectrumRef t, double eta, int K) {
  double yhat = 0.0;
  for (int i = 0; i < t.s.size(); ++i) {
    const double s = t.s(i);
    // (1 - (1 - eta s)^K) / s, and K eta as s -> 0
    const double f = s > 1e-12 ? (1.0 - int_pow(fused_madd(-s, eta, 1.0), K)) / s : K * eta;
    yhat = fused_madd(t.z(i) * t.b(i), f, yhat);
  }
  return yhat;
}

namespace {

// The block layout of `spectra` (a Spectra or a vector of TaskSpectrum), scaled by c.
template <class Set>
void to_blocks(const Set& spectra, double c, SpectraBlocks& out) {
  const size_t size = (out.tasks + kTaskLanes - 1) / kTaskLanes * kTaskLanes * out.d;
  out.s.assign(size, 0.0);
  out.b.assign(size, 0.0);
  out.z.assign(size, 0.0);
  const double c2 = c * c;
  for (size_t t = 0; t < out.tasks; ++t) {
    const SpectrumRef task = spectra[t];
    for (int i = 0; i < out.d; ++i) {
      const size_t at = (t / kTaskLanes * out.d + i) * kTaskLanes + t % kTaskLanes;
      out.s[at] = task.s(i) * c2;
      out.b[at] = task.b(i) * c;
      out.z[at] = task.z(i) * c;
    }
  }
}

}  // namespace

SpectraBlocks::SpectraBlocks(const Spectra& spectra, double c) : d(spectra.d()), tasks(spectra.size()) {
  to_blocks(spectra, c, *this);
}

SpectraBlocks::SpectraBlocks(const std::vector<TaskSpectrum>& spectra, double c)
    : d(spectra.empty() ? 0 : static_cast<int>(spectra[0].s.size())), tasks(spectra.size()) {
  to_blocks(spectra, c, *this);
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
    if (task + kWidth <= set.tasks) l = load<Vd>(&lambda[task]);
    else
      for (int j = 0; task + j < set.tasks; ++j) l[j] = lambda[task + j];
    acc += load<Vd>(&set.z[at]) * load<Vd>(&set.b[at]) / (load<Vd>(&set.s[at]) + l);
  });
}

// predict_gd's arithmetic, its multiply-adds (1 - eta s and the sum's) fused as there.
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

double gd_one_step_eta(const SpectraBlocks& set, const std::vector<double>& y, double lo, double hi) {
  const std::vector<double> a = lanes_sum(set, [&](Vd& acc, size_t at, size_t) {
    acc = madd(load<Vd>(&set.z[at]), load<Vd>(&set.b[at]), acc);
  });
  double ya = 0, aa = 0;
  for (size_t t = 0; t < a.size(); ++t) {
    ya += y[t] * a[t];
    aa += a[t] * a[t];
  }
  return aa > 0 ? std::clamp(ya / aa, lo, hi) : aa == 0 ? lo : std::nan("");
}

double newton_alpha(SpectrumRef t) {
  return 1 / t.s.array().square().matrix().norm();   // 1 / |S S^T|_F = 1 / sqrt(sum_i s_i^4)
}

double predict_newton(SpectrumRef t, int K) {
  double few[16];   // no allocation per task for the analyses' few steps
  std::vector<double> many(K < 16 ? 0 : K + 1);
  double* yhat = K < 16 ? few : many.data();
  predict_newton_steps(t, K, yhat);
  return yhat[K];
}

void predict_newton_steps(SpectrumRef t, int K, double* yhat) {
  std::fill(yhat, yhat + K + 1, 0.0);
  const double s_max = t.s.maxCoeff();
  if (!(s_max > 0)) return;
  const double alpha = newton_alpha(t);
  // Up to kGroup eigenvalues at a time, every step k over the group: each m_i's iterations are independent of
  // the others' (they overlap), and yhat[k] still adds the eigenvalues in increasing i.
  constexpr int kGroup = 16;
  double s[kGroup], zb[kGroup], m[kGroup];
  for (int i = 0; i < t.s.size();) {
    int g = 0;
    for (; i < t.s.size() && g < kGroup; ++i) {
      if (t.s(i) <= kRankTol * s_max) continue;   // the null space, exactly 0 in exact arithmetic (round-off grows it)
      s[g] = t.s(i);
      zb[g] = t.z(i) * t.b(i);
      m[g] = alpha * s[g];
      ++g;
    }
    for (int k = 0; k <= K; ++k)
      for (int j = 0; j < g; ++j) {
        yhat[k] = fused_madd(zb[j], m[j], yhat[k]);
        m[j] = fused_madd(m[j], 2.0, -(s[j] * m[j] * m[j]));   // as GCC had fused the one-eigenvalue loop before it
      }
  }
}

double noise_estimate(SpectrumRef t) {
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

double predict_bayes(SpectrumRef t, const std::vector<double>& sigma, const std::vector<double>& weight) {
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

// Log-weights below kNegligible of the largest (0) are taken as kNegligible: e^-600, about 1e-261, which beside the
// largest term every sum absorbs (the denominator is at least 1; the numerator would have to cancel to 1e-245 of
// the predictions to feel them).  Computed, the weights of e^-708 and less and their products with the
// predictions are subnormal numbers, each a microcode assist on x86: with a pool of 4,096 tasks, dMMSE took
// 101 us a task, half of it in those assists (perf); 57 us without them.
constexpr double kNegligible = -600.0;

// Whether any of v is NaN, a vector at a time: Eigen's hasNaN() stops at the first, so it runs an entry at a
// time (a third of dMMSE's time with a pool of 4,096, perf).
namespace {
bool any_nan(Eigen::Ref<const Eigen::VectorXd> v) {
  long nan = 0;   // counted: GCC vectorises the sum, not an or of bools
  for (Eigen::Index i = 0; i < v.size(); ++i) nan += v[i] != v[i];
  return nan > 0;
}
}  // namespace

// dMMSE's posterior mean from each pool task's residual sum of squares `rss` and prediction `pred` (M each): the
// log-weights log pi_k - n log sigma_k - rss_m h_k, h_k = 1 / (2 sigma_k^2), shifted by their largest, which is at
// the smallest rss for every k.
double dmmse_posterior(Eigen::Ref<const Eigen::VectorXd> rss, Eigen::Ref<const Eigen::VectorXd> pred, double n,
                       const std::vector<double>& sigma, const std::vector<double>& weight) {
  if (any_nan(rss) || any_nan(pred)) return std::numeric_limits<double>::quiet_NaN();   // a context not finite
  const size_t K = sigma.size();
  std::vector<double> c(K), h(K);
  const double rmin = rss.minCoeff();
  double top = -std::numeric_limits<double>::infinity();
  for (size_t k = 0; k < K; ++k) {
    c[k] = std::log(weight[k]) - n * std::log(sigma[k]);
    h[k] = 0.5 / (sigma[k] * sigma[k]);
    top = std::max(top, c[k] - rmin * h[k]);
  }
  double num = 0.0, den = 0.0;
  Eigen::ArrayXd p(rss.size());
  for (size_t k = 0; k < K; ++k) {
    p = ((c[k] - top) - rss.array() * h[k]).max(kNegligible).exp();
    num += (p * pred.array()).sum();
    den += p.sum();
  }
  return num / den;
}

double predict_dmmse(const Eigen::MatrixXd& X, const Eigen::VectorXd& y, const Eigen::VectorXd& xq,
                     const Eigen::MatrixXd& pool, const std::vector<double>& sigma, const std::vector<double>& weight) {
  const Eigen::VectorXd rss = ((pool.transpose() * X).rowwise() - y.transpose()).rowwise().squaredNorm();
  return dmmse_posterior(rss, pool.transpose() * xq, static_cast<double>(y.size()), sigma, weight);
}

DmmseSums::DmmseSums(const Eigen::MatrixXd& pool, std::vector<double> sigma, std::vector<double> weight)
    : pool_(pool), sigma_(std::move(sigma)), weight_(std::move(weight)) {
  const Eigen::Index d = pool.rows(), M = pool.cols(), P = d * (d + 1) / 2;
  phi_.resize(M, P + d);
  Eigen::Index f = 0;
  for (Eigen::Index i = 0; i < d; ++i)
    for (Eigen::Index j = i; j < d; ++j) phi_.col(f++) = (pool.row(i).array() * pool.row(j).array()).transpose();
  phi_.rightCols(d) = pool.transpose();
  a_.resize(P + d, kBlock);
  q_.resize(d, kBlock);
}

void DmmseSums::add(const Eigen::MatrixXd& XXt, const Eigen::VectorXd& Xy, double yy, int n, const Eigen::VectorXd& xq) {
  const Eigen::Index d = pool_.rows(), t = static_cast<Eigen::Index>(yy_.size());
  Eigen::Index f = 0;
  for (Eigen::Index i = 0; i < d; ++i)
    for (Eigen::Index j = i; j < d; ++j) a_(f++, t) = (i == j ? 1.0 : 2.0) * XXt(i, j);
  a_.col(t).tail(d) = -2.0 * Xy;
  q_.col(t) = xq;
  yy_.push_back(yy);
  n_.push_back(n);
  if (static_cast<int>(yy_.size()) == kBlock) flush();
}

void DmmseSums::flush() {
  const Eigen::Index b = static_cast<Eigen::Index>(yy_.size());
  if (b == 0) return;
  r_.noalias() = phi_ * a_.leftCols(b);
  p_.noalias() = pool_.transpose() * q_.leftCols(b);
  for (Eigen::Index t = 0; t < b; ++t) {
    r_.col(t) = (r_.col(t).array() + yy_[t]).max(0.0);
    out_.push_back(dmmse_posterior(r_.col(t), p_.col(t), n_[t], sigma_, weight_));
  }
  yy_.clear();
  n_.clear();
}

std::vector<double> DmmseSums::take() {
  flush();
  std::vector<double> out;
  out.swap(out_);
  return out;
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
