#!/usr/bin/env bash
# README command 2: install what is missing, build (optimised), run the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
ICL_DEPS_OPTIONAL=1 bash tools/deps.sh   # with the optional cross compiler and qemu (ctest isa_aarch64)
bash tools/build.sh
cd build
ctest --output-on-failure -j "$(nproc)"
