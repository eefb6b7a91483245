#pragma once
// Products of lane matrices for large tokens, register-tiled and cache-blocked (the linear layer's kernels
// above the fixed sizes, model.cpp):
//   out(i, k) = init(i, k) + sum_{m < M} A(i, m) B(m, k),      i < I, k < K
//   A(i, m) = A[i * a_row + m * a_col],  B(m, k) = B[m * b_row + k * b_col]   (the strides give transposes)
//   out(i, k) = out[i * o_row + k];  init = 0, out itself, or X(i, k) = X[i * o_row + k] (a residual)
// A and B are lanes (one task per lane) or scalars (weights shared by the lanes), not both scalars.
//
// Every output is accumulated from its init in the order m = 0, 1, .., M-1, one multiply-add per term, so
// the result is bitwise that of the naive triple loop (lane_product_ref below, frozen) whatever the tiling.
// Tiling: an RI x RK tile of outputs lives in registers while m runs over a block of MC terms; the block's
// B panel (MC x RK) stays in L1 across the row tiles and A's block (I x MC) in L2.  Between m-blocks the
// partial sums are stored in `out` (exact: the same float), so blocking does not change the order either.
// Each tile runs once per register-wide part of the lanes (base/simd.hpp: 1 on AVX-512, 2 on AVX2, 4 on SSE
// and NEON), its entries registers of that part, the parts back to back while the tile's operands are in L1
// (a part is in the same cache lines as the others): element-wise, so the same bits.
#include <algorithm>

#include "icl/base/simd.hpp"

namespace icl {

enum class ProductInit { zero, out, x };

template <class TA, class TB, class L>
struct LaneProduct {
  int I, K, M;
  const TA* A;
  int a_row, a_col;
  const TB* B;
  int b_row, b_col;
  L* out;
  int o_row;
  ProductInit init = ProductInit::zero;
  const L* X = nullptr;   // ProductInit::x: out = X + A B
  bool upper = false;     // only the tiles that hold some k >= i (a symmetric result; the caller mirrors it)
};

// The frozen naive reference: the definition above, one output at a time.
template <class TA, class TB, class L>
void lane_product_ref(const LaneProduct<TA, TB, L>& p) {
  for (int i = 0; i < p.I; ++i)
    for (int k = p.upper ? i : 0; k < p.K; ++k) {
      L& o = p.out[i * p.o_row + k];
      L acc = p.init == ProductInit::zero ? L{} : p.init == ProductInit::out ? o : p.X[i * p.o_row + k];
      for (int m = 0; m < p.M; ++m) acc += p.A[i * p.a_row + m * p.a_col] * p.B[m * p.b_row + k * p.b_col];
      o = acc;
    }
}

// The register tile of this build's instruction set (base/simd.hpp): RI x RK accumulators, RI values of A
// and one of B, each a register of one part of the lanes.  Measured (bench/bench_tiles, docs/performance.md):
// 32 registers (AVX-512, NEON): 5 x 5, the best of 4x4 .. 7x4 and m-blocks 32 .. 128 on AVX-512
// (bench/run_bench_d.sh, D = 13 .. 129); 16 with FMA (AVX2): 4 x 3, 12 accumulators and A's 4 values (B's
// comes from memory in the multiply-add), 4-8% faster than 3 x 4 in whole training steps at D = 21 .. 129 and
// [VO23] Fig. 5 (2026-11-27), where bench_tiles had preferred 3 x 4; 16 without FMA (SSE, AVX): 3 x 3 (a
// product needs a register of its own), the best of 12 shapes 2x2 .. 6x4 on SSE4.2.
struct TileShape {
  int RI, RK;
};
constexpr TileShape tile_for(const VectorRegisters& r) {
  return r.count >= 32 ? TileShape{5, 5} : r.fma ? TileShape{4, 3} : TileShape{3, 3};
}
inline constexpr TileShape kTile = tile_for(kVectorRegisters);

namespace lane_product_detail {

constexpr int kMC = 64;   // terms per m-block

// The end of the m-block from m0: kMC terms, or all that are left when fewer than kMC / 4 would remain (a
// short last block would cost a pass over every output's partial sum for a few terms: at M = 129, one).
inline int m_block_end(int M, int m0) { return M - m0 < kMC + kMC / 4 ? M : m0 + kMC; }

// The operands of one part h of the lanes (base/simd.hpp): registers, or the weights' scalars.
template <class TA, class TB, class L>
struct Parts {
  const LaneProduct<TA, TB, L>& p;
  decltype(part(p.A, 0)) A;
  decltype(part(p.B, 0)) B;
  decltype(part(p.out, 0)) out;
  decltype(part(p.X, 0)) X;
  Parts(const LaneProduct<TA, TB, L>& q, int h)
      : p(q), A(part(q.A, h)), B(part(q.B, h)), out(part(q.out, h)), X(part(q.X ? q.X : q.out, h)) {}
};

// One RI x RK tile over terms m0..m1-1, from `init`.
template <int RI, int RK, class TA, class TB, class L>
inline void tile(const Parts<TA, TB, L>& v, int i0, int k0, int m0, int m1, ProductInit init) {
  using R = PartElement<decltype(v.out)>;
  using RA = PartElement<decltype(v.A)>;
  using RB = PartElement<decltype(v.B)>;
  const auto& p = v.p;
  R acc[RI][RK];
#pragma GCC unroll 8
  for (int r = 0; r < RI; ++r) {
    const int at = (i0 + r) * p.o_row + k0;
    const auto out = v.out + at;
    const auto X = v.X + at;
#pragma GCC unroll 8
    for (int c = 0; c < RK; ++c) acc[r][c] = init == ProductInit::zero ? R{} : init == ProductInit::out ? out[c] : X[c];
  }
  for (int m = m0; m < m1; ++m) {
    RA a[RI];
#pragma GCC unroll 8
    for (int r = 0; r < RI; ++r) a[r] = v.A[(i0 + r) * p.a_row + m * p.a_col];
#pragma GCC unroll 8
    for (int c = 0; c < RK; ++c) {
      const RB b = v.B[m * p.b_row + (k0 + c) * p.b_col];
#pragma GCC unroll 8
      for (int r = 0; r < RI; ++r) acc[r][c] += a[r] * b;
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < RI; ++r) {
    const auto to = v.out + ((i0 + r) * p.o_row + k0);
#pragma GCC unroll 8
    for (int c = 0; c < RK; ++c) to[c] = acc[r][c];
  }
}

// A tile of ri <= RI rows and rk <= RK columns (the edges), each size its own unrolled instance.
template <int RI, int RK, class TA, class TB, class L>
inline void edge_tile(int ri, int rk, const Parts<TA, TB, L>& v, int i0, int k0, int m0, int m1, ProductInit init) {
  if constexpr (RI > 1) {
    if (ri < RI) return edge_tile<RI - 1, RK>(ri, rk, v, i0, k0, m0, m1, init);
  }
  if constexpr (RK > 1) {
    if (rk < RK) return edge_tile<RI, RK - 1>(ri, rk, v, i0, k0, m0, m1, init);
  }
  tile<RI, RK>(v, i0, k0, m0, m1, init);
}

}  // namespace lane_product_detail

// RI x RK: the register tile (default: this build's, kTile); any shape gives the same bits.
template <int RI = kTile.RI, int RK = kTile.RK, class TA, class TB, class L>
void lane_product(const LaneProduct<TA, TB, L>& p) {
  using namespace lane_product_detail;
  int m0 = 0;
  do {
    const int m1 = m_block_end(p.M, m0);
    const ProductInit init = m0 == 0 ? p.init : ProductInit::out;
    for (int k0 = 0; k0 < p.K; k0 += RK) {
      const int rk = std::min(RK, p.K - k0);
      for (int i0 = 0; i0 < p.I; i0 += RI) {
        if (p.upper && i0 >= k0 + rk) break;   // every row below every column: strictly lower
        const int ri = std::min(RI, p.I - i0);
        for (int h = 0; h < kLaneParts; ++h) {
          const Parts<TA, TB, L> v(p, h);
          if (ri == RI && rk == RK)
            tile<RI, RK>(v, i0, k0, m0, m1, init);
          else
            edge_tile<RI, RK>(ri, rk, v, i0, k0, m0, m1, init);
        }
      }
    }
    m0 = m1;
  } while (m0 < p.M);
}

}  // namespace icl
