#pragma once
// Optimisers, gradient clipping and learning-rate schedules (docs/science.md section 3), on the flat
// parameter vector.  Master weights and optimiser state are double (a few thousand numbers at most);
// the model itself computes in the point's precision.
#include <cstdint>
#include <utility>
#include <vector>

#include "icl/base/point.hpp"

namespace icl {

// Learning rate at step s (0-based): linear warm-up over p.warmup steps, then constant, halved every
// p.decay_every steps, or cosine from p.lr to 0 at p.steps.
double lr_at(const Point& p, int64_t s);

// Clips g in place (global norm, or the Frobenius norm of each block: (offset, count) of a named view,
// Trainable::blocks); returns the global norm before clipping.
double clip_grad(const Point& p, const std::vector<std::pair<int, int>>& blocks, std::vector<double>& g);

struct OptState {
  std::vector<double> m, v;   // Adam moments, or SGD momentum buffer in m
  int64_t t = 0;
};
OptState opt_init(int size);
// One update of theta with gradient g at rate lr (PyTorch semantics for Adam, AdamW and SGD).
void opt_step(const Point& p, double lr, std::vector<double>& theta, const std::vector<double>& g, OptState& s);

}  // namespace icl
