#!/usr/bin/env bash
# The kernels of the other instruction sets a cluster has, built and checked on this machine (issue 32):
# the register-tiled products and fixed-size kernels (base/simd.hpp, model/lane_product.hpp,
# model/lane_kernels.hpp) compiled for -march=x86-64-v2 (SSE4.2, no FMA: 16 x 16-byte registers, tile 3 x 3)
# and -march=haswell (AVX2 + FMA: 16 x 32 bytes, tile 3 x 4), each build's test_lane_product run: every tile
# shape and row block bit for bit against the naive reference, with that instruction set's register parts.
# The native build runs the same test in the main suite.  x86-64 only (exit 77 elsewhere); a -march this CPU
# cannot run is skipped by name. One compile job at a time: it runs beside the rest of the suite (about 4 core-minutes).
# Usage: test_isa.sh SOURCE_DIR
set -uo pipefail
src=$(cd "$1" && pwd)
[ "$(uname -m)" = x86_64 ] || { echo "skip: not x86-64"; exit 77; }
tmp=$(mktemp -d /tmp/icl-isa.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
flags=$(grep -m1 '^flags' /proc/cpuinfo)
fail=0 ran=0
for march in x86-64-v2 haswell; do
  if [ "$march" = haswell ] && ! { grep -qw avx2 <<<"$flags" && grep -qw fma <<<"$flags"; }; then
    echo "skip: this CPU cannot run -march=$march"
    continue
  fi
  b=$tmp/$march
  t0=$(date +%s)
  if ! cmake -S "$src" -B "$b" -DCMAKE_BUILD_TYPE=Release -DICL_NATIVE=OFF -DCMAKE_CXX_FLAGS="-march=$march" \
       -DICL_BUILD_BENCH=OFF >"$tmp/$march.log" 2>&1 ||
     ! cmake --build "$b" --target test_lane_product -j 1 >>"$tmp/$march.log" 2>&1; then
    tail -n 30 "$tmp/$march.log"
    echo "FAIL: -march=$march does not build"
    fail=1
    continue
  fi
  if "$b/tests/test_lane_product" >"$tmp/$march.out" 2>&1; then
    echo "ok: -march=$march: test_lane_product passed ($(( $(date +%s) - t0 )) s with the build)"
  else
    tail -n 30 "$tmp/$march.out"
    echo "FAIL: -march=$march: test_lane_product"
    fail=1
  fi
  ran=$((ran + 1))
done
[ "$fail" = 0 ] && echo "all instruction-set builds passed ($ran run)"
exit "$fail"
