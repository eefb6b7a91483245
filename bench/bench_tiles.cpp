// The register tile of lane_product (model/lane_product.hpp) by measurement, for the instruction set this
// binary is built for (base/simd.hpp): every candidate shape RI x RK times the products a linear layer
// makes at token size D (C = Z Z^T, dK = G Z^T: D x D over N terms; Z' = Z + K Z: D x N over D terms),
// float lanes, single thread.  One line per shape, GFLOP/s (2 flops per multiply-add per float); the
// build's own choice (kTile) is marked.  bench/run_bench_kernels.sh prints it beside the FP32 peak.
//   bench_tiles [D=33] [seconds per shape=0.5]
//   bench_tiles --isa      the instruction set whose tiles this build uses (bench/prelude.sh)
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "icl/base/lane.hpp"
#include "icl/base/simd.hpp"
#include "icl/model/lane_product.hpp"

using namespace icl;
using L = Lane<float>;

namespace {

struct Operands {
  int D, N;
  LaneVec<float> Z, G, K, C, out;
};

template <int RI, int RK>
void step(Operands& o) {   // the three product kinds of one linear layer at size D
  const int D = o.D, N = o.N;
  lane_product<RI, RK>(LaneProduct<L, L, L>{D, D, N, o.Z.data(), N, 1, o.Z.data(), 1, N, o.C.data(), D,
                                             ProductInit::zero, nullptr, true});
  lane_product<RI, RK>(LaneProduct<L, L, L>{D, D, N, o.G.data(), N, 1, o.Z.data(), 1, N, o.K.data(), D});
  lane_product<RI, RK>(LaneProduct<L, L, L>{D, N, D, o.K.data(), D, 1, o.Z.data(), N, 1, o.out.data(), N,
                                             ProductInit::x, o.Z.data()});
}

template <int RI, int RK>
void time_shape(Operands& o, double seconds) {
  const double D = o.D, N = o.N;   // multiply-adds: the Gram's upper triangle, G Z^T, K Z
  const double flops_per_step = 2.0 * kLanes<float> * (D * (D + 1) / 2 * N + D * D * N + D * N * D);
  step<RI, RK>(o);   // warm
  long steps = 0;
  const auto t0 = std::chrono::steady_clock::now();
  double t = 0;
  while (t < seconds) {
    for (int r = 0; r < 8; ++r) step<RI, RK>(o);
    steps += 8;
    t = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  const bool chosen = RI == kTile.RI && RK == kTile.RK;
  std::printf("tile=%dx%d gflops=%.2f%s\n", RI, RK, flops_per_step * steps / t / 1e9,
              chosen ? " (this build's kTile)" : "");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && std::strcmp(argv[1], "--isa") == 0) {
    std::printf("%s\n", kVectorRegisters.name);
    return 0;
  }
  const int D = argc > 1 ? std::atoi(argv[1]) : 33;
  const double seconds = argc > 2 ? std::atof(argv[2]) : 0.5;
  Operands o{D, 2 * D - 1, {}, {}, {}, {}, {}};
  const size_t DN = static_cast<size_t>(D) * o.N;
  o.Z.assign(DN, L{});
  o.G.assign(DN, L{});
  o.out.assign(DN, L{});
  o.K.assign(static_cast<size_t>(D) * D, L{});
  o.C.assign(o.K.size(), L{});
  for (size_t x = 0; x < DN; ++x)
    for (int v = 0; v < kLanes<float>; ++v) {
      o.Z[x][v] = 0.01f * static_cast<float>((x * 7 + v) % 13) - 0.06f;
      o.G[x][v] = 0.01f * static_cast<float>((x * 5 + v) % 11) - 0.05f;
    }
  std::printf("instruction set %s (%d vector registers of %d bytes, %d per lane), D=%d N=%d\n", kVectorRegisters.name,
              kVectorRegisters.count, kVectorRegisters.bytes, kLaneParts, D, o.N);
  time_shape<2, 2>(o, seconds);
  time_shape<2, 3>(o, seconds);
  time_shape<3, 2>(o, seconds);
  time_shape<2, 4>(o, seconds);
  time_shape<4, 2>(o, seconds);
  time_shape<3, 3>(o, seconds);
  time_shape<3, 4>(o, seconds);
  time_shape<4, 3>(o, seconds);
  time_shape<4, 4>(o, seconds);
  time_shape<5, 4>(o, seconds);
  time_shape<5, 5>(o, seconds);
  time_shape<6, 4>(o, seconds);
  return 0;
}
