// The transformer blocks of blocks.hpp.  Derivations, per task (one lane), columns c:
//   dense      Y = W^T X + b:            dX = W dY,  dW = X dY^T,  db = dY 1
//   LayerNorm  Y = g xhat + b:           dxhat = g dY;  dX = rstd (dxhat - mean_r dxhat - xhat mean_r(dxhat xhat))
//   GELU       y = u/2 (1 + th), th = tanh(k (u + a u^3)):  y' = (1 + th)/2 + u/2 (1 - th^2) k (1 + 3 a u^2)
//   softmax    P = softmax_a(S r):       dS = r P (dP - sum_a P dP)        (r = 1/sqrt(key_size))
//   mix        A = s P + (1 - s) S:      dS = s dS_softmax(dA) + (1 - s) dA,  dy = 10 s (1 - s) sum dA (P - S)
//   products   S = K^T Q: dK = Q dS^T, dQ = K dS;   O = V A: dV = dO A^T, dA = V^T dO
// The dense layers' and the heads' products are register-tiled lane products (lane_product.hpp; the
// weights enter as broadcast scalars).  Exp and tanh are Eigen's vectorised array functions at the lane width.
#include "icl/model/blocks.hpp"

#include <algorithm>

#include "icl/base/eigen.hpp"
#include "icl/model/lane_product.hpp"

namespace icl {
namespace {

template <class T>
using Arr = Eigen::Array<T, kLanes<T>, 1>;
template <class T>
Eigen::Map<Arr<T>> arr(Lane<T>& x) { return Eigen::Map<Arr<T>>(reinterpret_cast<T*>(&x)); }
template <class T>
Eigen::Map<const Arr<T>> arr(const Lane<T>& x) { return Eigen::Map<const Arr<T>>(reinterpret_cast<const T*>(&x)); }
template <class T>
Lane<T> splat(T x) { return Lane<T>{} + x; }
// Lanes as kLaneParts registers each (base/simd.hpp), for element-wise loops: the lanes' bits, computed in
// registers (GCC keeps a 64-byte vector in memory where the target's registers are narrower).
template <class T>
Register<T>* registers(Lane<T>* x) { return reinterpret_cast<Register<T>*>(x); }
template <class T>
const Register<T>* registers(const Lane<T>* x) { return reinterpret_cast<const Register<T>*>(x); }

}  // namespace

// The products below are lane products (lane_product.hpp): register tiles at this instruction set's width,
// each output accumulated from its init over its sum's index in increasing order, as naive loops would.
template <class T>
void dense_forward(const T* W, const T* b, CMat<T> X, Mat<T> Y) {   // Y(o, c) = b_o + sum_i W(i, o) X(i, c)
  if (b)
    for (int o = 0; o < Y.rows; ++o)
      for (int c = 0; c < X.cols; ++c) Y.at(o, c) = splat<T>(b[o]);
  lane_product(LaneProduct<T, Lane<T>, Lane<T>>{Y.rows, X.cols, X.rows, W, 1, Y.rows, X.p, X.ld, 1, Y.p, Y.ld,
                                                b ? ProductInit::out : ProductInit::zero});
}

template <class T, bool kAccumulate>
void dense_backward(const T* W, CMat<T> X, CMat<T> dY, Mat<T> dX, Lane<T>* dW, Lane<T>* db) {
  const int in = X.rows, out = dY.rows, C = dY.cols;
  if (dX.p)   // dX(i, c) (+)= sum_o W(i, o) dY(o, c)
    lane_product(LaneProduct<T, Lane<T>, Lane<T>>{in, C, out, W, out, 1, dY.p, dY.ld, 1, dX.p, dX.ld,
                                                  kAccumulate ? ProductInit::out : ProductInit::zero});
  // dW(i, o) += sum_c X(i, c) dY(o, c)
  lane_product(LaneProduct<Lane<T>, Lane<T>, Lane<T>>{in, out, C, X.p, X.ld, 1, dY.p, 1, dY.ld, dW, out,
                                                      ProductInit::out});
  if (db)
    for (int o = 0; o < out; ++o)
      for (int c = 0; c < C; ++c) db[o] += dY.at(o, c);
}

template <class T>
void layernorm_forward(const T* g, const T* b, CMat<T> X, Mat<T> Y, Mat<T> xhat, Lane<T>* rstd) {
  using L = Lane<T>;
  const int E = X.rows;
  const T inv_E = T(1) / static_cast<T>(E);
  for (int c = 0; c < X.cols; ++c) {
    L mu{};
    for (int r = 0; r < E; ++r) mu += X.at(r, c);
    mu *= inv_E;
    L var{};
    for (int r = 0; r < E; ++r) {
      const L z = X.at(r, c) - mu;
      var += z * z;
    }
    L rs = var * inv_E + T(1e-5);
    // Correctly rounded, not Eigen's rsqrt: on x86 it refines the CPU's estimate (rsqrtps, vrsqrt14ps), whose
    // bits the instruction set does not fix, so that one build could give two results on two vendors' cores.
    for (int v = 0; v < kLanes<T>; ++v) rs[v] = T(1) / std::sqrt(rs[v]);
    rstd[c] = rs;
    for (int r = 0; r < E; ++r) {
      const L xh = (X.at(r, c) - mu) * rs;
      xhat.at(r, c) = xh;
      Y.at(r, c) = g[r] * xh + b[r];
    }
  }
}

template <class T>
void layernorm_backward(const T* g, CMat<T> xhat, const Lane<T>* rstd, CMat<T> dY, Mat<T> dX, Lane<T>* dg,
                        Lane<T>* db) {
  using L = Lane<T>;
  const int E = xhat.rows;
  const T inv_E = T(1) / static_cast<T>(E);
  for (int c = 0; c < xhat.cols; ++c) {
    L m1{}, m2{};
    for (int r = 0; r < E; ++r) {
      const L dy = dY.at(r, c), xh = xhat.at(r, c);
      dg[r] += xh * dy;
      db[r] += dy;
      const L dxh = g[r] * dy;
      m1 += dxh;
      m2 += dxh * xh;
    }
    m1 *= inv_E;
    m2 *= inv_E;
    for (int r = 0; r < E; ++r) {
      const L xh = xhat.at(r, c);
      dX.at(r, c) += rstd[c] * (g[r] * dY.at(r, c) - m1 - xh * m2);
    }
  }
}

template <class T>
void gelu_forward(const Lane<T>* U, Lane<T>* Y, int count) {
  const T k = T(0.7978845608028654), a = T(0.044715);
  for (int x = 0; x < count; ++x) {
    const Lane<T> u = U[x];
    Lane<T> th = k * (u + a * u * u * u);
    arr<T>(th) = arr<T>(th).tanh();
    Y[x] = T(0.5) * u * (T(1) + th);
  }
}

template <class T>
void gelu_backward(const Lane<T>* U, const Lane<T>* dY, Lane<T>* dU, int count) {
  const T k = T(0.7978845608028654), a = T(0.044715);
  for (int x = 0; x < count; ++x) {
    const Lane<T> u = U[x], u2 = u * u;
    Lane<T> th = k * (u + a * u2 * u);
    arr<T>(th) = arr<T>(th).tanh();
    const Lane<T> d = T(0.5) * (T(1) + th) + T(0.5) * u * (T(1) - th * th) * k * (T(1) + T(3) * a * u2);
    dU[x] = d * dY[x];
  }
}

template <class T>
void attention_weights_forward(AttnKind kind, bool causal, T inv_sqrt_k, T s, CMat<T> S, Mat<T> Pm, Mat<T> A) {
  using L = Lane<T>;
  const auto keys = [&](int c) { return causal ? std::min(c + 1, S.rows) : S.rows; };   // keys a < keys(c) attended
  if (kind == AttnKind::linear) {
    for (int a = 0; a < S.rows; ++a)
      for (int c = 0; c < S.cols; ++c) A.at(a, c) = a < keys(c) ? S.at(a, c) : L{};
    return;
  }
  for (int c = 0; c < S.cols; ++c) {
    const int nk = keys(c);
    for (int a = nk; a < S.rows; ++a) Pm.at(a, c) = A.at(a, c) = L{};
    L mx = S.at(0, c);
    for (int a = 1; a < nk; ++a) {
      const L v = S.at(a, c);
      mx = v > mx ? v : mx;
    }
    L sum{};
    for (int a = 0; a < nk; ++a) {
      L e = (S.at(a, c) - mx) * inv_sqrt_k;
      arr<T>(e) = arr<T>(e).exp();
      Pm.at(a, c) = e;
      sum += e;
    }
    const L inv = T(1) / sum;
    for (int a = 0; a < nk; ++a) {
      const L pr = Pm.at(a, c) * inv;
      Pm.at(a, c) = pr;
      A.at(a, c) = kind == AttnKind::softmax ? pr : s * pr + (T(1) - s) * S.at(a, c);
    }
  }
}

template <class T>
void attention_weights_backward(AttnKind kind, bool causal, T inv_sqrt_k, T s, CMat<T> S, CMat<T> Pm, CMat<T> dA,
                                Mat<T> dS, Lane<T>* dy) {
  using L = Lane<T>;
  const auto keys = [&](int c) { return causal ? std::min(c + 1, S.rows) : S.rows; };
  if (kind == AttnKind::linear) {
    for (int a = 0; a < S.rows; ++a)
      for (int c = 0; c < S.cols; ++c) dS.at(a, c) = a < keys(c) ? dA.at(a, c) : L{};
    return;
  }
  const T ws = kind == AttnKind::softmax ? T(1) : s;   // weight of the softmax part
  L dmix{};
  for (int c = 0; c < S.cols; ++c) {
    const int nk = keys(c);
    for (int a = nk; a < S.rows; ++a) dS.at(a, c) = L{};
    L dot{};
    for (int a = 0; a < nk; ++a) dot += Pm.at(a, c) * dA.at(a, c);
    for (int a = 0; a < nk; ++a) {
      const L da = dA.at(a, c), pr = Pm.at(a, c);
      if (kind == AttnKind::mix) dmix += da * (pr - S.at(a, c));
      const L ds = ws * inv_sqrt_k * pr * (da - dot);
      dS.at(a, c) = kind == AttnKind::mix ? ds + (T(1) - s) * da : ds;
    }
  }
  if (kind == AttnKind::mix) *dy += T(10) * s * (T(1) - s) * dmix;
}

template <class T>
void matmul_tn_forward(CMat<T> K, CMat<T> Q, Mat<T> S) {   // S(a, c) = sum_k K(k, a) Q(k, c)
  lane_product(LaneProduct<Lane<T>, Lane<T>, Lane<T>>{S.rows, S.cols, K.rows, K.p, 1, K.ld, Q.p, Q.ld, 1, S.p, S.ld});
}

template <class T>
void matmul_tn_backward(CMat<T> K, CMat<T> Q, CMat<T> dS, Mat<T> dK, Mat<T> dQ) {
  // dK(k, a) = sum_c Q(k, c) dS(a, c);  dQ(k, c) = sum_a K(k, a) dS(a, c)
  lane_product(LaneProduct<Lane<T>, Lane<T>, Lane<T>>{K.rows, dS.rows, dS.cols, Q.p, Q.ld, 1, dS.p, 1, dS.ld, dK.p,
                                                      dK.ld});
  lane_product(LaneProduct<Lane<T>, Lane<T>, Lane<T>>{K.rows, dS.cols, dS.rows, K.p, K.ld, 1, dS.p, dS.ld, 1, dQ.p,
                                                      dQ.ld});
}

template <class T>
void matmul_nn_forward(CMat<T> V, CMat<T> A, Mat<T> O) {   // O(k, c) = sum_a V(k, a) A(a, c)
  lane_product(LaneProduct<Lane<T>, Lane<T>, Lane<T>>{O.rows, O.cols, A.rows, V.p, V.ld, 1, A.p, A.ld, 1, O.p, O.ld});
}

template <class T>
void matmul_nn_backward(CMat<T> V, CMat<T> A, CMat<T> dO, Mat<T> dV, Mat<T> dA) {
  // dV(k, a) = sum_c dO(k, c) A(a, c);  dA(a, c) = sum_k V(k, a) dO(k, c)
  lane_product(LaneProduct<Lane<T>, Lane<T>, Lane<T>>{V.rows, A.rows, dO.cols, dO.p, dO.ld, 1, A.p, 1, A.ld, dV.p,
                                                      dV.ld});
  lane_product(LaneProduct<Lane<T>, Lane<T>, Lane<T>>{A.rows, dO.cols, V.rows, V.p, 1, V.ld, dO.p, dO.ld, 1, dA.p,
                                                      dA.ld});
}

template <class T>
void clip_forward(Lane<T>* Y, int count, T a) {
  using R = Register<T>;
  const R hi = R{} + a, lo = -hi;
  R* y = registers<T>(Y);
  for (int x = 0; x < count * kLaneParts; ++x) {
    R v = y[x];
    v = v > hi ? hi : v;
    y[x] = v < lo ? lo : v;
  }
}

template <class T>
void clip_backward(const Lane<T>* Y, Lane<T>* G, int count, T a) {
  using R = Register<T>;
  const R hi = R{} + a, lo = -hi;
  const R* y = registers<T>(Y);
  R* g = registers<T>(G);
  for (int x = 0; x < count * kLaneParts; ++x) g[x] = (y[x] < hi && y[x] > lo) ? g[x] : R{};
}

#define ICL_BLOCKS(T)                                                                                         \
  template void dense_forward<T>(const T*, const T*, CMat<T>, Mat<T>);                                        \
  template void dense_backward<T, false>(const T*, CMat<T>, CMat<T>, Mat<T>, Lane<T>*, Lane<T>*);             \
  template void dense_backward<T, true>(const T*, CMat<T>, CMat<T>, Mat<T>, Lane<T>*, Lane<T>*);              \
  template void layernorm_forward<T>(const T*, const T*, CMat<T>, Mat<T>, Mat<T>, Lane<T>*);                  \
  template void layernorm_backward<T>(const T*, CMat<T>, const Lane<T>*, CMat<T>, Mat<T>, Lane<T>*, Lane<T>*); \
  template void gelu_forward<T>(const Lane<T>*, Lane<T>*, int);                                               \
  template void gelu_backward<T>(const Lane<T>*, const Lane<T>*, Lane<T>*, int);                              \
  template void attention_weights_forward<T>(AttnKind, bool, T, T, CMat<T>, Mat<T>, Mat<T>);                  \
  template void attention_weights_backward<T>(AttnKind, bool, T, T, CMat<T>, CMat<T>, CMat<T>, Mat<T>, Lane<T>*); \
  template void matmul_tn_forward<T>(CMat<T>, CMat<T>, Mat<T>);                                               \
  template void matmul_tn_backward<T>(CMat<T>, CMat<T>, CMat<T>, Mat<T>, Mat<T>);                             \
  template void matmul_nn_forward<T>(CMat<T>, CMat<T>, Mat<T>);                                               \
  template void matmul_nn_backward<T>(CMat<T>, CMat<T>, CMat<T>, Mat<T>, Mat<T>);                             \
  template void clip_forward<T>(Lane<T>*, int, T);                                                            \
  template void clip_backward<T>(const Lane<T>*, Lane<T>*, int, T);
ICL_BLOCKS(float)
ICL_BLOCKS(double)
#undef ICL_BLOCKS

}  // namespace icl
