// The parameterisations build exactly the P, Q of docs/science.md section 2, tying repeats one block, and the
// initialisations follow their laws.
#include <gtest/gtest.h>

#include <cmath>

#include "icl/model/params.hpp"
#include "test_util.hpp"

namespace icl {
namespace {

using test::make_point;
using Mat = Eigen::Matrix<double, -1, -1, Eigen::RowMajor>;

// P and Q of (layer, head) after expanding theta = 1, 2, 3, ...
std::pair<Mat, Mat> expanded(const Point& p, int layer, int head) {
  const ParamLayout layout(p);
  std::vector<double> theta(layout.size());
  for (int i = 0; i < layout.size(); ++i) theta[i] = i + 1;
  std::vector<double> P(layout.PQ_size()), Q(layout.PQ_size());
  layout.expand(theta.data(), P.data(), Q.data());
  const int D = p.d + 1, off = (layer * p.heads + head) * D * D;
  return {Eigen::Map<Mat>(P.data() + off, D, D), Eigen::Map<Mat>(Q.data() + off, D, D)};
}

TEST(Params, SparseAAndSparseABStructure) {
  const auto [P, Q] = expanded(make_point({{"d", "3"}, {"param", "sparse_a"}, {"layers", "2"}}), 1, 0);
  Mat P_expected = Mat::Zero(4, 4);
  P_expected(3, 3) = 1;
  EXPECT_EQ(P, P_expected);
  EXPECT_EQ(Q.row(3).norm() + Q.col(3).norm(), 0.0);
  EXPECT_EQ(Q(0, 0), 10.0);   // layer 1's A starts after layer 0's 9 entries
  EXPECT_EQ(Q(2, 2), 18.0);
  const auto [Pb, Qb] = expanded(make_point({{"d", "3"}, {"param", "sparse_ab"}}), 0, 0);
  EXPECT_EQ(Qb(0, 1), 2.0);                 // A first ...
  EXPECT_EQ(Pb(0, 1), 11.0);                // ... then B
  EXPECT_EQ(Pb(3, 3), 1.0);
  EXPECT_EQ(Pb.row(3).head(3).norm() + Pb.col(3).head(3).norm(), 0.0);
}

TEST(Params, DiagAndGdppStructure) {
  const auto [P, Q] = expanded(make_point({{"d", "3"}, {"param", "diag"}, {"heads", "2"}}), 0, 1);
  // head 1 holds theta 5..8: p_x = 5, p_y = 6, q_x = 7, q_y = 8
  EXPECT_EQ(Mat(P), Mat(Eigen::Vector4d(5, 5, 5, 6).asDiagonal()));
  EXPECT_EQ(Mat(Q), Mat(Eigen::Vector4d(7, 7, 7, 8).asDiagonal()));
  const auto [Pg, Qg] = expanded(make_point({{"d", "3"}, {"param", "gdpp"}}), 0, 0);
  EXPECT_EQ(Mat(Pg), Mat(Eigen::Vector4d(1, 1, 1, 2).asDiagonal()));
  EXPECT_EQ(Mat(Qg), Mat(Eigen::Vector4d(3, 3, 3, 0).asDiagonal()));   // q_y = 0: only w_xx, w_yx act
}

TEST(Params, TiedLayersShareOneBlockAndSumGradients) {
  const Point p = make_point({{"d", "2"}, {"layers", "3"}, {"tie", "true"}});
  const ParamLayout layout(p);
  EXPECT_EQ(layout.size(), 2 * 9);
  EXPECT_EQ(expanded(p, 0, 0).first, expanded(p, 2, 0).first);
  std::vector<double> dP(layout.PQ_size(), 1.0), dQ(layout.PQ_size(), 0.0), g(layout.size());
  layout.collapse(dP.data(), dQ.data(), g.data());
  EXPECT_EQ(g[0], 3.0);   // three layers
  EXPECT_EQ(g[9], 0.0);
}

// collapse is the adjoint of expand's linear part: <expand(p) - expand(0), G> == <p, collapse(G)> for every
// parameterisation, tied or not.  Small integers keep every sum exact, so the two sides agree bitwise.
TEST(Params, CollapseIsTheAdjointOfExpand) {
  for (const char* param : {"full", "sparse_a", "sparse_ab", "diag", "gdpp"})
    for (const char* tie : {"false", "true"}) {
      const ParamLayout layout(make_point({{"d", "3"}, {"layers", "3"}, {"heads", "2"}, {"param", param}, {"tie", tie}}));
      const int n = layout.PQ_size();
      std::vector<double> p(layout.size()), zero(layout.size(), 0.0), G(2 * n), Ep(2 * n), E0(2 * n);
      for (size_t i = 0; i < p.size(); ++i) p[i] = static_cast<double>((7 * i + 3) % 11) - 5;
      for (size_t i = 0; i < G.size(); ++i) G[i] = static_cast<double>((5 * i + 1) % 9) - 4;
      layout.expand(p.data(), Ep.data(), Ep.data() + n);
      layout.expand(zero.data(), E0.data(), E0.data() + n);
      std::vector<double> cG(layout.size());
      layout.collapse(G.data(), G.data() + n, cG.data());
      double lhs = 0, rhs = 0;
      for (int i = 0; i < 2 * n; ++i) lhs += (Ep[i] - E0[i]) * G[i];
      for (int i = 0; i < layout.size(); ++i) rhs += p[i] * cG[i];
      EXPECT_NE(rhs, 0.0) << param << " tie=" << tie;
      EXPECT_EQ(lhs, rhs) << param << " tie=" << tie;
    }
}

TEST(Params, InitialisationLaws) {
  const Point normal = make_point({{"d", "10"}, {"layers", "4"}, {"heads", "4"}, {"init_scale", "0.05"}});
  const std::vector<double> a = param_init(normal, ParamLayout(normal));
  double m2 = 0;
  for (double x : a) m2 += x * x / a.size();
  EXPECT_NEAR(std::sqrt(m2), 0.05, 0.002);
  // [VO23] truncated normal: std sqrt(scale / fan_in) / 0.8796 before truncation at 2 std, scale = s / L.
  const Point vs = make_point({{"d", "10"}, {"layers", "4"}, {"heads", "4"}, {"init", "vs_truncated"},
                               {"init_scale", "0.002"}});
  const std::vector<double> b = param_init(vs, ParamLayout(vs));
  const double sd = std::sqrt(0.002 / 4 / 11) / 0.87962566103423978;
  double v2 = 0, worst = 0;
  for (double x : b) {
    v2 += x * x / b.size();
    worst = std::max(worst, std::fabs(x));
  }
  EXPECT_LE(worst, 2 * sd);
  EXPECT_NEAR(std::sqrt(v2), sd * 0.87962566103423978, 0.03 * sd);   // the truncated law's std
}

}  // namespace
}  // namespace icl
