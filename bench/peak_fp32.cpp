// peak_fp32.cpp -- single-core FP32 FMA peak (GFLOP/s) microbenchmark.
//
// Runs NACC independent FMA accumulator chains on the widest SIMD vector the
// compiler targets (GCC vector extensions), so that FMA latency x throughput
// is covered and the FMA units stay saturated. Counts 2 flops per FMA per lane.
//
// Build: g++ -O2 -march=native -std=c++17 bench/peak_fp32.cpp -o /tmp/peak_fp32
// Run:   /tmp/peak_fp32 [target_seconds_per_rep=0.5] [reps=5]
// Output (one "key value" per line):
//   vector_bits <n>
//   accumulators <n>
//   fma_per_iter <n>
//   flops_per_iter <n>
//   iters <n>
//   rep_gflops <v>          (one line per repetition)
//   peak_fp32_gflops <best>
//
// Verify the hot loop: objdump -d --no-show-raw-insn /tmp/peak_fp32 | grep vfmadd
// (with AVX-512 it should be vfmadd...ps on %zmm registers).

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstdint>

#if defined(__AVX512F__)
#define VEC_BYTES 64
#elif defined(__AVX__)
#define VEC_BYTES 32
#elif defined(__SSE__) || defined(__ARM_NEON) || defined(__ALTIVEC__)
#define VEC_BYTES 16
#else
#define VEC_BYTES 16  // generic vector extension; compiler lowers it as it can
#endif

typedef float vf __attribute__((vector_size(VEC_BYTES)));
static constexpr int LANES = VEC_BYTES / (int)sizeof(float);

// 4 cycles latency x 2 FMA pipes = 8 in flight minimum; use more to be safe
// while still fitting the register file (32 zmm with AVX-512, 16 otherwise).
#if VEC_BYTES == 64
static constexpr int NACC = 24;
#else
static constexpr int NACC = 12;
#endif

static inline vf splat(float v) {
  vf r;
  for (int i = 0; i < LANES; ++i) r[i] = v;
  return r;
}

// The accumulators are individual named variables (not an array) so GCC keeps
// every chain in its own register; an array with per-element asm constraints
// gets spilled to the stack and the chains then go through memory.
#if VEC_BYTES == 64
#define FOR_ACC(X) \
  X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11) \
  X(12) X(13) X(14) X(15) X(16) X(17) X(18) X(19) X(20) X(21) X(22) X(23)
#else
#define FOR_ACC(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11)
#endif

// noinline + volatile-derived inputs so nothing is constant-folded.
__attribute__((noinline)) static float run(std::int64_t iters, float a_s, float b_s, float seed) {
  const vf a = splat(a_s);
  const vf b = splat(b_s);
#define DECL(k) vf acc##k = splat(seed + 0.001f * (float)(k));
  FOR_ACC(DECL)
#undef DECL

  for (std::int64_t it = 0; it < iters; ++it) {
    // NACC independent dependency chains acc = acc * a + b (one FMA each).
#define STEP(k) acc##k = acc##k * a + b;
    FOR_ACC(STEP)
#undef STEP
    // Empty asm barrier: the compiler must assume each accumulator may have
    // changed, so it cannot collapse / hoist / reassociate the chains.
#define PIN(k) __asm__ volatile("" : "+v"(acc##k));
    FOR_ACC(PIN)
#undef PIN
  }

  vf s = splat(0.f);
#define SUM(k) s += acc##k;
  FOR_ACC(SUM)
#undef SUM
  float r = 0.f;
  for (int i = 0; i < LANES; ++i) r += s[i];
  return r;
}

int main(int argc, char** argv) {
  double target_s = argc > 1 ? std::atof(argv[1]) : 0.5;
  int reps = argc > 2 ? std::atoi(argv[2]) : 5;
  if (target_s <= 0) target_s = 0.5;
  if (reps <= 0) reps = 5;

  // Values chosen so acc stays bounded: fixed point of x*a+b with |a|<1.
  volatile float va = 0.999999f, vb = 1e-6f, vseed = 1.0f;
  const float a = va, b = vb, seed = vseed;

  using clk = std::chrono::steady_clock;
  const double flops_per_iter = 2.0 * LANES * NACC;

  // Calibrate iteration count for ~target_s per repetition.
  std::int64_t iters = 1 << 20;
  float sink = 0.f;
  for (;;) {
    auto t0 = clk::now();
    sink += run(iters, a, b, seed);
    double dt = std::chrono::duration<double>(clk::now() - t0).count();
    if (dt > 0.05) {
      iters = (std::int64_t)((double)iters * target_s / dt);
      break;
    }
    iters *= 4;
  }
  if (iters < 1) iters = 1;

  std::printf("vector_bits %d\n", VEC_BYTES * 8);
  std::printf("accumulators %d\n", NACC);
  std::printf("fma_per_iter %d\n", NACC);
  std::printf("flops_per_iter %.0f\n", flops_per_iter);
  std::printf("iters %lld\n", (long long)iters);

  double best = 0.0;
  for (int r = 0; r < reps; ++r) {
    auto t0 = clk::now();
    sink += run(iters, a, b, seed + (float)r);
    double dt = std::chrono::duration<double>(clk::now() - t0).count();
    double gf = flops_per_iter * (double)iters / dt * 1e-9;
    std::printf("rep_gflops %.2f\n", gf);
    if (gf > best) best = gf;
  }
  std::printf("peak_fp32_gflops %.2f\n", best);
  // Use the result so the work cannot be optimised away.
  std::fprintf(stderr, "checksum %g\n", (double)sink);
  return 0;
}
