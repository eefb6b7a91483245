// LaneTransformer (float, double) against the frozen naive reference transformer_ref_forward over a
// batch spanning several chunks including a padded one (every layer's readout and tokens), for shapes
// covering every option of TransformerShape; LaneTransformer<double>'s parameter gradient and input
// gradients (model_backward, tokens_backward) against central differences of the REFERENCE, at zero,
// tiny and random weights; padded lanes; transformer_shape, the layout's tiling, the encodings.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "icl/base/rng.hpp"
#include "icl/model/transformer.hpp"
#include "icl/model/transformer_ref.hpp"
#include "test_util.hpp"

namespace icl {
namespace {

using test::make_batch;
using test::task_Z;
using test::worst_rel;

// The derived fields of a shape from its free ones, as transformer.hpp defines them: T, d_tok, E_emb
// (embed none), pe_size (add: E_emb), E, key (0: E).
TransformerShape finish(TransformerShape s) {
  s.T = s.tokens == Tokens::constructed ? s.n + 1 : 2 * s.n + 1;
  s.d_tok = s.tokens == Tokens::classic ? s.d : s.d + 1;
  if (s.embed == Embed::none) s.E_emb = s.d_tok;
  if (s.pe == PosEnc::none) s.pe_size = 0;
  if (s.pe == PosEnc::add || s.pe == PosEnc::learnt) s.pe_size = s.E_emb;
  if (s.pe == PosEnc::learnt) s.positions = s.T;
  s.E = s.E_emb + (s.pe == PosEnc::concat ? s.pe_size : 0);
  if (s.key == 0) s.key = s.E;
  return s;
}

struct ShapeCase {
  const char* name;
  void (*set)(TransformerShape&);   // on d = 3, n = 4, one layer, one head, linear, bias, no options
};

TransformerShape shape_of(const ShapeCase& c) {
  TransformerShape s;
  s.d = 3;
  s.n = 4;
  c.set(s);
  return finish(s);
}

Point point_of(const TransformerShape& s) {
  Point p;
  p.d = s.d;
  p.n = s.n;
  return p;
}

// scale * normals, plus 1 on the LayerNorm scales (ViewInit::one): at scale 0 the zero model with
// identity LayerNorms.
std::vector<double> random_theta(const TransformerLayout& layout, double scale, uint64_t seed) {
  std::vector<double> th(layout.size());
  rng_normals(rng_key(seed, Stream::analysis), 0, layout.size(), th.data());
  for (const TransformerView& v : layout.views())
    for (int i = 0; i < v.rows * v.cols; ++i) {
      double& x = th[v.offset + i];
      x = (v.init == ViewInit::one ? 1.0 : 0.0) + scale * x;
    }
  return th;
}

double max_abs(const std::vector<double>& x) {
  double m = 0.0;
  for (double z : x) m = std::max(m, std::fabs(z));
  return m;
}

// df/dx by central differences with one Richardson step, (4 D(h/2) - D(h)) / 3: error O(h^4), so
// strongly curved directions (LayerNorm of clipped tokens) stay well below the tolerance.
template <class F>
double derivative(double& x, const F& f, double h = 1e-5) {
  const double x0 = x;
  const auto D = [&](double step) {
    x = x0 + step;
    const double up = f();
    x = x0 - step;
    const double down = f();
    x = x0;
    return (up - down) / (2 * step);
  };
  return (4 * D(h / 2) - D(h)) / 3;
}

using TS = TransformerShape;
constexpr Attention kLinear = Attention::linear, kSoftmax = Attention::softmax, kMix = Attention::mix;

const ShapeCase kCases[] = {
    {"lsa_like", [](TS&) {}},
    {"linear_L3_H2_key3_nobias", [](TS& s) { s.layers = 3; s.heads = 2; s.key = 3; s.bias = false; }},
    {"softmax_L2_H4_key2",
     [](TS& s) { s.layers = 2; s.heads = 4; s.key = 2; s.attention = s.attention_first = kSoftmax; }},
    {"mix_L2_H2_key5", [](TS& s) { s.layers = 2; s.heads = 2; s.key = 5; s.attention = s.attention_first = kMix; }},
    {"first_softmax_rest_linear_L3", [](TS& s) { s.layers = 3; s.attention_first = kSoftmax; }},
    {"first_mix_rest_softmax_L2_H2",
     [](TS& s) { s.layers = 2; s.heads = 2; s.key = 3; s.attention_first = kMix; s.attention = kSoftmax; }},
    {"first_linear_rest_mix_L2", [](TS& s) { s.layers = 2; s.attention = kMix; }},
    {"layer_norm_L2", [](TS& s) { s.layers = 2; s.layer_norm = true; }},
    {"layer_norm_first_L2", [](TS& s) { s.layers = 2; s.layer_norm = s.ln_first = true; }},
    {"mlp_L2", [](TS& s) { s.layers = 2; s.mlp = true; }},
    {"mlp_ln_softmax_L3_H2", [](TS& s) {
       s.layers = 3; s.heads = 2; s.key = 3; s.mlp = s.layer_norm = true; s.attention = s.attention_first = kSoftmax;
     }},
    {"mlp_ln_nobias_L2", [](TS& s) { s.layers = 2; s.mlp = s.layer_norm = true; s.bias = false; s.widening = 2; }},
    {"tied_L3_H2", [](TS& s) { s.layers = 3; s.heads = 2; s.tie = true; }},
    {"tied_ln_mlp_softmax_L2",   // attention_first is the untied model's only: ignored
     [](TS& s) {
       s.layers = 2; s.tie = s.layer_norm = s.mlp = true; s.attention = kSoftmax; s.attention_first = kLinear;
     }},
    {"tied_mix_L2", [](TS& s) { s.layers = 2; s.tie = true; s.attention = kMix; s.attention_first = kSoftmax; }},
    {"clip_L3", [](TS& s) { s.layers = 3; s.act_clip = 1.0; }},
    {"clip_mlp_ln_L2", [](TS& s) { s.layers = 2; s.act_clip = 1.5; s.mlp = s.layer_norm = true; }},
    {"classic_L2_H2_key3", [](TS& s) { s.tokens = Tokens::classic; s.layers = 2; s.heads = 2; s.key = 3; }},
    {"classic_embed_linear_pe_add_softmax", [](TS& s) {
       s.tokens = Tokens::classic; s.embed = Embed::linear; s.E_emb = 5; s.pe = PosEnc::add; s.layers = 2;
       s.attention = s.attention_first = kSoftmax;
     }},
    {"classic_pe_concat", [](TS& s) { s.tokens = Tokens::classic; s.pe = PosEnc::concat; s.pe_size = 4; }},
    {"embed_linear_L2", [](TS& s) { s.embed = Embed::linear; s.E_emb = 6; s.layers = 2; }},
    {"embed_linear_nobias", [](TS& s) { s.embed = Embed::linear; s.E_emb = 5; s.bias = false; }},
    {"embed_linear_pe_concat_H2_key3", [](TS& s) {
       s.embed = Embed::linear; s.E_emb = 4; s.pe = PosEnc::concat; s.pe_size = 4; s.heads = 2; s.key = 3; s.layers = 2;
       s.attention = s.attention_first = kSoftmax;
     }},
    {"embed_mlp_L2", [](TS& s) { s.embed = Embed::mlp; s.E_emb = 4; s.layers = 2; }},
    {"embed_mlp_nobias",   // the input MLP keeps its biases
     [](TS& s) { s.embed = Embed::mlp; s.E_emb = 4; s.bias = false; s.widening = 2; }},
    {"embed_mlp_pe_add_mix", [](TS& s) {
       s.embed = Embed::mlp; s.E_emb = 6; s.pe = PosEnc::add; s.layers = 2; s.attention = s.attention_first = kMix;
       s.widening = 2;
     }},
    {"embed_mlp_pe_concat_ln_mlp_L2_H2", [](TS& s) {
       s.embed = Embed::mlp; s.E_emb = 4; s.pe = PosEnc::concat; s.pe_size = 2; s.layer_norm = s.mlp = true;
       s.layers = 2; s.heads = 2; s.key = 3; s.widening = 2;
     }},
    {"pe_add_L2", [](TS& s) { s.pe = PosEnc::add; s.layers = 2; }},
    {"pe_concat_softmax",
     [](TS& s) { s.pe = PosEnc::concat; s.pe_size = 2; s.attention = s.attention_first = kSoftmax; }},
    {"causal_classic_L2", [](TS& s) { s.tokens = Tokens::classic; s.causal = true; s.layers = 2; }},
    {"causal_softmax_classic_L2_H2_key3", [](TS& s) {
       s.tokens = Tokens::classic; s.causal = true; s.layers = 2; s.heads = 2; s.key = 3;
       s.attention = s.attention_first = kSoftmax;
     }},
    {"causal_mix_constructed_L2",
     [](TS& s) { s.causal = true; s.layers = 2; s.attention = kMix; s.attention_first = kSoftmax; }},
    {"causal_tied_clip_L3",   // constructed: a classic query's x entry would sit on the clip's kink at zero weights
     [](TS& s) { s.causal = true; s.tie = true; s.layers = 3; s.act_clip = 1.0; }},
    {"head_readout_classic_ln_L2", [](TS& s) {
       s.tokens = Tokens::classic; s.readout = Readout::head; s.layer_norm = true; s.layers = 2;
     }},
    {"pe_learnt_padded_head", [](TS& s) { s.tokens = Tokens::padded; s.pe = PosEnc::learnt; s.readout = Readout::head; }},
    {"gpt2_L2_H2", [](TS& s) {   // Raventos et al.'s model: every option of it
       s.tokens = Tokens::padded; s.embed = Embed::linear; s.E_emb = 6; s.embed_bias = false; s.pe = PosEnc::learnt;
       s.causal = true; s.attention = s.attention_first = kSoftmax; s.layer_norm = s.ln_first = s.mlp = true;
       s.readout = Readout::head; s.prefix_loss = true; s.layers = 2; s.heads = 2; s.key = 3; s.widening = 2;
     }},
    {"kitchen_sink_L3", [](TS& s) {
       s.n = 3; s.tokens = Tokens::classic; s.embed = Embed::mlp; s.E_emb = 4; s.pe = PosEnc::concat; s.pe_size = 2;
       s.layer_norm = s.mlp = true; s.attention_first = kMix; s.attention = kSoftmax; s.heads = 2; s.key = 3;
       s.act_clip = 2.0; s.layers = 3; s.widening = 2;
     }},
};

class TransformerVsRef : public ::testing::TestWithParam<ShapeCase> {};

// Every layer's readout and tokens h_0 .. h_L of every task of a 3-chunk batch (the last padded).
template <class T>
void compare_with_reference(const TransformerShape& s, double tol) {
  const int V = kLanes<T>, B = 2 * V + 3, T_ = s.T, E = s.E;
  const TaskBatch<T> batch = make_batch<T>(point_of(s), B);
  LaneTransformer<T> model(s);
  const TransformerLayout& layout = model.layout();
  const std::vector<double> theta = random_theta(layout, 0.3, 11);
  model.set_weights(theta.data());
  LaneVec<T> yhat(s.layers);
  std::vector<double> y_lane, y_ref, h_lane, h_ref;
  for (int c = 0; c < batch.chunks; ++c) {
    model.model_forward(batch.chunk_Z(c), yhat.data());
    for (int v = 0; v < V && c * V + v < B; ++v) {
      std::vector<Eigen::MatrixXd> h;
      const Eigen::VectorXd yr = transformer_ref_forward(s, layout, theta, task_Z(batch, c * V + v), &h);
      ASSERT_EQ(static_cast<int>(h.size()), s.layers + 1);
      for (int l = 0; l < s.layers; ++l) {
        y_lane.push_back(yhat[l][v]);
        y_ref.push_back(yr(l));
      }
      for (int l = 0; l <= s.layers; ++l) {
        ASSERT_EQ(h[l].rows(), T_);
        ASSERT_EQ(h[l].cols(), E);
        for (int r = 0; r < E; ++r)
          for (int t = 0; t < T_; ++t) {
            h_lane.push_back(model.tokens(l)[r * T_ + t][v]);
            h_ref.push_back(h[l](t, r));
          }
      }
    }
  }
  if (s.act_clip > 0) {   // the clipped path is exercised: some tokens sit exactly at the bound
    int at_bound = 0;
    for (double z : h_ref) at_bound += std::fabs(z) == s.act_clip;
    EXPECT_GT(at_bound, 0);
  }
  const double e_y = worst_rel(y_lane, y_ref), e_h = worst_rel(h_lane, h_ref);
  std::printf("  %-6s %4d parameters  max|yhat| %.2e  max|h| %.2e  worst relative error: yhat %.2e  tokens %.2e\n",
              sizeof(T) == 4 ? "float" : "double", layout.size(), max_abs(y_ref), max_abs(h_ref), e_y, e_h);
  EXPECT_LT(e_y, tol);
  EXPECT_LT(e_h, tol);
}

TEST_P(TransformerVsRef, Float64MatchesReference) { compare_with_reference<double>(shape_of(GetParam()), 1e-10); }
TEST_P(TransformerVsRef, Float32MatchesReference) { compare_with_reference<float>(shape_of(GetParam()), 1e-3); }

// d/dtheta sum_t coef_t yhat_L,t: LaneTransformer<double>::grad after model_backward(coef) against
// central differences (derivative()) of the reference, over 9 tasks (two chunks, the second padded
// with coef 0), at zero, tiny and random weights.
TEST_P(TransformerVsRef, GradientMatchesCentralDifferencesOfReference) {
  const TransformerShape s = shape_of(GetParam());
  const int V = kLanes<double>, B = V + 1;
  const TaskBatch<double> batch = make_batch<double>(point_of(s), B, 9);
  std::vector<Eigen::MatrixXd> Z;
  std::vector<double> coef;
  for (int t = 0; t < B; ++t) {
    Z.push_back(task_Z(batch, t));
    coef.push_back(0.5 + 0.1 * t);
  }
  LaneTransformer<double> model(s);
  const TransformerLayout& layout = model.layout();
  const int size = layout.size();
  const auto objective = [&](const std::vector<double>& th) {
    double f = 0.0;
    for (int t = 0; t < B; ++t) f += coef[t] * transformer_ref_forward(s, layout, th, Z[t])(s.layers - 1);
    return f;
  };
  for (const double scale : {0.0, 1e-3, 0.3}) {
    std::vector<double> theta = random_theta(layout, scale, 5);
    model.set_weights(theta.data());
    model.zero_grad();
    LaneVec<double> yhat(s.layers);
    for (int c = 0; c < batch.chunks; ++c) {
      model.model_forward(batch.chunk_Z(c), yhat.data());
      Lane<double> g{};
      for (int v = 0; v < V; ++v) g[v] = c * V + v < B ? coef[c * V + v] : 0.0;
      model.model_backward(g);
    }
    std::vector<double> grad(size), fd(size);
    model.grad(grad.data());
    for (int i = 0; i < size; ++i) fd[i] = derivative(theta[i], [&] { return objective(theta); });
    const double worst = worst_rel(grad, fd);
    const double guard = 1e-3 * std::max(1.0, max_abs(fd));
    int at = 0;   // the worst entry, by worst_rel's measure
    for (int i = 0; i < size; ++i)
      if (std::fabs(grad[i] - fd[i]) / (std::fabs(fd[i]) + guard) >= worst) at = i;
    std::string view;
    for (const TransformerView& v : layout.views())
      if (at >= v.offset && at < v.offset + v.rows * v.cols) view = v.name + "[" + std::to_string(v.layer) + "]";
    std::printf("  scale %-6g %4d parameters  max|grad| %.3e  worst relative error %.2e  (at %s: %.6e vs %.6e)\n",
                scale, size, max_abs(fd), worst, view.c_str(), grad[at], fd[at]);
    EXPECT_LT(worst, 1e-6) << "scale " << scale << ", worst at theta[" << at << "] (" << view << ")";
  }
}

// LaneTransformer<float>::grad against LaneTransformer<double>::grad on the same 19 tasks (float: two
// chunks of 16, the second padded; double: three chunks of 8), at random weights: the float
// instantiation runs the same backward.
TEST_P(TransformerVsRef, Float32GradientMatchesFloat64) {
  const TransformerShape s = shape_of(GetParam());
  const int Vf = kLanes<float>, Vd = kLanes<double>, B = Vf + 3, DN = (s.d + 1) * (s.n + 1);
  const TaskBatch<float> bf = make_batch<float>(point_of(s), B, 17);
  TaskBatch<double> bd;
  bd.resize(B, s.d, s.n);
  for (int t = 0; t < B; ++t)
    for (int x = 0; x < DN; ++x) bd.Z[static_cast<size_t>(t / Vd) * DN + x][t % Vd] = bf.chunk_Z(t / Vf)[x][t % Vf];
  LaneTransformer<float> mf(s);
  LaneTransformer<double> md(s);
  const std::vector<double> theta = random_theta(md.layout(), 0.3, 19);
  mf.set_weights(theta.data());
  md.set_weights(theta.data());
  const auto coef = [&](int t) { return t < B ? 0.5 + 0.05 * t : 0.0; };
  LaneVec<float> yf(s.layers);
  for (int c = 0; c < bf.chunks; ++c) {
    mf.model_forward(bf.chunk_Z(c), yf.data());
    Lane<float> g{};
    for (int v = 0; v < Vf; ++v) g[v] = static_cast<float>(coef(c * Vf + v));
    mf.model_backward(g);
  }
  LaneVec<double> yd(s.layers);
  for (int c = 0; c < bd.chunks; ++c) {
    md.model_forward(bd.chunk_Z(c), yd.data());
    Lane<double> g{};
    for (int v = 0; v < Vd; ++v) g[v] = coef(c * Vd + v);
    md.model_backward(g);
  }
  std::vector<double> gf(md.layout().size()), gd(gf.size());
  mf.grad(gf.data());
  md.grad(gd.data());
  const double e = worst_rel(gf, gd);
  std::printf("  max|grad| %.3e  float vs double worst relative error %.2e\n", max_abs(gd), e);
  EXPECT_LT(e, 1e-3);
}

// Where entry (i, j) of Z0 sits in the raw tokens X (d_tok x T): row, column; -1 when nowhere (the
// query's zero label in classic tokens).
std::pair<int, int> token_of(const TransformerShape& s, int i, int j) {
  if (s.tokens == Tokens::constructed) return {i, j};
  if (s.tokens == Tokens::padded) return i < s.d ? std::pair{i + 1, 2 * j} : j < s.n ? std::pair{0, 2 * j + 1} : std::pair{-1, -1};
  if (i < s.d) return {i, 2 * j};
  if (j < s.n) return {s.d - 1, 2 * j + 1};
  return {-1, -1};
}

// input_grad() (dLoss/dX) after model_backward(coef), and after tokens_backward(l, G) from a random G at
// the output of every layer, against central differences of the reference with respect to Z0.
TEST_P(TransformerVsRef, InputGradientsMatchCentralDifferencesOfReference) {
  const TransformerShape s = shape_of(GetParam());
  const int V = kLanes<double>, D = s.d + 1, N = s.n + 1;
  const TaskBatch<double> batch = make_batch<double>(point_of(s), V, 13);
  LaneTransformer<double> model(s);
  const TransformerLayout& layout = model.layout();
  const std::vector<double> theta = random_theta(layout, 0.3, 7);
  model.set_weights(theta.data());
  LaneVec<double> yhat(s.layers);
  Lane<double> coef;
  for (int v = 0; v < V; ++v) coef[v] = 0.5 + 0.1 * v;
  for (int l = -1; l < s.layers; ++l) {   // -1: model_backward; l >= 0: tokens_backward(l, G)
    std::vector<double> G(static_cast<size_t>(s.E) * s.T * V);
    rng_normals(rng_key(21 + l, Stream::analysis), 0, static_cast<int>(G.size()), G.data());
    LaneVec<double> Gl(static_cast<size_t>(s.E) * s.T);
    for (size_t x = 0; x < Gl.size(); ++x)
      for (int v = 0; v < V; ++v) Gl[x][v] = G[x * V + v];
    model.model_forward(batch.chunk_Z(0), yhat.data());
    if (l < 0)
      model.model_backward(coef);
    else
      model.tokens_backward(l, Gl.data());
    std::vector<double> analytic, fd;
    for (int v = 0; v < V; ++v) {
      Eigen::MatrixXd Z0 = task_Z(batch, v);
      const auto loss = [&] {
        std::vector<Eigen::MatrixXd> h;
        const Eigen::VectorXd y = transformer_ref_forward(s, layout, theta, Z0, &h);
        if (l < 0) return coef[v] * y(s.layers - 1);
        double f = 0.0;
        for (int r = 0; r < s.E; ++r)
          for (int t = 0; t < s.T; ++t) f += Gl[r * s.T + t][v] * h[l + 1](t, r);
        return f;
      };
      for (int i = 0; i < D; ++i)
        for (int j = 0; j < N; ++j) {
          const auto [r, c] = token_of(s, i, j);
          if (r < 0) continue;
          analytic.push_back(model.input_grad()[r * s.T + c][v]);
          fd.push_back(derivative(Z0(i, j), loss));
        }
    }
    const double worst = worst_rel(analytic, fd);
    std::printf("  %-16s max|dX| %.3e  worst relative error %.2e\n",
                l < 0 ? "model_backward" : ("tokens_backward " + std::to_string(l)).c_str(), max_abs(fd), worst);
    EXPECT_LT(worst, 1e-6) << (l < 0 ? "model_backward" : "tokens_backward") << " layer " << l;
  }
}

// prefix_predictions (the last layer's readout at every x token) against the reference's, and the gradient
// of sum_{t, j} coef_tj yhat_tj through prefix_backward against central differences of the reference, at
// random weights over 9 tasks (two chunks, the second padded).
TEST_P(TransformerVsRef, PrefixPredictionsAndGradientMatchReference) {
  const TransformerShape s = shape_of(GetParam());
  const int V = kLanes<double>, B = V + 1, N = s.n + 1;
  const TaskBatch<double> batch = make_batch<double>(point_of(s), B, 23);
  std::vector<Eigen::MatrixXd> Z;
  for (int t = 0; t < B; ++t) Z.push_back(task_Z(batch, t));
  const auto coef = [&](int t, int j) { return t < B ? 0.3 + 0.1 * t - 0.07 * j : 0.0; };
  LaneTransformer<double> model(s);
  const TransformerLayout& layout = model.layout();
  std::vector<double> theta = random_theta(layout, 0.3, 29);
  model.set_weights(theta.data());
  model.zero_grad();
  LaneVec<double> yhat(s.layers), yp(N), dy(N);
  std::vector<double> lane, ref;
  for (int c = 0; c < batch.chunks; ++c) {
    model.model_forward(batch.chunk_Z(c), yhat.data());
    model.prefix_predictions(yp.data());
    for (int v = 0; v < V && c * V + v < B; ++v) {
      Eigen::VectorXd pr;
      const Eigen::VectorXd yr = transformer_ref_forward(s, layout, theta, Z[c * V + v], nullptr, &pr);
      for (int j = 0; j < N; ++j) {
        lane.push_back(yp[j][v]);
        ref.push_back(pr(j));
      }
      EXPECT_EQ(pr(s.n), yr(s.layers - 1)) << "the prefix at the query is the query's readout";
    }
    for (int j = 0; j < N; ++j)
      for (int v = 0; v < V; ++v) dy[j][v] = coef(c * V + v, j);
    model.prefix_backward(dy.data());
  }
  EXPECT_LT(worst_rel(lane, ref), 1e-10);
  const auto objective = [&] {
    double f = 0.0;
    for (int t = 0; t < B; ++t) {
      Eigen::VectorXd pr;
      transformer_ref_forward(s, layout, theta, Z[t], nullptr, &pr);
      for (int j = 0; j < N; ++j) f += coef(t, j) * pr(j);
    }
    return f;
  };
  std::vector<double> grad(layout.size()), fd(layout.size());
  model.grad(grad.data());
  for (int i = 0; i < layout.size(); ++i) fd[i] = derivative(theta[i], objective);
  const double worst = worst_rel(grad, fd);
  std::printf("  prefixes: worst relative error %.2e (predictions), %.2e (gradient, max %.3e)\n", worst_rel(lane, ref),
              worst, max_abs(fd));
  EXPECT_LT(worst, 1e-6);
}

// Causal attention: the prediction at x_j does not depend on any token after it (the labels y_j, .., y_{n-1}
// and the inputs x_{j+1}, ..): perturbing them leaves yhat_j bit for bit.
TEST(TransformerCausal, PredictionAtEveryPrefixIgnoresLaterTokens) {
  for (const ShapeCase& c : kCases) {
    const TransformerShape s = shape_of(c);
    if (!s.causal || s.tokens == Tokens::constructed) continue;   // a constructed token holds its own label
    SCOPED_TRACE(c.name);
    const int V = kLanes<double>, D = s.d + 1, N = s.n + 1;
    TaskBatch<double> batch = make_batch<double>(point_of(s), V, 31);
    LaneTransformer<double> model(s);
    const std::vector<double> theta = random_theta(model.layout(), 0.3, 37);
    model.set_weights(theta.data());
    LaneVec<double> yhat(s.layers), before(N), after(N);
    model.model_forward(batch.chunk_Z(0), yhat.data());
    model.prefix_predictions(before.data());
    for (int j = 0; j + 1 < N; ++j) {   // change everything from y_j on: x_j's prediction and earlier stay
      TaskBatch<double> changed = batch;
      for (int i = 0; i < D; ++i)
        for (int k = 0; k < N; ++k)
          if (k > j || (i == s.d && k == j)) changed.Z[i * N + k] += Lane<double>{} + 0.5;
      model.model_forward(changed.chunk_Z(0), yhat.data());
      model.prefix_predictions(after.data());
      for (int k = 0; k <= j; ++k)
        for (int v = 0; v < V; ++v) EXPECT_EQ(after[k][v], before[k][v]) << "x token " << k << " after a change from " << j;
      int moved = 0;
      for (int k = j + 1; k < N; ++k) moved += after[k][0] != before[k][0];
      EXPECT_GT(moved, 0) << "the later predictions see the change";
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, TransformerVsRef, ::testing::ValuesIn(kCases),
                         [](const auto& tc) { return std::string(tc.param.name); });

// Padding lanes (all-zero tasks, coefficient 0) stay finite and add exactly nothing to the gradient:
// the same real tasks with other tasks in the padding lanes give the same gradient bit for bit.
template <class T>
void check_padding(const TransformerShape& s) {
  const int V = kLanes<T>, real = 3;
  const TaskBatch<T> batch = make_batch<T>(point_of(s), V + real);   // chunk 1: 3 tasks, V-3 padding lanes
  LaneTransformer<T> model(s);
  const std::vector<double> theta = random_theta(model.layout(), 0.3, 12);
  model.set_weights(theta.data());
  const int D = s.d + 1, N = s.n + 1;
  LaneVec<T> padded(batch.chunk_Z(1), batch.chunk_Z(1) + D * N), filled = padded;
  for (int x = 0; x < D * N; ++x)
    for (int v = real; v < V; ++v) filled[x][v] = batch.chunk_Z(0)[x][v];   // other tasks in the padding
  Lane<T> g{};
  for (int v = 0; v < real; ++v) g[v] = static_cast<T>(1.0 + v);
  std::vector<double> grad_padded(model.layout().size()), grad_filled(grad_padded.size());
  LaneVec<T> yhat(s.layers);

  model.zero_grad();
  model.model_forward(padded.data(), yhat.data());
  for (int l = 0; l < s.layers; ++l)
    for (int v = 0; v < V; ++v) EXPECT_TRUE(std::isfinite(yhat[l][v])) << "layer " << l << " lane " << v;
  for (int l = 0; l <= s.layers; ++l)
    for (int x = 0; x < s.E * s.T; ++x)
      for (int v = real; v < V; ++v)
        ASSERT_TRUE(std::isfinite(model.tokens(l)[x][v])) << "tokens " << l << " lane " << v;
  model.model_backward(g);
  model.grad(grad_padded.data());
  for (int x = 0; x < s.d_tok * s.T; ++x)
    for (int v = real; v < V; ++v) ASSERT_TRUE(std::isfinite(model.input_grad()[x][v])) << "input_grad lane " << v;

  model.zero_grad();
  model.model_forward(filled.data(), yhat.data());
  model.model_backward(g);
  model.grad(grad_filled.data());
  for (double z : grad_padded) ASSERT_TRUE(std::isfinite(z));
  EXPECT_EQ(grad_padded, grad_filled);
}

TEST(TransformerPadding, ZeroTasksStayFiniteAndAddNothing) {
  for (const char* name : {"mlp_ln_nobias_L2", "kitchen_sink_L3", "embed_mlp_pe_concat_ln_mlp_L2_H2", "tied_mix_L2"}) {
    SCOPED_TRACE(name);
    const ShapeCase* c = std::find_if(std::begin(kCases), std::end(kCases),
                                      [&](const ShapeCase& k) { return std::string(k.name) == name; });
    ASSERT_NE(c, std::end(kCases));
    check_padding<double>(shape_of(*c));
    check_padding<float>(shape_of(*c));
  }
}

// transformer_shape(Point) fills the derived fields as finish() does; the layout's views tile theta;
// positional_encoding is create_pos_encoding's table.
TEST(TransformerShapeAndLayout, ShapeFromPointLayoutTilesThetaPositionalEncoding) {
  Point p;
  p.arch = Arch::transformer;
  p.d = 3;
  p.n = 6;
  p.tokens = Tokens::classic;
  p.embed = Embed::mlp;
  p.embed_size = 5;
  p.pe = PosEnc::concat;
  p.pe_size = 4;
  p.layers = 3;
  p.heads = 2;
  p.key_size = 0;
  p.attention = Attention::softmax;
  p.attention_first = FirstAttention::mix;
  p.mlp = p.layer_norm = true;
  p.bias = false;
  p.widening = 2;
  p.act_clip = 1.5;
  const TransformerShape s = transformer_shape(p);
  TransformerShape want;
  want.d = 3;
  want.n = 6;
  want.tokens = Tokens::classic;
  want.embed = Embed::mlp;
  want.E_emb = 5;
  want.pe = PosEnc::concat;
  want.pe_size = 4;
  want.layers = 3;
  want.heads = 2;
  want.attention = Attention::softmax;
  want.attention_first = Attention::mix;
  want.mlp = want.layer_norm = true;
  want.bias = false;
  want.widening = 2;
  want.act_clip = 1.5;
  want = finish(want);
  EXPECT_EQ(s.T, want.T);
  EXPECT_EQ(s.d_tok, want.d_tok);
  EXPECT_EQ(s.E_emb, want.E_emb);
  EXPECT_EQ(s.pe_size, want.pe_size);
  EXPECT_EQ(s.E, want.E);
  EXPECT_EQ(s.key, want.key);
  EXPECT_EQ(s.attention_first, want.attention_first);
  EXPECT_EQ(s.attention, want.attention);
  EXPECT_EQ(s.bias, want.bias);
  EXPECT_EQ(s.act_clip, want.act_clip);

  for (const ShapeCase& c : kCases) {
    const TransformerLayout layout(shape_of(c));
    int next = 0;
    for (const TransformerView& v : layout.views()) {
      EXPECT_EQ(v.offset, next) << c.name << " " << v.name;
      next += v.rows * v.cols;
    }
    EXPECT_EQ(next, layout.size()) << c.name;
  }

  for (const int size : {2, 4, 6}) {
    const Eigen::MatrixXd pe = transformer_ref_pos_encoding(9, size);
    for (int t = 0; t < 9; ++t)
      for (int k = 0; k < size; ++k) EXPECT_NEAR(positional_encoding(t, k, size), pe(t, k), 1e-15) << t << " " << k;
  }
}

// init = gd_embed: the embedding of [VO23]'s GD model drawn as its create_weights (data.py:280-290): plain
// (untruncated) normals of variance init_scale/2 for emb.W [2, 40] and emb_mlp.W1 [40, 160], init_scale/40 for
// emb_mlp.W2 [160, 40], biases 0, the attention the GD construction; vs_truncated draws W1 at 1/20 of that.
TEST(TransformerInit, GdEmbedIsTheOfficialGdModelsPlainNormal) {
  Point p;
  p.arch = Arch::transformer;
  p.task = Task::sine;
  p.d = 1;
  p.n = 10;
  p.layers = 1;
  p.tie = true;
  p.heads = 1;
  p.key_size = 0;
  p.bias = false;
  p.embed = Embed::mlp;
  p.embed_size = 40;
  p.gd_attention = 0.1;
  p.init = Init::gd_embed;
  p.init_scale = 0.002;
  const TransformerLayout layout(transformer_shape(p));
  const std::vector<double> theta = transformer_init(p, layout);
  const std::map<std::string, double> want_var = {{"emb.W", 0.002 / 2}, {"emb_mlp.W1", 0.002 / 2}, {"emb_mlp.W2", 0.002 / 40}};
  for (const TransformerView& v : layout.views()) {
    const int count = v.rows * v.cols;
    double sum = 0, sq = 0, fourth = 0;
    for (int x = 0; x < count; ++x) {
      const double t = theta[v.offset + x];
      sum += t;
      sq += t * t;
      fourth += t * t * t * t;
    }
    if (!want_var.count(v.name)) {
      if (v.name.rfind("emb_mlp.b", 0) == 0) { EXPECT_EQ(sq, 0.0) << v.name; }
      continue;
    }
    const double var = sq / count, want = want_var.at(v.name);
    // the sample variance within 5 standard errors (sqrt(2/count) relative for a normal)
    EXPECT_NEAR(var / want, 1.0, 5 * std::sqrt(2.0 / count)) << v.name;
    EXPECT_NEAR(sum / count, 0.0, 5 * std::sqrt(want / count)) << v.name;
    // untruncated: kurtosis 3 (a 2-sigma truncated normal has 2.37)
    if (count >= 6400) { EXPECT_NEAR(fourth / count / (var * var), 3.0, 0.25) << v.name; }
  }
  // the GD construction over the attention (only its frozen views), as with the other inits
  Point q = p;
  q.init = Init::vs_truncated;
  const std::vector<double> other = transformer_init(q, layout);
  for (const TransformerView& view : layout.views()) {
    if (view.name.rfind("attn.", 0) != 0) continue;
    for (int x = 0; x < view.rows * view.cols; ++x)
      EXPECT_EQ(theta[view.offset + x], other[view.offset + x]) << view.name;
  }
}

}  // namespace
}  // namespace icl
