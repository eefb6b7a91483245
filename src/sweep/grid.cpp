#include "icl/sweep/grid.hpp"
#include "icl/sweep/halving.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <set>

#include "icl/core/options.hpp"
#include "icl/core/params.hpp"
#include "icl/core/rng.hpp"
#include "icl/core/train.hpp"
#include "icl/core/model.hpp"
#include "icl/core/objective.hpp"

namespace icl::sweep {
namespace {
constexpr double kNominalFlops = 5e10;   // a conservative single-core rate for estimates
}

std::string canonical_text(const Spec& spec) {
  std::string s;
  for (const SpecEntry& e : spec.entries) {
    s += e.option + " =";
    for (const std::string& v : e.values) s += " " + v;
    s += "\n";
  }
  for (const auto& z : spec.zips) {
    s += "zip =";
    for (const std::string& o : z) s += " " + o;
    s += "\n";
  }
  s += "repeats = " + std::to_string(spec.repeats) + "\n";
  s += "sweep_seed = " + std::to_string(spec.sweep_seed) + "\n";
  if (spec.seeds_per_replica) s += "seeds = replica\n";
  if (spec.halving.on()) {
    s += "search =";
    for (const std::string& a : spec.halving.search) s += " " + a;
    s += "\nrungs =";
    for (int64_t r : spec.halving.rungs) s += " " + std::to_string(r);
    s += "\nreduction = " + std::to_string(spec.halving.reduction) + "\nrung_metric = " + spec.halving.metric + "\n";
  }
  return s;
}

uint64_t spec_hash(const std::string& canonical) {
  uint64_t h = 0x243f6a8885a308d3ULL;
  for (unsigned char c : canonical) h = mix64(h ^ c);
  return h;
}

double estimate_seconds(const Point& p) {
  const double per_task = flops_per_task(p);
  const double evals = static_cast<double>(eval_record_bound(p)) * p.eval_tasks * per_task / 3;
  const double analysis = p.analysis ? 40000.0 * per_task / 3 + 2e5 * p.d * p.d : 0.0;
  // Landscape (landscape.hpp): per measurement 2 #params + 2 gradients on the fixed set and 48 batches
  // for the gradient noise, in double (about twice the float cost).
  const double measurements = p.landscape_every > 0 ? std::ceil(static_cast<double>(p.steps) / p.landscape_every)
                                                    : static_cast<double>(p.landscape.size());
  const double D = p.d + 1.0, bound = 2.0 * p.layers * p.heads * D * D;   // ParamLayout counts in int: only when it fits
  const double params = bound <= 2147483647.0 ? ParamLayout(p).size() : bound;
  const double landscape = measurements * 2 * per_task * ((2.0 * params + 2) * p.hessian_tasks + 48.0 * p.batch);
  return (per_task * p.batch * static_cast<double>(p.steps) + evals + analysis + landscape) / kNominalFlops + 0.01;
}

bool only_multiplies(const std::string& option) {
  static const std::set<std::string> names = {"w_prior", "norm", "act_clip", "optimizer", "lr", "beta1", "beta2",
                                              "eps", "momentum", "weight_decay", "clip", "clip_mode", "refresh",
                                              "init", "init_scale", "diverge_factor", "seed", "ridge_lambda"};
  return names.count(option) > 0;
}

namespace {

// Checks every value on its own and builds the axes (zip groups where their first option appears).
bool build_axes(const Spec& spec, std::vector<Axis>* out, std::vector<std::string>* errors) {
  auto entry = [&](const std::string& name) -> const SpecEntry* {
    for (const SpecEntry& e : spec.entries)
      if (e.option == name) return &e;
    return nullptr;
  };
  if (spec.repeats < 1 || spec.repeats > kMaxPoints)
    errors->push_back("'repeats' = '" + std::to_string(spec.repeats) + "': must be an integer in [1, " +
                      std::to_string(kMaxPoints) + "]");
  for (const SpecEntry& e : spec.entries) {
    if (e.option == "seed")
      errors->push_back(e.where + ": option 'seed' cannot be set in a sweep: each point's seed derives from "
                        "sweep_seed and its index (use sweep_seed, repeats for several seeds, seeds = replica to share them)");
    else if (!find_option(e.option))
      errors->push_back(e.where + ": unknown option '" + e.option + "'");
    else if (e.values.empty())
      errors->push_back(e.where + ": option '" + e.option + "' has no value");
    else
      for (const std::string& v : e.values) {   // each value on its own, before any combination
        Point p;
        const std::string why = point_set(p, e.option, v);
        if (!why.empty()) errors->push_back(e.where + ": " + why);
        if (errors->size() >= 20) return false;
      }
  }
  std::set<std::string> zipped;
  std::vector<Axis> zips;
  for (const auto& z : spec.zips) {
    if (z.empty()) {
      errors->push_back("'zip' = '': a zip group needs the names of the options it advances together");
      continue;
    }
    Axis a;
    size_t len = 0;
    for (const std::string& o : z) {
      const SpecEntry* e = entry(o);
      if (!e) { errors->push_back("zip: option '" + o + "' is not set in the spec"); continue; }
      if (!zipped.insert(o).second) { errors->push_back("zip: option '" + o + "' is in two zip groups"); continue; }
      if (a.options.empty()) len = e->values.size();
      else if (e->values.size() != len)
        errors->push_back(e->where + ": zip of '" + a.options[0] + "' and '" + o + "' needs lists of equal length (" +
                          std::to_string(len) + " and " + std::to_string(e->values.size()) + ")");
      a.options.push_back(o);
    }
    zips.push_back(a);
  }
  if (!errors->empty()) return false;
  for (Axis& a : zips)
    for (size_t k = 0; k < entry(a.options[0])->values.size(); ++k) {
      std::vector<std::string> row;
      for (const std::string& o : a.options) row.push_back(entry(o)->values[k]);
      a.values.push_back(row);
    }
  out->clear();
  for (const SpecEntry& e : spec.entries) {
    if (zipped.count(e.option)) {
      for (const Axis& a : zips)
        if (!a.options.empty() && a.options[0] == e.option) out->push_back(a);
      continue;
    }
    Axis a;
    a.options = {e.option};
    for (const std::string& v : e.values) a.values.push_back({v});
    out->push_back(a);
  }
  return true;
}

// The number of points, or an error when it exceeds kMaxPoints (the product is formed in long double:
// 8 axes of 256 values are 2^64 points, not 0).
bool count_points(const std::vector<Axis>& axes, int repeats, int64_t* points, std::vector<std::string>* errors) {
  long double n = repeats;
  for (const Axis& a : axes) n *= static_cast<long double>(a.values.size());
  if (n > kMaxPoints) {
    char buf[160];
    std::snprintf(buf, sizeof buf, n < 1e15L ? "%.0Lf" : "%.3Lg", n);
    std::string sizes;
    for (const Axis& a : axes)
      if (a.values.size() > 1) sizes += std::to_string(a.values.size()) + " x ";
    errors->push_back("the grid has " + std::string(buf) + " points (" + sizes + std::to_string(repeats) +
                      " repeats): more than the limit of " + std::to_string(kMaxPoints) + " points per sweep");
    return false;
  }
  *points = static_cast<int64_t>(n);
  return true;
}

// Calls f(point, at) once for every distinct combination of the axes in `walk` (first slowest), the
// other axes at their first value; `at` names the walked options' values.  Stops when f returns false.
template <class F>
void for_each_combination(const std::vector<Axis>& axes, const std::vector<size_t>& walk, F f) {
  Point p;
  for (const Axis& a : axes)
    for (size_t j = 0; j < a.options.size(); ++j) point_set(p, a.options[j], a.values[0][j]);
  std::vector<size_t> pos(walk.size(), 0);
  auto at = [&] {
    std::string s;
    for (size_t w = 0; w < walk.size(); ++w)
      for (size_t j = 0; j < axes[walk[w]].options.size(); ++j)
        s += (s.empty() ? "" : ", ") + axes[walk[w]].options[j] + "=" + axes[walk[w]].values[pos[w]][j];
    return s;
  };
  for (;;) {
    if (!f(p, at)) return;
    size_t w = walk.size();
    while (w-- > 0) {   // the odometer: the last walked axis fastest; reset only what changed
      const Axis& a = axes[walk[w]];
      pos[w] = pos[w] + 1 == a.values.size() ? 0 : pos[w] + 1;
      for (size_t j = 0; j < a.options.size(); ++j) point_set(p, a.options[j], a.values[pos[w]][j]);
      if (pos[w] != 0) break;
    }
    if (w == static_cast<size_t>(-1)) return;
  }
}

}  // namespace

bool summarise(const Spec& spec, Summary* summary, std::vector<std::string>* errors) {
  errors->clear();
  *summary = Summary{};
  if (!build_axes(spec, &summary->axes, errors)) return false;
  const std::vector<Axis>& axes = summary->axes;
  if (!count_points(axes, spec.repeats, &summary->points, errors)) return false;
  // Walk the axes that matter (every one of them, so rules on fixed values are checked too); each
  // combination stands for `weight` points.
  std::vector<size_t> walk;
  double combos = 1;
  for (size_t k = 0; k < axes.size(); ++k) {
    bool matters = false;
    for (const std::string& o : axes[k].options) matters = matters || !only_multiplies(o);
    if (matters) {
      walk.push_back(k);
      combos *= static_cast<double>(axes[k].values.size());
    }
  }
  const double weight = static_cast<double>(summary->points) / combos;
  for_each_combination(axes, walk, [&](const Point& p, auto at) {
    for (const std::string& why : point_validate(p)) errors->push_back("grid point (" + at() + "): " + why);
    if (errors->size() >= 20) return false;
    const double cost = estimate_seconds(p);
    summary->total_cost += cost * weight;
    summary->longest_cost = std::max(summary->longest_cost, cost);
    const PointMemory m = estimate_memory(p);
    if (m.total > summary->largest_memory.total) {
      summary->largest_memory = m;
      summary->largest_memory_at = at();
    }
    if (spec.max_point_bytes > 0 && m.total > spec.max_point_bytes) {
      errors->push_back("grid point (" + at() + "): needs about " + format_bytes(m.total) + " of memory (most of it the " +
                        m.largest() + "), more than max_point_memory = " + format_bytes(spec.max_point_bytes) + " (" +
                        spec.max_point_source + ")");
      if (errors->size() >= 20) return false;
    }
    return true;
  });
  return errors->empty();
}

bool expand(const Spec& spec, Grid* grid, std::vector<std::string>* errors) {
  *grid = Grid{};
  Summary summary;
  if (!summarise(spec, &summary, errors)) return false;
  const std::vector<Axis>& all = summary.axes;
  grid->axes = all;

  // The product, first axis slowest, then replicas.
  std::vector<size_t> every(all.size());
  std::iota(every.begin(), every.end(), size_t{0});
  grid->points.reserve(summary.points);
  grid->replica.reserve(summary.points);
  grid->cost.reserve(summary.points);
  for_each_combination(all, every, [&](Point p, auto) {
    for (int r = 0; r < spec.repeats; ++r) {
      const int64_t index = static_cast<int64_t>(grid->points.size());
      const uint64_t key = static_cast<uint64_t>(spec.seeds_per_replica ? r : index);
      p.seed = rng_key(spec.sweep_seed, Stream::init, key) >> 1;   // < 2^63: an int64 column
      grid->points.push_back(p);
      grid->replica.push_back(r);
      grid->cost.push_back(estimate_seconds(p));
    }
    return true;
  });
  grid->order.resize(grid->points.size());
  std::iota(grid->order.begin(), grid->order.end(), 0);
  std::stable_sort(grid->order.begin(), grid->order.end(),
                   [&](int64_t a, int64_t b) { return grid->cost[a] > grid->cost[b]; });
  return !spec.halving.on() || check_halving(spec, *grid, errors);
}

}  // namespace icl::sweep
