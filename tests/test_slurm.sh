#!/usr/bin/env bash
# A real single-node Slurm (tools/slurm-local.sh): the generated sbatch script runs a ~2-minute sweep in
# allocations of one minute.  The sweep must complete across several allocations, every point stored
# exactly once, with results identical to an uninterrupted run; every daemon started is stopped.
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
spec=$src/specs/sweep_slurm.ini
t0=$(date +%s)
mpiexec -n 2 "$bin" run "$spec" -o "$dir/ref.h5" --quiet || fail "reference run"
echo "  uninterrupted reference: $(( $(date +%s) - t0 )) s on 2 ranks"

"$root/tools/icl-job" --cluster slurm --spec "$spec" --out "$dir/sweep.h5" --tasks-per-node 2 --walltime 00:01:00 \
  --warning 25 -o "$dir/job.sbatch" >/dev/null || fail "icl-job"
(cd "$dir" && sbatch job.sbatch) || fail "sbatch"
t0=$(date +%s)
while [ $(( $(date +%s) - t0 )) -lt 900 ]; do
  sleep 5
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
bash "$root/tools/slurm-local.sh" stop
pgrep -f "slurm.conf" >/dev/null && fail "Slurm daemons still running" || ok "daemons stopped"
echo "slurm tests: $failures failed"
exit $failures
