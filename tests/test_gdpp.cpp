// GD++ tuning (gdpp.hpp) on the [VO23] setting: d = n = 10, x ~ U(-0.5, 0.5)^d, noiseless.  The tuned
// (eta, gamma) must be a stationary point of the tuning loss and match or beat dense grids on the same set.
#include <gtest/gtest.h>

#include <cstdio>

#include "icl/analysis/gdpp.hpp"
#include "test_util.hpp"

namespace icl {
namespace {

struct Vo23 {
  Point p = test::make_point({{"d", "10"}, {"n", "10"}, {"x_dist", "uniform:0.5"}, {"precision", "float64"}});
  TaskBatch<double> batch = test::make_batch<double>(p, 500);
  GdppTasks tune = gdpp_tasks(batch);
  // The K-step GD rate the tuner starts from: the best of a 1-D grid (gamma = 0).
  double eta_gd(int K) const {
    double best = 0, best_f = 1e300;
    for (int i = 1; i <= 40; ++i) {
      const double f = gdpp_loss(tune, std::vector<double>(K, 0.05 * i), std::vector<double>(K, 0.0));
      if (f < best_f) { best_f = f; best = 0.05 * i; }
    }
    return best;
  }
};

// The tuning's loss (on each task's spectrum) is the gdpp transformer's, value and gradient, for every K.
TEST(Gdpp, SpectralLossIsTheTransformers) {
  const Vo23 s;
  const std::vector<double> eta = {0.7, 1.1, 0.9, 0.5}, gamma = {0.2, -0.1, 0.3, 0.4};
  for (int K = 1; K <= 4; ++K) {
    const std::vector<double> e(eta.begin(), eta.begin() + K), g(gamma.begin(), gamma.begin() + K);
    std::vector<double> grad, grad_ref;
    const double f = gdpp_loss(s.tune, e, g, &grad), f_ref = gdpp_loss_transformer(s.batch, e, g, &grad_ref);
    EXPECT_NEAR(f, f_ref, 1e-12 * f_ref) << "K = " << K;
    ASSERT_EQ(grad.size(), grad_ref.size());
    for (size_t k = 0; k < grad.size(); ++k)
      EXPECT_NEAR(grad[k], grad_ref[k], 1e-10 * std::max(1.0, std::fabs(grad_ref[k]))) << "K = " << K << ", " << k;
  }
}

TEST(Gdpp, LossGradientMatchesCentralDifferences) {
  const Vo23 s;
  const std::vector<double> eta = {0.7, 1.1, 0.9}, gamma = {0.2, -0.1, 0.3};
  std::vector<double> g;
  gdpp_loss(s.tune, eta, gamma, &g);
  ASSERT_EQ(g.size(), 6u);
  const double h = 1e-6;
  for (int l = 0; l < 3; ++l)
    for (int which = 0; which < 2; ++which) {
      std::vector<double> ep = eta, em = eta, gp = gamma, gm = gamma;
      (which == 0 ? ep : gp)[l] += h;
      (which == 0 ? em : gm)[l] -= h;
      const double fd = (gdpp_loss(s.tune, ep, gp) - gdpp_loss(s.tune, em, gm)) / (2 * h);
      EXPECT_NEAR(g[2 * l + which], fd, 1e-6 * std::max(1.0, std::fabs(fd))) << "step " << l << (which ? " gamma" : " eta");
    }
  EXPECT_EQ(g[5], 0.0);   // the last step's gamma never reaches the readout
}

TEST(Gdpp, TiedTuningIsStationaryAndBeatsADenseGrid) {
  const Vo23 s;
  for (int K : {2, 3}) {
    const double unit = s.eta_gd(K);
    const GdppTuned t = tune_gdpp_tied(s.tune, K, unit);
    EXPECT_TRUE(t.converged) << "K = " << K << ": |grad| / loss = " << t.grad_norm;
    // 2-D grid: eta in (0, 5] x unit (step 0.05), gamma in [-1, 2] x unit (step 0.05).
    double grid = 1e300, ge = 0, gg = 0;
    for (int i = 1; i <= 100; ++i)
      for (int j = 0; j <= 60; ++j) {
        const double e = 0.05 * i * unit, g = (-1.0 + 0.05 * j) * unit;
        const double f = gdpp_loss(s.tune, std::vector<double>(K, e), std::vector<double>(K, g));
        if (f < grid) { grid = f; ge = e; gg = g; }
      }
    std::printf("  K = %d tied: tuned %.6f (eta %.4f, gamma %.4f, %d iterations, |g|/f %.1e); grid %.6f (eta %.4f, gamma %.4f)\n",
                K, t.loss, t.eta[0], t.gamma[0], t.iterations, t.grad_norm, grid, ge, gg);
    EXPECT_LE(t.loss, grid * (1 + 1e-12)) << "K = " << K;
    EXPECT_LT(t.loss, gdpp_loss(s.tune, std::vector<double>(K, unit), std::vector<double>(K, 0.0)));   // beats GD
  }
}

// Per step is a local refinement (gdpp.hpp): stationary, never above tied, and no coordinate move helps.
TEST(Gdpp, PerStepTuningIsStationaryAndNoCoordinateImprovesIt) {
  const Vo23 s;
  GdppTuned shorter;
  for (int K : {2, 3}) {
    const double unit = s.eta_gd(K);
    const GdppTuned tied = tune_gdpp_tied(s.tune, K, unit);
    const GdppTuned t = tune_gdpp_per_step(s.tune, tied, K > 2 ? &shorter : nullptr, unit);
    shorter = t;
    EXPECT_TRUE(t.converged) << "K = " << K << ": |grad| / loss = " << t.grad_norm;
    EXPECT_LE(t.loss, tied.loss);
    EXPECT_NEAR(gdpp_loss(s.tune, t.eta, t.gamma), t.loss, 1e-14);
    EXPECT_EQ(t.gamma[K - 1], 0.0);
    // Every active coordinate on a 1-D grid of +-50% (around the value, or +-0.5 unit near 0).
    double best_line = 1e300;
    for (int c = 0; c < 2 * K - 1; ++c)
      for (int i = -40; i <= 40; ++i) {
        std::vector<double> eta = t.eta, gamma = t.gamma;
        double& v = c % 2 == 0 ? eta[c / 2] : gamma[c / 2];
        v += i / 80.0 * std::max(std::fabs(v), 0.5 * unit);
        best_line = std::min(best_line, gdpp_loss(s.tune, eta, gamma));
      }
    std::printf("  K = %d per step: tuned %.6f (%d iterations, |g|/f %.1e), tied %.6f, best on coordinate lines %.6f\n",
                K, t.loss, t.iterations, t.grad_norm, tied.loss, best_line);
    EXPECT_LE(t.loss, best_line * (1 + 1e-12));
  }
}

// The validation set is asked for only where it chooses: never at K = 1, where BFGS stays at the tied optimum
// (the result is that optimum), once at K = 2 and 3, where the result is never worse than tied on that set.
TEST(Gdpp, PerStepAsksForTheValidationSetOnlyWhereItChooses) {
  const Vo23 s;
  const Point q = test::make_point({{"d", "10"}, {"n", "10"}, {"x_dist", "uniform:0.5"}, {"precision", "float64"}, {"seed", "7"}});
  const GdppTasks validation = gdpp_tasks(test::make_batch<double>(q, 500));
  GdppTuned shorter;
  for (int K : {1, 2, 3}) {
    const double unit = s.eta_gd(K);
    const GdppTuned tied = tune_gdpp_tied(s.tune, K, unit);
    int asked = 0;
    const GdppTuned t = tune_gdpp_per_step(s.tune, tied, K > 1 ? &shorter : nullptr, unit, [&]() -> const GdppTasks& {
      ++asked;
      return validation;
    });
    EXPECT_EQ(asked, K == 1 ? 0 : 1) << "K = " << K;
    GdppTuned tied0 = tied;   // the tied optimum as per step runs it: the last gamma 0
    tied0.gamma[K - 1] = 0.0;
    if (K == 1) {
      EXPECT_EQ(t.eta, tied0.eta);
      EXPECT_EQ(t.gamma, tied0.gamma);
    }
    EXPECT_LE(gdpp_loss(validation, t.eta, t.gamma), gdpp_loss(validation, tied0.eta, tied0.gamma)) << "K = " << K;
    shorter = t;
  }
}

// A validation set on which no loss is finite chooses nothing: per step returns its first refined point (it
// returned an empty result before, which the next K read past its end).
TEST(Gdpp, PerStepWithNoFiniteValidationLossReturnsAPoint) {
  const Vo23 s;
  GdppTasks huge = s.tune;
  for (double& y : huge.y) y = 1e200;   // every squared error overflows
  for (int K : {2, 3}) {
    const double unit = s.eta_gd(K);
    const GdppTuned tied = tune_gdpp_tied(s.tune, K, unit);
    const GdppTuned t = tune_gdpp_per_step(s.tune, tied, nullptr, unit, [&]() -> const GdppTasks& { return huge; });
    ASSERT_EQ(t.eta.size(), static_cast<size_t>(K));
    ASSERT_EQ(t.gamma.size(), static_cast<size_t>(K));
    EXPECT_EQ(t.loss, tune_gdpp_per_step(s.tune, tied, nullptr, unit).loss) << "K = " << K;   // the refined point
  }
}

}  // namespace
}  // namespace icl
