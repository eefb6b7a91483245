// Update rules (PyTorch's, so that published settings transfer):
//   adam:  g += wd theta;  m = b1 m + (1-b1) g;  v = b2 v + (1-b2) g^2;
//          theta -= lr (m / (1-b1^t)) / (sqrt(v / (1-b2^t)) + eps)
//   adamw: as adam without the L2 term, and theta *= (1 - lr wd) first (decoupled decay)
//   sgd:   g += wd theta;  m = mu m + g (m = g at t = 1);  theta -= lr m
// Clipping (torch.nn.utils.clip_grad_norm_): g *= min(1, clip / (|g| + 1e-6)), over all of g (global)
// or per view (matrix, [A23]).
#include "icl/train/optim.hpp"

#include <cmath>

namespace icl {

double lr_at(const Point& p, int64_t s) {
  if (s < p.warmup) return p.lr * static_cast<double>(s + 1) / static_cast<double>(p.warmup);
  switch (p.schedule) {
    case Schedule::constant: return p.lr;
    case Schedule::step: return p.lr * std::pow(0.5, static_cast<double>((s - p.warmup) / p.decay_every));
    case Schedule::cosine: {
      const double frac = static_cast<double>(s - p.warmup) / static_cast<double>(p.steps - p.warmup);
      return 0.5 * p.lr * (1.0 + std::cos(3.14159265358979323846 * frac));
    }
    case Schedule::linear:   // Raventos et al.'s "triangle" after the warm-up (icl/optim.py)
      return p.lr * static_cast<double>(p.steps - s) / static_cast<double>(p.steps - p.warmup);
  }
  return p.lr;
}

double clip_grad(const Point& p, const std::vector<std::pair<int, int>>& blocks, std::vector<double>& g) {
  double total = 0.0;
  for (double x : g) total += x * x;
  total = std::sqrt(total);
  if (p.clip <= 0.0) return total;
  auto clip_range = [&](int from, int count) {
    double norm = 0.0;
    for (int x = from; x < from + count; ++x) norm += g[x] * g[x];
    const double coef = p.clip / (std::sqrt(norm) + 1e-6);
    if (coef < 1.0)
      for (int x = from; x < from + count; ++x) g[x] *= coef;
  };
  if (p.clip_mode == ClipMode::global) {
    clip_range(0, static_cast<int>(g.size()));
  } else {
    for (const auto& [offset, count] : blocks) clip_range(offset, count);
  }
  return total;
}

OptState opt_init(int size) {
  OptState s;
  s.m.assign(size, 0.0);
  s.v.assign(size, 0.0);
  return s;
}

void opt_step(const Point& p, double lr, std::vector<double>& theta, const std::vector<double>& g, OptState& s) {
  ++s.t;
  const size_t n = theta.size();
  if (p.optimizer == Optimizer::sgd) {
    for (size_t x = 0; x < n; ++x) {
      const double gx = g[x] + p.weight_decay * theta[x];
      s.m[x] = s.t == 1 ? gx : p.momentum * s.m[x] + gx;
      theta[x] -= lr * s.m[x];
    }
    return;
  }
  const bool decoupled = p.optimizer == Optimizer::adamw;
  const double bc1 = 1.0 - std::pow(p.beta1, static_cast<double>(s.t));
  const double bc2 = 1.0 - std::pow(p.beta2, static_cast<double>(s.t));
  for (size_t x = 0; x < n; ++x) {
    double gx = g[x];
    if (decoupled) theta[x] *= 1.0 - lr * p.weight_decay;
    else gx += p.weight_decay * theta[x];
    s.m[x] = p.beta1 * s.m[x] + (1.0 - p.beta1) * gx;
    s.v[x] = p.beta2 * s.v[x] + (1.0 - p.beta2) * gx * gx;
    theta[x] -= lr / bc1 * s.m[x] / (std::sqrt(s.v[x]) / std::sqrt(bc2) + p.eps);
  }
}

}  // namespace icl
