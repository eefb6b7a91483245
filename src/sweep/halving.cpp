#include "icl/sweep/halving.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>

#include "icl/analysis/copy.hpp"
#include "icl/base/check.hpp"
#include "icl/run/options.hpp"

namespace icl::sweep {
namespace {

bool searched(const HalvingSpec& h, const Axis& a) {
  for (const std::string& o : a.options)
    if (std::find(h.search.begin(), h.search.end(), o) != h.search.end()) return true;
  return false;
}

bool searched_replica(const HalvingSpec& h) { return std::find(h.search.begin(), h.search.end(), "replica") != h.search.end(); }

std::string listed(const std::vector<int64_t>& v) {
  std::string s;
  for (int64_t x : v) s += (s.empty() ? "" : " ") + std::to_string(x);
  return s;
}

}  // namespace

Conditions conditions(const Spec& spec, const Grid& grid) {
  Conditions c;
  c.of_point.resize(static_cast<size_t>(grid.size()));
  std::map<std::vector<int64_t>, int64_t> id;
  std::vector<int64_t> key;
  for (int64_t i = 0; i < grid.size(); ++i) {
    const std::vector<size_t> at = grid.position(i);
    key.clear();
    for (size_t k = 0; k < grid.axes.size(); ++k)
      if (!searched(spec.halving, grid.axes[k])) key.push_back(static_cast<int64_t>(at[k]));
    if (!searched_replica(spec.halving)) key.push_back(grid.replica(i));
    const auto [it, fresh] = id.emplace(key, static_cast<int64_t>(c.members.size()));
    if (fresh) c.members.emplace_back();
    c.of_point[i] = it->second;
    c.members[it->second].push_back(static_cast<int64_t>(i));
  }
  return c;
}

bool expand_sweep(const Spec& spec, Grid* grid, std::vector<std::string>* errors) {
  return expand(spec, grid, errors) && (!spec.halving.on() || check_halving(spec, *grid, errors));
}

bool check_halving(const Spec& spec, const Grid& grid, std::vector<std::string>* errors) {
  const HalvingSpec& h = spec.halving;
  const size_t before = errors->size();
  for (const std::string& name : h.search) {
    bool axis = name == "replica";
    for (const Axis& a : grid.axes) axis = axis || std::find(a.options.begin(), a.options.end(), name) != a.options.end();
    if (!axis)
      errors->push_back("'search' = '" + name + "': must name axes of the sweep: options the spec lists (e.g. lr), or replica");
  }
  const std::string rungs = "'rungs' = '" + listed(h.rungs) + "'";
  for (int64_t i = 0; i < grid.size(); i += grid.repeats) {   // replicas differ only in their seed
    const Point p = grid.point(i);
    std::string why;
    if (h.rungs.back() >= p.steps)
      why = rungs + ": every rung must be below the point's steps (" + std::to_string(p.steps) + "): the last leg trains to the end";
    for (int64_t r : h.rungs)
      if (why.empty() && r % p.eval_every != 0)
        why = rungs + ": every rung must be a multiple of eval_every (" + std::to_string(p.eval_every) +
              "): the rung metric is an evaluation";
    if (why.empty() && (p.landscape_every > 0 || !p.landscape.empty()))
      why = "'landscape' is measured along the whole trajectory: it cannot be combined with successive halving (search)";
    if (why.empty() && copy_applies(p))
      why = "'tokens' = 'classic': the copy analysis is measured along the whole trajectory: it cannot be combined with "
            "successive halving (search)";
    if (!why.empty()) {
      errors->push_back(why);
      break;
    }
  }
  return errors->size() == before;
}

double metric_at(const HalvingSpec& h, const Trained& t, int64_t step) {
  const auto at = std::find(t.curve_step.begin(), t.curve_step.end(), step);
  if (at == t.curve_step.end()) return std::numeric_limits<double>::quiet_NaN();
  const std::vector<double>& curve = h.metric == "train_loss" ? t.curve_train_loss : t.curve_test_loss;
  const size_t k = static_cast<size_t>(at - t.curve_step.begin());
  return k < curve.size() ? curve[k] : std::numeric_limits<double>::quiet_NaN();
}

double planned_fraction(const Spec& spec, const Grid& grid) {
  const Conditions c = conditions(spec, grid);
  const std::vector<int64_t>& s = spec.halving.rungs;
  double full = 0, planned = 0;
  for (const std::vector<int64_t>& members : c.members) {
    double per_step = 0, steps = 0;
    for (int64_t i : members) {
      full += grid.cost[i];
      const double point_steps = static_cast<double>(grid.point(i).steps);
      per_step += grid.cost[i] / point_steps / members.size();
      steps += point_steps / members.size();
    }
    double n = static_cast<double>(members.size()), legs = n * s[0];
    for (size_t r = 0; r < s.size(); ++r) {
      n = std::max(1.0, std::floor(n / spec.halving.reduction));
      legs += n * ((r + 1 < s.size() ? s[r + 1] : steps) - s[r]);
    }
    planned += per_step * legs;
  }
  return full > 0 ? planned / full : 0.0;
}

double spent_fraction(const Grid& grid, const std::vector<int64_t>& steps_done) {
  double full = 0, spent = 0;
  for (size_t i = 0; i < grid.cost.size(); ++i) {
    full += grid.cost[i];
    if (i < steps_done.size() && steps_done[i] > 0)
      spent += grid.cost[i] * static_cast<double>(steps_done[i]) / static_cast<double>(grid.point(static_cast<int64_t>(i)).steps);
  }
  return full > 0 ? spent / full : 0.0;
}

Result pruned_result(const HalvingSpec& h, const Checkpoint& c, const Pruned& p, int64_t step) {
  Result r = c.run;
  const double nan = std::numeric_limits<double>::quiet_NaN();
  r.status = Status::pruned;
  char text[160];
  std::snprintf(text, sizeof text, "pruned at rung %d (step %lld): %s %.6g, place %d of %d in its condition", p.rung + 1,
                static_cast<long long>(step), h.metric.c_str(), metric_at(h, c.run, step), p.place, p.candidates);
  r.message = text;
  r.test_loss = r.train_loss = nan;
  r.layer_test_loss.assign(r.layer_test_loss.size(), nan);
  return r;
}

Halving::Halving(const Spec& spec, const Grid& grid)
    : h_(spec.halving), cond_(conditions(spec, grid)), rung_step_(spec.halving.rungs), position_(static_cast<size_t>(grid.size())) {
  const size_t P = static_cast<size_t>(grid.size()), R = rung_step_.size();
  for (size_t k = 0; k < grid.order.size(); ++k) position_[grid.order[k]] = static_cast<int64_t>(k);
  known_.assign(P * R, 0);
  metric_.assign(P * R, 0.0);
  reached_.assign(P, -1);
  stood_.assign(P, -1);
  promoted_.assign(P, 0);
  final_.assign(P, 0);
  flying_.assign(P, 0);
  decided_.assign(cond_.members.size(), 0);
  pending_.assign(cond_.members.size(), 0);
  for (int64_t c = 0; c < static_cast<int64_t>(cond_.members.size()); ++c) recount(c);
  unfinished_ = static_cast<int64_t>(P);
  for (size_t k = 0; k < grid.order.size(); ++k) runnable_.insert(static_cast<int64_t>(k));
  order_ = grid.order;
}

void Halving::learn(int64_t p, const Trained& run) {
  for (int r = 0; r < rungs(); ++r) {
    if (run.steps_done < rung_step_[r]) break;
    known_[p * rungs() + r] = 1;
    metric_[p * rungs() + r] = metric_at(h_, run, rung_step_[r]);
  }
}

void Halving::take_rung(int64_t p, int rung, const Trained& run) {
  ICL_CHECK(rung >= 0 && rung < rungs());
  const bool was_pending = pending_now(p);
  learn(p, run);
  reached_[p] = std::max(reached_[p], rung);
  stood_[p] = std::max(stood_[p], rung);
  if (flying_[p]) {
    flying_[p] = 0;
    --in_flight_;
  }
  pending_[cond_.of_point[p]] += static_cast<int>(pending_now(p)) - static_cast<int>(was_pending);
  refresh(p);
}

void Halving::take_finished(int64_t p, const Trained& run) {
  const bool was_pending = pending_now(p);
  learn(p, run);
  // The rungs its record shows it stood at: it trained past them, or stopped there still training (a
  // pruned point); one that diverged on a rung's very step never stood there.
  const bool training = run.status == Status::ok || run.status == Status::pruned;
  for (int r = 0; r < rungs(); ++r)
    if (run.steps_done > rung_step_[r] || (training && run.steps_done == rung_step_[r])) stood_[p] = std::max(stood_[p], r);
  if (flying_[p]) {
    flying_[p] = 0;
    --in_flight_;
  }
  if (!final_[p]) {
    final_[p] = 1;
    --unfinished_;
  }
  pending_[cond_.of_point[p]] += static_cast<int>(pending_now(p)) - static_cast<int>(was_pending);
  refresh(p);
}

void Halving::reached(int64_t p, int rung, const Trained& run) {
  take_rung(p, rung, run);
  decide(cond_.of_point[p]);
}

void Halving::finished(int64_t p, const Trained& run) {
  take_finished(p, run);
  decide(cond_.of_point[p]);
}

void Halving::restore(const std::vector<Logged>& records) {
  for (const Logged& g : records) {
    ICL_CHECK(g.point >= 0 && g.point < static_cast<int64_t>(cond_.of_point.size()));
    if (g.rung < 0) take_finished(g.point, *g.run);
    else take_rung(g.point, g.rung, *g.run);
  }
  for (int64_t c = 0; c < static_cast<int64_t>(cond_.members.size()); ++c) decide(c);
}

std::optional<Assignment> Halving::next() {
  if (runnable_.empty()) return std::nullopt;
  const int64_t p = order_[*runnable_.begin()];
  runnable_.erase(runnable_.begin());
  flying_[p] = 1;
  ++in_flight_;
  return Assignment{p, reached_[p], reached_[p] + 1};
}

std::vector<Pruned> Halving::take_pruned() { return std::move(pruned_); }

void Halving::refresh(int64_t p) {
  runnable_.erase(position_[p]);
  if (!final_[p] && !flying_[p] && reached_[p] < promoted_[p]) runnable_.insert(position_[p]);
}

// Member m still owes its condition a result at rung r: it may train to r, has no metric there and is not
// final.  The condition decides rung r when none does.
bool Halving::pending_at(int64_t m, int r) const { return promoted_[m] >= r && !known(m, r) && !final_[m]; }

bool Halving::pending_now(int64_t p) const {
  const int r = decided_[cond_.of_point[p]];
  return r < rungs() && pending_at(p, r);
}

// pending_[c], the members that owe condition c a result at the rung it decides next: counted once per rung
// (a pass over the members), then kept by take_rung and take_finished, so that deciding stays linear in
// the points (a pass over the members at each result was quadratic in a condition's candidates).
void Halving::recount(int64_t c) {
  pending_[c] = 0;
  if (decided_[c] >= rungs()) return;
  for (int64_t m : cond_.members[c]) pending_[c] += pending_at(m, decided_[c]);
  work_ += static_cast<int64_t>(cond_.members[c].size());
}

void Halving::decide(int64_t c) {
  while (decided_[c] < rungs() && pending_[c] == 0) {
    const int r = decided_[c];
    std::vector<std::pair<double, int64_t>> ranked;   // (metric, point); missing or not finite: last
    work_ += static_cast<int64_t>(cond_.members[c].size());
    for (int64_t m : cond_.members[c])
      if (promoted_[m] >= r) {
        const double v = known(m, r) ? metric_[m * rungs() + r] : NAN;
        ranked.push_back({std::isfinite(v) ? v : std::numeric_limits<double>::infinity(), m});
      }
    std::sort(ranked.begin(), ranked.end());
    const int n = static_cast<int>(ranked.size());
    const int keep = std::max(1, n / h_.reduction);
    for (int k = 0; k < n; ++k) {
      const int64_t m = ranked[k].second;
      if (k < keep) {
        // Kept points that stood at the rung go on; so does one whose later record a resume has already
        // read (pruned at a later rung, diverged after this one, trained to the end): it is one of the n
        // ranked at the next rung, as it was in the run that recorded it.  One that diverged or failed
        // before the rung keeps its place here and goes no further.
        if (stood_[m] >= r) promoted_[m] = r + 1;
      } else if (!final_[m]) {   // a point already recorded (pruned here before a kill) is not pruned twice
        final_[m] = 1;
        --unfinished_;
        pruned_.push_back({m, r, k + 1, n});
      }
      refresh(m);
    }
    ++decided_[c];
    recount(c);
  }
}

}  // namespace icl::sweep
