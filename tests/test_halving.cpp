// Successive halving's scheduler (sweep/halving.hpp), driven by a simulated sweep: conditions group the
// points that differ only in searched axes; decisions keep the best floor(n / reduction) (at least one)
// by the rung metric, a point that diverged before a rung ranks last; the outcome is the same for any
// arrival order and any number of legs in flight (ranks); a fresh scheduler fed a killed run's records
// in any order replays the same decisions and hands out exactly the work that is left.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <random>

#include "icl/sweep/grid.hpp"
#include "icl/sweep/halving.hpp"

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

// Runs the scheduler with at most `ranks` legs in flight, completing a random one each time; stops after
// `stop_after` completed legs (a kill) when >= 0.
Outcome simulate(Halving& h, const Grid& g, int ranks, uint32_t seed, int64_t diverges = -1, int64_t stop_after = -1) {
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
    const bool to_end = a.until == h.rungs();
    const Trained run = fake_run(a.point, to_end ? g.point(a.point).steps : h.rung_step(a.until), diverges);
    if (to_end || run.status != Status::ok) {
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
    for (const auto& [is_final, what] : records) {
      const auto [p, r] = what;
      if (!is_final) resumed.reached(p, r, fake_run(p, resumed.rung_step(r), -1));
      else if (r < 0) resumed.finished(p, fake_run(p, resumed.rung_step(-1 - r), -1));
      else resumed.finished(p, fake_run(p, g.point(p).steps, -1));
    }
    resumed.take_pruned();   // decisions the killed run had not recorded yet: the driver writes them now
    Outcome rest = simulate(resumed, g, 3, 99);
    EXPECT_TRUE(resumed.all_finished());
    std::set<int64_t> completed = part.completed;
    completed.insert(rest.completed.begin(), rest.completed.end());
    EXPECT_EQ(completed, straight.completed) << "killed after " << kill_after << " legs";
    EXPECT_EQ(part.legs + rest.legs, straight.legs) << "killed after " << kill_after << " legs: no leg trained twice";
  }
}

}  // namespace
}  // namespace icl::sweep
