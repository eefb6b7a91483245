// The model against closed-form theory (docs/science.md section 6).
#include <gtest/gtest.h>

#include <cstdio>

#include "icl/model/model.hpp"
#include "icl/run/run_point.hpp"
#include "test_util.hpp"

namespace icl {
namespace {

using test::make_batch;
using test::make_point;

// Runs the lane model (double) on every task of `batch` with the given expanded weights; returns the
// final readouts.
std::vector<double> lane_predictions(const Point& p, const TaskBatch<double>& batch, const std::vector<double>& P,
                                     const std::vector<double>& Q) {
  LaneModel<double> model(model_shape(p));
  model.set_weights(P.data(), Q.data());
  LaneVec<double> yhat(p.layers);
  std::vector<double> out;
  for (int c = 0; c < batch.chunks; ++c) {
    model.model_forward(batch.chunk_Z(c), yhat.data());
    for (int v = 0; v < kLanes<double> && c * kLanes<double> + v < batch.B; ++v) out.push_back(yhat[p.layers - 1][v]);
  }
  return out;
}

// docs/science.md section 2: Q = diag(I_d, 0), P = [[0,0],[0,-eta]], c = 1 is one step of gradient descent on
// 1/2 sum_i (<w, x_i> - y_i)^2 from w = 0 with rate eta; K such layers are K steps.
TEST(ExactConstruction, KLayersReproduceKStepsOfGradientDescent) {
  for (int K = 1; K <= 4; ++K) {
    const Point p = make_point({{"d", "4"}, {"n", "12"}, {"layers", std::to_string(K)}, {"norm", "1"},
                                {"noise", "fixed:0.3"}, {"seed", "3"}});
    const int D = p.d + 1;
    const double eta = 0.02;
    std::vector<double> P(K * D * D, 0.0), Q(K * D * D, 0.0);
    for (int l = 0; l < K; ++l) {
      for (int i = 0; i < p.d; ++i) Q[l * D * D + i * D + i] = 1.0;
      P[l * D * D + D * D - 1] = -eta;
    }
    const TaskBatch<double> batch = make_batch<double>(p, 21);
    const std::vector<double> yhat = lane_predictions(p, batch, P, Q);
    double worst = 0.0;
    for (int t = 0; t < batch.B; ++t) {
      Eigen::MatrixXd X;
      Eigen::VectorXd y;
      batch_task(batch, t, &X, &y);
      const Eigen::MatrixXd Xc = X.leftCols(p.n);
      Eigen::VectorXd w = Eigen::VectorXd::Zero(p.d);
      for (int k = 0; k < K; ++k) w -= eta * Xc * (Xc.transpose() * w - y.head(p.n));
      worst = std::max(worst, std::fabs(yhat[t] - w.dot(X.col(p.n))));
    }
    std::printf("  K = %d: worst |yhat - <w_K, x_q>| = %.2e\n", K, worst);
    EXPECT_LT(worst, 1e-10);
  }
}

// [A23] Lemma 1: with sparse_a weights (P = e e^T, Q = [[A_l,0],[0,0]], c = 1/n) and ANY A_l, the output
// is <w_L, x_q> for preconditioned GD on R(w) = 1/(2n) sum_i (<w, x_i> - y_i)^2 from w_0 = 0:
//   w_{l+1} = w_l - Pre_l grad R(w_l),  with preconditioner Pre_l = -A_l^T in our sign convention
// (yhat = -Z[d, n], so the Q block of a trained model is minus the paper's preconditioner).
TEST(Lemma1, SparseAOutputIsPreconditionedGradientDescentPerTask) {
  const Point p = make_point({{"d", "5"}, {"n", "20"}, {"layers", "3"}, {"param", "sparse_a"},
                              {"cov", "rotated:1,1,0.25,0.0625,1"}, {"w_prior", "inverse_cov"},
                              {"noise", "uniform:1"}, {"seed", "9"}});
  const int D = p.d + 1;
  std::vector<Eigen::MatrixXd> A;
  std::vector<double> P(p.layers * D * D, 0.0), Q(p.layers * D * D, 0.0);
  for (int l = 0; l < p.layers; ++l) {
    Eigen::MatrixXd Al(p.d, p.d);
    std::vector<double> z(p.d * p.d);
    rng_normals(rng_key(l, Stream::analysis), 0, p.d * p.d, z.data());
    for (int i = 0; i < p.d * p.d; ++i) Al(i / p.d, i % p.d) = 0.4 * z[i];
    A.push_back(Al);
    for (int i = 0; i < p.d; ++i)
      for (int k = 0; k < p.d; ++k) Q[l * D * D + i * D + k] = Al(i, k);
    P[l * D * D + D * D - 1] = 1.0;
  }
  const TaskBatch<double> batch = make_batch<double>(p, 37);
  const std::vector<double> yhat = lane_predictions(p, batch, P, Q);
  double worst = 0.0, scale = 0.0;
  for (int t = 0; t < batch.B; ++t) {
    Eigen::MatrixXd X;
    Eigen::VectorXd y;
    batch_task(batch, t, &X, &y);
    const Eigen::MatrixXd Xc = X.leftCols(p.n);
    Eigen::VectorXd w = Eigen::VectorXd::Zero(p.d);
    for (int l = 0; l < p.layers; ++l) {
      const Eigen::VectorXd grad = Xc * (Xc.transpose() * w - y.head(p.n)) / p.n;
      w -= -A[l].transpose() * grad;
    }
    const double ref = w.dot(X.col(p.n));
    worst = std::max(worst, std::fabs(yhat[t] - ref));
    scale = std::max(scale, std::fabs(ref));
  }
  std::printf("  worst |yhat - <w_L, x_q>| = %.2e (max |yhat| %.2e)\n", worst, scale);
  EXPECT_LT(worst, 1e-10 * std::max(1.0, scale));
}

// The P corner times the Q block of a trained 1-layer, 1-head model (the gauge-free product).
Eigen::MatrixXd corner_times_block(const Point& p, const Result& r) {
  const int D = p.d + 1;
  Eigen::MatrixXd M(p.d, p.d);
  for (int i = 0; i < p.d; ++i)
    for (int k = 0; k < p.d; ++k) M(i, k) = r.P[D * D - 1] * r.Q[i * D + k];
  return M;
}

// [A23] Thm 1 / Zhang et al. Thm 4.1, c = 1/n, x ~ N(0, Sigma), noiseless, Gamma = ((n+1)/n) Sigma + (tr Sigma / n) I:
//   w ~ N(0, I):         product -Gamma^-1,  loss f* = sum_i lambda_i (lambda_i + tr Sigma) / ((n+1) lambda_i + tr Sigma)
//   w ~ N(0, Sigma^-1):  product -(n/(n+d+1)) Sigma^-1,  loss d(d+1)/(n+d+1)
void expect_one_layer_optimum(const Point& p, double tol) {
  const TaskLaw law = make_task_law(p);
  const Eigen::MatrixXd& S = law.Sigma;
  const double tr = S.trace(), d = p.d, n = p.n;
  Eigen::MatrixXd target;
  double f_star = 0.0;
  if (p.w_prior == WPrior::identity) {
    target = -((n + 1) / n * S + tr / n * Eigen::MatrixXd::Identity(p.d, p.d)).inverse();
    const Eigen::VectorXd lambda = Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd>(S).eigenvalues();
    for (int i = 0; i < p.d; ++i) f_star += lambda(i) * (lambda(i) + tr) / ((n + 1) * lambda(i) + tr);
  } else {
    target = -(n / (n + d + 1)) * S.inverse();
    f_star = d * (d + 1) / (n + d + 1);
  }

  const Result r = run_point(p);
  ASSERT_EQ(r.status, Status::ok) << r.message;
  const Eigen::MatrixXd M = corner_times_block(p, r);
  const double e_M = (M - target).norm() / target.norm();
  const double e_f = std::fabs(r.test_loss - f_star) / f_star;
  std::printf("  learned product vs theory: relative Frobenius error %.4f\n", e_M);
  std::printf("  test loss %.5f vs f* = %.5f: relative error %.4f   (%lld steps in %.1f s)\n", r.test_loss, f_star,
              e_f, static_cast<long long>(r.steps_done), r.seconds_total);
  EXPECT_LT(e_M, tol);
  EXPECT_LT(e_f, tol);
}

// The budgets below reach the optimum with a wide margin (errors of 0.1-0.6% against a 3% bound).
// With a rotated Sigma (eigenvalue 1/16) Adam, which is not rotation-invariant, crawls: after 3000 steps
// the loss is within 1.5% but the product still 50% off.  The sparse_a loss is quadratic in A, so the
// rotated cases use SGD with momentum, which is rotation-invariant; with w ~ N(0, I) the curvature along
// the small eigenvectors is ~lambda^2, hence the larger rate.
TEST(TrainedOneLayer, IdentityCovarianceRecoversScaledIdentityAndLoss) {
  expect_one_layer_optimum(make_point({{"d", "5"}, {"n", "20"}, {"layers", "1"}, {"param", "full"},
                                       {"batch", "4000"}, {"steps", "2500"}, {"lr", "0.01"}, {"schedule", "cosine"},
                                       {"init_scale", "0.1"}, {"eval_tasks", "100000"}, {"eval_every", "2500"},
                                       {"seed", "1"}}),
                           0.03);
}

TEST(TrainedOneLayer, DiagonalCovarianceRecoversMinusGammaInverse) {
  expect_one_layer_optimum(make_point({{"d", "5"}, {"n", "20"}, {"layers", "1"}, {"param", "sparse_a"},
                                       {"cov", "diag:1,1,0.25,0.0625,1"}, {"batch", "4000"}, {"steps", "2500"},
                                       {"lr", "0.01"}, {"schedule", "cosine"}, {"init_scale", "0.01"},
                                       {"eval_tasks", "100000"}, {"eval_every", "2500"}, {"seed", "2"}}),
                           0.03);
}

TEST(TrainedOneLayer, InverseCovariancePriorRecoversScaledSigmaInverse) {
  expect_one_layer_optimum(make_point({{"d", "5"}, {"n", "20"}, {"layers", "1"}, {"param", "full"},
                                       {"cov", "diag:2,1,0.5,1,0.5"}, {"w_prior", "inverse_cov"}, {"batch", "4000"},
                                       {"steps", "2500"}, {"lr", "0.01"}, {"schedule", "cosine"}, {"init_scale", "0.1"},
                                       {"eval_tasks", "100000"}, {"eval_every", "2500"}, {"seed", "4"}}),
                           0.03);
}

TEST(TrainedOneLayer, RotatedCovarianceRecoversMinusGammaInverse) {
  expect_one_layer_optimum(make_point({{"d", "5"}, {"n", "20"}, {"layers", "1"}, {"param", "sparse_a"},
                                       {"cov", "rotated:1,1,0.25,0.0625,1"}, {"optimizer", "sgd"}, {"momentum", "0.9"},
                                       {"lr", "0.3"}, {"schedule", "cosine"}, {"batch", "4000"}, {"steps", "3000"},
                                       {"init_scale", "0.01"}, {"eval_tasks", "100000"}, {"eval_every", "3000"},
                                       {"seed", "2"}}),
                           0.03);
}

TEST(TrainedOneLayer, RotatedCovarianceInversePriorRecoversScaledSigmaInverse) {
  expect_one_layer_optimum(make_point({{"d", "5"}, {"n", "20"}, {"layers", "1"}, {"param", "sparse_a"},
                                       {"cov", "rotated:1,1,0.25,0.0625,1"}, {"w_prior", "inverse_cov"},
                                       {"optimizer", "sgd"}, {"momentum", "0.9"}, {"lr", "0.05"}, {"schedule", "cosine"},
                                       {"batch", "4000"}, {"steps", "3000"}, {"init_scale", "0.01"},
                                       {"eval_tasks", "100000"}, {"eval_every", "3000"}, {"seed", "2"}}),
                           0.03);
}

// [V24] Table 1: a trained 1-layer model at sigma_max = 0 (d = 10, n = 20) has adjusted loss 1.768 on the
// 1/2 scale; the closed form is d(d+1)/(n+d+1)/2 = 1.774 (the oracle is exact for noiseless tasks).
TEST(TrainedOneLayer, VladymyrovOneLayerAdjustedLossAtSigmaMax0) {
  const Point p = make_point({{"d", "10"}, {"n", "20"}, {"layers", "1"}, {"param", "full"}, {"batch", "4000"},
                              {"steps", "2500"}, {"lr", "0.01"}, {"schedule", "cosine"}, {"init_scale", "0.1"},
                              {"eval_tasks", "100000"}, {"eval_every", "2500"}, {"seed", "5"}});
  const Result r = run_point(p);
  ASSERT_EQ(r.status, Status::ok) << r.message;
  const double adjusted_half = r.metrics.at("adjusted_tf") / 2;
  std::printf("  adjusted 1/2 MSE %.4f (paper 1.768, closed form 1.774); oracle MSE %.2e\n", adjusted_half,
              r.metrics.at("loss_oracle_ridge"));
  EXPECT_NEAR(adjusted_half, 1.768, 0.05 * 1.768);
  EXPECT_LT(r.metrics.at("loss_oracle_ridge"), 1e-6);
}

}  // namespace
}  // namespace icl
