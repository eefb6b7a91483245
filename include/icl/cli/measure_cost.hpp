#pragma once
// --dry-run --measure: the cost estimate checked on this core.  The estimate counts FLOPs at one nominal
// rate (sweep/grid.cpp); the rate a model really reaches depends on its shape and on the core, so a few
// combinations drawn in proportion to their share of the estimate (Summary::sampled) train a few steps
// here.  The mean of their measured / estimated seconds per step estimates the cost-weighted scale of the
// whole grid (unbiased for a draw with replacement; without, close to it for a few draws among many).  A
// small grid (Summary::exhaustive) is timed whole: the scale and the analyses' share are then exact sums.
#include <string>
#include <vector>

#include "icl/sweep/grid.hpp"

namespace icl {

struct MeasuredCost {
  struct Row {
    std::string at;                      // the combination's varying options
    double estimated_step = 0, measured_step = 0;   // seconds per training step
    double share = 0;                    // of the whole estimate
    double analysis = 0;                 // seconds of its analysis
  };
  std::vector<Row> rows;
  double scale = 1;     // measured / estimated seconds per step, over the whole grid
  double total = 0;     // seconds on this core for the whole grid
  double analysis_share = 0;   // the analyses' time over the training's, the whole grid (estimated)
};
MeasuredCost measure_cost(const sweep::Summary& s);

// "AMD EPYC 9B14" (/proc/cpuinfo's model name), or "this CPU".
std::string cpu_name();

}  // namespace icl
