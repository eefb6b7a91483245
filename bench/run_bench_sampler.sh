#!/usr/bin/env bash
# The task sampler's normal generators (issue 32, item 5), in one run on one core: v1, v2 and a ziggurat
# (bench_normals: speed, moments, KS), the training step at d = 5 and 10 drawn by v1 and by v2 (% of this
# build's FP32 peak, as bench/run_bench_d.sh), and the trained losses of v1 and v2 over seeds on two sweeps
# (bench/specs/sampler_*.ini: the same points and seeds, each drawn by both samplers).  ICL_MARCH=haswell
# (etc.) builds that instruction set (bench/prelude.sh).  SKIP_LOSSES=1 leaves out the sweeps (4 minutes).
set -euo pipefail
source "$(dirname "$0")/prelude.sh"
echo "FP32 peak of core $core: $peak GFLOP/s"
echo "== normal generators (chunks of 16 tasks, 70 normals a task)"
pinned "$bld/bench/bench_normals" 2
echo "== training step (d, n = 2d, L = 2; the peer's loop), by sampler"
printf '| %3s | %7s | %11s | %9s | %10s | %10s |\n' d sampler "steps/s" "% of peak" "data share" "model only"
for d in 5 10; do
  for s in v1 v2; do
    line=$(pinned "$bld/bench/bench_train" "d:$d" 400 "sampler=$s")
    sps=$(sed -n 's/.*steps_per_s=\([0-9.]*\).*/\1/p' <<<"$line")
    gf=$(sed -n 's/.*gflops=\([0-9.]*\).*/\1/p' <<<"$line")
    share=$(sed -n 's/.*data_share=\([0-9.]*\).*/\1/p' <<<"$line")
    printf '| %3d | %7s | %11.1f | %8.1f%% | %10.3f | %9.1f%% |\n' "$d" "$s" "$sps" "$(awk -v a="$gf" -v b="$peak" 'BEGIN {print 100 * a / b}')" \
      "$share" "$(awk -v a="$gf" -v b="$peak" -v s="$share" 'BEGIN {print 100 * a / b / (1 - s)}')"
  done
done
[ "${SKIP_LOSSES:-0}" = 1 ] && exit 0
py=$(tools/find-python numpy h5py)
for spec in lsa a23; do
  echo "== trained models, v1 against v2: bench/specs/sampler_$spec.ini"
  "$bld/icl-sweep" run "bench/specs/sampler_$spec.ini" -o "$bench_tmp/$spec.h5" --quiet
  metrics=test_loss
  [ "$spec" = a23 ] && metrics="test_loss analysis/precond_dist_whitened analysis/precond_a"
  "$py" bench/sampler_losses.py "$bench_tmp/$spec.h5" $metrics
done
