#!/usr/bin/env bash
# Training throughput beside PyTorch and the machine's FP32 peak, measured in one run, single thread.
# Each row's % of peak is against the core's FP32 peak measured just before it.  Rows 3 and 4 are [VO23]'s
# transformer (bench_train 3, 4) beside bench/torch_transformer_peer.py.  The build, the peer (PyTorch with
# OpenBLAS: Debian's default reference BLAS slows its batched products several times) and the core:
# bench/prelude.sh.
set -euo pipefail
source "$(dirname "$0")/prelude.sh"   # packages, build, one thread, $core, measure_peak, $peer_py
declare -A icl torch gf pk rss an an_run an_paper
for c in 1 2 3 4; do
  pk[$c]=$(measure_peak)
  line=$(pinned "$bld/bench/bench_train" $c)
  echo "$line" >&2
  icl[$c]=$(sed -n 's/.*steps_per_s=\([0-9.]*\).*/\1/p' <<<"$line")
  gf[$c]=$(sed -n 's/.*gflops=\([0-9.]*\).*/\1/p' <<<"$line")
  rss[$c]=$(sed -n 's/.*max_rss_mib=\([0-9.]*\).*/\1/p' <<<"$line")
  an[$c]=$(sed -n 's/.*analysis_s=\([0-9.]*\).*/\1/p' <<<"$line")
  an_run[$c]=$(sed -n 's/.*analysis_share_run=\([0-9.]*\).*/\1/p' <<<"$line")
  an_paper[$c]=$(sed -n 's/.*analysis_share_paper_budget=\([0-9.]*\).*/\1/p' <<<"$line")
done
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

echo
echo "single thread, float32; PyTorch peer: $(peer_name); % of peak: against the core's FP32 peak measured just before the row"
printf '| %-28s | %12s | %14s | %9s | %12s | %10s | %9s | %12s |\n' config "icl steps/s" "torch steps/s" "icl/torch" "icl GFLOP/s" "FP32 peak" "% of peak" "peak RSS MiB"
printf '|%s|%s|%s|%s|%s|%s|%s|%s|\n' ------------------------------ -------------- ---------------- ----------- -------------- ------------ ----------- --------------
names=([1]="d=5 n=20 L=3 B=1000" [2]="d=10 n=20 L=7 B=2048" [3]="vo23 fig5 (L=2 H=1 B=2048)" [4]="vo23 fig8 (L=12 H=4 B=2048)")
for c in 1 2 3 4; do
  awk -v n="${names[$c]}" -v s="${icl[$c]}" -v t="${torch[$c]}" -v g="${gf[$c]}" -v p="${pk[$c]}" -v r="${rss[$c]}" 'BEGIN {
    ts = t == "-" ? sprintf("%14s", "-") : sprintf("%14.2f", t); x = t == "-" ? sprintf("%9s", "-") : sprintf("%8.1fx", s / t)
    printf "| %-28s | %12.1f | %s | %s | %12.1f | %10.1f | %8.1f%% | %12.1f |\n", n, s, ts, x, g, p, 100 * g / p, r }'
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
