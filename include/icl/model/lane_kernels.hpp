#pragma once
// The linear layer's products (model.cpp) on lanes of D x D and D x N matrices, row-major.  FixedD is D
// known at compile time (kMinFixedD..kMaxFixedD below): the D-loops unroll and a block of up to KB registers
// (of P rows of outputs, or of P rows of one operand; P = 1 or 2, rows_at_once below) lives in registers.
// FixedD = 0 is D given at run time: the tiled lane_product.
//
// The kernels run once per register-wide part of the lanes (base/simd.hpp: one on AVX-512, two on AVX2, four
// on SSE and NEON), so a block holds KB registers: kRowBlock = 30 with 32 registers (AVX-512, NEON), 14 with
// 16 (AVX2, SSE).  Blocking and grouping never change an output's sum: each is accumulated over its terms in
// their order, a partial sum stored between blocks is the same float, so every KB and P gives the bits of
// the naive lane_product_ref (test_lane_product checks each kernel at several KB and P, the generic path
// included).
#include <type_traits>

#include "icl/base/simd.hpp"
#include "icl/model/lane_product.hpp"

namespace icl {

inline constexpr int kRowBlock = kVectorRegisters.count - 2;   // the block and two operands in registers

// The D that the linear model runs with fixed-size kernels (model.cpp), measured faster than the tiled products
// on the bench machine (D = 17 is not); other D take FixedD = 0.
inline constexpr int kMinFixedD = 2, kMaxFixedD = 16;

// The kernels are always inlined into the layer's forward and backward, as they were when they lived in
// model.cpp's unnamed namespace: without it GCC kept some of the unrolled D = 11 kernels as calls and a
// d = 10 step ran 4-5% slower (bench_train d:10, AVX-512).

// f(K0, KN) for the blocks [K0, K0 + KN) of [0, D) of at most KB, as compile-time constants, in order.
template <int D, int KB, int K0 = 0, class F>
__attribute__((always_inline)) inline void for_blocks(F&& f) {
  constexpr int KN = KB < D - K0 ? KB : D - K0;
  f(std::integral_constant<int, K0>{}, std::integral_constant<int, KN>{});
  if constexpr (K0 + KN < D) for_blocks<D, KB, K0 + KN>(f);
}

// f(i, P') for the groups [i, i + P') of P indices of [0, count), in order; a last group of fewer is P' < P.
template <int P, class F>
__attribute__((always_inline)) inline void for_groups(int count, F&& f) {
  int i = 0;
  for (; i + P <= count; i += P) f(i, std::integral_constant<int, P>{});
  if constexpr (P > 1) {
    if (i < count) for_groups<P - 1>(count - i, [&](int i1, auto p) __attribute__((always_inline)) { f(i + i1, p); });
  }
}

// The block of a kernel's D registers per row when P rows share KB registers.  KB counts the block's
// registers and all but one of the P operands' (KB - P + 1 shared by P rows: at most (KB - P + 1) / P, at
// least 1, per row); the fewest blocks of at most that many, split evenly.
constexpr int blocks_of(int D, int KB, int P) {
  const int most = (KB - P + 1) / P > 0 ? (KB - P + 1) / P : 1;
  return (D + most - 1) / most;
}
constexpr int block_size(int D, int KB, int P) { return (D + blocks_of(D, KB, P) - 1) / blocks_of(D, KB, P); }

// P, the rows (or columns) of outputs that share each value of the operand read in the innermost loop, when
// a kernel is given P = 0 (its default): 2 when that operand is a lane, held in a register (in_register) for
// its two multiply-adds, so one vector load serves two; 1 when it is a weight, whose broadcast from memory
// needs no register.  apply_columns takes 2 only when that needs no more blocks than 1 (each block is another
// pass over the output).  Measured on the kernels alone at D = 6, 11, 16 in the AVX-512 and AVX2 builds
// (docs/performance.md, "Two rows at a time"); any P gives the same bits.
template <class Shared>
constexpr int rows_at_once(int P) {
  return P > 0 ? P : std::is_arithmetic_v<Shared> ? 1 : 2;
}
constexpr int columns_at_once(int P, int D, int KB) {
  return P > 0 ? P : blocks_of(D, KB, 2) == blocks_of(D, KB, 1) ? 2 : 1;
}

// out = A B (kAccumulate = false) or out += A B (true), P output rows at a time (each value of B read once
// for the P rows):
//   out[i, :] (+)= sum_m A(i, m) B[m, :],   A(i, m) = A[i * a_row + m * a_col]
// (a_row = D, a_col = 1: A as stored; a_row = 1, a_col = D: its transpose).  out, B: D x D.
// A and B are lanes or scalars (the weights, shared by the lanes).
template <int FixedD, bool kAccumulate, int KB = kRowBlock, int P0 = 0, class TA, class TB, class L>
__attribute__((always_inline)) inline void matmul_rows(int D_, const TA* A, int a_row, int a_col, const TB* B, L* out) {
  if constexpr (FixedD == 0) {
    lane_product(LaneProduct<TA, TB, L>{D_, D_, D_, A, a_row, a_col, B, D_, 1, out, D_,
                                        kAccumulate ? ProductInit::out : ProductInit::zero});
  } else {
    constexpr int D = FixedD;
    constexpr int P = rows_at_once<TB>(P0);
    for (int h = 0; h < kLaneParts; ++h) {
      const auto Ah = part(A, h), Bh = part(B, h);
      const auto Oh = part(out, h);
      using R = PartElement<decltype(Oh)>;
      // outputs k0 .. k0 + kn - 1 of rows i .. i + rp - 1
      for_groups<P>(D, [&](int i, auto rp) __attribute__((always_inline)) {
        constexpr int RP = rp;
        for_blocks<D, block_size(D, KB, P)>([&](auto k0, auto kn) __attribute__((always_inline)) {
          constexpr int K0 = k0, KN = kn;
          R acc[RP][KN];
#pragma GCC unroll 16
          for (int r = 0; r < RP; ++r)
#pragma GCC unroll 16
            for (int k = 0; k < KN; ++k) acc[r][k] = kAccumulate ? Oh[(i + r) * D + K0 + k] : R{};
#pragma GCC unroll 16
          for (int m = 0; m < D; ++m) {
            PartElement<decltype(Ah)> a[RP];
#pragma GCC unroll 16
            for (int r = 0; r < RP; ++r) a[r] = Ah[(i + r) * a_row + m * a_col];
#pragma GCC unroll 16
            for (int k = 0; k < KN; ++k) {
              const auto b = RP > 1 ? in_register(Bh[m * D + K0 + k]) : Bh[m * D + K0 + k];
#pragma GCC unroll 16
              for (int r = 0; r < RP; ++r) acc[r][k] += a[r] * b;
            }
          }
#pragma GCC unroll 16
          for (int r = 0; r < RP; ++r)
#pragma GCC unroll 16
            for (int k = 0; k < KN; ++k) Oh[(i + r) * D + K0 + k] = acc[r][k];
        });
      });
    }
  }
}

// out += A B^T:  out[i, m] += sum_k A[i, k] B[m, k], a block of P rows of A held in registers (the terms k
// of a later block continue each sum where the earlier left it).  A, out: D x D lanes; B: lanes or scalars.
template <int FixedD, int KB = kRowBlock, int P0 = 0, class TB, class L>
__attribute__((always_inline)) inline void add_matmul_bt(int D_, const L* A, const TB* B, L* out) {
  if constexpr (FixedD == 0) {
    lane_product(LaneProduct<L, TB, L>{D_, D_, D_, A, D_, 1, B, 1, D_, out, D_, ProductInit::out});
  } else {
    constexpr int D = FixedD;
    constexpr int P = rows_at_once<TB>(P0);
    for (int h = 0; h < kLaneParts; ++h) {
      const auto Ah = part(A, h), Bh = part(B, h);
      const auto Oh = part(out, h);
      using R = PartElement<decltype(Oh)>;
      // terms k0 .. k0 + kn - 1 of rows i .. i + rp - 1
      for_groups<P>(D, [&](int i, auto rp) __attribute__((always_inline)) {
        constexpr int RP = rp;
        for_blocks<D, block_size(D, KB, P)>([&](auto k0, auto kn) __attribute__((always_inline)) {
          constexpr int K0 = k0, KN = kn;
          R a[RP][KN];
#pragma GCC unroll 16
          for (int r = 0; r < RP; ++r)
#pragma GCC unroll 16
            for (int k = 0; k < KN; ++k) a[r][k] = Ah[(i + r) * D + K0 + k];
#pragma GCC unroll 16
          for (int m = 0; m < D; ++m) {
            R acc[RP];
#pragma GCC unroll 16
            for (int r = 0; r < RP; ++r) acc[r] = Oh[(i + r) * D + m];
#pragma GCC unroll 16
            for (int k = 0; k < KN; ++k) {
              const auto b = RP > 1 ? in_register(Bh[m * D + K0 + k]) : Bh[m * D + K0 + k];
#pragma GCC unroll 16
              for (int r = 0; r < RP; ++r) acc[r] += a[r][k] * b;
            }
#pragma GCC unroll 16
            for (int r = 0; r < RP; ++r) Oh[(i + r) * D + m] = acc[r];
          }
        });
      });
    }
  }
}

// Columns j < cols of X (D x N lanes) through M (D x D lanes), a block of P columns held in registers (each
// value of M read once for the P columns), each sum started as lane_product's ProductInit says:
//   ProductInit::x:     out[:, j]  = X[:, j] + M X[:, j]
//   ProductInit::out:   out[:, j] += M X[:, j]
//   ProductInit::zero:  out[:, j]  = M X[:, j]   (from +0: the bits of += on an out of +0)
// M(i, k) = M[i * m_row + k * m_col] (m_row = D, m_col = 1: M as stored; 1, D: its transpose).  out and X
// must not overlap (a later block reads X after out is written).
template <int FixedD, ProductInit kInit, int KB = kRowBlock, int P0 = 0, class L>
__attribute__((always_inline)) inline void apply_columns(int D_, int N, int cols, const L* M, int m_row, int m_col,
                                                         const L* X, L* out) {
  if constexpr (FixedD == 0) {
    lane_product(LaneProduct<L, L, L>{D_, cols, D_, M, m_row, m_col, X, N, 1, out, N, kInit, X});
  } else {
    constexpr int D = FixedD;
    constexpr int P = columns_at_once(P0, D, KB);
    for (int h = 0; h < kLaneParts; ++h) {
      const auto Mh = part(M, h), Xh = part(X, h);
      const auto Oh = part(out, h);
      using R = PartElement<decltype(Oh)>;
      // terms k0 .. k0 + kn - 1 of columns j .. j + cp - 1
      for_groups<P>(cols, [&](int j, auto cp) __attribute__((always_inline)) {
        constexpr int CP = cp;
        for_blocks<D, block_size(D, KB, P)>([&](auto k0, auto kn) __attribute__((always_inline)) {
          constexpr int K0 = k0, KN = kn;
          R x[CP][KN];
#pragma GCC unroll 16
          for (int c = 0; c < CP; ++c)
#pragma GCC unroll 16
            for (int k = 0; k < KN; ++k) x[c][k] = Xh[(K0 + k) * N + j + c];
#pragma GCC unroll 16
          for (int i = 0; i < D; ++i) {
            R acc[CP];
#pragma GCC unroll 16
            for (int c = 0; c < CP; ++c)
              acc[c] = K0 > 0 || kInit == ProductInit::out ? Oh[i * N + j + c]
                       : kInit == ProductInit::x           ? Xh[i * N + j + c]
                                                           : R{};
#pragma GCC unroll 16
            for (int k = 0; k < KN; ++k) {
              const R m = CP > 1 ? in_register(Mh[i * m_row + (K0 + k) * m_col]) : Mh[i * m_row + (K0 + k) * m_col];
#pragma GCC unroll 16
              for (int c = 0; c < CP; ++c) acc[c] += m * x[c][k];
            }
#pragma GCC unroll 16
            for (int c = 0; c < CP; ++c) Oh[i * N + j + c] = acc[c];
          }
        });
      });
    }
  }
}

// C = sum_{j<n} X[:, j] X[:, j]^T for X (D x N lanes): the upper triangle, mirrored (C symmetric).  A block
// that straddles the diagonal computes its few lower entries too (the same bits: x_i x_k = x_k x_i); the
// mirror overwrites them.
template <int FixedD, int KB = kRowBlock, class L>
__attribute__((always_inline)) inline void gram(int D_, int N, int n, const L* X, L* C) {
  const int D = FixedD ? FixedD : D_;
  if constexpr (FixedD == 0) {
    lane_product(LaneProduct<L, L, L>{D, D, n, X, N, 1, X, 1, N, C, D, ProductInit::zero, nullptr, true});
  } else {
    for (int h = 0; h < kLaneParts; ++h) {
      const auto Xh = part(X, h);
      const auto Ch = part(C, h);
      using R = PartElement<decltype(Ch)>;
      if constexpr (KB >= FixedD) {   // the whole row in registers: only k >= i
#pragma GCC unroll 16
        for (int i = 0; i < D; ++i) {
          R acc[FixedD];
#pragma GCC unroll 16
          for (int k = i; k < D; ++k) acc[k] = R{};
          for (int j = 0; j < n; ++j) {
            const R xi = Xh[i * N + j];
#pragma GCC unroll 16
            for (int k = i; k < D; ++k) acc[k] += xi * Xh[k * N + j];
          }
#pragma GCC unroll 16
          for (int k = i; k < D; ++k) Ch[i * D + k] = acc[k];
        }
      } else {
        for (int i = 0; i < D; ++i)
          // outputs k0 .. k0 + kn - 1, the blocks not below i
          for_blocks<FixedD, KB>([&](auto k0, auto kn) __attribute__((always_inline)) {
            constexpr int K0 = k0, KN = kn;
            if (K0 + KN <= i) return;
            R acc[KN];
#pragma GCC unroll 16
            for (int k = 0; k < KN; ++k) acc[k] = R{};
            for (int j = 0; j < n; ++j) {
              const R xi = Xh[i * N + j];
#pragma GCC unroll 16
              for (int k = 0; k < KN; ++k) acc[k] += xi * Xh[(K0 + k) * N + j];
            }
#pragma GCC unroll 16
            for (int k = 0; k < KN; ++k) Ch[i * D + K0 + k] = acc[k];
          });
      }
    }
  }
  for (int i = 0; i < D; ++i)
    for (int k = i + 1; k < D; ++k) C[k * D + i] = C[i * D + k];
}

// out = A B^T over all N columns:  out[i, k] = sum_j A[i, j] B[k, j], P rows of out at a time.  A, B: D x N
// lanes; out: D x D.
template <int FixedD, int KB = kRowBlock, int P0 = 0, class L>
__attribute__((always_inline)) inline void outer_sum(int D_, int N, const L* A, const L* B, L* out) {
  if constexpr (FixedD == 0) {
    lane_product(LaneProduct<L, L, L>{D_, D_, N, A, N, 1, B, 1, N, out, D_});
  } else {
    constexpr int D = FixedD;
    constexpr int P = rows_at_once<L>(P0);
    for (int h = 0; h < kLaneParts; ++h) {
      const auto Ah = part(A, h), Bh = part(B, h);
      const auto Oh = part(out, h);
      using R = PartElement<decltype(Oh)>;
      // outputs k0 .. k0 + kn - 1 of rows i .. i + rp - 1
      for_groups<P>(D, [&](int i, auto rp) __attribute__((always_inline)) {
        constexpr int RP = rp;
        for_blocks<D, block_size(D, KB, P)>([&](auto k0, auto kn) __attribute__((always_inline)) {
          constexpr int K0 = k0, KN = kn;
          R acc[RP][KN];
#pragma GCC unroll 16
          for (int r = 0; r < RP; ++r)
#pragma GCC unroll 16
            for (int k = 0; k < KN; ++k) acc[r][k] = R{};
          for (int j = 0; j < N; ++j) {
            R a[RP];
#pragma GCC unroll 16
            for (int r = 0; r < RP; ++r) a[r] = Ah[(i + r) * N + j];
#pragma GCC unroll 16
            for (int k = 0; k < KN; ++k) {
              const R b = RP > 1 ? in_register(Bh[(K0 + k) * N + j]) : Bh[(K0 + k) * N + j];
#pragma GCC unroll 16
              for (int r = 0; r < RP; ++r) acc[r][k] += a[r] * b;
            }
          }
#pragma GCC unroll 16
          for (int r = 0; r < RP; ++r)
#pragma GCC unroll 16
            for (int k = 0; k < KN; ++k) Oh[(i + r) * D + K0 + k] = acc[r][k];
        });
      });
    }
  }
}

// The readout layer's forward, where nothing reads Z' but Z'[r, n], r = D - 1 (LaneModel::model_forward with
// Next::params_backward, Next::query_grad or Next::nothing): that one entry, and K's row r alone where no gradient
// passes back through the layer.  Each is the dense kernel's sum (matmul_rows into K, apply_columns' residual)
// over the same terms in the same order, so the readout has the dense forward's bits (tests/test_model.cpp,
// LeanForwardsAndParamsBackwardGiveTheWholePassesBits).

// The readout kernels' outputs are a row or a column of sums of D or N terms each: kChains of them are summed
// side by side (for_groups), so that the multiply-adds of one sum, each waiting on the one before, overlap with
// the others' instead of leaving the units idle (one sum at a time, readout_outer_sum, readout_head and
// column_residual took 4.1% of a d = 10 training step).  Each sum keeps its terms and their order.
inline constexpr int kChains = 8;

// out(c, start(c) + sum_{m < M} term(m, c)) for c < count, the sums of kChains outputs side by side, each in the
// order m = 0..M-1.  R: the register the sums are kept in.
template <class R, class Start, class Term, class Out>
__attribute__((always_inline)) inline void chained_sums(int count, int M, Start start, Term term, Out out) {
  for_groups<kChains>(count, [&](int k, auto kn) __attribute__((always_inline)) {
    constexpr int KN = kn;
    R acc[KN];
#pragma GCC unroll 16
    for (int c = 0; c < KN; ++c) acc[c] = start(k + c);
    for (int m = 0; m < M; ++m)
#pragma GCC unroll 16
      for (int c = 0; c < KN; ++c) acc[c] += term(m, k + c);
#pragma GCC unroll 16
    for (int c = 0; c < KN; ++c) out(k + c, acc[c]);
  });
}

// K[r, :] += Pc[r, :] CQ, as matmul_rows<kAccumulate = true> sums it.
template <class T, class L>
inline void readout_row(int D, const T* Pc, const L* CQ, L* K) {
  const int r = D - 1;
  for (int h = 0; h < kLaneParts; ++h) {
    const auto CQh = part(CQ, h);
    const auto Kh = part(K, h);
    using R = PartElement<decltype(Kh)>;
    chained_sums<R>(
        D, D, [&](int k) { return Kh[r * D + k]; }, [&](int m, int k) { return Pc[r * D + m] * CQh[m * D + k]; },
        [&](int k, R v) { Kh[r * D + k] = v; });
  }
}

// Z'[r, n] = Z[r, n] + K[r, :] Z[:, n], as apply_columns<ProductInit::x> sums it.
template <class L>
inline void readout_entry(int D, int N, int n, const L* K, const L* Z, L* Zout) {
  const int r = D - 1;
  for (int h = 0; h < kLaneParts; ++h) {
    const auto Kh = part(K, h), Zh = part(Z, h);
    const auto Oh = part(Zout, h);
    using R = PartElement<decltype(Oh)>;
    R acc = Zh[r * N + n];
    for (int k = 0; k < D; ++k) acc += Kh[r * D + k] * Zh[k * N + n];
    Oh[r * N + n] = acc;
  }
}

// The readout layer's backward, where G = dL/dZ' (D x N lanes) is zero but for G[r, n], r = D - 1 (the loss
// reads Z'[r, n] alone; LaneModel::params_backward): dK = G Z^T is row r alone, dZ = G + K^T G column n alone,
// and the sums of dPc_h += dK CQ_h^T and dCQ_h = Pc_h^T dK over dK's rows have one term.  Each entry written is
// the dense kernel's sum above (outer_sum, apply_columns, add_matmul_bt, matmul_rows) over the same terms in
// the same order, and an entry left alone is one the dense kernel adds only +0 products to (dPc's other rows,
// +0 from zero_grad on and so on either path).  So the bits are the dense kernels', zeros' signs included
// (tests/test_model.cpp, LeanForwardsAndParamsBackwardGiveTheWholePassesBits), for finite values: with an inf or NaN in
// the layer the dense kernels would spread NaN into the zero rows too, at a step training stops as diverged.

// dK = G Z^T, row r alone (the other rows, +0 in the dense product, are not written).  Like the kernels above,
// each runs once per register-wide part of the lanes.
template <class L>
inline void readout_outer_sum(int D, int N, const L* G, const L* Z, L* dK) {
  const int r = D - 1;
  for (int h = 0; h < kLaneParts; ++h) {
    const auto Gh = part(G, h), Zh = part(Z, h);
    const auto Oh = part(dK, h);
    using R = PartElement<decltype(Oh)>;
    chained_sums<R>(
        D, N, [](int) { return R{}; }, [&](int j, int k) { return Gh[r * N + j] * Zh[k * N + j]; },
        [&](int k, R v) { Oh[r * D + k] = v; });
  }
}

// dz = g + K^T g for one column g of G (D lanes, `stride` apart; out alike, not overlapping g): that column of
// apply_columns' dZ = G + K^T G, the same sums.
template <class L>
inline void column_residual(int D, const L* K, const L* g, L* out, int stride) {
  for (int h = 0; h < kLaneParts; ++h) {
    const auto Kh = part(K, h), gh = part(g, h);
    const auto Oh = part(out, h);
    using R = PartElement<decltype(Oh)>;
    chained_sums<R>(
        D, D, [&](int i) { return gh[i * stride]; }, [&](int m, int i) { return Kh[m * D + i] * gh[m * stride]; },
        [&](int i, R v) { Oh[i * stride] = v; });
  }
}

// dZ = G + K^T G: column n as apply_columns sums it.  The other columns, +0 in the dense kernel, are not
// written: the layer's backward writes them last, from +0 (apply_columns<ProductInit::zero>).
template <class L>
inline void readout_residual(int D, int N, int n, const L* K, const L* G, L* dZ) {
  column_residual(D, K, G + n, dZ + n, N);
}

// dPc += dK CQ^T (row r alone changes) and dCQ = Pc^T dK (one term a sum), from dK's row r.
template <class T, class L>
inline void readout_head(int D, const L* dK, const L* CQ, const T* Pc, L* dPc, L* dCQ) {
  const int r = D - 1;
  for (int h = 0; h < kLaneParts; ++h) {
    const auto dKh = part(dK, h), CQh = part(CQ, h);
    const auto dPch = part(dPc, h), dCQh = part(dCQ, h);
    using R = PartElement<decltype(dPch)>;
    chained_sums<R>(
        D, D, [&](int m) { return dPch[r * D + m]; }, [&](int k, int m) { return dKh[r * D + k] * CQh[m * D + k]; },
        [&](int m, R v) { dPch[r * D + m] = v; });
    for (int i = 0; i < D; ++i) {
      const T p = Pc[r * D + i];
      for (int k = 0; k < D; ++k) {
        R acc{};
        acc += p * dKh[r * D + k];
        dCQh[i * D + k] = acc;
      }
    }
  }
}

}  // namespace icl
