#!/usr/bin/env bash
# The sweep under real mpiexec: bitwise-identical results on 1, 2 and 3 ranks; kill -9 of the whole job
# at random moments, then --resume, equals an uninterrupted run; SIGUSR1 stops cleanly (exit 0,
# resumable); spec errors exit 2 naming file:line and write nothing; outputs are never clobbered; a
# spec change is refused on --resume; a diverging point is recorded and the sweep goes on.
set -u
bin=$1
src=$2
dir=$(mktemp -d)
cleanup() { pkill -9 -f "icl-sweep run .*$dir" 2>/dev/null; rm -rf "$dir"; }
trap cleanup EXIT
. "$src/lib.sh"
need_python h5py numpy
spec=$src/specs/sweep_small.ini

# Spec errors: exit 2, file:line, nothing written.
printf 'd = 3\nn = 10\nlayers = 1 -2\n' > "$dir/bad.ini"
out=$(mpi 1 "$bin" run "$dir/bad.ini" -o "$dir/bad.h5" 2>&1); rc=$?
[ $rc -eq 2 ] && grep -qF "bad.ini:3: option 'layers' = '-2'" <<<"$out" && [ ! -e "$dir/bad.h5" ] && [ ! -e "$dir/bad.h5.points" ] \
  && ok "spec error names file:line, exit 2, nothing written" || fail "spec error: rc $rc: $out"

# 1, 2 and 3 ranks give the same bits.
for n in 1 2 3; do
  mpi $n "$bin" run "$spec" -o "$dir/r$n.h5" --quiet || fail "run on $n ranks"
done
[ "$(state "$dir/r1.h5")" = complete ] && ok "1-rank sweep complete" || fail "1-rank sweep not complete"
compare "$dir/r1.h5" "$dir/r2.h5" "2 ranks == 1 rank, bit for bit"
compare "$dir/r1.h5" "$dir/r3.h5" "3 ranks == 1 rank, bit for bit"
# Started by no launcher: one rank without MPI (parallel.hpp), and with ICL_SWEEP_MPI=1 a singleton MPI job.
"$bin" run "$spec" -o "$dir/solo.h5" --quiet || fail "run without a launcher"
ICL_SWEEP_MPI=1 "$bin" run "$spec" -o "$dir/single.h5" --quiet || fail "singleton MPI run"
compare "$dir/r1.h5" "$dir/solo.h5" "no launcher (no MPI) == 1 rank under mpiexec, bit for bit"
compare "$dir/r1.h5" "$dir/single.h5" "ICL_SWEEP_MPI=1 singleton == 1 rank under mpiexec, bit for bit"

# Never clobbered; a different spec is refused on --resume.
before=$(md5sum < "$dir/r1.h5")
out=$(mpi 1 "$bin" run "$spec" -o "$dir/r1.h5" 2>&1); rc=$?
[ $rc -eq 2 ] && grep -qF "pass --resume" <<<"$out" && [ "$(md5sum < "$dir/r1.h5")" = "$before" ] && ok "existing output refused" || fail "existing output: rc $rc: $out"
out=$(mpi 1 "$bin" run "$spec" -o "$dir/r1.h5" --resume --steps 100 2>&1); rc=$?
[ $rc -eq 2 ] && grep -qF "different spec" <<<"$out" && ok "resume with another spec refused" || fail "resume with another spec: rc $rc: $out"
# The sampler's version (data/normals.hpp): a new sweep draws with v2 and every row says so; another version
# is another spec, refused on --resume with the file untouched.
samplers=$("$py" -c "import h5py,sys; print(' '.join(sorted({s.decode() for s in h5py.File(sys.argv[1],'r')['points/sampler'][:]})))" "$dir/r1.h5")
[ "$samplers" = v2 ] && ok "a new sweep draws with sampler v2, stored in every row" || fail "sampler column: '$samplers'"
before=$(md5sum < "$dir/r1.h5")
out=$(mpi 1 "$bin" run "$spec" -o "$dir/r1.h5" --resume --sampler v1 2>&1); rc=$?
[ $rc -eq 2 ] && grep -qF "different spec" <<<"$out" && [ "$(md5sum < "$dir/r1.h5")" = "$before" ] \
  && ok "resume with another sampler refused, the file untouched" || fail "resume with another sampler: rc $rc: $out"
out=$(mpi 1 "$bin" run "$spec" -o "$dir/r1.h5" --resume 2>&1); rc=$?
[ $rc -eq 0 ] && grep -qF "(0 trained in this run" <<<"$out" && ok "resume of a complete sweep recomputes nothing" || fail "resume complete: $out"

# A truncated OUT.h5: --resume refuses to replace it (exit 2, untouched); verify --repair rebuilds it from the logs.
cp -r "$dir/r1.h5.points" "$dir/c.h5.points"
head -c 3000 "$dir/r1.h5" > "$dir/c.h5"
before=$(md5sum < "$dir/c.h5")
out=$(mpi 1 "$bin" run "$spec" -o "$dir/c.h5" --resume 2>&1); rc=$?
[ $rc -eq 2 ] && grep -qF "is unreadable" <<<"$out" && grep -qF -- "--repair" <<<"$out" && [ "$(md5sum < "$dir/c.h5")" = "$before" ] \
  && ok "truncated output: --resume refuses, the file untouched" || fail "truncated output refused: rc $rc: $out"
out=$("$bin" verify "$dir/c.h5" --repair --spec "$spec" 2>&1); rc=$?
[ $rc -eq 0 ] && grep -qF "repaired" <<<"$out" && ok "truncated output: verify --repair --spec recovers every point from the logs" \
  || fail "truncated output repair: rc $rc: $out"
compare "$dir/r1.h5" "$dir/c.h5" "recovered output == original"

# Two runs on the same output at once: the second is refused, the first is unharmed.
setsid mpiexec --oversubscribe -n 1 "$bin" run "$src/specs/sweep_kill.ini" -o "$dir/two.h5" --quiet >/dev/null 2>&1 &
pid=$!
sleep 1
out=$(mpi 1 "$bin" run "$src/specs/sweep_kill.ini" -o "$dir/two.h5" --resume 2>&1); rc=$?
[ $rc -eq 75 ] && grep -qF "another icl-sweep run is writing it" <<<"$out" && ok "a second run on the same output is refused" \
  || fail "second concurrent run: rc $rc: $out"
kill -USR1 $pid; wait $pid

# kill -9 of the whole job (kill_job: every process of its session) at random moments, three times, then
# --resume to the end (a slower sweep; each kill 0.8-2.8 s after the round's first record, so that it lands
# mid-run: a fixed delay from the start killed the job before its first record on a loaded machine).
slow=$src/specs/sweep_kill.ini
mpi 2 "$bin" run "$slow" -o "$dir/ref.h5" --quiet || fail "reference run"
while_running='live=$("$bin" status "$dir/k.h5" 2>&1) && grep -q "^done" <<<"$live" && ok "status while the sweep runs" || fail "status while running: $live"'
after_a_record=1 kill_rounds "$slow" "$dir/k.h5" 16 0.8 2
[ $interrupted -ge 1 ] && ok "kill -9 interrupted the sweep ($interrupted of 3 rounds mid-run)" || fail "no kill landed mid-run"
mpi 2 "$bin" run "$slow" -o "$dir/k.h5" --resume --quiet || fail "final resume"
[ "$(state "$dir/k.h5")" = complete ] && ok "killed sweep completes on --resume" || fail "killed sweep not complete"
compare "$dir/ref.h5" "$dir/k.h5" "kill -9 x3 + resume == uninterrupted"

# SIGUSR1 sent to mpiexec (which forwards it), and SIGTERM sent to a singleton run (Open MPI's mpiexec
# forwards SIGTERM too and the ranks stop just as cleanly, but mpiexec itself then exits 1): exit 0,
# incomplete, resumable, and the resumed file equals an uninterrupted run.
for sig in USR1 TERM; do
  launcher="mpiexec --oversubscribe -n 2"
  [ $sig = TERM ] && launcher=""
  setsid $launcher "$bin" run "$slow" -o "$dir/s$sig.h5" --quiet > "$dir/s.log" 2>&1 &
  pid=$!
  for _ in $(seq 200); do [ "$(logged_bytes "$dir/s$sig.h5")" -gt 0 ] && break; sleep 0.1; done   # mid-run: a record stored
  sleep 0.5
  kill -$sig $pid
  wait $pid; rc=$?
  if [ $rc -eq 0 ] && grep -qF "stopped by a signal" "$dir/s.log" && [ "$(state "$dir/s$sig.h5")" = incomplete ]; then
    ok "SIG$sig: clean exit 0, $(grep -o '[0-9]*/16 points done' "$dir/s.log"), resumable"
  else
    fail "SIG$sig: rc $rc: $(cat "$dir/s.log")"
  fi
  mpi 2 "$bin" run "$slow" -o "$dir/s$sig.h5" --resume --quiet || fail "resume after SIG$sig"
  compare "$dir/ref.h5" "$dir/s$sig.h5" "SIG$sig + resume == uninterrupted"
done

# status --watch: views while the sweep runs, each point in flight with its stage and step (live_view.hpp);
# it ends by itself once no run holds the sweep (here: the job killed, its merge done); a killed rank's
# line is left behind but not shown.
setsid "$bin" run "$slow" -o "$dir/w.h5" --quiet --live-every 0.5 >/dev/null 2>&1 &
pid=$!
for _ in $(seq 100); do ls "$dir/w.h5.points/"*.live >/dev/null 2>&1 && break; sleep 0.1; done
"$bin" status "$dir/w.h5" --watch 0.5 > "$dir/watch.out" 2>&1 &
watcher=$!
sleep 3
kill_job $pid
for _ in $(seq 300); do kill -0 $watcher 2>/dev/null || break; sleep 0.1; done
if kill -0 $watcher 2>/dev/null; then kill $watcher; fail "status --watch still running 30 s after the sweep was killed"; fi
wait $watcher; rc=$?
views=$(grep -c '^sweep' "$dir/watch.out")
last=$(awk '/^sweep/ {v = ""} {v = v $0 "\n"} END {printf "%s", v}' "$dir/watch.out")
grep -Eq '^  point [0-9]+ +(train|analyse) +step [0-9]+ / (2000|6000) ' "$dir/watch.out" && [ $rc -eq 0 ] && [ "$views" -ge 3 ] \
  && ! grep -q "in flight" <<<"$last" && grep -q "not running" <<<"$last" \
  && ok "status --watch: $views views, the points in flight, ended with the run ($(grep -m1 '^  point' "$dir/watch.out" | tr -s ' '))" \
  || fail "status --watch: rc $rc, $views views: $(cat "$dir/watch.out")"
out=$("$bin" status "$dir/w.h5" --watch 0 2>&1); rc=$?
[ $rc -eq 2 ] && grep -qF -- "--watch '0'" <<<"$out" && ok "status --watch 0 refused (exit 2)" || fail "--watch 0: rc $rc: $out"

# A diverging point is data.
mpi 1 "$bin" run "$src/specs/sweep_diverge.ini" -o "$dir/dv.h5" --quiet || fail "diverge sweep"
st=$("$py" -c "import h5py,sys; print(' '.join(s.decode() if isinstance(s, bytes) else s for s in h5py.File(sys.argv[1],'r')['points/status'][:]))" "$dir/dv.h5")
[ "$st" = "ok diverged" ] && ok "diverging point recorded, sweep went on ($st)" || fail "diverge statuses: $st"

echo "sweep tests: $failures failed"
exit $failures
