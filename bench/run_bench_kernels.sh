#!/usr/bin/env bash
# The linear layer's products on one core beside this build's FP32 peak, in one run (issue 32, items 1-2):
# every register tile shape (bench_tiles) and the SIMD layers (bench_simd: ours, Highway, Eigen's packet
# layer, Eigen's GEMM per task) at D = 21, 33, 65.  ICL_MARCH=haswell (etc.) builds that instruction set
# (bench/prelude.sh).  Prints GFLOP/s and % of peak.
set -euo pipefail
source "$(dirname "$0")/prelude.sh"
echo "FP32 peak of core $core: $peak GFLOP/s"
pct() { awk -v peak="$peak" -F'gflops=' '/gflops=/ { split($2, g, " "); printf "%s  (%.0f%% of peak)\n", $0, 100 * g[1] / peak; next } { print }'; }
for D in 21 33 65; do
  echo "== D = $D: register tiles"
  pinned "$bld/bench/bench_tiles" "$D" 0.5 | pct
  if [ -x "$bld/bench/bench_simd" ]; then
    echo "== D = $D: SIMD layers"
    pinned "$bld/bench/bench_simd" "$D" 1 | pct
  else
    echo "== bench_simd not built (Highway missing: libhwy-dev)"
  fi
done
