// Fu et al.'s per-layer probes (probes.hpp) on a small causal GPT-2 trained at every prefix, at random
// weights: each probe is the least-squares optimum of its loss; the last layer's features are what the
// model's own read-out reads (its head as a probe gives the reference's predictions at every prefix); and
// the stored similarities are recomputed naively, with Newton as Fu et al.'s newton_inv matrix iteration.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

#include "icl/analysis/analysis.hpp"
#include "icl/analysis/metrics.hpp"
#include "icl/analysis/probes.hpp"
#include "icl/base/rng.hpp"
#include "icl/model/transformer_ref.hpp"
#include "test_util.hpp"

namespace icl {
namespace {

Point gpt2_point() {
  Point p;
  p.d = 3;
  p.n = 5;
  p.arch = Arch::transformer;
  p.norm = Norm::one;
  p.tokens = Tokens::padded;
  p.embed = Embed::linear;
  p.embed_size = 6;
  p.embed_bias = false;
  p.pe = PosEnc::learnt;
  p.pe_size = 6;
  p.causal = true;
  p.attention = Attention::softmax;
  p.layer_norm = p.layer_norm_first = p.mlp = true;
  p.widening = 2;
  p.readout = Readout::head;
  p.prefix_loss = true;
  p.layers = 3;
  p.heads = 2;
  p.key_size = 3;
  p.init = Init::gpt2;
  p.init_scale = 0.5;   // far from the identity map, so that the layers differ
  p.seed = 4;
  return p;
}

// The point, its shape and layout, and its initial weights.
struct Model {
  Point p = gpt2_point();
  TransformerShape s = transformer_shape(p);
  TransformerLayout layout{s};
  std::vector<double> theta = transformer_init(p, layout);
};

TaskBatch<double> probe_set(const Point& p, Draw which) {
  TaskBatch<double> set;
  set.resize(AnalysisSets::probe, p.d, p.n);
  sample_tasks(make_task_law(p), p.seed, which.stream, which.block, set);
  return set;
}

double mean_square(const std::vector<Eigen::VectorXd>& e) {
  double s = 0;
  for (const Eigen::VectorXd& v : e) s += v.squaredNorm();
  return s / (static_cast<double>(e.size()) * e[0].size());
}

TEST(Probes, EachProbeIsTheLeastSquaresOptimumOfItsLoss) {
  const Model m;
  const Point& p = m.p;
  const TransformerShape& s = m.s;
  const std::vector<double>& theta = m.theta;
  const TaskBatch<double> fit = probe_set(p, draws::probe_fit);
  const std::vector<Eigen::VectorXd> probes = fit_probes(s, theta, fit);
  ASSERT_EQ(static_cast<int>(probes.size()), p.layers);
  const std::vector<std::vector<Eigen::VectorXd>> e = probe_errors(s, theta, probes, fit);
  std::vector<double> distinct;
  for (int l = 0; l < p.layers; ++l) {
    const double at = mean_square(e[l]);
    distinct.push_back(at);
    for (int trial = 0; trial < 6; ++trial) {   // any step away from the probe raises its loss on the fit set
      std::vector<Eigen::VectorXd> moved = probes;
      Eigen::VectorXd delta(moved[l].size());
      rng_normals(rng_key(trial, Stream::analysis), 0, static_cast<int>(delta.size()), delta.data());
      moved[l] += 1e-3 * delta;
      const double off = mean_square(probe_errors(s, theta, moved, fit)[l]);
      EXPECT_GT(off, at) << "layer " << l + 1 << " trial " << trial;
    }
    std::printf("  layer %d: probe loss %.6f on its fit set\n", l + 1, at);
  }
  EXPECT_NE(distinct.front(), distinct.back()) << "the layers' features differ";
}

TEST(Probes, LastLayerFeaturesAreTheReadOutsOwnAtEveryPrefix) {
  const Model m;
  const Point& p = m.p;
  const TransformerShape& s = m.s;
  const std::vector<double>& theta = m.theta;
  const TaskBatch<double> set = probe_set(p, draws::probe_eval);
  std::vector<Eigen::VectorXd> probes(p.layers, Eigen::VectorXd::Zero(s.E + 1));
  for (int r = 0; r < s.E; ++r) probes.back()(r) = theta[m.layout.readout().W + r];   // w_r, bias 0
  const std::vector<std::vector<Eigen::VectorXd>> e = probe_errors(s, theta, probes, set);
  double worst = 0;
  for (int t = 0; t < 50; ++t) {
    Eigen::VectorXd prefix;
    transformer_ref_forward(s, m.layout, theta, test::task_Z(set, t), nullptr, &prefix);
    const Eigen::VectorXd yhat = e.back()[t] + prefix_labels(set, t);
    worst = std::max(worst, (yhat - prefix).cwiseAbs().maxCoeff() / (prefix.cwiseAbs().maxCoeff() + 1e-12));
  }
  EXPECT_LT(worst, 1e-12);
}

// Fu et al.'s newton_inv (src/models.py): inv = alpha A^T, alpha = 1 / |A A^T|_F, then k times
// inv <- inv (2 I - A inv); the prediction x^T inv X^T y from the first j examples (j = 0: 0).
double newton_inv_prediction(const Eigen::MatrixXd& X, const Eigen::VectorXd& y, const Eigen::VectorXd& x, int k) {
  if (X.rows() == 0) return 0.0;
  const Eigen::MatrixXd A = X.transpose() * X;
  Eigen::MatrixXd inv = A.transpose() / (A * A.transpose()).norm();
  const Eigen::MatrixXd I = Eigen::MatrixXd::Identity(A.rows(), A.rows());
  for (int i = 0; i < k; ++i) inv = inv * (2 * I - A * inv);
  return x.dot(inv * X.transpose() * y);
}

TEST(Probes, StoredSimilaritiesAreTheNaiveCosinesWithNewtonsMatrixIteration) {
  const Model m;
  const Point& p = m.p;
  const TransformerShape& s = m.s;
  const std::vector<double>& theta = m.theta;
  Analysis out;
  probe_similarity(p, theta, out, nullptr);
  const std::vector<double>& sim = out.series.at("probe_newton_similarity");
  const std::vector<double>& best = out.series.at("probe_newton_best_step");
  const int L = p.layers, K_max = std::min(64, std::max(12, 4 * L)), N = p.n + 1, d = p.d;
  ASSERT_EQ(static_cast<int>(sim.size()), L * (K_max + 1));
  ASSERT_EQ(static_cast<int>(best.size()), L);
  ASSERT_EQ(static_cast<int>(out.series.at("probe_loss").size()), L);

  const TaskBatch<double> fit = probe_set(p, draws::probe_fit), eval = probe_set(p, draws::probe_eval);
  const std::vector<std::vector<Eigen::VectorXd>> e = probe_errors(s, theta, fit_probes(s, theta, fit), eval);
  std::vector<double> naive(L * (K_max + 1), 0.0);
  for (int t = 0; t < eval.B; ++t) {
    const Eigen::MatrixXd Z = test::task_Z(eval, t);
    const Eigen::VectorXd y = prefix_labels(eval, t);
    for (int k = 0; k <= K_max; ++k) {
      Eigen::VectorXd r(N);
      for (int j = 0; j < N; ++j) {
        const Eigen::MatrixXd X = Z.block(0, 0, d, j).transpose();   // j x d, their rows
        r(j) = newton_inv_prediction(X, y.head(j), Z.col(j).head(d), k) - y(j);
      }
      for (int l = 0; l < L; ++l) naive[l * (K_max + 1) + k] += e[l][t].dot(r) / (e[l][t].norm() * r.norm()) / eval.B;
    }
  }
  double worst = 0;
  for (size_t i = 0; i < naive.size(); ++i) worst = std::max(worst, std::fabs(naive[i] - sim[i]));
  for (int l = 0; l < L; ++l) {
    const auto row = naive.begin() + l * (K_max + 1);
    EXPECT_EQ(best[l], std::max_element(row, row + K_max + 1) - row) << "layer " << l + 1;
    std::printf("  layer %d: best Newton step %g (cosine %.4f)\n", l + 1, best[l], sim[l * (K_max + 1) + int(best[l])]);
  }
  std::printf("  worst |stored - naive| similarity %.2e\n", worst);
  EXPECT_LT(worst, 1e-6);
}

// Fu et al.'s gradient_descent (src/models.py LeastSquaresModelGradientDescent): w = 0, then `steps` times
// w <- w - eta (X^T X w - X^T y); their `steps` of the grid 2^0..2^12 read off one run of 4,096 steps.
std::vector<double> gd_predictions(const Eigen::MatrixXd& X, const Eigen::VectorXd& y, const Eigen::VectorXd& x) {
  std::vector<double> at;
  if (X.rows() == 0) return std::vector<double>(kProbeGdSteps, 0.0);
  const Eigen::MatrixXd A = X.transpose() * X;
  const Eigen::VectorXd b = X.transpose() * y;
  Eigen::VectorXd w = Eigen::VectorXd::Zero(X.cols());
  for (int step = 1; step <= 1 << (kProbeGdSteps - 1); ++step) {
    w -= kProbeGdRate * (A * w - b);
    if ((step & (step - 1)) == 0) at.push_back(x.dot(w));
  }
  return at;
}

TEST(Probes, StoredSimilaritiesWithGdAndLeastSquaresAreTheNaiveCosines) {
  const Model m;
  const Point& p = m.p;
  Analysis out;
  probe_similarity(p, m.theta, out, nullptr);
  const std::vector<double>& gd = out.series.at("probe_gd_similarity");
  const std::vector<double>& best = out.series.at("probe_gd_best_step");
  const std::vector<double>& ols = out.series.at("probe_ols_similarity");
  const int L = p.layers, G = kProbeGdSteps, N = p.n + 1, d = p.d;
  ASSERT_EQ(static_cast<int>(gd.size()), L * G);
  ASSERT_EQ(static_cast<int>(best.size()), L);
  ASSERT_EQ(static_cast<int>(ols.size()), L);

  const TaskBatch<double> fit = probe_set(p, draws::probe_fit), eval = probe_set(p, draws::probe_eval);
  const std::vector<std::vector<Eigen::VectorXd>> e = probe_errors(m.s, m.theta, fit_probes(m.s, m.theta, fit), eval);
  std::vector<double> naive_gd(L * G, 0.0), naive_ols(L, 0.0);
  for (int t = 0; t < eval.B; ++t) {
    const Eigen::MatrixXd Z = test::task_Z(eval, t);
    const Eigen::VectorXd y = prefix_labels(eval, t);
    Eigen::MatrixXd r_gd(N, G);
    Eigen::VectorXd r_ols(N);
    for (int j = 0; j < N; ++j) {
      const Eigen::MatrixXd X = Z.block(0, 0, d, j).transpose();   // j x d, their rows
      const Eigen::VectorXd x = Z.col(j).head(d);
      const std::vector<double> g = gd_predictions(X, y.head(j), x);
      for (int c = 0; c < G; ++c) r_gd(j, c) = g[c] - y(j);
      r_ols(j) = (j == 0 ? 0.0 : x.dot(X.completeOrthogonalDecomposition().solve(y.head(j)))) - y(j);
    }
    for (int l = 0; l < L; ++l) {
      const Eigen::VectorXd& el = e[l][t];
      for (int c = 0; c < G; ++c) naive_gd[l * G + c] += el.dot(r_gd.col(c)) / (el.norm() * r_gd.col(c).norm()) / eval.B;
      naive_ols[l] += el.dot(r_ols) / (el.norm() * r_ols.norm()) / eval.B;
    }
  }
  double worst_gd = 0, worst_ols = 0;
  for (int i = 0; i < L * G; ++i) worst_gd = std::max(worst_gd, std::fabs(naive_gd[i] - gd[i]));
  for (int l = 0; l < L; ++l) {
    worst_ols = std::max(worst_ols, std::fabs(naive_ols[l] - ols[l]));
    const auto row = naive_gd.begin() + l * G;
    EXPECT_EQ(best[l], 1 << (std::max_element(row, row + G) - row)) << "layer " << l + 1;
    std::printf("  layer %d: best GD steps %g (cosine %.4f), least squares %.4f\n", l + 1, best[l],
                gd[l * G + static_cast<int>(std::log2(best[l]))], ols[l]);
  }
  std::printf("  worst |stored - naive| similarity: GD %.2e, least squares %.2e\n", worst_gd, worst_ols);
  EXPECT_LT(worst_gd, 1e-6);
  EXPECT_LT(worst_ols, 1e-6);
}

}  // namespace
}  // namespace icl
