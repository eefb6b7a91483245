#!/usr/bin/env bash
# Training throughput beside PyTorch and the machine's FP32 peak, measured in one run, single thread.
# Needs python3-torch and, for a fair peer, OpenBLAS (Debian's default reference BLAS slows torch's
# batched products several times): both are installed here if missing.  Rows 3 and 4 are [VO23]'s transformer
# (bench_train 3, 4) beside bench/torch_transformer_peer.py.
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/prelude.sh   # packages, build, one thread, $peak
declare -A icl torch gf rss an an_run an_paper
for c in 1 2 3 4; do
  line=$(taskset -c 0 "./$bld/bench/bench_train" $c)
  echo "$line" >&2
  icl[$c]=$(sed -n 's/.*steps_per_s=\([0-9.]*\).*/\1/p' <<<"$line")
  gf[$c]=$(sed -n 's/.*gflops=\([0-9.]*\).*/\1/p' <<<"$line")
  rss[$c]=$(sed -n 's/.*max_rss_mib=\([0-9.]*\).*/\1/p' <<<"$line")
  an[$c]=$(sed -n 's/.*analysis_s=\([0-9.]*\).*/\1/p' <<<"$line")
  an_run[$c]=$(sed -n 's/.*analysis_share_run=\([0-9.]*\).*/\1/p' <<<"$line")
  an_paper[$c]=$(sed -n 's/.*analysis_share_paper_budget=\([0-9.]*\).*/\1/p' <<<"$line")
done
# A peer's result line; its error output only if it fails, and then the benchmark stops saying so.
peer() {
  local err out
  err=$(mktemp)
  if ! out=$(taskset -c 0 /usr/bin/python3 "$@" 2> "$err"); then
    echo "run_bench: the PyTorch peer failed: $*" >&2
    cat "$err" >&2
    rm -f "$err"
    return 1
  fi
  rm -f "$err"
  echo "$out"
}
tline1=$(peer bench/torch_peer.py --d 5 --n 20 --layers 3 --batch 1000 --seconds 15)
tline2=$(peer bench/torch_peer.py --d 10 --n 20 --layers 7 --batch 2048 --lr 1e-4 --seconds 20)
echo "$tline1" >&2; echo "$tline2" >&2
tline3=$(peer bench/torch_transformer_peer.py --config fig5 --seconds 15)
tline4=$(peer bench/torch_transformer_peer.py --config fig8 --seconds 20)
echo "$tline3" >&2; echo "$tline4" >&2
torch[1]=$(awk '{print $2}' <<<"$tline1")
torch[2]=$(awk '{print $2}' <<<"$tline2")
torch[3]=$(awk '{print $2}' <<<"$tline3")
torch[4]=$(awk '{print $2}' <<<"$tline4")
blas=$(sed -n 's/.*blas=\([^ ]*\).*/\1/p' <<<"$tline1")

echo
echo "single thread, float32; FP32 peak of one core: ${peak} GFLOP/s; PyTorch $(/usr/bin/python3 -c 'import torch; print(torch.__version__)' 2>/dev/null) with BLAS ${blas}"
printf '| %-28s | %12s | %14s | %9s | %12s | %9s | %12s |\n' config "icl steps/s" "torch steps/s" "icl/torch" "icl GFLOP/s" "% of peak" "peak RSS MiB"
printf '|%s|%s|%s|%s|%s|%s|%s|\n' ------------------------------ -------------- ---------------- ----------- -------------- ----------- --------------
names=([1]="d=5 n=20 L=3 B=1000" [2]="d=10 n=20 L=7 B=2048" [3]="vo23 fig5 (L=2 H=1 B=2048)" [4]="vo23 fig8 (L=12 H=4 B=2048)")
for c in 1 2 3 4; do
  printf '| %-28s | %12.1f | %14.2f | %8.1fx | %12.1f | %8.1f%% | %12.1f |\n' "${names[$c]}" "${icl[$c]}" "${torch[$c]}" \
    "$(awk -v a="${icl[$c]}" -v b="${torch[$c]}" 'BEGIN {print a / b}')" "${gf[$c]}" "$(awk -v a="${gf[$c]}" -v b="$peak" 'BEGIN {print 100 * a / b}')" "${rss[$c]}"
done

echo
echo "analysis cost (baselines, alignment, noise and OOD curves, preconditioners; landscape off)"
printf '| %-28s | %10s | %22s | %34s |\n' config "analysis s" "share of this run" "share of the paper's training budget"
printf '|%s|%s|%s|%s|\n' ------------------------------ ------------ ------------------------ ------------------------------------
budget=([1]="10k steps, [A24]" [2]="200k steps, [V24]")
for c in 1 2; do
  printf '| %-28s | %10.3f | %21.1f%% | %26.2f%% (%s) |\n' "${names[$c]}" "${an[$c]}" \
    "$(awk -v a="${an_run[$c]}" 'BEGIN {print 100 * a}')" "$(awk -v a="${an_paper[$c]}" 'BEGIN {print 100 * a}')" "${budget[$c]}"
done
