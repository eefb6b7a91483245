// Grid expansion: product order, zip groups, replicas and seeds, costs, and errors that say where.
#include <gtest/gtest.h>

#include "icl/core/options.hpp"
#include "icl/sweep/grid.hpp"

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
  ASSERT_EQ(g.points.size(), 12u);
  EXPECT_EQ(g.points[0].layers, 1);
  EXPECT_EQ(g.points[5].layers, 1);
  EXPECT_EQ(g.points[6].layers, 2);
  EXPECT_EQ(find_option("noise")->get(g.points[2]), "set:1,3");
  EXPECT_EQ(g.replica[2], 0);
  EXPECT_EQ(g.replica[3], 1);
  // Seeds: a function of (sweep_seed, index) only; replicas differ.
  EXPECT_NE(g.points[2].seed, g.points[3].seed);
  Grid h;
  Spec other = spec_of({{"layers", {"1", "2"}, "f:1"}, {"noise", {"none", "set:1,3", "uniform:2"}, "f:2"}}, {}, 2);
  other.sweep_seed = 1;
  ASSERT_TRUE(expand(other, &h, &errors));
  EXPECT_NE(g.points[0].seed, h.points[0].seed);
}

TEST(Grid, ZipAdvancesOptionsTogether) {
  Grid g;
  std::vector<std::string> errors;
  ASSERT_TRUE(expand(spec_of({{"layers", {"1", "2", "3"}, "f:1"}, {"lr", {"1e-3", "5e-4", "2e-4"}, "f:2"}, {"d", {"5", "10"}, "f:3"}},
                             {{"layers", "lr"}}),
                     &g, &errors));
  ASSERT_EQ(g.points.size(), 6u);
  EXPECT_EQ(g.points[0].layers, 1);
  EXPECT_DOUBLE_EQ(g.points[0].lr, 1e-3);
  EXPECT_EQ(g.points[5].layers, 3);
  EXPECT_DOUBLE_EQ(g.points[5].lr, 2e-4);
  EXPECT_EQ(g.points[5].d, 10);
}

TEST(Grid, LongestFirstOrder) {
  Grid g;
  std::vector<std::string> errors;
  ASSERT_TRUE(expand(spec_of({{"steps", {"100", "10000", "1000"}, "f:1"}}), &g, &errors));
  EXPECT_EQ(g.order, (std::vector<int64_t>{1, 2, 0}));
  EXPECT_GT(g.cost[1], 5 * g.cost[2]);
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
  ASSERT_EQ(per_replica.points.size(), 12u);
  for (size_t i = 0; i < 12; ++i)
    for (size_t j = 0; j < 12; ++j) {
      EXPECT_EQ(per_replica.points[i].seed == per_replica.points[j].seed, per_replica.replica[i] == per_replica.replica[j]);
      if (i != j) { EXPECT_NE(per_point.points[i].seed, per_point.points[j].seed); }
    }
  EXPECT_EQ(per_replica.points[0].seed, per_point.points[0].seed);   // replica 0 of point 0: the same key
  EXPECT_NE(spec_hash(s.text), spec_hash(spec_of({{"optimizer", {"adam", "sgd"}, "f:1"}, {"lr", {"0.01", "0.02"}, "f:2"}}, {}, 3).text));
}

TEST(Grid, SpecHashChangesWithTheSpec) {
  const Spec a = spec_of({{"layers", {"1", "2"}, "f:1"}}), b = spec_of({{"layers", {"1", "3"}, "f:1"}});
  EXPECT_EQ(spec_hash(a.text), spec_hash(spec_of({{"layers", {"1", "2"}, "g:7"}}).text));   // where is not part of it
  EXPECT_NE(spec_hash(a.text), spec_hash(b.text));
}

}  // namespace
}  // namespace icl::sweep
