#!/usr/bin/env bash
# Job scripts without a scheduler: tools/icl-job validates and writes scripts that parse; the PBS script's
# logic (its own walltime warning, clean stop, qsub -W depend=afterany resubmission, --resume until
# complete) runs for real against a fake qsub that records its arguments, and the chained result equals
# an uninterrupted run.
set -u
src=$1
root=$(cd "$src/.." && pwd)
bin=$root/build/icl-sweep
dir=$(mktemp -d)
trap 'pkill -9 -f "icl-sweep run .*$dir" 2>/dev/null; rm -rf "$dir"' EXIT
. "$src/lib.sh"
need_python h5py numpy

# The generator refuses bad input with exit 2 and a message naming the option.
for args in "--cluster lsf" "--cluster slurm --spec $dir/none.ini --out $dir/o.h5" \
            "--cluster pbs --spec $src/specs/sweep_kill.ini --out $dir/o.h5 --walltime 90:00" \
            "--cluster slurm --spec $src/specs/sweep_kill.ini --out $dir/no/o.h5"; do
  out=$("$root/tools/icl-job" $args 2>&1); rc=$?
  [ $rc -eq 2 ] && grep -q "icl-job: option '" <<<"$out" && ok "icl-job refuses: $out" || fail "icl-job $args: rc $rc: $out"
done
for c in slurm pbs; do
  "$root/tools/icl-job" --cluster $c --spec "$src/specs/sweep_kill.ini" --out "$dir/o.h5" --nodes 2 --tasks-per-node 8 \
    --walltime 12:00:00 --partition batch -o "$dir/job.$c" >/dev/null && bash -n "$dir/job.$c" \
    && ok "$c script written and parses" || fail "$c script"
done
grep -qx "#SBATCH --time=12:00:00" "$dir/job.slurm" && grep -qx "#SBATCH --ntasks-per-node=8" "$dir/job.slurm" \
  && grep -qx "#SBATCH --signal=B:USR1@120" "$dir/job.slurm" && ok "slurm lines filled in" || fail "slurm lines"
grep -qx "#PBS -l select=2:ncpus=8:mpiprocs=8" "$dir/job.pbs" && grep -qx "#PBS -l walltime=12:00:00" "$dir/job.pbs" \
  && ok "pbs lines filled in" || fail "pbs lines"

# The PBS chain, for real, with a fake qsub: 8 s jobs with a 2 s warning for a ~9 s sweep (its longest point
# takes up to 5 s when another process holds one of the two cores: the window must hold it).
spec=$src/specs/sweep_kill.ini
mpiexec --oversubscribe -n 2 "$bin" run "$spec" -o "$dir/ref.h5" --quiet || fail "reference run"
mkdir -p "$dir/fakebin"
cat > "$dir/fakebin/qsub" <<FAKE
#!/bin/bash
echo "\$@" >> "$dir/qsub.log"
echo "fake.\$((\$(wc -l < "$dir/qsub.log") + 1))"
FAKE
chmod +x "$dir/fakebin/qsub"
printf 'localhost\nlocalhost\n' > "$dir/nodes"
"$root/tools/icl-job" --cluster pbs --spec "$spec" --out "$dir/pbs.h5" --tasks-per-node 2 --walltime 00:00:08 \
  --warning 2 -o "$dir/chain.pbs" >/dev/null
job=1 chain=0
while [ $job -le 20 ]; do
  PATH="$dir/fakebin:$PATH" PBS_JOBID=fake.$job PBS_NODEFILE="$dir/nodes" PBS_O_WORKDIR="$dir" ICL_CHAIN=$chain \
    bash "$dir/chain.pbs" > "$dir/job$job.log" 2>&1
  submitted=$( [ -f "$dir/qsub.log" ] && wc -l < "$dir/qsub.log" || echo 0)
  [ "$submitted" -lt $job ] && break   # this job did not resubmit: the sweep is complete
  line=$(tail -1 "$dir/qsub.log")
  grep -q -- "-W depend=afterany:fake.$job" <<<"$line" || fail "job $job resubmitted without its dependency: $line"
  chain=$(sed -n 's/.*ICL_CHAIN=\([0-9]*\).*/\1/p' <<<"$line")
  job=$((job + 1))
done
[ $job -ge 2 ] && ok "PBS chain: $job jobs, each resubmitted with depend=afterany on itself" || fail "PBS chain did not need a second job"
grep -q "sweep complete" "$dir/job$job.log" && ok "last job reports the sweep complete" || fail "last job: $(cat "$dir/job$job.log")"
"$bin" status "$dir/pbs.h5" | grep -q "records     16 in the logs, 0 duplicates" && ok "every point stored exactly once" \
  || fail "records: $("$bin" status "$dir/pbs.h5")"
"$py" "$src/compare_sweeps.py" "$dir/ref.h5" "$dir/pbs.h5" && ok "PBS chain == uninterrupted run" || fail "PBS chain result differs"
echo "job script tests: $failures failed"
exit $failures
