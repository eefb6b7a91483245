#pragma once
// Training of one grid point (docs/science.md section 3): train(point) -> Trained.  Pure and deterministic:
// no I/O, no MPI, no clocks in anything but the timing fields.  A run that diverges is returned as data
// (status + message); an exception means the point failed (run_point.hpp records it).
#include <atomic>
#include <cstdint>
#include <vector>

#include "icl/core/point.hpp"
#include "icl/core/result.hpp"

namespace icl {

// Measurements taken along the trajectory (the [A24] landscape, landscape.hpp): at every step s it wants,
// before that step's update, with `update` the optimiser's step from theta; once more after the last
// step (update empty) if it wants step `steps`.  Its time is not training time.
struct TrainObserver {
  virtual ~TrainObserver() = default;
  virtual bool wanted(int64_t step) const = 0;
  virtual void measure(int64_t step, const std::vector<double>& theta, const std::vector<double>& update) = 0;
};

// `cancel` (optional) is polled once per step; when it becomes true the point stops with status
// cancelled, which a driver discards: cancellation never changes a recorded result.
Trained train(const Point& p, const std::atomic<bool>* cancel = nullptr, TrainObserver* observer = nullptr);

}  // namespace icl
