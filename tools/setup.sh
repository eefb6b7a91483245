#!/usr/bin/env bash
# README command 1: from a fresh Debian machine, install what icl-sweep needs, build it, and run the
# quickstart sweep (jobs/presets/quickstart.ini: depth x noise law x parameterisation) on every core
# with mpirun; it prints the summary table and writes the report (tables, figures, one HTML page).
# Results: results/quickstart.h5 and results/quickstart_report/index.html.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/deps.sh
bash tools/build.sh
mkdir -p results
[ "$(id -u)" -eq 0 ] && export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mpirun -n "$(nproc)" ./build/icl-sweep run jobs/presets/quickstart.ini -o results/quickstart.h5 --force
tools/icl-report results/quickstart.h5 --quiet
