// The register tile of lane_product (model/lane_product.hpp) by measurement, for the instruction set this
// binary is built for (base/simd.hpp): every candidate shape RI x RK times the products a linear layer
// makes at token size D (C = Z Z^T, dK = G Z^T: D x D over N terms; Z' = Z + K Z: D x N over D terms),
// float lanes, single thread.  One line per shape, GFLOP/s (2 flops per multiply-add per float); the
// build's own choice (kTile) is marked.  bench/run_bench_kernels.sh prints it beside the FP32 peak.
//   bench_tiles [D=33] [seconds per shape=0.5]
//   bench_tiles --isa      the instruction set whose tiles this build uses (bench/prelude.sh)
//   bench_tiles --bits     the width of its vector registers in bits (bench/prelude.sh: the peak kernel's must match)
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "icl/base/simd.hpp"
#include "layer_products.hpp"

using namespace icl;

namespace {

template <int RI, int RK>
void time_shape(bench::Operands& o, double seconds) {
  const double g = bench::gflops([&] { bench::layer(o, [](const auto& p) { lane_product<RI, RK>(p); }); }, o.flops(),
                                 seconds);
  const bool chosen = RI == kTile.RI && RK == kTile.RK;
  std::printf("tile=%dx%d gflops=%.2f%s\n", RI, RK, g, chosen ? " (this build's kTile)" : "");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && std::strcmp(argv[1], "--isa") == 0) {
    std::printf("%s\n", kVectorRegisters.name);
    return 0;
  }
  if (argc > 1 && std::strcmp(argv[1], "--bits") == 0) {
    std::printf("%d\n", 8 * kVectorRegisters.bytes);
    return 0;
  }
  const int D = argc > 1 ? std::atoi(argv[1]) : 33;
  const double seconds = argc > 2 ? std::atof(argv[2]) : 0.5;
  bench::Operands o(D);
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
