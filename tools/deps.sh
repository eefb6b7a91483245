#!/usr/bin/env bash
# Installs the Debian packages icl-sweep needs (skips apt when they are all present).
set -euo pipefail
pkgs=(build-essential cmake pkg-config git libeigen3-dev libhdf5-dev hdf5-tools libboost-program-options-dev
      libgtest-dev libbenchmark-dev openmpi-bin libopenmpi-dev python3 python3-numpy python3-h5py python3-matplotlib
      python3-pandas python3-pip python3-setuptools python3-wheel python3-venv   # the Python package: pyproject.toml, pip install
      python3-torch   # tests/torch_trajectory.py: the training trajectory against PyTorch
      slurm-wlm munge)   # the last two: the job scripts' integration test runs a real local Slurm
# Only the test suite needs these: the aarch64 cross build of the numerics, run under qemu (ctest
# isa_aarch64, which skips without them), and Highway, so that the build the suite checks includes
# bench/bench_simd, as a user's does wherever Highway is installed (a Highway that refused this machine's
# flags once failed such builds: bench/CMakeLists.txt).  With ICL_DEPS_OPTIONAL=1 (tools/test.sh) they are
# installed as root (CI) or with sudo that asks no password; never required, and never for tools/setup.sh.
optional=()
[ "${ICL_DEPS_OPTIONAL:-0}" = 1 ] && optional=(g++-aarch64-linux-gnu qemu-user libhwy-dev)
not_installed() {
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || echo "$p"
  done
}
mapfile -t missing < <(not_installed "${pkgs[@]}")
mapfile -t missing_optional < <(not_installed "${optional[@]}")
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
if [ ${#missing_optional[@]} -gt 0 ] && [ -n "$sudo" ] && ! sudo -n true 2>/dev/null; then
  echo "icl-sweep: not installing ${missing_optional[*]} (optional, needs root): ctest isa_aarch64 will skip, bench_simd is not built"
  missing_optional=()
fi
if [ ${#missing[@]} -gt 0 ] || [ ${#missing_optional[@]} -gt 0 ]; then
  $sudo apt-get update -qq
fi
if [ ${#missing[@]} -gt 0 ]; then
  echo "icl-sweep: installing ${missing[*]}"
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
if [ ${#missing_optional[@]} -gt 0 ]; then
  echo "icl-sweep: installing ${missing_optional[*]} (optional: the aarch64 cross build, bench_simd)"
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing_optional[@]}" ||
    echo "icl-sweep: could not install ${missing_optional[*]}: ctest isa_aarch64 will skip, bench_simd is not built"
fi
