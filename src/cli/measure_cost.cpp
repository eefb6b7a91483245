#include "icl/cli/measure_cost.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>

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

}  // namespace

MeasuredCost measure_cost(const sweep::Summary& s) {
  MeasuredCost m;
  double sum = 0;
  for (const sweep::Summary::Sampled& c : s.sampled) {
    const double first = seconds_per_step(c.point, std::min<int64_t>(2, c.point.steps));   // warm, and a first rate
    if (!(first > 0)) continue;
    const int64_t steps = std::clamp<int64_t>(std::llround(0.5 / first), 3, c.point.steps);   // about half a second
    MeasuredCost::Row r{c.at, sweep::estimate_step_seconds(c.point), seconds_per_step(c.point, steps),
                        c.cost * (static_cast<double>(s.points) / s.combinations) / s.total_cost};
    if (!(r.measured_step > 0)) continue;
    sum += r.measured_step / r.estimated_step;
    m.rows.push_back(r);
  }
  if (m.rows.empty()) return m;
  m.scale = sum / static_cast<double>(m.rows.size());
  m.total = s.total_cost * m.scale;
  return m;
}

std::string cpu_name() {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("model name", 0) == 0 && line.find(':') != std::string::npos) return line.substr(line.find(':') + 2);
  return "this CPU";
}

}  // namespace icl
