#pragma once
// The two loops of `icl-sweep run` between prolog and epilog (run_cmd.cpp), one per rank:
//   train_points   every point to the end, from the shared longest-first counter (parallel.hpp)
//   train_halving  successive halving (sweep/halving.hpp): legs between rungs handed out by a scheduler
//                  on rank 0 as they become runnable
// Both append every finished point (and every rung checkpoint) to the rank's own log at once and stop
// on `stop` (a signal) or an I/O error on any rank.
#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "icl/cli/sweep_output.hpp"
#include "icl/run/run_point.hpp"
#include "icl/sweep/grid.hpp"

namespace icl::cli {

struct LoopOutcome {
  int64_t trained = 0;      // points (legs, with halving) this rank trained
  bool io_failed = false;   // its log failed: the whole sweep stops
};

// Test hook (ICL_SWEEP_FAULTS="train:3,7 analysis:5"): those points' training or analysis throws, to
// exercise the failure paths of a real sweep.
struct InjectedFaults : StageHook {
  std::vector<int64_t> train, analysis;
  int64_t point = -1;
  explicit InjectedFaults(const char* spec);
  bool any() const { return !train.empty() || !analysis.empty(); }
  void enter(const char* stage) override;
};

// `live_every`: seconds between rewrites of the rank's live file (live_view.hpp; 0 = none).
LoopOutcome train_points(const sweep::Grid& grid, const SweepOutput& output, const std::vector<uint8_t>& finished_before,
                         const std::atomic<bool>& stop, double live_every);

// Rank 0 reads the logs (rung records and finished points) and replays the decisions before handing out
// work; `pruned_now` counts the points it pruned from decisions the logs allowed but had not recorded.
LoopOutcome train_halving(const sweep::Spec& spec, const sweep::Grid& grid, const SweepOutput& output,
                          const std::atomic<bool>& stop, double live_every);

}  // namespace icl::cli
