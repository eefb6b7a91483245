#!/usr/bin/env bash
# README command 2: install what is missing, build (optimised), run the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/deps.sh
bash tools/build.sh
cd build
ctest --output-on-failure -j "$(nproc)"
