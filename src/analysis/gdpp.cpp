// GD++ tuning (gdpp.hpp).  The loss is GD++ on each task's spectrum (gdpp_predict, kTaskLanes tasks at a time), with its exact
// gradient by reverse mode; the gdpp transformer computes the same function (gdpp_loss_transformer).
// Minimisation: BFGS on z = (eta, gamma) / eta_gd (both act as rates on sums over the context, so one
// unit serves both), backtracking line search with the Armijo condition f(z + t u) <= f + 1e-4 t g.u,
// the inverse-Hessian estimate rescaled by s.y / y.y after the first step and reset to I when it stops
// giving a descent direction.  Stops when |g_z| / f <= kGdppTolerance (g_z = eta_gd g), when no step
// of the line search decreases f (the loss is then flat to double precision), or after kMaxIterations.
#include "icl/analysis/gdpp.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

#include "icl/analysis/context_sums.hpp"
#include "icl/base/cancel.hpp"
#include "icl/train/objective.hpp"

namespace icl {
namespace {

constexpr int kMaxIterations = 300;

// K steps of GD++ are the K-layer gdpp transformer with one head and c = 1 (gdpp.hpp).
ModelShape gdpp_shape(const TaskBatch<double>& set, int K) {
  ModelShape s;
  s.d = set.d;
  s.n = set.n;
  s.layers = K;
  s.heads = 1;
  s.attention = Attention::linear;
  s.c = 1.0;
  s.act_clip = 0.0;
  return s;
}

// K-step GD++ predictions of block k's tasks from their spectra (gdpp.hpp) into yhat[lane] and, with
// dy != nullptr, d yhat / d(eta_l, gamma_l) into dy[2l * kTaskLanes + lane], dy[(2l + 1) * kTaskLanes + lane] by
// reverse mode over the stored steps.  Each lane is one task's arithmetic in one task's order, so a task's
// values do not depend on its block.  `state`: scratch of 3 (K + 1) d kTaskLanes values, (s, b, z) before each
// step and then their adjoints.
void gdpp_predict(const SpectraBlocks& set, size_t k, const double* eta, const double* gamma, int K, double* yhat,
                  double* dy, std::vector<double>& state) {
  const size_t D = static_cast<size_t>(set.d) * kTaskLanes;
  state.resize(3 * (K + 1) * D);
  std::copy_n(&set.s[k * D], D, &state[0]);
  std::copy_n(&set.b[k * D], D, &state[D]);
  std::copy_n(&set.z[k * D], D, &state[2 * D]);
  std::fill_n(yhat, kTaskLanes, 0.0);
  for (int l = 0; l < K; ++l) {
    const double* s = &state[3 * l * D];
    double r[kTaskLanes] = {};
    for (size_t i = 0; i < D; i += kTaskLanes)
#pragma GCC ivdep
      for (int j = 0; j < kTaskLanes; ++j) r[j] += s[D + i + j] * s[2 * D + i + j];
    for (int j = 0; j < kTaskLanes; ++j) yhat[j] += eta[l] * r[j];
    if (l + 1 == K) break;
    double* next = &state[3 * (l + 1) * D];   // the regions of `state` do not overlap: ivdep
#pragma GCC ivdep
    for (size_t i = 0; i < D; ++i) {
      const double u = 1.0 - gamma[l] * s[i], v = 1.0 - eta[l] * s[i];
      next[i] = s[i] * u * u;
      next[D + i] = u * v * s[D + i];
      next[2 * D + i] = u * s[2 * D + i];
    }
  }
  if (!dy) return;
  // Adjoints of (s, b, z) before step l+1, carried down to step l.
  double* as = &state[3 * K * D];
  double* ab = as + D;
  double* az = ab + D;
  std::fill(as, as + 3 * D, 0.0);
  for (int l = K - 1; l >= 0; --l) {
    const double* s = &state[3 * l * D];
    double de[kTaskLanes] = {}, dg[kTaskLanes] = {};
    for (size_t i0 = 0; i0 < D; i0 += kTaskLanes)
#pragma GCC ivdep
      for (int j = 0; j < kTaskLanes; ++j) {
        const size_t i = i0 + j;
        const double si = s[i], bi = s[D + i], zi = s[2 * D + i];
        const double u = 1.0 - gamma[l] * si, v = 1.0 - eta[l] * si;
        de[j] += bi * zi - ab[i] * u * si * bi;
        dg[j] -= si * (ab[i] * v * bi + az[i] * zi + 2.0 * as[i] * u * si);
        const double as_new = ab[i] * bi * (-gamma[l] * v - eta[l] * u) - az[i] * zi * gamma[l] + as[i] * (u * u - 2.0 * gamma[l] * si * u);
        ab[i] = eta[l] * zi + ab[i] * u * v;
        az[i] = eta[l] * bi + az[i] * u;
        as[i] = as_new;
      }
    std::copy_n(de, kTaskLanes, &dy[2 * l * kTaskLanes]);
    std::copy_n(dg, kTaskLanes, &dy[(2 * l + 1) * kTaskLanes]);
  }
}

// The loss as a function of x = (eta_b, gamma_b) per block b (K blocks, or 1 when tied).
class GdppLoss {
 public:
  GdppLoss(const GdppTasks& set, int K, bool tied, const std::atomic<bool>* stop = nullptr)
      : set_(set), blocks_(set.spectra), stop_(stop), K_(K), tied_(tied), eta_(K), gamma_(K), dy_(2 * K * kTaskLanes) {}
  int size() const { return tied_ ? 2 : 2 * K_; }
  // One pass over the set; the stop flag is polled before each (cancel.hpp).
  double operator()(const std::vector<double>& x, std::vector<double>* grad) {
    check_stop(stop_);
    for (int l = 0; l < K_; ++l) {
      eta_[l] = x[tied_ ? 0 : 2 * l];
      gamma_[l] = x[tied_ ? 1 : 2 * l + 1];
    }
    if (grad) grad->assign(size(), 0.0);
    double sum = 0.0, yhat[kTaskLanes];
    const size_t B = set_.y.size();
    for (size_t k = 0; k * kTaskLanes < B; ++k) {
      gdpp_predict(blocks_, k, eta_.data(), gamma_.data(), K_, yhat, grad ? dy_.data() : nullptr, state_);
      for (size_t j = 0, t = k * kTaskLanes; j < kTaskLanes && t < B; ++j, ++t) {   // task by task, in order
        const double e = yhat[j] - set_.y[t];
        sum += e * e;
        if (grad)
          for (int l = 0; l < K_; ++l) {
            (*grad)[tied_ ? 0 : 2 * l] += 2.0 * e * dy_[2 * l * kTaskLanes + j];
            (*grad)[tied_ ? 1 : 2 * l + 1] += 2.0 * e * dy_[(2 * l + 1) * kTaskLanes + j];
          }
      }
    }
    if (grad)
      for (double& g : *grad) g /= static_cast<double>(B);
    const double f = sum / static_cast<double>(B);
    return std::isfinite(f) ? f : std::numeric_limits<double>::infinity();
  }

 private:
  const GdppTasks& set_;
  const SpectraBlocks blocks_;
  const std::atomic<bool>* stop_;
  int K_;
  bool tied_;
  std::vector<double> eta_, gamma_, dy_, state_;
};

double dot(const std::vector<double>& a, const std::vector<double>& b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
  return s;
}

// BFGS's inverse-Hessian estimate, m x m row-major: the identity, scaled to the first observed curvature.
class InverseHessian {
 public:
  explicit InverseHessian(int m) : m_(m), H_(static_cast<size_t>(m) * m, 0.0), s_(m), y_(m), Hy_(m) { reset(); }
  void reset() {
    std::fill(H_.begin(), H_.end(), 0.0);
    for (int i = 0; i < m_; ++i) H_[i * m_ + i] = 1.0;
  }
  // u = -H g.
  void descent(const std::vector<double>& g, std::vector<double>* u) const {
    for (int i = 0; i < m_; ++i) {
      (*u)[i] = 0;
      for (int k = 0; k < m_; ++k) (*u)[i] -= H_[i * m_ + k] * g[k];
    }
  }
  // The update with s = zn - z, y = gn - g, skipped when the curvature s.y is not positive.
  void update(const std::vector<double>& zn, const std::vector<double>& z, const std::vector<double>& gn,
              const std::vector<double>& g) {
    std::vector<double>& s = s_;
    std::vector<double>& y = y_;
    for (int i = 0; i < m_; ++i) {
      s[i] = zn[i] - z[i];
      y[i] = gn[i] - g[i];
    }
    const double sy = dot(s, y);
    if (!(sy > 1e-14 * std::sqrt(dot(s, s) * dot(y, y)))) return;
    if (!scaled_) {   // first curvature pair: scale the identity to the observed curvature
      for (int i = 0; i < m_; ++i) H_[i * m_ + i] = sy / dot(y, y);
      scaled_ = true;
    }
    std::fill(Hy_.begin(), Hy_.end(), 0.0);
    for (int i = 0; i < m_; ++i)
      for (int k = 0; k < m_; ++k) Hy_[i] += H_[i * m_ + k] * y[k];
    const double yHy = dot(y, Hy_), rho = 1.0 / sy;
    for (int i = 0; i < m_; ++i)   // H += (1 + rho yHy) rho s s^T - rho (Hy s^T + s Hy^T)
      for (int k = 0; k < m_; ++k)
        H_[i * m_ + k] += (1.0 + rho * yHy) * rho * s[i] * s[k] - rho * (Hy_[i] * s[k] + s[i] * Hy_[k]);
  }

 private:
  int m_;
  std::vector<double> H_, s_, y_, Hy_;   // the estimate; the update's scratch, allocated once
  bool scaled_ = false;
};

// Armijo backtracking along u from z (slope = g.u < 0), t = 1, 1/2, ... (80 halvings): true with the
// first accepted point zn and its loss fn.
template <class F>
bool backtrack(const F& f_of, const std::vector<double>& z, const std::vector<double>& u, double f, double slope,
               std::vector<double>* zn, double* fn) {
  double t = 1.0;
  for (int k = 0; k < 80; ++k, t *= 0.5) {
    for (size_t i = 0; i < z.size(); ++i) (*zn)[i] = z[i] + t * u[i];
    *fn = f_of(*zn, nullptr);
    if (*fn <= f + 1e-4 * t * slope) return true;
  }
  return false;
}

// BFGS from x0 (original units); `frozen` coordinates keep their value (zero gradient by construction).
GdppTuned bfgs(GdppLoss& loss, std::vector<double> x, double unit, const std::vector<bool>& frozen) {
  const int m = loss.size();
  auto f_of = [&](const std::vector<double>& z, std::vector<double>* gz) {
    std::vector<double> xx(m);
    for (int i = 0; i < m; ++i) xx[i] = z[i] * unit;
    const double f = loss(xx, gz);
    if (gz)
      for (int i = 0; i < m; ++i) (*gz)[i] = frozen[i] ? 0.0 : (*gz)[i] * unit;
    return f;
  };
  std::vector<double> z(m), g, gn, zn(m), u(m);
  for (int i = 0; i < m; ++i) z[i] = x[i] / unit;
  double f = f_of(z, &g);
  InverseHessian H(m);
  GdppTuned r;
  bool steepest = true;   // H is the identity: u is the gradient's descent
  for (r.iterations = 0; r.iterations < kMaxIterations; ++r.iterations) {
    if (std::sqrt(dot(g, g)) <= kGdppTolerance * f) break;
    H.descent(g, &u);
    double slope = dot(g, u);
    if (!(slope < 0)) {   // not a descent direction: restart from steepest descent
      H.reset();
      for (int i = 0; i < m; ++i) u[i] = -g[i];
      slope = -dot(g, g);
      steepest = true;
    }
    double fn = 0.0;
    if (!backtrack(f_of, z, u, f, slope, &zn, &fn) || !(fn < f)) {
      if (steepest) break;   // no descent left at double precision, along the gradient either
      H.reset();             // the estimate's direction found none: once more from steepest descent
      steepest = true;
      continue;
    }
    steepest = false;
    f_of(zn, &gn);
    H.update(zn, z, gn, g);
    z = zn;
    g = gn;
    f = fn;
  }
  r.loss = f;
  r.grad_norm = std::sqrt(dot(g, g)) / f;
  r.converged = r.grad_norm <= kGdppTolerance;
  r.eta.clear();
  r.gamma.clear();
  for (int b = 0; b < m / 2; ++b) {
    r.eta.push_back(z[2 * b] * unit);
    r.gamma.push_back(z[2 * b + 1] * unit);
  }
  return r;
}

}  // namespace

GdppTasks gdpp_tasks(const TaskBatch<double>& set) {
  GdppTasks out;
  TaskSpectra spectra;
  spectra.reserve(set.B);
  out.y.reserve(set.B);
  ContextBlock block;
  for (int first = 0; first < set.B; first += kTaskLanes) {
    context_block(set, first, &block);
    spectra.add_block(block);
    out.y.insert(out.y.end(), block.y_query, block.y_query + block.count);
  }
  out.spectra = spectra.take();
  return out;
}

double gdpp_loss(const GdppTasks& set, const std::vector<double>& eta, const std::vector<double>& gamma,
                 std::vector<double>* grad) {
  const int K = static_cast<int>(eta.size());
  GdppLoss loss(set, K, false);
  std::vector<double> x(2 * K);
  for (int l = 0; l < K; ++l) {
    x[2 * l] = eta[l];
    x[2 * l + 1] = gamma[l];
  }
  return loss(x, grad);
}

// theta_l = (p_x, p_y, q_x) = (-gamma_l, -eta_l, 1): w_xx = p_x q_x = -gamma_l, w_yx = p_y q_x = -eta_l, so
// d loss / d eta_l = -d loss / d p_y,  d loss / d gamma_l = -d loss / d p_x.
double gdpp_loss_transformer(const TaskBatch<double>& set, const std::vector<double>& eta,
                             const std::vector<double>& gamma, std::vector<double>* grad) {
  const int K = static_cast<int>(eta.size());
  Objective<double> obj(gdpp_shape(set, K), Param::gdpp, false);
  std::vector<double> theta(3 * K), g;
  for (int l = 0; l < K; ++l) {
    theta[3 * l + 0] = -gamma[l];
    theta[3 * l + 1] = -eta[l];
    theta[3 * l + 2] = 1.0;
  }
  const double f = obj.loss_grad(set, theta, grad ? &g : nullptr);
  if (grad) {
    grad->resize(2 * K);
    for (int l = 0; l < K; ++l) {
      (*grad)[2 * l + 0] = -g[3 * l + 1];
      (*grad)[2 * l + 1] = -g[3 * l + 0];
    }
  }
  return f;
}

GdppTuned tune_gdpp_tied(const GdppTasks& tune, int K, double eta_gd, const std::atomic<bool>* stop) {
  const double unit = std::max(eta_gd, 1e-12);
  GdppLoss loss(tune, K, true, stop);
  std::vector<double> best = {eta_gd, 0.0};
  double best_f = loss(best, nullptr);
  if (K > 1)   // a coarse grid guards against starting in the wrong basin
    for (int i = 0; i < 9; ++i)
      for (int j = 0; j < 9; ++j) {
        const std::vector<double> x = {unit * (0.25 + 0.25 * i), unit * (-0.5 + 0.25 * j)};
        const double f = loss(x, nullptr);
        if (f < best_f) {
          best_f = f;
          best = x;
        }
      }
  GdppTuned r = bfgs(loss, best, unit, {false, K == 1});
  r.eta.assign(K, r.eta[0]);
  r.gamma.assign(K, r.gamma[0]);
  return r;
}

GdppTuned tune_gdpp_per_step(const GdppTasks& tune, const GdppTuned& tied, const GdppTuned* shorter, double eta_gd,
                             const GdppSet& validation, const std::atomic<bool>* stop) {
  const int K = static_cast<int>(tied.eta.size());
  const double unit = std::max(eta_gd, 1e-12);
  GdppLoss loss(tune, K, false, stop);
  std::vector<bool> frozen(2 * K, false);
  frozen[2 * K - 1] = true;   // the last step's gamma does not act
  std::vector<std::vector<double>> starts;
  std::vector<double> x(2 * K);
  for (int l = 0; l < K; ++l) {   // the tied optimum
    x[2 * l] = tied.eta[l];
    x[2 * l + 1] = l + 1 < K ? tied.gamma[l] : 0.0;
  }
  starts.push_back(x);
  if (shorter) {   // continuation: the (K-1)-step optimum, then one more step at the tied rate
    for (int l = 0; l + 1 < K; ++l) {
      x[2 * l] = shorter->eta[l];
      x[2 * l + 1] = shorter->gamma[l];
    }
    x[2 * K - 2] = tied.eta[0];
    x[2 * K - 1] = 0.0;
    starts.push_back(x);
  }
  std::vector<GdppTuned> found;
  for (const auto& x0 : starts) found.push_back(bfgs(loss, x0, unit, frozen));
  GdppTuned t = tied;   // the tied optimum, its last gamma (which does not act) 0
  t.gamma[K - 1] = 0.0;
  const bool only_tied = std::all_of(found.begin(), found.end(), [&](const GdppTuned& r) {
    return r.eta == t.eta && r.gamma == t.gamma;
  });
  // The first lowest score among `found` (the first point where no score is finite): by the tuning loss, or by
  // the validation loss and then the tied optimum where it is lower. Where every point found is the tied
  // optimum there is nothing to choose, and the validation set is not asked for.
  const auto first_lowest = [&](auto score) {
    std::pair<GdppTuned, double> best{found[0], score(found[0])};
    for (size_t i = 1; i < found.size(); ++i)
      if (const double s = score(found[i]); s < best.second) best = {found[i], s};
    return best;
  };
  if (!validation) return first_lowest([](const GdppTuned& r) { return r.loss; }).first;
  if (only_tied) return found[0];
  const GdppTasks& v = validation();
  auto [best, lowest] = first_lowest([&](const GdppTuned& r) { return gdpp_loss(v, r.eta, r.gamma); });
  return gdpp_loss(v, t.eta, t.gamma) < lowest ? t : std::move(best);
}

}  // namespace icl
