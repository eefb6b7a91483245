#!/usr/bin/env bash
# Large tokens: training throughput of the LSA loop at d = 5, 10, 20, 32, 64, 128 (n = 2d, L = 2, one head, full
# P, Q, batch ~2^15/d) beside the PyTorch peer (bench/torch_peer.py, OpenBLAS) and the FP32 peak of the same
# core, measured before each row, single thread, in one run (issue 13's target: >= 50% of peak and >= 10x the
# peer at every d).  ICL_BENCH_D="5 64": those d only.  The build, the peer and the core: bench/prelude.sh.
set -euo pipefail
source "$(dirname "$0")/prelude.sh"   # packages, build, one thread, $core, measure_peak, $peer_py
echo "single thread, float32; PyTorch peer: $(peer_name)"
echo "% of peak: the whole training step (drawing tasks, forward, backward, Adam) against the core's FP32 peak measured just before the row; model only: the model's loss and gradient on a drawn batch, timed alone (bench_lsa_split, best of 7, as the peak is a best-of)"
printf '| %4s | %4s | %5s | %12s | %14s | %9s | %12s | %10s | %9s | %10s |\n' d n batch "icl steps/s" "torch steps/s" "icl/torch" "icl GFLOP/s" "FP32 peak" "% of peak" "model only"
printf '|%s|%s|%s|%s|%s|%s|%s|%s|%s|%s|\n' ------ ------ ------- -------------- ---------------- ----------- -------------- ------------ ----------- ------------
for d in "${bench_d[@]}"; do
  steps=$(( d <= 10 ? 400 : d <= 32 ? 60 : 12 ))
  row_peak=$(measure_peak)
  split=$(pinned "$bld/bench/bench_lsa_split" "$d")
  echo "$split" >&2
  model=$(sed -n 's/.*model_gflops=\([0-9.]*\).*/\1/p' <<<"$split")
  line=$(pinned "$bld/bench/bench_train" "d:$d" "$steps")
  echo "$line" >&2
  sps=$(sed -n 's/.*steps_per_s=\([0-9.]*\).*/\1/p' <<<"$line")
  gf=$(sed -n 's/.*gflops=\([0-9.]*\).*/\1/p' <<<"$line")
  batch=$(sed -n 's/.* batch=\([0-9]*\).*/\1/p' <<<"$line")
  # The peer at its best: both of its formulations timed in full and the faster kept (its own auto choice,
  # from 4 steps each, picked the 3x slower one at d = 5 on this shared machine).  Above d = 10 its broadcast
  # form is 20-200x slower than bmm (d = 20: 0.28 vs 6.4 steps/s; d = 64: 39 s vs 0.18 s a step) and is not run.
  tsps=0
  for impl in bmm bcast; do
    [ -n "$peer_py" ] || break
    [ "$impl" = bcast ] && [ "$d" -gt 10 ] && continue
    tline=$(peer bench/torch_peer.py --d "$d" --n $((2 * d)) --layers 2 --batch "$batch" --seconds 10 --impl "$impl")
    echo "$tline" >&2
    tsps=$(awk -v a="$tsps" -v b="$(awk '{print $2}' <<<"$tline")" 'BEGIN {print (b > a ? b : a)}')
  done
  awk -v d="$d" -v b="$batch" -v s="$sps" -v t="$tsps" -v g="$gf" -v p="$row_peak" -v m="$model" 'BEGIN {
    ts = t > 0 ? sprintf("%14.2f", t) : sprintf("%14s", "-"); r = t > 0 ? sprintf("%8.1fx", s / t) : sprintf("%9s", "-")
    printf "| %4d | %4d | %5d | %12.2f | %s | %s | %12.1f | %10.1f | %8.1f%% | %9.1f%% |\n", d, 2 * d, b, s, ts, r, g, p,
           100 * g / p, 100 * m / p }'
done
