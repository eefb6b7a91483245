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
# kill_rounds SPEC OUT TOTAL LO SPAN: three rounds of a 2-rank `run --resume` killed with kill -9 (the whole
# job) after LO + SPAN * U(0,1) seconds; sets $interrupted to the rounds that left fewer than TOTAL points.
# $while_running, if set, is run in round 2 before the kill.  With $after_a_record set, the delay starts
# once the round has appended something to OUT.points/ (polled up to 20 s): a fast sweep is killed mid-run.
logged_bytes() { cat "$1".points/*.log 2>/dev/null | wc -c; }
kill_rounds() {
  local spec=$1 out=$2 total=$3 lo=$4 span=$5 round pid stored before
  interrupted=0
  for round in 1 2 3; do
    before=$(logged_bytes "$out")
    setsid mpiexec --oversubscribe -n 2 "$bin" run "$spec" -o "$out" --resume --quiet >/dev/null 2>&1 &
    pid=$!
    if [ -n "${after_a_record:-}" ]; then
      for _ in $(seq 200); do [ "$(logged_bytes "$out")" -gt "$before" ] && break; sleep 0.1; done
    fi
    sleep "$(awk -v s=$RANDOM -v lo="$lo" -v span="$span" 'BEGIN {srand(s); printf "%.2f", lo + span * rand()}')"
    [ $round -eq 2 ] && [ -n "${while_running:-}" ] && eval "$while_running"
    kill -9 -- -$pid 2>/dev/null
    wait $pid 2>/dev/null
    pkill -9 -f "icl-sweep run .*$out" 2>/dev/null
    stored=$("$bin" status "$out" 2>/dev/null | awk '/^done/ {print $2}')
    stored=${stored:-0}
    [ "$stored" -lt "$total" ] && interrupted=$((interrupted + 1))
    echo "  killed round $round with $stored of $total points stored"
  done
}
