// The closed-form predictors' task spectrum (baselines.hpp) against its frozen reference, the
// eigendecomposition of X X^T with its eigenvectors: the eigenvalues and every predictor built on the
// projections, over dimensions, context lengths (rank-deficient and full), spread and repeated spectra
// and extreme scales.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "icl/analysis/baselines.hpp"
#include "icl/analysis/context_sums.hpp"
#include "icl/data/data.hpp"

namespace icl {
namespace {

// The frozen reference: task_spectrum as it was computed until 2026-11-26, the eigenvectors themselves.
TaskSpectrum task_spectrum_ref(const Eigen::MatrixXd& X, const Eigen::VectorXd& y, const Eigen::VectorXd& xq) {
  Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> es(X * X.transpose());
  TaskSpectrum t;
  t.s = es.eigenvalues().cwiseMax(0.0);
  t.b = es.eigenvectors().transpose() * (X * y);
  t.z = es.eigenvectors().transpose() * xq;
  t.yy = y.squaredNorm();
  t.n = static_cast<int>(y.size());
  return t;
}

struct Task {
  Eigen::MatrixXd X;
  Eigen::VectorXd y, xq;
};

// d x n Gaussian inputs with per-coordinate scales `scale` (spread spectra), labels from w ~ N(0, I) plus noise.
Task gaussian_task(int d, int n, const std::vector<double>& scale, double noise, std::mt19937_64& rng) {
  std::normal_distribution<double> N;
  Task t{Eigen::MatrixXd(d, n), Eigen::VectorXd(n), Eigen::VectorXd(d)};
  Eigen::VectorXd w(d);
  for (int i = 0; i < d; ++i) {
    w(i) = N(rng);
    t.xq(i) = scale[i] * N(rng);
    for (int j = 0; j < n; ++j) t.X(i, j) = scale[i] * N(rng);
  }
  for (int j = 0; j < n; ++j) t.y(j) = t.X.col(j).dot(w) + noise * N(rng);
  return t;
}

// Every predictor of baselines.hpp on both spectra, within `tol` of the result (or of 1).  The noise estimate
// |y|^2 - |P_X y|^2 and the Bayes evidence cancel |y|^2 against a fit: there the error scales with |y|^2, and
// with spread inputs (`conditioned` false) Bayes' posterior weights amplify it beyond any fixed bound, in the
// reference as much as here, so it is compared on well-conditioned tasks only.
// `floor`: the magnitude below which errors count absolutely (0 at extreme scales: relative throughout).
void expect_same_predictions(const TaskSpectrum& got, const TaskSpectrum& ref, double tol, const std::string& what,
                             bool conditioned = true, double floor = 1.0) {
  ASSERT_EQ(got.s.size(), ref.s.size()) << what;
  const double s_max = std::max(ref.s.maxCoeff(), 1e-300);
  for (int i = 0; i < ref.s.size(); ++i) EXPECT_NEAR(got.s(i), ref.s(i), tol * s_max) << what << " s_" << i;
  EXPECT_EQ(got.n, ref.n);
  EXPECT_NEAR(got.yy, ref.yy, 1e-14 * ref.yy);   // a chain in token order (context_sums.hpp), the reference Eigen's sum
  auto near = [&](double a, double b, const char* name, double scale = -1.0) {
    if (scale < 0) scale = floor;
    if (std::isnan(a) && std::isnan(b)) return;   // Newton's alpha underflows at tiny scales, in both
    EXPECT_NEAR(a, b, tol * std::max({std::fabs(b), scale})) << what << " " << name;
  };
  for (double lambda : {1e-3 * s_max, 0.1 * s_max, s_max, 10 * s_max}) near(predict_ridge(got, lambda), predict_ridge(ref, lambda), "ridge");
  for (int K : {1, 3, 8}) near(predict_gd(got, 0.5 / s_max, K), predict_gd(ref, 0.5 / s_max, K), "gd");
  near(predict_ols(got), predict_ols(ref), "ols");
  for (int K : {0, 2, 6}) near(predict_newton(got, K), predict_newton(ref, K), "newton");
  if (conditioned)
    near(predict_bayes(got, {0.1, 0.5, 1.0}, {0.2, 0.3, 0.5}), predict_bayes(ref, {0.1, 0.5, 1.0}, {0.2, 0.3, 0.5}), "bayes");
  if (ref.n > ref.s.size()) near(noise_estimate(got), noise_estimate(ref), "noise_estimate", ref.yy / (ref.n - ref.s.size()));
}

TEST(TaskSpectrum, MatchesTheEigendecompositionOverShapesAndSpreads) {
  std::mt19937_64 rng(20261126);
  for (int d : {1, 2, 3, 5, 10, 17, 33})
    for (int n : {1, std::max(d / 2, 1), d, 2 * d + 1, 80})
      for (double spread : {1.0, 1e3}) {   // input scales from 1 to `spread` (condition spread^2)
        std::vector<double> scale(d);
        for (int i = 0; i < d; ++i) scale[i] = std::pow(spread, d > 1 ? double(i) / (d - 1) : 0.0);
        for (int rep = 0; rep < 4; ++rep) {
          const Task t = gaussian_task(d, n, scale, 0.3, rng);
          const std::string what = "d = " + std::to_string(d) + ", n = " + std::to_string(n) + ", spread " + std::to_string(spread);
          // Spread inputs make X X^T ill-conditioned (up to 1e12 and beyond at n = d), and so does a square
          // context (its smallest singular value about 1/sqrt(d); OLS moved 1.1e-11 at d = n = 33 on AVX2): both
          // computations then carry errors of cond x eps, compared with long double in the next test.
          const double tol = spread != 1.0 ? 1e-6 : n == d ? 1e-9 : 1e-11;
          expect_same_predictions(task_spectrum(t.X, t.y, t.xq), task_spectrum_ref(t.X, t.y, t.xq), tol, what, spread == 1.0);
        }
      }
}

// On ill-conditioned square contexts (input scales 1 .. 1000, n = d) the OLS prediction's error against an
// eigendecomposition in long double is of the double eigendecomposition's size, on average over tasks (a
// deflation test at 1e-10 instead of eps makes it 30 times larger).  Measured, ours / Eigen's: 1.03 on x86-64
// (both 1.7e-10), 2.2 on aarch64 under qemu (Eigen's error half its x86 value there, ours the same; why, not
// measured).
TEST(TaskSpectrum, AsAccurateAsTheEigendecompositionOnIllConditionedContexts) {
  using MatrixL = Eigen::Matrix<long double, Eigen::Dynamic, Eigen::Dynamic>;
  std::mt19937_64 rng(9);
  const int d = 10, T = 60;
  std::vector<double> scale(d);
  for (int i = 0; i < d; ++i) scale[i] = std::pow(1000.0, double(i) / (d - 1));
  double ours = 0, reference = 0;
  for (int k = 0; k < T; ++k) {
    const Task t = gaussian_task(d, d, scale, 1.0, rng);
    const MatrixL X = t.X.cast<long double>();
    Eigen::SelfAdjointEigenSolver<MatrixL> es(X * X.transpose());
    TaskSpectrum exact;
    exact.s = es.eigenvalues().cast<double>().cwiseMax(0.0);
    exact.b = (es.eigenvectors().transpose() * (X * t.y.cast<long double>())).cast<double>();
    exact.z = (es.eigenvectors().transpose() * t.xq.cast<long double>()).cast<double>();
    const double want = predict_ols(exact);
    ours += std::fabs(predict_ols(task_spectrum(t.X, t.y, t.xq)) - want) / std::fabs(want) / T;
    reference += std::fabs(predict_ols(task_spectrum_ref(t.X, t.y, t.xq)) - want) / std::fabs(want) / T;
  }
  std::printf("  mean relative OLS error against long double: ours %.3g, the eigendecomposition's %.3g\n", ours, reference);
  EXPECT_GT(reference, 1e-12);   // the contexts are ill-conditioned enough to tell
  EXPECT_LT(ours, 4 * reference);
}

// Where the eigenvalues are distinct the projections are determined up to a sign per eigenvector: b_i z_i,
// b_i^2 and z_i^2 must agree one by one (a rotation applied to the wrong rows, or with the wrong sign, fails
// here even where a sum over i might hide it).
TEST(TaskSpectrum, ProjectionsAgreePerEigenvalue) {
  std::mt19937_64 rng(7);
  for (int d : {2, 4, 9, 16}) {
    std::vector<double> scale(d);
    for (int i = 0; i < d; ++i) scale[i] = 1.0 + 0.7 * i;
    const Task t = gaussian_task(d, 3 * d, scale, 0.1, rng);
    const TaskSpectrum got = task_spectrum(t.X, t.y, t.xq), ref = task_spectrum_ref(t.X, t.y, t.xq);
    const double bb = ref.b.squaredNorm(), zz = ref.z.squaredNorm();
    for (int i = 0; i < d; ++i) {
      EXPECT_NEAR(got.b(i) * got.z(i), ref.b(i) * ref.z(i), 1e-10 * std::sqrt(bb * zz)) << "d = " << d << ", i = " << i;
      EXPECT_NEAR(got.b(i) * got.b(i), ref.b(i) * ref.b(i), 1e-10 * bb) << "d = " << d << ", i = " << i;
      EXPECT_NEAR(got.z(i) * got.z(i), ref.z(i) * ref.z(i), 1e-10 * zz) << "d = " << d << ", i = " << i;
    }
  }
}

// Many tasks at once (TaskSpectra: several side by side, each with its own blocks and step count) give each
// task's spectrum bit for bit as alone: a mix of spreads, so that lanes need different numbers of steps,
// more tasks than lanes and a partial last batch, a zero task among them, and a diagonal one (already
// tridiagonal: its lane keeps its values while the others' reflections run).
TEST(TaskSpectrum, ABatchGivesEachTasksSpectrumAsAlone) {
  std::mt19937_64 rng(11);
  const int d = 7;
  std::vector<Task> tasks;
  for (int t = 0; t < 21; ++t) {
    std::vector<double> scale(d);
    for (int i = 0; i < d; ++i) scale[i] = std::pow(1.0 + t % 5, double(i) / (d - 1));
    tasks.push_back(gaussian_task(d, t % 3 == 0 ? 3 : 2 * d, scale, 0.2, rng));
  }
  tasks[9].X.setZero();
  tasks[4].X.setZero();
  for (int i = 0; i < d; ++i) tasks[4].X(i, i) = 1.0 + i;
  TaskSpectra batch;
  for (const Task& t : tasks) batch.add(t.X, t.y, t.xq);
  const Spectra all = batch.take();
  ASSERT_EQ(all.size(), tasks.size());
  for (size_t t = 0; t < tasks.size(); ++t) {
    const TaskSpectrum alone = task_spectrum(tasks[t].X, tasks[t].y, tasks[t].xq);
    EXPECT_EQ(all[t].s, alone.s) << "task " << t;
    EXPECT_EQ(all[t].b, alone.b) << "task " << t;
    EXPECT_EQ(all[t].z, alone.z) << "task " << t;
    EXPECT_EQ(all[t].yy, alone.yy);
    EXPECT_EQ(all[t].n, alone.n);
    for (const double* v : {all[t].s.data(), all[t].b.data(), all[t].z.data()})   // as an Eigen vector's: SpectrumRef
      EXPECT_EQ(reinterpret_cast<std::uintptr_t>(v) % std::max(EIGEN_MAX_ALIGN_BYTES, 1), 0u) << "task " << t;
  }
  EXPECT_TRUE(batch.take().empty());
}

// A column nearly decoupled below its sub-diagonal (X X^T's first column (2, 1, delta, 0, ..)): the entry
// delta must not be lost beside the sub-diagonal's square in the reduction's norm; if it were, the
// eigenvalues would be off by about delta (1e-9) instead of round-off.
TEST(TaskSpectrum, ReductionKeepsTinyEntriesBelowTheSubdiagonal) {
  for (double delta : {1e-7, 1e-9, 1e-11}) {
    Eigen::MatrixXd G = Eigen::MatrixXd::Identity(5, 5) * 4;
    G(0, 0) = 2;
    G(1, 0) = G(0, 1) = 1;
    G(2, 0) = G(0, 2) = delta;
    G(3, 4) = G(4, 3) = 0.5;
    const Eigen::MatrixXd X = G.llt().matrixL();   // X X^T = G
    const Eigen::VectorXd y = Eigen::VectorXd::LinSpaced(5, 1, 2), xq = Eigen::VectorXd::LinSpaced(5, -1, 1);
    const TaskSpectrum got = task_spectrum(X, y, xq), ref = task_spectrum_ref(X, y, xq);
    for (int i = 0; i < 5; ++i) EXPECT_NEAR(got.s(i), ref.s(i), 1e-14 * ref.s.maxCoeff()) << "delta " << delta << ", s_" << i;
    EXPECT_NEAR(predict_ridge(got, 1e-3), predict_ridge(ref, 1e-3), 1e-13 * std::fabs(predict_ridge(ref, 1e-3)));
  }
}

// A context that is not finite gives a spectrum that is not (NaN), never a finite guess.
TEST(TaskSpectrum, NonFiniteContextGivesNaN) {
  Eigen::MatrixXd X = Eigen::MatrixXd::Ones(3, 4);
  X(1, 2) = std::numeric_limits<double>::quiet_NaN();
  const TaskSpectrum t = task_spectrum(X, Eigen::VectorXd::Ones(4), Eigen::VectorXd::Ones(3));
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(std::isnan(t.s(i))) << i;
  EXPECT_TRUE(std::isnan(predict_ridge(t, 1.0)));
}

// dMMSE against its definition written out, and DmmseSums (from the contexts' sums, |y|^2 - 2 w.(X y) +
// w^T X X^T w per pool task, a block of tasks at a time) against both, with and without noise (a pool task that
// fits exactly: residual 0, where the sums cancel): 150 tasks (two blocks and part of a third) of 3 to 9 context
// pairs in d = 4, over 600 pool tasks; tasks added after a take() make a fresh set.
TEST(Dmmse, FromTheContextsSumsMatchesTheResiduals) {
  std::mt19937_64 rng(5);
  const int d = 4, M = 600, B = 2 * DmmseSums::kBlock + 22;
  std::normal_distribution<double> N;
  Eigen::MatrixXd pool(d, M);
  for (int i = 0; i < d * M; ++i) pool.data()[i] = N(rng);
  for (double noise : {0.5, 0.0}) {
    const std::vector<double> sigma = noise > 0 ? std::vector<double>{0.5} : std::vector<double>{1e-6}, weight = {1.0};
    DmmseSums sums(pool, sigma, weight);
    std::vector<double> want, fits;
    for (int t = 0; t < B; ++t) {
      const int n = 3 + t % 7, m = (7 * t) % M;
      Task task = gaussian_task(d, n, std::vector<double>(d, 1.0), 0.0, rng);
      task.y = task.X.transpose() * pool.col(m);
      for (int j = 0; j < n; ++j) task.y(j) += noise * N(rng);
      want.push_back(predict_dmmse(task.X, task.y, task.xq, pool, sigma, weight));
      fits.push_back(pool.col(m).dot(task.xq));
      if (t == 0) {   // the reference against the definition written out
        const Eigen::VectorXd rss = ((pool.transpose() * task.X).rowwise() - task.y.transpose()).rowwise().squaredNorm();
        const Eigen::VectorXd logp = -n * std::log(sigma[0]) - rss.array() / (2 * sigma[0] * sigma[0]);
        const Eigen::VectorXd p = (logp.array() - logp.maxCoeff()).exp();
        EXPECT_NEAR(want[0], p.dot(pool.transpose() * task.xq) / p.sum(), 1e-12 * std::fabs(want[0])) << "noise " << noise;
      }
      sums.add(task.X * task.X.transpose(), task.X * task.y, task.y.squaredNorm(), n, task.xq);
    }
    const std::vector<double> got = sums.take();
    ASSERT_EQ(got.size(), want.size());
    for (int t = 0; t < B; ++t) {
      EXPECT_NEAR(got[t], want[t], 1e-9 * std::fabs(want[t])) << "noise " << noise << ", task " << t;
      if (noise == 0 && 3 + t % 7 >= d) {
        EXPECT_NEAR(got[t], fits[t], 1e-9) << t;   // on the pool task that fits
      }
    }
    Task task = gaussian_task(d, 5, std::vector<double>(d, 1.0), noise, rng);
    const double want_again = predict_dmmse(task.X, task.y, task.xq, pool, sigma, weight);
    sums.add(task.X * task.X.transpose(), task.X * task.y, task.y.squaredNorm(), 5, task.xq);
    task.X(1, 2) = std::numeric_limits<double>::quiet_NaN();   // a context that is not finite: NaN, never a guess
    sums.add(task.X * task.X.transpose(), task.X * task.y, task.y.squaredNorm(), 5, task.xq);
    const std::vector<double> again = sums.take();
    ASSERT_EQ(again.size(), 2u);
    EXPECT_NEAR(again[0], want_again, 1e-9 * std::fabs(want_again));
    EXPECT_TRUE(std::isnan(again[1]));
    EXPECT_TRUE(std::isnan(predict_dmmse(task.X, task.y, task.xq, pool, sigma, weight)));
  }
}

// One NaN anywhere in a pool task's residual or prediction makes the posterior NaN (the check runs a vector at a
// time: first, last and middle entries, lengths off the vector width).
TEST(Dmmse, AnyNaNResidualOrPredictionIsNaN) {
  const std::vector<double> sigma = {0.5}, weight = {1.0};
  for (const int M : {1, 7, 13, 4096})
    for (const int at : {0, M / 2, M - 1})
      for (const bool in_rss : {true, false}) {
        Eigen::VectorXd rss = Eigen::VectorXd::LinSpaced(M, 0.0, 3.0), pred = Eigen::VectorXd::LinSpaced(M, -1.0, 1.0);
        EXPECT_FALSE(std::isnan(dmmse_posterior(rss, pred, 16, sigma, weight))) << M;
        (in_rss ? rss : pred)(at) = std::numeric_limits<double>::quiet_NaN();
        EXPECT_TRUE(std::isnan(dmmse_posterior(rss, pred, 16, sigma, weight))) << "M " << M << ", at " << at << ", rss " << in_rss;
      }
}

// The posterior takes the weights below e^-600 of the largest as e^-600 (computed, their subnormal values cost
// microcode assists): the same bits as every weight computed, on pools whose log-weights spread from 0 to
// -5,000, with one and three noise levels, and one pool task far ahead of the rest.
TEST(Dmmse, NegligibleWeightsLeaveThePosteriorBitForBit) {
  std::mt19937_64 rng(9);
  std::uniform_real_distribution<double> U(0, 1);
  int cut = 0;
  for (const int M : {1, 7, 300, 4096})
    for (const double spread : {10.0, 1000.0, 5000.0})
      for (const std::vector<double>& sigma : {std::vector<double>{0.5}, std::vector<double>{0.1, 0.5, 1.0}}) {
        const std::vector<double> weight(sigma.size(), 1.0 / sigma.size());
        Eigen::VectorXd rss(M), pred(M);
        for (int m = 0; m < M; ++m) {
          rss(m) = spread * U(rng) * U(rng);
          pred(m) = U(rng) - 0.5;
        }
        rss(M / 2) = 0.0;
        std::vector<double> c, h;
        double top = -1e300;
        for (size_t k = 0; k < sigma.size(); ++k) {
          c.push_back(std::log(weight[k]) - 16 * std::log(sigma[k]));
          h.push_back(0.5 / (sigma[k] * sigma[k]));
          top = std::max(top, c[k] - rss.minCoeff() * h[k]);
        }
        double num = 0, den = 0;
        for (size_t k = 0; k < sigma.size(); ++k) {
          const Eigen::ArrayXd x = (c[k] - top) - rss.array() * h[k], p = x.exp();   // every weight
          cut += (x < -600).count();
          num += (p * pred.array()).sum();
          den += p.sum();
        }
        EXPECT_EQ(dmmse_posterior(rss, pred, 16, sigma, weight), num / den) << "M " << M << ", spread " << spread;
      }
  EXPECT_GT(cut, 10000);   // the cut is exercised
}

// Every task's ridge and GD predictions kTaskLanes at a time (predict_ridge_all, predict_gd_all) are the one-task
// forms' bit for bit: a partial last block, eigenvalues below GD's 1e-12 floor, K = 0 .. 12 steps.
TEST(TaskSpectrum, LanesPredictAsOneTaskAtATime) {
  std::mt19937_64 rng(13);
  std::uniform_real_distribution<double> U(0, 1);
  for (const int d : {1, 5, 11}) {
    std::vector<TaskSpectrum> tasks(37);
    std::vector<double> lambda;
    for (TaskSpectrum& t : tasks) {
      t.s.resize(d);
      t.b.resize(d);
      t.z.resize(d);
      for (int i = 0; i < d; ++i) {
        t.s(i) = i == 0 ? 1e-14 * U(rng) : 3 * U(rng);
        t.b(i) = U(rng) - 0.5;
        t.z(i) = U(rng) - 0.5;
      }
      lambda.push_back(1e-3 + U(rng));
    }
    const SpectraBlocks blocks(tasks);
    const std::vector<double> ridge = predict_ridge_all(blocks, lambda);
    ASSERT_EQ(ridge.size(), tasks.size());
    for (size_t t = 0; t < tasks.size(); ++t) EXPECT_EQ(ridge[t], predict_ridge(tasks[t], lambda[t])) << "d " << d << ", task " << t;
    for (const int K : {0, 1, 2, 5, 12})
      for (const double eta : {0.01, 0.4, 1.9}) {
        const std::vector<double> gd = predict_gd_all(blocks, eta, K);
        for (size_t t = 0; t < tasks.size(); ++t)
          EXPECT_EQ(gd[t], predict_gd(tasks[t], eta, K)) << "d " << d << ", K " << K << ", eta " << eta << ", task " << t;
      }
  }
}

// GD's one-step rate in closed form is the minimiser that the search (minimise_log over predict_gd_all's loss)
// finds to its tolerance, at least as good as it, a stationary point of the loss, and clamped to the range: over
// spectra with tiny and spread eigenvalues, labels from a rate plus noise, labels against every prediction (the
// minimiser negative: lo), a rate beyond hi, and no prediction at all (every z_i b_i = 0: lo).
TEST(TaskSpectrum, OneStepGdRateIsTheSearchsMinimiser) {
  std::mt19937_64 rng(29);
  std::uniform_real_distribution<double> U(0, 1);
  std::normal_distribution<double> N;
  auto loss = [](const SpectraBlocks& b, const std::vector<double>& y, double eta) {
    const std::vector<double> yhat = predict_gd_all(b, eta, 1);
    double l = 0;
    for (size_t t = 0; t < y.size(); ++t) l += (yhat[t] - y[t]) * (yhat[t] - y[t]);
    return l / static_cast<double>(y.size());
  };
  for (const int d : {1, 5, 11})
    for (const double eta_true : {1e-3, 0.07, 2.5, 40.0, -0.3}) {
      std::vector<TaskSpectrum> tasks(301);
      std::vector<double> y;
      for (TaskSpectrum& t : tasks) {
        t.s.resize(d);
        t.b.resize(d);
        t.z.resize(d);
        double a = 0;
        for (int i = 0; i < d; ++i) {
          t.s(i) = i == 0 ? 1e-14 * U(rng) : std::exp(6 * U(rng) - 3);
          t.b(i) = N(rng);
          t.z(i) = N(rng);
          a += t.z(i) * t.b(i);
        }
        y.push_back(eta_true * (a + 0.5 * N(rng)));   // the rate well determined: noise in proportion
      }
      const SpectraBlocks blocks(tasks);
      const double eta = gd_one_step_eta(blocks, y, 1e-6, 10.0);
      const double searched = minimise_log([&](double e) { return loss(blocks, y, e); }, 1e-6, 10.0);
      const std::string what = "d " + std::to_string(d) + ", rate " + std::to_string(eta_true);
      if (eta_true < 0) {
        EXPECT_EQ(eta, 1e-6) << what;
      } else if (eta_true > 10) {
        EXPECT_EQ(eta, 10.0) << what;
      } else {
        EXPECT_NEAR(eta / searched, 1.0, 1e-5) << what << ": closed form " << eta << ", search " << searched;
        EXPECT_LE(loss(blocks, y, eta), loss(blocks, y, searched) * (1 + 1e-12)) << what;
        EXPECT_LT(loss(blocks, y, eta), loss(blocks, y, eta * 1.01)) << what;
        EXPECT_LT(loss(blocks, y, eta), loss(blocks, y, eta * 0.99)) << what;
      }
      for (TaskSpectrum& t : tasks) t.z.setZero();
      EXPECT_EQ(gd_one_step_eta(SpectraBlocks(tasks), y, 1e-6, 10.0), 1e-6) << what << ": no prediction";
    }
}

// Newton's steps k = 0..K in one pass (predict_newton_steps) are each step's one-step-count form bit for bit: the
// iteration m <- 2 m - s m^2 from alpha s per eigenvalue, summed over the eigenvalues in order, with a null
// direction (below the rank tolerance) and a zero spectrum.
TEST(TaskSpectrum, NewtonStepsInOnePassAsOneStepCountAtATime) {
  std::mt19937_64 rng(17);
  std::uniform_real_distribution<double> U(0, 1);
  const int K = 24;
  for (const int d : {1, 5, 11}) {
    TaskSpectrum t;
    t.s.resize(d);
    t.b.resize(d);
    t.z.resize(d);
    for (int i = 0; i < d; ++i) {
      t.s(i) = i == 0 && d > 1 ? 1e-14 * U(rng) : 3 * U(rng);
      t.b(i) = U(rng) - 0.5;
      t.z(i) = U(rng) - 0.5;
    }
    std::vector<double> steps(K + 1);
    predict_newton_steps(t, K, steps.data());
    const double alpha = 1 / t.s.array().square().matrix().norm();
    for (int k = 0; k <= K; ++k) {
      double want = 0.0;   // the one-step-count form (before 2026-11-27)
      for (int i = 0; i < d; ++i) {
        const double s = t.s(i);
        if (s <= 1e-10 * t.s.maxCoeff()) continue;
        double m = alpha * s;   // its multiply-adds as predict_newton_steps writes them (fused where the target fuses)
        for (int j = 0; j < k; ++j) m = fused_madd(m, 2.0, -(s * m * m));
        want = fused_madd(t.z(i) * t.b(i), m, want);
      }
      EXPECT_EQ(steps[k], want) << "d " << d << ", k " << k;
      EXPECT_EQ(predict_newton(t, k), want) << "d " << d << ", k " << k;
    }
    t.s.setZero();
    predict_newton_steps(t, K, steps.data());
    for (int k = 0; k <= K; ++k) EXPECT_EQ(steps[k], 0.0);
  }
}

// Repeated eigenvalues (X X^T = 2 I exactly: every direction one eigenvector), a zero context, a rank-one
// context (d - 1 null directions: b vanishes there), and scales far from 1.
TEST(TaskSpectrum, DegenerateAndExtremeContexts) {
  const int d = 6;
  Eigen::MatrixXd X(d, 2 * d);
  X << Eigen::MatrixXd::Identity(d, d), Eigen::MatrixXd::Identity(d, d);
  Eigen::VectorXd y = Eigen::VectorXd::LinSpaced(2 * d, -1, 1), xq = Eigen::VectorXd::LinSpaced(d, 0.5, 2);
  const TaskSpectrum equal = task_spectrum(X, y, xq);
  for (int i = 0; i < d; ++i) EXPECT_NEAR(equal.s(i), 2.0, 1e-14);
  expect_same_predictions(equal, task_spectrum_ref(X, y, xq), 1e-12, "X X^T = 2 I");
  EXPECT_NEAR(predict_ridge(equal, 1.0), xq.dot(X * y) / 3.0, 1e-12);

  const TaskSpectrum zero = task_spectrum(Eigen::MatrixXd::Zero(d, 4), Eigen::VectorXd::Ones(4), xq);
  EXPECT_EQ(zero.s, Eigen::VectorXd::Zero(d));
  EXPECT_EQ(predict_ridge(zero, 1.0), 0.0);
  EXPECT_EQ(predict_ols(zero), 0.0);

  std::mt19937_64 rng(3);
  const Task one = gaussian_task(d, 1, std::vector<double>(d, 1.0), 0.0, rng);
  const TaskSpectrum rank1 = task_spectrum(one.X, one.y, one.xq);
  EXPECT_NEAR(rank1.s(d - 1), one.X.squaredNorm(), 1e-12 * one.X.squaredNorm());
  for (int i = 0; i < d - 1; ++i) {
    EXPECT_LT(rank1.s(i), 1e-14 * rank1.s(d - 1));
    EXPECT_LT(std::fabs(rank1.b(i)), 1e-12 * rank1.b.norm());
  }
  expect_same_predictions(rank1, task_spectrum_ref(one.X, one.y, one.xq), 1e-10, "n = 1");

  for (double c : {1e-100, 1e100}) {
    const Task t = gaussian_task(d, 3 * d, std::vector<double>(d, c), 0.0, rng);
    expect_same_predictions(task_spectrum(t.X, t.y, t.xq), task_spectrum_ref(t.X, t.y, t.xq), 1e-9,
                            "scale " + std::to_string(c), true, 0.0);
  }
}

}  // namespace
}  // namespace icl

namespace icl {
namespace {

// A rotation whose (x, z) squares underflow (|x|, |z| < 1e-154 beside T's largest entry 1) takes hypot's care:
// a symmetric block of 1e-300's with off-diagonal 1e-160 (eigenvalues +-1e-160; not a Gram matrix, which
// deflates such a block first, but add_sums takes any symmetric matrix).  Without it the rotation divides by a
// zero norm and every value is NaN.
TEST(TaskSpectrum, RotationsOfUnderflowingSquaresStayFinite) {
  Eigen::MatrixXd G = Eigen::MatrixXd::Zero(3, 3);
  G(0, 0) = 1;
  G(1, 1) = G(2, 2) = 1e-300;
  G(1, 2) = G(2, 1) = 1e-160;
  const Eigen::VectorXd Xy = Eigen::Vector3d(0.3, 0.7, -0.2), xq = Eigen::Vector3d(0.5, -0.4, 0.9);
  TaskSpectra one;
  one.add_sums(G, Xy, 1.0, 4, xq);
  const Spectra got = one.take();
  const Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> es(G);
  const Eigen::VectorXd b = es.eigenvectors().transpose() * Xy, z = es.eigenvectors().transpose() * xq;
  for (int i = 0; i < 3; ++i) {
    EXPECT_NEAR(got[0].s(i), std::max(es.eigenvalues()(i), 0.0), 1e-15 * std::fabs(es.eigenvalues()(i)) + 1e-320) << i;
    EXPECT_NEAR(got[0].z(i) * got[0].b(i), z(i) * b(i), 1e-14) << i;   // an eigenvector's sign is either
  }
}

// Equal, or NaN in the same places.
bool same(Eigen::Ref<const Eigen::VectorXd> a, Eigen::Ref<const Eigen::VectorXd> b) {
  return a.size() == b.size() && (a.array() == b.array() || (a.array().isNaN() && b.array().isNaN())).all();
}

// A block's context sums (context_block: kWidth tasks to a register) are each task's own (context_sums: one
// chain of multiply-adds in token order) to the bit, for float and double batches and a partial last block;
// X X^T is symmetric; the query and its label are the task's; and the spectra from add_block (whole blocks a
// register at a time, the partial one task by task) are those from add_sums task by task, a task with a NaN
// input among them.
template <class T>
void check_blocks(const Point& p, int B) {
  TaskBatch<T> batch;
  batch.resize(B, p.d, p.n);
  sample_tasks(make_task_law(p), p.seed, Stream::eval, 0, batch);
  batch.Z[1][3] = std::numeric_limits<T>::quiet_NaN();   // task 3's x_1,1
  ContextBlock block;
  TaskSpectra by_block, by_task;
  Eigen::MatrixXd X, XXt, XXt_j;
  Eigen::VectorXd y, Xy, Xy_j, xq_j;
  for (int first = 0; first < B; first += kTaskLanes) {
    context_block(batch, first, &block);
    ASSERT_EQ(block.count, std::min(kTaskLanes, B - first));
    by_block.add_block(block);
    for (int j = 0; j < block.count; ++j) {
      batch_task(batch, first + j, &X, &y);
      double yy = 0;
      context_sums(X.leftCols(p.n), y.head(p.n), &XXt, &Xy, &yy);
      block.task(j, &XXt_j, &Xy_j, &xq_j);
      EXPECT_TRUE(same(XXt_j.reshaped(), XXt.reshaped())) << "task " << first + j;
      EXPECT_TRUE(same(XXt_j.reshaped(), XXt_j.transpose().reshaped()));
      EXPECT_TRUE(same(Xy_j, Xy));
      EXPECT_TRUE(same(Eigen::VectorXd::Constant(1, block.yy[j]), Eigen::VectorXd::Constant(1, yy)));
      EXPECT_EQ(xq_j, X.col(p.n));
      EXPECT_EQ(block.y_query[j], y(p.n));
      by_task.add_sums(XXt, Xy, yy, p.n, X.col(p.n));
    }
  }
  const Spectra a = by_block.take(), b = by_task.take();
  ASSERT_EQ(a.size(), static_cast<size_t>(B));
  for (size_t t = 0; t < a.size(); ++t) {
    EXPECT_TRUE(same(a[t].s, b[t].s)) << "task " << t;
    EXPECT_TRUE(same(a[t].b, b[t].b)) << "task " << t;
    EXPECT_TRUE(same(a[t].z, b[t].z)) << "task " << t;
    EXPECT_EQ(a[t].yy, b[t].yy) << "task " << t;
    EXPECT_EQ(a[t].n, b[t].n) << "task " << t;
  }
  EXPECT_TRUE(a[3].s.array().isNaN().all());
}

TEST(ContextSums, ABlockGivesEachTasksSumsAsAlone) {
  Point p;
  p.d = 7;
  p.n = 13;
  p.noise = NoiseKind::fixed;
  p.noise_sigma = {0.3};
  check_blocks<float>(p, 37);
  check_blocks<double>(p, 21);
}

// On float inputs every product is exact in double, so context_sums gives the same bits as an unfused chain.
TEST(ContextSums, FloatInputsGiveTheSameSumsFusedOrNot) {
  std::mt19937_64 rng(3);
  std::normal_distribution<float> g;
  const int d = 6, n = 40;
  Eigen::MatrixXd X(d, n);
  Eigen::VectorXd y(n);
  for (int rep = 0; rep < 50; ++rep) {
    for (int j = 0; j < n; ++j) {
      for (int i = 0; i < d; ++i) X(i, j) = g(rng);
      y(j) = g(rng);
    }
    Eigen::MatrixXd XXt;
    Eigen::VectorXd Xy;
    double yy = 0;
    context_sums(X, y, &XXt, &Xy, &yy);
    auto unfused = [&](const Eigen::VectorXd& a, const Eigen::VectorXd& b) {
      double s = 0;
      for (int j = 0; j < n; ++j) {
        volatile double ab = a(j) * b(j);   // rounded on its own
        s = ab + s;
      }
      return s;
    };
    for (int r = 0; r < d; ++r) {
      for (int k = 0; k < d; ++k) EXPECT_EQ(XXt(r, k), unfused(X.row(r), X.row(k)));
      EXPECT_EQ(Xy(r), unfused(X.row(r), y));
    }
    EXPECT_EQ(yy, unfused(y, y));
  }
}

}  // namespace
}  // namespace icl
