# Sourced first by the bench scripts (`source "$(dirname "$0")/prelude.sh"`): checks the settings below, installs
# the PyTorch peer's packages, builds icl-sweep, builds the peak kernel, pins BLAS/OpenMP to one thread, picks
# the core every measurement runs on and measures its FP32 peak into $peak; then changes to the repository root.
# A fair peer needs OpenBLAS (Debian's default reference BLAS slows torch's batched products several times).
#   ICL_MARCH=haswell (x86-64-v2, skylake-avx512, znver3, ...): the engine and the peak kernel built for that
#       instruction set, into build-$ICL_MARCH/, instead of for this machine (-march=native, ./build): a row per
#       instruction set from one node that has them all (docs/performance.md).
#   ICL_BENCH_BUILD=DIR: measure the build in DIR as it is (made with your modules' compiler), not rebuilt;
#       ICL_MARCH is then its -march (native if unset), checked against the build's vector width.
#   ICL_PEER_PYTHON=PY: the Python whose torch is the peer (default: the first of tools/find-python's that
#       imports torch); `none` leaves the peer's columns out.  Unset or empty, the peer's Debian packages
#       (python3-torch, OpenBLAS) are installed if missing and this user may (root or sudo without a password).
#   ICL_BENCH_D="5 64": run_bench_d.sh at those d only (integers in [1, 255]).
#   CXX: the compiler of the peak kernel (default g++).
#   OPENBLAS_CORETYPE, ATEN_CPU_CAPABILITY: kept when set (a cluster's environment may set them); the header then
#       says the peer is held to them, and the BLAS column names OpenBLAS's kernel core.  For the peer at its best
#       on this core run with them unset (`env -u OPENBLAS_CORETYPE bash bench/run_bench_d.sh`).
# Relative paths are the caller's.  Every setting is checked before anything is installed, built or written: a
# bad one stops the script with exit 2, naming it, its value and the rule.  Defines $bld (the build measured),
# $core, pinned CMD... (CMD on $core), measure_peak (the peak of $core now), $peer_py (empty: no peer), peer
# SCRIPT ARGS... (the peer's result line on $core, "- -" without a peer), peer_name, $bench_d and $bench_tmp (a
# directory removed on exit).
bench_refuse() { echo "bench: $*" >&2; exit 2; }
bench_abs() { case $1 in /*) echo "$1" ;; *) echo "$PWD/$1" ;; esac; }
march=${ICL_MARCH:-native}
cxx=${CXX:-g++}
peer_py=${ICL_PEER_PYTHON:-}
case $peer_py in
  none) peer_py="" ;;
  */*) peer_py=$(bench_abs "$peer_py") ;;
esac
if [ -n "$peer_py" ]; then
  peer_version=$("$peer_py" -c 'import torch; print(torch.__version__)' 2>/dev/null) || peer_version=""
  [ -n "$peer_version" ] || bench_refuse "ICL_PEER_PYTHON=$ICL_PEER_PYTHON: must be a Python that imports torch, or none"
fi
bld=""
if [ -n "${ICL_BENCH_BUILD:-}" ]; then
  bld=$(bench_abs "$ICL_BENCH_BUILD")
  for b in bench_train bench_tiles bench_lsa_split; do
    [ -x "$bld/bench/$b" ] || bench_refuse "ICL_BENCH_BUILD=$ICL_BENCH_BUILD: must be a build directory (no $bld/bench/$b)"
  done
fi
read -ra bench_d <<<"${ICL_BENCH_D:-5 10 20 32 64 128}"
for x in "${!bench_d[@]}"; do
  d=${bench_d[$x]}
  [[ $d =~ ^[0-9]{1,3}$ ]] && [ "$((10#$d))" -ge 1 ] && [ "$((10#$d))" -le 255 ] ||
    bench_refuse "ICL_BENCH_D=${ICL_BENCH_D:-}: must be d values in [1, 255] separated by spaces ('$d')"
  bench_d[$x]=$((10#$d))
done
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bench_tmp=$(mktemp -d)
trap 'rm -rf "$bench_tmp"' EXIT
"$cxx" -O2 -march="$march" -std=c++17 bench/peak_fp32.cpp -o "$bench_tmp/peak_fp32" 2>"$bench_tmp/cxx.err" ||
  bench_refuse "ICL_MARCH=$march: must be a -march value $cxx accepts: $(head -n 1 "$bench_tmp/cxx.err")"
if [ -n "$bld" ]; then
  probe_bits=$("$bench_tmp/peak_fp32" 0 1 2>/dev/null | awk '/^vector_bits/ {print $2}')
  build_bits=$("$bld/bench/bench_tiles" --bits)
  [ "$probe_bits" = "$build_bits" ] || bench_refuse "ICL_MARCH=$march: must be the -march of ICL_BENCH_BUILD=$ICL_BENCH_BUILD" \
    "(the peak kernel's vectors are $probe_bits bits, the build's $build_bits)"
fi

if [ -z "${ICL_PEER_PYTHON:-}" ]; then
  need=()
  for p in python3-torch libopenblas0-pthread libhwy-dev; do   # libhwy-dev: bench_simd
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || need+=("$p")
  done
  if [ ${#need[@]} -gt 0 ] && command -v apt-get >/dev/null; then
    sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo -n"
    if { [ -z "$sudo" ] || sudo -n true 2>/dev/null; } &&
       $sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${need[@]}"; then
      :
    else
      echo "bench: not installed: ${need[*]} (installing needs root and the package archive; a peer: ICL_PEER_PYTHON)" >&2
    fi
  fi
  peer_py=$(tools/find-python torch 2>/dev/null) || peer_py=""
fi
if [ -z "$bld" ]; then
  if [ "$march" = native ]; then
    bld=build
    bash tools/build.sh >/dev/null
  else
    bld=build-$march
    cmake -S . -B "$bld" -DCMAKE_BUILD_TYPE=Release -DICL_NATIVE=OFF -DCMAKE_CXX_FLAGS="-march=$march" >/dev/null
    cmake --build "$bld" -j "$(nproc)" >/dev/null
  fi
fi
# The peer held to the same instruction set: OpenBLAS and PyTorch pick their kernels at run time.
case $march in
  haswell | broadwell | skylake | core-avx2 | alderlake | znver1 | znver2 | znver3 | x86-64-v3)
    export OPENBLAS_CORETYPE=Haswell ATEN_CPU_CAPABILITY=avx2 ;;
  x86-64-v2 | nehalem | westmere | sandybridge | ivybridge)
    export OPENBLAS_CORETYPE=Nehalem ATEN_CPU_CAPABILITY=default ;;
esac
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
# The first CPU this process may run on: a Slurm job's or a cgroup's cpuset need not hold CPU 0.
core=$(taskset -pc $$ | sed 's/.*: //; s/[-,].*//')
pinned() { taskset -c "$core" "$@"; }
# The FP32 peak of $core now: run_bench.sh and run_bench_d.sh measure it beside every row, as a shared node's
# speed moves.
measure_peak() { pinned "$bench_tmp/peak_fp32" 2>/dev/null | awk '/^peak_fp32_gflops/ {print $2}'; }
peak=$(measure_peak)
# The peer's result line, run on $core ("- -" without a peer); its error output only if it fails, and then the
# benchmark stops saying so.
peer() {
  [ -n "$peer_py" ] || { echo "- -"; return; }
  local out
  if ! out=$(pinned "$peer_py" "$@" 2>"$bench_tmp/peer.err"); then
    echo "bench: the PyTorch peer failed: $peer_py $*" >&2
    cat "$bench_tmp/peer.err" >&2
    return 1
  fi
  echo "$out"
}
# The peer's PyTorch version and the BLAS it loaded ("none" without a peer).
peer_name() {
  [ -n "$peer_py" ] || { echo "none"; return; }
  "$peer_py" -c 'import sys; sys.path.insert(0, "bench"); from blas_probe import loaded_blas; import torch
print(torch.__version__, "with BLAS", loaded_blas())'
}
isa=$("$bld/bench/bench_tiles" --isa)
cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)
# Either may come from this script (a build held to an older instruction set) or from the environment (a
# cluster's modules may set OPENBLAS_CORETYPE): then the peer is held to it, and the header says so.
held=""
if [ -n "$peer_py" ] && [ -n "${OPENBLAS_CORETYPE:-}${ATEN_CPU_CAPABILITY:-}" ]; then
  held="; peer held to OpenBLAS ${OPENBLAS_CORETYPE:-(its own choice)}, PyTorch ${ATEN_CPU_CAPABILITY:-(its own choice)}"
fi
echo "build: $bld, -march=$march ($isa register tiles), CPU: ${cpu:-unknown}, core $core$held"
