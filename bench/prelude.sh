# Sourced by the bench scripts from the repository root: installs the PyTorch peer's packages, builds
# icl-sweep and the peak probe, pins BLAS/OpenMP to one thread and measures the FP32 peak of one core
# into $peak.  A fair peer needs OpenBLAS (Debian's default reference BLAS slows torch's batched products
# several times): it and python3-torch are installed here if missing.
need=()
for p in python3-torch libopenblas0-pthread; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || need+=("$p")
done
if [ ${#need[@]} -gt 0 ]; then
  sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${need[@]}"
fi
bash tools/build.sh >/dev/null
g++ -O2 -march=native -std=c++17 bench/peak_fp32.cpp -o build/peak_fp32
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
peak=$(./build/peak_fp32 | awk '/^peak_fp32_gflops/ {print $2}')
