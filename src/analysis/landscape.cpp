#include "icl/analysis/landscape.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "icl/analysis/metrics.hpp"
#include "icl/base/cancel.hpp"

namespace icl {
namespace {

double norm(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x * x;
  return std::sqrt(s);
}

}  // namespace

std::vector<double> hessian_diagonal(Objective<double>& obj, const TaskBatch<double>& batch, const std::vector<double>& theta,
                                     const std::atomic<bool>* stop) {
  std::vector<double> H(theta.size()), gp, gm, t = theta;
  for (size_t i = 0; i < theta.size(); ++i) {
    check_stop(stop);   // between parameters: two gradients on the fixed set each
    const double h = 1e-5 * std::max(1.0, std::fabs(theta[i]));
    t[i] = theta[i] + h;
    obj.loss_grad(batch, t, &gp);
    t[i] = theta[i] - h;
    obj.loss_grad(batch, t, &gm);
    t[i] = theta[i];
    H[i] = (gp[i] - gm[i]) / (2 * h);
  }
  return H;
}

double directional_smoothness(Objective<double>& obj, const TaskBatch<double>& batch, const std::vector<double>& theta,
                              const std::vector<double>& u) {
  const double un = norm(u);
  if (un == 0.0) return std::nan("");
  const double h = 1e-5 * std::max(1.0, norm(theta)) / un;
  std::vector<double> tp(theta), tm(theta), gp, gm;
  for (size_t i = 0; i < theta.size(); ++i) {
    tp[i] += h * u[i];
    tm[i] -= h * u[i];
  }
  obj.loss_grad(batch, tp, &gp);
  obj.loss_grad(batch, tm, &gm);
  double uHu = 0;
  for (size_t i = 0; i < u.size(); ++i) uHu += u[i] * (gp[i] - gm[i]) / (2 * h);
  return uHu / (un * un);
}

double robust_condition_number(const std::vector<double>& H) {
  if (H.empty()) return std::nan("");
  std::vector<double> a(H.size());
  for (size_t i = 0; i < H.size(); ++i) a[i] = std::fabs(H[i]);
  const double max = *std::max_element(a.begin(), a.end());
  const size_t mid = (a.size() - 1) / 2;   // lower median: sorted index (m-1)/2, as torch.median
  std::nth_element(a.begin(), a.begin() + static_cast<std::ptrdiff_t>(mid), a.end());
  return a[mid] > 0 ? max / a[mid] : std::nan("");
}

Landscape::Landscape(const Point& p, const std::atomic<bool>* stop) : p_(p), stop_(stop), obj_(p) {
  if (!on()) return;
  const TaskLaw law = make_task_law(p);
  fixed_.resize(p.hessian_tasks, p.d, p.n);
  sample_tasks(law, kFixedSeed, draws::landscape_fixed.stream, draws::landscape_fixed.block, fixed_);
  full_.resize(std::min(kFullBatches * p.batch, kFullMax), p.d, p.n);
  sample_tasks(law, p.seed, draws::landscape_full.stream, draws::landscape_full.block, full_);
  batches_.resize(kNoiseBatches);
  for (int k = 0; k < kNoiseBatches; ++k) {
    batches_[k].resize(p.batch, p.d, p.n);
    const Draw batch = draws::landscape_batch(k);
    sample_tasks(law, p.seed, batch.stream, batch.block, batches_[k]);
  }
}

bool Landscape::wanted(int64_t step) const {
  if (p_.landscape_every > 0) return step < p_.steps && step % p_.landscape_every == 0;
  return std::find(p_.landscape.begin(), p_.landscape.end(), step) != p_.landscape.end();
}

void Landscape::measure(int64_t step, const std::vector<double>& theta, const std::vector<double>& update) {
  const auto t0 = std::chrono::steady_clock::now();
  check_stop(stop_);
  Named S(measured_.series);
  std::vector<double> g_full, g;
  obj_.loss_grad(fixed_, theta, &g);
  S[Metric::landscape_step].push_back(static_cast<double>(step));
  S[Metric::landscape_grad_norm].push_back(norm(g));
  obj_.loss_grad(full_, theta, &g_full);
  for (auto& b : batches_) {
    check_stop(stop_);
    obj_.loss_grad(b, theta, &g);
    for (size_t i = 0; i < g.size(); ++i) g[i] -= g_full[i];
    S[Metric::landscape_grad_noise].push_back(norm(g));   // kNoiseBatches values per step
  }
  const std::vector<double> H = hessian_diagonal(obj_, fixed_, theta, stop_);
  S[Metric::landscape_hessian_cond].push_back(robust_condition_number(H));
  std::vector<double>& diag = S[Metric::landscape_hessian_diag];
  diag.insert(diag.end(), H.begin(), H.end());   // #params per step
  S[Metric::landscape_smoothness].push_back(update.empty() ? std::nan("")
                                                           : directional_smoothness(obj_, fixed_, theta, update));
  const std::chrono::duration<double> spent = std::chrono::steady_clock::now() - t0;
  Named(measured_.metrics)[Metric::landscape_seconds] += spent.count();
}

}  // namespace icl
