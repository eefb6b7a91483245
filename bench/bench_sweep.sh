#!/usr/bin/env bash
# The sweep's scheduling overhead, parallel efficiency and output cost, measured in one run.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/build.sh >/dev/null
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
run() {   # run RANKS SPEC OUT -> prints the wall seconds and the driver's final line to stderr
  local t0 t1
  t0=$(date +%s.%N)
  mpiexec --oversubscribe -n "$1" ./build/icl-sweep run "$2" -o "$3" --progress 0 >"$tmp/log" 2>&1 || { cat "$tmp/log" >&2; exit 1; }
  t1=$(date +%s.%N)
  awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.2f", b - a}'
}
d1=$(run 1 bench/specs/dispatch.ini "$tmp/d1.h5"); line1=$(grep -o '([^)]*points/s)' "$tmp/log")
d2=$(run 2 bench/specs/dispatch.ini "$tmp/d2.h5"); line2=$(grep -o '([^)]*points/s)' "$tmp/log")
e1=$(run 1 bench/specs/efficiency.ini "$tmp/e1.h5")
e2=$(run 2 bench/specs/efficiency.ini "$tmp/e2.h5")
echo
echo "scheduling: 20,000 trivially cheap points (whole run incl. start-up, plan and merge; loop only in brackets)"
echo "  1 rank : $d1 s, $(awk -v s="$d1" 'BEGIN {printf "%.0f", 20000 / s}') points/s  $line1"
echo "  2 ranks: $d2 s, $(awk -v s="$d2" 'BEGIN {printf "%.0f", 20000 / s}') points/s  $line2"
echo "efficiency: 24 heterogeneous points: 1 rank $e1 s, 2 ranks $e2 s, ratio $(awk -v a="$e2" -v b="$e1" 'BEGIN {printf "%.3f", a / b}') (ideal 0.5)"
echo "output cost per point (fdatasync'ed log record + the point's share of the HDF5 merge):"
./build/bench/bench_output | sed 's/^/  /'
