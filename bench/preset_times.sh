#!/usr/bin/env bash
# The wall-clock of every reduced preset (jobs/presets/reduced/) beside its --dry-run estimate, in one run,
# on RANKS ranks (default 2) of this machine: what the presets' headers quote.  Skips the presets named in
# $SKIP (space-separated file names; default the two [V24] ones, ~50 minutes each on one rank).
#   bash bench/preset_times.sh [RANKS]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bin=${ICL_SWEEP:-$root/build/icl-sweep}
ranks=${1:-2}
skip=${SKIP:-v24_table1.ini v24_sigma2_halving.ini}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
[ "$(id -u)" -eq 0 ] && export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
echo "# $(date -u +%FT%TZ), $(lscpu | sed -n 's/^Model name: *//p'), $ranks ranks, load $(cut -d' ' -f1 /proc/loadavg) at the start"
printf '%-28s %7s %10s  %s\n' preset points "wall s" "dry-run estimate"
for spec in "$root"/jobs/presets/reduced/*.ini; do
  name=$(basename "$spec")
  case " $skip " in *" $name "*) continue ;; esac
  estimate=$("$bin" run "$spec" --dry-run | sed -n 's/^estimate *//p')
  t0=$(date +%s.%N)
  mpiexec --oversubscribe -n "$ranks" "$bin" run "$spec" -o "$dir/${name%.ini}.h5" --quiet --progress 0 > /dev/null
  t1=$(date +%s.%N)
  points=$("$bin" status "$dir/${name%.ini}.h5" | awk '/^done/ {print $2}')
  printf '%-28s %7s %10s  %s\n' "$name" "$points" "$(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.1f", b - a}')" "$estimate"
done
