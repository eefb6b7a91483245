# Sourced by the bench scripts from the repository root: installs the PyTorch peer's packages, builds
# icl-sweep and the peak probe, pins BLAS/OpenMP to one thread and measures the FP32 peak of one core
# into $peak.  A fair peer needs OpenBLAS (Debian's default reference BLAS slows torch's batched products
# several times): it and python3-torch are installed here if missing.
need=()
for p in python3-torch libopenblas0-pthread libhwy-dev; do   # libhwy-dev: bench_simd
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || need+=("$p")
done
if [ ${#need[@]} -gt 0 ]; then
  sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${need[@]}"
fi
# ICL_MARCH=haswell (x86-64-v2, skylake-avx512, znver3, neoverse-v1, ...): the engine and the peak kernel built
# for that instruction set, into build-$ICL_MARCH/, instead of for this machine (-march=native, ./build): a
# row per instruction set from one node that has them all (docs/performance.md).  $bld is the build used.
march=${ICL_MARCH:-native}
if [ "$march" = native ]; then
  bld=build
  bash tools/build.sh >/dev/null
else
  bld=build-$march
  cmake -S . -B "$bld" -DCMAKE_BUILD_TYPE=Release -DICL_NATIVE=OFF -DCMAKE_CXX_FLAGS="-march=$march" >/dev/null
  cmake --build "$bld" -j "$(nproc)" >/dev/null
fi
g++ -O2 -march="$march" -std=c++17 bench/peak_fp32.cpp -o "$bld/peak_fp32"
# The peer held to the same instruction set: OpenBLAS and PyTorch pick their kernels at run time.
case $march in
  haswell | broadwell | skylake | znver1 | znver2 | znver3 | x86-64-v3)
    export OPENBLAS_CORETYPE=Haswell ATEN_CPU_CAPABILITY=avx2 ;;
  x86-64-v2 | nehalem | westmere | sandybridge | ivybridge)
    export OPENBLAS_CORETYPE=Nehalem ATEN_CPU_CAPABILITY=default ;;
esac
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
peak=$("./$bld/peak_fp32" | awk '/^peak_fp32_gflops/ {print $2}')
isa=$("./$bld/bench/bench_tiles" --isa)
cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)
echo "build: -march=$march ($isa register tiles), CPU: ${cpu:-unknown}${OPENBLAS_CORETYPE:+; peer held to OpenBLAS $OPENBLAS_CORETYPE, PyTorch $ATEN_CPU_CAPABILITY}"
