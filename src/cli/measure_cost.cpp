#include "icl/cli/measure_cost.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>

#include "icl/analysis/analysis.hpp"
#include "icl/train/train.hpp"

namespace icl {
namespace {

// Seconds per training step of p on this core over `steps` steps: no analysis, no observers, a small
// evaluation set (the evaluations are outside seconds_train).  NaN when no step was taken.
double seconds_per_step(Point q, int64_t steps) {
  q.steps = steps;
  q.eval_every = steps;
  q.eval_tasks = std::min(q.eval_tasks, 256);
  q.analysis = false;
  q.landscape.clear();
  q.landscape_every = 0;
  const Trained t = train(q);
  return t.steps_done > 0 ? t.seconds_train / static_cast<double>(t.steps_done) : std::nan("");
}

// Seconds of p's analysis on this core after 2 training steps (its cost does not depend on the weights'
// values); 0 without analysis, NaN when the steps failed.
double analysis_seconds(Point q) {
  if (!q.analysis) return 0.0;
  q.steps = std::min<int64_t>(2, q.steps);
  q.eval_every = q.steps;
  q.landscape.clear();
  q.landscape_every = 0;
  const Trained t = train(q);
  if (t.status != Status::ok) return std::nan("");
  const auto t0 = std::chrono::steady_clock::now();
  analyse(q, t);
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

MeasuredCost measure_cost(const sweep::Summary& s) {
  MeasuredCost m;
  double ratio = 0, cost = 0, analysis = 0, training = 0;
  for (const sweep::Summary::Sampled& c : s.sampled) {
    const double first = seconds_per_step(c.point, std::min<int64_t>(2, c.point.steps));   // warm, and a first rate
    if (!(first > 0)) continue;
    const int64_t steps = std::clamp<int64_t>(std::llround(0.5 / first), 3, c.point.steps);   // about half a second
    MeasuredCost::Row r{c.at, sweep::estimate_step_seconds(c.point), seconds_per_step(c.point, steps),
                        c.cost * (static_cast<double>(s.points) / s.combinations) / s.total_cost};
    if (!(r.measured_step > 0)) continue;
    r.analysis = analysis_seconds(c.point);
    // Sums over the grid's points: a sample drawn in proportion to cost weighs 1 / its cost (so the scale
    // is the mean of the ratios); every combination (exhaustive) weighs the same (so the scale is their
    // cost-weighted mean).
    const double w = s.exhaustive ? 1.0 : 1.0 / c.cost;
    ratio += w * c.cost * r.measured_step / r.estimated_step;
    cost += w * c.cost;
    analysis += w * r.analysis;
    training += w * r.measured_step * static_cast<double>(c.point.steps);
    m.rows.push_back(r);
  }
  if (m.rows.empty()) return m;
  m.scale = ratio / cost;
  m.total = s.total_cost * m.scale;
  m.analysis_share = analysis / training;
  return m;
}

std::string cpu_name() {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("model name", 0) == 0 && line.find(':') != std::string::npos) return line.substr(line.find(':') + 2);
  return "this CPU";
}

}  // namespace icl
