# Sourced by the bench scripts from the repository root: installs the PyTorch peer's packages, builds
# icl-sweep and the peak probe, pins BLAS/OpenMP to one thread, picks the core every measurement runs on and
# measures its FP32 peak into $peak.  A fair peer needs OpenBLAS (Debian's default reference BLAS slows
# torch's batched products several times).
#   ICL_MARCH=haswell (x86-64-v2, skylake-avx512, znver3, neoverse-v1, ...): the engine and the peak kernel
#       built for that instruction set, into build-$ICL_MARCH/, instead of for this machine (-march=native,
#       ./build): a row per instruction set from one node that has them all (docs/performance.md).
#   ICL_BENCH_BUILD=DIR: measure the build in DIR as it is (built with your modules' compilers), not rebuilt.
#   ICL_PEER_PYTHON=PY: the Python whose torch is the peer (default: the first of tools/find-python's that
#       imports torch); `none` leaves the peer's columns out.  With neither set, the peer's Debian packages
#       (python3-torch, OpenBLAS) are installed if missing and this user may (root or sudo without a password).
# Defines $bld (the build measured), $core, pinned CMD... (CMD on $core), measure_peak (the peak of $core now)
# and $peer_py (empty: no peer).
march=${ICL_MARCH:-native}
peer_py=${ICL_PEER_PYTHON:-}
[ "$peer_py" = none ] && peer_py=""
[ -z "$peer_py" ] || "$peer_py" -c 'import torch' 2>/dev/null ||
  { echo "bench: ICL_PEER_PYTHON=$peer_py does not import torch (a Python with torch, or none)" >&2; exit 2; }
if [ -z "${ICL_PEER_PYTHON:-}" ]; then
  need=()
  for p in python3-torch libopenblas0-pthread libhwy-dev; do   # libhwy-dev: bench_simd
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || need+=("$p")
  done
  if [ ${#need[@]} -gt 0 ] && command -v apt-get >/dev/null; then
    sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo -n"
    if [ -z "$sudo" ] || sudo -n true 2>/dev/null; then
      $sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${need[@]}"
    else
      echo "bench: not installed, and installing needs root: ${need[*]} (a Python with torch: ICL_PEER_PYTHON)" >&2
    fi
  fi
  peer_py=$(tools/find-python torch 2>/dev/null) || peer_py=""
fi
if [ -n "${ICL_BENCH_BUILD:-}" ]; then
  bld=$ICL_BENCH_BUILD
elif [ "$march" = native ]; then
  bld=build
  bash tools/build.sh >/dev/null
else
  bld=build-$march
  cmake -S . -B "$bld" -DCMAKE_BUILD_TYPE=Release -DICL_NATIVE=OFF -DCMAKE_CXX_FLAGS="-march=$march" >/dev/null
  cmake --build "$bld" -j "$(nproc)" >/dev/null
fi
[ -x "$bld/bench/bench_train" ] || { echo "bench: no $bld/bench/bench_train (ICL_BENCH_BUILD: a build directory)" >&2; exit 2; }
g++ -O2 -march="$march" -std=c++17 bench/peak_fp32.cpp -o "$bld/peak_fp32"
# The peer held to the same instruction set: OpenBLAS and PyTorch pick their kernels at run time.
case $march in
  haswell | broadwell | skylake | znver1 | znver2 | znver3 | x86-64-v3)
    export OPENBLAS_CORETYPE=Haswell ATEN_CPU_CAPABILITY=avx2 ;;
  x86-64-v2 | nehalem | westmere | sandybridge | ivybridge)
    export OPENBLAS_CORETYPE=Nehalem ATEN_CPU_CAPABILITY=default ;;
esac
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
# The first CPU this process may run on: a Slurm job's or a cgroup's cpuset need not hold CPU 0.
core=$(taskset -pc $$ | sed 's/.*: //; s/[-,].*//')
pinned() { taskset -c "$core" "$@"; }
# The FP32 peak of $core now: each table measures it beside every row, as a shared node's speed moves.
measure_peak() { pinned "$bld/peak_fp32" | awk '/^peak_fp32_gflops/ {print $2}'; }
peak=$(measure_peak)
# The peer's PyTorch version and the BLAS it loaded ("none" without a peer).
peer_name() {
  [ -n "$peer_py" ] || { echo "none"; return; }
  "$peer_py" -c 'import sys; sys.path.insert(0, "bench"); from blas_probe import loaded_blas; import torch
print(torch.__version__, "with BLAS", loaded_blas())'
}
isa=$("$bld/bench/bench_tiles" --isa)
cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)
echo "build: $bld, -march=$march ($isa register tiles), CPU: ${cpu:-unknown}, core $core${OPENBLAS_CORETYPE:+; peer held to OpenBLAS $OPENBLAS_CORETYPE, PyTorch $ATEN_CPU_CAPABILITY}"
