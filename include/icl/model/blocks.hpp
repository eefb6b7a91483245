#pragma once
// The blocks of [VO23]'s transformer (its code: src/attn.py, src/transformer.py; docs/science.md
// section 2b) as `_forward` / `_backward` pairs over lanes (lane.hpp: one Lane<T> holds one entry for
// kLanes<T> tasks).  A matrix "R x C lanes, ld" is row-major with row stride ld >= C: entry (r, c) at
// [r * ld + c]; rows are features, columns are tokens (as the LSA kernels of model.cpp).  Weights are
// scalars shared by the lanes, stored as haiku's Linear stores them: W is in x out, row-major, and a
// dense layer computes y = W^T x + b per token.  Weight gradients accumulate, per lane, into lane
// buffers of the weights' shapes (the chunks of a batch add up; the lanes are summed once per step);
// activation gradients are written (`=`) or added (`+=`) as each function says.  No function allocates.
// The frozen naive reference of these blocks is transformer_ref.hpp.
#include "icl/base/lane.hpp"

namespace icl {

// A R x C lane matrix with row stride ld.
template <class L>
struct LaneMat {
  L* p;
  int rows, cols, ld;
  L& at(int r, int c) const { return p[r * ld + c]; }
  operator LaneMat<const L>() const { return {p, rows, cols, ld}; }
};
template <class T>
using Mat = LaneMat<Lane<T>>;
template <class T>
using CMat = LaneMat<const Lane<T>>;

// Dense layer over the columns:  Y (out x C) = W^T X + b,  X: in x C,  W: in x out,  b: out (nullptr: none).
template <class T>
void dense_forward(const T* W, const T* b, CMat<T> X, Mat<T> Y);
// dX (in x C) = W dY (kAccumulate: +=),  dW (in x out lanes) += X dY^T,  db (out lanes) += dY 1.
// dX.p == nullptr skips dX; db == nullptr skips db.
template <class T, bool kAccumulate>
void dense_backward(const T* W, CMat<T> X, CMat<T> dY, Mat<T> dX, Lane<T>* dW, Lane<T>* db);

// LayerNorm over the rows of each column (haiku's LayerNorm(axis=-1), eps = 1e-5):
//   mu = mean_r X(r, c),  rstd = (mean_r (X(r, c) - mu)^2 + eps)^(-1/2),  xhat = (X - mu) rstd,
//   Y(r, c) = g_r xhat(r, c) + b_r.   X, Y, xhat: E x C;  rstd: C lanes;  g, b: E.
template <class T>
void layernorm_forward(const T* g, const T* b, CMat<T> X, Mat<T> Y, Mat<T> xhat, Lane<T>* rstd);
// dX += (layer norm)^T dY;  dg (E lanes) += sum_c xhat dY,  db (E lanes) += sum_c dY.
template <class T>
void layernorm_backward(const T* g, CMat<T> xhat, const Lane<T>* rstd, CMat<T> dY, Mat<T> dX, Lane<T>* dg,
                        Lane<T>* db);

// GELU, tanh form (jax.nn.gelu's default): y = u/2 (1 + tanh(k (u + 0.044715 u^3))), k = sqrt(2/pi).
// U, Y: count lanes (contiguous).
template <class T>
void gelu_forward(const Lane<T>* U, Lane<T>* Y, int count);
// dU = gelu'(U) dY.
template <class T>
void gelu_backward(const Lane<T>* U, const Lane<T>* dY, Lane<T>* dU, int count);

// Attention weights of one head from its scores S (nk x C: S(a, t) = k_a . q_t, keys a < nk):
//   linear:  A = S
//   softmax: A = softmax_a(S / sqrt(key_size))     (per column t)
//   mix:     A = s softmax_a(S / sqrt(key_size)) + (1 - s) S,  s = sigmoid(10 y)   ([VO23] attn.py)
// Pm receives the softmax (softmax and mix; unused for linear).  causal: column t attends to the keys a <= t
// only, the others weigh 0 (A = 0 there, and the softmax runs over a <= t).
enum class AttnKind { linear, softmax, mix };
template <class T>
void attention_weights_forward(AttnKind kind, bool causal, T inv_sqrt_k, T s, CMat<T> S, Mat<T> Pm, Mat<T> A);
// dS = dA^T-chain of the above (dA, dS: nk x C; dS may alias dA; 0 at the masked keys); dy (lanes) += d/dy
// (mix only).
template <class T>
void attention_weights_backward(AttnKind kind, bool causal, T inv_sqrt_k, T s, CMat<T> S, CMat<T> Pm, CMat<T> dA,
                                Mat<T> dS, Lane<T>* dy);

// Products of one head: S = K^T Q  (K: k x nk, Q: k x C -> S: nk x C);  O = V A  (V: k x nk, A: nk x C -> O: k x C).
template <class T>
void matmul_tn_forward(CMat<T> K, CMat<T> Q, Mat<T> S);
// dK = Q dS^T (k x nk),  dQ = K dS (k x C).
template <class T>
void matmul_tn_backward(CMat<T> K, CMat<T> Q, CMat<T> dS, Mat<T> dK, Mat<T> dQ);
template <class T>
void matmul_nn_forward(CMat<T> V, CMat<T> A, Mat<T> O);
// dV = dO A^T (k x nk),  dA = V^T dO (nk x C).
template <class T>
void matmul_nn_backward(CMat<T> V, CMat<T> A, CMat<T> dO, Mat<T> dV, Mat<T> dA);

// Entrywise clip to [-a, a] ([VO23]'s `clip`), and its backward: G kept where the clipped output Y is
// strictly inside (-a, a), zeroed where it was clipped.
template <class T>
void clip_forward(Lane<T>* Y, int count, T a);
template <class T>
void clip_backward(const Lane<T>* Y, Lane<T>* G, int count, T a);

}  // namespace icl
