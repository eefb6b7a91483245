// Task sampling (docs/science.md section 1).
//  Per task t the key k_t = rng_key(seed, stream, block, t) gives m = d + (n+1) d + n normals from
//  mp = ceil(m/2) Box-Muller pairs (pair q: cosine = normal q, sine = normal mp + q; see box_muller_lanes):
//    normals 0..d-1          -> g_w,  w = w_half g_w             (w ~ N(0, I) or N(0, Sigma^-1))
//    normals d..d+(n+1)d-1   -> g_x,  x_i = Sigma_half g_x,i      (gaussian; sphere: g/|g|)
//    next n normals          -> eps,  y_i = <w, x_i> + sigma eps_i (context only; the query is noiseless)
//  and uniforms 2mp (sigma), 2mp+1.. (uniform inputs) of k_t.  Gamma radii use the keys
//  rng_key(k_t, kGammaNormals..) of their own (rng.hpp), by rejection (Marsaglia-Tsang).  A pool replaces w by
//  pool column floor(M u), u from rng_key(k_t, kPoolIndex); a set of P contexts replaces k_t by the key of
//  context floor(P u), u from rng_key(k_t, kContextIndex) (data.hpp has the exact contract).
#include "icl/data/data.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "icl/base/check.hpp"
#include "icl/base/simd.hpp"

namespace icl {

Eigen::MatrixXd haar_rotation(int d, uint64_t key) {
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

namespace {

// Gamma(k, scale) by Marsaglia-Tsang; k < 1 via Gamma(k+1) U^(1/k).
double gamma_draw(uint64_t key, double k, double scale) {
  const uint64_t kn = rng_key(key, kGammaNormals), ku = rng_key(key, kGammaUniforms);
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

// Scale of [A24]'s radial law G ~ Gamma(k, sqrt(10/k)) (linear_transformer.py, generate_data: numpy's
// gamma(shape = k, scale = (10/k)^0.5)), so E[G] = k sqrt(10/k) = sqrt(10 k): 1 at the paper's k = 0.1.
double gamma_scale(double k) { return std::sqrt(10.0 / k); }

// Index floor(count u) of the uniform u = rng_uniform(key, 0), kept below count.
int64_t uniform_index(uint64_t key, int64_t count) {
  return std::min(count - 1, static_cast<int64_t>(rng_uniform(key, 0) * static_cast<double>(count)));
}

// [VO23]'s other input laws: which one a task draws from (0 exponential, 1 normal, 2 Laplace), and one draw
// of it from the task's normal g (as T) or its uniform u = rng_uniform(key, i) (not drawn for the normal law).
int other_law(uint64_t key) { return static_cast<int>(uniform_index(rng_key(key, kOtherLaw), 3)); }
// A task's m draws s_j of law `law`: 0 exponential -log u_j, 1 normal (g_j, lane v of the chunk's normals), 2 Laplace
// (log 2u_j below 1/2, else -log(2 - 2u_j)), u_j = rng_uniform(key, first + j).  The uniforms first, in a loop
// of their own that the compiler vectorises, then the logs.
template <class T>
void other_draws(int law, const Lane<T>* g, int v, uint64_t key, uint64_t first, int m, double* s) {
  if (law == 1) {
    for (int j = 0; j < m; ++j) s[j] = g[j][v];
    return;
  }
  for (int j = 0; j < m; ++j) s[j] = rng_uniform(key, first + j);
  if (law == 0)
    for (int j = 0; j < m; ++j) s[j] = -std::log(s[j]);
  else
    for (int j = 0; j < m; ++j) s[j] = s[j] < 0.5 ? std::log(2.0 * s[j]) : -std::log(2.0 - 2.0 * s[j]);
}

}  // namespace

double typical_input_scale(XDist x_dist, double x_param, int d) {
  switch (x_dist) {
    case XDist::gaussian: return 1.0;
    case XDist::uniform: return x_param / std::sqrt(3.0);
    case XDist::sphere: return 1.0 / std::sqrt(static_cast<double>(d));
    case XDist::gamma: {
      const double k = x_param;
      const double median = k >= 1.0 ? gamma_scale(k) * (k - 1.0 / 3.0) : gamma_scale(k) * (k + 2.0 / 3.0) * std::exp2(-1.0 / k);
      return std::sqrt(median / d);
    }
  }
  return 1.0;
}

TaskLaw make_task_law(const Point& p) {
  TaskLaw law;
  law.d = p.d;
  law.n = p.n;
  law.task = p.task;
  law.x_dist = p.x_dist;
  law.x_param = p.x_param;
  law.noise = p.noise;
  law.noise_sigma = p.noise_sigma;
  law.sampler = p.sampler;
  const int d = p.d;
  law.Sigma = Eigen::MatrixXd::Identity(d, d);
  if (p.x_dist == XDist::uniform) law.Sigma *= p.x_param * p.x_param / 3.0;
  if (p.x_dist == XDist::sphere) law.Sigma /= d;
  if (p.x_dist == XDist::gamma) law.Sigma *= p.x_param * gamma_scale(p.x_param) / d;   // E[G] = k sqrt(10/k)
  if (p.cov == CovKind::rotated_per_task) {
    law.task_spectrum = Eigen::Map<const Eigen::VectorXd>(p.cov_spectrum.data(), d);
    law.Sigma *= law.task_spectrum.mean();
  } else if (p.cov != CovKind::identity) {
    const Eigen::VectorXd lambda = Eigen::Map<const Eigen::VectorXd>(p.cov_spectrum.data(), d);
    const Eigen::MatrixXd U = p.cov == CovKind::rotated
                                  ? haar_rotation(d, rng_key(p.seed, Stream::rotation))
                                  : Eigen::MatrixXd::Identity(d, d);
    law.Sigma = U * lambda.asDiagonal() * U.transpose();
    law.Sigma_half = U * lambda.cwiseSqrt().asDiagonal();
    if (p.w_prior == WPrior::inverse_cov) law.w_half = U * lambda.cwiseSqrt().cwiseInverse().asDiagonal();
  }
  return law;
}

TaskLaw pool_law(const Point& p) {
  TaskLaw law = make_task_law(p);
  if (p.task_pool == 0) return law;
  const int d = p.d;
  law.pool.resize(d, p.task_pool);
  Eigen::VectorXd g(d);
  for (int64_t m = 0; m < p.task_pool; ++m) {
    rng_normals(rng_key(p.seed, Stream::pool, static_cast<uint64_t>(m)), 0, d, g.data());
    law.pool.col(m) = law.w_half.size() ? Eigen::VectorXd(law.w_half * g) : g;
  }
  return law;
}

TaskLaw training_law(const Point& p) {
  TaskLaw law = pool_law(p);
  law.contexts = p.train_contexts;
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
  scratch.assign(static_cast<size_t>(2) * mp + d + 1, lane_zero<T>());
}

// Box-Muller pair q of the V tasks of a chunk, as lanes: u1, u2 from one hash per task (two 24-bit
// halves for float, 53-bit uniforms of consecutive counters for double), then
//   r = sqrt(-2 log u1), theta = 2 pi u2,  zc = r cos(theta),  zs = r sin(theta).
// Every lane goes through the same fixed-size vector code: a task's normals do not depend on its lane.
template <class T>
void box_muller_lanes(const uint64_t* keys, int q, Lane<T>* zc, Lane<T>* zs) {
  constexpr int V = kLanes<T>;
  using Arr = Eigen::Array<T, V, 1>;
  alignas(64) Arr u1, u2;
  for (int v = 0; v < V; ++v) {
    if constexpr (sizeof(T) == 4) {
      const uint64_t b = rng_bits(keys[v], static_cast<uint64_t>(q));
      u1[v] = (static_cast<float>(b >> 40) + 0.5f) * 0x1p-24f;
      u2[v] = (static_cast<float>((b >> 8) & 0xffffffu) + 0.5f) * 0x1p-24f;
    } else {
      u1[v] = rng_uniform(keys[v], 2 * static_cast<uint64_t>(q));
      u2[v] = rng_uniform(keys[v], 2 * static_cast<uint64_t>(q) + 1);
    }
  }
  const Arr r = (T(-2) * u1.log()).sqrt();
  const Arr theta = T(6.283185307179586476925) * u2;
  const Arr c = r * theta.cos(), s = r * theta.sin();
  std::memcpy(static_cast<void*>(zc), c.data(), sizeof(Lane<T>));
  std::memcpy(static_cast<void*>(zs), s.data(), sizeof(Lane<T>));
}

// f(q) for the pairs q = 0..mp-1 outside [q0, q1) (q0 <= q1).
template <class F>
void used_pairs(int mp, int q0, int q1, F f) {
  for (int q = 0; q < q0; ++q) f(q);
  for (int q = q1; q < mp; ++q) f(q);
}

// Sampler v2's normals of a chunk (data/normals.hpp): first every pair's two 24-bit integers into G[q] and
// G[mp + q] (their bits), then the kernel over them, a register part at a time, each pair's two normals to where
// `out` puts them (G[q] and G[mp + q] themselves, or the tokens).  The pairs are
// independent, so the kernel's long dependency chains of successive pairs overlap in the core.
static void normals_v2_lanes(const uint64_t* keys, int mp, int q0, int q1, const NormalsOut<float>& out) {
  constexpr int V = kLanes<float>;
  using F = Register<float>;
  using I = Register<int32_t>;
  used_pairs(mp, q0, q1, [&](int q) {
    alignas(64) int32_t b1[V], b2[V];
    for (int v = 0; v < V; ++v) {
      const uint64_t b = rng_bits(keys[v], static_cast<uint64_t>(q));
      b1[v] = static_cast<int32_t>(b >> 40);
      b2[v] = static_cast<int32_t>((b >> 8) & 0xffffffu);
    }
    std::memcpy(static_cast<void*>(out.G + q), b1, sizeof b1);
    std::memcpy(static_cast<void*>(out.G + mp + q), b2, sizeof b2);
  });
  used_pairs(mp, q0, q1, [&](int q) {
    Lane<float>* const c = out.at(q);
    Lane<float>* const s = out.at(mp + q);
    for (int h = 0; h < kLaneParts; ++h) {
      const F bc = part(out.G + q, h)[0], bs = part(out.G + mp + q, h)[0];
      normals_v2::box_muller<F, I>(normals_v2::bits_as<I>(bc), normals_v2::bits_as<I>(bs), &part(c, h)[0],
                                   &part(s, h)[0]);
    }
  });
}

template <class T>
void chunk_normals(Sampler sampler, const uint64_t* keys, int mp, NormalsOut<T> out, int unused_begin, int unused_end) {
  const int q0 = std::clamp(unused_begin, 0, mp), q1 = std::max(q0, std::min(unused_end, mp));
  for (int q = q0; q < q1; ++q) *out.at(q) = *out.at(mp + q) = Lane<T>{} + std::numeric_limits<T>::quiet_NaN();
  if constexpr (sizeof(T) == 4)
    if (sampler == Sampler::v2) return normals_v2_lanes(keys, mp, q0, q1, out);
  used_pairs(mp, q0, q1, [&](int q) { box_muller_lanes<T>(keys, q, out.at(q), out.at(mp + q)); });
}

// sample_tasks in stages, one chunk of V tasks at a time (the contract in data.hpp, step by step).
namespace {

// One chunk's draws: the tasks' keys, their normals G (2 mp lanes: cosines of pairs 0..mp-1, then sines;
// G[0..d) are w's, g = G + d the inputs', G + d + N d the noise's), w (d lanes) and sigma (1 lane).
template <class T>
struct Chunk {
  int d, n, N, mp, live;
  uint64_t keys[kLanes<T>];
  Lane<T>* G;
  Lane<T>* w;
  Lane<T>* sig;
  const Lane<T>* g() const { return G + d; }
  const Lane<T>* eps() const { return G + d + N * d; }
};

template <class T>
void chunk_keys(const TaskLaw& law, uint64_t seed, Stream stream, uint64_t block, int c, Chunk<T>& k) {
  constexpr int V = kLanes<T>;
  for (int v = 0; v < V; ++v) {
    k.keys[v] = rng_key(seed, stream, block, static_cast<uint64_t>(c * V + std::min(v, k.live - 1)));
    if (law.contexts > 0)
      k.keys[v] = rng_key(seed, Stream::contexts, 0, uniform_index(rng_key(k.keys[v], kContextIndex), law.contexts));
  }
}

// w = w_half G[0..d) (or G itself), or a member of the pool.
template <class T>
void draw_w(const TaskLaw& law, Chunk<T>& k) {
  const int d = k.d;
  const bool rotate_w = law.w_half.size() > 0;
  for (int i = 0; i < d; ++i) {
    Lane<T> acc = rotate_w ? Lane<T>{} : k.G[i];
    if (rotate_w)
      for (int j = 0; j < d; ++j) acc += static_cast<T>(law.w_half(i, j)) * k.G[j];
    k.w[i] = acc;
  }
  if (law.pool.size())
    for (int v = 0; v < kLanes<T>; ++v) {
      const int64_t member = uniform_index(rng_key(k.keys[v], kPoolIndex), law.pool.cols());
      for (int i = 0; i < d; ++i) k.w[i][v] = static_cast<T>(law.pool(i, member));
    }
  if (law.w_scale != 1.0)
    for (int i = 0; i < d; ++i) k.w[i] *= static_cast<T>(law.w_scale);
}

// The input laws: each writes rows 0..d-1 of the chunk's tokens Z (row i, token j at Z[i N + j]).
template <class T>
using XSampler = void (*)(const TaskLaw& law, const Chunk<T>& k, Lane<T>* Z);

// Gaussian, x = Sigma_half g, a register part at a time (a 64-byte lane held as a value lives in memory on
// narrower targets: simd.hpp).  Without Sigma_half x is g itself, which chunk_normals writes to the tokens
// (x_is_normals).
template <class T>
void x_gaussian(const TaskLaw& law, const Chunk<T>& k, Lane<T>* Z) {
  const int d = k.d, N = k.N;
  for (int h = 0; h < kLaneParts; ++h) {
    const auto g = part(k.g(), h);
    const auto x = part(Z, h);
    for (int j = 0; j < N; ++j)
      for (int i = 0; i < d; ++i) {
        Register<T> acc{};
        for (int m = 0; m < d; ++m) acc += static_cast<T>(law.Sigma_half(i, m)) * g[j * d + m];
        x[i * N + j] = acc;
      }
  }
}

// Gaussian with a covariance of its own per task: x = U_t diag(sqrt l) g, U_t from the task's key.
template <class T>
void x_gaussian_per_task(const TaskLaw& law, const Chunk<T>& k, Lane<T>* Z) {
  constexpr int V = kLanes<T>;
  const int d = k.d, N = k.N;
  const Lane<T>* g = k.g();
  Eigen::MatrixXd A_task[V];
  for (int v = 0; v < V; ++v)
    A_task[v] = haar_rotation(d, rng_key(k.keys[v], kTaskRotation)) * law.task_spectrum.cwiseSqrt().asDiagonal();
  for (int j = 0; j < N; ++j)
    for (int i = 0; i < d; ++i) {
      Lane<T> acc{};
      for (int m = 0; m < d; ++m) {
        Lane<T> a;
        for (int v = 0; v < V; ++v) a[v] = static_cast<T>(A_task[v](i, m));
        acc += a * g[j * d + m];
      }
      Z[i * N + j] = acc;
    }
}

// Uniform on [-x_param, x_param]^d, from uniforms after the normals' counters.
template <class T>
void x_uniform(const TaskLaw& law, const Chunk<T>& k, Lane<T>* Z) {
  const int d = k.d, N = k.N;
  for (int j = 0; j < N; ++j)
    for (int i = 0; i < d; ++i)
      for (int v = 0; v < kLanes<T>; ++v)
        Z[i * N + j][v] = static_cast<T>(law.x_param * (2.0 * rng_uniform(k.keys[v], 2 * k.mp + 1 + j * d + i) - 1.0));
}

// On the unit sphere (g / |g|), or scaled by sqrt of a Gamma radius (gamma).
template <class T>
void x_radial(const TaskLaw& law, const Chunk<T>& k, Lane<T>* Z) {
  const int d = k.d, N = k.N;
  const Lane<T>* g = k.g();
  for (int j = 0; j < N; ++j) {
    Lane<T> norm2{};
    for (int i = 0; i < d; ++i) norm2 += g[j * d + i] * g[j * d + i];
    Lane<T> radius;
    for (int v = 0; v < kLanes<T>; ++v) {
      radius[v] = T(1) / std::sqrt(norm2[v]);
      if (law.x_dist == XDist::gamma)
        radius[v] *= static_cast<T>(
            std::sqrt(gamma_draw(rng_key(k.keys[v], kGammaRadius, j), law.x_param, gamma_scale(law.x_param))));
    }
    for (int i = 0; i < d; ++i) Z[i * N + j] = g[j * d + i] * radius;
  }
}

// [VO23]'s other input laws (create_ood_data): per task exponential, normal or Laplace draws s, divided by the
// Frobenius norm of the context's draws.
template <class T>
void x_other(const TaskLaw&, const Chunk<T>& k, Lane<T>* Z) {
  constexpr int V = kLanes<T>;
  const int d = k.d, n = k.n, N = k.N, m = N * d;
  const Lane<T>* g = k.g();
  std::vector<double> one(m), s(static_cast<size_t>(m) * V);   // task v's draw j at [j V + v], each drawn once
  for (int v = 0; v < V; ++v) {
    other_draws<T>(other_law(k.keys[v]), g, v, k.keys[v], 2 * k.mp + 1, m, one.data());
    for (int j = 0; j < m; ++j) s[static_cast<size_t>(j) * V + v] = one[j];
  }
  double F[V] = {};   // each task's |S|_F: its own chain in draw order, the tasks side by side
  for (int j = 0; j < n * d; ++j)
    for (int v = 0; v < V; ++v) F[v] = fused_madd(s[j * V + v], s[j * V + v], F[v]);
  for (int v = 0; v < V; ++v) F[v] = std::sqrt(F[v]);
  for (int j = 0; j < N; ++j)
    for (int i = 0; i < d; ++i)
      for (int v = 0; v < V; ++v) Z[i * N + j][v] = static_cast<T>(s[(j * d + i) * V + v] / F[v]);
}

// Whether the law's input sampler reads the normals g_x (every one but the uniform inputs').
bool x_reads_normals(const TaskLaw& law) { return law.other_inputs || law.x_dist != XDist::uniform; }

// Whether the inputs are the normals g_x themselves (Gaussian, identity covariance): chunk_normals then writes
// them to the tokens, and no input sampler runs.
bool x_is_normals(const TaskLaw& law) {
  return !law.other_inputs && law.x_dist == XDist::gaussian && law.Sigma_half.size() == 0 && law.task_spectrum.size() == 0;
}

// Whether the labels read the noise normals eps: not for a noiseless linear task, whose y_j = l_j + 0 eps_j
// is l_j bit for bit (l_j is a sum from +0 of fused products, never -0, so l_j + (+-0) = l_j).
bool labels_read_noise(const TaskLaw& law) { return law.noise != NoiseKind::none || law.task == Task::sine; }

// The law's input sampler; none where the inputs are the normals themselves (x_is_normals: chunk_normals
// writes them to the tokens).
template <class T>
XSampler<T> x_sampler(const TaskLaw& law) {
  if (x_is_normals(law)) return nullptr;
  if (law.other_inputs) return x_other<T>;
  switch (law.x_dist) {
    case XDist::gaussian: return law.task_spectrum.size() ? x_gaussian_per_task<T> : x_gaussian<T>;
    case XDist::uniform: return x_uniform<T>;
    case XDist::sphere:
    case XDist::gamma: return x_radial<T>;
  }
  return x_gaussian<T>;
}

// Each task's noise std, from the uniform at counter 2 mp (drawn where the law reads it).
template <class T>
void draw_sigma(const TaskLaw& law, int c, Chunk<T>& k, TaskBatch<T>& batch) {
  constexpr int V = kLanes<T>;
  const bool reads_u = law.noise == NoiseKind::uniform || law.noise == NoiseKind::set;
  for (int v = 0; v < V; ++v) {
    const double us = reads_u ? rng_uniform(k.keys[v], 2 * k.mp) : 0.0;
    double sigma = 0.0;
    if (law.noise == NoiseKind::fixed) sigma = law.noise_sigma[0];
    if (law.noise == NoiseKind::uniform) sigma = law.noise_sigma[0] * us;
    if (law.noise == NoiseKind::set)
      sigma = law.noise_sigma[std::min(law.noise_sigma.size() - 1,
                                       static_cast<size_t>(us * static_cast<double>(law.noise_sigma.size())))];
    k.sig[0][v] = static_cast<T>(sigma);
    if (v < k.live) batch.sigma[c * V + v] = sigma;
  }
}

// Row d: the labels <w, x_j> (or the sine task's) plus noise for the context, the query's label to y.
template <class T>
void write_labels(const TaskLaw& law, int c, Chunk<T>& k, Lane<T>* Z, TaskBatch<T>& batch) {
  const int d = k.d, n = k.n, N = k.N;
  const uint64_t phase = 2 * k.mp + 1 + N * d;   // the sine task's uniform
  if (law.task == Task::sine)
    for (int v = 0; v < kLanes<T>; ++v) k.w[0][v] = static_cast<T>(sine_amplitude(rng_uniform(k.keys[v], phase)));
  const Lane<T>* eps = k.eps();
  if (law.task == Task::sine) {
    for (int j = 0; j < N; ++j) {
      Lane<T> label{};
      for (int v = 0; v < kLanes<T>; ++v) label[v] = sine_label(rng_uniform(k.keys[v], phase), Z[j][v]);
      if (j < n) Z[d * N + j] = label + k.sig[0] * eps[j];
      else batch.y[c] = label;
    }
  } else {   // a register part at a time: 64-byte lanes would live in memory on narrower targets (simd.hpp)
    const bool noisy = labels_read_noise(law);
    for (int h = 0; h < kLaneParts; ++h) {
      const auto w = part(k.w, h), x = part(static_cast<const Lane<T>*>(Z), h), e = part(eps, h);
      const auto out = part(Z + d * N, h);
      const auto sig = part(k.sig, h)[0];
      for (int j = 0; j < N; ++j) {
        Register<T> label{};
        for (int i = 0; i < d; ++i) label += w[i] * x[i * N + j];
        if (j < n) out[j] = noisy ? label + sig * e[j] : label;
        else part(&batch.y[c], h)[0] = label;
      }
    }
  }
  Z[d * N + n] = Lane<T>{};
}

// The chunk's w to batch.w, and its padding lanes (beyond B) zeroed: all-zero tasks (mask 0).
template <class T>
void finish_chunk(int c, const Chunk<T>& k, Lane<T>* Z, TaskBatch<T>& batch) {
  constexpr int V = kLanes<T>;
  const int d = k.d, cells = (d + 1) * k.N;
  for (int v = 0; v < k.live; ++v)
    for (int i = 0; i < d; ++i) batch.w[static_cast<size_t>(c * V + v) * d + i] = k.w[i][v];
  if (k.live < V) {
    for (int x = 0; x < cells; ++x)
      for (int v = k.live; v < V; ++v) Z[x][v] = T(0);
    for (int v = k.live; v < V; ++v) batch.y[c][v] = T(0);
  }
}

}  // namespace

template <class T>
void sample_tasks(const TaskLaw& law, uint64_t seed, Stream stream, uint64_t block, TaskBatch<T>& batch) {
  ICL_CHECK(batch.d == law.d && batch.n == law.n);
  constexpr int V = kLanes<T>;
  const int d = law.d, N = law.n + 1, m = d + N * d + law.n, mp = (m + 1) / 2;
  Chunk<T> k{d, law.n, N, mp, 0, {}, batch.scratch.data(), nullptr, nullptr};
  k.w = k.G + 2 * mp;
  k.sig = k.w + d;
  const XSampler<T> draw_x = x_sampler<T>(law);
  // The pairs whose both normals are g_x's (q >= d and mp + q < d + N d), when nothing reads them; with
  // noiseless labels as well every pair past w's (q >= d: its sine mp + q >= d is a g_x or an eps).
  const int unused_end = x_reads_normals(law) ? 0 : labels_read_noise(law) ? d + N * d - mp : mp;
  for (int c = 0; c < batch.chunks; ++c) {
    k.live = std::min(V, batch.B - c * V);
    chunk_keys(law, seed, stream, block, c, k);
    Lane<T>* Z = batch.Z.data() + static_cast<size_t>(c) * (d + 1) * N;
    chunk_normals<T>(law.sampler, k.keys, mp, NormalsOut<T>{k.G, draw_x ? nullptr : Z, d, N}, d, unused_end);
    draw_w(law, k);
    if (draw_x) draw_x(law, k, Z);
    draw_sigma(law, c, k, batch);
    if (law.x_scale != 1.0)
      for (int x = 0; x < d * N; ++x) Z[x] *= static_cast<T>(law.x_scale);
    write_labels(law, c, k, Z, batch);
    finish_chunk(c, k, Z, batch);
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
template void chunk_normals<float>(Sampler, const uint64_t*, int, NormalsOut<float>, int, int);
template void chunk_normals<double>(Sampler, const uint64_t*, int, NormalsOut<double>, int, int);
template void batch_task<float>(const TaskBatch<float>&, int, Eigen::MatrixXd*, Eigen::VectorXd*);
template void batch_task<double>(const TaskBatch<double>&, int, Eigen::MatrixXd*, Eigen::VectorXd*);

}  // namespace icl
