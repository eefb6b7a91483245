#include "icl/core/run_point.hpp"

#include <chrono>
#include <exception>

#include "icl/core/analysis.hpp"
#include "icl/core/copy.hpp"
#include "icl/core/landscape.hpp"
#include "icl/core/train.hpp"

namespace icl {

Result run_point(const Point& p, const std::atomic<bool>* cancel, StageHook* hook) {
  const auto t_start = std::chrono::steady_clock::now();
  Result r;
  try {
    if (hook) hook->enter("train");
    // Measurements along the trajectory: [A24]'s landscape (lsa) or [VO23]'s copy analysis (classic tokens).
    Landscape landscape(p);
    if (copy_applies(p)) {
      CopyCurve copy(p);
      static_cast<Trained&>(r) = train(p, cancel, &copy);
      r.merge(copy.take());
    } else {
      static_cast<Trained&>(r) = train(p, cancel, landscape.on() ? &landscape : nullptr);
      r.merge(landscape.take());
    }
  } catch (const std::exception& e) {
    return failed_result(e.what());
  }
  if (r.status == Status::ok && p.analysis) {
    try {
      if (hook) hook->enter("analysis");
      r.merge(analyse(p, r));
      r.analysis_status = AnalysisStatus::ok;
    } catch (const std::exception& e) {   // the training stays; no half-finished analysis
      r.analysis_status = AnalysisStatus::failed;
      r.analysis_message = e.what();
    }
  }
  r.seconds_total = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_start).count();
  return r;
}

}  // namespace icl
