#pragma once
// The measurements along training (train.hpp's TrainObserver) that apply to a point, in a fixed order:
// [VO23]'s copy analysis (copy.hpp: classic-token transformers with analysis on), then [A24]'s landscape
// (landscape.hpp: `landscape` set).  A new measurement is one observer and one line in trajectory.cpp.
#include <atomic>
#include <memory>
#include <vector>

#include "icl/base/point.hpp"
#include "icl/train/train.hpp"

namespace icl {

// `stop` (optional): polled inside long measurements (cancel.hpp).
std::vector<std::unique_ptr<TrainObserver>> trajectory_observers(const Point& p, const std::atomic<bool>* stop);

}  // namespace icl
