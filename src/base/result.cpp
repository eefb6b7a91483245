#include "icl/base/result.hpp"

#include <limits>

#include "icl/base/check.hpp"

namespace icl {

const char* status_name(Status s) {
  switch (s) {
    case Status::ok: return "ok";
    case Status::diverged: return "diverged";
    case Status::failed: return "failed";
    case Status::pending: return "pending";
    case Status::cancelled: return "cancelled";
    case Status::pruned: return "pruned";
  }
  return "?";
}

const char* analysis_status_name(AnalysisStatus s) {
  switch (s) {
    case AnalysisStatus::skipped: return "skipped";
    case AnalysisStatus::ok: return "ok";
    case AnalysisStatus::failed: return "failed";
  }
  return "?";
}

void Analysis::merge(Analysis&& other) {
  for (auto& [name, v] : other.metrics) ICL_CHECK(metrics.emplace(name, v).second);
  for (auto& [name, v] : other.series) ICL_CHECK(series.emplace(name, std::move(v)).second);
}

Result pending_result() {
  Result r;
  const double nan = std::numeric_limits<double>::quiet_NaN();
  r.status = Status::pending;
  r.steps_done = -1;   // unknown: stored as NaN
  r.test_loss = r.train_loss = nan;
  r.seconds_train = r.seconds_eval = r.seconds_total = r.flops_per_step = nan;
  return r;
}

Result failed_result(const std::string& why) {
  Result r = pending_result();
  r.status = Status::failed;
  r.message = why;
  return r;
}

}  // namespace icl
