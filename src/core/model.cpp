// Batched forward/backward of the linear transformer (model.hpp).  Per layer, per task (one lane):
//
// Linear attention, with Pc_h = c P_h:
//   C   = Z M Z^T              (D x D, symmetric; sum over the n context columns)
//   T_h = C Q_h                (D x D)
//   K   = sum_h Pc_h T_h       (D x D)
//   Z'  = Z + K Z              (D x N)
// Backward, given G = dL/dZ':
//   dK    = G Z^T                                  <- Z' = Z + K Z
//   dZ    = G + K^T G
//   dPc_h = dK T_h^T,   dT_h = Pc_h^T dK           <- K = sum_h Pc_h T_h
//   dQ_h  = C^T dT_h,   dC  += dT_h Q_h^T          <- T_h = C Q_h
//   dz_j += (dC + dC^T) z_j   for context j < n    <- C = sum_{j<n} z_j z_j^T
//   dP_h  = c dPc_h (applied when the lanes are reduced)
// Cost per layer and task: (D(D+1)/2) n + 2 H D^2 + D^2 N multiply-adds forward,
// 2 D^2 N + 4 H D^3 + D^2 n backward.
//
// Softmax attention, per head (keys and values are the n context tokens):
//   R = Q_h Z,  S[a][j] = z_a^T R[:, j] (a < n),  A[:, j] = softmax_a S[:, j],  Vv = Z^ctx A,
//   Z' = Z + sum_h P_h Vv
// Backward: dVv = P^T G; dP += G Vv^T; dz_a += dVv A[a, :]^T; dA[a][j] = z_a^T dVv[:, j];
//   dS = A (dA - sum_b A[b] dA[b]); dz_a += R dS[a, :]^T; dR = Z^ctx dS; dQ += dR Z^T; dZ += Q^T dR.
//
// The linear kernels are instantiated for D = 2..12 at compile time (so the D-loops unroll into
// registers) and once for any D; the softmax variant (a comparison, not the workhorse) is generic.
#include "icl/core/model.hpp"

#include <cmath>
#include <cstring>

#include "icl/core/check.hpp"

namespace icl {
namespace {

constexpr int kMaxD = 128;
constexpr int kMinFixedD = 2, kMaxFixedD = 12;

template <class T, int DC>
void linear_forward(int D_, int N, int n, int H, const Lane<T>* Z, const T* Pc, const T* Q, Lane<T>* C,
                    Lane<T>* Tt, Lane<T>* K, Lane<T>* Zout) {
  using L = Lane<T>;
  const int D = DC ? DC : D_;
  constexpr int DM = DC ? DC : kMaxD;
  // C = Z M Z^T
#pragma GCC unroll 16
  for (int i = 0; i < D; ++i) {
    L acc[DM];
#pragma GCC unroll 16
    for (int k = i; k < D; ++k) acc[k] = L{};
    for (int j = 0; j < n; ++j) {
      const L zi = Z[i * N + j];
#pragma GCC unroll 16
      for (int k = i; k < D; ++k) acc[k] += zi * Z[k * N + j];
    }
#pragma GCC unroll 16
    for (int k = i; k < D; ++k) C[i * D + k] = C[k * D + i] = acc[k];
  }
  // K = sum_h Pc_h (C Q_h)
  for (int x = 0; x < D * D; ++x) K[x] = L{};
  for (int h = 0; h < H; ++h) {
    const T* Qh = Q + h * D * D;
    const T* Ph = Pc + h * D * D;
    L* Th = Tt + h * D * D;
    for (int i = 0; i < D; ++i) {
      L acc[DM];
#pragma GCC unroll 16
      for (int k = 0; k < D; ++k) acc[k] = L{};
#pragma GCC unroll 16
      for (int m = 0; m < D; ++m) {
        const L cim = C[i * D + m];
#pragma GCC unroll 16
        for (int k = 0; k < D; ++k) acc[k] += cim * Qh[m * D + k];
      }
#pragma GCC unroll 16
      for (int k = 0; k < D; ++k) Th[i * D + k] = acc[k];
    }
    for (int i = 0; i < D; ++i) {
      L acc[DM];
#pragma GCC unroll 16
      for (int k = 0; k < D; ++k) acc[k] = K[i * D + k];
#pragma GCC unroll 16
      for (int m = 0; m < D; ++m) {
        const T p = Ph[i * D + m];
#pragma GCC unroll 16
        for (int k = 0; k < D; ++k) acc[k] += p * Th[m * D + k];
      }
#pragma GCC unroll 16
      for (int k = 0; k < D; ++k) K[i * D + k] = acc[k];
    }
  }
  // Z' = Z + K Z
  for (int j = 0; j < N; ++j) {
    L zc[DM];
#pragma GCC unroll 16
    for (int k = 0; k < D; ++k) zc[k] = Z[k * N + j];
#pragma GCC unroll 16
    for (int i = 0; i < D; ++i) {
      L acc = zc[i];
#pragma GCC unroll 16
      for (int k = 0; k < D; ++k) acc += K[i * D + k] * zc[k];
      Zout[i * N + j] = acc;
    }
  }
}

template <class T, int DC>
void linear_backward(int D_, int N, int n, int H, const Lane<T>* Z, const T* Pc, const T* Q,
                     const Lane<T>* C, const Lane<T>* Tt, const Lane<T>* K, const Lane<T>* G, Lane<T>* dZ,
                     Lane<T>* dPc, Lane<T>* dQ, Lane<T>* dK, Lane<T>* dT, Lane<T>* dC) {
  using L = Lane<T>;
  const int D = DC ? DC : D_;
  constexpr int DM = DC ? DC : kMaxD;
  // dK = G Z^T
  for (int i = 0; i < D; ++i) {
    L acc[DM];
#pragma GCC unroll 16
    for (int k = 0; k < D; ++k) acc[k] = L{};
    for (int j = 0; j < N; ++j) {
      const L g = G[i * N + j];
#pragma GCC unroll 16
      for (int k = 0; k < D; ++k) acc[k] += g * Z[k * N + j];
    }
#pragma GCC unroll 16
    for (int k = 0; k < D; ++k) dK[i * D + k] = acc[k];
  }
  // dZ = G + K^T G
  for (int j = 0; j < N; ++j) {
    L gc[DM];
#pragma GCC unroll 16
    for (int i = 0; i < D; ++i) gc[i] = G[i * N + j];
#pragma GCC unroll 16
    for (int k = 0; k < D; ++k) {
      L acc = gc[k];
#pragma GCC unroll 16
      for (int i = 0; i < D; ++i) acc += K[i * D + k] * gc[i];
      dZ[k * N + j] = acc;
    }
  }
  for (int x = 0; x < D * D; ++x) dC[x] = L{};
  for (int h = 0; h < H; ++h) {
    const T* Qh = Q + h * D * D;
    const T* Ph = Pc + h * D * D;
    const L* Th = Tt + h * D * D;
    L* dPh = dPc + h * D * D;
    L* dQh = dQ + h * D * D;
    // dPc_h += dK T_h^T
    for (int i = 0; i < D; ++i) {
      L dk[DM];
#pragma GCC unroll 16
      for (int k = 0; k < D; ++k) dk[k] = dK[i * D + k];
#pragma GCC unroll 16
      for (int m = 0; m < D; ++m) {
        L acc = dPh[i * D + m];
#pragma GCC unroll 16
        for (int k = 0; k < D; ++k) acc += dk[k] * Th[m * D + k];
        dPh[i * D + m] = acc;
      }
    }
    // dT_h = Pc_h^T dK
    for (int m = 0; m < D; ++m) {
      L acc[DM];
#pragma GCC unroll 16
      for (int k = 0; k < D; ++k) acc[k] = L{};
#pragma GCC unroll 16
      for (int i = 0; i < D; ++i) {
        const T p = Ph[i * D + m];
#pragma GCC unroll 16
        for (int k = 0; k < D; ++k) acc[k] += p * dK[i * D + k];
      }
#pragma GCC unroll 16
      for (int k = 0; k < D; ++k) dT[m * D + k] = acc[k];
    }
    // dQ_h += C^T dT_h  (C symmetric)
    for (int m = 0; m < D; ++m) {
      L acc[DM];
#pragma GCC unroll 16
      for (int k = 0; k < D; ++k) acc[k] = dQh[m * D + k];
#pragma GCC unroll 16
      for (int i = 0; i < D; ++i) {
        const L cim = C[m * D + i];
#pragma GCC unroll 16
        for (int k = 0; k < D; ++k) acc[k] += cim * dT[i * D + k];
      }
#pragma GCC unroll 16
      for (int k = 0; k < D; ++k) dQh[m * D + k] = acc[k];
    }
    // dC += dT_h Q_h^T
    for (int i = 0; i < D; ++i) {
      L dt[DM];
#pragma GCC unroll 16
      for (int k = 0; k < D; ++k) dt[k] = dT[i * D + k];
#pragma GCC unroll 16
      for (int m = 0; m < D; ++m) {
        L acc = dC[i * D + m];
#pragma GCC unroll 16
        for (int k = 0; k < D; ++k) acc += dt[k] * Qh[m * D + k];
        dC[i * D + m] = acc;
      }
    }
  }
  // dz_j += (dC + dC^T) z_j, j < n   (dK is free again: reuse it for the symmetrised dC)
  L* S = dK;
  for (int i = 0; i < D; ++i)
    for (int k = 0; k < D; ++k) S[i * D + k] = dC[i * D + k] + dC[k * D + i];
  for (int j = 0; j < n; ++j) {
    L zc[DM];
#pragma GCC unroll 16
    for (int k = 0; k < D; ++k) zc[k] = Z[k * N + j];
#pragma GCC unroll 16
    for (int i = 0; i < D; ++i) {
      L acc = dZ[i * N + j];
#pragma GCC unroll 16
      for (int k = 0; k < D; ++k) acc += S[i * D + k] * zc[k];
      dZ[i * N + j] = acc;
    }
  }
}

template <class T>
using LinearForwardFn = void (*)(int, int, int, int, const Lane<T>*, const T*, const T*, Lane<T>*, Lane<T>*,
                                 Lane<T>*, Lane<T>*);
template <class T>
using LinearBackwardFn = void (*)(int, int, int, int, const Lane<T>*, const T*, const T*, const Lane<T>*,
                                  const Lane<T>*, const Lane<T>*, const Lane<T>*, Lane<T>*, Lane<T>*, Lane<T>*,
                                  Lane<T>*, Lane<T>*, Lane<T>*);

template <class T, int DC>
void pick_linear(int D, LinearForwardFn<T>* f, LinearBackwardFn<T>* b) {
  if constexpr (DC > kMaxFixedD) {
    *f = &linear_forward<T, 0>;
    *b = &linear_backward<T, 0>;
  } else if (D == DC) {
    *f = &linear_forward<T, DC>;
    *b = &linear_backward<T, DC>;
  } else {
    pick_linear<T, DC + 1>(D, f, b);
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

// One softmax head, forward: adds P_h Vv into Zout; keeps R, A, Vv.
template <class T>
void softmax_head_forward(int D, int N, int n, const Lane<T>* Z, const T* P, const T* Q, Lane<T>* R,
                          Lane<T>* A, Lane<T>* Vv, Lane<T>* Zout) {
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
      Vv[i * N + j] = acc;
    }
  for (int i = 0; i < D; ++i)
    for (int j = 0; j < N; ++j) {
      L acc = Zout[i * N + j];
      for (int m = 0; m < D; ++m) acc += P[i * D + m] * Vv[m * N + j];
      Zout[i * N + j] = acc;
    }
}

// One softmax head, backward: adds into dZ, dP, dQ.  Scratch: dVv (D x N), dS (n x N), dR (D x N).
template <class T>
void softmax_head_backward(int D, int N, int n, const Lane<T>* Z, const T* P, const T* Q, const Lane<T>* R,
                           const Lane<T>* A, const Lane<T>* Vv, const Lane<T>* G, Lane<T>* dZ, Lane<T>* dP,
                           Lane<T>* dQ, Lane<T>* dVv, Lane<T>* dS, Lane<T>* dR) {
  using L = Lane<T>;
  for (int m = 0; m < D; ++m)
    for (int j = 0; j < N; ++j) {
      L acc{};
      for (int i = 0; i < D; ++i) acc += P[i * D + m] * G[i * N + j];
      dVv[m * N + j] = acc;
    }
  for (int i = 0; i < D; ++i)
    for (int m = 0; m < D; ++m) {
      L acc = dP[i * D + m];
      for (int j = 0; j < N; ++j) acc += G[i * N + j] * Vv[m * N + j];
      dP[i * D + m] = acc;
    }
  for (int i = 0; i < D; ++i)
    for (int a = 0; a < n; ++a) {
      L acc = dZ[i * N + a];
      for (int j = 0; j < N; ++j) acc += dVv[i * N + j] * A[a * N + j];
      dZ[i * N + a] = acc;
    }
  for (int a = 0; a < n; ++a)
    for (int j = 0; j < N; ++j) {
      L acc{};
      for (int i = 0; i < D; ++i) acc += Z[i * N + a] * dVv[i * N + j];
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

// Activation clip ([VO23]'s code): Z <- min(max(Z, -a), a) entrywise.  Z: count lanes.
template <class T>
void act_clip_forward(Lane<T>* Z, int count, T a) {
  const Lane<T> hi = Lane<T>{} + a, lo = -hi;
  for (int x = 0; x < count; ++x) {
    Lane<T> v = Z[x];
    v = v > hi ? hi : v;
    Z[x] = v < lo ? lo : v;
  }
}

// Its backward: G <- G where the clipped output is inside (-a, a), 0 where it was clipped.
template <class T>
void act_clip_backward(const Lane<T>* Z, Lane<T>* G, int count, T a) {
  const Lane<T> hi = Lane<T>{} + a, lo = -hi;
  for (int x = 0; x < count; ++x) G[x] = (Z[x] < hi && Z[x] > lo) ? G[x] : Lane<T>{};
}

}  // namespace

ModelShape model_shape(const Point& p) {
  ModelShape s;
  s.d = p.d;
  s.n = p.n;
  s.layers = p.layers;
  s.heads = p.heads;
  s.attention = p.attention;
  s.c = (p.attention == Attention::linear && p.norm == Norm::inv_n) ? 1.0 / p.n : 1.0;
  s.act_clip = p.act_clip;
  return s;
}

template <class T>
struct LaneModel<T>::Impl {
  using L = Lane<T>;
  int D, N, n, Ls, H, DD, DN;
  T c;
  T act_clip;
  bool softmax;
  std::vector<T> Pc, Q;                    // Ls x H x D x D
  LaneVec<T> Zs;                           // (Ls+1) x D x N: input of each layer, then the output
  LaneVec<T> C, Tt, K;                     // linear caches: Ls x D x D, Ls x H x D x D, Ls x D x D
  LaneVec<T> R, A, Vv;                     // softmax caches: Ls x H x (D x N, n x N, D x N)
  LaneVec<T> dP, dQ;                       // gradient accumulators, Ls x H x D x D
  LaneVec<T> G, dZ, dK, dT, dC, dVv, dS, dR;   // backward scratch
  LinearForwardFn<T> fwd = nullptr;
  LinearBackwardFn<T> bwd = nullptr;

  explicit Impl(const ModelShape& s)
      : D(s.d + 1), N(s.n + 1), n(s.n), Ls(s.layers), H(s.heads), DD(D * D), DN(D * N),
        c(static_cast<T>(s.c)), act_clip(static_cast<T>(s.act_clip)), softmax(s.attention == Attention::softmax) {
    ICL_CHECK(D <= kMaxD);
    Pc.assign(static_cast<size_t>(Ls) * H * DD, T(0));
    Q.assign(Pc.size(), T(0));
    Zs.assign(static_cast<size_t>(Ls + 1) * DN, L{});
    dP.assign(static_cast<size_t>(Ls) * H * DD, L{});
    dQ.assign(dP.size(), L{});
    G.assign(DN, L{});
    dZ.assign(DN, L{});
    if (softmax) {
      R.assign(static_cast<size_t>(Ls) * H * DN, L{});
      A.assign(static_cast<size_t>(Ls) * H * n * N, L{});
      Vv.assign(R.size(), L{});
      dVv.assign(DN, L{});
      dS.assign(static_cast<size_t>(n) * N, L{});
      dR.assign(DN, L{});
    } else {
      C.assign(static_cast<size_t>(Ls) * DD, L{});
      Tt.assign(static_cast<size_t>(Ls) * H * DD, L{});
      K.assign(C.size(), L{});
      dK.assign(DD, L{});
      dT.assign(DD, L{});
      dC.assign(DD, L{});
      pick_linear<T, kMinFixedD>(D, &fwd, &bwd);
    }
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
void LaneModel<T>::model_forward(const L* Z0, L* yhat) {
  Impl& m = *impl_;
  const int D = m.D, N = m.N, n = m.n, H = m.H;
  std::memcpy(static_cast<void*>(m.Zs.data()), Z0, sizeof(L) * m.DN);
  for (int l = 0; l < m.Ls; ++l) {
    const L* Z = m.Zs.data() + static_cast<size_t>(l) * m.DN;
    L* Zout = m.Zs.data() + static_cast<size_t>(l + 1) * m.DN;
    const T* Pl = m.Pc.data() + static_cast<size_t>(l) * H * m.DD;
    const T* Ql = m.Q.data() + static_cast<size_t>(l) * H * m.DD;
    if (m.softmax) {
      std::memcpy(static_cast<void*>(Zout), Z, sizeof(L) * m.DN);
      for (int h = 0; h < H; ++h) {
        const size_t lh = static_cast<size_t>(l) * H + h;
        softmax_head_forward<T>(D, N, n, Z, Pl + h * m.DD, Ql + h * m.DD, m.R.data() + lh * m.DN,
                                m.A.data() + lh * n * N, m.Vv.data() + lh * m.DN, Zout);
      }
    } else {
      m.fwd(D, N, n, H, Z, Pl, Ql, m.C.data() + static_cast<size_t>(l) * m.DD,
            m.Tt.data() + static_cast<size_t>(l) * H * m.DD, m.K.data() + static_cast<size_t>(l) * m.DD, Zout);
    }
    if (m.act_clip > 0) act_clip_forward<T>(Zout, m.DN, m.act_clip);
    yhat[l] = -Zout[(D - 1) * N + n];
  }
}

template <class T>
void LaneModel<T>::model_backward(const L& dyhat) {
  Impl& m = *impl_;
  const int D = m.D, N = m.N, n = m.n, H = m.H;
  for (auto& g : m.G) g = L{};
  m.G[(D - 1) * N + n] = -dyhat;   // yhat = -Z_L[d, n]
  for (int l = m.Ls - 1; l >= 0; --l) {
    const L* Z = m.Zs.data() + static_cast<size_t>(l) * m.DN;
    const T* Pl = m.Pc.data() + static_cast<size_t>(l) * H * m.DD;
    const T* Ql = m.Q.data() + static_cast<size_t>(l) * H * m.DD;
    L* dPl = m.dP.data() + static_cast<size_t>(l) * H * m.DD;
    L* dQl = m.dQ.data() + static_cast<size_t>(l) * H * m.DD;
    if (m.act_clip > 0) act_clip_backward<T>(Z + m.DN, m.G.data(), m.DN, m.act_clip);   // Z + DN: this layer's output
    if (m.softmax) {
      std::memcpy(static_cast<void*>(m.dZ.data()), m.G.data(), sizeof(L) * m.DN);
      for (int h = 0; h < H; ++h) {
        const size_t lh = static_cast<size_t>(l) * H + h;
        softmax_head_backward<T>(D, N, n, Z, Pl + h * m.DD, Ql + h * m.DD, m.R.data() + lh * m.DN,
                                 m.A.data() + lh * n * N, m.Vv.data() + lh * m.DN, m.G.data(), m.dZ.data(),
                                 dPl + h * m.DD, dQl + h * m.DD, m.dVv.data(), m.dS.data(), m.dR.data());
      }
    } else {
      m.bwd(D, N, n, H, Z, Pl, Ql, m.C.data() + static_cast<size_t>(l) * m.DD,
            m.Tt.data() + static_cast<size_t>(l) * H * m.DD, m.K.data() + static_cast<size_t>(l) * m.DD,
            m.G.data(), m.dZ.data(), dPl, dQl, m.dK.data(), m.dT.data(), m.dC.data());
    }
    m.G.swap(m.dZ);
  }
}

template <class T>
const Lane<T>* LaneModel<T>::input_grad() const { return impl_->G.data(); }

template <class T>
const Lane<T>* LaneModel<T>::output() const {
  return impl_->Zs.data() + static_cast<size_t>(impl_->Ls) * impl_->DN;
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

// The products of model_forward / model_backward above, per layer and task, counted as multiply-adds:
// linear attention builds Gamma = Z_ctx Z_ctx^T once (symmetric, D(D+1)/2 n) and applies P and Q per head;
// softmax attention forms the n x N scores and their weighted sum per head, and its backward ~2x that.
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

}  // namespace icl
