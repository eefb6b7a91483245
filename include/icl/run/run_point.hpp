#pragma once
// The seam between driver and science: run_point(point) -> Result, training (train.hpp) with the
// measurements along its trajectory (landscape.hpp) and then the analysis of the trained weights
// (analysis.hpp).  Pure and deterministic: no I/O, no MPI, no clocks in anything but the timing fields.
// The same point gives the same bits (timings aside) on any machine running the same build.  Nothing is
// thrown: an exception in training makes the point failed (NaN everywhere, the reason in its message);
// one in the analysis keeps the training and marks the analysis failed.
#include <atomic>

#include "icl/base/point.hpp"
#include "icl/base/result.hpp"
#include "icl/train/train.hpp"

namespace icl {

// Fault injection for tests of the failure paths: enter(stage) is called as "train" and "analysis"
// begin; an exception it throws is handled exactly as one thrown by that stage.
struct StageHook {
  virtual ~StageHook() = default;
  virtual void enter(const char* stage) = 0;
};

// `cancel` (optional) is polled once per training step, in the landscape measurements and throughout the
// analysis (cancel.hpp: between methods and between tasks or chunks of them); a cancelled point has
// status cancelled, which a driver discards: cancellation never changes a recorded result.
// `leg` (train.hpp): successive halving trains a point in legs.  One that stops before p.steps with
// status ok is not analysed and fills `stopped` with its checkpoint; one that ends at p.steps is analysed
// like a point trained straight through, and has its bits (timings aside).  `live` (optional): the
// point's progress for a driver's live view (train.hpp).
Result run_point(const Point& p, const std::atomic<bool>* cancel = nullptr, StageHook* hook = nullptr, const Leg& leg = {},
                 Checkpoint* stopped = nullptr, LiveTraining* live = nullptr);

}  // namespace icl
