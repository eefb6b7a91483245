#!/usr/bin/env bash
# Installs the Debian packages icl-sweep needs (skips apt when they are all present).
set -euo pipefail
pkgs=(build-essential cmake pkg-config git libeigen3-dev libhdf5-dev hdf5-tools libboost-program-options-dev
      libgtest-dev libbenchmark-dev openmpi-bin libopenmpi-dev python3 python3-numpy python3-h5py python3-matplotlib
      python3-pandas python3-pip python3-setuptools python3-wheel python3-venv   # the Python package: pyproject.toml, pip install
      python3-torch   # tests/torch_trajectory.py: the training trajectory against PyTorch
      slurm-wlm munge)   # the last two: the job scripts' integration test runs a real local Slurm
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  echo "icl-sweep: installing ${missing[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
