#include "icl/run/run_point.hpp"

#include <chrono>
#include <exception>

#include "icl/analysis/analysis.hpp"
#include "icl/analysis/trajectory.hpp"
#include "icl/base/cancel.hpp"
#include "icl/train/train.hpp"

namespace icl {
namespace {

// Training with the measurements along its trajectory that apply to p (analysis/trajectory.hpp), each
// adding its names to the result; none in legs (the spec refuses them with successive halving).
Result trained(const Point& p, const std::atomic<bool>* cancel, const Leg& leg, Checkpoint* stopped, LiveTraining* live) {
  Result r;
  if (leg.partial(p)) {
    static_cast<Trained&>(r) = train(p, cancel, nullptr, leg, stopped, live);
    return r;
  }
  TrainObservers observers(trajectory_observers(p, cancel));
  static_cast<Trained&>(r) = train(p, cancel, observers.empty() ? nullptr : &observers, leg, nullptr, live);
  r.merge(observers.take());
  return r;
}

// A point stopped by `cancel` outside the training loop's own check (a landscape measurement, the analysis):
// status cancelled, which a driver discards like a point stopped between steps.
Result cancelled(const char* during) {
  Result r = pending_result();   // NaN everywhere, as a point that did not finish
  r.status = Status::cancelled;
  r.message = std::string("cancelled during ") + during;
  return r;
}

}  // namespace

Result run_point(const Point& p, const std::atomic<bool>* cancel, StageHook* hook, const Leg& leg, Checkpoint* stopped,
                 LiveTraining* live) {
  const auto t_start = std::chrono::steady_clock::now();
  const auto seconds = [&] {   // wall-clock of this point's legs so far
    return (leg.from ? leg.from->run.seconds_total : 0.0) +
           std::chrono::duration<double>(std::chrono::steady_clock::now() - t_start).count();
  };
  Result r;
  try {
    if (hook) hook->enter("train");
    r = trained(p, cancel, leg, stopped, live);
  } catch (const Cancelled&) {
    return cancelled("the landscape measurements");
  } catch (const std::exception& e) {
    return failed_result(e.what());
  }
  if (r.status == Status::ok && r.steps_done < p.steps) {   // stopped at a rung: analysed when it ends
    r.seconds_total = stopped->run.seconds_total = seconds();
    return r;
  }
  if (r.status == Status::ok && p.analysis) {
    if (live) live->analysing.store(true, std::memory_order_relaxed);
    try {
      if (hook) hook->enter("analysis");
      Analysis a = analyse(p, r, cancel);
      r.merge(std::move(a));
      r.analysis_status = AnalysisStatus::ok;
    } catch (const Cancelled&) {   // nothing of the point is kept: the driver recomputes it
      return cancelled("the analysis");
    } catch (const std::exception& e) {   // the training stays; no half-finished analysis
      r.analysis_status = AnalysisStatus::failed;
      r.analysis_message = e.what();
    }
  }
  r.seconds_total = seconds();
  return r;
}

}  // namespace icl
