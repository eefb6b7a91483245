// Successive halving's scheduler (sweep/halving.hpp), driven by a simulated sweep: conditions group the
// points that differ only in searched axes; decisions keep the best floor(n / reduction) (at least one)
// by the rung metric, a point that diverged before a rung ranks last; the outcome is the same for any
// arrival order and any number of legs in flight (ranks); a fresh scheduler fed a killed run's records
// in any order replays the same decisions and hands out exactly the work that is left, for a kill after
// any record and several survivors of the last rung (issue 28, 2.1).
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <random>

#include "icl/sweep/grid.hpp"
#include "icl/sweep/halving.hpp"
#include "icl/sweep/spec_keys.hpp"

namespace icl::sweep {
namespace {

// layers 1 2 x lr (3) x 3 replicas = 18 points, steps 900, rungs 100 300.
Spec halving_spec(std::vector<std::string> search, int reduction = 3) {
  Spec s;
  s.entries = {{"layers", {"1", "2"}, "f:1"}, {"lr", {"1e-3", "3e-3", "1e-2"}, "f:2"}, {"steps", {"900"}, "f:3"},
               {"eval_every", {"100"}, "f:4"}, {"analysis", {"false"}, "f:5"}};
  s.repeats = 3;
  s.halving.search = std::move(search);
  s.halving.rungs = {100, 300};
  s.halving.reduction = reduction;
  s.text = canonical_text(s);
  return s;
}

// A synthetic metric at `step` of point p (distinct for every point; lower is better); `diverges` fails
// at step 150, between the rungs.
double fake_metric(int64_t p, int64_t step) { return 1.0 + std::fmod(p * 0.618034, 1.0) + 1000.0 / step; }

Trained fake_run(int64_t p, int64_t upto, int64_t diverges) {
  Trained t;
  t.steps_done = (p == diverges && upto > 150) ? 150 : upto;
  t.status = t.steps_done < upto ? Status::diverged : Status::ok;
  for (int64_t s = 0; s <= t.steps_done; s += 100) {
    t.curve_step.push_back(s);
    t.curve_test_loss.push_back(fake_metric(p, std::max<int64_t>(s, 1)));
    t.curve_train_loss.push_back(0);
  }
  return t;
}

struct Outcome {
  std::map<int64_t, int> pruned_at;   // point -> rung
  std::set<int64_t> completed;        // trained to the end (ok or diverged)
  int64_t legs = 0;
  std::vector<std::pair<bool, std::pair<int64_t, int>>> records;   // (final?, (point, rung or status))
};

// The run a leg that ends at rung `until` (rungs(): the end) records: `diverges` diverges at step 150,
// `fails` fails on its leg after rung 0 (a failed record carries no curves: its metric at rung 0 is in its
// rung record only).
Trained fake_leg(const Halving& h, const Grid& g, int64_t p, int until, int64_t diverges, int64_t fails) {
  if (p == fails && until == 1) {
    Trained t;
    t.status = Status::failed;
    t.steps_done = -1;
    return t;
  }
  return fake_run(p, until == h.rungs() ? g.point(p).steps : h.rung_step(until), diverges);
}

// Runs the scheduler with at most `ranks` legs in flight, completing a random one each time; stops after
// `stop_after` completed legs (a kill) when >= 0; the records are kept in the order they were stored.
Outcome simulate(Halving& h, const Grid& g, int ranks, uint32_t seed, int64_t diverges = -1, int64_t stop_after = -1,
                 int64_t fails = -1) {
  Outcome o;
  std::mt19937 rng(seed);
  std::vector<Assignment> flying;
  for (;;) {
    while (static_cast<int>(flying.size()) < ranks)
      if (auto a = h.next()) flying.push_back(*a);
      else break;
    if (flying.empty() || o.legs == stop_after) break;
    const size_t k = rng() % flying.size();
    const Assignment a = flying[k];
    flying.erase(flying.begin() + k);
    ++o.legs;
    const Trained run = fake_leg(h, g, a.point, a.until, diverges, fails);
    if (a.until == h.rungs() || run.status != Status::ok) {
      o.completed.insert(a.point);
      o.records.push_back({true, {a.point, a.until}});
      h.finished(a.point, run);
    } else {
      o.records.push_back({false, {a.point, a.until}});
      h.reached(a.point, a.until, run);
    }
    for (const Pruned& p : h.take_pruned()) {
      o.pruned_at[p.point] = p.rung;
      o.records.push_back({true, {p.point, -1 - p.rung}});
      h.finished(p.point, fake_run(p.point, h.rung_step(p.rung), diverges));
    }
  }
  return o;
}

Grid grid_of(const Spec& s) {
  Grid g;
  std::vector<std::string> errors;
  EXPECT_TRUE(expand(s, &g, &errors)) << (errors.empty() ? "" : errors[0]);
  return g;
}

// reduction 2 over 4 rates x 3 replicas = 12 candidates per depth, rungs 100 300: 12 -> 6 -> 3, so a
// resume has several survivors of the last rung to rank with the points already pruned there.
Spec survivors_spec() {
  Spec s = halving_spec({"replica", "lr"}, 2);
  s.entries[1].values = {"1e-3", "3e-3", "1e-2", "3e-2"};
  s.text = canonical_text(s);
  return s;
}

// A fresh scheduler fed `records` (a killed run's logs) the way the driver's restore does.
void replay(Halving& h, const Grid& g, const std::vector<std::pair<bool, std::pair<int64_t, int>>>& records, int64_t diverges,
            int64_t fails) {
  std::vector<Trained> runs;
  runs.reserve(records.size());
  std::vector<Logged> logged;
  for (const auto& [is_final, what] : records) {
    const auto [p, r] = what;
    if (is_final && r < 0) runs.push_back(fake_run(p, h.rung_step(-1 - r), diverges));   // pruned at rung -1 - r
    else runs.push_back(fake_leg(h, g, p, r, diverges, fails));
    logged.push_back({p, is_final ? -1 : r, &runs.back()});
  }
  h.restore(logged);
}


TEST(Halving, ConditionsGroupWhatIsNotSearched) {
  const Spec s = halving_spec({"replica", "lr"});
  const Grid g = grid_of(s);
  const Conditions c = conditions(s, g);
  ASSERT_EQ(c.members.size(), 2u);   // layers 1, 2
  EXPECT_EQ(c.members[0].size(), 9u);
  for (int64_t i = 0; i < 9; ++i) EXPECT_EQ(c.of_point[i], 0);
  const Spec per_seed = halving_spec({"lr"});
  const Conditions d = conditions(per_seed, grid_of(per_seed));
  ASSERT_EQ(d.members.size(), 6u);   // layers x replica
  EXPECT_EQ(d.members[0], (std::vector<int64_t>{0, 3, 6}));   // the three rates of replica 0
}

// A zip group is searched by any of its names; the rung metric is read from the curves at the rung step.
TEST(Halving, ZipGroupsAreSearchedWholeAndTheMetricIsReadAtTheRung) {
  Spec s = halving_spec({"lr"});
  s.entries.push_back({"batch", {"64", "128", "256"}, "f:6"});
  s.zips = {{"lr", "batch"}};
  s.repeats = 1;
  s.text = canonical_text(s);
  const Grid g = grid_of(s);
  ASSERT_EQ(static_cast<size_t>(g.size()), 6u);   // layers x (lr, batch)
  const Conditions c = conditions(s, g);
  ASSERT_EQ(c.members.size(), 2u);
  EXPECT_EQ(c.members[1], (std::vector<int64_t>{3, 4, 5}));
  Trained t;
  t.curve_step = {0, 100, 200};
  t.curve_test_loss = {3, 2, 1};
  t.curve_train_loss = {NAN, 2.5, 1.5};
  HalvingSpec h;
  EXPECT_EQ(metric_at(h, t, 100), 2);
  h.metric = "train_loss";
  EXPECT_EQ(metric_at(h, t, 200), 1.5);
  EXPECT_TRUE(std::isnan(metric_at(h, t, 300)));   // not reached
  std::vector<std::string> errors;
  Spec unknown = halving_spec({"noise"});
  EXPECT_FALSE(check_halving(unknown, grid_of(halving_spec({"lr"})), &errors));
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_NE(errors[0].find("'search' = 'noise'"), std::string::npos) << errors[0];
}

TEST(Halving, KeepsTheBestThirdAtEveryRungWhateverTheOrderAndRanks) {
  const Spec s = halving_spec({"replica", "lr"});
  const Grid g = grid_of(s);
  Outcome first;
  for (int ranks : {1, 2, 3, 7}) {
    for (uint32_t seed : {1u, 2u, 3u}) {
      Halving h(s, g);
      const Outcome o = simulate(h, g, ranks, seed);
      EXPECT_TRUE(h.all_finished());
      if (first.legs == 0) {
        first = o;
        continue;
      }
      EXPECT_EQ(o.pruned_at, first.pruned_at) << ranks << " ranks, order " << seed;
      EXPECT_EQ(o.completed, first.completed);
      EXPECT_EQ(o.legs, first.legs);
    }
  }
  // 9 candidates per condition: 9 legs to rung 1, 3 to rung 2, 1 to the end.
  EXPECT_EQ(first.legs, 2 * (9 + 3 + 1));
  ASSERT_EQ(first.completed.size(), 2u);
  // The survivor is the best at both rungs: the least fake_metric among its condition's points.
  for (int64_t c = 0; c < 2; ++c) {
    int64_t best = c * 9;
    for (int64_t i = c * 9; i < c * 9 + 9; ++i)
      if (fake_metric(i, 100) < fake_metric(best, 100)) best = i;
    EXPECT_TRUE(first.completed.count(best)) << "condition " << c;
  }
  int at_first = 0;
  for (const auto& [p, r] : first.pruned_at) at_first += r == 0;
  EXPECT_EQ(at_first, 2 * 6);
  // The plan: (9 x 100 + 3 x 200 + 1 x 600) / (9 x 900) of the grid.
  EXPECT_NEAR(planned_fraction(s, g), 2100.0 / 8100.0, 1e-12);
}

TEST(Halving, APointThatDivergesBeforeARungRanksLast) {
  const Spec s = halving_spec({"replica", "lr"});
  const Grid g = grid_of(s);
  // Find the best point of condition 0 at rung 0: it survives rung 0, then diverges at step 150.
  int64_t best = 0;
  for (int64_t i = 0; i < 9; ++i)
    if (fake_metric(i, 100) < fake_metric(best, 100)) best = i;
  Halving h(s, g);
  const Outcome o = simulate(h, g, 2, 5, best);
  EXPECT_TRUE(o.completed.count(best));      // finished (diverged): not pruned
  EXPECT_FALSE(o.pruned_at.count(best));
  // At rung 1 the three candidates include it, ranked last: the best of the other two goes on.
  int64_t survivors = 0;
  for (int64_t i = 0; i < 9; ++i) survivors += o.completed.count(i);
  EXPECT_EQ(survivors, 2);   // the diverged one and the rung-1 winner
}

TEST(Halving, AResumedSchedulerReplaysTheDecisionsFromTheRecords) {
  const Spec s = halving_spec({"replica", "lr"});
  const Grid g = grid_of(s);
  Halving whole(s, g);
  const Outcome straight = simulate(whole, g, 2, 11);
  for (int64_t kill_after : {0, 5, 12, 20, 25}) {
    Halving killed(s, g);
    const Outcome part = simulate(killed, g, 2, 11, -1, kill_after);
    // A fresh scheduler gets the durable records, shuffled (logs are read in any order).
    std::vector<std::pair<bool, std::pair<int64_t, int>>> records = part.records;
    std::shuffle(records.begin(), records.end(), std::mt19937(kill_after));
    Halving resumed(s, g);
    replay(resumed, g, records, -1, -1);
    resumed.take_pruned();   // decisions the killed run had not recorded yet: the driver writes them now
    Outcome rest = simulate(resumed, g, 3, 99);
    EXPECT_TRUE(resumed.all_finished());
    std::set<int64_t> completed = part.completed;
    completed.insert(rest.completed.begin(), rest.completed.end());
    EXPECT_EQ(completed, straight.completed) << "killed after " << kill_after << " legs";
    EXPECT_EQ(part.legs + rest.legs, straight.legs) << "killed after " << kill_after << " legs: no leg trained twice";
  }
}

// The best point of condition c at rung 0 of survivors_spec().
int64_t best_at_first_rung(int64_t c) {
  int64_t best = c * 12;
  for (int64_t i = c * 12; i < c * 12 + 12; ++i)
    if (fake_metric(i, 100) < fake_metric(best, 100)) best = i;
  return best;
}

// Issue 28, 2.1: a run killed after any record and resumed ends with the same statuses as the run that
// was never killed: the points pruned at a rung before the kill still count among the n ranked there
// (three survivors of the last rung per condition), no point is pruned twice, no leg trained twice.  With
// and without a point that diverges between the rungs and one that fails after its first rung.
TEST(Halving, AResumeAfterEveryRecordEndsAsTheUninterruptedRun) {
  const Spec s = survivors_spec();
  const Grid g = grid_of(s);
  ASSERT_EQ(g.size(), 24);
  const std::vector<std::pair<int64_t, int64_t>> faults = {{-1, -1}, {best_at_first_rung(1), best_at_first_rung(0)}};
  for (const auto& [diverges, fails] : faults) {
    Halving whole(s, g);
    const Outcome straight = simulate(whole, g, 2, 7, diverges, -1, fails);
    ASSERT_TRUE(whole.all_finished());
    ASSERT_EQ(straight.completed.size(), 2u * 3 + (fails >= 0) + (diverges >= 0));
    for (size_t k = 0; k <= 2 * straight.records.size() + 1; ++k) {   // each cut in the stored order, then shuffled
      const size_t cut = k % (straight.records.size() + 1);
      std::vector<std::pair<bool, std::pair<int64_t, int>>> kept(straight.records.begin(), straight.records.begin() + cut);
      if (k != cut) std::shuffle(kept.begin(), kept.end(), std::mt19937(k));
      Outcome part;   // what the logs hold
      for (const auto& [is_final, what] : kept) {
        part.legs += !(is_final && what.second < 0);
        if (is_final && what.second < 0) part.pruned_at[what.first] = -1 - what.second;
        else if (is_final) part.completed.insert(what.first);
      }
      Halving resumed(s, g);
      replay(resumed, g, kept, diverges, fails);
      const std::string at = "killed after record " + std::to_string(cut) + (k != cut ? ", read shuffled" : "") +
                             (fails >= 0 ? " (a divergence and a failure)" : "");
      for (const Pruned& p : resumed.take_pruned()) {   // decisions the killed run had not recorded yet
        EXPECT_FALSE(part.pruned_at.count(p.point) || part.completed.count(p.point)) << at << ": point " << p.point << " recorded twice";
        part.pruned_at[p.point] = p.rung;
        resumed.finished(p.point, fake_run(p.point, resumed.rung_step(p.rung), diverges));
      }
      const Outcome rest = simulate(resumed, g, 3, 99 + k, diverges, -1, fails);
      EXPECT_TRUE(resumed.all_finished()) << at;
      std::map<int64_t, int> pruned_at = part.pruned_at;
      for (const auto& [p, r] : rest.pruned_at) EXPECT_TRUE(pruned_at.emplace(p, r).second) << at << ": point " << p << " pruned twice";
      std::set<int64_t> completed = part.completed;
      completed.insert(rest.completed.begin(), rest.completed.end());
      EXPECT_EQ(pruned_at, straight.pruned_at) << at;
      EXPECT_EQ(completed, straight.completed) << at;
      EXPECT_EQ(part.legs + rest.legs, straight.legs) << at << ": no leg trained twice";
    }
  }
}

}  // namespace
}  // namespace icl::sweep
