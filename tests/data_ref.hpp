#pragma once
// Scalar reference of sample_tasks: the reproducibility contract of data.hpp transcribed step by step,
// one task and one token at a time, with no lanes.  Never optimise it: test_data.cpp checks that the
// vectorised sampler agrees with it bitwise.
#include "icl/base/eigen.hpp"
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "icl/base/lane.hpp"
#include "icl/base/rng.hpp"
#include "icl/data/data.hpp"

namespace icl::test {

// One task as the contract defines it.
template <class T>
struct RefTask {
  std::vector<T> Z;         // (d+1) x (n+1), row-major: rows 0..d-1 the inputs x_j, row d the labels, Z(d, n) = 0
  T y_query = T(0);         // the query's noiseless label
  double sigma = 0.0;       // the task's noise std
  std::vector<double> w;    // d
};

// log, sqrt, cos and sin as the contract has them: Eigen's array functions at width kLanes<T> (its
// vectorised kernels, which may differ from libm's in the last bits: EIGEN_FAST_MATH's sqrt is a
// refined reciprocal square root).  Element-wise, so one value broadcast is enough.
template <class T>
using RefLanes = Eigen::Array<T, kLanes<T>, 1>;
template <class T>
T eigen_log(T x) { return RefLanes<T>(RefLanes<T>::Constant(x).log())[0]; }
template <class T>
T eigen_sqrt(T x) { return RefLanes<T>(RefLanes<T>::Constant(x).sqrt())[0]; }
template <class T>
T eigen_cos(T x) { return RefLanes<T>(RefLanes<T>::Constant(x).cos())[0]; }
template <class T>
T eigen_sin(T x) { return RefLanes<T>(RefLanes<T>::Constant(x).sin())[0]; }

// Contract step 1: the 2 mp normals of key k (cosines of pairs 0..mp-1, then their sines).  Sampler v2
// (float): the kernel of data/normals.hpp on scalars (test_data holds the kernel itself to libm).
template <class T>
std::vector<T> ref_task_normals(uint64_t k, int mp, Sampler sampler) {
  std::vector<T> z(2 * mp);
  for (int q = 0; q < mp; ++q) {
    T u1, u2;
    if constexpr (sizeof(T) == 4) {
      const uint64_t b = rng_bits(k, q);
      if (sampler == Sampler::v2) {
        const auto b1 = static_cast<int32_t>(b >> 40), b2 = static_cast<int32_t>((b >> 8) & 0xffffffu);
        normals_v2::box_muller<float, int32_t>(b1, b2, &z[q], &z[mp + q]);
        continue;
      }
      u1 = (static_cast<float>(b >> 40) + 0.5f) * 0x1p-24f;
      u2 = (static_cast<float>((b >> 8) & 0xffffffu) + 0.5f) * 0x1p-24f;
    } else {
      u1 = rng_uniform(k, 2 * static_cast<uint64_t>(q));
      u2 = rng_uniform(k, 2 * static_cast<uint64_t>(q) + 1);
    }
    const T r = eigen_sqrt(T(-2) * eigen_log(u1));
    const T theta = T(6.283185307179586476925) * u2;
    z[q] = r * eigen_cos(theta);
    z[mp + q] = r * eigen_sin(theta);
  }
  return z;
}

// Contract step 3, gamma: G ~ Gamma(shape a, scale s) by Marsaglia-Tsang from key kj, in double with libm.
inline double ref_gamma(uint64_t kj, double a, double s) {
  const uint64_t kn = rng_key(kj, kGammaNormals), ku = rng_key(kj, kGammaUniforms);
  uint64_t next_normal = 0, next_uniform = 0;
  double boost = 1.0;
  if (a < 1.0) {
    boost = std::pow(rng_uniform(ku, next_uniform++), 1.0 / a);
    a += 1.0;
  }
  const double dd = a - 1.0 / 3.0, c = 1.0 / std::sqrt(9.0 * dd);
  for (;;) {
    const double z = rng_normal(kn, next_normal++);
    double v = 1.0 + c * z;
    if (v <= 0.0) continue;
    v = v * v * v;
    const double u = rng_uniform(ku, next_uniform++);
    if (std::log(u) < 0.5 * z * z + dd - dd * v + dd * std::log(v)) return s * dd * v * boost;
  }
}

template <class T>
RefTask<T> ref_task(const TaskLaw& law, uint64_t k) {
  const int d = law.d, n = law.n, N = n + 1;
  const int m = d + N * d + n, mp = (m + 1) / 2;
  const std::vector<T> z = ref_task_normals<T>(k, mp, law.sampler);
  RefTask<T> task;
  task.Z.assign(static_cast<size_t>(d + 1) * N, T(0));
  auto x = [&](int j, int i) -> T& { return task.Z[static_cast<size_t>(i) * N + j]; };

  // step 2: weights from normals 0..d-1
  std::vector<T> w(d);
  for (int i = 0; i < d; ++i) {
    if (law.w_half.size() == 0) {
      w[i] = z[i];
    } else {
      T acc = T(0);
      for (int kk = 0; kk < d; ++kk) acc = fused_madd(static_cast<T>(law.w_half(i, kk)), z[kk], acc);
      w[i] = acc;
    }
  }
  if (law.pool.size()) {
    const double u = rng_uniform(rng_key(k, kPoolIndex), 0);
    const int64_t M = law.pool.cols(), member = std::min<int64_t>(M - 1, static_cast<int64_t>(u * static_cast<double>(M)));
    for (int i = 0; i < d; ++i) w[i] = static_cast<T>(law.pool(i, member));
  }
  if (law.w_scale != 1.0)
    for (int i = 0; i < d; ++i) w[i] *= static_cast<T>(law.w_scale);

  // step 3, other: exponential, normal or Laplace draws over the Frobenius norm of the context's
  std::vector<double> other(static_cast<size_t>(N) * d);
  double other_norm = 0.0;
  if (law.other_inputs) {
    const int f = std::min(2, static_cast<int>(3.0 * rng_uniform(rng_key(k, kOtherLaw), 0)));
    for (int j = 0; j < N; ++j)
      for (int i = 0; i < d; ++i) {
        const double u = rng_uniform(k, 2 * mp + 1 + j * d + i);
        double s = static_cast<double>(z[d + j * d + i]);
        if (f == 0) s = -std::log(u);
        if (f == 2) s = u < 0.5 ? std::log(2.0 * u) : -std::log(2.0 - 2.0 * u);
        other[static_cast<size_t>(j) * d + i] = s;
        if (j < n) other_norm = fused_madd(s, s, other_norm);
      }
    other_norm = std::sqrt(other_norm);
  }

  // step 3: token j, coordinate i from normal d + j d + i
  for (int j = 0; j < N; ++j) {
    const T* g = z.data() + d + j * d;
    if (law.other_inputs) {
      for (int i = 0; i < d; ++i) x(j, i) = static_cast<T>(other[static_cast<size_t>(j) * d + i] / other_norm);
    } else switch (law.x_dist) {
      case XDist::gaussian:
        if (law.task_spectrum.size()) {
          const Eigen::MatrixXd A = haar_rotation(d, rng_key(k, kTaskRotation)) * law.task_spectrum.cwiseSqrt().asDiagonal();
          for (int i = 0; i < d; ++i) {
            T acc = T(0);
            for (int kk = 0; kk < d; ++kk) acc = fused_madd(static_cast<T>(A(i, kk)), g[kk], acc);
            x(j, i) = acc;
          }
          break;
        }
        for (int i = 0; i < d; ++i) {
          if (law.Sigma_half.size() == 0) {
            x(j, i) = g[i];
          } else {
            T acc = T(0);
            for (int kk = 0; kk < d; ++kk) acc = fused_madd(static_cast<T>(law.Sigma_half(i, kk)), g[kk], acc);
            x(j, i) = acc;
          }
        }
        break;
      case XDist::uniform:
        for (int i = 0; i < d; ++i)
          x(j, i) = static_cast<T>(law.x_param * (2.0 * rng_uniform(k, 2 * mp + 1 + j * d + i) - 1.0));
        break;
      case XDist::sphere:
      case XDist::gamma: {
        T norm2 = T(0);
        for (int i = 0; i < d; ++i) norm2 = fused_madd(g[i], g[i], norm2);
        T radius = T(1) / std::sqrt(norm2);
        if (law.x_dist == XDist::gamma)
          radius *= static_cast<T>(std::sqrt(ref_gamma(rng_key(k, kGammaRadius, j), law.x_param,
                                                       std::sqrt(10.0 / law.x_param))));
        for (int i = 0; i < d; ++i) x(j, i) = g[i] * radius;
        break;
      }
    }
    if (law.x_scale != 1.0)
      for (int i = 0; i < d; ++i) x(j, i) *= static_cast<T>(law.x_scale);
  }

  // step 4: the noise std from uniform 2 mp
  const double us = rng_uniform(k, 2 * mp);
  const size_t levels = law.noise_sigma.size();
  if (law.noise == NoiseKind::fixed) task.sigma = law.noise_sigma[0];
  if (law.noise == NoiseKind::uniform) task.sigma = law.noise_sigma[0] * us;
  if (law.noise == NoiseKind::set)
    task.sigma = law.noise_sigma[std::min(levels - 1, static_cast<size_t>(us * static_cast<double>(levels)))];

  // step 5: labels; context noise from normals d + (n+1) d + j; the sine task from uniform 2 mp + 1 + N d
  const T* eps = z.data() + d + N * d;
  const double u_sine = rng_uniform(k, 2 * mp + 1 + N * d);
  const double amplitude = fused_madd(0.4, u_sine, 0.1);
  if (law.task == Task::sine) w[0] = static_cast<T>(amplitude);
  for (int j = 0; j < N; ++j) {
    T label = T(0);
    if (law.task == Task::sine)
      label = static_cast<T>(amplitude *
                             std::sin(fused_madd(3.14159265358979323846, u_sine, static_cast<double>(x(j, 0)))));
    else
      for (int i = 0; i < d; ++i) label = fused_madd(w[i], x(j, i), label);
    if (j < n) x(j, d) = fused_madd(static_cast<T>(task.sigma), eps[j], label);
    else task.y_query = label;
  }
  task.w.assign(w.begin(), w.end());
  return task;
}

// Tasks 0..B-1 of a draw: task t from rng_key(seed, stream, block, t), or from the key of the context
// that key picks when the law has a set of contexts.
template <class T>
std::vector<RefTask<T>> sample_tasks_ref(const TaskLaw& law, uint64_t seed, Stream stream, uint64_t block, int B) {
  std::vector<RefTask<T>> tasks;
  for (int t = 0; t < B; ++t) {
    uint64_t k = rng_key(seed, stream, block, static_cast<uint64_t>(t));
    if (law.contexts > 0) {
      const double u = rng_uniform(rng_key(k, kContextIndex), 0);
      const int64_t P = law.contexts, c = std::min<int64_t>(P - 1, static_cast<int64_t>(u * static_cast<double>(P)));
      k = rng_key(seed, Stream::contexts, 0, static_cast<uint64_t>(c));
    }
    tasks.push_back(ref_task<T>(law, k));
  }
  return tasks;
}

}  // namespace icl::test
