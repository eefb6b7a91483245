#!/usr/bin/env bash
# The store at scale (issue 28): a sweep of trivially cheap points (one step of a 1-d model, no analysis)
# at 10^4, 10^5 and 10^6 points, measured in one run: the whole run and its hand-out rate, rank 0's peak
# memory, the plan's bytes a point, the final merge (`icl-sweep merge`: every log read, OUT.h5 written),
# status, verify, verify --repair, the Python loader (digests checked) and the file's bytes a point; then
# the growth exponent of each between sizes (1 = linear).  Ranks: 2 (one per core), and RANKS_MANY
# (default 128, oversubscribed) at the largest size.
# usage: bash bench/bench_store.sh [SIZES (default "10000 100000 1000000")] [RANKS_MANY]
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/build.sh >/dev/null
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
sizes=${1:-"10000 100000 1000000"}
many=${2:-128}
py=$(tools/find-python h5py numpy)
bin=$PWD/build/icl-sweep
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cheap() { printf 'd = 1\nn = 1\nlayers = 1\nbatch = 1\nsteps = 1\neval_tasks = 1\neval_every = 1\nanalysis = false\nrepeats = %s\n' "$1"; }
# Rank 0 under GNU time (its peak RSS), the other ranks plain.
cat > "$tmp/rank.sh" <<EOF
#!/bin/bash
if [ "\${OMPI_COMM_WORLD_RANK:-0}" = 0 ]; then exec /usr/bin/time -f "rank0_rss_kb %M" -o "\$ICL_RSS_FILE" "$bin" "\$@"; fi
exec "$bin" "\$@"
EOF
chmod +x "$tmp/rank.sh"
secs() { local t0 t1; t0=$(date +%s.%N); "$@" >/dev/null 2>&1; t1=$(date +%s.%N); awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.2f", b - a}'; }
rss_of() { /usr/bin/time -f "%M" "$@" 2>&1 >/dev/null | tail -1; }

echo "CPU: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores; $(date -u +%F)"
printf "%-9s %5s %8s %8s %10s %8s %8s %9s %9s %9s %9s %10s %10s\n" points ranks "run s" "pts/s" "rank0 MiB" "merge s" \
  "status s" "verify s" "repair s" "loader s" "file B/pt" "logs B/pt" "status/s"
run_size() {   # run_size POINTS RANKS
  local n=$1 r=$2 out=$tmp/s$1_$2.h5
  cheap "$n" > "$tmp/s$n.ini"
  local t0 t1
  t0=$(date +%s.%N)
  ICL_RSS_FILE=$tmp/rss mpiexec --oversubscribe -n "$r" "$tmp/rank.sh" run "$tmp/s$n.ini" -o "$out" --quiet --progress 0 \
    > "$tmp/run.log" 2>&1 || { cat "$tmp/run.log"; exit 1; }
  t1=$(date +%s.%N)
  local run=$(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.1f", b - a}')
  local rate=$(awk -v n="$n" -v s="$run" 'BEGIN {printf "%.0f", n / s}')
  local rss=$(awk '{print int($2 / 1024)}' "$tmp/rss")
  local merge=$(secs "$bin" merge "$out")
  local status=$(secs "$bin" status "$out")
  local verify=$(secs "$bin" verify "$out")
  local repair=$(secs "$bin" verify "$out" --repair)
  local loader=$("$py" -c "
import sys, time; sys.path.insert(0, 'tools/python')
import icl_sweep
t = time.time(); s = icl_sweep.open_sweep(sys.argv[1]); assert int(s.ok().sum()) == int(sys.argv[2]) and len(s.damaged) == 0
print('%.2f' % (time.time() - t))" "$out" "$n")
  local fb=$(( $(stat -c %s "$out") / n ))
  local lb=$(( $(du -sb "$out.points" | cut -f1) / n ))
  printf "%-9s %5s %8s %8s %10s %8s %8s %9s %9s %9s %9s %10s %10s\n" "$n" "$r" "$run" "$rate" "$rss" "$merge" "$status" \
    "$verify" "$repair" "$loader" "$fb" "$lb" "$(awk -v n="$n" -v s="$status" 'BEGIN {printf "%.0f", n / (s > 0.005 ? s : 0.005)}')"
  echo "$n $r $run $rss $merge $status $verify $repair $loader" >> "$tmp/rows"
}
for n in $sizes; do run_size "$n" 2; done
largest=$(echo $sizes | awk '{print $NF}')
run_size "$largest" "$many"
echo
echo "growth exponents between sizes (2 ranks; log(t2/t1)/log(n2/n1); 1 = linear):"
awk '$2 == 2 {++rows; n[rows] = $1; for (k = 3; k <= 9; ++k) v[rows, k] = $k}
     END {
       split("run rank0_memory merge status verify repair loader", names, " ")
       for (i = 2; i <= rows; ++i) {
         line = sprintf("  %s -> %s:", n[i-1], n[i])
         for (k = 3; k <= 9; ++k)
           if (v[i-1, k] > 0.05) line = line sprintf(" %s %.2f", names[k-2], log(v[i, k] / v[i-1, k]) / log(n[i] / n[i-1]))
         print line
       }
     }' "$tmp/rows"
