// The batched lane model against the frozen naive reference, and every parameterisation's gradient
// against central finite differences (double), at zero, tiny and random weights.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "icl/model/gram.hpp"
#include "icl/model/model.hpp"
#include "icl/model/model_ref.hpp"
#include "icl/model/params.hpp"
#include "icl/train/objective.hpp"
#include "test_util.hpp"

namespace icl {
namespace {

using test::make_batch;
using test::make_point;
using test::task_Z;
using test::worst_rel;

std::vector<double> random_theta(const ParamLayout& layout, double scale, uint64_t seed) {
  std::vector<double> th(layout.size());
  rng_normals(rng_key(seed, Stream::analysis), 0, layout.size(), th.data());
  for (double& x : th) x *= scale;
  return th;
}

struct RefCase {
  const char* name;
  std::vector<std::pair<std::string, std::string>> settings;
};

class ModelVsRef : public ::testing::TestWithParam<RefCase> {};

// Readouts of every layer, dP, dQ and dZ0 of the batched kernels against the naive reference, over a
// batch that spans several chunks including a padded one.
template <class T>
void compare_with_reference(const Point& p, double tol) {
  const int B = 2 * kLanes<T> + 3, D = p.d + 1, Ls = p.layers, H = p.heads;
  const TaskBatch<T> batch = make_batch<T>(p, B);
  const ParamLayout layout(p);
  const std::vector<double> theta = random_theta(layout, 0.3, 11);
  std::vector<T> P(layout.PQ_size()), Q(layout.PQ_size());
  layout.expand(theta.data(), P.data(), Q.data());
  std::vector<double> Pd(P.size()), Qd(Q.size());
  layout.expand(theta.data(), Pd.data(), Qd.data());
  std::vector<Eigen::MatrixXd> Pm, Qm;
  for (int k = 0; k < Ls * H; ++k) {
    Pm.push_back(Eigen::Map<const Eigen::Matrix<double, -1, -1, Eigen::RowMajor>>(Pd.data() + k * D * D, D, D));
    Qm.push_back(Eigen::Map<const Eigen::Matrix<double, -1, -1, Eigen::RowMajor>>(Qd.data() + k * D * D, D, D));
  }

  const ModelShape shape = model_shape(p);
  LaneModel<T> model(shape);
  model.set_weights(P.data(), Q.data());
  model.zero_grad();
  LaneVec<T> yhat(Ls);
  std::vector<double> y_lane, y_ref, dZ_lane, dZ_ref;
  std::vector<Eigen::MatrixXd> dPsum(Ls * H, Eigen::MatrixXd::Zero(D, D)), dQsum = dPsum;
  for (int c = 0; c < batch.chunks; ++c) {
    model.model_forward(batch.chunk_Z(c), yhat.data());
    Lane<T> g{};
    for (int v = 0; v < kLanes<T>; ++v) g[v] = static_cast<T>(c * kLanes<T> + v < B ? 0.5 + 0.1 * v : 0.0);
    model.model_backward(g);
    for (int v = 0; v < kLanes<T> && c * kLanes<T> + v < B; ++v) {
      const int t = c * kLanes<T> + v;
      const Eigen::MatrixXd Z0 = task_Z(batch, t);
      const Eigen::VectorXd yr = ref_forward(shape, Pm, Qm, Z0);
      std::vector<Eigen::MatrixXd> dPr, dQr;
      Eigen::MatrixXd dZr;
      ref_backward(shape, Pm, Qm, Z0, static_cast<double>(g[v]), &dPr, &dQr, &dZr);
      for (int l = 0; l < Ls; ++l) {
        y_lane.push_back(yhat[l][v]);
        y_ref.push_back(yr(l));
      }
      for (int k = 0; k < Ls * H; ++k) {
        dPsum[k] += dPr[k];
        dQsum[k] += dQr[k];
      }
      for (int i = 0; i < D; ++i)
        for (int j = 0; j <= p.n; ++j) {
          dZ_lane.push_back(model.input_grad()[i * (p.n + 1) + j][v]);
          dZ_ref.push_back(dZr(i, j));
        }
    }
  }
  std::vector<double> dP(P.size()), dQ(Q.size()), dP_ref, dQ_ref;
  model.grad(dP.data(), dQ.data());
  for (int k = 0; k < Ls * H; ++k)
    for (int i = 0; i < D; ++i)
      for (int m = 0; m < D; ++m) {
        dP_ref.push_back(dPsum[k](i, m));
        dQ_ref.push_back(dQsum[k](i, m));
      }
  const double e_y = worst_rel(y_lane, y_ref), e_P = worst_rel(dP, dP_ref), e_Q = worst_rel(dQ, dQ_ref),
               e_Z = worst_rel(dZ_lane, dZ_ref);
  std::printf("  worst relative error vs reference: yhat %.2e  dP %.2e  dQ %.2e  dZ0 %.2e\n", e_y, e_P, e_Q, e_Z);
  EXPECT_LT(e_y, tol);
  EXPECT_LT(e_P, tol);
  EXPECT_LT(e_Q, tol);
  EXPECT_LT(e_Z, tol);
}

// The same bits however much of the last layer a forward computes (model.hpp, Next) and whichever backward
// follows: every layer's readout of a lean forward is that of the whole forward; params_backward after a whole or
// lean forward gives model_backward's dP, dQ, skipping only the input's gradient; and query_grad after a whole or
// lean forward gives the query's column of model_backward's input_grad() (rows 0..d-1).  Compared as bits (the
// signs of zeros included).
template <class T>
void lean_passes_match(const Point& p) {
  const int B = 2 * kLanes<T> + 3, N = p.n + 1;
  const TaskBatch<T> batch = make_batch<T>(p, B);
  const ParamLayout layout(p);
  const std::vector<double> theta = random_theta(layout, 0.3, 12);
  std::vector<T> P(layout.PQ_size()), Q(layout.PQ_size());
  layout.expand(theta.data(), P.data(), Q.data());
  enum class Back { model, params, query, none };
  struct Pass {
    Next forward;
    Back back;
  };
  const Pass passes[] = {{Next::model_backward, Back::model}, {Next::model_backward, Back::params},
                         {Next::params_backward, Back::params}, {Next::nothing, Back::none},
                         {Next::query_grad, Back::query},        {Next::model_backward, Back::query}};
  constexpr int kPasses = std::size(passes);
  std::vector<T> readouts[kPasses], query[kPasses];
  std::vector<double> grads[kPasses];
  for (int k = 0; k < kPasses; ++k) {
    LaneModel<T> model(model_shape(p));
    model.set_weights(P.data(), Q.data());
    LaneVec<T> yhat(p.layers), dx(p.d);
    // First a whole pass on the last chunk, so that every buffer (the gradients G and dZ of both parities, the
    // layers' outputs, the caches) holds another pass's values: a lean pass reads none of what it does not write.
    model.model_forward(batch.chunk_Z(batch.chunks - 1), yhat.data(), Next::model_backward);
    model.model_backward(Lane<T>{} - static_cast<T>(0.7));
    model.zero_grad();
    for (int c = 0; c < batch.chunks; ++c) {
      model.model_forward(batch.chunk_Z(c), yhat.data(), passes[k].forward);
      for (const Lane<T>& y : yhat)
        for (int v = 0; v < kLanes<T>; ++v) readouts[k].push_back(y[v]);
      const Lane<T> g = Lane<T>{} + static_cast<T>(0.3 + 0.1 * c);
      if (passes[k].back == Back::model) {
        model.model_backward(g);
        for (int i = 0; i < p.d; ++i) dx[i] = model.input_grad()[i * N + p.n];
      } else if (passes[k].back == Back::params) {
        model.params_backward(g);
      } else if (passes[k].back == Back::query) {
        model.query_grad(g, dx.data());
      }
      if (passes[k].back == Back::model || passes[k].back == Back::query)
        for (const Lane<T>& x : dx)
          for (int v = 0; v < kLanes<T>; ++v) query[k].push_back(x[v]);
    }
    if (passes[k].back != Back::model && passes[k].back != Back::params) continue;
    std::vector<double> dP(P.size()), dQ(Q.size());
    model.grad(dP.data(), dQ.data());
    grads[k] = dP;
    grads[k].insert(grads[k].end(), dQ.begin(), dQ.end());
  }
  auto same_bits = [](const auto& a, const auto& b) {
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(a[0])) == 0;
  };
  for (int k = 1; k < kPasses; ++k) {
    EXPECT_TRUE(same_bits(readouts[k], readouts[0])) << "readouts, pass " << k;
    if (!grads[k].empty()) {
      EXPECT_TRUE(same_bits(grads[k], grads[0])) << "dP, dQ, pass " << k;
    }
    if (!query[k].empty()) {
      EXPECT_TRUE(same_bits(query[k], query[0])) << "query gradient, pass " << k;
    }
  }
  EXPECT_TRUE(std::any_of(grads[0].begin(), grads[0].end(), [](double x) { return x != 0; }));
  EXPECT_TRUE(std::any_of(query[0].begin(), query[0].end(), [](T x) { return x != 0; }));
}

TEST_P(ModelVsRef, LeanForwardsAndParamsBackwardGiveTheWholePassesBits) {
  lean_passes_match<float>(make_point(GetParam().settings));
  lean_passes_match<double>(make_point(GetParam().settings));
}

TEST_P(ModelVsRef, Float64MatchesReference) { compare_with_reference<double>(make_point(GetParam().settings), 1e-10); }
TEST_P(ModelVsRef, Float32MatchesReference) { compare_with_reference<float>(make_point(GetParam().settings), 2e-3); }

INSTANTIATE_TEST_SUITE_P(
    Shapes, ModelVsRef,
    ::testing::Values(
        RefCase{"linear_d5_L3", {{"d", "5"}, {"n", "20"}, {"layers", "3"}}},
        RefCase{"linear_L1_H2", {{"d", "4"}, {"n", "9"}, {"layers", "1"}, {"heads", "2"}}},
        RefCase{"linear_d10_L2_H2", {{"d", "10"}, {"n", "20"}, {"layers", "2"}, {"heads", "2"}}},
        RefCase{"linear_d1_norm1", {{"d", "1"}, {"n", "4"}, {"layers", "2"}, {"norm", "1"}}},
        RefCase{"linear_fixedD_d15", {{"d", "15"}, {"n", "9"}, {"layers", "2"}, {"heads", "2"}}},
        RefCase{"linear_tiled_d16_n70", {{"d", "16"}, {"n", "70"}, {"layers", "2"}, {"heads", "2"}}},
        RefCase{"linear_tiled_d130", {{"d", "130"}, {"n", "5"}, {"layers", "2"}}},
        RefCase{"linear_act_clip", {{"d", "5"}, {"n", "20"}, {"layers", "3"}, {"act_clip", "1.5"}}},
        RefCase{"linear_tiled_L1_H2_clip", {{"d", "17"}, {"n", "9"}, {"layers", "1"}, {"heads", "2"}, {"act_clip", "0.5"}}},
        RefCase{"linear_d1_n1_L1", {{"d", "1"}, {"n", "1"}, {"layers", "1"}}},
        RefCase{"linear_residual_inv_L8", {{"d", "3"}, {"n", "6"}, {"layers", "8"}, {"residual", "1/L"}}},
        RefCase{"softmax_d3_L2_H2", {{"d", "3"}, {"n", "7"}, {"layers", "2"}, {"heads", "2"}, {"attention", "softmax"}}}),
    [](const auto& tc) { return std::string(tc.param.name); });

// ---- gradients against central finite differences ------------------------------------------------

struct GradCase {
  const char* name;
  std::vector<std::pair<std::string, std::string>> settings;
};
class GradientCheck : public ::testing::TestWithParam<GradCase> {};

TEST_P(GradientCheck, MatchesCentralDifferencesAtZeroTinyAndRandomWeights) {
  const Point p = make_point(GetParam().settings);
  const TaskBatch<double> batch = make_batch<double>(p, 13);
  Objective<double> obj(p);
  const int size = obj.layout().size();
  for (const double scale : {0.0, 1e-4, 0.3}) {
    const std::vector<double> theta = random_theta(obj.layout(), scale, 5);
    std::vector<double> g, fd(size);
    obj.loss_grad(batch, theta, &g);
    const double h = 1e-5;
    for (int i = 0; i < size; ++i) {
      std::vector<double> tp = theta, tm = theta;
      tp[i] += h;
      tm[i] -= h;
      fd[i] = (obj.loss_grad(batch, tp, nullptr) - obj.loss_grad(batch, tm, nullptr)) / (2 * h);
    }
    const double worst = worst_rel(g, fd);
    double gmax = 0.0;
    for (double x : fd) gmax = std::max(gmax, std::fabs(x));
    std::printf("  %-10s scale %-6g  %4d parameters  max|grad| %.3e  worst relative error %.2e\n",
                GetParam().name, scale, size, gmax, worst);
    EXPECT_LT(worst, 1e-6) << "scale " << scale;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Parameterisations, GradientCheck,
    ::testing::Values(
        GradCase{"full", {{"d", "3"}, {"n", "6"}, {"layers", "2"}, {"heads", "2"}}},
        GradCase{"sparse_a", {{"d", "3"}, {"n", "6"}, {"layers", "3"}, {"param", "sparse_a"}}},
        GradCase{"sparse_ab", {{"d", "3"}, {"n", "6"}, {"layers", "2"}, {"param", "sparse_ab"}}},
        GradCase{"diag", {{"d", "3"}, {"n", "6"}, {"layers", "3"}, {"param", "diag"}, {"norm", "1"}}},
        GradCase{"gdpp", {{"d", "3"}, {"n", "6"}, {"layers", "3"}, {"param", "gdpp"}, {"heads", "2"}}},
        GradCase{"tied", {{"d", "3"}, {"n", "6"}, {"layers", "3"}, {"tie", "true"}}},
        GradCase{"softmax", {{"d", "2"}, {"n", "5"}, {"layers", "2"}, {"attention", "softmax"}}},
        GradCase{"act_clip", {{"d", "3"}, {"n", "6"}, {"layers", "3"}, {"act_clip", "1.5"}}},
        GradCase{"residual_inv_L", {{"d", "3"}, {"n", "6"}, {"layers", "4"}, {"residual", "1/L"}}},
        GradCase{"tiled_d17", {{"d", "17"}, {"n", "66"}, {"layers", "2"}, {"heads", "2"}}},
        GradCase{"noisy_rotated", {{"d", "3"}, {"n", "6"}, {"layers", "2"}, {"cov", "rotated:1,0.5,2"},
                                   {"noise", "set:0.5,1"}}}),
    [](const auto& tc) { return std::string(tc.param.name); });

}  // namespace
}  // namespace icl

namespace icl {
namespace {

// d yhat / d x_query from the backward pass (the sensitivity of the alignment analysis) against central
// differences of the forward pass, per task.
TEST(Sensitivity, QueryGradientMatchesFiniteDifferences) {
  const Point p = test::make_point({{"d", "4"}, {"n", "7"}, {"layers", "3"}, {"heads", "2"}, {"precision", "float64"}});
  TaskBatch<double> batch = test::make_batch<double>(p, kLanes<double>);
  const ParamLayout layout(p);
  const std::vector<double> theta = random_theta(layout, 0.3, 8);
  std::vector<double> P(layout.PQ_size()), Q(layout.PQ_size());
  layout.expand(theta.data(), P.data(), Q.data());
  LaneModel<double> model(model_shape(p));
  model.set_weights(P.data(), Q.data());
  LaneVec<double> yhat(p.layers);
  model.model_forward(batch.chunk_Z(0), yhat.data());
  Lane<double> one;
  for (int v = 0; v < kLanes<double>; ++v) one[v] = 1.0;
  model.model_backward(one);
  const int N = p.n + 1;
  std::vector<double> analytic, fd;
  for (int i = 0; i < p.d; ++i)
    for (int v = 0; v < kLanes<double>; ++v) analytic.push_back(model.input_grad()[i * N + p.n][v]);
  const double h = 1e-6;
  for (int i = 0; i < p.d; ++i) {
    Lane<double>& x = batch.Z[i * N + p.n];   // coordinate i of every task's query
    const Lane<double> x0 = x;
    x = x0 + h;
    model.model_forward(batch.chunk_Z(0), yhat.data());
    const Lane<double> up = yhat[p.layers - 1];
    x = x0 - h;
    model.model_forward(batch.chunk_Z(0), yhat.data());
    const Lane<double> down = yhat[p.layers - 1];
    x = x0;
    for (int v = 0; v < kLanes<double>; ++v) fd.push_back((up[v] - down[v]) / (2 * h));
  }
  const double e = worst_rel(analytic, fd);
  std::printf("  sensitivity vs finite differences: worst relative error %.2e\n", e);
  EXPECT_LT(e, 1e-6);
}

// The Gram form (gram.hpp) against the frozen reference: every layer's readout from the context's token Gram
// alone, for full P, Q with 2 heads, 3 layers and both normalisations, at several context lengths; a softmax
// or clipped model is not of that form.
TEST(GramForm, ReadoutsFromTheTokenGramMatchTheReference) {
  for (const char* norm : {"1/n", "1"})
    for (int n : {1, 4, 13}) {
      const Point p = test::make_point({{"d", "4"}, {"n", std::to_string(n)}, {"layers", "3"}, {"heads", "2"},
                                        {"norm", norm}, {"precision", "float64"}});
      const ModelShape shape = model_shape(p);
      ASSERT_TRUE(gram_form(shape));
      const int D = p.d + 1;
      const ParamLayout layout(p);
      const std::vector<double> theta = random_theta(layout, 0.3, 5);
      std::vector<double> P(layout.PQ_size()), Q(layout.PQ_size());
      layout.expand(theta.data(), P.data(), Q.data());
      std::vector<Eigen::MatrixXd> Pm, Qm;
      for (int k = 0; k < p.layers * p.heads; ++k) {
        Pm.push_back(Eigen::Map<const Eigen::Matrix<double, -1, -1, Eigen::RowMajor>>(P.data() + k * D * D, D, D));
        Qm.push_back(Eigen::Map<const Eigen::Matrix<double, -1, -1, Eigen::RowMajor>>(Q.data() + k * D * D, D, D));
      }
      const TaskBatch<double> batch = make_batch<double>(p, 3);
      for (int t = 0; t < 3; ++t) {
        const Eigen::MatrixXd Z = task_Z(batch, t), context = Z.leftCols(n);
        const Eigen::VectorXd want = ref_forward(shape, Pm, Qm, Z);
        const Eigen::VectorXd got = gram_forward(shape, P.data(), Q.data(), context * context.transpose(), Z.col(n));
        for (int l = 0; l < p.layers; ++l)
          EXPECT_NEAR(got(l), want(l), 1e-11 * (1 + std::fabs(want(l)))) << "norm " << norm << ", n = " << n << ", layer " << l;
        EXPECT_GT(std::fabs(want(2) - want(0)), 1e-4);   // the layers act
      }
    }
  ModelShape softmax;
  softmax.attention = Attention::softmax;
  ModelShape clipped;
  clipped.act_clip = 10;
  EXPECT_FALSE(gram_form(softmax));
  EXPECT_FALSE(gram_form(clipped));
}

// act_clip bounds every token after every layer and is active in the clip cases above (so their
// reference and gradient checks test the clipped path): some entries sit exactly at the bound.
// residual = 1/L scales every layer's update Z_{l+1} - Z_l by 1/L: the same model as residual = 1 with every
// P divided by L (the linear update is linear in P), readouts and input gradient alike.
TEST(Residual, InverseDepthScalesEveryLayersUpdate) {
  const int L = 16;
  const Point scaled = test::make_point({{"d", "3"}, {"n", "6"}, {"layers", std::to_string(L)}, {"residual", "1/L"},
                                         {"precision", "float64"}});
  Point plain = scaled;
  plain.residual = Residual::one;
  EXPECT_DOUBLE_EQ(model_shape(scaled).c, 1.0 / 6 / L);
  const TaskBatch<double> batch = test::make_batch<double>(scaled, kLanes<double>);
  const ParamLayout layout(scaled);
  const std::vector<double> theta = random_theta(layout, 0.3, 2);
  std::vector<double> P(layout.PQ_size()), Q(layout.PQ_size());
  layout.expand(theta.data(), P.data(), Q.data());
  std::vector<double> P_over_L = P;
  for (double& x : P_over_L) x /= L;
  LaneModel<double> a(model_shape(scaled)), b(model_shape(plain));
  a.set_weights(P.data(), Q.data());
  b.set_weights(P_over_L.data(), Q.data());
  LaneVec<double> ya(L), yb(L);
  a.model_forward(batch.chunk_Z(0), ya.data());
  b.model_forward(batch.chunk_Z(0), yb.data());
  for (int l = 0; l < L; ++l)
    for (int v = 0; v < kLanes<double>; ++v) EXPECT_NEAR(ya[l][v], yb[l][v], 1e-12 * (1 + std::fabs(yb[l][v])));
  EXPECT_GT(std::fabs(ya[L - 1][0] - ya[0][0]), 1e-3);   // the layers act
}

TEST(ActClip, BoundsEveryLayerOutputAndChangesThePrediction) {
  const Point p = test::make_point({{"d", "5"}, {"n", "20"}, {"layers", "3"}, {"act_clip", "1.5"}});
  const TaskBatch<double> batch = test::make_batch<double>(p, kLanes<double>);
  const ParamLayout layout(p);
  const std::vector<double> theta = random_theta(layout, 0.3, 11);
  std::vector<double> P(layout.PQ_size()), Q(layout.PQ_size());
  layout.expand(theta.data(), P.data(), Q.data());
  ModelShape unclipped = model_shape(p);
  unclipped.act_clip = 0.0;
  LaneModel<double> clipped_model(model_shape(p)), free_model(unclipped);
  clipped_model.set_weights(P.data(), Q.data());
  free_model.set_weights(P.data(), Q.data());
  LaneVec<double> y_clip(p.layers), y_free(p.layers);
  clipped_model.model_forward(batch.chunk_Z(0), y_clip.data());
  free_model.model_forward(batch.chunk_Z(0), y_free.data());
  int at_bound = 0, beyond = 0, changed = 0;
  for (int x = 0; x < (p.d + 1) * (p.n + 1); ++x)
    for (int v = 0; v < kLanes<double>; ++v) {
      const double z = clipped_model.output()[x][v];
      at_bound += std::fabs(z) == 1.5;
      beyond += std::fabs(z) > 1.5;
    }
  for (int v = 0; v < kLanes<double>; ++v) changed += y_clip[p.layers - 1][v] != y_free[p.layers - 1][v];
  EXPECT_EQ(beyond, 0);
  EXPECT_GT(at_bound, 0);
  EXPECT_GT(changed, 0);
}

}  // namespace
}  // namespace icl
