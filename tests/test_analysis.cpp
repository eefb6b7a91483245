// Baselines and analyses against closed forms, paper values and planted answers (docs/science.md sections 4-6).
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>
#include <cmath>
#include <cstdio>
#include <set>

#include "icl/analysis/analysis.hpp"
#include "icl/analysis/baselines.hpp"
#include "icl/analysis/gdpp.hpp"
#include "icl/analysis/landscape.hpp"
#include "icl/analysis/metrics.hpp"
#include "icl/base/cancel.hpp"
#include "icl/model/params.hpp"
#include "icl/run/run_point.hpp"
#include "icl/train/objective.hpp"
#include "test_util.hpp"

namespace icl {
namespace {

using test::make_point;

struct Sample {
  std::vector<TaskSpectrum> sp;
  std::vector<double> y, sigma;
};

// A "trained" run holding planted weights theta, expanded as training would.
Trained planted(const ParamLayout& layout, const std::vector<double>& theta) {
  Trained trained;
  trained.theta = theta;
  trained.P.resize(layout.PQ_size());
  trained.Q.resize(layout.PQ_size());
  layout.expand(theta.data(), trained.P.data(), trained.Q.data());
  return trained;
}

Sample sample(const Point& p, Stream stream, int B) {
  const TaskLaw law = make_task_law(p);
  TaskBatch<double> b;
  b.resize(B, p.d, p.n);
  sample_tasks(law, p.seed, stream, 0, b);
  Sample s;
  Eigen::MatrixXd X;
  Eigen::VectorXd y;
  for (int t = 0; t < B; ++t) {
    batch_task(b, t, &X, &y);
    s.sp.push_back(task_spectrum(X.leftCols(p.n), y.head(p.n), X.col(p.n)));
    s.y.push_back(y(p.n));
    s.sigma.push_back(b.sigma[t]);
  }
  return s;
}

template <class F>
std::vector<double> sq_errors(const Sample& s, F predict) {
  std::vector<double> e(s.y.size());
  for (size_t t = 0; t < e.size(); ++t) e[t] = std::pow(predict(s.sp[t], t) - s.y[t], 2);
  return e;
}
double mean(const std::vector<double>& v) {
  double m = 0;
  for (double x : v) m += x / v.size();
  return m;
}
double std_err(const std::vector<double>& v) {
  const double m = mean(v);
  double s = 0;
  for (double x : v) s += (x - m) * (x - m) / v.size();
  return std::sqrt(s / v.size());
}
// Mean and standard error of a - b, paired by task.
std::pair<double, double> paired(const std::vector<double>& a, const std::vector<double>& b) {
  double m = 0, m2 = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    m += (a[i] - b[i]) / a.size();
    m2 += (a[i] - b[i]) * (a[i] - b[i]) / a.size();
  }
  return {m, std::sqrt(std::max(m2 - m * m, 0.0) / a.size())};
}

// [VO23]'s setting: inputs U(-0.5, 0.5), d = n = 10, noiseless; 1/2 MSE of the zero predictor d/24 = 0.4167
// and of one tuned GD step, exactly 1/24 (10 - (25/3)^2 / 13.75) = 0.20623 (theory: the paper gives no number
// but "the desired GD loss of 0.2"; its notebook draws a constant 0.2047).  Checked within three standard
// errors of our estimate: this evaluation stream is a +2 s.e. sample (its zero-predictor loss is 0.4188 +-
// 0.0011 against exactly 0.41667), and the GD loss moves with it.
TEST(Baselines, TunedOneStepGdOnUniformInputsMatchesVonOswald) {
  const Point p = make_point({{"d", "10"}, {"n", "10"}, {"x_dist", "uniform"}, {"precision", "float64"}});
  const Sample tune = sample(p, Stream::tune, 50000), eval = sample(p, Stream::eval, 300000);
  const double eta = minimise_log([&](double e) { return mean(sq_errors(tune, [&](const TaskSpectrum& t, size_t) { return predict_gd(t, e, 1); })); }, 1e-4, 10);
  const auto gd = sq_errors(eval, [&](const TaskSpectrum& t, size_t) { return predict_gd(t, eta, 1); });
  const auto zero = sq_errors(eval, [](const TaskSpectrum&, size_t) { return 0.0; });
  const double half_gd = mean(gd) / 2, se_gd = std_err(gd) / 2, half_zero = mean(zero) / 2, se_zero = std_err(zero) / 2;
  std::printf("  1/2 MSE: zero %.4f +- %.4f (exactly 0.4167), tuned 1-step GD %.4f +- %.4f with eta %.4f (exactly 0.2062)\n",
              half_zero, se_zero, half_gd, se_gd, eta);
  EXPECT_NEAR(half_zero, 10.0 / 24.0, 3 * se_zero);
  EXPECT_NEAR(half_gd, (10.0 - (25.0 / 3) * (25.0 / 3) / 13.75) / 24, 3 * se_gd);
}

// Oracle ridge (lambda = sigma^2) tends to OLS, or to the minimum-norm interpolant when n < d, as sigma
// vanishes: the gap shrinks with lambda (linearly for n > d; for n < d until rounding in the null space).
TEST(Baselines, OracleRidgeTendsToOlsAsSigmaVanishes) {
  for (const char* n : {"20", "6"}) {
    const Point p = make_point({{"d", "10"}, {"n", n}, {"precision", "float64"}});
    const Sample s = sample(p, Stream::eval, 200);
    std::vector<double> worst;
    for (const double lambda : {1e-2, 1e-4, 1e-6}) {
      double w = 0;
      for (const TaskSpectrum& t : s.sp)
        w = std::max(w, std::fabs(predict_ridge(t, lambda) - predict_ols(t)) / (1 + std::fabs(predict_ols(t))));
      worst.push_back(w);
    }
    std::printf("  n = %s: worst relative gap at lambda 1e-2, 1e-4, 1e-6: %.1e %.1e %.1e\n", n, worst[0], worst[1], worst[2]);
    EXPECT_LT(worst[1], 0.05 * worst[0]) << "n = " << n;
    EXPECT_LT(worst[2], 0.05 * worst[1]) << "n = " << n;
    EXPECT_LT(worst[2], 1e-4) << "n = " << n;
  }
}

// The Bayes mixture predictor is the optimum for its noise law: never worse than ConstRR, never better
// than the oracle that knows each task's sigma (paired differences, two standard errors).
TEST(Baselines, BayesMixtureBetweenOracleAndConstRR) {
  for (const char* noise : {"set:1,3", "uniform:2", "set:0.5,1,3"}) {
    const Point p = make_point({{"d", "5"}, {"n", "10"}, {"noise", noise}, {"precision", "float64"}});
    const TaskLaw law = make_task_law(p);
    const Sample tune = sample(p, Stream::tune, 20000), eval = sample(p, Stream::eval, 100000);
    const double lam = minimise_log([&](double l) { return mean(sq_errors(tune, [&](const TaskSpectrum& t, size_t) { return predict_ridge(t, l); })); }, 1e-4, 1e3);
    std::vector<double> sig, w;
    if (law.noise == NoiseKind::uniform)
      for (int k = 0; k < 64; ++k) sig.push_back(2.0 * (k + 0.5) / 64);
    else
      sig = law.noise_sigma;
    w.assign(sig.size(), 1.0 / sig.size());
    const auto bayes = sq_errors(eval, [&](const TaskSpectrum& t, size_t) { return predict_bayes(t, sig, w); });
    const auto constrr = sq_errors(eval, [&](const TaskSpectrum& t, size_t) { return predict_ridge(t, lam); });
    const auto oracle = sq_errors(eval, [&](const TaskSpectrum& t, size_t i) { return predict_ridge(t, eval.sigma[i] * eval.sigma[i]); });
    const auto [d1, se1] = paired(bayes, constrr);
    const auto [d2, se2] = paired(oracle, bayes);
    std::printf("  %-12s MSE oracle %.4f  bayes %.4f  const_rr %.4f   bayes-const %.5f (se %.5f)  oracle-bayes %.5f (se %.5f)\n",
                noise, mean(oracle), mean(bayes), mean(constrr), d1, se1, d2, se2);
    EXPECT_LE(d1, 2 * se1) << noise;
    EXPECT_LE(d2, 2 * se2) << noise;
    EXPECT_LT(d1, 0.0) << noise;   // and strictly better than ConstRR for a mixture
  }
}

// [V24] Table 1, d = 10, n = 20, sigma ~ U(0, 2), adjusted loss on the 1/2 scale.
TEST(Baselines, VladymyrovTable1AtSigmaMax2) {
  const Point p = make_point({{"d", "10"}, {"n", "20"}, {"noise", "uniform:2"}, {"precision", "float64"}});
  const Sample tune = sample(p, Stream::tune, 40000), eval = sample(p, Stream::eval, 200000);
  auto loss = [](const Sample& s, auto f) { return mean(sq_errors(s, f)); };
  const double lam = minimise_log([&](double l) { return loss(tune, [&](const TaskSpectrum& t, size_t) { return predict_ridge(t, l); }); }, 1e-4, 1e3);
  double best = 1e300, c_best = 1, t_best = 1;
  for (int i = 0; i < 24; ++i)
    for (int j = 0; j < 24; ++j) {
      const double c = 0.05 * std::pow(400.0, i / 23.0), thr = 1e-3 * std::pow(1e7, j / 23.0);
      const double v = loss(tune, [&](const TaskSpectrum& t, size_t) { return predict_ridge(t, std::min(c * noise_estimate(t), thr)); });
      if (v < best) { best = v; c_best = c; t_best = thr; }
    }
  // Adjusted losses as paired per-task differences with the oracle, with their standard errors.
  const auto oracle = sq_errors(eval, [&](const TaskSpectrum& t, size_t i) { return predict_ridge(t, eval.sigma[i] * eval.sigma[i]); });
  std::vector<double> sig, w(64, 1.0 / 64);
  for (int k = 0; k < 64; ++k) sig.push_back(2.0 * (k + 0.5) / 64);
  auto adjusted = [&](auto f) { return paired(sq_errors(eval, f), oracle); };
  const auto [const_rr, se_c] = adjusted([&](const TaskSpectrum& t, size_t) { return predict_ridge(t, lam); });
  const auto [ada_rr, se_a] = adjusted([&](const TaskSpectrum& t, size_t) { return predict_ridge(t, noise_estimate(t)); });
  const auto [tuned_rr, se_t] = adjusted([&](const TaskSpectrum& t, size_t) { return predict_ridge(t, std::min(c_best * noise_estimate(t), t_best)); });
  const auto [bayes, se_b] = adjusted([&](const TaskSpectrum& t, size_t) { return predict_bayes(t, sig, w); });
  std::printf("  adjusted 1/2 MSE (+- s.e.): ConstRR %.4f +- %.4f (paper 0.066)  AdaRR %.4f +- %.4f (0.016)  "
              "TunedRR %.4f +- %.4f (0.010; c %.2f, t %.2f)  Bayes %.4f +- %.4f\n",
              const_rr / 2, se_c / 2, ada_rr / 2, se_a / 2, tuned_rr / 2, se_t / 2, c_best, t_best, bayes / 2, se_b / 2);
  EXPECT_NEAR(const_rr / 2, 0.066, 0.05 * 0.066 + se_c);
  EXPECT_NEAR(ada_rr / 2, 0.016, 0.05 * 0.016 + se_a);
  // TunedRR lands above the paper's 0.010 (README, "Reproductions"); what must hold is the order
  // Bayes <= TunedRR <= AdaRR, paired on the same tasks.
  const auto bt = paired(sq_errors(eval, [&](const TaskSpectrum& t, size_t) { return predict_bayes(t, sig, w); }),
                         sq_errors(eval, [&](const TaskSpectrum& t, size_t) { return predict_ridge(t, std::min(c_best * noise_estimate(t), t_best)); }));
  EXPECT_LE(bt.first, 2 * bt.second);
  EXPECT_LE(tuned_rr, ada_rr);
}

// Iterative Newton on the spectrum against the matrix iteration written out (Fu et al. 2023; their code's
// start, DeqingFu/transformers-icl-second-order src/models.py:514-515 @52376dd): M_0 = S / |S S^T|_F,
// M_{k+1} = 2 M_k - M_k S M_k, yhat = x_q^T M_K X y; many steps give least squares (minimum norm when n < d),
// and each step squares the error 1 - s m of every eigenvalue.  Their first commit's start, 2 S / |S S^T|_F,
// gives other predictions at every K (checked, so that a change of the start fails here).
TEST(Baselines, IterativeNewtonMatchesTheMatrixIteration) {
  for (const int n : {3, 12}) {
    const Point p = make_point({{"d", "5"}, {"n", std::to_string(n)}, {"noise", "fixed:0.3"}, {"precision", "float64"}});
    TaskBatch<double> b;
    b.resize(20, p.d, p.n);
    sample_tasks(make_task_law(p), 7, Stream::eval, 0, b);
    Eigen::MatrixXd X;
    Eigen::VectorXd y;
    for (int t = 0; t < b.B; ++t) {
      batch_task(b, t, &X, &y);
      const Eigen::MatrixXd Xc = X.leftCols(n), S = Xc * Xc.transpose();
      const TaskSpectrum spec = task_spectrum(Xc, y.head(n), X.col(n));
      const double frobenius = (S * S.transpose()).norm();   // Eigen's norm() of a matrix: Frobenius
      EXPECT_NEAR(newton_alpha(spec), 1 / frobenius, 1e-12 / frobenius) << "n " << n << " t " << t;
      Eigen::MatrixXd M = S / frobenius, M_first_commit = 2 * S / frobenius;
      for (int K = 0; K <= 6; ++K) {
        const double want = X.col(n).dot(M * Xc * y.head(n));
        const double other = X.col(n).dot(M_first_commit * Xc * y.head(n));
        EXPECT_NEAR(predict_newton(spec, K), want, 1e-10 * (1 + std::fabs(want))) << "n " << n << " t " << t << " K " << K;
        if (K <= 2) {
          EXPECT_GT(std::fabs(predict_newton(spec, K) - other), 1e-6 * (1 + std::fabs(want))) << "n " << n << " t " << t << " K " << K;
        }
        M = 2 * M - M * S * M;
        M_first_commit = 2 * M_first_commit - M_first_commit * S * M_first_commit;
      }
      EXPECT_NEAR(predict_newton(spec, 200), predict_ols(spec), 1e-8 * (1 + std::fabs(predict_ols(spec))));
    }
  }
}

// dMMSE against the posterior written out by brute force: every (pool member, noise level) pair's full
// Gaussian likelihood prod_j N(y_j; <w_m, x_j>, sigma_k^2) in long double, times its prior weight.
TEST(Baselines, DmmseIsTheBruteForcePosteriorMeanOfATinyPool) {
  const Point p = make_point({{"d", "2"}, {"n", "4"}, {"task_pool", "3"}, {"noise", "set:0.3,1"},
                              {"precision", "float64"}, {"seed", "12"}});
  const TaskLaw law = pool_law(p);
  TaskBatch<double> b;
  b.resize(50, p.d, p.n);
  sample_tasks(law, p.seed, Stream::eval, 0, b);
  const std::vector<double> sigma = {0.3, 1.0}, prior = {0.5, 0.5};
  Eigen::MatrixXd X;
  Eigen::VectorXd y;
  for (int t = 0; t < b.B; ++t) {
    batch_task(b, t, &X, &y);
    long double num = 0, den = 0;
    for (int m = 0; m < 3; ++m)
      for (int k = 0; k < 2; ++k) {
        long double lik = prior[k];
        for (int j = 0; j < p.n; ++j) {
          const long double r = y(j) - law.pool.col(m).dot(X.col(j)), s2 = sigma[k] * sigma[k];
          lik *= std::exp(-r * r / (2 * s2)) / std::sqrt(2 * 3.14159265358979323846L * s2);
        }
        num += lik * law.pool.col(m).dot(X.col(p.n));
        den += lik;
      }
    const double want = static_cast<double>(num / den);
    EXPECT_NEAR(predict_dmmse(X.leftCols(p.n), y.head(p.n), X.col(p.n), law.pool, sigma, prior), want,
                1e-12 * (1 + std::fabs(want))) << t;
  }
}

// The Bayes-optimal predictor of pool tasks beats ridge on them and loses to it on fresh tasks (Raventos et
// al.'s two regimes of the baselines); one pool member makes it exact.
TEST(Baselines, DmmseWinsOnPoolTasksAndLosesOnFreshOnes) {
  const Point p = make_point({{"d", "8"}, {"n", "16"}, {"task_pool", "32"}, {"noise", "fixed:0.5"},
                              {"precision", "float64"}, {"seed", "3"}});
  const std::vector<double> sigma = {0.5}, prior = {1.0};
  auto losses = [&](const TaskLaw& law, const Eigen::MatrixXd& pool) {
    TaskBatch<double> b;
    b.resize(2000, p.d, p.n);
    sample_tasks(law, p.seed, Stream::eval, 0, b);
    double dm = 0, rr = 0;
    Eigen::MatrixXd X;
    Eigen::VectorXd y;
    for (int t = 0; t < b.B; ++t) {
      batch_task(b, t, &X, &y);
      const double yq = y(p.n);
      dm += std::pow(predict_dmmse(X.leftCols(p.n), y.head(p.n), X.col(p.n), pool, sigma, prior) - yq, 2) / b.B;
      rr += std::pow(predict_ridge(task_spectrum(X.leftCols(p.n), y.head(p.n), X.col(p.n)), 0.25) - yq, 2) / b.B;
    }
    return std::pair{dm, rr};
  };
  const TaskLaw pool = pool_law(p);
  const auto [dm_pool, rr_pool] = losses(pool, pool.pool);
  const auto [dm_fresh, rr_fresh] = losses(make_task_law(p), pool.pool);
  EXPECT_LT(dm_pool, 0.5 * rr_pool);
  EXPECT_GT(dm_fresh, 1.5 * rr_fresh);
  const Eigen::MatrixXd one = pool.pool.leftCols(1);
  TaskLaw single = pool;
  single.pool = one;
  EXPECT_LT(losses(single, one).first, 1e-20);
}

// Loss against context length on a planted model: sparse_a with A = -eta I is one step of GD at rate eta/k on
// a context of k (c = 1/k), whose loss with x, w ~ N(0, I) and no noise is d (1 - 2 eta + eta^2 (k + d + 1) / k)
// (E tr (X X^T)^2 = k d (k + d + 1) for a d x k Gaussian X); the zero predictor loses d at every length.
TEST(Analysis, ContextCurveOfPlantedGdMatchesItsClosedForm) {
  const int d = 4, n_test = 12;
  const double eta = 0.6;
  const Point p = make_point({{"d", std::to_string(d)}, {"n", "6"}, {"param", "sparse_a"}, {"norm", "1/n"},
                              {"eval_tasks", "64"}, {"context_curve", std::to_string(n_test)}, {"precision", "float64"}});
  const ParamLayout layout(p);
  std::vector<double> theta(layout.size(), 0.0);
  for (int i = 0; i < d; ++i) theta[i * d + i] = -eta;
  Analysis r = analyse(p, planted(layout, theta));
  ASSERT_EQ(r.series["context_length"].size(), static_cast<size_t>(n_test));
  for (int k = 1; k <= n_test; ++k) {
    const double want = d * (1 - 2 * eta + eta * eta * (k + d + 1.0) / k), se = r.series["se_context_loss_tf"][k - 1];
    EXPECT_EQ(r.series["context_length"][k - 1], k);
    EXPECT_NEAR(r.series["context_loss_tf"][k - 1], want, 4 * se) << "k = " << k;
    EXPECT_LT(se, 0.25 * want) << "k = " << k;   // the test has power: 2,000 tasks per length
    EXPECT_NEAR(r.series["context_loss_zero"][k - 1], d, 0.1 * d) << "k = " << k;
    // OLS from the prefix's Gram blocks (X X^T, X y): minimum-norm, it misses w's part outside the k inputs'
    // span, E = d - k (variance 2 m^2 + 6 m a task, m = d - k), and nothing from k = d on (noiseless).
    const double ols = r.series["context_loss_ols"][k - 1], m = std::max(d - k, 0);
    if (m == 0) EXPECT_LT(ols, 1e-12) << "k = " << k;
    else EXPECT_NEAR(ols, m, 5 * std::sqrt((2 * m * m + 6 * m) / 2000)) << "k = " << k;
  }
  // Fu et al.'s per-layer comparison: one layer against Newton steps 0..12, the best step its argmax.
  const std::vector<double>& sim = r.series["newton_similarity"];
  ASSERT_EQ(sim.size(), 13u);
  for (double c : sim) EXPECT_TRUE(c >= -1 && c <= 1) << c;
  EXPECT_EQ(r.series["newton_best_step"][0], std::max_element(sim.begin(), sim.end()) - sim.begin());
  EXPECT_GT(r.series["layer_loss_newton"][0], r.metrics["loss_ols"]);   // one Newton step is not yet OLS
  EXPECT_TRUE(std::isnan(r.series["context_loss_ada_rr"][d - 1]));    // AdaRR needs more examples than d
  EXPECT_FALSE(std::isnan(r.series["context_loss_ada_rr"][d]));
}

// Every out-of-distribution curve at the training length, recomputed from its contract: planted one-step GD
// (sparse_a, A = -eta I, c = 1/n: yhat = eta/n sum_j y_j <x_j, x_q>) on AnalysisSets::ood tasks of the
// point's law shifted as OodScales says, drawn from the curve's own draw.  A wrong law, scale or draw moves
// the loss by far more than the tolerance.
TEST(Analysis, OutOfDistributionCurvesFollowTheirLaws) {
  const int d = 3, n = 6;
  const double eta = 0.7;
  const Point p = make_point({{"d", std::to_string(d)}, {"n", std::to_string(n)}, {"param", "sparse_a"}, {"norm", "1/n"},
                              {"x_dist", "uniform:0.5"}, {"eval_tasks", "64"}, {"precision", "float64"}});
  const ParamLayout layout(p);
  std::vector<double> theta(layout.size(), 0.0);
  for (int i = 0; i < d; ++i) theta[i * d + i] = -eta;
  const Analysis r = analyse(p, planted(layout, theta));
  struct Curve { const char* axis; Draw (*which)(int); void (*shift)(TaskLaw&, double); };
  const Curve curves[] = {
      {"ood_alpha", draws::ood_alpha, [](TaskLaw& l, double a) { l.x_scale = a; }},
      {"ood_teacher", draws::ood_teacher, [](TaskLaw& l, double a) { l.w_scale = a; }},
      {"ood_other", draws::ood_other, [](TaskLaw& l, double a) { l.other_inputs = true; l.x_scale = a; }},
      {"ood_other_teacher", draws::ood_other_teacher, [](TaskLaw& l, double a) { l.other_inputs = true; l.w_scale = a; }}};
  for (const Curve& c : curves) {
    const std::vector<double>& values = r.series.at(c.axis);
    const std::vector<double>& got = r.series.at(std::string(c.axis) + "_loss_tf");
    ASSERT_EQ(got.size(), values.size()) << c.axis;
    ASSERT_GE(values.size(), 5u) << c.axis;
    for (size_t k = 0; k < values.size(); ++k) {
      TaskLaw law = make_task_law(p);
      c.shift(law, values[k]);
      TaskBatch<double> set;
      set.resize(AnalysisSets::ood, d, n);
      const Draw which = c.which(static_cast<int>(k));
      sample_tasks(law, p.seed, which.stream, which.block, set);
      double sum = 0;
      for (int t = 0; t < set.B; ++t) {
        Eigen::MatrixXd X;
        Eigen::VectorXd y;
        batch_task(set, t, &X, &y);
        const Eigen::VectorXd Xy = X.leftCols(n) * y.head(n);
        sum += std::pow(eta / n * Xy.dot(X.col(n)) - y(n), 2);
      }
      const double want = sum / set.B;
      EXPECT_NEAR(got[k], want, 1e-10 * want) << c.axis << " = " << values[k];
    }
  }
  // GD runs through the trained model's act_clip, as in [VO23]'s code: every prediction is then within
  // +-clip, so its loss is at most mean (|y_q| + clip)^2 over its set; unclipped, GD far out is not.  GD++ is
  // evaluated as it is tuned, unclipped: far out it exceeds the bound.
  std::vector<std::pair<std::string, std::string>> clipped = {{"d", "3"}, {"n", "6"}, {"param", "sparse_a"}, {"norm", "1/n"},
      {"x_dist", "uniform:0.5"}, {"eval_tasks", "64"}, {"precision", "float64"}, {"act_clip", "0.5"}};
  const Analysis rc = analyse(make_point(clipped), planted(layout, theta));
  TaskLaw far = make_task_law(p);
  far.x_scale = r.series.at("ood_alpha").back();
  TaskBatch<double> set;
  set.resize(AnalysisSets::ood, d, n);
  const Draw which = draws::ood_alpha(static_cast<int>(r.series.at("ood_alpha").size()) - 1);
  sample_tasks(far, p.seed, which.stream, which.block, set);
  double bound = 0;
  for (int t = 0; t < set.B; ++t) bound += std::pow(std::fabs(set.y[t / kLanes<double>][t % kLanes<double>]) + 0.5, 2) / set.B;
  EXPECT_GT(r.series.at("ood_alpha_loss_gd").back(), 10 * bound);
  EXPECT_LE(rc.series.at("ood_alpha_loss_gd").back(), bound);
  for (const char* method : {"gdpp", "gdpp_tied"})
    EXPECT_EQ(rc.series.at(std::string("ood_alpha_loss_") + method), r.series.at(std::string("ood_alpha_loss_") + method))
        << method;
}

// The context curve reads a linear model's prefixes from each task's token Gram (gram.hpp) and runs any other
// model on the prefixes themselves.  An act_clip far above every token makes the same model take the second
// route: both give the same curve, for a 3-layer, 2-head model with full P, Q at 1/n, with a task pool (dMMSE
// from the context's sums).
TEST(Analysis, ContextCurveFromTheGramMatchesTheModelOnEveryPrefix) {
  std::vector<std::pair<std::string, std::string>> settings = {
      {"d", "3"}, {"n", "6"}, {"layers", "3"}, {"heads", "2"}, {"eval_tasks", "64"}, {"context_curve", "11"},
      {"task_pool", "16"}, {"precision", "float64"}};
  const Point gram = make_point(settings);
  settings.push_back({"act_clip", "1e30"});
  const Point run = make_point(settings);
  const ParamLayout layout(gram);
  std::vector<double> theta(layout.size());
  rng_normals(rng_key(3, Stream::analysis), 0, theta.size(), theta.data());
  for (double& x : theta) x *= 0.2;
  Analysis a = analyse(gram, planted(layout, theta)), b = analyse(run, planted(layout, theta));
  ASSERT_EQ(a.series["context_length"].size(), 11u);
  for (const char* name : {"context_loss_tf", "se_context_loss_tf", "context_loss_gdpp", "context_loss_dmmse", "context_loss_bayes"})
    for (int k = 0; k < 11; ++k) {
      const double x = a.series[name][k], y = b.series[name][k];
      EXPECT_NEAR(x, y, 1e-9 * std::fabs(y)) << name << " at length " << k + 1;
    }
  EXPECT_GT(std::fabs(a.series["context_loss_tf"][10] - a.series["context_loss_tf"][0]), 1e-3);   // it varies
}

TEST(Analysis, DistAndScalarOnPlantedPreconditioners) {
  EXPECT_NEAR(dist_to_identity(3.0 * Eigen::MatrixXd::Identity(4, 4)), 0.0, 1e-15);
  Eigen::MatrixXd M = Eigen::MatrixXd::Zero(2, 2);
  M(0, 0) = 2;   // M - (tr M/d) I = diag(1, -1)
  EXPECT_NEAR(dist_to_identity(M), std::sqrt(2.0) / 2.0, 1e-15);
  // Plant A_l = -a_l Sigma^-1 in a sparse_a model: Sigma^{1/2} A_l Sigma^{1/2} = -a_l I exactly.
  const Point p = make_point({{"d", "3"}, {"n", "10"}, {"layers", "2"}, {"param", "sparse_a"},
                              {"cov", "rotated:1,0.25,4"}, {"eval_tasks", "64"}});
  const TaskLaw law = make_task_law(p);
  const ParamLayout layout(p);
  const Eigen::MatrixXd Sinv = law.Sigma.inverse();
  const double a[2] = {0.5154, 1.2496};
  std::vector<double> theta(layout.size());
  for (int l = 0; l < 2; ++l)
    for (int i = 0; i < 3; ++i)
      for (int k = 0; k < 3; ++k) theta[l * 9 + i * 3 + k] = -a[l] * Sinv(i, k);
  Analysis r = analyse(p, planted(layout, theta));
  for (int l = 0; l < 2; ++l) {
    EXPECT_NEAR(r.series["precond_a"][l], a[l], 1e-12);
    EXPECT_NEAR(r.series["precond_dist_whitened"][l], 0.0, 1e-12);
    EXPECT_GT(r.series["precond_dist"][l], 0.1);   // the raw product is not isotropic
  }
}

// act_clip's effect, measured on the same weights: one planted GD step (gdpp, theta = (p_x, p_y, q_x) =
// (0, -eta, 1), readout eta <sum y_i x_i, x_q>, about 0.7 <w, x_q>, often beyond 1).  A clip far outside every
// token leaves the evaluation unchanged (to rounding); a clip of 1 cuts tokens and readouts and changes it.
// The losses and standard errors agree with the closed-form GD step and oracle ridge, task by task.
TEST(Analysis, ClippedAndUnclippedEvaluationOfTheSameWeights) {
  const double eta = 0.07;
  const std::vector<double> theta = {0.0, -eta, 1.0};
  auto analysed = [&](const char* clip) {
    const Point p = make_point({{"d", "3"}, {"n", "10"}, {"layers", "1"}, {"param", "gdpp"}, {"norm", "1"},
                                {"noise", "uniform:1"}, {"act_clip", clip}, {"precision", "float64"}, {"eval_tasks", "512"}});
    const ParamLayout layout(p);
    Trained trained;
    trained.theta = theta;
    trained.P.resize(layout.PQ_size());
    trained.Q.resize(layout.PQ_size());
    layout.expand(theta.data(), trained.P.data(), trained.Q.data());
    return analyse(p, trained).metrics;
  };
  const auto off = analysed("0"), wide = analysed("1e6"), tight = analysed("1");
  EXPECT_EQ(off.count("loss_tf_unclipped"), 0u);
  EXPECT_NEAR(wide.at("loss_tf_unclipped"), wide.at("loss_tf"), 1e-12);
  EXPECT_LT(wide.at("se_clip_effect"), 1e-12);
  EXPECT_NEAR(wide.at("loss_tf"), off.at("loss_tf"), 1e-12);
  EXPECT_NEAR(tight.at("loss_tf_unclipped"), off.at("loss_tf"), 1e-12);
  EXPECT_GT(std::fabs(tight.at("loss_tf") - tight.at("loss_tf_unclipped")), 3 * tight.at("se_clip_effect"));
  EXPECT_NEAR(tight.at("adjusted_tf_unclipped"), tight.at("loss_tf_unclipped") - tight.at("loss_oracle_ridge"), 1e-12);

  // The same numbers from the closed forms on the same tasks (the point's evaluation set).
  const Point p = make_point({{"d", "3"}, {"n", "10"}, {"noise", "uniform:1"}, {"precision", "float64"}});
  TaskBatch<double> b;
  b.resize(512, p.d, p.n);
  sample_tasks(make_task_law(p), p.seed, Stream::eval, 0, b);
  Sample s;
  Eigen::MatrixXd X;
  Eigen::VectorXd y;
  for (int t = 0; t < b.B; ++t) {
    batch_task(b, t, &X, &y);
    s.sp.push_back(task_spectrum(X.leftCols(p.n), y.head(p.n), X.col(p.n)));
    s.y.push_back(y(p.n));
    s.sigma.push_back(b.sigma[t]);
  }
  const auto gd = sq_errors(s, [&](const TaskSpectrum& t, size_t) { return predict_gd(t, eta, 1); });
  const auto oracle = sq_errors(s, [&](const TaskSpectrum& t, size_t i) { return predict_ridge(t, s.sigma[i] * s.sigma[i]); });
  const auto [adj, adj_se] = paired(gd, oracle);
  EXPECT_NEAR(off.at("loss_tf"), mean(gd), 1e-9);
  EXPECT_NEAR(off.at("adjusted_tf"), adj, 1e-9);
  EXPECT_NEAR(off.at("se_adjusted_tf"), adj_se * std::sqrt(512.0 / 511.0), 1e-9);
  EXPECT_NEAR(off.at("se_loss_tf"), std_err(gd) * std::sqrt(512.0 / 511.0), 1e-9);
}

// [VO23]'s roll-out of a planted GD layer (gdpp param, P = diag(0, -eta), Q = diag(I, 0), c = 1): K damped
// applications are K GD steps at the damped rate, which rollout_loss_gd computes in closed form from the
// tuned 1-step rate.  Planted at that rate, the two series agree to round-off; planted off it, they do not.
TEST(Analysis, RolloutOfAPlantedGdLayerIsGdAtTheDampedRate) {
  const int K = 12;
  auto analysed = [&](double eta) {
    const Point p = make_point({{"d", "3"}, {"n", "10"}, {"layers", "1"}, {"tie", "true"}, {"param", "gdpp"},
                                {"norm", "1"}, {"precision", "float64"}, {"eval_tasks", "256"},
                                {"rollout", std::to_string(K)}, {"rollout_damping", "0.5"}});
    return analyse(p, planted(ParamLayout(p), {0.0, -eta, 1.0}));
  };
  const Analysis off = analysed(0.05);
  const double eta = off.series.at("gd_eta")[0];
  const Analysis on = analysed(eta);
  const std::vector<double>&tf = on.series.at("rollout_loss_tf"), &gd = on.series.at("rollout_loss_gd");
  ASSERT_EQ(tf.size(), static_cast<size_t>(K));
  ASSERT_EQ(gd, off.series.at("rollout_loss_gd"));   // GD's roll-out does not read the trained weights
  for (int k = 0; k < K; ++k) {
    EXPECT_NEAR(tf[k], gd[k], 1e-10 * gd[k]) << "application " << k + 1;
    EXPECT_GT(std::fabs(off.series.at("rollout_loss_tf")[k] - gd[k]), 1e-3 * gd[k]) << "application " << k + 1;
  }
  EXPECT_LT(gd[K - 1], 0.5 * gd[0]);   // the steps make progress
}

// [VO23] App. A.3's interpolation.  Plant a recurrent `full` model whose weights are a construction
// (P0, Q0) = (diag(-g0 I, -e0), diag(I, 0)) plus a perturbation (E_P, E_Q; E_Q zero on Q's x-block
// diagonal), in the gauge P * s, Q / s: the scale correction must undo s, and the average with the tuned
// reference (1-step GD for L = 1, tied GD++ for L = 2) is then ((P0 + E_P + P*) / 2, (Q0 + E_Q / 2)).
// A second point planted with exactly those matrices must give loss_interp as its loss_tf, and its
// out-of-distribution curves as ood_*_interp.  Untied and two-head models have no interpolation.
TEST(Analysis, InterpolationUndoesTheScaleAndAveragesWithTheTunedConstruction) {
  const int d = 3, D = d + 1;
  const double s = -2.5, e0 = 0.05, g0 = 0.02;
  for (const char* layers : {"1", "2"}) {
    auto point = [&](const char* tie, const char* heads) {
      return make_point({{"d", "3"}, {"n", "10"}, {"layers", layers}, {"tie", tie}, {"heads", heads}, {"param", "full"},
                         {"norm", "1"}, {"noise", "none"}, {"precision", "float64"}, {"eval_tasks", "512"}});
    };
    const Point p = point("true", "1");
    const ParamLayout layout(p);
    // theta of a tied single-head full model: the views P and Q of one layer, D x D each.
    auto plant = [&](const Eigen::MatrixXd& P, const Eigen::MatrixXd& Q) {
      std::vector<double> theta(layout.size(), 0.0);
      for (const ParamView& v : layout.views())
        for (int i = 0; i < D; ++i)
          for (int k = 0; k < D; ++k) theta[v.offset + i * D + k] = (v.name == "P" ? P : Q)(i, k);
      return analyse(p, planted(layout, theta));
    };
    Eigen::MatrixXd P0 = Eigen::MatrixXd::Zero(D, D), Q0 = Eigen::MatrixXd::Zero(D, D), EP(D, D), EQ(D, D);
    for (int i = 0; i < d; ++i) P0(i, i) = -g0, Q0(i, i) = 1;
    P0(d, d) = -e0;
    for (int i = 0; i < D; ++i)
      for (int k = 0; k < D; ++k) {
        EP(i, k) = 0.004 * std::sin(1.0 + i + 3 * k);
        EQ(i, k) = i == k && i < d ? 0.0 : 0.05 * std::cos(2.0 + 2 * i + k);
      }
    const Analysis r = plant(s * (P0 + EP), (Q0 + EQ) / s);
    ASSERT_EQ(r.metrics.count("loss_interp"), 1u) << "layers " << layers;
    const int L = p.layers;
    const double eta = L == 1 ? r.series.at("gd_eta")[0] : r.series.at("gdpp_tied_eta")[L - 1];
    const double gamma = L == 1 ? 0.0 : r.series.at("gdpp_tied_gamma")[L - 1];
    Eigen::MatrixXd Pstar = Eigen::MatrixXd::Zero(D, D);
    for (int i = 0; i < d; ++i) Pstar(i, i) = -gamma;
    Pstar(d, d) = -eta;
    const Analysis want = plant((P0 + EP + Pstar) / 2, Q0 + EQ / 2);
    EXPECT_NEAR(r.metrics.at("loss_interp"), want.metrics.at("loss_tf"), 1e-12 * want.metrics.at("loss_tf"));
    for (const char* f : {"ood_alpha_loss_", "ood_teacher_loss_", "ood_other_loss_", "ood_other_teacher_loss_",
                          "ood_context_loss_"}) {
      const auto& got = r.series.at(std::string(f) + "interp");
      const auto& tf = want.series.at(std::string(f) + "tf");
      ASSERT_EQ(got.size(), tf.size());
      for (size_t k = 0; k < got.size(); ++k) EXPECT_NEAR(got[k], tf[k], 1e-10 * tf[k]) << f << k;
    }
    // The interpolation is not the trained model nor the reference (the test can tell them apart).
    EXPECT_GT(std::fabs(r.metrics.at("loss_interp") - r.metrics.at("loss_tf")), 1e-3);
    for (const Point& q : {point("false", "1"), point("true", "2")}) {
      if (!q.tie && L == 1) continue;   // one layer is recurrent either way
      const ParamLayout lq(q);
      EXPECT_EQ(analyse(q, planted(lq, std::vector<double>(lq.size(), 0.1))).metrics.count("loss_interp"), 0u)
          << "tie " << q.tie << ", heads " << q.heads;
    }
  }
}

// [VO23] App. A.10's extremes of the spectrum of X X^T over the evaluation tasks, against the squared
// singular values of each task's context inputs, computed here from the same draw.
TEST(Analysis, SpectrumExtremesOverTheEvaluationTasks) {
  const Point p = make_point({{"d", "4"}, {"n", "6"}, {"x_dist", "uniform:0.5"}, {"precision", "float64"},
                              {"eval_tasks", "300"}});
  const ParamLayout layout(p);
  const Analysis r = analyse(p, planted(layout, std::vector<double>(layout.size(), 0.01)));
  TaskBatch<double> b;
  b.resize(p.eval_tasks, p.d, p.n);
  sample_tasks(make_task_law(p), p.seed, Stream::eval, 0, b);
  double lo = 1e300, hi = 0;
  Eigen::MatrixXd X;
  Eigen::VectorXd y;
  for (int t = 0; t < b.B; ++t) {
    batch_task(b, t, &X, &y);
    const Eigen::VectorXd sv = Eigen::JacobiSVD<Eigen::MatrixXd>(X.leftCols(p.n)).singularValues();   // descending
    lo = std::min(lo, sv(p.d - 1) * sv(p.d - 1));
    hi = std::max(hi, sv(0) * sv(0));
  }
  EXPECT_NEAR(r.metrics.at("spectrum_min"), lo, 1e-12);
  EXPECT_NEAR(r.metrics.at("spectrum_max"), hi, 1e-12 * hi);
  EXPECT_GT(hi, 4 * lo);   // far apart: the test tells min from max
}

TEST(Analysis, GdppBeatsGdAtEqualStepsOnAnisotropicInputs) {
  const Point p = make_point({{"d", "5"}, {"n", "20"}, {"layers", "3"}, {"cov", "rotated:1,0.25,4,1,0.5"},
                              {"steps", "1"}, {"batch", "16"}, {"eval_tasks", "4000"}});
  const Result r = run_point(p);
  const auto& gd = r.series.at("layer_loss_gd");
  const auto& gdpp = r.series.at("layer_loss_gdpp");
  for (int k = 0; k < 3; ++k) std::printf("  step %d: GD %.4f  GD++ %.4f\n", k + 1, gd[k], gdpp[k]);
  EXPECT_NEAR(gdpp[0], gd[0], 0.02 * gd[0]);   // one step: both are plain GD
  for (int k = 1; k < 3; ++k) EXPECT_LT(gdpp[k], 0.97 * gd[k]) << "step " << k + 1;
}

}  // namespace
}  // namespace icl

namespace icl {
namespace {

// The Hessian diagonal and the directional smoothness (both from central differences of the analytic
// gradient) against second differences of the loss itself.
TEST(Landscape, HessianDiagonalAndSmoothnessMatchSecondDifferencesOfTheLoss) {
  const Point p = test::make_point({{"d", "3"}, {"n", "6"}, {"layers", "2"}, {"precision", "float64"}});
  const auto batch = test::make_batch<double>(p, 40);
  Objective<double> obj(p);
  std::vector<double> theta(obj.layout().size());
  rng_normals(rng_key(3, Stream::analysis), 0, static_cast<int>(theta.size()), theta.data());
  for (double& x : theta) x *= 0.3;
  const std::vector<double> H = hessian_diagonal(obj, batch, theta);
  const double f0 = obj.loss_grad(batch, theta, nullptr), h = 1e-4;
  std::vector<double> fd(theta.size());
  for (size_t i = 0; i < theta.size(); ++i) {
    std::vector<double> tp = theta, tm = theta;
    tp[i] += h;
    tm[i] -= h;
    fd[i] = (obj.loss_grad(batch, tp, nullptr) - 2 * f0 + obj.loss_grad(batch, tm, nullptr)) / (h * h);
  }
  const double e = test::worst_rel(H, fd);
  std::printf("  Hessian diagonal (%zu entries) vs second differences of the loss: worst relative error %.2e\n", H.size(), e);
  EXPECT_LT(e, 1e-4);
  std::vector<double> u(theta.size());
  rng_normals(rng_key(4, Stream::analysis), 0, static_cast<int>(u.size()), u.data());
  double un2 = 0;
  for (double x : u) un2 += x * x;
  const double s = directional_smoothness(obj, batch, theta, u);
  std::vector<double> tp = theta, tm = theta;
  const double hu = 1e-4 / std::sqrt(un2);
  for (size_t i = 0; i < u.size(); ++i) {
    tp[i] += hu * u[i];
    tm[i] -= hu * u[i];
  }
  const double s_fd = (obj.loss_grad(batch, tp, nullptr) - 2 * f0 + obj.loss_grad(batch, tm, nullptr)) / (hu * hu) / un2;
  std::printf("  directional smoothness %.6g vs %.6g\n", s, s_fd);
  EXPECT_NEAR(s, s_fd, 1e-4 * std::max(1.0, std::fabs(s_fd)));
}

TEST(Landscape, RecordedAtTheRequestedStepsAndExcludedFromTrainingTime) {
  const Point p = test::make_point({{"d", "3"}, {"n", "8"}, {"layers", "2"}, {"batch", "64"}, {"steps", "20"},
                                    {"eval_tasks", "256"}, {"landscape", "0,10,20"}, {"analysis", "false"}});
  const Result r = run_point(p);
  ASSERT_EQ(r.status, Status::ok) << r.message;
  EXPECT_EQ(r.series.at("landscape_step"), (std::vector<double>{0, 10, 20}));
  EXPECT_EQ(r.series.at("landscape_grad_noise").size(), 3u * 32u);
  EXPECT_EQ(r.series.at("landscape_hessian_diag").size(), 3u * ParamLayout(p).size());
  for (double c : r.series.at("landscape_hessian_cond")) EXPECT_GE(c, 1.0);
  EXPECT_TRUE(std::isnan(r.series.at("landscape_smoothness")[2]));   // no update after the last step
  EXPECT_FALSE(std::isnan(r.series.at("landscape_smoothness")[0]));
  EXPECT_LT(r.seconds_train, r.metrics.at("landscape_seconds"));
  Point q = p;   // every:k measures at 0, k, 2k, ... below steps, as [A24]'s range(0, max_iters, 250)
  ASSERT_EQ(point_set(q, "landscape", "every:5"), "");
  EXPECT_EQ(find_option("landscape")->get(q), "every:5");
  EXPECT_EQ(run_point(q).series.at("landscape_step"), (std::vector<double>{0, 5, 10, 15}));
  EXPECT_NE(point_set(q, "landscape", "every:0"), "");
  ASSERT_EQ(point_set(q, "landscape", "every:20"), "");
  EXPECT_FALSE(point_validate(q).empty());   // k must be below steps
}

// torch.median's convention: the lower of the two middle values of an even count.
TEST(Landscape, RobustConditionNumberUsesTheLowerMedian) {
  // |H| sorted: 0 0 1 2 | 3 4 5 100: lower median 2 (the upper would be 3), max 100.
  EXPECT_DOUBLE_EQ(robust_condition_number({5, 0, -1, 100, 0, 3, -4, 2}), 50.0);
  EXPECT_DOUBLE_EQ(robust_condition_number({5, 0, -1, 100, 3, -4, 2}), 100.0 / 3.0);   // odd: the middle one
  EXPECT_TRUE(std::isnan(robust_condition_number({0, 0, 0, 7})));                      // median 0
}

// [A24]'s model, [A23] eq. (11): 150 parameters at d = 5, L = 3; the last layer's B block cannot reach
// the readout, so 25 of the 150 diagonal entries are exactly 0 and the lower median is the 75th value.
TEST(Landscape, SparseAbHessianHasTheLastLayersBBlockFlat) {
  const Point p = test::make_point({{"d", "5"}, {"n", "20"}, {"layers", "3"}, {"param", "sparse_ab"},
                                    {"precision", "float64"}});
  Objective<double> obj(p);
  ASSERT_EQ(obj.layout().size(), 150);
  const std::vector<double> theta = param_init(p, obj.layout());
  const auto batch = test::make_batch<double>(p, 200);
  const std::vector<double> H = hessian_diagonal(obj, batch, theta);
  int zeros = 0;
  for (const ParamView& v : obj.layout().views())
    for (int k = 0; k < v.rows * v.cols; ++k) {
      const bool flat = v.name == "B" && v.layer == 2;
      if (flat) {
        EXPECT_EQ(H[v.offset + k], 0.0) << v.name << v.layer;
      } else {
        EXPECT_NE(H[v.offset + k], 0.0) << v.name << v.layer;
      }
      zeros += H[v.offset + k] == 0.0;
    }
  EXPECT_EQ(zeros, 25);
  std::vector<double> a(H.size());
  for (size_t i = 0; i < H.size(); ++i) a[i] = std::fabs(H[i]);
  std::sort(a.begin(), a.end());
  EXPECT_DOUBLE_EQ(robust_condition_number(H), a.back() / a[74]);
}

// The fixed landscape set: the same tasks for points of different seeds (and optimisers), of the size
// hessian_tasks, and not the point's own training or evaluation tasks.
TEST(Landscape, FixedSetIsSharedByPointsOfDifferentSeeds) {
  const Point p1 = test::make_point({{"d", "5"}, {"n", "20"}, {"layers", "3"}, {"param", "sparse_ab"},
                                     {"landscape", "every:250"}, {"steps", "1000"}, {"seed", "1"},
                                     {"optimizer", "sgd"}, {"hessian_tasks", "300"}, {"batch", "64"}});
  Point p2 = p1;
  ASSERT_EQ(point_set(p2, "seed", "2"), "");
  ASSERT_EQ(point_set(p2, "optimizer", "adamw"), "");
  const Landscape l1(p1), l2(p2);
  const TaskBatch<double>&s1 = l1.fixed_set(), &s2 = l2.fixed_set();
  ASSERT_EQ(s1.B, 300);
  ASSERT_EQ(s2.B, 300);
  for (size_t i = 0; i < s1.Z.size(); ++i)
    for (int v = 0; v < kLanes<double>; ++v) ASSERT_EQ(s1.Z[i][v], s2.Z[i][v]);
  for (size_t c = 0; c < s1.y.size(); ++c)
    for (int v = 0; v < kLanes<double>; ++v) ASSERT_EQ(s1.y[c][v], s2.y[c][v]);
  const auto own = test::make_batch<double>(p1, 300);   // a seeded set of point 1 differs
  EXPECT_NE(own.Z[0][0], s1.Z[0][0]);
}

// The registry (metrics.hpp) is the one description of every analysis name: each name a point's analyses
// write is in it, with a doc and a convention, and each method-family name carries its method's label.
TEST(MetricRegistry, DocumentsEveryNameTheAnalysesWrite) {
  const std::vector<Point> points = {
      test::make_point({{"d", "3"}, {"n", "8"}, {"layers", "2"}, {"param", "sparse_ab"}, {"cov", "rotated:1,0.5,2"},
                        {"batch", "32"}, {"steps", "4"}, {"eval_tasks", "64"}, {"landscape", "0,4"}}),
      test::make_point({{"d", "3"}, {"n", "8"}, {"layers", "1"}, {"noise", "uniform:1"}, {"act_clip", "100"},
                        {"batch", "32"}, {"steps", "4"}, {"eval_tasks", "64"}, {"norm", "1"}}),
      test::make_point({{"d", "3"}, {"n", "8"}, {"task_pool", "4"}, {"train_contexts", "40"}, {"noise", "fixed:0.5"},
                        {"batch", "32"}, {"steps", "4"}, {"eval_tasks", "64"}, {"context_curve", "3"}})};
  for (const Point& p : points) {
    const Result r = run_point(p);
    ASSERT_EQ(r.analysis_status, AnalysisStatus::ok) << r.analysis_message;
    std::vector<std::string> names;
    for (const auto& kv : r.metrics) names.push_back(kv.first);
    for (const auto& kv : r.series) names.push_back(kv.first);
    for (const std::string& name : names) {
      MetricInfo info;
      ASSERT_TRUE(metric_info(name, &info)) << name << " is not in the registry (metrics.cpp)";
      EXPECT_FALSE(info.doc.empty() || info.convention.empty()) << name;
    }
  }
  MetricInfo info;
  ASSERT_TRUE(metric_info("se_adjusted_tuned_rr", &info));
  EXPECT_EQ(info.label, "TunedRR");
  ASSERT_TRUE(metric_info("layer_loss_gdpp_tied", &info));
  EXPECT_EQ(info.label, find_method("gdpp_tied")->label);
  EXPECT_TRUE(metric_info("pool_loss_dmmse", &info));
  EXPECT_FALSE(metric_info("loss_nonexistent", &info));
  EXPECT_FALSE(metric_info("adjusted_", &info));
}

// Every name the registry can make reads back as itself: an exact name to its own doc, a family's name to
// its method's label, so no family's prefix swallows another's name or an exact one.
TEST(MetricRegistry, EveryNameItMakesReadsBack) {
  EXPECT_EQ(MetricName(Metric::gd_eta).str(), "gd_eta");   // the stored spelling is the declared one
  EXPECT_EQ(MetricName(Family::se_adjusted, Method::gdpp_tied).str(), "se_adjusted_gdpp_tied");
  std::set<std::string> seen;
  MetricInfo info;
  for (int k = 0; k < kMetrics; ++k) {
    const MetricName n(static_cast<Metric>(k));
    ASSERT_TRUE(metric_info(n.str(), &info)) << n.str();
    EXPECT_TRUE(info.label.empty()) << n.str();
    EXPECT_FALSE(info.doc.empty() || info.convention.empty()) << n.str();
    EXPECT_TRUE(seen.insert(n.str()).second) << n.str() << " twice";
  }
  for (int f = 0; f < kFamilies; ++f)
    for (int m = 0; m < kMethods; ++m) {
      const MetricName n(static_cast<Family>(f), static_cast<Method>(m));
      ASSERT_TRUE(metric_info(n.str(), &info)) << n.str();
      EXPECT_EQ(info.label, method_info(static_cast<Method>(m)).label) << n.str();
      EXPECT_NE(info.doc.find(method_info(static_cast<Method>(m)).doc), std::string::npos) << n.str();
      EXPECT_TRUE(seen.insert(n.str()).second) << n.str() << " twice";
    }
  EXPECT_EQ(methods().size(), static_cast<size_t>(kMethods));
  EXPECT_EQ(seen.size(), static_cast<size_t>(kMetrics + kFamilies * kMethods));
}


// SIGUSR1 reaches a running analysis (issue 28, item 9): the stop flag, set as the analysis begins, cancels
// the point (a sweep then treats it as in flight: not stored, recomputed on --resume) without analysing it.
struct StopWhenAnalysisBegins : StageHook {
  std::atomic<bool>* stop = nullptr;
  void enter(const char* stage) override {
    if (std::string(stage) == "analysis") stop->store(true);
  }
};

TEST(Analysis, StopFlagCancelsTheAnalysis) {
  const Point p = make_point({{"d", "5"}, {"n", "10"}, {"steps", "20"}, {"batch", "64"}, {"eval_tasks", "256"},
                              {"eval_every", "10"}, {"context_curve", "30"}, {"task_pool", "64"}});
  std::atomic<bool> stop{false};
  StopWhenAnalysisBegins hook;
  hook.stop = &stop;
  const Result r = run_point(p, &stop, &hook);
  EXPECT_EQ(r.status, Status::cancelled) << status_name(r.status) << ": " << r.message;
  EXPECT_NE(r.analysis_status, AnalysisStatus::ok);
  EXPECT_TRUE(r.metrics.empty() && r.series.empty()) << r.metrics.size() << " metrics";
}


// The flag is polled from the analysis's first step: set before it starts, analyse throws Cancelled without
// doing its work; so do GD++ tuning, the Hessian diagonal and a landscape measurement.
TEST(Analysis, StopFlagIsPolledByEveryLongStage) {
  const Point p = make_point({{"d", "5"}, {"n", "10"}, {"layers", "2"}, {"steps", "10"}, {"batch", "64"},
                              {"eval_tasks", "256"}, {"eval_every", "10"}, {"context_curve", "30"}, {"task_pool", "64"},
                              {"precision", "float64"}});
  Point q = p;
  q.analysis = false;
  const Result trained = run_point(q);
  ASSERT_EQ(trained.status, Status::ok);
  std::atomic<bool> stop{true};
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_THROW(analyse(p, trained, &stop), Cancelled);
  const double cancelled_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const auto t1 = std::chrono::steady_clock::now();
  std::atomic<bool> go{false};
  const Analysis full = analyse(p, trained, &go);
  const double full_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t1).count();
  EXPECT_FALSE(full.metrics.empty());
  EXPECT_LT(cancelled_seconds, 0.05 * full_seconds) << cancelled_seconds << " s cancelled, " << full_seconds << " s in full";

  const auto tune = test::make_batch<double>(p, 64);
  const GdppTasks spectra = gdpp_tasks(tune);
  EXPECT_THROW(tune_gdpp_tied(spectra, 2, 0.1, &stop), Cancelled);
  GdppTuned tied;
  tied.eta = {0.1, 0.1};
  tied.gamma = {0.0, 0.0};
  EXPECT_THROW(tune_gdpp_per_step(spectra, tied, nullptr, 0.1, nullptr, &stop), Cancelled);
  Objective<double> obj(p);
  const std::vector<double> theta(obj.layout().size(), 0.01);
  EXPECT_THROW(hessian_diagonal(obj, tune, theta, &stop), Cancelled);
  Point l = make_point({{"d", "3"}, {"n", "6"}, {"landscape", "0,5"}, {"steps", "10"}, {"batch", "32"}, {"hessian_tasks", "16"}});
  Landscape landscape(l, &stop);
  EXPECT_THROW(landscape.measure(0, std::vector<double>(Objective<double>(l).layout().size(), 0.01), {}), Cancelled);
}

// Set while the analysis runs (here: from another thread, a quarter into a slow analysis), the flag stops it
// within a small fraction of its length: it is polled between tasks, not only between methods.
TEST(Analysis, StopFlagSetDuringTheAnalysisReturnsPromptly) {
  const Point p = make_point({{"d", "8"}, {"n", "16"}, {"steps", "10"}, {"batch", "64"}, {"eval_tasks", "512"},
                              {"eval_every", "10"}, {"context_curve", "120"}});
  Point q = p;
  q.analysis = false;
  const Result trained = run_point(q);
  ASSERT_EQ(trained.status, Status::ok);
  auto t0 = std::chrono::steady_clock::now();
  analyse(p, trained);
  const double full = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::atomic<bool> stop{false};
  std::chrono::steady_clock::time_point set_at;
  std::thread setter([&] {
    std::this_thread::sleep_for(std::chrono::duration<double>(full / 4));
    set_at = std::chrono::steady_clock::now();
    stop.store(true);
  });
  EXPECT_THROW(analyse(p, trained, &stop), Cancelled);
  const auto returned = std::chrono::steady_clock::now();
  setter.join();
  const double after = std::chrono::duration<double>(returned - set_at).count();
  std::printf("  analysis %.2f s; returned %.4f s after the flag was set\n", full, after);
  EXPECT_LT(after, 0.1 * full + 0.05);
}

// Tied GD++ is run apart from per-step GD++ only where their weights differ: at one layer (the same weights)
// every curve and alignment of the two is the same number; at three layers on anisotropic inputs, where per-step
// GD++ takes its own rates, each out-of-distribution curve is its own.
TEST(Analysis, TiedGdppSharesPerStepGdppsRunsOnlyWithTheSameWeights) {
  for (const char* layers : {"1", "3"}) {
    const Point p = make_point({{"d", "4"}, {"n", "8"}, {"layers", layers}, {"cov", "rotated:1,0.25,4,0.5"},
                                {"steps", "1"}, {"batch", "16"}, {"eval_tasks", "256"}});
    const Result r = run_point(p);
    const std::vector<double>& eta = r.series.at("gdpp_eta");
    const double tied = r.series.at("gdpp_tied_eta").back();
    const bool same = std::all_of(eta.begin(), eta.end(), [&](double e) { return e == tied; });
    EXPECT_EQ(same, p.layers == 1) << "layers " << layers;
    int differ = 0;
    for (const char* curve : {"ood_alpha", "ood_teacher", "ood_other", "ood_other_teacher", "ood_context"}) {
      const std::vector<double>& a = r.series.at(std::string(curve) + "_loss_gdpp");
      const std::vector<double>& b = r.series.at(std::string(curve) + "_loss_gdpp_tied");
      differ += a != b;
    }
    EXPECT_EQ(differ, same ? 0 : 5) << "layers " << layers;
    if (same) {
      EXPECT_EQ(r.metrics.at("align_gdpp_cos"), r.metrics.at("align_gdpp_tied_cos"));
    }
  }
}

}  // namespace
}  // namespace icl
