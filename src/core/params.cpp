#include "icl/core/params.hpp"

#include <cmath>

#include "icl/core/check.hpp"
#include "icl/core/rng.hpp"

namespace icl {

ParamLayout::ParamLayout(const Point& p)
    : param_(p.param), d_(p.d), D_(p.d + 1), layers_(p.layers), heads_(p.heads),
      blocks_(p.tie ? 1 : p.layers), tie_(p.tie) {
  auto add = [&](const char* name, int l, int h, int rows, int cols, int fan_in) {
    views_.push_back({name, l, h, size_, rows, cols, fan_in});
    size_ += rows * cols;
  };
  for (int l = 0; l < blocks_; ++l)
    for (int h = 0; h < heads_; ++h) switch (param_) {
        case Param::full: add("P", l, h, D_, D_, D_); add("Q", l, h, D_, D_, D_); break;
        case Param::sparse_a: add("A", l, h, d_, d_, d_); break;
        case Param::sparse_ab: add("A", l, h, d_, d_, d_); add("B", l, h, d_, d_, d_); break;
        case Param::diag: add("p", l, h, 1, 2, 1); add("q", l, h, 1, 2, 1); break;
        case Param::gdpp: add("p", l, h, 1, 2, 1); add("q", l, h, 1, 1, 1); break;
      }
}

template <class T>
void ParamLayout::expand(const double* theta, T* P, T* Q) const {
  const int D = D_, d = d_, DD = D * D, per_block = size_ / blocks_;
  for (int l = 0; l < layers_; ++l)
    for (int h = 0; h < heads_; ++h) {
      T* Pm = P + (static_cast<size_t>(l) * heads_ + h) * DD;
      T* Qm = Q + (static_cast<size_t>(l) * heads_ + h) * DD;
      for (int x = 0; x < DD; ++x) Pm[x] = Qm[x] = T(0);
      const double* th = theta + static_cast<size_t>(tie_ ? 0 : l) * per_block + static_cast<size_t>(h) * (per_block / heads_);
      switch (param_) {
        case Param::full:
          for (int x = 0; x < DD; ++x) { Pm[x] = static_cast<T>(th[x]); Qm[x] = static_cast<T>(th[DD + x]); }
          break;
        case Param::sparse_a:
        case Param::sparse_ab:
          for (int i = 0; i < d; ++i)
            for (int k = 0; k < d; ++k) {
              Qm[i * D + k] = static_cast<T>(th[i * d + k]);
              if (param_ == Param::sparse_ab) Pm[i * D + k] = static_cast<T>(th[d * d + i * d + k]);
            }
          Pm[DD - 1] = T(1);
          break;
        case Param::diag:
        case Param::gdpp:
          for (int i = 0; i < d; ++i) { Pm[i * D + i] = static_cast<T>(th[0]); Qm[i * D + i] = static_cast<T>(th[2]); }
          Pm[DD - 1] = static_cast<T>(th[1]);
          Qm[DD - 1] = param_ == Param::diag ? static_cast<T>(th[3]) : T(0);
          break;
      }
    }
}

void ParamLayout::collapse(const double* dP, const double* dQ, double* dtheta) const {
  const int D = D_, d = d_, DD = D * D, per_block = size_ / blocks_;
  for (int x = 0; x < size_; ++x) dtheta[x] = 0.0;
  for (int l = 0; l < layers_; ++l)
    for (int h = 0; h < heads_; ++h) {
      const double* Pm = dP + (static_cast<size_t>(l) * heads_ + h) * DD;
      const double* Qm = dQ + (static_cast<size_t>(l) * heads_ + h) * DD;
      double* th = dtheta + static_cast<size_t>(tie_ ? 0 : l) * per_block + static_cast<size_t>(h) * (per_block / heads_);
      switch (param_) {
        case Param::full:
          for (int x = 0; x < DD; ++x) { th[x] += Pm[x]; th[DD + x] += Qm[x]; }
          break;
        case Param::sparse_a:
        case Param::sparse_ab:
          for (int i = 0; i < d; ++i)
            for (int k = 0; k < d; ++k) {
              th[i * d + k] += Qm[i * D + k];
              if (param_ == Param::sparse_ab) th[d * d + i * d + k] += Pm[i * D + k];
            }
          break;
        case Param::diag:
        case Param::gdpp:
          for (int i = 0; i < d; ++i) { th[0] += Pm[i * D + i]; th[2] += Qm[i * D + i]; }
          th[1] += Pm[DD - 1];
          if (param_ == Param::diag) th[3] += Qm[DD - 1];
          break;
      }
    }
}

std::vector<double> param_init(const Point& p, const ParamLayout& layout) {
  std::vector<double> theta(layout.size());
  const uint64_t key = rng_key(p.seed, Stream::init);
  if (p.init == Init::normal) {
    rng_normals(key, 0, layout.size(), theta.data());
    for (double& x : theta) x *= p.init_scale;
    return theta;
  }
  // [VO23]: haiku VarianceScaling(scale, "fan_in", "truncated_normal"): std = sqrt(scale / fan_in) / 0.8796...,
  // truncated to two standard deviations (by rejection, on a stream of normals).
  const double scale = p.init_scale / p.layers;
  uint64_t i = 0;
  for (const ParamView& v : layout.views()) {
    const double sd = std::sqrt(scale / v.fan_in) / 0.87962566103423978;
    for (int x = 0; x < v.rows * v.cols; ++x) {
      double z;
      do z = rng_normal(key, i++); while (std::fabs(z) > 2.0);
      theta[v.offset + x] = sd * z;
    }
  }
  return theta;
}

template void ParamLayout::expand<float>(const double*, float*, float*) const;
template void ParamLayout::expand<double>(const double*, double*, double*) const;

}  // namespace icl
