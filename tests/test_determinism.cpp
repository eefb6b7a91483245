// A point's result depends only on the point: same point, same bits; another seed, other bits; a task's
// data does not depend on the batch it is drawn in.
#include <gtest/gtest.h>

#include <cstring>

#include "icl/run/run_point.hpp"
#include "icl/train/train.hpp"
#include "test_util.hpp"

namespace icl {
namespace {

using test::make_point;

template <class V>
bool same_bits(const V& a, const V& b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), sizeof(a[0]) * a.size()) == 0);
}

bool same_result(const Result& a, const Result& b) {   // every field but the timings
  return a.status == b.status && a.message == b.message && a.steps_done == b.steps_done &&
         std::memcmp(&a.test_loss, &b.test_loss, sizeof(double)) == 0 &&
         std::memcmp(&a.train_loss, &b.train_loss, sizeof(double)) == 0 && same_bits(a.layer_test_loss, b.layer_test_loss) &&
         same_bits(a.curve_step, b.curve_step) && same_bits(a.curve_train_loss, b.curve_train_loss) &&
         same_bits(a.curve_test_loss, b.curve_test_loss) && same_bits(a.theta, b.theta) && same_bits(a.P, b.P) &&
         same_bits(a.Q, b.Q);
}

TEST(Determinism, SamePointGivesIdenticalBitsAndOtherSeedsDiffer) {
  for (const char* precision : {"float32", "float64"}) {
    const Point p = make_point({{"d", "4"}, {"n", "10"}, {"layers", "2"}, {"heads", "2"}, {"batch", "100"},
                                {"steps", "60"}, {"eval_every", "20"}, {"eval_tasks", "500"}, {"noise", "uniform:1"},
                                {"cov", "rotated:1,2,0.5,1"}, {"refresh", "3"}, {"clip", "1"}, {"precision", precision}});
    const Result a = run_point(p), b = run_point(p);
    ASSERT_EQ(a.status, Status::ok) << a.message;
    EXPECT_TRUE(same_result(a, b)) << precision;
    Point q = p;
    q.seed = p.seed + 1;
    const Result c = run_point(q);
    EXPECT_FALSE(same_bits(a.theta, c.theta)) << precision;
    EXPECT_NE(a.test_loss, c.test_loss) << precision;
  }
}

// eval_seed (issue 29): points of other seeds and optimisers evaluated on one shared set -- the same
// baseline losses to the bit -- while training is untouched; another eval_seed, another set.  Without
// it each point keeps its own set, drawn as before from (its seed, draws::eval_set).
TEST(Determinism, EvalSeedSharesOneEvaluationSetAcrossPoints) {
  Point p1 = make_point({{"d", "3"}, {"n", "8"}, {"layers", "2"}, {"param", "sparse_ab"}, {"batch", "32"},
                         {"steps", "20"}, {"eval_every", "10"}, {"eval_tasks", "200"}, {"x_dist", "gamma"},
                         {"optimizer", "sgd"}, {"lr", "0.01"}, {"seed", "1"}});
  Point p2 = p1;
  p2.seed = 2;
  p2.optimizer = Optimizer::adamw;
  EXPECT_EQ(eval_draw(p1).seed, 1u);
  EXPECT_EQ(eval_draw(p1).which.stream, draws::eval_set.stream);
  EXPECT_EQ(eval_draw(p1).which.block, draws::eval_set.block);
  const Result own1 = run_point(p1), own2 = run_point(p2);
  ASSERT_EQ(own1.analysis_status, AnalysisStatus::ok) << own1.analysis_message;
  {   // the default: loss_zero is the mean squared query label of the point's own set
    TaskBatch<float> set;
    set.resize(p1.eval_tasks, p1.d, p1.n);
    sample_tasks(make_task_law(p1), p1.seed, draws::eval_set.stream, draws::eval_set.block, set);
    double sum = 0;
    for (int t = 0; t < set.B; ++t) {
      Eigen::MatrixXd X;
      Eigen::VectorXd y;
      batch_task(set, t, &X, &y);
      sum += y[p1.n] * y[p1.n];
    }
    EXPECT_NEAR(own1.metrics.at("loss_zero"), sum / set.B, 1e-12 * sum / set.B);
  }
  EXPECT_NE(own1.metrics.at("loss_zero"), own2.metrics.at("loss_zero"));
  for (Point* p : {&p1, &p2}) ASSERT_EQ(point_set(*p, "eval_seed", "99"), "");
  EXPECT_EQ(eval_draw(p2).seed, 99u);
  const Result s1 = run_point(p1), s2 = run_point(p2);
  ASSERT_EQ(s2.analysis_status, AnalysisStatus::ok) << s2.analysis_message;
  for (const char* m : {"loss_zero", "loss_ols", "loss_ridge"})
    EXPECT_EQ(std::memcmp(&s1.metrics.at(m), &s2.metrics.at(m), sizeof(double)), 0) << m;
  EXPECT_NE(s1.metrics.at("loss_zero"), own1.metrics.at("loss_zero"));
  EXPECT_FALSE(same_bits(s1.curve_test_loss, own1.curve_test_loss));
  EXPECT_TRUE(same_bits(s1.theta, own1.theta));   // only the evaluation changed, not training
  EXPECT_TRUE(same_bits(s1.curve_train_loss, own1.curve_train_loss));
  ASSERT_EQ(point_set(p1, "eval_seed", "100"), "");
  EXPECT_NE(run_point(p1).metrics.at("loss_zero"), s1.metrics.at("loss_zero"));
}

// Task t of a draw is the same whether the batch holds 37 or 300 tasks (chunking and padding differ).
TEST(Determinism, TaskDataIndependentOfBatchSizeAndChunking) {
  const Point p = make_point({{"d", "3"}, {"n", "5"}, {"noise", "set:1,3"}, {"x_dist", "gamma"}});
  const auto small = test::make_batch<float>(p, 37), large = test::make_batch<float>(p, 300);
  for (int t = 0; t < 37; ++t) {
    Eigen::MatrixXd X1, X2;
    Eigen::VectorXd y1, y2;
    batch_task(small, t, &X1, &y1);
    batch_task(large, t, &X2, &y2);
    EXPECT_EQ(X1, X2) << "task " << t;
    EXPECT_EQ(y1, y2) << "task " << t;
    EXPECT_EQ(small.sigma[t], large.sigma[t]);
  }
}

TEST(Determinism, DivergingPointIsReportedNotThrown) {
  const Point p = make_point({{"d", "10"}, {"n", "20"}, {"layers", "7"}, {"batch", "64"}, {"steps", "50"},
                              {"init_scale", "0.05"}, {"eval_tasks", "64"}});
  const Result r = run_point(p);
  EXPECT_EQ(r.status, Status::diverged);
  EXPECT_NE(r.message.find("step"), std::string::npos) << r.message;
  EXPECT_TRUE(std::isnan(r.test_loss));
}

// The evaluation-loss rule follows `diverge_factor`: a factor below 1 fires at the first evaluation of a
// point that trains well; 0 turns the rule off and the same point finishes.
TEST(Determinism, DivergeFactorGovernsTheEvaluationRule) {
  const std::vector<std::pair<std::string, std::string>> base = {{"d", "3"}, {"n", "8"}, {"batch", "64"}, {"steps", "40"},
      {"eval_every", "10"}, {"eval_tasks", "64"}, {"analysis", "false"}};
  auto with = [&](const char* factor) {
    auto o = base;
    o.emplace_back("diverge_factor", factor);
    return run_point(make_point(o));
  };
  const Result strict = with("1e-9");
  EXPECT_EQ(strict.status, Status::diverged);
  EXPECT_EQ(strict.steps_done, 10);
  EXPECT_NE(strict.message.find("evaluation loss"), std::string::npos) << strict.message;
  const Result off = with("0");
  EXPECT_EQ(off.status, Status::ok) << off.message;
  EXPECT_EQ(off.steps_done, 40);
}

// Successive halving's legs: training to a rung, stopping, and going on from the checkpoint gives the
// bits of the run straight through, analysis included (refresh > 1 resumes inside a batch's lifetime,
// Adam's step count and the divergence reference carry over), for LSA and transformer models.
TEST(Determinism, LegsThroughCheckpointsComposeToTheStraightRun) {
  const std::vector<std::vector<std::pair<std::string, std::string>>> cases = {
      {{"d", "4"}, {"n", "10"}, {"layers", "2"}, {"batch", "100"}, {"steps", "60"}, {"eval_every", "10"}, {"eval_tasks", "500"},
       {"noise", "uniform:1"}, {"refresh", "3"}, {"clip", "1"}, {"schedule", "cosine"}, {"warmup", "5"}},
      {{"d", "3"}, {"n", "6"}, {"layers", "2"}, {"batch", "64"}, {"steps", "40"}, {"eval_every", "10"}, {"eval_tasks", "200"},
       {"arch", "transformer"}, {"norm", "1"}, {"mlp", "true"}, {"heads", "2"}, {"optimizer", "adamw"}, {"precision", "float64"}}};
  for (const auto& options : cases) {
    const Point p = make_point(options);
    const Result straight = run_point(p);
    ASSERT_EQ(straight.status, Status::ok) << straight.message;
    Checkpoint first, second;
    const Result a = run_point(p, nullptr, nullptr, Leg{nullptr, 20}, &first);
    ASSERT_EQ(a.status, Status::ok);
    EXPECT_EQ(a.steps_done, 20);
    EXPECT_EQ(first.run.steps_done, 20);
    EXPECT_EQ(a.analysis_status, AnalysisStatus::skipped);
    EXPECT_EQ(first.run.curve_test_loss.back(), straight.curve_test_loss[2]);   // steps 0, 10, 20
    const Result b = run_point(p, nullptr, nullptr, Leg{&first, 30}, &second);
    EXPECT_EQ(second.run.steps_done, 30);
    const Result end = run_point(p, nullptr, nullptr, Leg{&second, 0});
    EXPECT_TRUE(same_result(end, straight));
    EXPECT_EQ(end.analysis_status, straight.analysis_status);
    ASSERT_EQ(end.metrics.size(), straight.metrics.size());
    for (const auto& [name, v] : straight.metrics) {
      if (name.find("seconds") == std::string::npos) {   // timings
        EXPECT_EQ(std::memcmp(&v, &end.metrics.at(name), sizeof v), 0) << name;
      }
    }
    EXPECT_GT(end.seconds_total, second.run.seconds_total);
  }
}

// eval_log: the log-spaced records round(10^(j/K)) join the regular ones, and evaluating more often leaves
// the trajectory's bits alone.
TEST(Determinism, LogSpacedEvaluationsAddRecordsAndLeaveTheTrajectoryAlone) {
  Point p = test::make_point({{"d", "3"}, {"n", "6"}, {"layers", "2"}, {"batch", "64"}, {"steps", "200"},
                              {"eval_every", "100"}, {"eval_tasks", "256"}, {"analysis", "false"}});
  const Result regular = run_point(p);
  p.eval_log = 3;   // 10^(j/3): 1, 2.15, 4.64, 10, 21.5, 46.4, 100, 215
  const Result logged = run_point(p);
  ASSERT_EQ(regular.status, Status::ok);
  ASSERT_EQ(logged.status, Status::ok);
  EXPECT_EQ(regular.curve_step, (std::vector<int64_t>{0, 100, 200}));
  EXPECT_EQ(logged.curve_step, (std::vector<int64_t>{0, 1, 2, 5, 10, 22, 46, 100, 200}));
  EXPECT_LE(static_cast<int64_t>(logged.curve_step.size()), eval_record_bound(p));
  EXPECT_EQ(std::memcmp(regular.theta.data(), logged.theta.data(), sizeof(double) * regular.theta.size()), 0);
  EXPECT_EQ(regular.test_loss, logged.test_loss);
  EXPECT_EQ(regular.curve_test_loss[1], logged.curve_test_loss[7]);   // step 100 in both
  // A record's train loss is the mean since the previous record: at step 1, the first step's loss.
  EXPECT_TRUE(std::isfinite(logged.curve_train_loss[1]));
  EXPECT_NE(logged.curve_train_loss[7], regular.curve_train_loss[1]);   // 47..100 vs 1..100
}

}  // namespace
}  // namespace icl
