# Sourced by the script tests: MPI as root, check bookkeeping, and the Python a test needs.
#   ok MESSAGE / fail MESSAGE     record a check ($failures counts the failed ones)
#   need_python MODULE...         sets $py to an interpreter that imports them (tools/find-python)
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
ok() { echo "ok: $*"; }
need_python() {
  py=$("$(dirname "${BASH_SOURCE[0]}")/../tools/find-python" "$@") || { echo "FAIL: no Python with $*"; exit 1; }
}
# The sweep tests' helpers (after need_python h5py numpy; $src is the tests directory).
mpi() { local n=$1; shift; mpiexec --oversubscribe -n "$n" "$@"; }
compare() { "$py" "$src/compare_sweeps.py" "$1" "$2" && ok "$3" || fail "$3"; }
state() { "$py" -c "import h5py,sys; print(h5py.File(sys.argv[1],'r').attrs['sweep_state'])" "$1"; }
# Killing a whole job.  Start it as `setsid CMD &`: its session id is then $! (the launcher's pid), and
# every process it starts stays in that session.  Open MPI gives each rank its own process group, so
# `kill -9 -- -PGID` of mpiexec kills mpiexec alone and the ranks go on computing (and storing points)
# until they notice; a job is killed by session.  Processes of other sessions (a detached merge started
# in its own session) are deliberately not the job's.
#   session_procs SID   the live (not zombie) processes of session SID, one pid a line
#   kill_job PID        SIGKILL to every process of session PID, repeated (a process forked meanwhile) until
#                       none is left or 5 s passed; reaps PID; sets $job_procs to how many processes it
#                       found and $survivors to how many are left: a check fails unless 0
session_procs() { ps -e -o sid=,stat=,pid= | awk -v s="$1" '$1 == s && $2 !~ /^Z/ {print $3}'; }
kill_job() {
  local pid=$1 left
  job_procs=$(session_procs "$pid" | wc -l)
  pkill -9 -s "$pid" 2>/dev/null
  wait "$pid" 2>/dev/null
  for _ in $(seq 50); do
    left=$(session_procs "$pid")
    [ -z "$left" ] && break
    kill -9 $left 2>/dev/null
    sleep 0.1
  done
  survivors=$(session_procs "$pid" | wc -l)
  [ "$survivors" -eq 0 ] || fail "kill_job: $survivors process(es) of the job survived: $(ps -o pid=,args= -s "$pid")"
}
# kill_rounds SPEC OUT TOTAL LO SPAN: three rounds of a 2-rank `run --resume` killed with kill_job (the whole
# job) after LO + SPAN * U(0,1) seconds; sets $interrupted to the rounds killed mid-run: the round stored a
# record and left fewer than TOTAL points (a kill before the first record tests nothing the resume sees).
# Each round prints the records in the logs just before the kill (a record in flight may still land), once
# every process of the job is dead, and 2 s later (a check fails unless equal: nothing of the job ran on),
# and the processes of the job's session found and left (kill_job: a check fails unless none is left).
# $while_running, if set, is run (eval) in round 2 before the kill: it must not assign this function's
# variables (out, spec, pid...).  With $after_a_record set, the delay starts
# once the round has stored a point's record (the logs polled every 0.02 s, up to 20 s): a fast sweep is killed
# mid-run.  (Polling for any bytes in the logs, a halving sweep's rung checkpoints started it before any point
# was stored, and the next round then finished the sweep; polling `status` instead, which takes a while under
# CI's load, started it too late.)
logged_bytes() { cat "$1".points/*.log 2>/dev/null | wc -c; }
# A point record's frame holds the format's magic (kMagic, src/io/point_log.cpp); a rung checkpoint's does not.
point_records() { cat "$1".points/*.log 2>/dev/null | grep -ao ICLPT003 | wc -l; }
records_of() { "$bin" status "$1" 2>/dev/null | awk '/^records/ {n = $2} END {print n + 0}'; }
kill_rounds() {
  local spec=$1 out=$2 total=$3 lo=$4 span=$5 round pid stored before at_start just_before at_kill later
  interrupted=0
  for round in 1 2 3; do
    before=$(point_records "$out") at_start=$(records_of "$out")
    setsid mpiexec --oversubscribe -n 2 "$bin" run "$spec" -o "$out" --resume --quiet > "$out.kill$round.log" 2>&1 &
    pid=$!
    if [ -n "${after_a_record:-}" ]; then
      for _ in $(seq 1000); do [ "$(point_records "$out")" -gt "$before" ] && break; sleep 0.02; done
    fi
    sleep "$(awk -v s=$RANDOM -v lo="$lo" -v span="$span" 'BEGIN {srand(s); printf "%.2f", lo + span * rand()}')"
    [ $round -eq 2 ] && [ -n "${while_running:-}" ] && eval "$while_running"
    just_before=$(records_of "$out")
    kill_job $pid
    at_kill=$(records_of "$out")
    sleep 2
    later=$(records_of "$out")
    stored=$("$bin" status "$out" 2>/dev/null | awk '/^done/ {print $2}')
    stored=${stored:-0}
    [ "$stored" -lt "$total" ] && [ "$at_kill" -gt "$at_start" ] && interrupted=$((interrupted + 1))
    echo "  killed round $round with $stored of $total points stored: $job_procs process(es) in the job's session," \
         "$survivors left; records $at_start at the start, $just_before just before the kill, $at_kill once the job" \
         "was dead, $later 2 s later"
    [ "$later" = "$at_kill" ] || fail "round $round: records went on from $at_kill to $later after the kill"
    [ "$job_procs" -gt 0 ] || [ "$stored" -eq "$total" ] \
      || fail "round $round: the job ended by itself before the kill, incomplete: $(cat "$out.kill$round.log")"
  done
}
