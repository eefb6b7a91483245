#pragma once
// The seam between driver and science: run_point(point) -> Result, training (train.hpp) with the
// measurements along its trajectory (landscape.hpp) and then the analysis of the trained weights
// (analysis.hpp).  Pure and deterministic: no I/O, no MPI, no clocks in anything but the timing fields.
// The same point gives the same bits (timings aside) on any machine running the same build.  Nothing is
// thrown: an exception in training makes the point failed (NaN everywhere, the reason in its message);
// one in the analysis keeps the training and marks the analysis failed.
#include <atomic>

#include "icl/core/point.hpp"
#include "icl/core/result.hpp"

namespace icl {

// Fault injection for tests of the failure paths: enter(stage) is called as "train" and "analysis"
// begin; an exception it throws is handled exactly as one thrown by that stage.
struct StageHook {
  virtual ~StageHook() = default;
  virtual void enter(const char* stage) = 0;
};

// `cancel` (optional) is polled once per training step; a cancelled point has status cancelled, which a
// driver discards: cancellation never changes a recorded result.
Result run_point(const Point& p, const std::atomic<bool>* cancel = nullptr, StageHook* hook = nullptr);

}  // namespace icl
