// The transformer blocks of blocks.hpp.  Derivations, per task (one lane), columns c:
//   dense      Y = W^T X + b:            dX = W dY,  dW = X dY^T,  db = dY 1
//   LayerNorm  Y = g xhat + b:           dxhat = g dY;  dX = rstd (dxhat - mean_r dxhat - xhat mean_r(dxhat xhat))
//   GELU       y = u/2 (1 + th), th = tanh(k (u + a u^3)):  y' = (1 + th)/2 + u/2 (1 - th^2) k (1 + 3 a u^2)
//   softmax    P = softmax_a(S r):       dS = r P (dP - sum_a P dP)        (r = 1/sqrt(key_size))
//   mix        A = s P + (1 - s) S:      dS = s dS_softmax(dA) + (1 - s) dA,  dy = 10 s (1 - s) sum dA (P - S)
//   products   S = K^T Q: dK = Q dS^T, dQ = K dS;   O = V A: dV = dO A^T, dA = V^T dO
// The dense kernels hold a tile of outputs in registers (kTile rows at a time; the weights enter as
// broadcast scalars), so each lane load feeds kTile FMAs.  Exp and tanh are Eigen's vectorised array
// functions at the lane width.
#include "icl/model/blocks.hpp"

#include "icl/base/eigen.hpp"

namespace icl {
namespace {

constexpr int kTile = 8;

template <class T>
using Arr = Eigen::Array<T, kLanes<T>, 1>;
template <class T>
Eigen::Map<Arr<T>> arr(Lane<T>& x) { return Eigen::Map<Arr<T>>(reinterpret_cast<T*>(&x)); }
template <class T>
Eigen::Map<const Arr<T>> arr(const Lane<T>& x) { return Eigen::Map<const Arr<T>>(reinterpret_cast<const T*>(&x)); }
template <class T>
Lane<T> splat(T x) { return Lane<T>{} + x; }

// Y rows o0 .. o0+K-1:  Y(o, c) = b_o + sum_i W(i, o) X(i, c).
template <int K, class T>
void dense_rows(const T* W, int out, const T* b, CMat<T> X, Mat<T> Y, int o0) {
  using L = Lane<T>;
  for (int c = 0; c < X.cols; ++c) {
    L acc[K];
#pragma GCC unroll 8
    for (int k = 0; k < K; ++k) acc[k] = splat<T>(b ? b[o0 + k] : T(0));
    for (int i = 0; i < X.rows; ++i) {
      const L x = X.at(i, c);
      const T* w = W + i * out + o0;
#pragma GCC unroll 8
      for (int k = 0; k < K; ++k) acc[k] += w[k] * x;
    }
#pragma GCC unroll 8
    for (int k = 0; k < K; ++k) Y.at(o0 + k, c) = acc[k];
  }
}

// dX rows i0 .. i0+K-1:  dX(i, c) (+)= sum_o W(i, o) dY(o, c).
template <int K, bool kAccumulate, class T>
void dense_dx_rows(const T* W, int out, CMat<T> dY, Mat<T> dX, int i0) {
  using L = Lane<T>;
  for (int c = 0; c < dY.cols; ++c) {
    L acc[K];
#pragma GCC unroll 8
    for (int k = 0; k < K; ++k) acc[k] = kAccumulate ? dX.at(i0 + k, c) : L{};
    for (int o = 0; o < out; ++o) {
      const L g = dY.at(o, c);
#pragma GCC unroll 8
      for (int k = 0; k < K; ++k) acc[k] += W[(i0 + k) * out + o] * g;
    }
#pragma GCC unroll 8
    for (int k = 0; k < K; ++k) dX.at(i0 + k, c) = acc[k];
  }
}

// dW(i, o0 .. o0+K-1) += sum_c X(i, c) dY(o, c).
template <int K, class T>
void dense_dw_cols(CMat<T> X, CMat<T> dY, int out, Lane<T>* dW, int i, int o0) {
  using L = Lane<T>;
  L acc[K];
#pragma GCC unroll 8
  for (int k = 0; k < K; ++k) acc[k] = dW[i * out + o0 + k];
  for (int c = 0; c < X.cols; ++c) {
    const L x = X.at(i, c);
#pragma GCC unroll 8
    for (int k = 0; k < K; ++k) acc[k] += x * dY.at(o0 + k, c);
  }
#pragma GCC unroll 8
  for (int k = 0; k < K; ++k) dW[i * out + o0 + k] = acc[k];
}

}  // namespace

template <class T>
void dense_forward(const T* W, const T* b, CMat<T> X, Mat<T> Y) {
  const int out = Y.rows;
  int o = 0;
  for (; o + kTile <= out; o += kTile) dense_rows<kTile>(W, out, b, X, Y, o);
  for (; o < out; ++o) dense_rows<1>(W, out, b, X, Y, o);
}

template <class T, bool kAccumulate>
void dense_backward(const T* W, CMat<T> X, CMat<T> dY, Mat<T> dX, Lane<T>* dW, Lane<T>* db) {
  const int in = X.rows, out = dY.rows;
  if (dX.p) {
    int i = 0;
    for (; i + kTile <= in; i += kTile) dense_dx_rows<kTile, kAccumulate>(W, out, dY, dX, i);
    for (; i < in; ++i) dense_dx_rows<1, kAccumulate>(W, out, dY, dX, i);
  }
  for (int i = 0; i < in; ++i) {
    int o = 0;
    for (; o + kTile <= out; o += kTile) dense_dw_cols<kTile, T>(X, dY, out, dW, i, o);
    for (; o < out; ++o) dense_dw_cols<1, T>(X, dY, out, dW, i, o);
  }
  if (db)
    for (int o = 0; o < out; ++o)
      for (int c = 0; c < dY.cols; ++c) db[o] += dY.at(o, c);
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
void attention_weights_forward(AttnKind kind, T inv_sqrt_k, T s, CMat<T> S, Mat<T> Pm, Mat<T> A) {
  using L = Lane<T>;
  const int nk = S.rows;
  if (kind == AttnKind::linear) {
    for (int a = 0; a < nk; ++a)
      for (int c = 0; c < S.cols; ++c) A.at(a, c) = S.at(a, c);
    return;
  }
  for (int c = 0; c < S.cols; ++c) {
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
void attention_weights_backward(AttnKind kind, T inv_sqrt_k, T s, CMat<T> S, CMat<T> Pm, CMat<T> dA, Mat<T> dS,
                                Lane<T>* dy) {
  using L = Lane<T>;
  const int nk = S.rows;
  if (kind == AttnKind::linear) {
    if (dS.p != dA.p)
      for (int a = 0; a < nk; ++a)
        for (int c = 0; c < S.cols; ++c) dS.at(a, c) = dA.at(a, c);
    return;
  }
  const T ws = kind == AttnKind::softmax ? T(1) : s;   // weight of the softmax part
  L dmix{};
  for (int c = 0; c < S.cols; ++c) {
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
void matmul_tn_forward(CMat<T> K, CMat<T> Q, Mat<T> S) {
  for (int a = 0; a < S.rows; ++a)
    for (int c = 0; c < S.cols; ++c) {
      Lane<T> acc{};
      for (int k = 0; k < K.rows; ++k) acc += K.at(k, a) * Q.at(k, c);
      S.at(a, c) = acc;
    }
}

template <class T>
void matmul_tn_backward(CMat<T> K, CMat<T> Q, CMat<T> dS, Mat<T> dK, Mat<T> dQ) {
  for (int k = 0; k < K.rows; ++k) {
    for (int a = 0; a < dS.rows; ++a) {
      Lane<T> acc = dK.at(k, a);
      for (int c = 0; c < dS.cols; ++c) acc += Q.at(k, c) * dS.at(a, c);
      dK.at(k, a) = acc;
    }
    for (int c = 0; c < dS.cols; ++c) {
      Lane<T> acc = dQ.at(k, c);
      for (int a = 0; a < dS.rows; ++a) acc += K.at(k, a) * dS.at(a, c);
      dQ.at(k, c) = acc;
    }
  }
}

template <class T>
void matmul_nn_forward(CMat<T> V, CMat<T> A, Mat<T> O) {
  for (int k = 0; k < O.rows; ++k)
    for (int c = 0; c < O.cols; ++c) {
      Lane<T> acc{};
      for (int a = 0; a < A.rows; ++a) acc += V.at(k, a) * A.at(a, c);
      O.at(k, c) = acc;
    }
}

template <class T>
void matmul_nn_backward(CMat<T> V, CMat<T> A, CMat<T> dO, Mat<T> dV, Mat<T> dA) {
  for (int k = 0; k < V.rows; ++k)
    for (int a = 0; a < A.rows; ++a) {
      Lane<T> acc = dV.at(k, a);
      for (int c = 0; c < dO.cols; ++c) acc += dO.at(k, c) * A.at(a, c);
      dV.at(k, a) = acc;
    }
  for (int a = 0; a < A.rows; ++a)
    for (int c = 0; c < dO.cols; ++c) {
      Lane<T> acc{};
      for (int k = 0; k < V.rows; ++k) acc += V.at(k, a) * dO.at(k, c);
      dA.at(a, c) = acc;
    }
}

template <class T>
void clip_forward(Lane<T>* Y, int count, T a) {
  const Lane<T> hi = splat<T>(a), lo = -hi;
  for (int x = 0; x < count; ++x) {
    Lane<T> v = Y[x];
    v = v > hi ? hi : v;
    Y[x] = v < lo ? lo : v;
  }
}

template <class T>
void clip_backward(const Lane<T>* Y, Lane<T>* G, int count, T a) {
  const Lane<T> hi = splat<T>(a), lo = -hi;
  for (int x = 0; x < count; ++x) G[x] = (Y[x] < hi && Y[x] > lo) ? G[x] : Lane<T>{};
}

#define ICL_BLOCKS(T)                                                                                         \
  template void dense_forward<T>(const T*, const T*, CMat<T>, Mat<T>);                                        \
  template void dense_backward<T, false>(const T*, CMat<T>, CMat<T>, Mat<T>, Lane<T>*, Lane<T>*);             \
  template void dense_backward<T, true>(const T*, CMat<T>, CMat<T>, Mat<T>, Lane<T>*, Lane<T>*);              \
  template void layernorm_forward<T>(const T*, const T*, CMat<T>, Mat<T>, Mat<T>, Lane<T>*);                  \
  template void layernorm_backward<T>(const T*, CMat<T>, const Lane<T>*, CMat<T>, Mat<T>, Lane<T>*, Lane<T>*); \
  template void gelu_forward<T>(const Lane<T>*, Lane<T>*, int);                                               \
  template void gelu_backward<T>(const Lane<T>*, const Lane<T>*, Lane<T>*, int);                              \
  template void attention_weights_forward<T>(AttnKind, T, T, CMat<T>, Mat<T>, Mat<T>);                        \
  template void attention_weights_backward<T>(AttnKind, T, T, CMat<T>, CMat<T>, CMat<T>, Mat<T>, Lane<T>*);   \
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
