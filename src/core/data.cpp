// Task sampling (science.md section 1).
//  Per task t the key k_t = rng_key(seed, stream, block, t) gives, with m = d + (n+1) d + n normals in
//  mp = ceil(m/2) Box-Muller pairs (uniform pairs (2p, 2p+1) of k_t):
//    normals 0..d-1          -> g_w,  w = w_half g_w             (w ~ N(0, I) or N(0, Sigma^-1))
//    normals d..d+(n+1)d-1   -> g_x,  x_i = Sigma_half g_x,i      (gaussian; sphere: g/|g|)
//    next n normals          -> eps,  y_i = <w, x_i> + sigma eps_i (context only; the query is noiseless)
//  and uniforms 2mp (sigma), 2mp+1.. (uniform inputs) of k_t.  Gamma radii use the keys
//  rng_key(k_t, Stream::init..) of their own, by rejection (Marsaglia-Tsang).
#include "icl/core/data.hpp"

#include <algorithm>
#include <cmath>

#include "icl/core/check.hpp"

namespace icl {
namespace {

// r = sqrt(-2 log u1), theta = 2 pi u2; u1 <- r cos(theta), u2 <- r sin(theta), elementwise.
// Every element goes through the same SIMD code path: Eigen's vectorised functions on a dynamic array
// would run a scalar prologue and tail whose extent depends on the buffer's address and length, and a
// task's normals would then depend on where it sits in the batch.  Fixed-size, aligned blocks (a whole
// number of packets) with a padded last block avoid that.
template <class T>
void box_muller_in_place(T* u1, T* u2, size_t count) {
  constexpr int kBlock = 16;
  using Block = Eigen::Array<T, kBlock, 1>;
  Block a, b;
  for (size_t i = 0; i < count; i += kBlock) {
    const size_t m = std::min<size_t>(kBlock, count - i);
    a.setConstant(T(0.5));
    b.setConstant(T(0.5));
    std::copy(u1 + i, u1 + i + m, a.data());
    std::copy(u2 + i, u2 + i + m, b.data());
    const Block r = (T(-2) * a.log()).sqrt();
    const Block theta = T(6.283185307179586476925) * b;
    a = r * theta.cos();
    b = r * theta.sin();
    std::copy(a.data(), a.data() + m, u1 + i);
    std::copy(b.data(), b.data() + m, u2 + i);
  }
}

// Haar-random rotation: QR of a gaussian matrix with the signs of R's diagonal folded into Q.
Eigen::MatrixXd random_rotation(int d, uint64_t key) {
  Eigen::MatrixXd G(d, d);
  std::vector<double> z(static_cast<size_t>(d) * d);
  rng_normals(key, 0, d * d, z.data());
  for (int i = 0; i < d; ++i)
    for (int j = 0; j < d; ++j) G(i, j) = z[static_cast<size_t>(i) * d + j];
  Eigen::HouseholderQR<Eigen::MatrixXd> qr(G);
  Eigen::MatrixXd Q = qr.householderQ();
  const Eigen::MatrixXd R = qr.matrixQR().triangularView<Eigen::Upper>();
  for (int j = 0; j < d; ++j)
    if (R(j, j) < 0) Q.col(j) *= -1.0;
  return Q;
}

// Gamma(k, scale) by Marsaglia-Tsang; k < 1 via Gamma(k+1) U^(1/k).
double gamma_draw(uint64_t key, double k, double scale) {
  const uint64_t kn = rng_key(key, Stream::init), ku = rng_key(key, Stream::train);
  uint64_t in = 0, iu = 0;
  double boost = 1.0;
  if (k < 1.0) {
    boost = std::pow(rng_uniform(ku, iu++), 1.0 / k);
    k += 1.0;
  }
  const double dd = k - 1.0 / 3.0, c = 1.0 / std::sqrt(9.0 * dd);
  for (;;) {
    const double z = rng_normal(kn, in++);
    double v = 1.0 + c * z;
    if (v <= 0.0) continue;
    v = v * v * v;
    const double u = rng_uniform(ku, iu++);
    if (std::log(u) < 0.5 * z * z + dd - dd * v + dd * std::log(v)) return scale * dd * v * boost;
  }
}

}  // namespace

TaskLaw make_task_law(const Point& p) {
  TaskLaw law;
  law.d = p.d;
  law.n = p.n;
  law.x_dist = p.x_dist;
  law.x_param = p.x_param;
  law.noise = p.noise;
  law.noise_sigma = p.noise_sigma;
  const int d = p.d;
  law.Sigma = Eigen::MatrixXd::Identity(d, d);
  if (p.x_dist == XDist::uniform) law.Sigma *= p.x_param * p.x_param / 3.0;
  if (p.x_dist == XDist::sphere) law.Sigma /= d;
  if (p.x_dist == XDist::gamma) law.Sigma *= 10.0 / d;   // E[G] = k * (10/k)
  if (p.cov != CovKind::identity) {
    const Eigen::VectorXd lambda = Eigen::Map<const Eigen::VectorXd>(p.cov_spectrum.data(), d);
    const Eigen::MatrixXd U = p.cov == CovKind::rotated
                                  ? random_rotation(d, rng_key(p.seed, Stream::rotation))
                                  : Eigen::MatrixXd::Identity(d, d);
    law.Sigma = U * lambda.asDiagonal() * U.transpose();
    law.Sigma_half = U * lambda.cwiseSqrt().asDiagonal();
    if (p.w_prior == WPrior::inverse_cov) law.w_half = U * lambda.cwiseSqrt().cwiseInverse().asDiagonal();
  }
  return law;
}

template <class T>
void TaskBatch<T>::resize(int B_, int d_, int n_) {
  B = B_;
  d = d_;
  n = n_;
  const int V = kLanes<T>;
  chunks = (B + V - 1) / V;
  Z.assign(static_cast<size_t>(chunks) * (d + 1) * (n + 1), lane_zero<T>());
  y.assign(chunks, lane_zero<T>());
  mask.assign(chunks, lane_zero<T>());
  for (int t = 0; t < B; ++t) mask[t / V][t % V] = T(1);
  sigma.assign(B, 0.0);
  w.assign(static_cast<size_t>(B) * d, 0.0);
  const int m = d + (n + 1) * d + n, mp = (m + 1) / 2;
  scratch_u1.resize(static_cast<size_t>(B) * mp);
  scratch_u2.resize(static_cast<size_t>(B) * mp);
  scratch_z.resize(static_cast<size_t>(2) * mp);
}

template <class T>
void sample_tasks(const TaskLaw& law, uint64_t seed, Stream stream, uint64_t block, TaskBatch<T>& batch) {
  ICL_CHECK(batch.d == law.d && batch.n == law.n);
  using ArrayT = Eigen::Array<T, Eigen::Dynamic, Eigen::Dynamic>;
  using Strided = Eigen::Map<ArrayT, 0, Eigen::OuterStride<>>;
  const int d = law.d, n = law.n, D = d + 1, N = n + 1, B = batch.B, V = kLanes<T>;
  const int m = d + N * d + n, mp = (m + 1) / 2;

  // Box-Muller for the whole batch at once, vectorised: u1 becomes r cos(theta), u2 becomes r sin(theta).
  T* u1 = batch.scratch_u1.data();
  T* u2 = batch.scratch_u2.data();
  for (int t = 0; t < B; ++t) {
    const uint64_t key = rng_key(seed, stream, block, t);
    for (int q = 0; q < mp; ++q) {
      u1[static_cast<size_t>(t) * mp + q] = static_cast<T>(rng_uniform(key, 2 * q));
      u2[static_cast<size_t>(t) * mp + q] = static_cast<T>(rng_uniform(key, 2 * q + 1));
    }
  }
  box_muller_in_place(u1, u2, static_cast<size_t>(B) * mp);

  using MatT = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic>;
  using VecT = Eigen::Matrix<T, Eigen::Dynamic, 1>;
  const MatT Sigma_half = law.Sigma_half.cast<T>();
  const MatT w_half = law.w_half.cast<T>();
  MatT X(d, N), g(d, N);
  VecT w(d);
  for (int t = 0; t < B; ++t) {
    const uint64_t key = rng_key(seed, stream, block, t);
    T* z = batch.scratch_z.data();   // this task's normals: m cosines, then sines
    std::copy(u1 + static_cast<size_t>(t) * mp, u1 + static_cast<size_t>(t + 1) * mp, z);
    std::copy(u2 + static_cast<size_t>(t) * mp, u2 + static_cast<size_t>(t + 1) * mp, z + mp);
    w = Eigen::Map<const VecT>(z, d);
    if (w_half.size()) w = w_half * w;
    g = Eigen::Map<const MatT>(z + d, d, N);   // copied: aligned operands keep Eigen's kernels position-independent
    switch (law.x_dist) {
      case XDist::gaussian:
        if (Sigma_half.size()) X.noalias() = Sigma_half * g; else X = g;
        break;
      case XDist::sphere:
        X = g.colwise().normalized();
        break;
      case XDist::uniform:
        for (int j = 0; j < N; ++j)
          for (int i = 0; i < d; ++i)
            X(i, j) = static_cast<T>(law.x_param * (2.0 * rng_uniform(key, 2 * mp + 1 + j * d + i) - 1.0));
        break;
      case XDist::gamma:
        X = g.colwise().normalized();
        for (int j = 0; j < N; ++j)
          X.col(j) *= static_cast<T>(std::sqrt(gamma_draw(rng_key(key, Stream::eval, j), law.x_param,
                                                          10.0 / law.x_param)));
        break;
    }
    double sigma = 0.0;
    const double us = rng_uniform(key, 2 * mp);
    if (law.noise == NoiseKind::fixed) sigma = law.noise_sigma[0];
    if (law.noise == NoiseKind::uniform) sigma = law.noise_sigma[0] * us;
    if (law.noise == NoiseKind::set)
      sigma = law.noise_sigma[std::min(law.noise_sigma.size() - 1,
                                       static_cast<size_t>(us * static_cast<double>(law.noise_sigma.size())))];
    const T* eps = z + d + N * d;

    const int c = t / V, v = t % V;
    Lane<T>* Zc = batch.Z.data() + static_cast<size_t>(c) * D * N;
    for (int j = 0; j < N; ++j) {
      for (int i = 0; i < d; ++i) Zc[i * N + j][v] = X(i, j);
      const T label = X.col(j).dot(w);
      if (j < n) Zc[d * N + j][v] = label + static_cast<T>(sigma) * eps[j];
      else batch.y[c][v] = label;
    }
    Zc[d * N + n][v] = T(0);
    batch.sigma[t] = sigma;
    for (int i = 0; i < d; ++i) batch.w[static_cast<size_t>(t) * d + i] = w(i);
  }
}

template <class T>
void batch_task(const TaskBatch<T>& batch, int t, Eigen::MatrixXd* X, Eigen::VectorXd* y) {
  const int d = batch.d, N = batch.n + 1, V = kLanes<T>;
  const Lane<T>* Zc = batch.chunk_Z(t / V);
  X->resize(d, N);
  y->resize(N);
  for (int j = 0; j < N; ++j) {
    for (int i = 0; i < d; ++i) (*X)(i, j) = Zc[i * N + j][t % V];
    (*y)(j) = j < batch.n ? static_cast<double>(Zc[d * N + j][t % V]) : static_cast<double>(batch.y[t / V][t % V]);
  }
}

template struct TaskBatch<float>;
template struct TaskBatch<double>;
template void sample_tasks<float>(const TaskLaw&, uint64_t, Stream, uint64_t, TaskBatch<float>&);
template void sample_tasks<double>(const TaskLaw&, uint64_t, Stream, uint64_t, TaskBatch<double>&);
template void batch_task<float>(const TaskBatch<float>&, int, Eigen::MatrixXd*, Eigen::VectorXd*);
template void batch_task<double>(const TaskBatch<double>&, int, Eigen::MatrixXd*, Eigen::VectorXd*);

}  // namespace icl
