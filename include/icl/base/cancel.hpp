#pragma once
// Cooperative cancellation of the long stages around training: the analysis (analysis.hpp) and what it
// calls (the baselines' task sets with dMMSE, GD++ tuning, context_curve, the model runs over task sets)
// and the landscape measurements inside training (landscape.hpp).  They poll the sweep's stop flag (the
// `cancel` of run_point, set by SIGUSR1/SIGTERM/SIGINT) at safe points, between methods and between
// tasks or chunks of tasks, and throw Cancelled; run_point turns it into Status::cancelled, which a sweep
// discards (the point is in flight: not stored, recomputed on --resume).  Nothing half-done is kept.
#include <atomic>
#include <stdexcept>

namespace icl {

struct Cancelled : std::runtime_error {
  Cancelled() : std::runtime_error("cancelled by the stop flag") {}
};

// Throws Cancelled when `stop` (optional) is set.
inline void check_stop(const std::atomic<bool>* stop) {
  if (stop && stop->load(std::memory_order_relaxed)) throw Cancelled();
}

}  // namespace icl
