#pragma once
// A sweep: the product of option lists, expanded into grid points.  Pure (no MPI, no I/O): the spec is
// parsed from its file by the CLI; here the lists become Points, are validated, costed and ordered.
//   - every option of the table may list values; the grid is the product of the lists, first listed
//     option slowest (spec order), then `repeats` replicas of each combination;
//   - a `zip` group advances its options together (equal lengths) as one axis;
//   - point i's seed is rng_key(sweep_seed, Stream::init, i): it depends on the spec and the index only;
//     with `seeds = replica` it is rng_key(sweep_seed, Stream::init, r) for replica r, the same in every
//     combination (common random numbers: paired comparisons, e.g. Adam vs SGD from the same init).
//   - a grid has at most kMaxPoints points (counted without overflow), and no point may need more memory
//     than spec.max_point_bytes (memory.hpp's estimate).
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "icl/base/point.hpp"
#include "icl/sweep/memory.hpp"

namespace icl::sweep {

inline constexpr int64_t kMaxPoints = 10000000;   // combinations x repeats

struct SpecEntry {
  std::string option;
  std::vector<std::string> values;
  std::string where;   // "FILE:LINE" or "command line", for messages
};

// Successive halving (halving.hpp), on when `search` names axes.
struct HalvingSpec {
  std::vector<std::string> search;   // searched axes: options listed in the spec (a zip group by any of its
                                     // names) or `replica`; the other axes make the conditions
  std::vector<int64_t> rungs;        // steps at which a condition's candidates are compared, increasing
  int reduction = 3;                 // at each rung the best 1/reduction of them (at least one) go on
  std::string metric = "test_loss";  // test_loss (the evaluation loss at the rung) or train_loss
  bool on() const { return !search.empty(); }
};

struct Spec {
  std::vector<SpecEntry> entries;               // in order of appearance; one entry per option
  std::vector<std::vector<std::string>> zips;   // groups of option names advanced together
  int repeats = 1;
  uint64_t sweep_seed = 0;
  bool seeds_per_replica = false;               // `seeds = replica` (default `point`)
  HalvingSpec halving;
  std::string text;                             // the canonical spec (hashed, stored in the output)
  // Points whose memory estimate exceeds this are refused (0: no limit).  Not part of `text`: it never
  // changes a result.  `max_point_source` says where the limit comes from, for messages.
  double max_point_bytes = 0;
  std::string max_point_source;
};

struct Axis {
  std::vector<std::string> options;                // one, or a zip group
  std::vector<std::vector<std::string>> values;    // values[k][j]: option j at position k
};

// The points are never materialised: point(i) builds point i from the axes (mixed radix, first axis
// slowest, then the replica), so a grid costs 16 bytes a point (its cost and its place in the order).
struct Grid {
  std::vector<Axis> axes;
  int repeats = 1;
  uint64_t sweep_seed = 0;
  bool seeds_per_replica = false;
  int64_t count = 0;              // points
  Point base;                     // every axis at its first value
  std::vector<double> cost;       // estimated seconds on one core, per point
  std::vector<int64_t> order;     // point indices, longest first (ties by index)

  int64_t size() const { return count; }
  Point point(int64_t i) const;
  int replica(int64_t i) const { return static_cast<int>(i % repeats); }
  // Point i's position on every axis.
  std::vector<size_t> position(int64_t i) const;
  // Where `option` varies: point i takes value (i / stride) % size of it (size 1: on no axis, the same
  // everywhere; size 0: the seed, different at every point).
  struct Place {
    int64_t stride = 1, size = 1;
    int64_t key(int64_t i) const { return size > 0 ? (i / stride) % size : -1; }
  };
  Place place(const std::string& option) const;
};

// Visits every point of `grid` in index order as f(index, point, changed), building each from the
// previous one: `changed` lists the axes whose value differs from the previous point's (all at 0).
// Linear in the points, whatever their number.
void for_each_point(const Grid& grid, const std::function<void(int64_t, const Point&, const std::vector<size_t>&)>& f);

// What --dry-run shows, computed without materialising the points: every value and every distinct
// combination of the options that enter a rule, the cost or the memory estimate is checked (the other
// axes only multiply), so the errors are those of `expand`.
struct Summary {
  std::vector<Axis> axes;
  int64_t points = 0;
  double total_cost = 0, longest_cost = 0;   // estimated seconds on one core
  double combinations = 0;                   // walked (the options that enter a rule or an estimate); each
                                             // stands for points / combinations points
  PointMemory largest_memory;                // the point with the largest estimate
  std::string largest_memory_at;             // its values of the options that vary, "layers=3, d=10"
  // kSampled combinations drawn in proportion to their share of total_cost (cost x the points each stands
  // for; without replacement, reproducibly): what --dry-run --measure times on this core.  A grid of at most
  // kExhaustive combinations keeps every one (`exhaustive`): a draw in proportion to cost can leave out a
  // combination whose analysis is what costs (task_diversity_m's largest pool: a quarter of its training).
  struct Sampled {
    Point point;
    double cost = 0;
    std::string at;
    double key = 0;   // log(u) / share: the kSampled largest are kept (Efraimidis and Spirakis 2006)
  };
  static constexpr size_t kSampled = 6, kExhaustive = 16;
  bool exhaustive = false;
  std::vector<Sampled> sampled;
};
bool summarise(const Spec& spec, Summary* summary, std::vector<std::string>* errors);

// True for the options that enter neither a cross-option rule (point_validate), nor estimate_seconds,
// nor estimate_memory: summarise does not walk their axes.
bool only_multiplies(const std::string& option);

// Expands and validates (the halving keys are checked by halving.hpp's expand_sweep, which calls this);
// on failure returns false and fills `errors` with messages naming where,
// the option, the value and the rule.
bool expand(const Spec& spec, Grid* grid, std::vector<std::string>* errors);

// Estimated seconds of one point on one core (model FLOPs of training, evaluation and analysis at a
// nominal rate): used to order the work and for --dry-run, never for results.
double estimate_seconds(const Point& p);
// Its training steps' share: steps x estimate_step_seconds(p).
double estimate_step_seconds(const Point& p);

}  // namespace icl::sweep
