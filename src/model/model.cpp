// Batched forward/backward of the linear transformer (model.hpp).  Per layer, per task (one lane):
//
// Linear attention, with Pc_h = c P_h:
//   C    = Z M Z^T             (D x D, symmetric; sum over the n context columns)
//   CQ_h = C Q_h               (D x D)
//   K    = sum_h Pc_h CQ_h     (D x D)
//   Z'   = Z + K Z             (D x N)
// Backward, given G = dL/dZ':
//   dK    = G Z^T                                  <- Z' = Z + K Z
//   dZ    = G + K^T G
//   dPc_h = dK CQ_h^T,  dCQ_h = Pc_h^T dK          <- K = sum_h Pc_h CQ_h
//   dQ_h  = C^T dCQ_h,  dC  += dCQ_h Q_h^T         <- CQ_h = C Q_h
//   dz_j += (dC + dC^T) z_j   for context j < n    <- C = sum_{j<n} z_j z_j^T
//   dP_h  = c dPc_h (applied when the lanes are reduced)
// Cost per layer and task: (D(D+1)/2) n + 2 H D^3 + D^2 N multiply-adds forward,
// 2 D^2 N + 4 H D^3 + D^2 n backward.  What reads only the readout -yhat_L = Z_L[d, n] (training's backward, the
// losses, the query's gradient) has the last layer's forward compute K's row d (or all of K, where a gradient
// passes back through the layer) and that one entry of Z': (D(D+1)/2) n + H D^3 + H D^2 (or H D^3) + D
// (model.hpp, Next; the same bits).
//
// Softmax attention, per head (keys and values are the n context tokens):
//   R = Q_h Z,  S[a][j] = z_a^T R[:, j] (a < n),  A[:, j] = softmax_a S[:, j],  ZA = Z^ctx A,
//   Z' = Z + sum_h P_h ZA
// Backward: dZA = P^T G; dP += G ZA^T; dz_a += dZA A[a, :]^T; dA[a][j] = z_a^T dZA[:, j];
//   dS = A (dA - sum_b A[b] dA[b]); dz_a += R dS[a, :]^T; dR = Z^ctx dS; dQ += dR Z^T; dZ += Q^T dR.
//
// The linear kernels are instantiated for D = kMinFixedD..kMaxFixedD (2..16, lane_kernels.hpp) at compile time
// (so the D-loops unroll into registers); larger D go through the register-tiled, cache-blocked lane products
// of lane_product.hpp.
// Both accumulate every output in the naive order (test_lane_product checks the tiled products against the
// naive sums bit for bit), so the two paths give the same bits.  The
// softmax variant (a comparison, not the workhorse) is generic.
#include "icl/model/model.hpp"

#include <cmath>
#include <cstring>

#include "icl/base/check.hpp"
#include "icl/model/blocks.hpp"
#include "icl/model/lane_kernels.hpp"

namespace icl {
namespace {

// The linear kernels (lane_kernels.hpp): FixedD = D at compile time, or 0 (the tiled lane_product).

// Sizes of one layer: D = d+1 token rows, N = n+1 columns (n context tokens, then the query), H heads.
struct LayerDims {
  int D, N, n, H;
};

// One layer's weights, shared by the lanes: H x D x D scalars each.
template <class T>
struct LayerWeights {
  const T* Pc;   // c P_h
  const T* Q;    // Q_h
};

// What a linear layer's forward keeps for its backward (L = Lane<T> when written, const Lane<T> when read).
template <class L>
struct LinearSaved {
  L* C;    // D x D       C = Z M Z^T
  L* CQ;   // H x D x D   CQ_h = C Q_h
  L* K;    // D x D       K = sum_h Pc_h CQ_h
};

// A linear layer's backward: its outputs and its scratch.
template <class T>
struct LinearGrads {
  Lane<T>* dZ;    // D x N       dL/dZ, written; null: not computed
  Lane<T>* dPc;   // H x D x D   dL/dPc_h, added to (the chunks accumulate)
  Lane<T>* dQ;    // H x D x D   dL/dQ_h, added to
};
template <class T>
struct LinearScratch {
  Lane<T>* dK;    // D x D: dL/dK, then (dC + dC^T)
  Lane<T>* dCQ;   // D x D: dL/dCQ_h of the current head
  Lane<T>* dC;    // D x D: dL/dC
};

// What a linear layer's forward computes of K and Z' (the last layer's, for what follows it: model_forward).
enum class Outputs {
  all,             // K and Z' whole (model_backward reads K and every layer's output)
  readout_and_K,   // K whole, Z' at the readout alone: where a gradient passes back through the layer (its
                   // dZ = G + K^T G sums K's every row, +0 terms included, as the dense kernel does, so that
                   // a zero keeps the dense kernel's sign), for readout_residual and query_grad
  readout,         // K's readout row, Z' at the readout: what the readout and the last layer 0's params_backward read
};

// Z' = Z + K Z of the header, for Z (D x N lanes), or what `outputs` asks of it (K's other rows and Z's other
// entries are then left as they were); keeps C, CQ and K in `saved`.
template <class T, int FixedD>
void linear_forward(const LayerDims& dims, const LayerWeights<T>& w, const Lane<T>* Z, const LinearSaved<Lane<T>>& saved,
                    Outputs outputs, Lane<T>* Zout) {
  using L = Lane<T>;
  const int D = FixedD ? FixedD : dims.D, N = dims.N, n = dims.n, H = dims.H, DD = D * D;
  const T *const Pc = w.Pc, *const Q = w.Q;
  L *const C = saved.C, *const CQ = saved.CQ, *const K = saved.K;
  const bool row = outputs == Outputs::readout;
  // C = Z M Z^T = sum_{j<n} z_j z_j^T
  gram<FixedD>(D, N, n, Z, C);
  // K = sum_h Pc_h CQ_h,  CQ_h = C Q_h (the first head's sums start from +0: the bits of += on a zeroed K)
  if (row)
    for (int x = DD - D; x < DD; ++x) K[x] = L{};
  for (int h = 0; h < H; ++h) {
    matmul_rows<FixedD, false>(D, C, D, 1, Q + h * DD, CQ + h * DD);
    if (row) readout_row(D, Pc + h * DD, CQ + h * DD, K);
    else if (h == 0) matmul_rows<FixedD, false>(D, Pc, D, 1, CQ, K);
    else matmul_rows<FixedD, true>(D, Pc + h * DD, D, 1, CQ + h * DD, K);
  }
  // Z' = Z + K Z
  if (outputs == Outputs::all) apply_columns<FixedD, ProductInit::x>(D, N, N, K, D, 1, Z, Zout);
  else readout_entry(D, N, n, K, Z, Zout);
}

// Given G = dL/dZ' (D x N lanes) of the forward that saved `saved`: dPc, dQ accumulated, and dZ unless it is
// null (layer 0 in training: nothing reads the input's gradient, whose products dZ and dC are skipped).  With
// `readout`, G is zero but for G[D-1, n] (the last layer in training), and the products of dK's zero rows
// are left out (lane_kernels.hpp, readout_*): the same bits.
template <class T, int FixedD>
void linear_backward(const LayerDims& dims, const LayerWeights<T>& w, const Lane<T>* Z,
                     const LinearSaved<const Lane<T>>& saved, const Lane<T>* G, bool readout,
                     const LinearGrads<T>& grads, const LinearScratch<T>& scratch) {
  using L = Lane<T>;
  const int D = FixedD ? FixedD : dims.D, N = dims.N, n = dims.n, H = dims.H, DD = D * D;
  const T *const Pc = w.Pc, *const Q = w.Q;
  const L *const C = saved.C, *const CQ = saved.CQ, *const K = saved.K;
  L *const dZ = grads.dZ, *const dPc = grads.dPc, *const dQ = grads.dQ;
  L *const dK = scratch.dK, *const dCQ = scratch.dCQ, *const dC = scratch.dC;
  // dK = G Z^T                                      <- Z' = Z + K Z
  if (readout) readout_outer_sum(D, N, G, Z, dK);
  else outer_sum<FixedD>(D, N, G, Z, dK);
  // dZ = G + K^T G (with `readout`, its column n: the context columns are +0 here, and the last product below
  // writes them from +0)
  if (dZ && readout) readout_residual(D, N, n, K, G, dZ);
  else if (dZ) apply_columns<FixedD, ProductInit::x>(D, N, N, K, 1, D, G, dZ);
  if (dZ)
    for (int x = 0; x < DD; ++x) dC[x] = L{};
  for (int h = 0; h < H; ++h) {
    // dPc_h += dK CQ_h^T,  dCQ_h = Pc_h^T dK         <- K = sum_h Pc_h CQ_h
    if (readout) {
      readout_head(D, dK, CQ + h * DD, Pc + h * DD, dPc + h * DD, dCQ);
    } else {
      add_matmul_bt<FixedD>(D, dK, CQ + h * DD, dPc + h * DD);
      matmul_rows<FixedD, false>(D, Pc + h * DD, 1, D, dK, dCQ);
    }
    // dQ_h += C^T dCQ_h (C symmetric: C as stored),  dC += dCQ_h Q_h^T   <- CQ_h = C Q_h
    matmul_rows<FixedD, true>(D, C, D, 1, dCQ, dQ + h * DD);
    if (dZ) add_matmul_bt<FixedD>(D, dCQ, Q + h * DD, dC);
  }
  if (!dZ) return;
  // dz_j += (dC + dC^T) z_j, j < n                  <- C = sum_{j<n} z_j z_j^T   (dK is free again)
  L* const dC_sym = dK;
  for (int i = 0; i < D; ++i)
    for (int k = 0; k < D; ++k) dC_sym[i * D + k] = dC[i * D + k] + dC[k * D + i];
  if (readout) apply_columns<FixedD, ProductInit::zero>(D, N, n, dC_sym, D, 1, Z, dZ);
  else apply_columns<FixedD, ProductInit::out>(D, N, n, dC_sym, D, 1, Z, dZ);
}

template <class T>
using LinearForwardFn = void (*)(const LayerDims&, const LayerWeights<T>&, const Lane<T>*,
                                 const LinearSaved<Lane<T>>&, Outputs, Lane<T>*);
template <class T>
using LinearBackwardFn = void (*)(const LayerDims&, const LayerWeights<T>&, const Lane<T>*,
                                  const LinearSaved<const Lane<T>>&, const Lane<T>*, bool, const LinearGrads<T>&,
                                  const LinearScratch<T>&);

// The kernels for D (fixed for D in kMinFixedD..kMaxFixedD, else generic).
template <class T, int FixedD>
void pick_linear(int D, LinearForwardFn<T>* f, LinearBackwardFn<T>* b) {
  if constexpr (FixedD > kMaxFixedD) {
    *f = &linear_forward<T, 0>;
    *b = &linear_backward<T, 0>;
  } else if (D == FixedD) {
    *f = &linear_forward<T, FixedD>;
    *b = &linear_backward<T, FixedD>;
  } else {
    pick_linear<T, FixedD + 1>(D, f, b);
  }
}

template <class T>
void lane_softmax_columns(int n, int N, Lane<T>* S) {   // S: n x N, softmax over rows, per column
  for (int j = 0; j < N; ++j)
    for (int v = 0; v < kLanes<T>; ++v) {
      T mx = S[j][v];
      for (int a = 1; a < n; ++a) mx = std::max(mx, S[a * N + j][v]);
      T sum = 0;
      for (int a = 0; a < n; ++a) sum += (S[a * N + j][v] = std::exp(S[a * N + j][v] - mx));
      for (int a = 0; a < n; ++a) S[a * N + j][v] /= sum;
    }
}

// One softmax head, forward: adds P_h ZA into Zout; keeps R, A, ZA.
template <class T>
void softmax_head_forward(int D, int N, int n, const Lane<T>* Z, const T* P, const T* Q, Lane<T>* R,
                          Lane<T>* A, Lane<T>* ZA, Lane<T>* Zout) {
  using L = Lane<T>;
  for (int i = 0; i < D; ++i)
    for (int j = 0; j < N; ++j) {
      L acc{};
      for (int k = 0; k < D; ++k) acc += Q[i * D + k] * Z[k * N + j];
      R[i * N + j] = acc;
    }
  for (int a = 0; a < n; ++a)
    for (int j = 0; j < N; ++j) {
      L acc{};
      for (int k = 0; k < D; ++k) acc += Z[k * N + a] * R[k * N + j];
      A[a * N + j] = acc;
    }
  lane_softmax_columns<T>(n, N, A);
  for (int i = 0; i < D; ++i)
    for (int j = 0; j < N; ++j) {
      L acc{};
      for (int a = 0; a < n; ++a) acc += Z[i * N + a] * A[a * N + j];
      ZA[i * N + j] = acc;
    }
  for (int i = 0; i < D; ++i)
    for (int j = 0; j < N; ++j) {
      L acc = Zout[i * N + j];
      for (int m = 0; m < D; ++m) acc += P[i * D + m] * ZA[m * N + j];
      Zout[i * N + j] = acc;
    }
}

// One softmax head, backward: adds into dZ, dP, dQ.  Scratch: dZA (D x N), dS (n x N), dR (D x N).
template <class T>
void softmax_head_backward(int D, int N, int n, const Lane<T>* Z, const T* P, const T* Q, const Lane<T>* R,
                           const Lane<T>* A, const Lane<T>* ZA, const Lane<T>* G, Lane<T>* dZ, Lane<T>* dP,
                           Lane<T>* dQ, Lane<T>* dZA, Lane<T>* dS, Lane<T>* dR) {
  using L = Lane<T>;
  for (int m = 0; m < D; ++m)
    for (int j = 0; j < N; ++j) {
      L acc{};
      for (int i = 0; i < D; ++i) acc += P[i * D + m] * G[i * N + j];
      dZA[m * N + j] = acc;
    }
  for (int i = 0; i < D; ++i)
    for (int m = 0; m < D; ++m) {
      L acc = dP[i * D + m];
      for (int j = 0; j < N; ++j) acc += G[i * N + j] * ZA[m * N + j];
      dP[i * D + m] = acc;
    }
  for (int i = 0; i < D; ++i)
    for (int a = 0; a < n; ++a) {
      L acc = dZ[i * N + a];
      for (int j = 0; j < N; ++j) acc += dZA[i * N + j] * A[a * N + j];
      dZ[i * N + a] = acc;
    }
  for (int a = 0; a < n; ++a)
    for (int j = 0; j < N; ++j) {
      L acc{};
      for (int i = 0; i < D; ++i) acc += Z[i * N + a] * dZA[i * N + j];
      dS[a * N + j] = acc;   // dA for now
    }
  for (int j = 0; j < N; ++j) {
    L dot{};
    for (int a = 0; a < n; ++a) dot += A[a * N + j] * dS[a * N + j];
    for (int a = 0; a < n; ++a) dS[a * N + j] = A[a * N + j] * (dS[a * N + j] - dot);
  }
  for (int k = 0; k < D; ++k)
    for (int a = 0; a < n; ++a) {
      L acc = dZ[k * N + a];
      for (int j = 0; j < N; ++j) acc += R[k * N + j] * dS[a * N + j];
      dZ[k * N + a] = acc;
    }
  for (int k = 0; k < D; ++k)
    for (int j = 0; j < N; ++j) {
      L acc{};
      for (int a = 0; a < n; ++a) acc += Z[k * N + a] * dS[a * N + j];
      dR[k * N + j] = acc;
    }
  for (int i = 0; i < D; ++i)
    for (int k = 0; k < D; ++k) {
      L acc = dQ[i * D + k];
      for (int j = 0; j < N; ++j) acc += dR[i * N + j] * Z[k * N + j];
      dQ[i * D + k] = acc;
    }
  for (int k = 0; k < D; ++k)
    for (int j = 0; j < N; ++j) {
      L acc = dZ[k * N + j];
      for (int i = 0; i < D; ++i) acc += Q[i * D + k] * dR[i * N + j];
      dZ[k * N + j] = acc;
    }
}

}  // namespace

double attention_c(const Point& p, int n) {
  if (p.attention != Attention::linear) return 1.0;
  return (p.norm == Norm::inv_n ? 1.0 / n : 1.0) * (p.residual == Residual::inv_layers ? 1.0 / p.layers : 1.0);
}

ModelShape model_shape(const Point& p) {
  ModelShape s;
  s.d = p.d;
  s.n = p.n;
  s.layers = p.layers;
  s.heads = p.heads;
  s.attention = p.attention;
  s.c = attention_c(p, p.n);
  s.act_clip = p.act_clip;
  return s;
}

template <class T>
struct LaneModel<T>::Impl {
  using L = Lane<T>;
  int D, N, n, layers, H, DD, DN;
  T c;
  T act_clip;
  bool softmax;
  std::vector<T> Pc, Q;                    // layers x H x D x D
  const L* Z0 = nullptr;                   // D x N: the last forward's input, the caller's (not copied)
  Next next = Next::model_backward;        // what the last forward computed for (model_forward)
  bool whole = true;                       // ... and whether it computed everything (softmax layers always do)
  LaneVec<T> Zs;                           // layers x D x N: each layer's output
  LaneVec<T> C, CQ, K;                     // linear caches: layers x (D x D, H x D x D, D x D)
  LaneVec<T> R, A, ZA;                     // softmax caches: layers x H x (D x N, n x N, D x N)
  LaneVec<T> dP, dQ;                       // gradient accumulators, layers x H x D x D
  LaneVec<T> G, dZ;                        // dL/dZ at a layer's output, at its input: D x N
  LaneVec<T> dK, dCQ, dC, dZA, dS, dR;     // backward scratch (linear: D x D; softmax: D x N, n x N, D x N)
  LinearForwardFn<T> fwd = nullptr;
  LinearBackwardFn<T> bwd = nullptr;

  explicit Impl(const ModelShape& s)
      : D(s.d + 1), N(s.n + 1), n(s.n), layers(s.layers), H(s.heads), DD(D * D), DN(D * N),
        c(static_cast<T>(s.c)), act_clip(static_cast<T>(s.act_clip)), softmax(s.attention == Attention::softmax) {
    Pc.assign(static_cast<size_t>(layers) * H * DD, T(0));
    Q.assign(Pc.size(), T(0));
    Zs.assign(static_cast<size_t>(layers) * DN, L{});
    dP.assign(static_cast<size_t>(layers) * H * DD, L{});
    dQ.assign(dP.size(), L{});
    G.assign(DN, L{});
    dZ.assign(DN, L{});
    if (softmax) {
      R.assign(static_cast<size_t>(layers) * H * DN, L{});
      A.assign(static_cast<size_t>(layers) * H * n * N, L{});
      ZA.assign(R.size(), L{});
      dZA.assign(DN, L{});
      dS.assign(static_cast<size_t>(n) * N, L{});
      dR.assign(DN, L{});
    } else {
      C.assign(static_cast<size_t>(layers) * DD, L{});
      CQ.assign(static_cast<size_t>(layers) * H * DD, L{});
      K.assign(C.size(), L{});
      dK.assign(DD, L{});
      dCQ.assign(DD, L{});
      dC.assign(DD, L{});
      pick_linear<T, kMinFixedD>(D, &fwd, &bwd);
    }
  }

  // Layer l's slices: its weights; Z_l, the tokens entering it (l = layers: the output); its linear caches.
  LayerDims dims() const { return {D, N, n, H}; }
  size_t weights_at(int l) const { return static_cast<size_t>(l) * H * DD; }
  LayerWeights<T> weights(int l) const { return {Pc.data() + weights_at(l), Q.data() + weights_at(l)}; }
  const L* tokens(int l) const { return l == 0 ? Z0 : Zs.data() + static_cast<size_t>(l - 1) * DN; }
  L* output(int l) { return Zs.data() + static_cast<size_t>(l) * DN; }   // tokens(l + 1), written
  template <class X>   // X = L (the forward writes) or const L (the backward reads)
  LinearSaved<X> linear_saved(int l) {
    const size_t at = static_cast<size_t>(l) * DD;
    return {C.data() + at, CQ.data() + weights_at(l), K.data() + at};
  }
};

template <class T>
LaneModel<T>::LaneModel(const ModelShape& shape) : shape_(shape), impl_(std::make_unique<Impl>(shape)) {}
template <class T>
LaneModel<T>::~LaneModel() = default;

template <class T>
void LaneModel<T>::set_weights(const T* P, const T* Q) {
  Impl& m = *impl_;
  for (size_t x = 0; x < m.Pc.size(); ++x) {
    m.Pc[x] = m.c * P[x];
    m.Q[x] = Q[x];
  }
}

template <class T>
void LaneModel<T>::model_forward(const L* Z0, L* yhat, Next next) {
  Impl& m = *impl_;
  const int D = m.D, N = m.N, n = m.n, H = m.H;
  const LayerDims dims = m.dims();
  m.Z0 = Z0;
  m.next = next;
  m.whole = m.softmax || next == Next::model_backward;
  const int readout = (D - 1) * N + n;   // yhat = -Z_L[d, n]
  for (int l = 0; l < m.layers; ++l) {
    // The last linear layer computes what `next` reads of it.
    const Outputs outputs = m.softmax || l < m.layers - 1 || next == Next::model_backward ? Outputs::all
                            : next == Next::query_grad || (next == Next::params_backward && l > 0)
                                ? Outputs::readout_and_K
                                : Outputs::readout;
    const L* Z = m.tokens(l);
    L* Zout = m.output(l);
    const LayerWeights<T> w = m.weights(l);
    if (m.softmax) {
      std::memcpy(static_cast<void*>(Zout), Z, sizeof(L) * m.DN);
      for (int h = 0; h < H; ++h) {
        const size_t lh = static_cast<size_t>(l) * H + h;
        softmax_head_forward<T>(D, N, n, Z, w.Pc + h * m.DD, w.Q + h * m.DD, m.R.data() + lh * m.DN,
                                m.A.data() + lh * n * N, m.ZA.data() + lh * m.DN, Zout);
      }
    } else {
      m.fwd(dims, w, Z, m.template linear_saved<L>(l), outputs, Zout);
    }
    // A readout alone is clipped alone (clip_backward keeps G's +0 at the entries not computed).
    const bool all = outputs == Outputs::all;
    if (m.act_clip > 0) clip_forward<T>(all ? Zout : Zout + readout, all ? m.DN : 1, m.act_clip);
    yhat[l] = -Zout[readout];
  }
}

template <class T>
void LaneModel<T>::backward(const L& dyhat, bool input_grad) {
  Impl& m = *impl_;
  ICL_CHECK(m.whole || (!input_grad && m.next != Next::nothing));
  const int D = m.D, N = m.N, n = m.n, H = m.H;
  // G = dL/dZ_L = -dyhat at the readout, +0 elsewhere.  Training's readout layer reads G's row d and column n
  // alone (readout_outer_sum, readout_residual), unless a clip's mask reads all of it first.
  if (!input_grad && !m.softmax && !(m.act_clip > 0)) {
    for (int j = 0; j < N; ++j) m.G[(D - 1) * N + j] = L{};
    for (int i = 0; i < D; ++i) m.G[i * N + n] = L{};
  } else {
    for (auto& g : m.G) g = L{};
  }
  m.G[(D - 1) * N + n] = -dyhat;   // yhat = -Z_L[d, n]
  const LayerDims dims = m.dims();
  for (int l = m.layers - 1; l >= 0; --l) {
    const L* Z = m.tokens(l);
    const LayerWeights<T> w = m.weights(l);
    L* dPl = m.dP.data() + m.weights_at(l);
    L* dQl = m.dQ.data() + m.weights_at(l);
    if (m.act_clip > 0) clip_backward<T>(m.tokens(l + 1), m.G.data(), m.DN, m.act_clip);
    if (m.softmax) {
      std::memcpy(static_cast<void*>(m.dZ.data()), m.G.data(), sizeof(L) * m.DN);
      for (int h = 0; h < H; ++h) {
        const size_t lh = static_cast<size_t>(l) * H + h;
        softmax_head_backward<T>(D, N, n, Z, w.Pc + h * m.DD, w.Q + h * m.DD, m.R.data() + lh * m.DN,
                                 m.A.data() + lh * n * N, m.ZA.data() + lh * m.DN, m.G.data(), m.dZ.data(),
                                 dPl + h * m.DD, dQl + h * m.DD, m.dZA.data(), m.dS.data(), m.dR.data());
      }
    } else {
      L* const dZ = l > 0 || input_grad ? m.dZ.data() : nullptr;
      const bool readout = l == m.layers - 1 && !input_grad;   // G = -dyhat e_d e_n^T, the clip kept it so
      m.bwd(dims, w, Z, m.template linear_saved<const L>(l), m.G.data(), readout, {dZ, dPl, dQl},
            {m.dK.data(), m.dCQ.data(), m.dC.data()});
    }
    m.G.swap(m.dZ);
  }
}

template <class T>
void LaneModel<T>::model_backward(const L& dyhat) { backward(dyhat, true); }

template <class T>
void LaneModel<T>::query_grad(const L& dyhat, L* g) {
  Impl& m = *impl_;
  const int D = m.D, N = m.N, n = m.n;
  ICL_CHECK(m.whole || m.next == Next::query_grad);
  if (m.softmax) {
    backward(dyhat, true);
    for (int i = 0; i + 1 < D; ++i) g[i] = m.G[i * N + n];
    return;
  }
  // Column n of backward's G, layer by layer: clip_backward's mask at that column (at the last layer G is
  // -dyhat at the readout, +0 elsewhere), then dZ = G + K^T G.
  L *g0 = m.dK.data(), *g1 = m.dCQ.data();
  for (int i = 0; i < D; ++i) g0[i] = L{};
  g0[D - 1] = -dyhat;
  for (int l = m.layers - 1; l >= 0; --l) {
    if (m.act_clip > 0)
      for (int i = l == m.layers - 1 ? D - 1 : 0; i < D; ++i)
        clip_backward<T>(m.tokens(l + 1) + i * N + n, g0 + i, 1, m.act_clip);
    column_residual(D, m.K.data() + static_cast<size_t>(l) * m.DD, g0, g1, 1);
    std::swap(g0, g1);
  }
  for (int i = 0; i + 1 < D; ++i) g[i] = g0[i];
}
template <class T>
void LaneModel<T>::params_backward(const L& dyhat) { backward(dyhat, false); }

template <class T>
const Lane<T>* LaneModel<T>::input_grad() const { return impl_->G.data(); }

template <class T>
const Lane<T>* LaneModel<T>::output() const {
  ICL_CHECK(impl_->whole);
  return impl_->tokens(impl_->layers);
}

template <class T>
void LaneModel<T>::zero_grad() {
  for (auto& x : impl_->dP) x = L{};
  for (auto& x : impl_->dQ) x = L{};
}

template <class T>
void LaneModel<T>::grad(double* dP, double* dQ) const {
  const Impl& m = *impl_;
  // Pc = c P, so dP = c dPc.  Softmax layers use c = 1.
  for (size_t x = 0; x < m.dP.size(); ++x) {
    dP[x] = static_cast<double>(m.c) * static_cast<double>(lane_sum<T>(m.dP[x]));
    dQ[x] = static_cast<double>(lane_sum<T>(m.dQ[x]));
  }
}

template class LaneModel<float>;
template class LaneModel<double>;

// The products of model_forward and model_backward above, per task, counted as multiply-adds: linear attention
// builds Gamma = Z_ctx Z_ctx^T once (symmetric, D(D+1)/2 n) and applies P and Q per head; softmax attention
// forms the n x N scores and their weighted sum per head, and its backward ~2x that.
double model_flops_per_task(const ModelShape& s) {
  const double D = s.d + 1, N = s.n + 1, n = s.n, H = s.heads;
  double per_layer;
  if (s.attention == Attention::linear) {
    per_layer = D * (D + 1) / 2 * n + 2 * H * D * D * D + D * D * N      // forward
                + 2 * D * D * N + 4 * H * D * D * D + D * D * n;          // backward
  } else {
    per_layer = H * (D * D * N + n * N * D + D * n * N + D * D * N) * 3;  // forward + ~2x backward
  }
  return 2.0 * per_layer * s.layers;
}

// The same as training computes them: model_forward with Next::params_backward, then params_backward.  The last
// layer's forward computes Z_L at the readout alone (D), and K's readout row alone (H D^2) at one layer.  A
// linear layer's backward computes dK = G Z^T, dPc, dCQ and dQ, and the input's gradient (dZ, dC and
// (dC + dC^T) z_j) at every layer but the first; at the last, G is zero but at the readout, and dK, dZ, dPc and
// dCQ shrink to a row, a column and two D x D sums of one term.
double model_train_flops_per_task(const ModelShape& s) {
  if (s.attention != Attention::linear) return model_flops_per_task(s);
  const double D = s.d + 1, N = s.n + 1, n = s.n, H = s.heads;
  const double gram_cq = D * (D + 1) / 2 * n + H * D * D * D;
  double total = 0.0;
  for (int l = 0; l < s.layers; ++l) {
    const bool last = l == s.layers - 1, input = l > 0;
    const double forward = gram_cq + (last && !input ? H * D * D : H * D * D * D) + (last ? D : D * D * N);
    total += forward + (last ? D * N : D * D * N)                      // dK = G Z^T
             + H * (last ? 2 * D * D : 2 * D * D * D) + H * D * D * D  // dPc, dCQ; dQ
             + (input ? (last ? D * D : D * D * N) + H * D * D * D + D * D * n : 0.0);   // dZ; dC; dC_sym z_j
  }
  return 2.0 * total;
}

}  // namespace icl
