#!/usr/bin/env bash
# A real single-node Slurm (tools/slurm-local.sh): the generated sbatch script runs a sweep of a few minutes
# (specs/sweep_slurm.ini) in allocations of one minute.  The sweep must complete across several allocations,
# every point stored exactly once, with results identical to an uninterrupted run; then the same through the
# srun launcher, stopped once by the walltime warning; every daemon started is stopped.
# Exit 77 (skipped) when not root: the daemons need it.
set -u
src=$1
root=$(cd "$src/.." && pwd)
bin=$root/build/icl-sweep
[ "$(id -u)" -eq 0 ] || { echo "skipped: starting slurmctld, slurmd and munged needs root"; exit 77; }
export ICL_SLURM_DIR=$(mktemp -d /tmp/icl-slurm-test.XXXXXX)
dir=$(mktemp -d)
cleanup() {
  bash "$root/tools/slurm-local.sh" stop 2>/dev/null
  pkill -9 -f "icl-sweep run .*$dir" 2>/dev/null
  rm -rf "$dir"
}
trap cleanup EXIT
. "$src/lib.sh"
need_python h5py numpy

eval "$(bash "$root/tools/slurm-local.sh" start)" || { echo "FAIL: could not start Slurm"; exit 1; }
ok "Slurm running: $(sinfo -h -o '%D node, %c cpus, %t')"
# The chain must need several one-minute allocations (each stopped by its warning after about half a minute)
# whatever this machine's speed: where the uninterrupted run takes under a minute, it is run again with its steps
# scaled to about 90 s (on a Zen 5 core, after the analyses' speed-ups of 2026-11-29, it took 28 s and one
# allocation sufficed).
spec=$src/specs/sweep_slurm.ini
reference() {
  rm -rf "$dir/ref.h5" "$dir"/ref.h5.*
  local t0=$(date +%s)
  mpiexec -n 2 "$bin" run "$spec" -o "$dir/ref.h5" --quiet || fail "reference run"
  ref_s=$(( $(date +%s) - t0 ))
  echo "  uninterrupted reference: $ref_s s on 2 ranks, $(sed -n 's/^steps = //p' "$spec") steps a point"
}
reference
if [ "$ref_s" -lt 60 ]; then
  steps=$(( (5000 * 90 / (ref_s > 0 ? ref_s : 1) + 999) / 1000 * 1000 ))
  sed "s/^steps = .*/steps = $steps/" "$src/specs/sweep_slurm.ini" > "$dir/sweep_slurm.ini"
  spec=$dir/sweep_slurm.ini
  reference
fi

"$root/tools/icl-job" --cluster slurm --spec "$spec" --out "$dir/sweep.h5" --tasks-per-node 2 --walltime 00:01:00 \
  --warning 25 -o "$dir/job.sbatch" >/dev/null || fail "icl-job"
(cd "$dir" && sbatch job.sbatch) || fail "sbatch"
t0=$(date +%s)
while [ $(( $(date +%s) - t0 )) -lt 900 ]; do
  sleep 1
  jobs=$(squeue -h | wc -l)
  state=$("$bin" status "$dir/sweep.h5" 2>/dev/null | sed -n 's/^sweep .*(\([a-z]*\).*/\1/p')
  [ "$jobs" -eq 0 ] && [ "$state" = complete ] && break
done
echo "  chained run: $(( $(date +%s) - t0 )) s"
allocations=$(cat "$dir"/icl-sweep-*.out 2>/dev/null | grep -c "^icl-sweep job [0-9]* (chain link")
grep -h "^icl-sweep job" "$dir"/icl-sweep-*.out | sed 's/^/  /'
[ "$state" = complete ] && ok "sweep complete through Slurm" || fail "sweep state '$state' after 15 minutes"
[ "$allocations" -ge 2 ] && ok "needed $allocations allocations of one minute" || fail "only $allocations allocation(s)"
"$bin" status "$dir/sweep.h5" | grep -q "records     64 in the logs, 0 duplicates" && ok "every point stored exactly once" \
  || fail "records: $("$bin" status "$dir/sweep.h5")"
"$py" "$src/compare_sweeps.py" "$dir/ref.h5" "$dir/sweep.h5" && ok "identical to the uninterrupted run" || fail "results differ"

# The srun launcher (icl-job --launch srun: srun --mpi=pmix, which Debian's Open MPI speaks; srun --mpi=list
# names the plugins), and a --setup line, through a chain: after the first job has stored a few points it
# gets the walltime warning (scancel --batch --signal=USR1, what --signal=B:USR1@ sends), srun forwards it to
# every process of its step, the sweep stops cleanly, the script resubmits, the next job completes it.
# A 16-point spec (~10 s on 2 free cores): the chain needs the warning, not the clock.
small=$src/specs/sweep_kill.ini
mpiexec -n 2 "$bin" run "$small" -o "$dir/ref_small.h5" --quiet || fail "reference run (srun case)"
echo "  srun --mpi=list: $(srun --mpi=list 2>&1 | tr -s '\n\t ' ' ')"
mkdir "$dir/srun"
"$root/tools/icl-job" --cluster slurm --spec "$small" --out "$dir/srun/sweep.h5" --tasks-per-node 2 --walltime 00:10:00 \
  --warning 60 --launch srun --setup 'echo "setup line: job $SLURM_JOB_ID, chain link ${ICL_CHAIN:-0}"' \
  -o "$dir/srun/job.sbatch" >/dev/null || fail "icl-job --launch srun"
first=$(cd "$dir/srun" && sbatch --parsable job.sbatch) || fail "sbatch (srun)"
t0=$(date +%s) signalled=0
while [ $(( $(date +%s) - t0 )) -lt 900 ]; do
  sleep 1
  records=$("$bin" status "$dir/srun/sweep.h5" 2>/dev/null | awk '/^records/ {print $2}')
  if [ $signalled -eq 0 ] && [ "${records:-0}" -ge 2 ]; then
    scancel --batch --signal=USR1 "$first" && signalled=1 && echo "  SIGUSR1 to job $first with $records points stored"
  fi
  state=$("$bin" status "$dir/srun/sweep.h5" 2>/dev/null | sed -n 's/^sweep .*(\([a-z]*\).*/\1/p')
  [ "$(squeue -h | wc -l)" -eq 0 ] && [ $signalled -eq 1 -o "$state" = complete ] && break
done
echo "  srun chain: $(( $(date +%s) - t0 )) s"
cat "$dir"/srun/icl-sweep-*.out | grep -E "^(icl-sweep job|setup line|srun|slurmstepd)" | sed 's/^/  /'
allocations=$(cat "$dir"/srun/icl-sweep-*.out 2>/dev/null | grep -c "^icl-sweep job [0-9]* (chain link")
launched=$(cat "$dir"/srun/icl-sweep-*.out 2>/dev/null | grep -c "^icl-sweep job: srun --mpi=pmix --ntasks=2 ")
setups=$(cat "$dir"/srun/icl-sweep-*.out 2>/dev/null | grep -c "^setup line: job [0-9]*, chain link [0-9]")
[ "$state" = complete ] && ok "srun: sweep complete" || fail "srun: sweep state '$state'"
[ "$allocations" -ge 2 ] && [ "$launched" -eq "$allocations" ] && [ "$setups" -eq "$allocations" ] \
  && ok "srun: $allocations jobs, each launched the sweep with srun --mpi=pmix after its --setup line" \
  || fail "srun: $allocations job(s), $launched srun launch(es), $setups setup line(s)"
grep -q "stopped by a signal" "$dir"/srun/icl-sweep-$first.out && grep -q "sweep incomplete after this allocation (exit 0)" "$dir"/srun/icl-sweep-$first.out \
  && ok "srun: the warning stopped the first job cleanly (exit 0) and it resubmitted" || fail "srun: first job: $(cat "$dir"/srun/icl-sweep-$first.out)"
grep -h "points on 2 ranks" "$dir"/srun/icl-sweep-*.out | grep -q . && ok "srun: the 2 tasks joined one MPI job" || fail "srun: ranks"
"$bin" status "$dir/srun/sweep.h5" | grep -q "records     16 in the logs, 0 duplicates" && ok "srun: every point stored exactly once" \
  || fail "srun: records: $("$bin" status "$dir/srun/sweep.h5")"
"$py" "$src/compare_sweeps.py" "$dir/ref_small.h5" "$dir/srun/sweep.h5" && ok "srun: identical to the uninterrupted run" || fail "srun: results differ"

bash "$root/tools/slurm-local.sh" stop
pgrep -f "slurm.conf" >/dev/null && fail "Slurm daemons still running" || ok "daemons stopped"
echo "slurm tests: $failures failed"
exit $failures
