#include "icl/sweep/grid.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <set>

#include "icl/core/options.hpp"
#include "icl/core/params.hpp"
#include "icl/core/rng.hpp"
#include "icl/core/train.hpp"

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
  return s;
}

uint64_t spec_hash(const std::string& canonical) {
  uint64_t h = 0x243f6a8885a308d3ULL;
  for (unsigned char c : canonical) h = mix64(h ^ c);
  return h;
}

double estimate_seconds(const Point& p) {
  const double per_task = model_flops_per_task(p);
  const double evals = static_cast<double>(p.steps / p.eval_every + 2) * p.eval_tasks * per_task / 3;
  const double analysis = p.analysis ? 40000.0 * per_task / 3 + 2e5 * p.d * p.d : 0.0;
  // Landscape (landscape.hpp): per measurement 2 #params + 2 gradients on the fixed set and 48 batches
  // for the gradient noise, in double (about twice the float cost).
  const double measurements = p.landscape_every > 0 ? std::ceil(static_cast<double>(p.steps) / p.landscape_every)
                                                    : static_cast<double>(p.landscape.size());
  const double landscape = measurements * 2 * per_task *
                           ((2.0 * ParamLayout(p).size() + 2) * p.hessian_tasks + 48.0 * p.batch);
  return (per_task * p.batch * static_cast<double>(p.steps) + evals + analysis + landscape) / kNominalFlops + 0.01;
}

bool expand(const Spec& spec, Grid* grid, std::vector<std::string>* errors) {
  errors->clear();
  *grid = Grid{};
  auto entry = [&](const std::string& name) -> const SpecEntry* {
    for (const SpecEntry& e : spec.entries)
      if (e.option == name) return &e;
    return nullptr;
  };
  if (spec.repeats < 1) errors->push_back("'repeats' = '" + std::to_string(spec.repeats) + "': must be >= 1");
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
      }
  }
  // Axes: zip groups first take their options; every other listed option is an axis of its own.
  std::set<std::string> zipped;
  std::vector<Axis> axes;
  for (const auto& z : spec.zips) {
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
    axes.push_back(a);
  }
  if (!errors->empty()) return false;
  for (Axis& a : axes)
    for (size_t k = 0; k < entry(a.options[0])->values.size(); ++k) {
      std::vector<std::string> row;
      for (const std::string& o : a.options) row.push_back(entry(o)->values[k]);
      a.values.push_back(row);
    }
  std::vector<Axis> all;
  for (const SpecEntry& e : spec.entries) {
    if (zipped.count(e.option)) {
      for (const Axis& a : axes)   // a zip group sits where its first option appears
        if (a.options[0] == e.option) all.push_back(a);
      continue;
    }
    Axis a;
    a.options = {e.option};
    for (const std::string& v : e.values) a.values.push_back({v});
    all.push_back(a);
  }
  grid->axes = all;

  // The product, first axis slowest, then replicas.
  size_t combos = 1;
  for (const Axis& a : all) combos *= a.values.size();
  if (combos * spec.repeats > 10000000) {
    errors->push_back("the grid has " + std::to_string(combos * spec.repeats) + " points: more than 10,000,000");
    return false;
  }
  std::vector<size_t> pos(all.size(), 0);
  for (size_t c = 0; c < combos; ++c) {
    size_t rest = c;
    for (size_t k = all.size(); k-- > 0;) {
      pos[k] = rest % all[k].values.size();
      rest /= all[k].values.size();
    }
    Point p;
    for (size_t k = 0; k < all.size(); ++k)
      for (size_t j = 0; j < all[k].options.size(); ++j) point_set(p, all[k].options[j], all[k].values[pos[k]][j]);
    for (const std::string& why : point_validate(p)) {
      std::string at;
      for (size_t k = 0; k < all.size(); ++k)
        for (size_t j = 0; j < all[k].options.size(); ++j) at += (at.empty() ? "" : ", ") + all[k].options[j] + "=" + all[k].values[pos[k]][j];
      errors->push_back("grid point (" + at + "): " + why);
      if (errors->size() >= 20) return false;
    }
    for (int r = 0; r < spec.repeats; ++r) {
      const int64_t index = static_cast<int64_t>(grid->points.size());
      const uint64_t key = static_cast<uint64_t>(spec.seeds_per_replica ? r : index);
      p.seed = rng_key(spec.sweep_seed, Stream::init, key) >> 1;   // < 2^63: an int64 column
      grid->points.push_back(p);
      grid->replica.push_back(r);
      grid->cost.push_back(estimate_seconds(p));
    }
  }
  if (!errors->empty()) return false;
  grid->order.resize(grid->points.size());
  std::iota(grid->order.begin(), grid->order.end(), 0);
  std::stable_sort(grid->order.begin(), grid->order.end(),
                   [&](int64_t a, int64_t b) { return grid->cost[a] > grid->cost[b]; });
  return true;
}

}  // namespace icl::sweep
