#include "icl/sweep/grid.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <numeric>
#include <random>
#include <set>

#include "icl/analysis/analysis.hpp"
#include "icl/base/rng.hpp"
#include "icl/model/gram.hpp"
#include "icl/model/model.hpp"
#include "icl/model/params.hpp"
#include "icl/run/options.hpp"
#include "icl/train/objective.hpp"
#include "icl/train/train.hpp"

namespace icl::sweep {
namespace {
constexpr double kNominalFlops = 5e10;   // a conservative single-core rate for estimates

// The analysis's cost model (analysis.cpp, AnalysisSets), in FLOPs at the same nominal rate as training.
// A model forward pass is a third of flops_per_task's forward + backward (the linear model's lean forwards compute
// less: model.hpp, Next; an upper bound); the references (GD, GD++) are the one-head linear model of K layers
// (model_flops_per_task).
double reference_flops(const Point& p, int K, int n) {   // forward + backward, per task
  ModelShape s;
  s.d = p.d;
  s.n = n;
  s.layers = K;
  s.heads = 1;
  return model_flops_per_task(s);
}

// Per task of a set at context length m (task_set and the model runs of analysis.cpp): the trained model and
// two references forward, each task's spectrum in three bases (Gram matrix 2 m d^2 and a symmetric
// eigensolver ~ 10 d^3 each) and, with the pool, dMMSE against all M pool tasks (pool^T X and pool^T x_q:
// 2 M (m+1) d, the residuals 2 M m, the log-posterior and its exponential ~ 30 M).
double set_task_flops(const Point& p, int m, bool with_pool) {
  Point q = p;
  q.n = m;
  const double d = p.d, M = static_cast<double>(p.task_pool);
  const double spectra = 3 * (2.0 * m * d * d + 10 * d * d * d);
  const double dmmse = with_pool && M > 0 ? 2 * M * (m + 1.0) * d + 2 * M * m + 30 * M : 0.0;
  return flops_per_task(q) / 3 + 2 * reference_flops(p, p.layers, m) / 3 + spectra + dmmse;
}

// context_curve's work per task at length m (analysis.cpp): the token Gram's update, the spectra of its sums
// in up to three bases, dMMSE from the sums (M d^2), GD++ and the trained model from the Gram (O(L H D^3),
// gram.hpp) or, for a model not of that form (softmax or mixed attention, a clip, the transformer), run
// on the prefix of length m.
double curve_task_flops(const Point& p, int m) {
  const double d = p.d, D = d + 1, M = static_cast<double>(p.task_pool), L = p.layers, H = p.heads;
  const double sums = 2 * D * D + 3 * (30 * d * d * d) + (M > 0 ? 2 * M * d * d + 30 * M : 0.0) + L * 6 * D * D * D;
  Point q = p;
  q.n = m;
  return sums + (gram_form(p) ? L * H * 6 * D * D * D : flops_per_task(q) / 3);
}

// sum_{m=1}^{C} f(m) for f a polynomial of degree <= 2 in m (every cost above is: scores are m x (m+1)),
// in closed form from f(1), f(2), f(3), so context_curve = 2^20 costs three evaluations.
template <class F>
double sum_over_lengths(F f, double C) {
  if (C <= 3) {
    double s = 0;
    for (int m = 1; m <= C; ++m) s += f(m);
    return s;
  }
  const double f1 = f(1), f2 = f(2), f3 = f(3);
  const double c = (f3 - 2 * f2 + f1) / 2, b = f2 - f1 - 3 * c, a = f1 - b - c;   // f(m) = a + b m + c m^2
  return a * C + b * C * (C + 1) / 2 + c * C * (C + 1) * (2 * C + 1) / 6;
}

// analyse(): the tuning (16,000 tasks' spectra and ~ 700 + 100 L closed-form evaluations of ~ 10 d each;
// GD++ on the spectra of 12,000 more tasks (gdpp.hpp), for every K = 1..L a 9 x 9 grid and ~ 300 BFGS
// evaluations of ~ 20 K d each on 2,000 tasks, 3 validation passes on 10,000), the evaluation set (the
// model and three references with their input gradients, the per-K references, spectra and dMMSE,
// Newton's 65 steps), the pool's evaluation set, 8 noise levels and 8 out-of-distribution sets of 1,000
// tasks (3 at lengths n/2, n, 2n), the roll-out, and context_curve's 2,000 tasks at every length
// 1..n_test: linear in n_test, but for a model not of the Gram form (quadratic for a clipped linear model,
// cubic for softmax attention or the transformer).
double analysis_flops(const Point& p) {
  const int L = p.layers, n = p.n;
  const double d = p.d, E = p.eval_tasks, per_task = flops_per_task(p), ref = reference_flops(p, L, n);
  const double spectra = 3 * (2.0 * n * d * d + 10 * d * d * d);
  const double sum_ref = ref * (L + 1) / 2;   // sum over K = 1..L of reference_flops(p, K, n): linear in K
  const double sum_K = L * (L + 1) / 2.0;   // sum over K = 1..L of K
  const double gdpp = (AnalysisSets::tune_model + AnalysisSets::gdpp_validation) * spectra / 3 +
                      ((81 + 300.0) * AnalysisSets::tune_model + 3.0 * AnalysisSets::gdpp_validation) * 20 * d * sum_K;
  const double tuning = AnalysisSets::tune * (spectra + 10 * d * (700 + 100.0 * L)) + gdpp;
  const double dmmse = p.task_pool > 0 ? set_task_flops(p, n, true) - set_task_flops(p, n, false) : 0.0;
  const double evaluation = E * (per_task + 3 * ref + 2 * sum_ref / 3 + spectra + dmmse + 10 * d * (65 + L));
  const double pool = p.task_pool > 0 ? E * set_task_flops(p, n, true) : 0.0;
  const double noise = 8.0 * AnalysisSets::noise * set_task_flops(p, n, false);
  // Each set through the trained model and its three references (GD, GD++, tied GD++), forward only.
  double ood = OodScales::sets * AnalysisSets::ood * (per_task + 3 * ref) / 3;
  for (int m : {std::max(1, n / 2), n, 2 * n}) {
    Point q = p;
    q.n = m;
    ood += AnalysisSets::ood * (flops_per_task(q) + 3 * reference_flops(p, L, m)) / 3;
  }
  double rollout = 0;
  if (p.rollout > 0) {
    Point q = p;
    q.layers = p.rollout;
    rollout = E * (flops_per_task(q) + reference_flops(p, p.rollout, n)) / 3;
  }
  const double curve = p.context_curve > 0 ? AnalysisSets::context * sum_over_lengths([&](int m) {
    return curve_task_flops(p, m);
  }, p.context_curve) : 0.0;
  return tuning + evaluation + pool + noise + ood + rollout + curve;
}

}  // namespace

double estimate_seconds(const Point& p) {
  const double per_task = flops_per_task(p);
  const double evals = static_cast<double>(eval_record_bound(p)) * p.eval_tasks * per_task / 3;
  const double analysis = p.analysis ? analysis_flops(p) : 0.0;
  // Landscape (landscape.hpp): per measurement 2 #params + 2 gradients on the fixed set and 48 batches
  // for the gradient noise, in double (about twice the float cost).
  const double measurements = p.landscape_every > 0 ? std::ceil(static_cast<double>(p.steps) / p.landscape_every)
                                                    : static_cast<double>(p.landscape.size());
  const double D = p.d + 1.0, bound = 2.0 * p.layers * p.heads * D * D;   // ParamLayout counts in int: only when it fits
  const double params = bound <= 2147483647.0 ? ParamLayout(p).size() : bound;
  const double train_per_task = train_flops_per_task(p);   // loss_grad's, the landscape's gradients too
  const double landscape = measurements * 2 * train_per_task * ((2.0 * params + 2) * p.hessian_tasks + 48.0 * p.batch);
  const double training = train_per_task * p.batch * static_cast<double>(p.steps);
  return (training + evals + analysis + landscape) / kNominalFlops + 0.01;
}

double estimate_step_seconds(const Point& p) { return train_flops_per_task(p) * p.batch / kNominalFlops; }

bool only_multiplies(const std::string& option) {
  static const std::set<std::string> names = {"w_prior", "norm", "act_clip", "optimizer", "lr", "beta1", "beta2",
                                              "eps", "momentum", "weight_decay", "clip", "clip_mode", "refresh",
                                              "init", "init_scale", "diverge_factor", "seed", "ridge_lambda"};
  return names.count(option) > 0;
}

namespace {

// Every value of an axis once, compared as the point holds it (0.001 and 1e-3 are one value; a zip group's
// values as a row): a value listed twice made two grid positions of the same points, and with seeds = replica
// identical rows, which the report counted as twice the replicas.  More seeds are `repeats`.
bool distinct_values(const Spec& spec, const std::vector<Axis>& axes, std::vector<std::string>* errors) {
  for (const Axis& a : axes) {
    std::map<std::string, size_t> seen;   // canonical row -> its first position
    for (size_t k = 0; k < a.values.size(); ++k) {
      Point p;
      std::string row;
      for (size_t j = 0; j < a.options.size(); ++j) {
        point_set(p, a.options[j], a.values[k][j]);
        row += (j ? ", " : "") + a.options[j] + " = " + find_option(a.options[j])->get(p);
      }
      const auto [at, fresh] = seen.emplace(row, k);
      if (fresh) continue;
      const std::string where = [&] {
        for (const SpecEntry& e : spec.entries)
          if (e.option == a.options[0]) return e.where + ": ";
        return std::string();
      }();
      errors->push_back(where + "option '" + a.options[0] + "'" + (a.options.size() > 1 ? " (zipped)" : "") + ": '" + row +
                        "' is listed twice (values " + std::to_string(at->second + 1) + " and " + std::to_string(k + 1) +
                        "): each value once; more seeds of a point are `repeats`");
      break;
    }
  }
  return errors->empty();
}

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
  return distinct_values(spec, *out, errors);
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

namespace {

// Weighted sampling without replacement in one pass: each combination gets key log(u) / weight, u uniform
// in (0, 1) from a fixed stream, and `list` keeps the `keep` largest keys; `at` names one only when kept.
template <class At>
void sample_combination(const Point& p, double cost, double weight, At at, std::mt19937_64& rng, size_t keep,
                        std::vector<Summary::Sampled>* list) {
  const double u = (static_cast<double>(rng() >> 11) + 0.5) * 0x1.0p-53;
  const double key = std::log(u) / std::max(cost * weight, 1e-300);
  auto larger = [](const Summary::Sampled& a, const Summary::Sampled& b) { return a.key > b.key; };
  if (list->size() == keep && key <= list->back().key) return;
  Summary::Sampled s{p, cost, at(), key};
  list->insert(std::upper_bound(list->begin(), list->end(), s, larger), std::move(s));
  if (list->size() > keep) list->pop_back();
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
  summary->combinations = combos;
  summary->exhaustive = combos <= static_cast<double>(Summary::kExhaustive);
  const size_t keep = summary->exhaustive ? Summary::kExhaustive : Summary::kSampled;
  std::mt19937_64 rng(20261126);
  for_each_combination(axes, walk, [&](const Point& p, auto at) {
    for (const std::string& why : point_validate(p)) errors->push_back("grid point (" + at() + "): " + why);
    if (errors->size() >= 20) return false;
    const double cost = estimate_seconds(p);
    summary->total_cost += cost * weight;
    summary->longest_cost = std::max(summary->longest_cost, cost);
    sample_combination(p, cost, weight, at, rng, keep, &summary->sampled);
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

namespace {

uint64_t point_seed(const Grid& g, int64_t i) {
  const uint64_t key = static_cast<uint64_t>(g.seeds_per_replica ? g.replica(i) : i);
  return rng_key(g.sweep_seed, Stream::init, key) >> 1;   // < 2^63: an int64 column
}

void set_axis(Point& p, const Axis& a, size_t at) {
  for (size_t j = 0; j < a.options.size(); ++j) point_set(p, a.options[j], a.values[at][j]);
}

}  // namespace

std::vector<size_t> Grid::position(int64_t i) const {
  std::vector<size_t> pos(axes.size());
  int64_t combination = i / repeats;
  for (size_t k = axes.size(); k-- > 0;) {   // the last axis fastest
    const auto size = static_cast<int64_t>(axes[k].values.size());
    pos[k] = static_cast<size_t>(combination % size);
    combination /= size;
  }
  return pos;
}

Point Grid::point(int64_t i) const {
  Point p = base;   // every axis at its first value: only the others are set
  const std::vector<size_t> pos = position(i);
  for (size_t k = 0; k < axes.size(); ++k)
    if (pos[k] != 0) set_axis(p, axes[k], pos[k]);
  p.seed = point_seed(*this, i);
  return p;
}

Grid::Place Grid::place(const std::string& option) const {
  if (option == "seed") return {0, 0};
  int64_t stride = repeats;
  for (size_t k = axes.size(); k-- > 0;) {
    const auto size = static_cast<int64_t>(axes[k].values.size());
    if (std::find(axes[k].options.begin(), axes[k].options.end(), option) != axes[k].options.end()) return {stride, size};
    stride *= size;
  }
  return {1, 1};   // on no axis: the same in every point
}

void for_each_point(const Grid& grid, const std::function<void(int64_t, const Point&, const std::vector<size_t>&)>& f) {
  Point p;
  std::vector<size_t> pos(grid.axes.size(), 0), changed(grid.axes.size());
  for (size_t k = 0; k < grid.axes.size(); ++k) {
    set_axis(p, grid.axes[k], 0);
    changed[k] = k;
  }
  for (int64_t i = 0; i < grid.count; ++i) {
    if (i > 0 && i % grid.repeats == 0) {   // the next combination: the odometer, last axis fastest
      changed.clear();
      for (size_t k = grid.axes.size(); k-- > 0;) {
        pos[k] = pos[k] + 1 == grid.axes[k].values.size() ? 0 : pos[k] + 1;
        set_axis(p, grid.axes[k], pos[k]);
        changed.push_back(k);
        if (pos[k] != 0) break;
      }
    } else if (i > 0) {
      changed.clear();
    }
    p.seed = point_seed(grid, i);
    f(i, p, changed);
  }
}

bool expand(const Spec& spec, Grid* grid, std::vector<std::string>* errors) {
  *grid = Grid{};
  Summary summary;
  if (!summarise(spec, &summary, errors)) return false;
  grid->axes = summary.axes;
  grid->repeats = spec.repeats;
  grid->sweep_seed = spec.sweep_seed;
  grid->seeds_per_replica = spec.seeds_per_replica;
  grid->count = summary.points;
  for (const Axis& a : grid->axes) set_axis(grid->base, a, 0);
  // Costs: one estimate per combination, shared by its replicas (the seed does not enter it).
  grid->cost.resize(static_cast<size_t>(grid->count));
  double last = 0;
  for_each_point(*grid, [&](int64_t i, const Point& p, const std::vector<size_t>&) {
    if (i % spec.repeats == 0) last = estimate_seconds(p);
    grid->cost[static_cast<size_t>(i)] = last;
  });
  grid->order.resize(grid->cost.size());
  std::iota(grid->order.begin(), grid->order.end(), 0);
  std::stable_sort(grid->order.begin(), grid->order.end(),
                   [&](int64_t a, int64_t b) { return grid->cost[a] > grid->cost[b]; });
  return true;
}

}  // namespace icl::sweep
