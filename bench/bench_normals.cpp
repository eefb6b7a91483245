// The task sampler's normal generators on one core (issue 32, item 5): speed, moments and the
// Kolmogorov-Smirnov distance of
//   v1        Box-Muller with Eigen's log, sqrt, sin and cos (the stream of every file before v2);
//   v2        Box-Muller with our own kernels (include/icl/data/normals.hpp): the engine's default;
//   ziggurat  Marsaglia and Tsang's (2000) 256-layer ziggurat on the same counter-based bits, one hash per
//             normal (layer and value from separate bits), its accept test in a loop over the 16 lanes (GCC's
//             vectorisation with gathers, where it does) and its rejections done per normal from a
//             sub-stream of the task's key.  Exact as well, but its draw count per normal varies.
// All three draw the normals of chunks of 16 tasks (contract step 1 of data.hpp), mp = 35 pairs a task
// (d = 5, n = 10).  Prints Mnormals/s and ns per normal, best of 5; then moments and sqrt(n) KS over 2^22.
// usage: bench_normals [seconds per method]
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "icl/data/data.hpp"

namespace {

using icl::Lane;
using icl::LaneVec;
constexpr int V = icl::kLanes<float>, kPairs = 35;

struct Ziggurat {
  uint32_t k[256];
  float w[256], f[256];
  static constexpr double r = 3.6541528853610088;
  Ziggurat() {   // Marsaglia and Tsang's zigset for 256 layers, 32-bit signed draws
    const double m = 2147483648.0, v = 4.92867323399e-3;
    double dn = r, tn = dn;
    const double q = v / std::exp(-0.5 * dn * dn);
    k[0] = static_cast<uint32_t>(dn / q * m);
    k[1] = 0;
    w[0] = static_cast<float>(q / m);
    w[255] = static_cast<float>(dn / m);
    f[0] = 1.0f;
    f[255] = static_cast<float>(std::exp(-0.5 * dn * dn));
    for (int i = 254; i >= 1; --i) {
      dn = std::sqrt(-2.0 * std::log(v / dn + std::exp(-0.5 * dn * dn)));
      k[i + 1] = static_cast<uint32_t>(dn / tn * m);
      tn = dn;
      f[i] = static_cast<float>(std::exp(-0.5 * dn * dn));
      w[i] = static_cast<float>(dn / m);
    }
  }
  // The rejected draw hz of layer i, then further draws from key `sub` (counter c) until one is accepted.
  float slow(int32_t hz, int i, uint64_t sub) const {
    uint64_t c = 0;
    const auto uni = [&] { return static_cast<float>(icl::rng_uniform(sub, c++)); };
    for (;;) {
      const float x = hz * w[i];
      if (i == 0) {   // the tail beyond r
        float xt, y;
        do {
          xt = -std::log(uni()) / static_cast<float>(r);
          y = -std::log(uni());
        } while (y + y < xt * xt);
        return hz > 0 ? static_cast<float>(r) + xt : -static_cast<float>(r) - xt;
      }
      if (f[i] + uni() * (f[i - 1] - f[i]) < std::exp(-0.5f * x * x)) return x;
      const uint64_t b = icl::rng_bits(sub, c++);
      hz = static_cast<int32_t>(b >> 32);
      i = static_cast<int>(b & 255);
      if (std::abs(static_cast<int64_t>(hz)) < k[i]) return hz * w[i];
    }
  }
  void chunk(const uint64_t* keys, int mp, Lane<float>* G) const {
    for (int j = 0; j < 2 * mp; ++j) {   // normal j of each task from hash j: its layer from the low 8 bits,
      Lane<float>& z = G[j];             // its value from the high 32 (Doornik's fix of the original's overlap)
      alignas(64) int32_t hz[V], layer[V];
      unsigned rejected = 0;
      for (int v = 0; v < V; ++v) {
        const uint64_t b = icl::rng_bits(keys[v], static_cast<uint64_t>(j));
        hz[v] = static_cast<int32_t>(b >> 32);
        layer[v] = static_cast<int32_t>(b & 255);
      }
      for (int v = 0; v < V; ++v) {
        z[v] = hz[v] * w[layer[v]];
        rejected |= static_cast<unsigned>(std::abs(static_cast<int64_t>(hz[v])) >= k[layer[v]]) << v;
      }
      for (int v = 0; v < V; ++v)
        if (rejected >> v & 1) z[v] = slow(hz[v], layer[v], icl::rng_key(keys[v], icl::Stream::rotation, j));
    }
  }
};

using Method = void (*)(const uint64_t*, int, Lane<float>*);
const Ziggurat& zig() {
  static const Ziggurat z;
  return z;
}
void v1(const uint64_t* k, int mp, Lane<float>* G) { icl::chunk_normals<float>(icl::Sampler::v1, k, mp, G); }
void v2(const uint64_t* k, int mp, Lane<float>* G) { icl::chunk_normals<float>(icl::Sampler::v2, k, mp, G); }
void ziggurat(const uint64_t* k, int mp, Lane<float>* G) { zig().chunk(k, mp, G); }

void keys_of(uint64_t chunk, uint64_t* keys) {
  for (int v = 0; v < V; ++v) keys[v] = icl::rng_key(1, icl::Stream::train, chunk, static_cast<uint64_t>(v));
}

double normals_per_second(Method m, double seconds) {
  LaneVec<float> G(2 * kPairs);
  uint64_t keys[V];
  double best = 0.0;
  volatile float sink = 0.0f;
  for (int rep = 0; rep < 5; ++rep) {
    const auto t0 = std::chrono::steady_clock::now();
    int64_t chunks = 0;
    double dt = 0.0;
    while (dt < seconds / 5) {
      for (int c = 0; c < 64; ++c, ++chunks) {
        keys_of(static_cast<uint64_t>(chunks), keys);
        m(keys, kPairs, G.data());
        sink = sink + G[0][0];
      }
      dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    }
    best = std::max(best, chunks * 2.0 * kPairs * V / dt);
  }
  return best;
}

void statistics(Method m, const char* name) {
  std::vector<double> z;
  LaneVec<float> G(2 * kPairs);
  uint64_t keys[V];
  for (uint64_t c = 0; z.size() < (1u << 22); ++c) {
    keys_of(c + (1u << 30), keys);
    m(keys, kPairs, G.data());
    for (const Lane<float>& g : G)
      for (int v = 0; v < V; ++v) z.push_back(g[v]);
  }
  const auto n = static_cast<double>(z.size());
  double m1 = 0, m2 = 0, m3 = 0, m4 = 0;
  for (double x : z) { m1 += x; m2 += x * x; m3 += x * x * x; m4 += x * x * x * x; }
  std::sort(z.begin(), z.end());
  double ks = 0.0;
  for (size_t i = 0; i < z.size(); ++i) {
    const double F = 0.5 * std::erfc(-z[i] / std::sqrt(2.0));
    ks = std::max({ks, F - i / n, (i + 1) / n - F});
  }
  std::printf("%-9s n=%.0f mean=%+.5f (se %.5f) var=%.5f (se %.5f) skew=%+.5f (se %.5f) kurt=%.4f (se %.4f) "
              "sqrt(n)KS=%.3f (p=0.05 at 1.36) max|z|=%.3f\n",
              name, n, m1 / n, std::sqrt(1 / n), m2 / n, std::sqrt(2 / n), m3 / n, std::sqrt(15 / n), m4 / n,
              std::sqrt(96 / n), std::sqrt(n) * ks, std::max(-z.front(), z.back()));
}

}  // namespace

int main(int argc, char** argv) {
  const double seconds = argc > 1 ? std::atof(argv[1]) : 2.0;
  const struct { Method m; const char* name; } methods[] = {{v1, "v1"}, {v2, "v2"}, {ziggurat, "ziggurat"}};
  double base = 0.0;
  for (const auto& x : methods) {
    const double r = normals_per_second(x.m, seconds);
    if (base == 0.0) base = r;
    std::printf("%-9s %8.1f Mnormals/s  %6.3f ns/normal  %5.2fx v1\n", x.name, r / 1e6, 1e9 / r, r / base);
  }
  for (const auto& x : methods) statistics(x.m, x.name);
}
