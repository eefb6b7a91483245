// The task laws of docs/science.md section 1, checked by their moments on large seeded samples, and the
// vectorised sampler checked bitwise against the scalar transcription of its contract (data_ref.hpp).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <sstream>

#include "data_ref.hpp"
#include "icl/base/rng.hpp"
#include "test_util.hpp"

namespace icl {
namespace {

using test::make_batch;
using test::make_point;

struct Moments {
  Eigen::MatrixXd x_cov;   // E[x x^T] over all tokens
  Eigen::MatrixXd w_cov;   // E[w w^T]
  double resid_var = 0;    // E[(y_i - <w, x_i>)^2] over context tokens
  double query_resid = 0;  // max |y_q - <w, x_q>|
  double max_abs_x = 0, mean_norm2 = 0, min_norm = 1e300, max_norm = 0;
};

Moments moments(const Point& p, int B) {
  const auto batch = make_batch<double>(p, B);
  Moments m;
  m.x_cov = Eigen::MatrixXd::Zero(p.d, p.d);
  m.w_cov = Eigen::MatrixXd::Zero(p.d, p.d);
  for (int t = 0; t < B; ++t) {
    Eigen::MatrixXd X;
    Eigen::VectorXd y;
    batch_task(batch, t, &X, &y);
    const Eigen::Map<const Eigen::VectorXd> w(batch.w.data() + static_cast<size_t>(t) * p.d, p.d);
    m.x_cov += X * X.transpose() / (B * X.cols());
    m.w_cov += w * w.transpose() / B;
    for (int j = 0; j < p.n; ++j) m.resid_var += std::pow(y(j) - w.dot(X.col(j)), 2) / (B * p.n);
    m.query_resid = std::max(m.query_resid, std::fabs(y(p.n) - w.dot(X.col(p.n))));
    m.max_abs_x = std::max(m.max_abs_x, X.cwiseAbs().maxCoeff());
    for (int j = 0; j <= p.n; ++j) {
      const double nn = X.col(j).norm();
      m.mean_norm2 += nn * nn / (B * X.cols());
      m.min_norm = std::min(m.min_norm, nn);
      m.max_norm = std::max(m.max_norm, nn);
    }
  }
  return m;
}

TEST(Data, GaussianRotatedCovarianceAndInversePrior) {
  const Point p = make_point({{"d", "4"}, {"n", "10"}, {"cov", "rotated:1,4,0.25,2"}, {"w_prior", "inverse_cov"},
                              {"precision", "float64"}, {"seed", "5"}});
  const TaskLaw law = make_task_law(p);
  const Moments m = moments(p, 20000);
  EXPECT_LT((m.x_cov - law.Sigma).norm() / law.Sigma.norm(), 0.02);
  EXPECT_LT((m.w_cov - law.Sigma.inverse()).norm() / law.Sigma.inverse().norm(), 0.03);
  EXPECT_LT(m.query_resid, 1e-12);   // noiseless query
  EXPECT_LT(m.resid_var, 1e-20);     // noise = none
  const Eigen::VectorXd ev = Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd>(law.Sigma).eigenvalues();
  EXPECT_NEAR(ev(0), 0.25, 1e-12);
  EXPECT_NEAR(ev(3), 4.0, 1e-12);
  EXPECT_GT(std::fabs(law.Sigma(0, 1)), 1e-3);   // really rotated
}

TEST(Data, NoiseLaws) {
  struct Case { const char* noise; double var; };   // E[sigma^2]
  for (const Case c : {Case{"fixed:0.5", 0.25}, Case{"uniform:2", 4.0 / 3.0}, Case{"set:1,3", 5.0}}) {
    const Point p = make_point({{"d", "3"}, {"n", "8"}, {"noise", c.noise}, {"precision", "float64"}});
    EXPECT_NEAR(moments(p, 20000).resid_var, c.var, 0.03 * c.var) << c.noise;
  }
  const Point p = make_point({{"d", "3"}, {"n", "8"}, {"noise", "set:1,3"}});
  const auto batch = make_batch<float>(p, 1000);
  int ones = 0;
  for (double s : batch.sigma) {
    EXPECT_TRUE(s == 1.0 || s == 3.0);
    ones += s == 1.0;
  }
  EXPECT_NEAR(ones, 500, 60);
}

TEST(Data, UniformSphereAndGammaInputs) {
  const Moments u = moments(make_point({{"d", "10"}, {"n", "10"}, {"x_dist", "uniform"}, {"precision", "float64"}}), 5000);
  EXPECT_LE(u.max_abs_x, 0.5);
  EXPECT_NEAR(u.x_cov(0, 0), 0.25 / 3, 0.003);
  const Moments s = moments(make_point({{"d", "5"}, {"n", "10"}, {"x_dist", "sphere"}, {"precision", "float64"}}), 2000);
  EXPECT_NEAR(s.min_norm, 1.0, 1e-12);
  EXPECT_NEAR(s.max_norm, 1.0, 1e-12);
}

// [VO23]'s other input laws (create_ood_data): each task's context inputs have Frobenius norm x_scale, the
// query is divided by the same norm, a third of the tasks draw from each law (the contract's index), and each
// law has its shape (per task, standardised by the task's RMS): exponential draws are positive with mean/RMS
// 1/sqrt(2); normal and Laplace draws are symmetric with kurtosis 3 and 6 (a 110-draw sample kurtosis is
// biased low by ~6/110 and ~35/110).  A teacher scale multiplies w and so every label.
TEST(Data, OtherInputLawsAndTeacherScale) {
  const Point p = make_point({{"d", "10"}, {"n", "10"}, {"x_dist", "uniform:0.5"}, {"precision", "float64"}, {"seed", "3"}});
  TaskLaw law = make_task_law(p);
  law.other_inputs = true;
  law.x_scale = 2.0;
  const int B = 6000;
  auto draw = [&](double w_scale) {
    law.w_scale = w_scale;
    TaskBatch<double> batch;
    batch.resize(B, p.d, p.n);
    sample_tasks(law, p.seed, Stream::analysis, 800, batch);
    return batch;
  };
  const TaskBatch<double> batch = draw(3.0), unscaled = draw(1.0);
  struct Sums { int tasks = 0; double mean = 0, negative = 0, kurtosis = 0; };
  Sums by_law[3];
  for (int t = 0; t < B; ++t) {
    Eigen::MatrixXd X, X1;
    Eigen::VectorXd y, y1;
    batch_task(batch, t, &X, &y);
    batch_task(unscaled, t, &X1, &y1);
    ASSERT_NEAR(X.leftCols(p.n).norm(), 2.0, 1e-12) << "task " << t;
    ASSERT_EQ((X - X1).norm(), 0.0);
    ASSERT_LT((y - 3.0 * y1).cwiseAbs().maxCoeff(), 1e-12 * (1 + y1.cwiseAbs().maxCoeff()));
    const uint64_t key = rng_key(p.seed, Stream::analysis, 800, static_cast<uint64_t>(t));
    Sums& a = by_law[std::min(2, static_cast<int>(3.0 * rng_uniform(rng_key(key, kOtherLaw), 0)))];
    const Eigen::ArrayXd x = X.topRows(p.d).reshaped().array();
    const double m2 = x.square().mean();
    ++a.tasks;
    a.mean += x.mean() / std::sqrt(m2);
    a.negative += static_cast<double>((x < 0).count()) / x.size();
    a.kurtosis += x.pow(4).mean() / (m2 * m2);
  }
  for (const Sums& a : by_law) EXPECT_NEAR(a.tasks, B / 3.0, 4 * std::sqrt(B * 2.0 / 9));
  EXPECT_EQ(by_law[0].negative, 0.0);
  EXPECT_NEAR(by_law[0].mean / by_law[0].tasks, 1 / std::sqrt(2.0), 0.01);
  for (const Sums* a : {&by_law[1], &by_law[2]}) EXPECT_NEAR(a->negative / a->tasks, 0.5, 0.005);
  EXPECT_NEAR(by_law[1].kurtosis / by_law[1].tasks, 3.0 - 6.0 / 110, 0.1);
  EXPECT_NEAR(by_law[2].kurtosis / by_law[2].tasks, 6.0 - 35.0 / 110, 0.4);
}

// [A24]'s heavy-tailed law x = sqrt(G) u, G ~ Gamma(k, scale sqrt(10/k)) (its linear_transformer.py):
// |x|^2 = G, so E|x|^2 = sqrt(10 k) = 1 at k = 0.1 and Var|x|^2 = k (10/k) = 10.  At k = 2.5 and d = 5
// the scale is 2, G is chi-square with 5 degrees of freedom and x is exactly N(0, I_5).
TEST(Data, GammaInputsFollowTheA24Law) {
  struct Case { const char* law; double mean, var; };
  for (const Case c : {Case{"gamma:0.1", 1.0, 10.0}, Case{"gamma:2.5", 5.0, 10.0}}) {
    const Point p = make_point({{"d", "5"}, {"n", "20"}, {"x_dist", c.law}, {"precision", "float64"}});
    const int B = 20000;
    const auto batch = make_batch<double>(p, B);
    std::vector<double> g;   // |x|^2 of every token
    double max_norm2 = 0;
    for (int t = 0; t < B; ++t) {
      Eigen::MatrixXd X;
      Eigen::VectorXd y;
      batch_task(batch, t, &X, &y);
      for (int j = 0; j <= p.n; ++j) g.push_back(X.col(j).squaredNorm());
    }
    const double N = static_cast<double>(g.size());
    double mean = 0, var = 0;
    for (double v : g) mean += v / N;
    for (double v : g) { var += (v - mean) * (v - mean) / (N - 1); max_norm2 = std::max(max_norm2, v); }
    const double se = std::sqrt(var / N);
    EXPECT_NEAR(mean, c.mean, 4 * se) << c.law << ": E|x|^2 = " << mean << " +- " << se;
    EXPECT_NEAR(var, c.var, 0.1 * c.var) << c.law;
    EXPECT_NEAR(make_task_law(p).Sigma(0, 0), c.mean / p.d, 1e-12) << c.law;   // the law's true covariance
    if (c.mean == 1.0) {
      EXPECT_GT(max_norm2, 30.0);   // heavy tail: P(G > 30) ~ 1.6e-3 at k = 0.1
    }
  }
  const Moments m = moments(make_point({{"d", "5"}, {"n", "20"}, {"x_dist", "gamma:2.5"}, {"precision", "float64"}}), 20000);
  EXPECT_LT((m.x_cov - Eigen::MatrixXd::Identity(5, 5)).cwiseAbs().maxCoeff(), 0.02);   // x ~ N(0, I)
}

template <class T>
bool same_bits(T a, T b) { return std::memcmp(&a, &b, sizeof(T)) == 0; }

// "" when `batch` holds exactly the reference's tasks (every bit, padding lanes zero), else the first difference.
template <class T>
std::string bitwise_difference(const TaskBatch<T>& batch, const std::vector<test::RefTask<T>>& ref) {
  const int d = batch.d, N = batch.n + 1, V = kLanes<T>;
  std::ostringstream why;
  why.precision(17);
  auto differ = [&](const char* what, int t, int index, double got, double want) {
    why << what << " of task " << t << " [" << index << "]: sample_tasks " << got << ", reference " << want;
    return why.str();
  };
  for (int t = 0; t < batch.chunks * V; ++t) {
    const bool live = t < batch.B;
    const Lane<T>* Z = batch.chunk_Z(t / V);
    for (int x = 0; x < (d + 1) * N; ++x) {
      const T want = live ? ref[t].Z[x] : T(0);
      if (!same_bits(Z[x][t % V], want)) return differ("Z", t, x, Z[x][t % V], want);
    }
    const T y = batch.y[t / V][t % V], y_want = live ? ref[t].y_query : T(0);
    if (!same_bits(y, y_want)) return differ("y", t, 0, y, y_want);
    const T mask = batch.mask[t / V][t % V];
    if (!same_bits(mask, live ? T(1) : T(0))) return differ("mask", t, 0, mask, live);
    if (!live) continue;
    if (!same_bits(batch.sigma[t], ref[t].sigma)) return differ("sigma", t, 0, batch.sigma[t], ref[t].sigma);
    for (int i = 0; i < d; ++i) {
      const double w = batch.w[static_cast<size_t>(t) * d + i];
      if (!same_bits(w, ref[t].w[i])) return differ("w", t, i, w, ref[t].w[i]);
    }
  }
  return "";
}

// Draws B tasks of `law` into `batch`; "" when they equal the scalar reference bit for bit, else where not.
template <class T>
std::string differs_from_reference(const TaskLaw& law, uint64_t seed, Stream stream, uint64_t block, int B,
                                   TaskBatch<T>& batch) {
  batch.resize(B, law.d, law.n);
  sample_tasks(law, seed, stream, block, batch);
  return bitwise_difference(batch, test::sample_tasks_ref<T>(law, seed, stream, block, B));
}

std::string spectrum(int d) {
  std::string s;
  for (int i = 0; i < d; ++i) s += (i ? "," : "") + std::to_string(0.25 + 0.75 * i);
  return s;
}

// Every input law, covariance, w prior, noise law and out-of-distribution scale of the option table,
// float and double, batch sizes that leave a chunk partly padded, odd and even normal counts, several
// [VO23]'s sine task (create_reg_data_sin): bitwise against the scalar reference, and its law: x in
// (-5, 5), a = 0.1 + 0.4 u in [0.1, 0.5], every label a sin(x + pi u) with the task's own (a, u).
TEST(Data, SineTaskMatchesTheReferenceAndItsLaw) {
  const Point p = test::make_point({{"task", "sine"}, {"d", "1"}, {"n", "10"}, {"x_dist", "uniform:5"}, {"seed", "3"}});
  const TaskLaw law = make_task_law(p);
  for (const int B : {1, 17, 1000}) {
    TaskBatch<float> bf;
    ASSERT_EQ(differs_from_reference(law, p.seed, Stream::train, 5, B, bf), "") << B;
    TaskBatch<double> bd;
    ASSERT_EQ(differs_from_reference(law, p.seed, Stream::train, 5, B, bd), "") << B;
    double amin = 1, amax = 0;
    for (int t = 0; t < B; ++t) {
      Eigen::MatrixXd X;
      Eigen::VectorXd y;
      batch_task(bd, t, &X, &y);
      const double a = bd.w[t], u = (a - 0.1) / 0.4;
      amin = std::min(amin, a);
      amax = std::max(amax, a);
      for (int j = 0; j <= 10; ++j) {
        ASSERT_LT(std::fabs(X(0, j)), 5.0);
        ASSERT_NEAR(y[j], a * std::sin(X(0, j) + 3.14159265358979323846 * u), 1e-12);
      }
    }
    if (B == 1000) {
      EXPECT_GE(amin, 0.1);
      EXPECT_LE(amax, 0.5);
      EXPECT_LT(amin, 0.11);
      EXPECT_GT(amax, 0.49);
    }
  }
}

// seeds and draws: sample_tasks equals the reference bit for bit.
TEST(Data, SampleTasksMatchesTheScalarReferenceBitwise) {
  struct Shape { int d, n; };                      // m = d + (n+1) d + n normals: 3, 19, 22, 43
  struct Input { std::string x_dist, cov; };
  struct DrawOf { uint64_t seed; Stream stream; uint64_t block; };
  struct Shift { double x_scale, w_scale; bool other_inputs; };   // the analysis's out-of-distribution laws
  const std::vector<Shift> shifts = {{1.0, 1.0, false}, {2.5, 1.0, false}, {1.0, 3.0, false}, {2.5, 0.5, true}};
  const std::vector<DrawOf> draw_keys = {{0, Stream::train, 7}, {1, Stream::eval, 0}, {987654321, Stream::analysis, 301}};
  int cases = 0, checked = 0;
  for (const Shape sh : {Shape{1, 1}, Shape{2, 5}, Shape{3, 4}, Shape{4, 7}}) {
    const std::vector<Input> inputs = {{"gaussian", "identity"}, {"gaussian", "diag:" + spectrum(sh.d)},
                                       {"gaussian", "rotated:" + spectrum(sh.d)},
                                       {"gaussian", "rotated_per_task:" + spectrum(sh.d)}, {"uniform:0.7", "identity"},
                                       {"sphere", "identity"}, {"gamma:0.1", "identity"}, {"gamma:2.5", "identity"}};
    for (const Input& in : inputs)
      for (const char* w_prior : {"identity", "inverse_cov"})
        for (const char* noise : {"none", "fixed:0.3", "uniform:0.8", "set:0.1,0.5,2"})
          for (const DrawOf& dr : draw_keys) {
            if (in.cov.rfind("rotated_per_task", 0) == 0 && std::string(w_prior) == "inverse_cov") continue;
            const Point p = test::make_point({{"d", std::to_string(sh.d)}, {"n", std::to_string(sh.n)},
                                              {"x_dist", in.x_dist}, {"cov", in.cov}, {"w_prior", w_prior},
                                              {"noise", noise}, {"seed", std::to_string(dr.seed)}});
            for (const Shift shift : shifts) {
              TaskLaw law = make_task_law(p);
              law.x_scale = shift.x_scale;
              law.w_scale = shift.w_scale;
              law.other_inputs = shift.other_inputs;
              if (law.other_inputs && in.x_dist != "gaussian") continue;   // the other laws ignore x_dist
              ++cases;
              for (const int B : {1, 3, 17}) {
                const std::string where = "d=" + std::to_string(sh.d) + " n=" + std::to_string(sh.n) + " x_dist=" +
                                          in.x_dist + " cov=" + in.cov + " w_prior=" + w_prior + " noise=" + noise +
                                          " seed=" + std::to_string(dr.seed) + " x_scale=" + std::to_string(shift.x_scale) +
                                          " w_scale=" + std::to_string(shift.w_scale) + " other=" + std::to_string(shift.other_inputs) +
                                          " B=" + std::to_string(B);
                for (const Sampler sampler : {Sampler::v1, Sampler::v2}) {
                  law.sampler = sampler;
                  TaskBatch<float> bf;
                  ASSERT_EQ(differs_from_reference(law, dr.seed, dr.stream, dr.block, B, bf), "")
                      << "float sampler v" << static_cast<int>(sampler) + 1 << " " << where;
                }
                TaskBatch<double> bd;
                ASSERT_EQ(differs_from_reference(law, dr.seed, dr.stream, dr.block, B, bd), "") << "double " << where;
                checked += 3;
              }
            }
          }
  }
  // rotated_per_task: w_prior = identity only; the other laws: the 4 gaussian covariances only
  EXPECT_EQ(cases, (4 * 7 * 2 * 4 * 3 + 4 * 1 * 4 * 3) * 3 + (4 * 3 * 2 * 4 * 3 + 4 * 1 * 4 * 3));
  EXPECT_EQ(checked, cases * 3 * 3);
}

// cov = rotated_per_task: every task its own covariance U_t diag(l) U_t^T. Over many tokens of one task the
// empirical covariance has the spectrum l in a basis of its own; across tasks the mean covariance is
// (mean l) I, which the law reports as Sigma.
TEST(Data, PerTaskRotationsGiveEachTaskItsOwnCovariance) {
  const Point p = make_point({{"d", "3"}, {"n", "20000"}, {"cov", "rotated_per_task:4,1,0.25"}, {"precision", "float64"}});
  const TaskLaw law = make_task_law(p);
  EXPECT_TRUE(law.Sigma.isApprox(Eigen::MatrixXd::Identity(3, 3) * 1.75, 1e-12));
  TaskBatch<double> b;
  b.resize(2, 3, 20000);
  sample_tasks(law, 1, Stream::train, 0, b);
  Eigen::MatrixXd C[2];
  for (int t = 0; t < 2; ++t) {
    Eigen::MatrixXd X;
    Eigen::VectorXd y;
    batch_task(b, t, &X, &y);
    C[t] = X * X.transpose() / X.cols();
    Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> es(C[t]);
    EXPECT_NEAR(es.eigenvalues()(0), 0.25, 0.02) << t;
    EXPECT_NEAR(es.eigenvalues()(1), 1.0, 0.05) << t;
    EXPECT_NEAR(es.eigenvalues()(2), 4.0, 0.2) << t;
  }
  EXPECT_GT((C[0] - C[1]).norm(), 1.0);   // two tasks, two bases
}

// Finite task diversity (task_pool) and a finite training set (train_contexts): bitwise against the scalar
// reference, with inputs in each basis and noise, alone and together.
TEST(Data, PoolAndContextsMatchTheScalarReferenceBitwise) {
  struct Case { const char *pool, *contexts, *cov, *w_prior; };
  const Case cases[] = {{"5", "0", "identity", "identity"},     {"0", "7", "identity", "identity"},
                        {"3", "11", "identity", "identity"},    {"1", "1", "identity", "identity"},
                        {"6", "4", "rotated:1,4,0.25", "inverse_cov"}};
  for (const Case& c : cases)
    for (const char* noise : {"none", "set:0.1,0.5,2"}) {
      const Point p = make_point({{"d", "3"}, {"n", "5"}, {"task_pool", c.pool}, {"train_contexts", c.contexts},
                                  {"cov", c.cov}, {"w_prior", c.w_prior}, {"noise", noise}, {"seed", "41"}});
      const TaskLaw law = training_law(p);
      for (const int B : {1, 17}) {
        const std::string where = std::string("pool=") + c.pool + " contexts=" + c.contexts + " cov=" + c.cov +
                                  " noise=" + noise + " B=" + std::to_string(B);
        TaskBatch<float> bf;
        ASSERT_EQ(differs_from_reference(law, p.seed, Stream::train, 9, B, bf), "") << where;
        TaskBatch<double> bd;
        ASSERT_EQ(differs_from_reference(law, p.seed, Stream::train, 9, B, bd), "") << where;
      }
    }
}

// The pool: drawn from (seed, m) only, so a smaller pool is the start of a larger one; every training
// task's w is a pool member, each used about equally; the fresh law (test loss, analyses) is untouched.
TEST(Data, TaskPoolIsFixedNestedAndSampledUniformly) {
  const auto point = [](const char* M) {
    return make_point({{"d", "4"}, {"n", "6"}, {"task_pool", M}, {"precision", "float64"}, {"seed", "5"}});
  };
  const TaskLaw small = training_law(point("4")), large = training_law(point("64"));
  ASSERT_EQ(small.pool.cols(), 4);
  EXPECT_EQ(small.pool, large.pool.leftCols(4));
  EXPECT_EQ(pool_law(point("4")).pool, small.pool);
  EXPECT_EQ(pool_law(point("4")).contexts, 0);
  EXPECT_EQ(make_task_law(point("4")).pool.size(), 0);
  EXPECT_NEAR(large.pool.squaredNorm() / (64 * 4), 1.0, 0.25);   // w ~ N(0, I)
  std::vector<int> used(4, 0);
  for (int block = 0; block < 10; ++block) {
    TaskBatch<double> b;
    b.resize(1000, 4, 6);
    sample_tasks(small, 5, Stream::train, block, b);
    for (int t = 0; t < b.B; ++t) {
      int hit = -1;
      for (int m = 0; m < 4; ++m)
        if (Eigen::Map<const Eigen::VectorXd>(b.w.data() + 4 * t, 4) == small.pool.col(m)) hit = m;
      ASSERT_GE(hit, 0) << "task " << t << " of block " << block << " is not a pool member";
      ++used[hit];
    }
  }
  for (int m = 0; m < 4; ++m) EXPECT_NEAR(used[m], 2500, 200) << m;   // binomial s.d. 43
}

// A finite training set: every draw picks whole contexts (inputs, w, noise) from the same P, uniformly.
TEST(Data, TrainingContextsAreAFixedSetDrawnUniformly) {
  const int P = 5;
  const Point p = make_point({{"d", "2"}, {"n", "3"}, {"train_contexts", std::to_string(P)}, {"noise", "fixed:0.5"},
                              {"precision", "float64"}, {"seed", "8"}});
  const TaskLaw law = training_law(p);
  std::vector<std::vector<double>> seen;   // each context's tokens and query label
  std::vector<int> count;
  for (int block = 0; block < 20; ++block) {
    TaskBatch<double> b;
    b.resize(100, 2, 3);
    sample_tasks(law, p.seed, Stream::train, block, b);
    for (int t = 0; t < b.B; ++t) {
      Eigen::MatrixXd X;
      Eigen::VectorXd y;
      batch_task(b, t, &X, &y);
      std::vector<double> v(X.data(), X.data() + X.size());
      v.insert(v.end(), y.data(), y.data() + y.size());
      const auto it = std::find(seen.begin(), seen.end(), v);
      if (it == seen.end()) {
        seen.push_back(v);
        count.push_back(1);
      } else {
        ++count[it - seen.begin()];
      }
    }
  }
  ASSERT_EQ(static_cast<int>(seen.size()), P);
  for (int c : count) EXPECT_NEAR(c, 400, 80);   // binomial s.d. 18
}

// Sampler v2's kernel against libm in double, over every u1 of the 2^24 (each with a different u2, so that all
// 8 octants and their mirrored halves are met many times): each normal within 4 float ulps of r of the exact
// r cos(theta), r sin(theta) of the same u1 (the float one) and theta.  A wrong coefficient, octant or sign
// moves some normal by far more.
TEST(Normals, V2KernelIsBoxMullerToFloatPrecision) {
  double worst = 0.0;
  for (int32_t b1 = 0; b1 < (1 << 24); ++b1) {
    const auto b2 = static_cast<int32_t>(rng_bits(12345, static_cast<uint64_t>(b1)) & 0xffffffu);
    float zc, zs;
    normals_v2::box_muller<float, int32_t>(b1, b2, &zc, &zs);
    const double u1 = (static_cast<float>(b1) + 0.5f) * 0x1p-24f;
    const double r = std::sqrt(-2.0 * std::log(u1)), theta = 6.283185307179586477 * ((b2 + 0.5) * 0x1p-24);
    const double ulp_r = r * 0x1p-23;
    worst = std::max({worst, std::abs(zc - r * std::cos(theta)) / ulp_r, std::abs(zs - r * std::sin(theta)) / ulp_r});
    if (worst > 4.0) FAIL() << "b1 = " << b1 << " b2 = " << b2 << ": " << zc << ", " << zs << " against "
                            << r * std::cos(theta) << ", " << r * std::sin(theta);
  }
  std::printf("sampler v2: the largest error over 2^24 pairs is %.2f float ulps of r\n", worst);
}

// The normals of sample_tasks' chunks by each sampler (contract step 1, as the engine draws them): moments
// and the Kolmogorov-Smirnov distance to the standard normal over 2^21 normals, each within what chance
// allows at 1e-4 (mean, variance, skewness, kurtosis: 4 s.e.; KS: sqrt(n) D < 2.0).
TEST(Normals, EachSamplerDrawsStandardNormals) {
  for (const Sampler sampler : {Sampler::v1, Sampler::v2}) {
    constexpr int V = kLanes<float>, mp = 64;
    std::vector<double> z;
    LaneVec<float> G(2 * mp);
    for (uint64_t c = 0; z.size() < (1u << 21); ++c) {
      uint64_t keys[V];
      for (int v = 0; v < V; ++v) keys[v] = rng_key(5, Stream::train, c, static_cast<uint64_t>(v));
      chunk_normals<float>(sampler, keys, mp, G.data());
      for (const Lane<float>& g : G)
        for (int v = 0; v < V; ++v) z.push_back(g[v]);
    }
    const auto n = static_cast<double>(z.size());
    double m1 = 0, m2 = 0, m3 = 0, m4 = 0;
    for (double x : z) { m1 += x / n; m2 += x * x / n; m3 += x * x * x / n; m4 += x * x * x * x / n; }
    const char* name = sampler == Sampler::v1 ? "v1" : "v2";
    EXPECT_NEAR(m1, 0.0, 4 * std::sqrt(1 / n)) << name;
    EXPECT_NEAR(m2, 1.0, 4 * std::sqrt(2 / n)) << name;
    EXPECT_NEAR(m3, 0.0, 4 * std::sqrt(15 / n)) << name;
    EXPECT_NEAR(m4, 3.0, 4 * std::sqrt(96 / n)) << name;
    std::sort(z.begin(), z.end());
    double ks = 0.0;
    for (size_t i = 0; i < z.size(); ++i) {
      const double F = 0.5 * std::erfc(-z[i] / std::sqrt(2.0));
      ks = std::max({ks, F - i / n, (i + 1) / n - F});
    }
    EXPECT_LT(std::sqrt(n) * ks, 2.0) << name;
    std::printf("sampler %s: mean %.5f variance %.5f skewness %.5f kurtosis %.5f, sqrt(n) KS %.3f (n = %.0f)\n", name, m1,
                m2, m3, m4, std::sqrt(n) * ks, n);
  }
}

TEST(Rng, NormalMomentsAndIndependenceOfStreams) {
  const int n = 200000;
  std::vector<double> z(n);
  rng_normals(rng_key(1, Stream::train), 0, n, z.data());
  double m1 = 0, m2 = 0, m4 = 0;
  for (double x : z) { m1 += x / n; m2 += x * x / n; m4 += x * x * x * x / n; }
  EXPECT_NEAR(m1, 0.0, 0.01);
  EXPECT_NEAR(m2, 1.0, 0.01);
  EXPECT_NEAR(m4, 3.0, 0.06);
  EXPECT_NE(rng_key(1, Stream::train), rng_key(1, Stream::eval));
  EXPECT_NE(rng_key(1, Stream::train, 0, 1), rng_key(1, Stream::train, 1, 0));
  EXPECT_EQ(rng_normal(rng_key(3, Stream::init), 17), rng_normal(rng_key(3, Stream::init), 17));
}

}  // namespace
}  // namespace icl
