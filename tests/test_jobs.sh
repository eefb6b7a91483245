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

# The site options (sbatch's names and values): each becomes its line in both schedulers' scripts.
site=(--nodes 2 --tasks-per-node 8 --walltime 1-12:00:00 --warning 300 --partition batch --account proj1 --gres gpu:2
      --mail me@example.org --module openmpi/4.1.4 --module hdf5 --setup 'ulimit -s unlimited' --setup 'export OMP_NUM_THREADS=1')
have_lines() {   # FILE WHAT LINE...: every LINE is a whole line of FILE
  local file=$1 what=$2 line missing=(); shift 2
  for line in "$@"; do grep -qxF -- "$line" "$file" || missing+=("$line"); done
  [ ${#missing[@]} -eq 0 ] && ok "$what: $# lines" || fail "$what: missing '${missing[*]}' in: $(grep -v '^  ' "$file" | head -40)"
}
"$root/tools/icl-job" --cluster slurm --spec "$src/specs/sweep_kill.ini" --out "$dir/o.h5" "${site[@]}" --qos long \
  --constraint '[skylake|icelake]&ib' --mem 4GB --launch srun -o "$dir/site.slurm" >/dev/null && bash -n "$dir/site.slurm" \
  || fail "icl-job with the site options (slurm)"
have_lines "$dir/site.slurm" "slurm: site options" "#SBATCH --nodes=2" "#SBATCH --ntasks-per-node=8" "#SBATCH --time=1-12:00:00" \
  "#SBATCH --signal=B:USR1@300" "#SBATCH --partition=batch" "#SBATCH --account=proj1" "#SBATCH --qos=long" \
  "#SBATCH --constraint=[skylake|icelake]&ib" "#SBATCH --gres=gpu:2" "#SBATCH --mem=4G" "#SBATCH --mail-user=me@example.org" \
  "#SBATCH --mail-type=END,FAIL" "export ICL_LAUNCH=\${ICL_LAUNCH:-srun}" "export ICL_SRUN_MPI=\${ICL_SRUN_MPI-pmix}" \
  "export ICL_WALLTIME_SECONDS=\${ICL_WALLTIME_SECONDS:-129600}" "ulimit -s unlimited" "export OMP_NUM_THREADS=1"
grep -c "^module load " "$dir/site.slurm" | grep -qx 2 && grep -q "^module load openmpi/4.1.4 ||" "$dir/site.slurm" \
  && [ "$(grep -n '^module load hdf5' "$dir/site.slurm" | cut -d: -f1)" -lt "$(grep -n '^ulimit -s' "$dir/site.slurm" | cut -d: -f1)" ] \
  && [ "$(grep -n '^export OMP_NUM' "$dir/site.slurm" | cut -d: -f1)" -lt "$(grep -n '^set -u$' "$dir/site.slurm" | cut -d: -f1)" ] \
  && ok "slurm: module loads, then the setup lines, in order, before the template's body" || fail "slurm: module / setup lines"
"$root/tools/icl-job" --cluster pbs --spec "$src/specs/sweep_kill.ini" --out "$dir/o.h5" "${site[@]}" --mem-per-cpu 2000 \
  --mail-type BEGIN,end -o "$dir/site.pbs" >/dev/null && bash -n "$dir/site.pbs" || fail "icl-job with the site options (pbs)"
have_lines "$dir/site.pbs" "pbs: site options (mem-per-cpu 2000 x 8 ranks per node, gpu:2 as ngpus)" \
  "#PBS -l select=2:ncpus=8:mpiprocs=8:mem=16000mb:ngpus=2" "#PBS -l walltime=36:00:00" "#PBS -q batch" "#PBS -A proj1" \
  "#PBS -M me@example.org" "#PBS -m be" "ulimit -s unlimited" "export OMP_NUM_THREADS=1"
"$root/tools/icl-job" --cluster pbs --spec "$src/specs/sweep_kill.ini" --out "$dir/o.h5" --mem 4G --mail me -o "$dir/site2.pbs" >/dev/null \
  && have_lines "$dir/site2.pbs" "pbs: --mem per node, --mail's default types" "#PBS -l select=1:ncpus=$(nproc):mpiprocs=$(nproc):mem=4gb" \
     "#PBS -M me" "#PBS -m ae" || fail "icl-job pbs --mem"
"$root/tools/icl-job" --cluster slurm --spec "$src/specs/sweep_kill.ini" --out "$dir/o.h5" --mem-per-cpu 1500 --mail-type FAIL \
  --srun-mpi default --launch srun -o "$dir/site2.slurm" >/dev/null \
  && have_lines "$dir/site2.slurm" "slurm: --mem-per-cpu (no unit: megabytes), --mail-type alone, --srun-mpi default" \
     "#SBATCH --mem-per-cpu=1500M" "#SBATCH --mail-type=FAIL" "export ICL_SRUN_MPI=\${ICL_SRUN_MPI-}" || fail "icl-job slurm --mem-per-cpu"

# Bad values: exit 2, a message naming the option, the value and the rule; nothing written (not even a
# temporary file), and an existing script is left as it was.
refuse() {   # CLUSTER PATTERN ARGS...: PATTERN (grep -E) in the message
  local c=$1 pattern=$2 msg rc; shift 2
  rm -f "$dir/refused/"*
  msg=$("$root/tools/icl-job" --cluster "$c" --spec "$src/specs/sweep_kill.ini" --out "$dir/o.h5" -o "$dir/refused/job.sh" "$@" 2>&1); rc=$?
  if [ $rc -eq 2 ] && grep -qE -- "$pattern" <<<"$msg" && [ -z "$(ls -A "$dir/refused")" ]; then
    ok "$c refuses $*: $msg"
  else
    fail "$c $*: exit $rc, message '$msg' (want exit 2 and /$pattern/), files: $(ls -A "$dir/refused")"
  fi
}
mkdir -p "$dir/refused"
refuse slurm "option '--walltime' = '90:00': must be \[D-\]HH:MM:SS" --walltime 90:00
refuse pbs "option '--walltime' = '90': must be \[D-\]HH:MM:SS" --walltime 90
refuse slurm "option '--walltime' = '1-24:00:00': must be" --walltime 1-24:00:00
refuse slurm "option '--walltime' = '12:60:00': must be" --walltime 12:60:00
refuse slurm "option '--walltime' = '00:00:00': must be longer than 0" --walltime 00:00:00
refuse slurm "option '--warning' = '3600': must be less than the walltime \(01:00:00 = 3600 s\)" --walltime 01:00:00 --warning 3600
refuse pbs "option '--warning' = '4000': must be less than the walltime" --walltime 01:00:00 --warning 4000
refuse slurm "option '--warning' = '5m': must be a whole number of seconds" --warning 5m
refuse slurm "option '--warning' = '0': must be a whole number of seconds > 0" --warning 0
refuse slurm "option '--warning' = '70000': must be <= 65535" --walltime 48:00:00 --warning 70000
refuse slurm "option '--mem' = '4.5G': must be a whole number with an optional unit K, M, G or T" --mem 4.5G
refuse pbs "option '--mem' = '4X': must be a whole number" --mem 4X
refuse pbs "option '--mem' = '0': must be more than 0" --mem 0
refuse slurm "option '--mem-per-cpu' = '0': must be more than 0" --mem-per-cpu 0
refuse slurm "options '--mem' and '--mem-per-cpu' exclude each other" --mem 4G --mem-per-cpu 1G
refuse slurm "option '--gres' = 'gpu 2': must be NAME\[:TYPE\]\[:COUNT\]" --gres "gpu 2"
refuse pbs "option '--gres' = 'gpu:a100:1': PBS has no equivalent" --gres gpu:a100:1
refuse pbs "option '--qos' = 'long': PBS has no equivalent" --qos long
refuse pbs "option '--constraint' = 'skylake': PBS has no equivalent" --constraint skylake
refuse pbs "option '--launch' = 'srun': PBS has no equivalent" --launch srun
refuse slurm "option '--constraint' = 'a b': must be sbatch's feature expression" --constraint "a b"
refuse slurm "option '--partition' = 'a b': must be a name" --partition "a b"
refuse slurm "option '--account' = 'x#y': must be a name" --account "x#y"
refuse slurm "option '--qos' = 'a\"b': must be a name" --qos 'a"b'
refuse slurm "option '--mail' = 'a b@c': must be an address" --mail "a b@c"
refuse slurm "option '--mail-type' = 'END,WHEN': 'WHEN' is not one of" --mail-type END,WHEN
refuse pbs "option '--mail-type' = 'TIME_LIMIT': 'TIME_LIMIT' has no PBS equivalent" --mail-type TIME_LIMIT
refuse slurm "option '--module' = 'openmpi hdf5': must be one module name" --module "openmpi hdf5"
refuse slurm "option '--setup' = 'if true; then': is not a complete shell command" --setup "if true; then"
refuse slurm "option '--setup' = 'cat <<EOF': is not a complete shell command" --setup "cat <<EOF"
refuse slurm "option '--setup' = '': must be one non-empty line" --setup ""
refuse slurm "must be one non-empty line" --setup $'echo a\necho b'
refuse slurm "option '--srun-mpi' = 'pmix v4': must be a plugin of srun --mpi=list" --srun-mpi "pmix v4"
echo "#!/bin/bash" > "$dir/refused/keep.sh"
"$root/tools/icl-job" --cluster slurm --spec "$src/specs/sweep_kill.ini" --out "$dir/o.h5" --warning 9999 -o "$dir/refused/keep.sh" 2>/dev/null
[ $? -eq 2 ] && [ "$(cat "$dir/refused/keep.sh")" = "#!/bin/bash" ] && [ "$(ls -A "$dir/refused")" = keep.sh ] \
  && ok "a refused run leaves an existing script as it was" || fail "existing script: $(ls -A "$dir/refused"): $(head -3 "$dir/refused/keep.sh")"

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
  run) n=\$((\$(cat \$d/runs) + 1)); echo \$n > \$d/runs; echo "\${ICL_EXPECT_RANKS:-unset}" > \$d/expect
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
cat > "$dir/fakempi/srun" <<'FAKE'
#!/bin/bash
echo "$*" >> "${ICL_TEST_DRIVE:?}/srun.log"
while [ $# -gt 0 ]; do case $1 in -*) shift ;; *) break ;; esac; done
exec "$@"
FAKE
# sbatch keeps a copy of the script it was given and the job runs the copy (as Slurm does: $0 is the copy)
cat > "$dir/fakempi/sbatch" <<FAKE
#!/bin/bash
n=\$((\$(wc -l < "$dir/drive/submitted") + 1))
cp "\${@: -1}" "$dir/drive/spool.\$n"
echo "ICL_CHAIN=\${ICL_CHAIN:-} ICL_IO_FAILURES=\${ICL_IO_FAILURES:-} \${*:1:\$#-1} $dir/drive/spool.\$n" >> "$dir/drive/submitted"
echo \$n
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
# The first job runs $drive_script (default decide.CLUSTER); each next one runs the script the previous
# one submitted (the last word of its sbatch / qsub line).
drive() {
  local cluster=$1 seq=$2 job=1 line script=${drive_script:-$dir/decide.$1}; shift 2
  local vars=(ICL_CHAIN=0)
  rm -rf "$dir/drive"; mkdir "$dir/drive"; echo 0 > "$dir/drive/runs"; : > "$dir/drive/submitted"
  tr ' ' '\n' <<<"$seq" > "$dir/drive/seq"
  while [ $job -le 8 ]; do
    env "${vars[@]}" ICL_LOCK_WAIT=0.2 "$@" PATH="$dir/fakempi:$PATH" SLURM_JOB_ID=$job SLURM_NTASKS=2 SLURM_JOB_NUM_NODES=1 \
      PBS_JOBID=fake.$job PBS_NODEFILE="$dir/nodes" PBS_O_WORKDIR="$dir" ICL_TEST_DRIVE="$dir/drive" bash "$script" \
      > "$dir/drive/job$job.log" 2>&1
    last_rc=$?
    [ "$(wc -l < "$dir/drive/submitted")" -ge $job ] || break
    line=$(tail -1 "$dir/drive/submitted")
    script=${line##* }
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
# --module and --setup lines run in every job of the chain, before the sweep: the resubmitted scripts (Slurm:
# sbatch's copy, $0; PBS: ICL_JOB_SCRIPT) carry them.  `module` is a fake shell function, exported.
module() { echo "fake module $*"; [ "$2" != broken ] || { echo "fake module: $2 not found"; return 1; }; }
export -f module
for c in slurm pbs; do
  "$root/tools/icl-job" --cluster $c --spec "$src/specs/sweep_kill.ini" --out "$dir/fake.h5" --tasks-per-node 2 \
    --bin "$dir/fake/icl-sweep" --module openmpi/4.1.4 --module hdf5 --setup 'export ICL_TEST_SETUP="link $ICL_CHAIN"' \
    --setup 'echo "fake setup: $ICL_TEST_SETUP, in $PWD"' -o "$dir/env.$c" >/dev/null || fail "icl-job --module --setup ($c)"
  drive_script=$dir/env.$c
  expect $c "0:incomplete 0:incomplete 0:complete" 3 3 0 "sweep complete" "--module / --setup: a chain of 3 jobs"
  in_order=0 where=$([ $c = pbs ] && echo "$dir" || pwd)   # PBS: the setup lines run in PBS_O_WORKDIR; Slurm starts there
  for k in 1 2 3; do
    log=$dir/drive/job$k.log
    a=$(grep -n "^fake module load openmpi/4.1.4$" "$log" | cut -d: -f1) b=$(grep -n "^fake module load hdf5$" "$log" | cut -d: -f1)
    s=$(grep -n "^fake setup: link $((k - 1)), in $where$" "$log" | cut -d: -f1) r=$(grep -n "^fake icl-sweep run $k:" "$log" | cut -d: -f1)
    [ -n "$a" ] && [ -n "$b" ] && [ -n "$s" ] && [ -n "$r" ] && [ "$a" -lt "$b" ] && [ "$b" -lt "$s" ] && [ "$s" -lt "$r" ] \
      && in_order=$((in_order + 1)) || fail "$c: job $k: module / setup lines not before the sweep: $(cat "$log")"
  done
  if [ $c = slurm ]; then resubmitted="$dir/drive/spool.1 $dir/drive/spool.2"; else resubmitted="$dir/env.pbs $dir/env.pbs"; fi
  [ "$(head -2 "$dir/drive/submitted" | awk '{print $NF}' | tr '\n' ' ')" = "$resubmitted " ] \
    && ok "$c: in each of the $in_order jobs (resubmitted as $(awk '{print $NF}' "$dir/drive/submitted" | xargs -n1 basename | paste -sd' ')): module loads, setup lines, then the sweep" \
    || fail "$c: resubmitted scripts: $(cat "$dir/drive/submitted")"
  "$root/tools/icl-job" --cluster $c --spec "$src/specs/sweep_kill.ini" --out "$dir/fake.h5" --tasks-per-node 2 \
    --bin "$dir/fake/icl-sweep" --module broken -o "$dir/env.$c" >/dev/null || fail "icl-job --module broken ($c)"
  expect $c "0:complete" 1 0 2 "'module load broken' failed.*not starting the sweep" "a failing module load: exit 2, no sweep, no resubmission"
  drive_script=""
done
unset -f module

# --launch srun: the srun line (a fake srun records it), its --mpi plugin and the ranks the sweep is told to expect.
for variant in "pmix|" "pmi2|ICL_SRUN_MPI=pmi2" "default|"; do
  mpi=${variant%%|*} extra=${variant#*|}
  "$root/tools/icl-job" --cluster slurm --spec "$src/specs/sweep_kill.ini" --out "$dir/fake.h5" --tasks-per-node 2 \
    --bin "$dir/fake/icl-sweep" --launch srun $([ "$mpi" = pmi2 ] || echo "--srun-mpi $mpi") -o "$dir/srun.slurm" >/dev/null \
    || fail "icl-job --launch srun"
  drive_script=$dir/srun.slurm
  expect slurm "0:incomplete 0:complete" 2 2 0 "sweep complete" "--launch srun (${extra:-"--srun-mpi $mpi"})" $extra
  drive_script=""
  want="--ntasks=2 $dir/fake/icl-sweep run "
  case $mpi in pmix) want="--mpi=pmix $want" ;; pmi2) want="--mpi=pmi2 $want" ;; esac
  [ "$(grep -c -- "^$want" "$dir/drive/srun.log")" = 2 ] && [ "$(cat "$dir/drive/expect")" = 2 ] \
    && ok "srun line in both jobs: 'srun $(head -1 "$dir/drive/srun.log" | cut -d' ' -f1-3) ...', ICL_EXPECT_RANKS=2" \
    || fail "srun lines (want '$want'): $(cat "$dir/drive/srun.log"); ICL_EXPECT_RANKS=$(cat "$dir/drive/expect")"
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

# The job scripts export ICL_EXPECT_RANKS (the tasks asked for): a launcher that did not join the tasks into
# one MPI job (srun with an MPI plugin this MPI does not speak starts each task as a singleton) is refused
# with exit 2, which ends the chain, before anything is written.
msg=$(ICL_EXPECT_RANKS=2 mpiexec -n 1 "$bin" run "$src/specs/sweep_kill.ini" -o "$dir/expect.h5" 2>&1); rc=$?
[ $rc -eq 2 ] && grep -q "started as 1 rank but the job expects 2 (ICL_EXPECT_RANKS)" <<<"$msg" && ! ls -d "$dir"/expect.h5* 2>/dev/null \
  && ok "a rank count other than ICL_EXPECT_RANKS: exit 2, nothing written: $msg" || fail "ICL_EXPECT_RANKS: exit $rc: $msg; $(ls -d "$dir"/expect.h5*)"
for want in 1x 0 -1 1.0; do   # not a rank count: refused (strtol read "1x" as 1 and ran the sweep)
  msg=$(ICL_EXPECT_RANKS="$want" mpiexec -n 1 "$bin" run "$src/specs/sweep_kill.ini" -o "$dir/expect.h5" 2>&1); rc=$?
  [ $rc -eq 2 ] && grep -q "ICL_EXPECT_RANKS = '$want': must be a whole number of ranks" <<<"$msg" && ! ls -d "$dir"/expect.h5* 2>/dev/null \
    && ok "ICL_EXPECT_RANKS='$want': exit 2, nothing written" || fail "ICL_EXPECT_RANKS='$want': exit $rc: $msg; $(ls -d "$dir"/expect.h5*)"
done

# The PBS chain, for real, with a fake qsub: 8 s jobs with a 2 s warning for a ~9 s sweep (its longest point
# takes up to 5 s when another process holds one of the two cores: the window must hold it).  On a machine
# busier than that the reference run is slower: the jobs get 0.6 of its time and the warning a quarter of that.
# On a faster one (4 s on a Zen 5 core: one job held it all) the same points train k times as many steps, a
# ~9 s sweep again, its longest point as long a share of it.
spec=$src/specs/sweep_kill.ini
reference() {
  rm -rf "$dir/ref.h5" "$dir/ref.h5.points"
  t_ref=$SECONDS
  mpiexec --oversubscribe -n 2 "$bin" run "$spec" -o "$dir/ref.h5" --quiet || fail "reference run"
  ref_s=$((SECONDS - t_ref))
}
reference
if [ "$ref_s" -lt 9 ]; then
  k=$(( ref_s > 0 ? (9 + ref_s - 1) / ref_s : 9 ))
  steps=$(sed -n 's/^steps = //p' "$spec")
  sed "s/^steps = .*/steps =$(for s in $steps; do printf ' %d' $((s * k)); done)/" "$spec" > "$dir/chain.ini"
  spec=$dir/chain.ini
  echo "  reference run: $ref_s s; the chain's points train $k times the steps"
  reference
fi
wall=$((ref_s * 6 / 10 > 8 ? ref_s * 6 / 10 : 8))
warn=$((wall / 4 > 2 ? wall / 4 : 2))
echo "  reference run: $ref_s s; PBS jobs of $wall s with a $warn s warning"
mkdir -p "$dir/fakebin"
cat > "$dir/fakebin/qsub" <<FAKE
#!/bin/bash
echo "\$@" >> "$dir/qsub.log"
echo "fake.\$((\$(wc -l < "$dir/qsub.log") + 1))"
FAKE
chmod +x "$dir/fakebin/qsub"
printf 'localhost\nlocalhost\n' > "$dir/nodes"
"$root/tools/icl-job" --cluster pbs --spec "$spec" --out "$dir/pbs.h5" --tasks-per-node 2 \
  --walltime "$(printf '00:%02d:%02d' $((wall / 60)) $((wall % 60)))" --warning $warn -o "$dir/chain.pbs" >/dev/null
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
