// The training loop allocates nothing per step: training 2N steps performs exactly as many heap
// allocations as training N steps (all buffers are sized before the first step).
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <new>

#include "icl/run/options.hpp"
#include "icl/run/run_point.hpp"

static std::atomic<long> g_allocations{0};

void* operator new(std::size_t size) {
  ++g_allocations;
  if (void* p = std::malloc(size ? size : 1)) return p;
  throw std::bad_alloc();
}
void* operator new(std::size_t size, std::align_val_t align) {
  ++g_allocations;
  const std::size_t a = static_cast<std::size_t>(align);
  if (void* p = std::aligned_alloc(a, (size + a - 1) / a * a)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }

namespace icl {
namespace {

long allocations_of(const Point& p) {
  const long before = g_allocations;
  const Result r = run_point(p);
  EXPECT_EQ(r.status, Status::ok) << r.message;
  return g_allocations - before;
}

TEST(Allocation, TrainingStepsAllocateNothing) {
  for (const char* attention : {"linear", "softmax"})
    for (const char* precision : {"float32", "float64"}) {
      Point p;
      for (const auto& [k, v] : std::vector<std::pair<std::string, std::string>>{
               {"d", "4"}, {"n", "9"}, {"layers", "2"}, {"heads", "2"}, {"batch", "50"}, {"eval_tasks", "40"},
               {"eval_every", "10"}, {"steps", "20"}, {"noise", "uniform:1"}, {"cov", "rotated:1,2,1,0.5"},
               {"clip", "1"}, {"clip_mode", "matrix"}, {"attention", attention}, {"precision", precision}})
        ASSERT_EQ(point_set(p, k, v), "");
      allocations_of(p);   // warm-up: what is built once per process (the metric registry's tables, first used here)
      const long a = allocations_of(p);
      p.steps = 40;
      const long b = allocations_of(p);
      EXPECT_EQ(a, b) << attention << " " << precision << ": allocations grow with the number of steps";
    }
}

// The transformer, [VO23]'s and the causal GPT-2 trained at every prefix (readout head, learnt positions).
TEST(Allocation, TransformerTrainingStepsAllocateNothing) {
  const std::vector<std::pair<std::string, std::string>> common = {
      {"arch", "transformer"}, {"norm", "1"}, {"d", "3"}, {"n", "6"}, {"layers", "2"}, {"heads", "2"},
      {"key_size", "3"}, {"mlp", "true"}, {"layer_norm", "true"}, {"batch", "40"}, {"eval_tasks", "40"},
      {"eval_every", "10"}, {"steps", "20"}, {"analysis", "false"}};
  const std::vector<std::vector<std::pair<std::string, std::string>>> variants = {
      {{"attention", "softmax"}, {"tokens", "classic"}},
      {{"attention", "softmax"}, {"tokens", "padded"}, {"causal", "true"}, {"readout", "head"}, {"prefix_loss", "true"},
       {"embed", "linear"}, {"embed_size", "6"}, {"pe", "learnt"}, {"pe_size", "6"}, {"init", "gpt2"},
       {"init_scale", "0.02"}, {"schedule", "linear"}, {"warmup", "5"}}};
  for (const auto& variant : variants) {
    Point p;
    for (const auto& kv : common) ASSERT_EQ(point_set(p, kv.first, kv.second), "");
    for (const auto& kv : variant) ASSERT_EQ(point_set(p, kv.first, kv.second), "");
    allocations_of(p);
    const long a = allocations_of(p);
    p.steps = 40;
    const long b = allocations_of(p);
    EXPECT_EQ(a, b) << variant[1].second << " tokens: allocations grow with the number of steps";
  }
}

}  // namespace
}  // namespace icl
