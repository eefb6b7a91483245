#!/usr/bin/env bash
# Successive halving under real mpiexec (sweep/halving.hpp): 1, 2 and 3 ranks give identical files; every
# survivor's row equals the same point trained straight through in the full grid, bit for bit, and every
# pruned point's curves are the full run's up to its rung; kill -9 of the whole job at random moments,
# then --resume, and a SIGUSR1 stop, then --resume, equal an uninterrupted run; a failing point ranks
# last and the sweep goes on; status shows the rungs; halving specs that break a rule exit 2 and write
# nothing.
set -u
bin=$1
src=$2
dir=$(mktemp -d)
cleanup() { pkill -9 -f "icl-sweep run .*$dir" 2>/dev/null; rm -rf "$dir"; }
trap cleanup EXIT
. "$src/lib.sh"
need_python h5py numpy
spec=$src/specs/halving_small.ini

# 1, 2 and 3 ranks: the same bits.
for n in 1 2 3; do
  mpi $n "$bin" run "$spec" -o "$dir/r$n.h5" --quiet || fail "run on $n ranks"
done
[ "$(state "$dir/r1.h5")" = complete ] && ok "1-rank halving sweep complete" || fail "1-rank halving sweep not complete"
compare "$dir/r1.h5" "$dir/r2.h5" "halving: 2 ranks == 1 rank, bit for bit"
compare "$dir/r1.h5" "$dir/r3.h5" "halving: 3 ranks == 1 rank, bit for bit"
out=$("$bin" status "$dir/r1.h5")
grep -q "ok 2  pruned 16" <<<"$out" && grep -q "step 400: 18 reached, 12 pruned; step 1200: 6 reached, 4 pruned" <<<"$out" \
  && ok "status: 2 survivors, 12 pruned at the first rung and 4 at the second" || fail "status: $out"
# The same counts from OUT.h5 alone (a sweep resumed without its logs: they hold only the later runs' checkpoints;
# status showed no rungs, or counted only those).
cp "$dir/r1.h5" "$dir/nologs.h5"
out=$("$bin" status "$dir/nologs.h5")
grep -q "step 400: 18 reached, 12 pruned; step 1200: 6 reached, 4 pruned" <<<"$out" \
  && ok "status without the logs: the rungs counted from OUT.h5's rows" || fail "status without the logs: $out"

# A repair of damaged attributes with a spec that differs only outside the points (the rungs): refused (exit 2), the
# file untouched, whatever names the sweep's spec: its logs, or (no logs) its spec_hash or its spec attribute, the
# other one damaged; the sweep's own spec repairs each.  Before, the repair wrote the other rungs into the file's spec
# and status counted the halving by them.  A --resume with that spec where OUT.h5 is gone: refused too (it wrote
# its points beside the sweep's in one directory).
sed 's/^rungs = .*/rungs = 400 2400/' "$spec" > "$dir/rungs.ini"
for damage in written_utc spec spec_hash format_version; do
  for logs in with without; do
    [ $logs = with ] && [ $damage != written_utc ] && continue
    rm -rf "$dir"/ra.h5*; cp "$dir/r1.h5" "$dir/ra.h5"
    [ $logs = with ] && cp -r "$dir/r1.h5.points" "$dir/ra.h5.points"
    "$py" - "$dir/ra.h5" $damage <<'PY'
import h5py, sys
with h5py.File(sys.argv[1], "r+") as f:
    a = sys.argv[2]
    f.attrs[a] = {"written_utc": "2000-01-01T00:00:00Z", "spec": "damaged", "spec_hash": "0123456789abcdef", "format_version": 7}[a]
PY
    before=$(md5sum < "$dir/ra.h5")
    out=$("$bin" verify "$dir/ra.h5" --repair --spec "$dir/rungs.ini" 2>&1); rc=$?
    [ $rc -eq 2 ] && grep -q "of another spec\|nothing names this spec" <<<"$out" && [ "$(md5sum < "$dir/ra.h5")" = "$before" ] \
      && [ "$(ls "$dir" | grep -c '^ra\.h5\.')" = "$([ $logs = with ] && echo 1 || echo 0)" ] \
      && ok "repair with other rungs, $damage damaged, $logs the logs: refused, nothing written" || fail "repair with other rungs, $damage, $logs the logs: rc $rc: $out"
    "$bin" verify "$dir/ra.h5" --repair --spec "$spec" >/dev/null 2>&1 || fail "repair with the sweep's spec, $damage damaged, $logs the logs"
    [ $logs = with ] && compare "$dir/r1.h5" "$dir/ra.h5" "repair with the sweep's spec == original"
  done
done
rm -rf "$dir"/ra.h5*; cp -r "$dir/r1.h5.points" "$dir/ra.h5.points"
out=$("$bin" run "$dir/rungs.ini" -o "$dir/ra.h5" --resume --quiet 2>&1); rc=$?
[ $rc -eq 2 ] && grep -q "of another spec" <<<"$out" && [ ! -e "$dir/ra.h5" ] && [ "$(ls "$dir/ra.h5.points"/*.log | wc -l)" = "$(ls "$dir/r1.h5.points"/*.log | wc -l)" ] \
  && ok "--resume with other rungs on the sweep's logs: refused, nothing written" || fail "--resume with other rungs: rc $rc: $out"

# The report: the survivors' tables, the pruned points counted, the halving figure.
out=$("$src/../tools/icl-report" "$dir/r1.h5" -o "$dir/report" --best replica lr 2>&1)
grep -qF "16 point(s) pruned by successive halving" <<<"$out" && [ -s "$dir/report/halving.png" ] \
  && ! grep -q "did not finish" <<<"$out" && ok "report: survivors, 16 pruned counted, halving figure" || fail "report: $out"

# The survivors against the full grid trained straight through.
grep -v '^search\|^rungs' "$spec" > "$dir/full.ini"
mpi 2 "$bin" run "$dir/full.ini" -o "$dir/full.h5" --quiet || fail "full grid run"
# Another sweep's logs in the directory (the full grid's beside the halving sweep's): verify names them (exit 1); merge,
# --resume and --repair refuse (exit 2), naming them, and write nothing.
cp "$dir/r1.h5" "$dir/mx.h5"; cp -r "$dir/r1.h5.points" "$dir/mx.h5.points"
for log in "$dir"/full.h5.points/*.log; do cp "$log" "$dir/mx.h5.points/full-$(basename "$log")"; done
before=$(md5sum < "$dir/mx.h5"; ls "$dir/mx.h5.points")
out=$("$bin" verify "$dir/mx.h5" 2>&1); rc=$?
[ $rc -eq 1 ] && grep -q "^other spec .*full-" <<<"$out" && ok "verify names another sweep's logs (exit 1)" || fail "verify of mixed logs: rc $rc: $out"
for cmd in "merge" "run $spec --resume --quiet -o" "verify --repair"; do
  out=$("$bin" $cmd "$dir/mx.h5" 2>&1); rc=$?
  [ $rc -eq 2 ] && grep -q "full-.* are of another spec" <<<"$out" && [ "$(md5sum < "$dir/mx.h5"; ls "$dir/mx.h5.points")" = "$before" ] \
    && ok "${cmd%% *} with another sweep's logs beside: refused, nothing written" || fail "$cmd with mixed logs: rc $rc: $out"
done

"$py" - "$dir/r1.h5" "$dir/full.h5" "$src/../tools/python" <<'PY' && ok "survivors == straight-through points bit for bit; pruned curves == their prefix" || fail "halving vs full grid"
import sys, h5py, numpy as np
sys.path.insert(0, sys.argv[3])
import icl_sweep
TIMING = {"wall_seconds", "train_seconds", "eval_seconds", "steps_per_second", "analysis_seconds", "landscape_seconds"}
a, b = h5py.File(sys.argv[1], "r"), h5py.File(sys.argv[2], "r")
wa, wb = icl_sweep.open_sweep(sys.argv[1]), icl_sweep.open_sweep(sys.argv[2])
status = a["points/status"][:].astype(str)
bad = []
assert (status == "ok").sum() == 2 and (status == "pruned").sum() == 16, status
for i in np.flatnonzero(status == "ok"):
    for k in ("theta", "Q"):
        if wa.weights(i)[k].tobytes() != wb.weights(i)[k].tobytes(): bad.append((i, k))
    for name in ["curves/test_loss", "curves/train_loss", "curves/step", "layers/test_loss"]:
        if a[name][i].tobytes() != b[name][i].tobytes(): bad.append((i, name))
    for m in a["metrics"]:
        if m not in TIMING and a["metrics"][m][i].tobytes() != b["metrics"][m][i].tobytes(): bad.append((i, m))
for i in np.flatnonzero(status == "pruned"):
    x, y = a["curves/test_loss"][i], b["curves/test_loss"][i]
    n = int(np.sum(~np.isnan(x)))
    if n < 5 or x[:n].tobytes() != y[:n].tobytes() or not np.isnan(a["metrics/test_loss"][i]): bad.append((i, "pruned curve"))
    if "pruned at rung" not in a["points/message"][i].decode(): bad.append((i, "message"))
print(bad or "survivors and pruned curves match")
sys.exit(1 if bad else 0)
PY

# icl-halving-check: the replay of the same rungs on the full grid's curves agrees with the live sweep.
live=$("$src/../tools/icl-halving-check" "$dir/full.h5" "$dir/r1.h5" | awk '/^agreement/ {print $2, $5}')
replayed=$("$src/../tools/icl-halving-check" "$dir/full.h5" --replay 400,1200 | awk '{print $4, $7}')
[ -n "$live" ] && [ "$live" = "$replayed" ] && ok "icl-halving-check: replay == live sweep ($live)" || fail "replay '$replayed' vs live '$live'"

# kill -9 of the whole job at random moments, three times, then --resume to the end.
after_a_record=1 kill_rounds "$spec" "$dir/k.h5" 18 0 0.05
[ $interrupted -ge 1 ] && ok "kill -9 interrupted the halving sweep ($interrupted of 3 rounds mid-run)" || fail "no kill landed mid-run"
mpi 2 "$bin" run "$spec" -o "$dir/k.h5" --resume --quiet || fail "final resume"
compare "$dir/r1.h5" "$dir/k.h5" "halving: kill -9 x3 + resume == uninterrupted"
out=$("$bin" status "$dir/k.h5")
grep -q "records     18 in the logs, 0 duplicates" <<<"$out" && ok "no point recorded twice across the kills" || fail "duplicates: $out"
out=$(mpi 1 "$bin" run "$spec" -o "$dir/k.h5" --resume 2>&1)
grep -qF "(0 legs trained in this run" <<<"$out" && ok "resume of a complete halving sweep trains nothing" || fail "resume complete: $out"

# SIGUSR1: a clean stop, then --resume.  Sent once the sweep has stored a record (every rank is then past
# its start-up: a signal to a process still being exec'd takes its default action, before any handler).
setsid mpiexec --oversubscribe -n 3 "$bin" run "$spec" -o "$dir/s.h5" --quiet > "$dir/s.log" 2>&1 &
pid=$!
for _ in $(seq 200); do [ "$(logged_bytes "$dir/s.h5")" -gt 0 ] && break; sleep 0.1; done
kill -USR1 $pid
wait $pid; rc=$?
[ $rc -eq 0 ] && [ "$(state "$dir/s.h5")" = incomplete ] && ok "SIGUSR1: clean exit 0, incomplete" || fail "SIGUSR1: rc $rc: $(cat "$dir/s.log")"
mpi 2 "$bin" run "$spec" -o "$dir/s.h5" --resume --quiet || fail "resume after SIGUSR1"
compare "$dir/r1.h5" "$dir/s.h5" "halving: SIGUSR1 + resume == uninterrupted"

# A point that fails ranks last; the others decide; the sweep completes.
ICL_SWEEP_FAULTS="train:0" mpi 2 "$bin" run "$spec" -o "$dir/f.h5" --quiet || fail "run with a failing point"
"$py" - "$dir/f.h5" "$dir/r1.h5" <<'PY' && ok "a failed point ranks last, the sweep completes" || fail "failed point in halving"
import sys, h5py, numpy as np
f, r = h5py.File(sys.argv[1], "r"), h5py.File(sys.argv[2], "r")
s, t = f["points/status"][:].astype(str), r["points/status"][:].astype(str)
assert f.attrs["sweep_state"] == "complete" and s[0] == "failed", s
assert np.isnan(f["metrics/test_loss"][0])
assert (s == "ok").sum() == 2 and ((s == "pruned").sum() == 15), s
PY

# Rules: exit 2, the option, the value and the rule, nothing written.
check_refused() {   # name, expected text, extra args...
  local name=$1 want=$2; shift 2
  out=$(mpi 1 "$bin" run "$spec" -o "$dir/bad.h5" "$@" 2>&1); rc=$?
  [ $rc -eq 2 ] && grep -qF "$want" <<<"$out" && [ ! -e "$dir/bad.h5" ] && [ ! -e "$dir/bad.h5.points" ] \
    && ok "refused: $name" || fail "$name: rc $rc: $out"
}
check_refused "a rung that is not an evaluation step" "'rungs' = '210 1200': every rung must be a multiple of eval_every (50)" --rungs 210 1200
check_refused "a rung at or past the end" "every rung must be below the point's steps (4800)" --rungs 400 4800
check_refused "rungs not increasing" "'rungs' = '1200 400': must be increasing" --rungs 1200 400
check_refused "an unknown searched axis" "'search' = 'noise': must name axes of the sweep" --search noise
check_refused "the landscape along legs" "'landscape' is measured along the whole trajectory" --landscape every:100
check_refused "a reduction of 1" "'reduction' = '1': must be one integer from 2 to 1000" --reduction 1
check_refused "an unknown rung metric" "'rung_metric' = 'loss_gd'" --rung_metric loss_gd
check_refused "--retry-failed" "option 'retry-failed': not with successive halving" --resume --retry-failed
[ $failures -eq 0 ] && echo "all halving sweep checks passed" || { echo "$failures check(s) failed"; exit 1; }
