#pragma once
// The seam between driver and science: train_point(point) -> result.  Pure and deterministic: no I/O,
// no MPI, no clocks in anything but the timing fields.  The same point gives the same bits (timings
// aside) on any machine running the same build.  A run that diverges or throws is returned as data
// (status + message), never as an exception.
#include <atomic>
#include <cstdint>

#include "icl/core/point.hpp"
#include "icl/core/result.hpp"

namespace icl {

// Fault injection for tests of the failure paths: enter(stage) is called as "train" and "analysis"
// begin; an exception it throws is handled exactly as one thrown by that stage.
struct StageHook {
  virtual ~StageHook() = default;
  virtual void enter(const char* stage) = 0;
};

// `cancel` (optional) is polled once per step; when it becomes true the point stops with status
// cancelled, which a driver discards: cancellation never changes a recorded result.
Result train_point(const Point& p, const std::atomic<bool>* cancel = nullptr, StageHook* hook = nullptr);

// Multiply-adds x 2 of one forward + backward pass of the linear model on one task (see model.cpp).
double model_flops_per_task(const Point& p);

}  // namespace icl
