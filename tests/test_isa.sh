#!/usr/bin/env bash
# The numerics built for an instruction set a cluster has besides this machine's, and their unit tests run in
# that build (issue 32).  TARGET is one of
#   x86-64-v2  SSE4.2 without FMA: 16 registers of 16 bytes, tile 3 x 3, row block 14
#   haswell    AVX2 with FMA:      16 of 32 bytes, tile 4 x 3, row block 14
#   aarch64    NEON with FMA:      32 of 16 bytes, tile 5 x 5, row block 30; cross-built with Debian's
#              g++-aarch64-linux-gnu (cmake/aarch64-linux-gnu.cmake) and run by qemu-aarch64 (qemu-user)
# (base/simd.hpp, model/lane_product.hpp, model/lane_kernels.hpp).  Each build holds the numerics rooms alone
# (ICL_NUMERICS_ONLY: Eigen, no MPI, HDF5 or Boost) and test_lane_product at that build's tile and row block
# only (ICL_TEST_BUILD_SHAPES_ONLY; the native build forces the others).
# Exit 77 (skipped, with the reason) when this machine cannot run the target: another architecture, a CPU
# without AVX2, or the cross compiler, qemu-user or GoogleTest's sources missing (tools/deps.sh installs them
# as root).  One compile job: it runs beside the rest of the suite.
# Usage: test_isa.sh SOURCE_DIR TARGET
set -uo pipefail
src=$(cd "$1" && pwd)
target=$2

# The numerics' unit tests that are cheap in such a build.  Measured 2026-11-26 on the development machine
# (2 cores, shared), -march=x86-64-v2, seconds of compilation / of the run:
#   test_lane_product 18 / 0.5, test_blocks 6 / 2, test_model 6 / 5, test_transformer 6 / 5,
#   test_data 21 / 0.5, test_params 4 / 0, test_determinism 5 / 5;
# the libraries they link, 110 s (test_model, test_data and test_params use test_util.hpp's make_point, so the
# option table in run/, so every numerics room).  Left out: test_theory (117 s of training), test_vo23 (36 s),
# test_analysis and test_gdpp (17 s each), test_options and test_alloc (no arithmetic of their own).
tests=(test_lane_product test_blocks test_model test_transformer test_data test_params test_determinism test_baselines)

# qemu runs the aarch64 build's arithmetic 25-60 times slower than this machine runs x86-64-v2 code, so there
# the heaviest cases are left out (gtest filters; the x86 builds run them).  Under qemu: test_model's gradient
# check at d = 17 and its d = 130 comparison, 310 of its 313 s; test_transformer's parameter gradients against
# central differences, 108 of 112 s; test_blocks' float attention weights, 20 of 48 s; test_determinism's
# three training runs, 233 of 234 s; test_data's sampler v2 kernel against libm over 2^24 pairs and its moments
# over 2^21 normals (1.7 s natively).  What stays checks every kernel against its reference: the tiled products
# bit for bit, every model and transformer shape's forward and backward against the naive reference (d = 16:
# the tiled path), the input gradients against central differences, the data laws (sampler v2's register
# kernel against its scalar form, bit for bit: the scalar form is held to libm on the x86 builds).
declare -A qemu_filter=(
  [test_model]='-*GradientCheck*/tiled_d17:*ModelVsRef*/linear_tiled_d130'
  [test_transformer]='-*GradientMatchesCentralDifferencesOfReference*'
  [test_blocks]='-Blocks/0.AttentionWeights*'
  [test_determinism]='-Determinism.SamePoint*:Determinism.EvalSeed*:Determinism.LegsThrough*'
  [test_data]='-Normals.*'
)

skip() { echo "skip: $*"; exit 77; }

# cmake options and the command that runs a test program, for TARGET; skips when this machine cannot.
configure_target() {
  case "$target" in
    x86-64-v2|haswell)
      [ "$(uname -m)" = x86_64 ] || skip "-march=$target needs an x86-64 machine"
      local flags need
      flags=$(grep -m1 '^flags' /proc/cpuinfo)
      if [ "$target" = haswell ]; then need="avx2 fma"; else need="sse4_2 popcnt"; fi
      for f in $need; do grep -qw "$f" <<<"$flags" || skip "this CPU cannot run -march=$target (no $f)"; done
      cmake_args=(-DCMAKE_CXX_FLAGS="-march=$target -DICL_TEST_BUILD_SHAPES_ONLY")
      run=()
      ;;
    aarch64)
      [ "$(uname -m)" != aarch64 ] || skip "this machine is aarch64: the native build is that build"
      command -v aarch64-linux-gnu-g++ >/dev/null && command -v aarch64-linux-gnu-gcc >/dev/null ||
        skip "no aarch64-linux-gnu-g++ (Debian: g++-aarch64-linux-gnu)"
      command -v qemu-aarch64 >/dev/null || skip "no qemu-aarch64 (Debian: qemu-user)"
      local gtest=/usr/src/googletest/googletest
      [ -f "$gtest/CMakeLists.txt" ] || skip "no GoogleTest sources in $gtest (Debian: googletest)"
      cmake_args=(-DCMAKE_TOOLCHAIN_FILE="$src/cmake/aarch64-linux-gnu.cmake" -DICL_GTEST_SOURCE_DIR="$gtest"
                  -DCMAKE_CXX_FLAGS=-DICL_TEST_BUILD_SHAPES_ONLY)
      run=(qemu-aarch64 -L /usr/aarch64-linux-gnu)
      ;;
    *)
      echo "usage: test_isa.sh SOURCE_DIR {x86-64-v2|haswell|aarch64}" >&2
      exit 2
      ;;
  esac
}

configure_target
# ICL_ISA_BUILD_DIR: build there and keep it (a rerun recompiles only what changed); else a temporary directory.
if [ -n "${ICL_ISA_BUILD_DIR:-}" ]; then
  b=$ICL_ISA_BUILD_DIR
  mkdir -p "$b"
  log=$b/isa.log
else
  tmp=$(mktemp -d "/tmp/icl-isa-$target.XXXXXX")
  trap 'rm -rf "$tmp"' EXIT
  b=$tmp/build
  log=$tmp/build.log
fi
t0=$(date +%s)
if ! cmake -S "$src" -B "$b" -DCMAKE_BUILD_TYPE=Release -DICL_NATIVE=OFF -DICL_NUMERICS_ONLY=ON \
     -DICL_BUILD_BENCH=OFF "${cmake_args[@]}" >"$log" 2>&1 ||
   ! cmake --build "$b" --target "${tests[@]}" -j 1 >>"$log" 2>&1; then
  tail -n 40 "$log"
  echo "FAIL: $target: the numerics do not build"
  exit 1
fi
t1=$(date +%s)
echo "$target: built ${#tests[@]} tests in $((t1 - t0)) s"

fail=0
for t in "${tests[@]}"; do
  s=$(date +%s)
  args=()
  [ ${#run[@]} -gt 0 ] && [ -n "${qemu_filter[$t]:-}" ] && args=(--gtest_filter="${qemu_filter[$t]}")
  if "${run[@]}" "$b/tests/$t" "${args[@]}" >"$b/$t.out" 2>&1; then
    echo "ok: $target: $t, $(sed -n 's/^\[  PASSED  \] \([0-9]* tests\?\)\..*/\1/p' "$b/$t.out") ($(( $(date +%s) - s )) s)"
  else
    grep -E -A12 ': Failure$' "$b/$t.out" | head -n 60
    grep -E '^\[  FAILED' "$b/$t.out"
    echo "FAIL: $target: $t"
    fail=1
  fi
done
echo "$target: tests ran in $(( $(date +%s) - t1 )) s"
exit "$fail"
