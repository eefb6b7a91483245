// Every block of blocks.hpp, float and double: the lane forward against a naive scalar loop per lane
// (in double, on the same T-rounded inputs), the lane backward against central differences of that
// loop (double), at zero, tiny and random inputs and weights.  Shapes cross the dense kernels' 8-row
// tiles (1, 3, 8, 9, 16, 17 rows), matrices have row strides ld > cols whose padding must stay
// untouched, and the `=` / `+=` contract of every gradient is checked by pre-filling its buffer.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <limits>
#include <type_traits>
#include <vector>

#include "icl/base/rng.hpp"
#include "icl/model/blocks.hpp"

namespace icl {
namespace {

// Per-lane values in double: entry e of lane v at [e * V + v]; a R x C matrix has e = r * C + c.
using Vals = std::vector<double>;

constexpr double kPad = 12345.0;   // fills the ld > cols padding, which no kernel may write
constexpr double kJunk = 777.0;    // pre-fills outputs that must be overwritten (`=`)
constexpr double kStep = 1e-5;     // central-difference step (LayerNorm scales it with its inputs)

// Tolerances on the worst relative entry (err_rel below).  Double is the precision proof; float checks
// that the float instantiation computes the same formulas, with a floor of 1e-2 max|b| rather than 1e-3:
// GELU's 1 - tanh^2 in its tails and LayerNorm's g dY - mean(g dY) times rstd (up to 1/sqrt(eps) = 316)
// lose absolute, not relative, precision.
template <class T>
constexpr double fwd_tol() { return std::is_same_v<T, float> ? 1e-4 : 1e-12; }
template <class T>
constexpr double bwd_tol() { return std::is_same_v<T, float> ? 2e-3 : 1e-6; }
template <class T>
constexpr double rel_floor() { return std::is_same_v<T, float> ? 1e-2 : 1e-3; }

// max_i |a_i - b_i| / (|b_i| + floor max(1, max|b|)): test::worst_rel (test_util.hpp) with the floor of T.
template <class T>
double err_rel(const Vals& a, const Vals& b) {
  double bmax = 1.0, worst = 0.0;
  for (double x : b) bmax = std::max(bmax, std::fabs(x));
  for (size_t i = 0; i < a.size(); ++i)
    worst = std::max(worst, std::fabs(a[i] - b[i]) / (std::fabs(b[i]) + rel_floor<T>() * bmax));
  return worst;
}

// scale * standard normals, rounded to T (so the lane kernels and the double loops see the same inputs).
template <class T>
Vals randn(size_t count, double scale, uint64_t seed) {
  Vals x(count);
  if (count > 0) rng_normals(rng_key(seed, Stream::analysis), 0, static_cast<int>(count), x.data());
  for (double& z : x) z = static_cast<double>(static_cast<T>(scale * z));
  return x;
}
template <class T>
std::vector<T> to_T(const Vals& x) { return std::vector<T>(x.begin(), x.end()); }

// A R x C lane matrix with row stride ld, the padding filled with kPad.
template <class T>
struct LaneMatrix {
  static constexpr int V = kLanes<T>;
  int rows, cols, ld;
  LaneVec<T> buf;
  LaneMatrix(int r, int c, int stride, const Vals& x) : rows(r), cols(c), ld(stride) {
    buf.assign(static_cast<size_t>(std::max(r, 1)) * ld, Lane<T>{} + static_cast<T>(kPad));
    for (int i = 0; i < r; ++i)
      for (int j = 0; j < c; ++j)
        for (int v = 0; v < V; ++v) buf[i * ld + j][v] = static_cast<T>(x[(i * c + j) * V + v]);
  }
  LaneMatrix(int r, int c, int stride, double fill)
      : LaneMatrix(r, c, stride, Vals(static_cast<size_t>(r) * c * V, fill)) {}
  Mat<T> m() { return {buf.data(), rows, cols, ld}; }
  CMat<T> cm() const { return {buf.data(), rows, cols, ld}; }
  Vals get() const {
    Vals x(static_cast<size_t>(rows) * cols * V);
    for (int i = 0; i < rows; ++i)
      for (int j = 0; j < cols; ++j)
        for (int v = 0; v < V; ++v) x[(i * cols + j) * V + v] = buf[i * ld + j][v];
    return x;
  }
  bool padding_intact() const {
    for (int i = 0; i < rows; ++i)
      for (int j = cols; j < ld; ++j)
        for (int v = 0; v < V; ++v)
          if (buf[i * ld + j][v] != static_cast<T>(kPad)) return false;
    return true;
  }
};

// Contiguous lanes <-> Vals.
template <class T>
LaneVec<T> to_lanes(const Vals& x) {
  LaneVec<T> y(x.size() / kLanes<T>);
  for (size_t e = 0; e < y.size(); ++e)
    for (int v = 0; v < kLanes<T>; ++v) y[e][v] = static_cast<T>(x[e * kLanes<T> + v]);
  return y;
}
template <class T>
Vals from_lanes(const LaneVec<T>& y) {
  Vals x(y.size() * kLanes<T>);
  for (size_t e = 0; e < y.size(); ++e)
    for (int v = 0; v < kLanes<T>; ++v) x[e * kLanes<T> + v] = y[e][v];
  return x;
}

Vals add(const Vals& a, const Vals& b) {
  Vals c(a.size());
  for (size_t i = 0; i < a.size(); ++i) c[i] = a[i] + b[i];
  return c;
}

// The per-lane loss sum_e R_e Y_e.
Vals lane_dot(const Vals& R, const Vals& Y, int V) {
  Vals s(V, 0.0);
  for (size_t i = 0; i < Y.size(); ++i) s[i % V] += R[i] * Y[i];
  return s;
}

using Loss = std::function<Vals()>;

// d loss_v / d x_e for a per-lane x (moving entry e of lane v moves loss_v only): same layout as x.
Vals fd_lanes(Vals& x, int V, const Loss& loss, double step = kStep) {
  Vals g(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    const double x0 = x[i];
    x[i] = x0 + step;
    const double up = loss()[i % V];
    x[i] = x0 - step;
    const double down = loss()[i % V];
    x[i] = x0;
    g[i] = (up - down) / (2 * step);
  }
  return g;
}

// d loss_v / d w_j for a weight shared by the lanes: entry (j, v) at [j * V + v].
Vals fd_shared(Vals& w, int V, const Loss& loss, double step = kStep) {
  Vals g(w.size() * V);
  for (size_t j = 0; j < w.size(); ++j) {
    const double w0 = w[j];
    w[j] = w0 + step;
    const Vals up = loss();
    w[j] = w0 - step;
    const Vals down = loss();
    w[j] = w0;
    for (int v = 0; v < V; ++v) g[j * V + v] = (up[v] - down[v]) / (2 * step);
  }
  return g;
}

// The worst relative error seen by a test, per kind, printed at its end.
template <class T>
struct Worst {
  double fwd = 0.0, bwd = 0.0;
  void forward(const Vals& got, const Vals& want, double tol, const char* what) {
    const double e = err_rel<T>(got, want);
    fwd = std::max(fwd, e);
    EXPECT_LT(e, tol) << what;
  }
  void backward(const Vals& got, const Vals& want, double tol, const char* what) {
    const double e = err_rel<T>(got, want);
    bwd = std::max(bwd, e);
    EXPECT_LT(e, tol) << what;
  }
  void print(const char* block) const {
    const char* type = std::is_same_v<T, float> ? "float" : "double";
    std::printf("  %-18s %-6s worst relative error: forward %.2e  backward vs central differences %.2e\n", block,
                type, fwd, bwd);
  }
};

template <class T>
class Blocks : public ::testing::Test {};
using Types = ::testing::Types<float, double>;
TYPED_TEST_SUITE(Blocks, Types);

// ---- dense -------------------------------------------------------------------------------------------

// Y (out x C) = W^T X + b per lane.
Vals naive_dense(const Vals& W, const Vals* b, const Vals& X, int in, int out, int C, int V) {
  Vals Y(static_cast<size_t>(out) * C * V);
  for (int o = 0; o < out; ++o)
    for (int c = 0; c < C; ++c)
      for (int v = 0; v < V; ++v) {
        double acc = b ? (*b)[o] : 0.0;
        for (int i = 0; i < in; ++i) acc += W[i * out + o] * X[(i * C + c) * V + v];
        Y[(o * C + c) * V + v] = acc;
      }
  return Y;
}

template <class T, bool kAccumulate>
void check_dense(int in, int out, int C, double scale, bool bias, bool with_dx, uint64_t seed, Worst<T>& worst) {
  constexpr int V = kLanes<T>;
  SCOPED_TRACE(::testing::Message() << "dense in " << in << " out " << out << " C " << C << " scale " << scale
                                    << " bias " << bias << " accumulate " << kAccumulate << " dX " << with_dx);
  Vals W = randn<T>(static_cast<size_t>(in) * out, scale, seed), b = randn<T>(out, scale, seed + 1);
  Vals X = randn<T>(static_cast<size_t>(in) * C * V, scale > 0 ? 1.0 : 0.0, seed + 2);
  const Vals R = randn<T>(static_cast<size_t>(out) * C * V, 1.0, seed + 3);
  const std::vector<T> Wt = to_T<T>(W), bt = to_T<T>(b);

  LaneMatrix<T> x(in, C, C + 3, X), y(out, C, C + 2, kJunk);
  dense_forward<T>(Wt.data(), bias ? bt.data() : nullptr, x.cm(), y.m());
  worst.forward(y.get(), naive_dense(W, bias ? &b : nullptr, X, in, out, C, V), fwd_tol<T>(), "Y");
  EXPECT_TRUE(y.padding_intact());

  const Vals dX0 = kAccumulate ? randn<T>(X.size(), 1.0, seed + 4) : Vals(X.size(), kJunk);
  const Vals dW0 = randn<T>(W.size() * V, 1.0, seed + 5), db0 = randn<T>(b.size() * V, 1.0, seed + 6);
  LaneMatrix<T> dy(out, C, C + 1, R), dx(in, C, C + 2, dX0);
  LaneVec<T> dW = to_lanes<T>(dW0), db = to_lanes<T>(db0);
  Mat<T> dx_arg = with_dx ? dx.m() : Mat<T>{nullptr, 0, 0, 0};
  dense_backward<T, kAccumulate>(Wt.data(), x.cm(), dy.cm(), dx_arg, dW.data(), bias ? db.data() : nullptr);

  const Loss loss = [&] { return lane_dot(R, naive_dense(W, &b, X, in, out, C, V), V); };
  if (with_dx) {
    const Vals g = fd_lanes(X, V, loss);
    worst.backward(dx.get(), kAccumulate ? add(dX0, g) : g, bwd_tol<T>(), "dX");
    EXPECT_TRUE(dx.padding_intact());
  } else {
    EXPECT_EQ(dx.get(), dX0) << "dX.p == nullptr must leave dX alone";
  }
  worst.backward(from_lanes<T>(dW), add(dW0, fd_shared(W, V, loss)), bwd_tol<T>(), "dW");
  if (bias)
    worst.backward(from_lanes<T>(db), add(db0, fd_shared(b, V, loss)), bwd_tol<T>(), "db");
  else
    EXPECT_EQ(from_lanes<T>(db), db0) << "db == nullptr must leave db alone";
}

TYPED_TEST(Blocks, DenseForwardAndBackward) {
  using T = TypeParam;
  Worst<T> worst;
  uint64_t seed = 100;
  const int shapes[][3] = {{1, 1, 1}, {3, 8, 5}, {17, 9, 4}, {8, 17, 1}, {16, 16, 3}, {9, 1, 2}};
  for (const auto& sh : shapes)
    for (const double scale : {0.0, 1e-3, 1.0})
      for (const bool bias : {true, false}) {
        check_dense<T, false>(sh[0], sh[1], sh[2], scale, bias, true, seed += 10, worst);
        check_dense<T, true>(sh[0], sh[1], sh[2], scale, bias, true, seed += 10, worst);
      }
  check_dense<T, false>(17, 9, 3, 1.0, true, false, seed += 10, worst);
  check_dense<T, true>(5, 3, 2, 1.0, false, false, seed += 10, worst);
  worst.print("dense");
}

// ---- LayerNorm ---------------------------------------------------------------------------------------

struct NaiveLayerNorm {
  Vals Y, xhat, rstd;
};
// Over the rows of each column, per lane: haiku's LayerNorm, eps 1e-5.
NaiveLayerNorm naive_layernorm(const Vals& g, const Vals& b, const Vals& X, int E, int C, int V) {
  NaiveLayerNorm r{Vals(X.size()), Vals(X.size()), Vals(static_cast<size_t>(C) * V)};
  for (int c = 0; c < C; ++c)
    for (int v = 0; v < V; ++v) {
      double mu = 0.0, var = 0.0;
      for (int e = 0; e < E; ++e) mu += X[(e * C + c) * V + v] / E;
      for (int e = 0; e < E; ++e) var += (X[(e * C + c) * V + v] - mu) * (X[(e * C + c) * V + v] - mu) / E;
      const double rstd = 1.0 / std::sqrt(var + 1e-5);
      r.rstd[c * V + v] = rstd;
      for (int e = 0; e < E; ++e) {
        const int i = (e * C + c) * V + v;
        r.xhat[i] = (X[i] - mu) * rstd;
        r.Y[i] = g[e] * r.xhat[i] + b[e];
      }
    }
  return r;
}

template <class T>
void check_layernorm(int E, int C, double scale, uint64_t seed, Worst<T>& worst) {
  constexpr int V = kLanes<T>;
  SCOPED_TRACE(::testing::Message() << "layernorm E " << E << " C " << C << " scale " << scale);
  Vals g = randn<T>(E, scale > 0 ? 0.3 : 0.0, seed), b = randn<T>(E, scale, seed + 1);
  for (double& z : g) z = static_cast<double>(static_cast<T>(1.0 + z));
  Vals X = randn<T>(static_cast<size_t>(E) * C * V, scale, seed + 2);
  const Vals R = randn<T>(X.size(), 1.0, seed + 3);
  const std::vector<T> gt = to_T<T>(g), bt = to_T<T>(b);

  LaneMatrix<T> x(E, C, C + 1, X), y(E, C, C + 2, kJunk), xhat(E, C, C + 3, kJunk);
  LaneVec<T> rstd(C, Lane<T>{} + static_cast<T>(kJunk));
  layernorm_forward<T>(gt.data(), bt.data(), x.cm(), y.m(), xhat.m(), rstd.data());
  const NaiveLayerNorm want = naive_layernorm(g, b, X, E, C, V);
  // rstd is up to 1/sqrt(eps) ~ 316 at zero inputs: compared relative to itself.
  worst.forward(y.get(), want.Y, fwd_tol<T>(), "Y");
  worst.forward(xhat.get(), want.xhat, fwd_tol<T>(), "xhat");
  worst.forward(from_lanes<T>(rstd), want.rstd, fwd_tol<T>(), "rstd");
  EXPECT_TRUE(y.padding_intact());
  EXPECT_TRUE(xhat.padding_intact());

  const Vals dX0 = randn<T>(X.size(), 1.0, seed + 4), dg0 = randn<T>(E * V, 1.0, seed + 5),
             db0 = randn<T>(E * V, 1.0, seed + 6);
  LaneMatrix<T> dy(E, C, C + 2, R), dx(E, C, C + 1, dX0);
  LaneVec<T> dg = to_lanes<T>(dg0), db = to_lanes<T>(db0);
  layernorm_backward<T>(gt.data(), xhat.cm(), rstd.data(), dy.cm(), dx.m(), dg.data(), db.data());
  const Loss loss = [&] { return lane_dot(R, naive_layernorm(g, b, X, E, C, V).Y, V); };
  // Near zero inputs (var << eps) the third derivative grows like eps^-3/2: a step on their scale.
  const double step = kStep * std::min(1.0, std::max(scale, 1e-2));
  worst.backward(dx.get(), add(dX0, fd_lanes(X, V, loss, step)), bwd_tol<T>(), "dX");
  worst.backward(from_lanes<T>(dg), add(dg0, fd_shared(g, V, loss)), bwd_tol<T>(), "dg");
  worst.backward(from_lanes<T>(db), add(db0, fd_shared(b, V, loss)), bwd_tol<T>(), "db");
  EXPECT_TRUE(dx.padding_intact());
}

TYPED_TEST(Blocks, LayerNormForwardAndBackward) {
  using T = TypeParam;
  Worst<T> worst;
  uint64_t seed = 2000;
  const int shapes[][2] = {{1, 1}, {3, 4}, {8, 1}, {17, 3}, {4, 9}};
  for (const auto& sh : shapes)
    for (const double scale : {0.0, 1e-3, 1.0, 5.0}) check_layernorm<T>(sh[0], sh[1], scale, seed += 10, worst);
  worst.print("layernorm");
}

// ---- GELU --------------------------------------------------------------------------------------------

Vals naive_gelu(const Vals& U) {
  Vals Y(U.size());
  const double k = std::sqrt(2.0 / 3.14159265358979323846);
  for (size_t i = 0; i < U.size(); ++i)
    Y[i] = 0.5 * U[i] * (1.0 + std::tanh(k * (U[i] + 0.044715 * U[i] * U[i] * U[i])));
  return Y;
}

TYPED_TEST(Blocks, GeluForwardAndBackward) {
  using T = TypeParam;
  constexpr int V = kLanes<T>;
  Worst<T> worst;
  uint64_t seed = 3000;
  for (const int count : {1, 7, 33})
    for (const double scale : {0.0, 1e-3, 1.0, 4.0})
      for (const bool in_place : {false, true}) {
        SCOPED_TRACE(::testing::Message() << "gelu count " << count << " scale " << scale << " in place " << in_place);
        Vals U = randn<T>(static_cast<size_t>(count) * V, scale, seed += 10);
        const Vals R = randn<T>(U.size(), 1.0, seed + 1);
        const LaneVec<T> u = to_lanes<T>(U);
        LaneVec<T> y(count, Lane<T>{} + static_cast<T>(kJunk));
        gelu_forward<T>(u.data(), y.data(), count);
        worst.forward(from_lanes<T>(y), naive_gelu(U), fwd_tol<T>(), "Y");
        // dU = gelu'(U) dY, written (=); the transformer calls it with dU == dY.
        LaneVec<T> dy = to_lanes<T>(R), du(count, Lane<T>{} + static_cast<T>(kJunk));
        LaneVec<T>& out = in_place ? dy : du;
        gelu_backward<T>(u.data(), dy.data(), out.data(), count);
        const Loss loss = [&] { return lane_dot(R, naive_gelu(U), V); };
        worst.backward(from_lanes<T>(out), fd_lanes(U, V, loss), bwd_tol<T>(), "dU");
      }
  worst.print("gelu");
}

// ---- attention weights -------------------------------------------------------------------------------

struct NaiveAttn {
  Vals A, P;
};
// Per column c of S (nk x C), per lane: linear A = S; softmax A = softmax_a(S r); mix A = s P + (1 - s) S.
// causal: the keys a > c are out (A = P = 0 there), the softmax over a <= c.
NaiveAttn naive_attention_weights(AttnKind kind, bool causal, double r, double s, const Vals& S, int nk, int C, int V) {
  NaiveAttn out{Vals(S.size(), 0.0), Vals(S.size(), 0.0)};
  for (int c = 0; c < C; ++c)
    for (int v = 0; v < V; ++v) {
      const int keys = causal ? std::min(c + 1, nk) : nk;
      double m = -std::numeric_limits<double>::infinity(), sum = 0.0;
      for (int a = 0; a < keys; ++a) m = std::max(m, S[(a * C + c) * V + v] * r);
      for (int a = 0; a < keys; ++a) sum += std::exp(S[(a * C + c) * V + v] * r - m);
      for (int a = 0; a < keys; ++a) {
        const int i = (a * C + c) * V + v;
        out.P[i] = kind == AttnKind::linear ? 0.0 : std::exp(S[i] * r - m) / sum;
        out.A[i] = kind == AttnKind::linear ? S[i] : kind == AttnKind::softmax ? out.P[i] : s * out.P[i] + (1.0 - s) * S[i];
      }
    }
  return out;
}

template <class T>
void check_attention_weights(AttnKind kind, bool causal, int nk, int C, double scale, bool alias, uint64_t seed,
                             Worst<T>& worst) {
  constexpr int V = kLanes<T>;
  SCOPED_TRACE(::testing::Message() << "attention weights kind " << static_cast<int>(kind) << " causal " << causal
                                    << " nk " << nk << " C " << C << " scale " << scale << " dS aliases dA " << alias);
  const int key = 3;
  const double r = static_cast<double>(static_cast<T>(1.0 / std::sqrt(static_cast<double>(key))));
  Vals y = {0.07};   // the mix parameter: s = sigmoid(10 y)
  const auto sig = [](double z) { return 1.0 / (1.0 + std::exp(-10.0 * z)); };
  Vals S = randn<T>(static_cast<size_t>(nk) * C * V, scale, seed);
  const Vals R = randn<T>(S.size(), 1.0, seed + 1);
  const T s_T = static_cast<T>(sig(y[0]));

  LaneMatrix<T> Sm(nk, C, C + 2, S), P(nk, C, C + 1, kJunk), A(nk, C, C + 3, kJunk);
  attention_weights_forward<T>(kind, causal, static_cast<T>(r), s_T, Sm.cm(), P.m(), A.m());
  const NaiveAttn want = naive_attention_weights(kind, causal, r, static_cast<double>(s_T), S, nk, C, V);
  worst.forward(A.get(), want.A, fwd_tol<T>(), "A");
  if (kind != AttnKind::linear) worst.forward(P.get(), want.P, fwd_tol<T>(), "Pm");
  EXPECT_TRUE(A.padding_intact());
  EXPECT_TRUE(P.padding_intact());
  for (const Lane<T>& z : A.buf)
    for (int v = 0; v < V; ++v) EXPECT_TRUE(std::isfinite(z[v]));

  if (scale > 10) return;   // saturated softmax: the forward's stability is the point
  LaneMatrix<T> dA(nk, C, C + 2, R), dS_sep(nk, C, C + 1, kJunk);
  LaneMatrix<T>& dS = alias ? dA : dS_sep;
  const Vals dy0 = randn<T>(V, 1.0, seed + 2);
  LaneVec<T> dy = to_lanes<T>(dy0);
  attention_weights_backward<T>(kind, causal, static_cast<T>(r), s_T, Sm.cm(), P.cm(), dA.cm(), dS.m(), dy.data());
  const Loss loss = [&] { return lane_dot(R, naive_attention_weights(kind, causal, r, sig(y[0]), S, nk, C, V).A, V); };
  worst.backward(dS.get(), fd_lanes(S, V, loss), bwd_tol<T>(), "dS");
  EXPECT_TRUE(dS.padding_intact());
  if (kind == AttnKind::mix)
    worst.backward(from_lanes<T>(dy), add(dy0, fd_shared(y, V, loss)), bwd_tol<T>(), "dy");
  else
    EXPECT_EQ(from_lanes<T>(dy), dy0) << "dy is the mix's only";
}

TYPED_TEST(Blocks, AttentionWeightsForwardAndBackward) {
  using T = TypeParam;
  Worst<T> worst;
  uint64_t seed = 4000;
  const int shapes[][2] = {{1, 1}, {4, 5}, {9, 8}, {17, 2}, {6, 6}};
  for (const AttnKind kind : {AttnKind::linear, AttnKind::softmax, AttnKind::mix})
    for (const bool causal : {false, true})
      for (const auto& sh : shapes)
        for (const double scale : {0.0, 1e-3, 1.0, 3.0, 300.0})
          for (const bool alias : {false, true})
            check_attention_weights<T>(kind, causal, sh[0], sh[1], scale, alias, seed += 10, worst);
  worst.print("attention weights");
}

// ---- head products -----------------------------------------------------------------------------------

// S (nk x C) = K^T Q,  K: k x nk, Q: k x C.
Vals naive_tn(const Vals& K, const Vals& Q, int k, int nk, int C, int V) {
  Vals S(static_cast<size_t>(nk) * C * V, 0.0);
  for (int a = 0; a < nk; ++a)
    for (int c = 0; c < C; ++c)
      for (int v = 0; v < V; ++v)
        for (int j = 0; j < k; ++j) S[(a * C + c) * V + v] += K[(j * nk + a) * V + v] * Q[(j * C + c) * V + v];
  return S;
}
// O (k x C) = V A,  V: k x nk, A: nk x C.
Vals naive_nn(const Vals& Vm, const Vals& A, int k, int nk, int C, int V) {
  Vals O(static_cast<size_t>(k) * C * V, 0.0);
  for (int j = 0; j < k; ++j)
    for (int c = 0; c < C; ++c)
      for (int v = 0; v < V; ++v)
        for (int a = 0; a < nk; ++a) O[(j * C + c) * V + v] += Vm[(j * nk + a) * V + v] * A[(a * C + c) * V + v];
  return O;
}

template <class T>
void check_products(int k, int nk, int C, double scale, uint64_t seed, Worst<T>& worst) {
  constexpr int V = kLanes<T>;
  SCOPED_TRACE(::testing::Message() << "products k " << k << " nk " << nk << " C " << C << " scale " << scale);
  Vals K = randn<T>(static_cast<size_t>(k) * nk * V, scale, seed);
  Vals Q = randn<T>(static_cast<size_t>(k) * C * V, 1.0, seed + 1);
  Vals A = randn<T>(static_cast<size_t>(nk) * C * V, scale, seed + 2), Vm = randn<T>(K.size(), 1.0, seed + 3);
  const Vals RS = randn<T>(A.size(), 1.0, seed + 4), RO = randn<T>(Q.size(), 1.0, seed + 5);

  // S = K^T Q and its backward: dK = Q dS^T, dQ = K dS.
  LaneMatrix<T> Km(k, nk, nk + 3, K), Qm(k, C, C + 1, Q), S(nk, C, C + 2, kJunk);
  matmul_tn_forward<T>(Km.cm(), Qm.cm(), S.m());
  worst.forward(S.get(), naive_tn(K, Q, k, nk, C, V), fwd_tol<T>(), "S");
  EXPECT_TRUE(S.padding_intact());
  LaneMatrix<T> dS(nk, C, C + 1, RS), dK(k, nk, nk + 2, kJunk), dQ(k, C, C + 3, kJunk);
  matmul_tn_backward<T>(Km.cm(), Qm.cm(), dS.cm(), dK.m(), dQ.m());
  const Loss loss_tn = [&] { return lane_dot(RS, naive_tn(K, Q, k, nk, C, V), V); };
  worst.backward(dK.get(), fd_lanes(K, V, loss_tn), bwd_tol<T>(), "dK");
  worst.backward(dQ.get(), fd_lanes(Q, V, loss_tn), bwd_tol<T>(), "dQ");
  EXPECT_TRUE(dK.padding_intact());
  EXPECT_TRUE(dQ.padding_intact());

  // O = V A and its backward: dV = dO A^T, dA = V^T dO.
  LaneMatrix<T> Vl(k, nk, nk + 1, Vm), Al(nk, C, C + 2, A), O(k, C, C + 3, kJunk);
  matmul_nn_forward<T>(Vl.cm(), Al.cm(), O.m());
  worst.forward(O.get(), naive_nn(Vm, A, k, nk, C, V), fwd_tol<T>(), "O");
  EXPECT_TRUE(O.padding_intact());
  LaneMatrix<T> dO(k, C, C + 2, RO), dV(k, nk, nk + 3, kJunk), dA(nk, C, C + 1, kJunk);
  matmul_nn_backward<T>(Vl.cm(), Al.cm(), dO.cm(), dV.m(), dA.m());
  const Loss loss_nn = [&] { return lane_dot(RO, naive_nn(Vm, A, k, nk, C, V), V); };
  worst.backward(dV.get(), fd_lanes(Vm, V, loss_nn), bwd_tol<T>(), "dV");
  worst.backward(dA.get(), fd_lanes(A, V, loss_nn), bwd_tol<T>(), "dA");
  EXPECT_TRUE(dV.padding_intact());
  EXPECT_TRUE(dA.padding_intact());
}

TYPED_TEST(Blocks, HeadProductsForwardAndBackward) {
  using T = TypeParam;
  Worst<T> worst;
  uint64_t seed = 5000;
  const int shapes[][3] = {{1, 1, 1}, {3, 4, 5}, {8, 9, 2}, {17, 4, 9}, {2, 16, 3}};
  for (const auto& sh : shapes)
    for (const double scale : {0.0, 1e-3, 1.0}) check_products<T>(sh[0], sh[1], sh[2], scale, seed += 10, worst);
  worst.print("head products");
}

// ---- clip --------------------------------------------------------------------------------------------

TYPED_TEST(Blocks, ClipForwardAndBackward) {
  using T = TypeParam;
  constexpr int V = kLanes<T>;
  Worst<T> worst;
  const double a = 0.75;
  uint64_t seed = 6000;
  for (const int count : {1, 7, 33})
    for (const double scale : {0.0, 1e-3, 1.0}) {
      SCOPED_TRACE(::testing::Message() << "clip count " << count << " scale " << scale);
      Vals X = randn<T>(static_cast<size_t>(count) * V, scale, seed += 10);
      for (double& z : X)   // keep the central differences off the kinks
        if (std::fabs(std::fabs(z) - a) < 1e-3) z = 0.5 * z;
      const Vals R = randn<T>(X.size(), 1.0, seed + 1);
      const auto naive = [&] {
        Vals Y = X;
        for (double& z : Y) z = std::min(a, std::max(-a, z));
        return Y;
      };
      LaneVec<T> y = to_lanes<T>(X);
      clip_forward<T>(y.data(), count, static_cast<T>(a));
      worst.forward(from_lanes<T>(y), naive(), fwd_tol<T>(), "Y");
      LaneVec<T> g = to_lanes<T>(R);
      clip_backward<T>(y.data(), g.data(), count, static_cast<T>(a));
      const Loss loss = [&] { return lane_dot(R, naive(), V); };
      worst.backward(from_lanes<T>(g), fd_lanes(X, V, loss), bwd_tol<T>(), "G");
    }
  // The documented contract at the bound itself: a clipped entry (|Y| = a) passes no gradient.
  LaneVec<T> y(1, Lane<T>{}), g(1, Lane<T>{} + T(1));
  for (int v = 0; v < V; ++v) y[0][v] = static_cast<T>(v % 3 == 0 ? a : v % 3 == 1 ? -a : 0.0);
  clip_backward<T>(y.data(), g.data(), 1, static_cast<T>(a));
  for (int v = 0; v < V; ++v) EXPECT_EQ(g[0][v], static_cast<T>(v % 3 == 2 ? 1.0 : 0.0)) << "lane " << v;
  worst.print("clip");
}

}  // namespace
}  // namespace icl
