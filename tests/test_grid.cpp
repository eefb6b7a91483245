// Grid expansion: product order, zip groups, replicas and seeds, costs, and errors that say where.
#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <malloc.h>
#include <sys/wait.h>
#include <unistd.h>

#include <map>

#include "icl/run/options.hpp"
#include "icl/run/run_point.hpp"
#include "icl/sweep/grid.hpp"
#include "icl/sweep/memory.hpp"
#include "icl/sweep/spec_keys.hpp"
#include "icl/train/objective.hpp"

namespace icl::sweep {
namespace {

Spec spec_of(std::vector<SpecEntry> entries, std::vector<std::vector<std::string>> zips = {}, int repeats = 1) {
  Spec s;
  s.entries = std::move(entries);
  s.zips = std::move(zips);
  s.repeats = repeats;
  s.text = canonical_text(s);
  return s;
}

TEST(Grid, ProductFirstOptionSlowestThenReplicas) {
  Grid g;
  std::vector<std::string> errors;
  ASSERT_TRUE(expand(spec_of({{"layers", {"1", "2"}, "f:1"}, {"noise", {"none", "set:1,3", "uniform:2"}, "f:2"}}, {}, 2), &g, &errors));
  ASSERT_EQ(static_cast<size_t>(g.size()), 12u);
  EXPECT_EQ(g.point(0).layers, 1);
  EXPECT_EQ(g.point(5).layers, 1);
  EXPECT_EQ(g.point(6).layers, 2);
  EXPECT_EQ(find_option("noise")->get(g.point(2)), "set:1,3");
  EXPECT_EQ(g.replica(2), 0);
  EXPECT_EQ(g.replica(3), 1);
  // Seeds: a function of (sweep_seed, index) only; replicas differ.
  EXPECT_NE(g.point(2).seed, g.point(3).seed);
  Grid h;
  Spec other = spec_of({{"layers", {"1", "2"}, "f:1"}, {"noise", {"none", "set:1,3", "uniform:2"}, "f:2"}}, {}, 2);
  other.sweep_seed = 1;
  ASSERT_TRUE(expand(other, &h, &errors));
  EXPECT_NE(g.point(0).seed, h.point(0).seed);
}

TEST(Grid, ZipAdvancesOptionsTogether) {
  Grid g;
  std::vector<std::string> errors;
  ASSERT_TRUE(expand(spec_of({{"layers", {"1", "2", "3"}, "f:1"}, {"lr", {"1e-3", "5e-4", "2e-4"}, "f:2"}, {"d", {"5", "10"}, "f:3"}},
                             {{"layers", "lr"}}),
                     &g, &errors));
  ASSERT_EQ(static_cast<size_t>(g.size()), 6u);
  EXPECT_EQ(g.point(0).layers, 1);
  EXPECT_DOUBLE_EQ(g.point(0).lr, 1e-3);
  EXPECT_EQ(g.point(5).layers, 3);
  EXPECT_DOUBLE_EQ(g.point(5).lr, 2e-4);
  EXPECT_EQ(g.point(5).d, 10);
}

TEST(Grid, LongestFirstOrder) {
  Grid g;
  std::vector<std::string> errors;
  ASSERT_TRUE(expand(spec_of({{"steps", {"100", "10000", "1000"}, "f:1"}}), &g, &errors));
  EXPECT_EQ(g.order, (std::vector<int64_t>{1, 2, 0}));
  EXPECT_GT(g.cost[1], 5 * g.cost[2]);
}

// The analysis is costed from its sets (issue 28, item 9): context_curve's sets at lengths 1..n_test make its
// cost quadratic in n_test, and the dMMSE baseline compares every task with the M pool tasks (M n d each).
TEST(Grid, EstimateCountsContextCurveAndTaskPool) {
  Point p;
  auto with = [&](const char* option, const std::string& value, Point q) {
    const double before = estimate_seconds(q);
    EXPECT_EQ(point_set(q, option, value), "");
    EXPECT_TRUE(point_validate(q).empty()) << option << " = " << value;
    return estimate_seconds(q) - before;
  };
  // Linear attention reads each prefix from its token Gram: linear in n_test, at least a Gram model's pass
  // (6 L H D^3) on 2,000 tasks at every length.
  const double D = p.d + 1;
  const double linear_1000 = with("context_curve", "1000", p), linear_2000 = with("context_curve", "2000", p);
  EXPECT_GE(linear_2000, 2000 * 2000 * 6 * D * D * D / 5e10);
  EXPECT_NEAR(linear_2000 / linear_1000, 2.0, 0.01);
  // Softmax attention runs on every prefix: at least the trained model's forward pass on 2,000 tasks at every
  // length 1..n_test, cubic in n_test (its scores are k x (k + 1) at length k; plus lower terms).
  Point s = p;
  EXPECT_EQ(point_set(s, "attention", "softmax"), "");
  double model = 0;
  for (int k = 1; k <= 2000; ++k) {
    Point q = s;
    q.n = k;
    model += 2000 * flops_per_task(q) / 3;
  }
  const double curve_1000 = with("context_curve", "1000", s), curve_2000 = with("context_curve", "2000", s);
  EXPECT_GE(curve_2000, model / 5e10);
  EXPECT_GT(curve_2000 / curve_1000, 7.8);
  EXPECT_LT(curve_2000 / curve_1000, 8.05);
  // The pool: 2 M (n+1) d per task on the evaluation set, the pool's evaluation set and the noise-free sets.
  const double pool_1 = with("task_pool", "100000", p), pool_2 = with("task_pool", "200000", p);
  EXPECT_GE(pool_1, 2 * p.eval_tasks * 2.0 * 1e5 * (p.n + 1) * p.d / 5e10);
  EXPECT_NEAR(pool_2 / pool_1, 2.0, 0.05);
}

TEST(Grid, ErrorsNameWhereOptionValueAndRule) {
  Grid g;
  std::vector<std::string> errors;
  EXPECT_FALSE(expand(spec_of({{"layers", {"1", "-2"}, "s.ini:3"}, {"colour", {"red"}, "s.ini:4"},
                               {"seed", {"1"}, "s.ini:5"}}),
                      &g, &errors));
  ASSERT_EQ(errors.size(), 3u);
  EXPECT_NE(errors[0].find("s.ini:3: option 'layers' = '-2': must be an integer"), std::string::npos) << errors[0];
  EXPECT_NE(errors[1].find("s.ini:4: unknown option 'colour'"), std::string::npos) << errors[1];
  EXPECT_NE(errors[2].find("s.ini:5: option 'seed' cannot be set in a sweep"), std::string::npos) << errors[2];
  EXPECT_FALSE(expand(spec_of({{"layers", {"1", "2"}, "s.ini:1"}, {"lr", {"1e-3"}, "s.ini:2"}}, {{"layers", "lr"}}), &g, &errors));
  EXPECT_NE(errors[0].find("equal length"), std::string::npos) << errors[0];
  // A combination that breaks a cross-option rule names the combination.
  EXPECT_FALSE(expand(spec_of({{"d", {"2", "3"}, "s.ini:1"}, {"cov", {"diag:1,2"}, "s.ini:2"}}), &g, &errors));
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_NE(errors[0].find("grid point (d=3, cov=diag:1,2)"), std::string::npos) << errors[0];
}

TEST(Grid, SeedsPerReplicaAreSharedAcrossCombinations) {
  Spec s = spec_of({{"optimizer", {"adam", "sgd"}, "f:1"}, {"lr", {"0.01", "0.02"}, "f:2"}}, {}, 3);
  Grid per_point, per_replica;
  std::vector<std::string> errors;
  ASSERT_TRUE(expand(s, &per_point, &errors));
  s.seeds_per_replica = true;
  s.text = canonical_text(s);
  ASSERT_TRUE(expand(s, &per_replica, &errors));
  ASSERT_EQ(static_cast<size_t>(per_replica.size()), 12u);
  for (size_t i = 0; i < 12; ++i)
    for (size_t j = 0; j < 12; ++j) {
      EXPECT_EQ(per_replica.point(i).seed == per_replica.point(j).seed, per_replica.replica(i) == per_replica.replica(j));
      if (i != j) { EXPECT_NE(per_point.point(i).seed, per_point.point(j).seed); }
    }
  EXPECT_EQ(per_replica.point(0).seed, per_point.point(0).seed);   // replica 0 of point 0: the same key
  EXPECT_NE(spec_hash(s.text), spec_hash(spec_of({{"optimizer", {"adam", "sgd"}, "f:1"}, {"lr", {"0.01", "0.02"}, "f:2"}}, {}, 3).text));
}

TEST(Grid, SpecHashChangesWithTheSpec) {
  const Spec a = spec_of({{"layers", {"1", "2"}, "f:1"}}), b = spec_of({{"layers", {"1", "3"}, "f:1"}});
  EXPECT_EQ(spec_hash(a.text), spec_hash(spec_of({{"layers", {"1", "2"}, "g:7"}}).text));   // where is not part of it
  EXPECT_NE(spec_hash(a.text), spec_hash(b.text));
  // the shared evaluation set's seed is part of it: --resume refuses a file written with another one
  EXPECT_NE(spec_hash(spec_of({{"eval_seed", {"99"}, "f:1"}}).text), spec_hash(spec_of({{"eval_seed", {"100"}, "f:1"}}).text));
  EXPECT_NE(spec_hash(spec_of({{"eval_seed", {"99"}, "f:1"}}).text), spec_hash(spec_of({}).text));
}


// The canonical text is a file-format contract: every stored point record and output file carries its
// hash, and --resume compares it.  Frozen here as written before the key table existed (sweep/spec_keys).
TEST(SweepKeys, CanonicalTextIsFrozen) {
  Spec s = spec_of({{"layers", {"1", "2"}, "f:1"}, {"lr", {"0.1", "0.2"}, "f:2"}}, {{"layers", "lr"}}, 3);
  s.sweep_seed = 7;
  EXPECT_EQ(canonical_text(s), "layers = 1 2\nlr = 0.1 0.2\nzip = layers lr\nrepeats = 3\nsweep_seed = 7\n");
  s.seeds_per_replica = true;
  s.halving.search = {"replica", "lr"};
  s.halving.rungs = {500, 1500};
  s.max_point_bytes = 1e9;   // not hashed: it never changes a result
  EXPECT_EQ(canonical_text(s), "layers = 1 2\nlr = 0.1 0.2\nzip = layers lr\nrepeats = 3\nsweep_seed = 7\n"
                               "seeds = replica\nsearch = replica lr\nrungs = 500 1500\nreduction = 3\n"
                               "rung_metric = test_loss\n");
}

// Each key of the table: its example parses; it changes the canonical text (so the hash, so --resume's
// identity check) exactly when the table says it enters the hash.  A key added without its canonical
// lines fails here, instead of silently letting --resume mix two sweeps.
TEST(SweepKeys, EveryKeyParsesItsExampleAndEntersTheHashAsDeclared) {
  Spec base = spec_of({{"layers", {"1", "2"}, "f:1"}, {"lr", {"0.1", "0.2"}, "f:2"}});
  base.halving.search = {"lr"};   // halving on, so its keys print
  base.halving.rungs = {100};
  for (const SweepKey& k : sweep_keys()) {
    SCOPED_TRACE(k.name);
    Spec s = base;
    std::string rule;
    ASSERT_TRUE(k.parse({k.example}, "f:9", &s, &rule)) << rule;
    EXPECT_EQ(canonical_text(s) != canonical_text(base), k.canonical != nullptr);
    EXPECT_EQ(find_sweep_key(k.name), &k);
  }
  EXPECT_EQ(find_sweep_key("layers"), nullptr);   // options of a point are run/options.hpp's
}

// Input holes (issue 11): each is an error naming the option or the limit, never a crash or a wrong count.
TEST(GridLimits, EmptyZipGroupIsAnError) {
  Grid g;
  Summary sum;
  std::vector<std::string> errors;
  const Spec s = spec_of({{"layers", {"1", "2"}, "f:1"}}, {{}});
  EXPECT_FALSE(expand(s, &g, &errors));
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_NE(errors[0].find("'zip' = ''"), std::string::npos) << errors[0];
  EXPECT_FALSE(summarise(s, &sum, &errors));
}

TEST(GridLimits, PointCountIsCheckedWithoutOverflow) {
  // 8 axes x 256 values = 2^64 combinations: refused with its size, not wrapped to 0.
  std::vector<SpecEntry> entries;
  for (const char* o : {"lr", "beta1", "beta2", "eps", "init_scale", "clip", "ridge_lambda", "diverge_factor"}) {
    SpecEntry e{o, {}, "f:1"};
    for (int k = 1; k <= 256; ++k) e.values.push_back(std::to_string(0.001 * k));
    entries.push_back(e);
  }
  Summary sum;
  Grid g;
  std::vector<std::string> errors;
  EXPECT_FALSE(expand(spec_of(entries), &g, &errors));
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_NE(errors[0].find("1.84e+19 points"), std::string::npos) << errors[0];
  EXPECT_NE(errors[0].find("limit of 10000000"), std::string::npos) << errors[0];
  // 2^34 combinations x repeats 2^30 are refused too (repeats alone is out of range).
  entries.resize(4);
  for (auto& e : entries) e.values.resize(128);   // 2^28
  EXPECT_FALSE(summarise(spec_of(entries, {}, 1 << 30), &sum, &errors));
  EXPECT_NE(errors[0].find("'repeats' = '1073741824'"), std::string::npos) << errors[0];
  // The limit is exact: 10^7 points pass (without materialising them), 10^7 + 10 do not.
  const std::vector<SpecEntry> ten = {{"lr", {"1", "2", "3", "4", "5", "6", "7", "8", "9", "10"}, "f:1"}};
  ASSERT_TRUE(summarise(spec_of(ten, {}, 1000000), &sum, &errors));
  EXPECT_EQ(sum.points, kMaxPoints);
  EXPECT_FALSE(summarise(spec_of(ten, {}, 1000001), &sum, &errors));
  EXPECT_NE(errors[0].find("10000010 points"), std::string::npos) << errors[0];
}

TEST(GridLimits, SummaryAgreesWithTheExpandedGrid) {
  const Spec s = spec_of({{"layers", {"1", "3"}, "f:1"}, {"lr", {"1e-3", "2e-3", "3e-3"}, "f:2"},
                          {"eval_tasks", {"100", "5000"}, "f:3"}, {"optimizer", {"adam", "sgd", "adamw"}, "f:4"},
                          {"steps", {"10", "200"}, "f:5"}, {"landscape", {"off", "0"}, "f:6"}},
                         {{"lr", "optimizer"}}, 2);
  Grid g;
  Summary sum;
  std::vector<std::string> errors;
  ASSERT_FALSE(expand(spec_of({{"lr", {"1", "2"}, "f:1"}}, {{"lr", "optimizer"}}), &g, &errors));   // zip of an unset option
  ASSERT_TRUE(expand(s, &g, &errors));
  ASSERT_TRUE(summarise(s, &sum, &errors));
  ASSERT_EQ(sum.points, static_cast<int64_t>(static_cast<size_t>(g.size())));
  double total = 0, longest = 0, largest = 0;
  for (size_t i = 0; i < static_cast<size_t>(g.size()); ++i) {
    total += g.cost[i];
    longest = std::max(longest, g.cost[i]);
    largest = std::max(largest, estimate_memory(g.point(i)).total);
  }
  EXPECT_NEAR(sum.total_cost, total, 1e-9 * total);
  EXPECT_DOUBLE_EQ(sum.longest_cost, longest);
  EXPECT_DOUBLE_EQ(sum.largest_memory.total, largest);
  EXPECT_EQ(sum.largest_memory_at, "layers=3, eval_tasks=5000, steps=200, landscape=0");
  // --measure's sample: 16 combinations are at most kExhaustive, so every one of them, each with its own
  // estimate, in the same order on every call.
  ASSERT_EQ(sum.combinations, 16);
  EXPECT_TRUE(sum.exhaustive);
  ASSERT_EQ(sum.sampled.size(), 16u);
  std::set<std::string> drawn;
  for (const Summary::Sampled& c : sum.sampled) {
    EXPECT_TRUE(drawn.insert(c.at).second) << c.at;
    EXPECT_DOUBLE_EQ(c.cost, estimate_seconds(c.point)) << c.at;
  }
  Summary again;
  ASSERT_TRUE(summarise(s, &again, &errors));
  for (size_t k = 0; k < sum.sampled.size(); ++k) EXPECT_EQ(again.sampled[k].at, sum.sampled[k].at);
  // The same errors from both, naming the combination of the options that matter.
  const Spec bad = spec_of({{"steps", {"10", "100"}, "f:1"}, {"lr", {"1", "2"}, "f:2"}, {"warmup", {"50"}, "f:3"}});
  std::vector<std::string> from_summary;
  EXPECT_FALSE(summarise(bad, &sum, &from_summary));
  EXPECT_FALSE(expand(bad, &g, &errors));
  EXPECT_EQ(errors, from_summary);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_NE(errors[0].find("grid point (steps=10, warmup=50): option 'warmup' = '50'"), std::string::npos) << errors[0];
}

// The sample is drawn in proportion to cost: among 100 combinations, the one that carries almost all of
// the estimate is drawn (a uniform draw of 6 would miss it 94 times in 100).
TEST(GridLimits, MeasureSampleFollowsTheCost) {
  std::vector<std::string> steps;
  for (int k = 1; k < 100; ++k) steps.push_back(std::to_string(k));
  steps.push_back("100000000");
  Summary sum;
  std::vector<std::string> errors;
  ASSERT_TRUE(summarise(spec_of({{"steps", steps, "f:1"}}, {}), &sum, &errors));
  ASSERT_EQ(sum.combinations, 100);
  EXPECT_FALSE(sum.exhaustive);
  ASSERT_EQ(sum.sampled.size(), Summary::kSampled);
  EXPECT_EQ(sum.sampled[0].point.steps, 100000000);
  std::set<std::string> drawn;   // distinct, the same on every call
  for (const Summary::Sampled& c : sum.sampled) EXPECT_TRUE(drawn.insert(c.at).second) << c.at;
  Summary again;
  ASSERT_TRUE(summarise(spec_of({{"steps", steps, "f:1"}}, {}), &again, &errors));
  for (size_t k = 0; k < Summary::kSampled; ++k) EXPECT_EQ(again.sampled[k].at, sum.sampled[k].at);
}

TEST(GridLimits, OptionsThatOnlyMultiplyChangeNoRuleCostOrMemory) {
  // Two valid values of every option that summarise does not walk; a new entry there needs values here.
  const std::map<std::string, std::vector<std::string>> values = {
      {"w_prior", {"identity", "inverse_cov"}}, {"norm", {"1/n", "1"}}, {"act_clip", {"0", "3"}},
      {"optimizer", {"adam", "sgd"}}, {"lr", {"1e-3", "0.5"}}, {"beta1", {"0.9", "0"}}, {"beta2", {"0.999", "0.5"}},
      {"eps", {"1e-8", "1"}}, {"momentum", {"0.9", "0"}}, {"weight_decay", {"0", "0.1"}}, {"clip", {"0", "1"}},
      {"clip_mode", {"global", "matrix"}}, {"refresh", {"1", "100"}}, {"init", {"normal", "vs_truncated"}},
      {"init_scale", {"0.05", "2"}}, {"diverge_factor", {"1e4", "0"}}, {"seed", {"0", "12345"}},
      {"ridge_lambda", {"1", "0.01"}}};
  std::vector<Point> bases(4);
  ASSERT_EQ(point_set(bases[1], "cov", "diag:1,2"), "");   // breaks a rule
  ASSERT_EQ(point_set(bases[2], "attention", "softmax"), "");
  ASSERT_EQ(point_set(bases[2], "landscape", "0"), "");
  ASSERT_EQ(point_set(bases[3], "analysis", "false"), "");
  ASSERT_EQ(point_set(bases[3], "precision", "float64"), "");
  int listed = 0;
  for (const OptionDef& o : option_table()) {
    if (!only_multiplies(o.name)) continue;
    ++listed;
    ASSERT_TRUE(values.count(o.name)) << o.name;
    for (const Point& base : bases)
      for (const std::string& v : values.at(o.name)) {
        Point p = base;
        ASSERT_EQ(point_set(p, o.name, v), "");
        EXPECT_EQ(point_validate(p), point_validate(base)) << o.name << " = " << v;
        EXPECT_EQ(estimate_seconds(p), estimate_seconds(base)) << o.name << " = " << v;
        EXPECT_EQ(estimate_memory(p).total, estimate_memory(base).total) << o.name << " = " << v;
      }
  }
  EXPECT_EQ(listed, static_cast<int>(values.size()));
  EXPECT_FALSE(only_multiplies("d"));
  EXPECT_FALSE(only_multiplies("landscape"));
}

TEST(GridLimits, PointsAboveTheMemoryLimitAreRefused) {
  Spec s = spec_of({{"layers", {"1", "1000"}, "f:1"}, {"heads", {"64"}, "f:2"}, {"d", {"127"}, "f:3"}});
  s.max_point_bytes = 64.0 * (1 << 30);
  s.max_point_source = "set at f:9";
  Summary sum;
  std::vector<std::string> errors;
  EXPECT_FALSE(summarise(s, &sum, &errors));
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_NE(errors[0].find("grid point (layers=1000, heads=64, d=127): needs about"), std::string::npos) << errors[0];
  EXPECT_NE(errors[0].find("model activations"), std::string::npos) << errors[0];
  EXPECT_NE(errors[0].find("more than max_point_memory = 64.0 GiB (set at f:9)"), std::string::npos) << errors[0];
  s.max_point_bytes = 0;   // no limit
  EXPECT_TRUE(summarise(s, &sum, &errors));
  EXPECT_GT(sum.largest_memory.total, 500.0 * (1 << 30));
  Spec e = spec_of({{"eval_tasks", {"10000000"}, "f:1"}, {"n", {"100000"}, "f:2"}});
  e.max_point_bytes = 64.0 * (1 << 30);
  EXPECT_FALSE(summarise(e, &sum, &errors));
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_NE(errors[0].find("evaluation set"), std::string::npos) << errors[0];
}

// A field of /proc/self/status in bytes ("VmRSS", "VmHWM": given in kB).
double status_bytes(const std::string& field) {
  std::ifstream in("/proc/self/status");
  for (std::string line; std::getline(in, line);)
    if (line.rfind(field + ":", 0) == 0) return std::stod(line.substr(field.size() + 1)) * 1024.0;
  ADD_FAILURE() << "no " << field << " in /proc/self/status";
  return 0;
}

// The resident memory training p adds: in a child process, from its resident size before to its peak.  The
// child first returns the heap it inherits free (malloc_trim) and restarts its peak from its current size
// (clear_refs 5), so that neither the free memory left by earlier tests in this process nor this process's
// own size counts: the same figure whether this test runs alone (ctest) or after the others (the binary).
double measured_peak_bytes(const Point& p) {
  int fd[2];
  if (::pipe(fd) != 0) return 0;
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::malloc_trim(0);
    std::ofstream("/proc/self/clear_refs") << "5";
    const double before = status_bytes("VmRSS");
    run_point(p);
    const double added = status_bytes("VmHWM") - before;
    const bool written = ::write(fd[1], &added, sizeof added) == sizeof added;
    ::_exit(written ? 0 : 1);
  }
  ::close(fd[1]);
  double added = 0;
  const bool read = ::read(fd[0], &added, sizeof added) == sizeof added;
  ::close(fd[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  EXPECT_TRUE(read && WIFEXITED(status) && WEXITSTATUS(status) == 0);
  return added;
}

TEST(GridLimits, MemoryEstimateIsWithin30PercentOfMeasuredPeak) {
  // Points dominated by each part: evaluation set, training batch, model (linear, softmax), analysis.
  const std::vector<std::vector<std::pair<std::string, std::string>>> cases = {
      {{"d", "10"}, {"n", "100"}, {"eval_tasks", "50000"}, {"batch", "100"}, {"steps", "2"}, {"analysis", "false"}},
      {{"d", "5"}, {"n", "50"}, {"batch", "100000"}, {"steps", "2"}, {"eval_tasks", "100"}, {"analysis", "false"}},
      {{"d", "30"}, {"layers", "50"}, {"heads", "8"}, {"batch", "16"}, {"eval_tasks", "16"}, {"steps", "1"}, {"analysis", "false"}},
      {{"n", "300"}, {"layers", "2"}, {"heads", "4"}, {"attention", "softmax"}, {"batch", "16"}, {"eval_tasks", "16"},
       {"steps", "1"}, {"analysis", "false"}},
      {{"eval_tasks", "50000"}, {"batch", "100"}, {"steps", "2"}},
      // [VO23]'s transformer: its buffers (transformer_buffers) dominate
      {{"arch", "transformer"}, {"norm", "1"}, {"n", "200"}, {"layers", "4"}, {"heads", "4"}, {"mlp", "true"},
       {"batch", "16"}, {"eval_tasks", "16"}, {"steps", "1"}, {"analysis", "false"}},
      // the causal GPT-2 trained at every prefix: every token a key, LN_f and the head at every layer
      {{"arch", "transformer"}, {"norm", "1"}, {"n", "100"}, {"layers", "4"}, {"heads", "2"}, {"mlp", "true"},
       {"tokens", "padded"}, {"causal", "true"}, {"readout", "head"}, {"prefix_loss", "true"}, {"pe", "learnt"},
       {"pe_size", "6"}, {"layer_norm", "true"}, {"batch", "16"}, {"eval_tasks", "16"}, {"steps", "1"},
       {"analysis", "false"}}};
  for (const auto& c : cases) {
    Point p;
    std::string name;
    for (const auto& [k, v] : c) {
      ASSERT_EQ(point_set(p, k, v), "");
      name += k + "=" + v + " ";
    }
    const PointMemory m = estimate_memory(p);
    const double estimate = m.total - m.process, measured = measured_peak_bytes(p);
    EXPECT_GT(measured, 50e6) << name;   // large enough for the comparison to mean something
    EXPECT_NEAR(estimate / measured, 1.0, 0.3) << name << "estimate " << format_bytes(estimate) << ", measured "
                                                << format_bytes(measured) << " (most of it the " << m.largest() << ")";
  }
}

}  // namespace
}  // namespace icl::sweep
