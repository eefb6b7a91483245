#pragma once
// Counter-based random numbers: every draw is a pure function of (key, index), so a task's data depends
// only on the seed, the stream, the step and the task's index -- never on rank, chunking or order.
// Keys are SplitMix64 hashes of (seed, stream, a, b); element i of a key is the SplitMix64 output at
// counter i.  Normals use our own Box-Muller transform (std::normal_distribution differs across
// standard libraries).
#include <cstdint>

namespace icl {

// Independent streams of one point.  Values are part of the on-disk reproducibility contract.
enum class Stream : uint64_t { init = 1, train = 2, eval = 3, rotation = 4, tune = 5, analysis = 6, pool = 7, contexts = 8 };

// Every seeded set of one point: its stream and block (the `a` of rng_key), in one table.  The numbers
// are part of the reproducibility contract; a new set takes a new block here, never a reused one.
//   theta_0                          rng_key(seed, init)                        params.cpp
//   point seeds                      rng_key(sweep_seed, init, point or replica) grid.cpp
//   covariance rotation U            rng_key(seed, rotation)                    data.cpp
//   task pool member m (task_pool)   rng_key(seed, pool, m)                     data.cpp
//   training context c (train_contexts) rng_key(seed, contexts, 0, c)           data.cpp
struct Draw {
  Stream stream;
  uint64_t block;
};
namespace draws {
inline Draw train_batch(int64_t refresh_index) { return {Stream::train, static_cast<uint64_t>(refresh_index)}; }
constexpr Draw eval_set{Stream::eval, 0};            // the final test loss and the analyses' main set
constexpr Draw pool_eval_set{Stream::eval, 1};       // task_pool > 0: fresh inputs, tasks from the pool
constexpr Draw shared_eval_set{Stream::eval, 2};     // eval_seed >= 0: drawn with eval_seed, not the point's
                                                     // seed: one evaluation set for every point (data.hpp)
constexpr Draw tune_closed_form{Stream::tune, 0};    // rates and lambdas of the closed-form baselines
constexpr Draw tune_gdpp{Stream::tune, 1};           // GD++ tuning (double)
constexpr Draw validate_gdpp{Stream::tune, 2};       // GD++ selection among local optima
inline Draw noise_level(int k) { return {Stream::analysis, 100 + static_cast<uint64_t>(k)}; }
inline Draw ood_alpha(int k) { return {Stream::analysis, 200 + static_cast<uint64_t>(k)}; }
inline Draw ood_context(int k) { return {Stream::analysis, 300 + static_cast<uint64_t>(k)}; }
inline Draw ood_teacher(int k) { return {Stream::analysis, 400 + static_cast<uint64_t>(k)}; }
inline Draw ood_other(int k) { return {Stream::analysis, 800 + static_cast<uint64_t>(k)}; }
inline Draw ood_other_teacher(int k) { return {Stream::analysis, 900 + static_cast<uint64_t>(k)}; }
inline Draw context_length(int k) { return {Stream::analysis, 1000 + static_cast<uint64_t>(k)}; }   // the set of context_curve = k <= 2^20
constexpr Draw landscape_full{Stream::analysis, 500};     // the full-batch gradient of the noise measurement
inline Draw landscape_batch(int k) { return {Stream::analysis, 600 + static_cast<uint64_t>(k)}; }
constexpr Draw landscape_fixed{Stream::analysis, 700};    // drawn with kFixedSeed (landscape.hpp): one set for every point
constexpr Draw probe_fit{Stream::analysis, 10};           // Fu et al.'s per-layer probes (probes.hpp): fitted on this
constexpr Draw probe_eval{Stream::analysis, 11};          // ... and compared with Newton on this
}  // namespace draws

// Sub-streams of one task's key (data.cpp): labels reusing the Stream values, not the point's streams.
constexpr Stream kGammaNormals = Stream::init, kGammaUniforms = Stream::train, kGammaRadius = Stream::eval;
constexpr Stream kPoolIndex = Stream::pool, kContextIndex = Stream::contexts;   // which pool task, which context
constexpr Stream kTaskRotation = Stream::rotation;   // cov = rotated_per_task: the task's own U
constexpr Stream kOtherLaw = Stream::tune;            // [VO23]'s other input laws: which law a task draws from

inline uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

inline uint64_t rng_key(uint64_t seed, Stream stream, uint64_t a = 0, uint64_t b = 0) {
  uint64_t k = mix64(seed + 0x9e3779b97f4a7c15ULL);
  k = mix64(k ^ static_cast<uint64_t>(stream));
  k = mix64(k ^ (a + 0x632be59bd9b4e019ULL));
  return mix64(k ^ (b + 0x8cb92ba72f3d8dd7ULL));
}

inline uint64_t rng_bits(uint64_t key, uint64_t i) { return mix64(key + (i + 1) * 0x9e3779b97f4a7c15ULL); }

// Uniform on the open interval (0, 1), 53 random bits.
inline double rng_uniform(uint64_t key, uint64_t i) {
  return (static_cast<double>(rng_bits(key, i) >> 11) + 0.5) * 0x1p-53;
}

// out[0..count) = standard normals number first..first+count of `key` (count may be odd).
// Normal j uses uniforms 2*(j/2) and 2*(j/2)+1 of the key: the pair (cos, sin) of one Box-Muller draw.
void rng_normals(uint64_t key, uint64_t first, int count, double* out);

// A scalar standard normal (the same value rng_normals would give for index i).
double rng_normal(uint64_t key, uint64_t i);

}  // namespace icl
