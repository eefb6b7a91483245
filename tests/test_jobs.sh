#!/usr/bin/env bash
# Job scripts without a scheduler: tools/icl-job validates and writes scripts that parse; the chain's
# decision by the sweep's exit status, for both schedulers (fake icl-sweep, mpirun, sbatch and qsub); the PBS
# script's logic (its own walltime warning, clean stop, qsub -W depend=afterany resubmission, --resume until
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

# The chain's decisions by the sweep's exit status (include/icl/cli/cli.hpp), for both schedulers, with a
# fake icl-sweep (exits with the next status of a list; `status` prints the state given with it), a fake
# mpirun (runs its command) and a fake sbatch / qsub (record the submission): drive CLUSTER "RC:STATE ..."
# [VAR=VALUE...] runs the generated script as the scheduler would, following its resubmissions (8 jobs at
# most), and sets $jobs, $runs (sweep runs over all jobs) and $last_rc (the last job's exit status).
mkdir -p "$dir/fake" "$dir/fakempi"
cat > "$dir/fake/icl-sweep" <<FAKE
#!/bin/bash
d=$dir/drive
case \$1 in
  run) n=\$((\$(cat \$d/runs) + 1)); echo \$n > \$d/runs
       step=\$(sed -n "\${n}p" \$d/seq); [ -n "\$step" ] || step=\$(tail -1 \$d/seq)
       echo "\${step#*:}" > \$d/state
       echo "fake icl-sweep run \$n: exit \${step%%:*}"; exit \${step%%:*} ;;
  status) echo "sweep       \$2 (\$(cat \$d/state), started 2026-01-01T00:00:00Z)"; echo "done        3 / 16 points" ;;
  *) exit 2 ;;
esac
FAKE
cat > "$dir/fakempi/mpirun" <<'FAKE'
#!/bin/bash
while [ $# -gt 0 ]; do case $1 in -n|-np|--hostfile) shift 2 ;; -*) shift ;; *) break ;; esac; done
exec "$@"
FAKE
cat > "$dir/fakempi/sbatch" <<FAKE
#!/bin/bash
echo "ICL_CHAIN=\${ICL_CHAIN:-} ICL_IO_FAILURES=\${ICL_IO_FAILURES:-} \$*" >> "$dir/drive/submitted"
wc -l < "$dir/drive/submitted"
FAKE
cat > "$dir/fakempi/qsub" <<FAKE
#!/bin/bash
echo "\$*" >> "$dir/drive/submitted"
echo "fake.\$((\$(wc -l < "$dir/drive/submitted") + 1))"
FAKE
chmod +x "$dir/fake/icl-sweep" "$dir/fakempi"/*
for c in slurm pbs; do
  "$root/tools/icl-job" --cluster $c --spec "$src/specs/sweep_kill.ini" --out "$dir/fake.h5" --tasks-per-node 2 \
    --bin "$dir/fake/icl-sweep" -o "$dir/decide.$c" >/dev/null || fail "icl-job for the $c decision tests"
done
drive() {
  local cluster=$1 seq=$2 job=1 line; shift 2
  local vars=(ICL_CHAIN=0)
  rm -rf "$dir/drive"; mkdir "$dir/drive"; echo 0 > "$dir/drive/runs"; : > "$dir/drive/submitted"
  tr ' ' '\n' <<<"$seq" > "$dir/drive/seq"
  while [ $job -le 8 ]; do
    env "${vars[@]}" ICL_LOCK_WAIT=0.2 "$@" PATH="$dir/fakempi:$PATH" SLURM_JOB_ID=$job SLURM_NTASKS=2 SLURM_JOB_NUM_NODES=1 \
      PBS_JOBID=fake.$job PBS_NODEFILE="$dir/nodes" PBS_O_WORKDIR="$dir" bash "$dir/decide.$cluster" > "$dir/drive/job$job.log" 2>&1
    last_rc=$?
    [ "$(wc -l < "$dir/drive/submitted")" -ge $job ] || break
    line=$(tail -1 "$dir/drive/submitted")
    vars=($(grep -o 'ICL_[A-Z_]*=[0-9]*' <<<"$line"))
    job=$((job + 1))
  done
  jobs=$((job > 8 ? 8 : job)) runs=$(cat "$dir/drive/runs")
}
# expect CLUSTER "RC:STATE ..." JOBS RUNS LAST_RC PATTERN WHAT [VAR=VALUE...]: PATTERN (grep -E) in the last job's output
expect() {
  local cluster=$1 seq=$2 want_jobs=$3 want_runs=$4 want_rc=$5 pattern=$6 what=$7; shift 7
  drive "$cluster" "$seq" "$@"
  local log=$dir/drive/job$jobs.log
  if [ "$jobs" = "$want_jobs" ] && [ "$runs" = "$want_runs" ] && [ "$last_rc" = "$want_rc" ] && grep -qE "$pattern" "$log"; then
    ok "$cluster: $what: $jobs job(s), $runs run(s), exit $last_rc: '$(grep -E "$pattern" "$log" | tail -1)'"
  else
    fail "$cluster: $what [$seq $*]: $jobs job(s) (want $want_jobs), $runs run(s) (want $want_runs), exit $last_rc (want $want_rc); last job's output:"
    sed 's/^/    | /' "$log"
  fi
}
printf 'localhost\nlocalhost\n' > "$dir/nodes"
t0=$SECONDS
for c in slurm pbs; do
  expect $c "0:complete" 1 1 0 "sweep complete" "exit 0 + complete ends the chain"
  expect $c "0:incomplete 0:incomplete 0:complete" 3 3 0 "sweep complete" "exit 0 + incomplete resubmits until complete"
  expect $c "0:incomplete" 3 3 1 "ICL_MAX_CHAIN" "exit 0 + incomplete: at most ICL_MAX_CHAIN resubmissions" ICL_MAX_CHAIN=2
  expect $c "2:incomplete" 1 1 2 "exit 2.*not resubmitting" "exit 2 (bad input) never resubmits"
  expect $c "75:running 75:running 0:complete" 1 3 0 "sweep complete" "exit 75 (lock held) waits and retries within the job"
  grep -c "exit 75.*waiting" "$dir/drive/job1.log" | grep -qx 2 && ok "$c: each lock conflict printed with its wait" \
    || fail "$c: lock conflict messages: $(cat "$dir/drive/job1.log")"
  expect $c "75:running" 1 3 75 "chain stopped.*exit 75" "exit 75 on every try: stops after ICL_LOCK_TRIES tries" ICL_LOCK_TRIES=3
  expect $c "75:running 0:incomplete 0:complete" 2 3 0 "sweep complete" "exit 75, then a clean stop: the chain goes on"
  expect $c "1:incomplete" 3 3 1 "chain stopped.*3 consecutive" "exit 1 (I/O error) on every attempt: chain stops after 3"
  [ "$(grep -l "exit 1 (I/O error" "$dir"/drive/job*.log | wc -l)" -eq 3 ] && ok "$c: each failed attempt names exit 1 in its job's output" \
    || fail "$c: I/O error messages: $(cat "$dir"/drive/job*.log)"
  expect $c "1:incomplete 1:incomplete 0:incomplete 1:incomplete 1:incomplete 0:complete" 6 6 0 "sweep complete" \
    "exit 1 twice, a good run, exit 1 twice: the count is of consecutive failures"
  expect $c "1:incomplete" 2 2 1 "chain stopped.*2 consecutive" "ICL_MAX_IO_RETRIES=2" ICL_MAX_IO_RETRIES=2
  expect $c "137:incomplete 0:complete" 2 2 0 "sweep complete" "a crash (exit 137) counts as a failed attempt and resubmits"
  expect $c "130:incomplete" 1 1 130 "exit 130.*not resubmitting" "exit 130 (SIGINT) ends the chain"
done
# The walltime warning while waiting for the lock: the wait ends at once and the chain goes on (Slurm: SIGUSR1
# to the script; PBS: the script's own timer, 1 s before a 2 s walltime).
for c in slurm pbs; do
  rm -rf "$dir/drive"; mkdir "$dir/drive"; echo 0 > "$dir/drive/runs"; : > "$dir/drive/submitted"; echo 75:running > "$dir/drive/seq"
  t1=$SECONDS
  ICL_LOCK_WAIT=20 ICL_WALLTIME_SECONDS=2 ICL_WARNING=1 PATH="$dir/fakempi:$PATH" SLURM_JOB_ID=1 SLURM_NTASKS=2 SLURM_JOB_NUM_NODES=1 \
    PBS_JOBID=fake.1 PBS_NODEFILE="$dir/nodes" PBS_O_WORKDIR="$dir" bash "$dir/decide.$c" > "$dir/drive/job1.log" 2>&1 &
  job_pid=$!
  if [ $c = slurm ]; then
    for _ in $(seq 50); do grep -q "waiting 20 s" "$dir/drive/job1.log" && break; sleep 0.1; done
    kill -USR1 $job_pid
  fi
  wait $job_pid; rc=$?
  took=$((SECONDS - t1))
  if [ $rc -eq 0 ] && [ $took -lt 10 ] && [ "$(wc -l < "$dir/drive/submitted")" = 1 ] && grep -q "ended while waiting for the lock" "$dir/drive/job1.log"; then
    ok "$c: walltime warning during the lock wait: stopped waiting after $took s, resubmitted"
  else
    fail "$c: walltime warning during the lock wait: exit $rc after $took s: $(cat "$dir/drive/job1.log")"
  fi
done
echo "  (decision tests: $((SECONDS - t0)) s)"

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
