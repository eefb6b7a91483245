#!/usr/bin/env bash
# The sweep under attack (issue 11): every attack on small sweeps, each result compared bit for bit with
# an uninterrupted run.  PID reuse after a kill (a new PID namespace: the same host and pid), lost logs,
# a second run while one is active, a failing point and a failing analysis among good ones, flipped
# bytes in logs and in OUT.h5, a full disk (a small tmpfs), out of inodes, `.points` that is a file,
# stale merge temporaries, and the live view of a running sweep.
set -u
bin=$1
src=$2
dir=$(mktemp -d)
mnt=""
cleanup() {
  pkill -9 -f "icl-sweep run .*$dir" 2>/dev/null
  [ -n "$mnt" ] && umount "$mnt" 2>/dev/null
  rm -rf "$dir"
}
trap cleanup EXIT
. "$src/lib.sh"
need_python h5py numpy
run1() { "$bin" run "$@" --quiet; }                       # one rank, no launcher: no MPI
done_of() { "$bin" status "$1" 2>/dev/null | awk '/^done/ {print $2}'; }
wait_done() { for _ in $(seq 1 600); do [ "$(done_of "$1")" -ge "$2" ] 2>/dev/null && return; sleep 0.1; done; }   # up to 60 s
spec=$src/specs/sweep_small.ini
slow=$src/specs/sweep_kill.ini
run1 "$spec" -o "$dir/ref.h5" || fail "reference run"
run1 "$slow" -o "$dir/refk.h5" || fail "slow reference run"
stop=$src/specs/sweep_stop.ini
run1 "$stop" -o "$dir/refs.h5" || fail "reference run for the stops"

# 1. PID reuse: every run in a fresh PID namespace is pid 1 on the same host.  Killed mid-run (each after
#    storing a record), then resumed twice as the same pid: no run appends to another's log, nothing is lost.
if unshare -pf --mount-proc true 2>/dev/null; then
  for round in 1 2; do
    setsid unshare -pf --mount-proc "$bin" run "$slow" -o "$dir/pid.h5" --resume --quiet >/dev/null 2>&1 &
    pid=$!
    wait_done "$dir/pid.h5" $(($(done_of "$dir/pid.h5") + 1)); sleep 0.5   # killed mid-run: after a record of its own
    kill_job $pid
    echo "  PID reuse round $round: killed $job_procs process(es) of the job, $survivors left, $(done_of "$dir/pid.h5") points stored"
  done
  before=$(done_of "$dir/pid.h5")
  unshare -pf --mount-proc "$bin" run "$slow" -o "$dir/pid.h5" --resume --quiet || fail "resume in a PID namespace"
  logs=$(ls "$dir/pid.h5.points"/*.log | wc -l)
  [ "$(state "$dir/pid.h5")" = complete ] && [ "$logs" -ge 3 ] && [ "${before:-0}" -ge 2 ] && ok "PID reuse: $before points survived two kills as pid 1, $logs separate logs" \
    || fail "PID reuse: state $(state "$dir/pid.h5"), $logs logs"
  compare "$dir/refk.h5" "$dir/pid.h5" "PID reuse: kill -9 x2 + resume as the same pid == uninterrupted"
else
  echo "  (no PID namespaces here: the PID-reuse case is covered by the PointLog unit test)"
fi

# 2. Logs deleted after the sweep finished: OUT.h5's rows are the results.
cp "$dir/ref.h5" "$dir/nolog.h5"
[ "$(done_of "$dir/nolog.h5")" = 16 ] && ok "status counts OUT.h5's rows without logs (16/16)" || fail "status without logs: $("$bin" status "$dir/nolog.h5" 2>&1)"
out=$(run1 "$spec" -o "$dir/nolog.h5" --resume 2>&1); rc=$?
[ $rc -eq 0 ] && [ "$(state "$dir/nolog.h5")" = complete ] && [ "$(ls "$dir/nolog.h5.points"/*.log | wc -l)" -ge 1 ] \
  && ok "resume without logs recomputes nothing and copies the rows into a log" || fail "resume without logs: rc $rc: $out"
compare "$dir/ref.h5" "$dir/nolog.h5" "resume without logs == original"
# ... and half a sweep without its logs: only the missing points are computed.
setsid "$bin" run "$slow" -o "$dir/half.h5" --quiet --progress 0 --merge-every 0.5 >/dev/null 2>&1 &
pid=$!
wait_done "$dir/half.h5" 2; sleep 1.5
kill_job $pid
n=$("$py" -c "import h5py,sys; print(sum(s == b'ok' for s in h5py.File(sys.argv[1],'r')['points/status'][:]))" "$dir/half.h5")
rm -rf "$dir/half.h5.points"
run1 "$slow" -o "$dir/half.h5" --resume || fail "resume of half a sweep without logs"
[ "$n" -ge 1 ] && ok "killed sweep's live-merged file held $n finished points; resumed without logs" || fail "no live merge before the kill"
compare "$dir/refk.h5" "$dir/half.h5" "half a sweep, logs deleted, resumed == uninterrupted"

# 3. A second run while one is active is refused whatever files are deleted; status tells running from dead.
setsid "$bin" run "$slow" -o "$dir/lock.h5" --quiet >/dev/null 2>&1 &
pid=$!
sleep 2
rm -f "$dir/lock.h5.lock" "$dir/lock.h5"
for flag in --resume --force; do
  out=$(run1 "$slow" -o "$dir/lock.h5" $flag 2>&1); rc=$?
  [ $rc -eq 75 ] && grep -qF "another icl-sweep run is writing it" <<<"$out" && ok "second run ($flag) refused while the first runs" \
    || fail "second run $flag: rc $rc: $out"
done
st=$("$bin" status "$dir/lock.h5" 2>/dev/null | grep '^sweep')
kill_job $pid
# The job's merge after a stop (its own session, stop_merge.hpp) may now be merging: status says "finishing".
for _ in $(seq 300); do st2=$("$bin" status "$dir/lock.h5" 2>/dev/null | grep '^sweep'); grep -q finishing <<<"$st2" || break; sleep 0.1; done
grep -q "(running" <<<"$st" && grep -q "not running" <<<"$st2" && ok "status tells running ('$st') from killed ('$st2')" \
  || fail "status: while running '$st', after the kill '$st2'"
run1 "$slow" -o "$dir/lock.h5" --resume || fail "resume after the lock attack"
compare "$dir/refk.h5" "$dir/lock.h5" "lock attack + resume == uninterrupted"

# 3b. Two new runs started together on one output: the one that waits for the lock while the other finishes
#     must not start over on the finished result (ICL_SWEEP_PAUSE_BEFORE_LOCK holds it between its check of the
#     output and the lock, the window a real race has, until the test releases it).  It is refused, the
#     finished file kept byte for byte.
rm -rf "$dir/race.h5" "$dir/race.h5.points" "$dir/go" "$dir/go.reached"
ICL_SWEEP_PAUSE_BEFORE_LOCK="$dir/go" run1 "$stop" -o "$dir/race.h5" >"$dir/race.out" 2>&1 &
late=$!
for _ in $(seq 600); do [ -e "$dir/go.reached" ] && break; sleep 0.1; done   # it has checked the output
run1 "$spec" -o "$dir/race.h5" || fail "the first of two racing runs"
before=$(md5sum < "$dir/race.h5")
touch "$dir/go"
wait $late; rc=$?
[ $rc -eq 2 ] && grep -qF "the sweep output exists" "$dir/race.out" && [ "$(md5sum < "$dir/race.h5")" = "$before" ] \
  && ok "two racing new runs: the later is refused once it has the lock, the finished file unchanged" \
  || fail "two racing new runs: the later exited $rc ($(cat "$dir/race.out")), file $( [ "$(md5sum < "$dir/race.h5")" = "$before" ] && echo kept || echo replaced)"
compare "$dir/ref.h5" "$dir/race.h5" "two racing new runs: the finished result == uninterrupted"

# 3c. A run on another node as this node sees it on NFS, where a directory's flock is each node's own and only the
#     lock on the file OUT.h5.points/lock is the server's: that lock alone, held here by flock(1).  status calls
#     the sweep running, --resume and --force are refused (exit 75) and change nothing.  Locked on the directory
#     alone, status said "not running" and `run --force` on a login node deleted a running job's logs.
run1 "$spec" -o "$dir/nfs.h5" || fail "the sweep for the other node's lock"
sums() { cat "$dir/nfs.h5" "$dir/nfs.h5.points"/*.log | md5sum; }
before=$(sums)
flock -o "$dir/nfs.h5.points/lock" sleep 60 >/dev/null 2>&1 &   # -o: flock alone holds it, not sleep
holder=$!
for _ in $(seq 100); do flock -n "$dir/nfs.h5.points/lock" true || break; sleep 0.05; done
st=$("$bin" status "$dir/nfs.h5" 2>/dev/null | grep '^sweep')
grep -q "(running" <<<"$st" && ok "status beside another node's lock: '$st'" || fail "status beside another node's lock: '$st'"
for flag in --resume --force; do
  out=$(run1 "$spec" -o "$dir/nfs.h5" $flag 2>&1); rc=$?
  [ $rc -eq 75 ] && grep -qF "another icl-sweep run, on another node, is writing it" <<<"$out" \
    && grep -qF "remove $dir/nfs.h5.points/lock)" <<<"$out" && ok "$flag refused beside another node's lock, the way out named" \
    || fail "$flag beside another node's lock: rc $rc: $out"
done
[ "$(sums)" = "$before" ] && ok "another node's lock: OUT.h5 and the logs untouched" || fail "another node's lock: files changed"
pkill -P $holder; wait $holder 2>/dev/null
run1 "$spec" -o "$dir/nfs.h5" --resume && ok "--resume once the other node's lock is gone" || fail "--resume after the other node's lock"

# 4. A failing point and a failing analysis among good ones: NaN and the reason, weights kept, retried.
ICL_SWEEP_FAULTS="train:2 analysis:5" run1 "$spec" -o "$dir/f.h5" || fail "sweep with injected faults"
"$py" - "$dir/f.h5" <<'PY' && ok "failed point: NaN metrics and its reason; failed analysis: weights and losses kept" || fail "failed point storage"
import h5py, math, sys
f = h5py.File(sys.argv[1], "r")
st, msg = f["points/status"].asstr()[:], f["points/message"].asstr()[:]
ast = f["points/analysis_status"].asstr()[:]
assert st[2] == "failed" and "injected fault in train" in msg[2], (st[2], msg[2])
for m in ("test_loss", "train_loss", "wall_seconds", "steps_done"):
    assert math.isnan(f["metrics/" + m][2]), m
assert st[5] == "ok" and ast[5] == "failed" and math.isfinite(f["metrics/test_loss"][5]) and f["weights/theta_index"][5][1] > 0
assert math.isnan(f["metrics/loss_gd"][5]) and not math.isnan(f["metrics/loss_gd"][4])
PY
out=$(run1 "$spec" -o "$dir/f.h5" --resume 2>&1); grep -q . <<<"$out"; [ "$(state "$dir/f.h5")" = incomplete ] || [ "$(state "$dir/f.h5")" = complete ]
run1 "$spec" -o "$dir/f.h5" --resume --retry-failed || fail "--retry-failed"
compare "$dir/ref.h5" "$dir/f.h5" "--retry-failed recomputes exactly the failures: == clean run"
# 4b. The retry's log lost (its node crashed before the log reached the disk; OUT.h5, synced by the merge, holds
#     the retried rows): --resume keeps OUT.h5's ok rows over the earlier failures the logs still hold.  Imported
#     only where the logs lacked a point, the failures were merged over the finished results.
rm -f "$(ls -t "$dir/f.h5.points"/*.log | head -1)"
run1 "$spec" -o "$dir/f.h5" --resume || fail "--resume after the retry's log was lost"
compare "$dir/ref.h5" "$dir/f.h5" "the retry's log lost: OUT.h5's ok rows kept over the logs' failures"

# 5a. Flipped bytes in a log: the damaged record alone is recomputed.
cp -r "$dir/ref.h5.points" "$dir/lf.h5.points"
log=$(ls "$dir/lf.h5.points"/*.log | head -1)
size=$(stat -c %s "$log")
for at in $((size / 5)) $((size / 2)) $((size * 4 / 5)); do printf '\xff' | dd of="$log" bs=1 seek=$at conv=notrunc status=none; done
out=$(run1 "$spec" -o "$dir/lf.h5" --resume 2>&1); rc=$?
n=$(grep -c "recomputed" <<<"$out")
[ $rc -eq 0 ] && [ "$n" -ge 1 ] && ok "3 flipped bytes in a log: $n damaged record(s) recomputed" || fail "log flips: rc $rc: $out"
compare "$dir/ref.h5" "$dir/lf.h5" "log flips + resume == uninterrupted"
# 5b. A value of OUT.h5 changed through HDF5 (its checksums recomputed, as a careless script would):
#     the row digest names the row; verify --repair restores it from the logs.
cp "$dir/ref.h5" "$dir/rep.h5"; cp -r "$dir/ref.h5.points" "$dir/rep.h5.points"
"$py" - "$dir/rep.h5" <<'PY'
import h5py, sys
with h5py.File(sys.argv[1], "r+") as f:
    f["points/noise"][3] = f["points/noise"][3].replace(b"uniform:1", b"uniform:2").replace(b"none", b"nonf")
    f["metrics/test_loss"][5] = 0.0
PY
out=$("$bin" verify "$dir/rep.h5" 2>&1); rc=$?
[ $rc -eq 1 ] && grep -q "row(s) damaged" <<<"$out" && ok "verify names the damage: $(grep -m1 'row(s)' <<<"$out" | tr -s ' ')" || fail "verify: rc $rc: $out"
"$bin" verify "$dir/rep.h5" --repair >/dev/null 2>&1 && "$bin" verify "$dir/rep.h5" >/dev/null 2>&1 \
  && ok "verify --repair recovers from the logs" || fail "verify --repair"
compare "$dir/ref.h5" "$dir/rep.h5" "repaired == original"
#     and the run's provenance, which the logs do not hold, is carried over (it was dropped before)
prov() { "$py" -c 'import h5py, sys; f = h5py.File(sys.argv[1], "r"); print([str(f.attrs.get(k)) for k in ("spec_file", "started_utc", "ended_utc", "rank_count")])' "$1"; }
[ "$(prov "$dir/rep.h5")" = "$(prov "$dir/ref.h5")" ] && ! grep -q None <<<"$(prov "$dir/rep.h5")" \
  && ok "repair keeps spec_file, started_utc, ended_utc, rank_count" || fail "repair provenance: $(prov "$dir/rep.h5") vs $(prov "$dir/ref.h5")"
# 5c. A damaged spec_hash attribute: status neither aborts nor calls intact records unreadable.
cp "$dir/ref.h5" "$dir/sh.h5"; cp -r "$dir/ref.h5.points" "$dir/sh.h5.points"
"$py" - "$dir/sh.h5" <<'PY'
import h5py, sys
h = h5py.File(sys.argv[1], "r").attrs["spec_hash"]
h = h.decode() if isinstance(h, bytes) else h
data = bytearray(open(sys.argv[1], "rb").read())
at = data.find(h.encode())
data[at] = ord("z")
open(sys.argv[1], "wb").write(data)
PY
out=$("$bin" status "$dir/sh.h5" 2>&1); rc=$?
[ $rc -eq 0 ] && grep -q "^done *16 / 16" <<<"$out" && ! grep -q "^unreadable" <<<"$out" && ok "damaged spec_hash: status still 16/16, no record called unreadable" \
  || fail "damaged spec_hash: rc $rc: $out"

# 6. Disk full (a 6 MiB tmpfs, filled while the sweep runs), then out of inodes, then `.points` a file:
#    a clear I/O error, exit 1, nothing finished lost, resumable once there is space.
if [ "$(id -u)" = 0 ] && mkdir -p "$dir/mnt" && mount -t tmpfs -o size=6m,nr_inodes=64 tmpfs "$dir/mnt" 2>/dev/null; then
  mnt=$dir/mnt
  "$bin" run "$slow" -o "$mnt/full.h5" --quiet > "$dir/full.out" 2>&1 &
  pid=$!
  sleep 2
  dd if=/dev/zero of="$mnt/filler" bs=64k status=none 2>/dev/null
  wait $pid; rc=$?
  if [ $rc -eq 1 ] && grep -q "I/O error" "$dir/full.out" && ! grep -q "wrote" "$dir/full.out"; then
    ok "disk full: exit 1, '$(grep -m1 'I/O error' "$dir/full.out" | cut -c1-110)...'"
  else
    fail "disk full: rc $rc: $(cat "$dir/full.out")"
  fi
  out=$("$bin" train --steps 50 --batch 64 --eval_tasks 100 -o "$mnt/point.h5" 2>&1); rc=$?
  [ $rc -eq 1 ] && grep -q "No space left" <<<"$out" && [ ! -e "$mnt/point.h5" ] && ! ls "$mnt" | grep -q tmp \
    && ok "train -o on a full disk: exit 1 (no crash at exit), nothing left" || fail "train -o on a full disk: rc $rc: $out"
  rm -f "$mnt/filler"
  run1 "$slow" -o "$mnt/full.h5" --resume || fail "resume after the disk was freed"
  compare "$dir/refk.h5" "$mnt/full.h5" "disk full + space freed + resume == uninterrupted"
  rm -rf "$mnt"/*
  for k in $(seq 1 70); do (: > "$mnt/f$k") 2>/dev/null || break; done   # out of inodes
  out=$(run1 "$spec" -o "$mnt/ino.h5" 2>&1); rc=$?
  [ $rc -eq 1 ] && grep -q "I/O error" <<<"$out" && ok "out of inodes: exit 1, '$(grep -m1 'I/O error' <<<"$out" | cut -c1-100)...'" \
    || fail "out of inodes: rc $rc: $out"
  umount "$mnt"; mnt=""
else
  echo "  (not root or no tmpfs: the disk-full cases are skipped)"
fi
: > "$dir/pf.h5.points"
out=$(run1 "$spec" -o "$dir/pf.h5" --resume 2>&1); rc=$?
[ $rc -eq 1 ] && grep -qF "pf.h5.points' exists and is not a directory" <<<"$out" && ok "'.points' is a file: exit 1, named" || fail ".points a file: rc $rc: $out"

# 7. A merge killed mid-write leaves OUT.h5.icl-merge-<spec hash>-<pid>.tmp: removed on resume; a user's
#    file of a similar name (OUT.h5.tmp.99999) is never touched.
cp "$dir/ref.h5" "$dir/t.h5"; cp -r "$dir/ref.h5.points" "$dir/t.h5.points"
hash=$("$py" -c "import h5py,sys; h=h5py.File(sys.argv[1],'r').attrs['spec_hash']; print(h.decode() if isinstance(h, bytes) else h)" "$dir/ref.h5")
head -c 100000 /dev/urandom > "$dir/t.h5.icl-merge-$hash-99999.tmp"
echo "my notes" > "$dir/t.h5.tmp.99999"
run1 "$spec" -o "$dir/t.h5" --resume || fail "resume with a stale temporary"
[ ! -e "$dir/t.h5.icl-merge-$hash-99999.tmp" ] && [ "$(cat "$dir/t.h5.tmp.99999")" = "my notes" ] \
  && ok "stale merge temporary removed on resume; a user's t.h5.tmp.99999 kept" || fail "temporaries: $(ls "$dir" | grep '^t.h5')"

# 8. Live view: a running sweep's OUT.h5 holds its finished points, readable by the loader and the report.
"$bin" run "$slow" -o "$dir/live.h5" --quiet --merge-every 1 >/dev/null 2>&1 &
pid=$!
wait_done "$dir/live.h5" 2; sleep 2
out=$(PYTHONPATH="$src/../tools/python" "$py" -c "
import sys, icl_sweep
s = icl_sweep.open_sweep(sys.argv[1])
print(s.attrs['sweep_state'], int(s.ok().sum()))" "$dir/live.h5" 2>&1)
kill -USR1 $pid; wait $pid
read -r st n <<<"$out"
[ "$st" = running ] && [ "${n:-0}" -ge 1 ] && ok "live view: the loader reads $n finished points of a running sweep" || fail "live view: $out"

# 9. Ctrl-C (SIGINT to mpirun's process group, as a terminal sends it) and SIGTERM to mpirun: a message,
#    OUT.h5 holds every stored point and is not `running`, no temporary left, --resume completes it.
for sig in INT TERM; do
  rm -rf "$dir/c$sig.h5" "$dir/c$sig.h5.points"
  setsid mpiexec --oversubscribe -n 2 "$bin" run "$stop" -o "$dir/c$sig.h5" --quiet > "$dir/c$sig.out" 2>&1 &
  pid=$!
  wait_done "$dir/c$sig.h5" 2
  kill -$sig -- -$pid; wait $pid; rc=$?
  sleep 1
  stored=$(done_of "$dir/c$sig.h5"); st=$(state "$dir/c$sig.h5")
  rows=$("$py" -c "import h5py,sys; print(sum(s != b'pending' for s in h5py.File(sys.argv[1],'r')['points/status'][:]))" "$dir/c$sig.h5")
  if grep -q "stop signal: no new points" "$dir/c$sig.out" && [ "$st" != running ] && [ "$rows" = "$stored" ] && [ "$stored" -ge 2 ] \
     && ! ls "$dir" | grep -q "^c$sig.h5.*tmp"; then
    ok "SIG$sig to mpirun (rc $rc): message, state $st, $rows finished rows in OUT.h5 = $stored stored, no temporary"
  else
    fail "SIG$sig to mpirun: rc $rc, state $st, rows $rows, stored $stored: $(cat "$dir/c$sig.out")"
  fi
  run1 "$stop" -o "$dir/c$sig.h5" --resume || fail "resume after SIG$sig"
  compare "$dir/refs.h5" "$dir/c$sig.h5" "SIG$sig + resume == uninterrupted"
done
# ... and a job that dies before its final merge (every rank killed -9, as mpirun does one second after
#    Ctrl-C to ranks that cannot stop in time): the merge process of rank 0 writes OUT.h5 for it.
setsid mpiexec --oversubscribe -n 2 "$bin" run "$stop" -o "$dir/k9.h5" --quiet --merge-every 0 >/dev/null 2>&1 &
pid=$!
wait_done "$dir/k9.h5" 2
pkill -9 -s $pid; wait $pid 2>/dev/null
for _ in $(seq 100); do [ "$(state "$dir/k9.h5")" != running ] && break; sleep 0.1; done
stored=$(done_of "$dir/k9.h5")
rows=$("$py" -c "import h5py,sys; print(sum(s != b'pending' for s in h5py.File(sys.argv[1],'r')['points/status'][:]))" "$dir/k9.h5")
[ "$(state "$dir/k9.h5")" = incomplete ] && [ "$rows" = "$stored" ] && [ "$rows" -ge 2 ] \
  && ok "job killed before its final merge (--merge-every 0): OUT.h5 merged after it, $rows rows, incomplete" \
  || fail "killed job: state $(state "$dir/k9.h5"), rows $rows, stored $stored"
run1 "$stop" -o "$dir/k9.h5" --resume || fail "resume after the killed job"
compare "$dir/refs.h5" "$dir/k9.h5" "killed job + merge after it + resume == uninterrupted"

# 10. OUT.h5.points/ deleted while the sweep runs (--merge-every 1): an I/O error (exit 1), the rows already
#     merged into OUT.h5 stay, --resume takes them back and completes.
"$bin" run "$stop" -o "$dir/del.h5" --quiet --merge-every 1 > "$dir/del.out" 2>&1 &
pid=$!
wait_done "$dir/del.h5" 3; sleep 0.5
merged=$("$py" -c "import h5py,sys; print(sum(s != b'pending' for s in h5py.File(sys.argv[1],'r')['points/status'][:]))" "$dir/del.h5")
rm -rf "$dir/del.h5.points"
wait $pid; rc=$?
after=$("$py" -c "import h5py,sys; print(sum(s != b'pending' for s in h5py.File(sys.argv[1],'r')['points/status'][:]))" "$dir/del.h5")
[ $rc -eq 1 ] && grep -q "I/O error" "$dir/del.out" && [ "$after" -ge "$merged" ] && [ "$merged" -ge 1 ] \
  && ok "logs deleted mid-run: exit 1 ('$(grep -m1 'I/O error' "$dir/del.out" | cut -c1-90)...'), OUT.h5 keeps $after rows" \
  || fail "logs deleted mid-run: rc $rc, merged $merged, after $after: $(cat "$dir/del.out")"
run1 "$stop" -o "$dir/del.h5" --resume || fail "resume after the logs were deleted"
compare "$dir/refs.h5" "$dir/del.h5" "logs deleted mid-run + resume == uninterrupted"

# 11. A damaged identity: one flipped root attribute (written_utc) refuses --resume with any spec (exit 2,
#     file untouched); a complete file is replaced only by --force.
cp "$dir/ref.h5" "$dir/id.h5"; cp -r "$dir/ref.h5.points" "$dir/id.h5.points"
"$py" - "$dir/id.h5" <<'PY'
import h5py, sys
with h5py.File(sys.argv[1], "r+") as f:
    f.attrs["written_utc"] = "2000-01-01T00:00:00Z"
PY
before=$(md5sum < "$dir/id.h5")
for extra in "--steps 7" ""; do
  out=$(run1 "$spec" -o "$dir/id.h5" --resume $extra 2>&1); rc=$?
  [ $rc -eq 2 ] && grep -q "identity attributes" <<<"$out" && [ "$(md5sum < "$dir/id.h5")" = "$before" ] \
    && ok "damaged identity: --resume ${extra:-(same spec)} refused, file untouched" || fail "damaged identity ($extra): rc $rc: $out"
done
"$bin" verify "$dir/id.h5" --repair --spec "$spec" >/dev/null 2>&1 && "$bin" verify "$dir/id.h5" >/dev/null 2>&1 \
  && ok "damaged identity: verify --repair --spec restores it" || fail "damaged identity: repair"
compare "$dir/ref.h5" "$dir/id.h5" "damaged identity repaired == original"

# 12. verify --repair --spec on a file whose spec attribute is damaged and whose logs are gone: every row
#     whose digest checks is kept (one row damaged besides: only it becomes pending).
cp "$dir/ref.h5" "$dir/sp.h5"
"$py" - "$dir/sp.h5" <<'PY'
import h5py, sys
with h5py.File(sys.argv[1], "r+") as f:
    f.attrs["spec"] = "layers = 9\n"
    f["metrics/test_loss"][7] = 1.0
PY
out=$("$bin" verify "$dir/sp.h5" --repair --spec "$spec" 2>&1); rc=$?
n=$("$py" -c "import h5py,sys; print(sum(s != b'pending' for s in h5py.File(sys.argv[1],'r')['points/status'][:]))" "$dir/sp.h5")
[ $rc -eq 0 ] && [ "$n" = 15 ] && ok "repair without logs and with a damaged spec keeps the 15 intact rows" || fail "repair keeps rows: rc $rc, $n ok: $out"

# 13. The loader and the report check the row digests: a changed value is named, never read as data (nor
#     a changed /analysis series of the row: Sweep.analysis returned the changed values before).
cp "$dir/ref.h5" "$dir/ld.h5"
"$py" - "$dir/ld.h5" <<'PY'
import h5py, sys
with h5py.File(sys.argv[1], "r+") as f:
    f["points/message"][4] = b"fabricated"
    f["metrics/test_loss"][9] = 0.0
    f["analysis/gd_eta"][9] = 123.0
PY
out=$(PYTHONPATH="$src/../tools/python" "$py" -W always -c "
import sys, numpy as np, icl_sweep
s = icl_sweep.open_sweep(sys.argv[1])
print(list(s.damaged), s.points['status'][9], np.isnan(s.metrics['test_loss'][9]), np.isnan(s.analysis('gd_eta')[9]).all())" "$dir/ld.h5" 2>&1)
grep -q "\[4, 9\] damaged True True" <<<"$out" && grep -q "2 row(s) damaged" <<<"$out" && ok "loader: damaged rows 4 and 9 named, NaN (their /analysis series too)" || fail "loader digests: $out"
out=$("$src/../tools/icl-report" "$dir/ld.h5" -o "$dir/ld_report" 2>&1)
grep -q "2 row(s) damaged" <<<"$out" && ok "icl-report names the damaged rows" || fail "report digests: $out"

# 14. Single-bit flips anywhere in OUT.h5: each detected (verify exits 1 or the file does not open) or
#     invisible to a reader; never a silent change.
"$py" "$src/flip_bytes.py" "$bin" "$dir/ref.h5" "$dir" 40 7 && ok "40 random bit flips of OUT.h5: none silent" || fail "bit flips"

# 15. Rows moved or of another plan: swapping two rows in every dataset (digests carried along) is named by
#     verify (a row's digest includes its place) and the rows recomputed by --resume; intact rows of
#     another plan under transplanted attributes are refused; the Python loader refuses a file
#     whose attributes fail their digest (format_version zeroed, a value changed); verify --repair of an
#     unreadable file keeps it aside instead of writing over it.
cp "$dir/ref.h5" "$dir/sw.h5"
"$py" - "$dir/sw.h5" <<'PY'
import h5py, sys
with h5py.File(sys.argv[1], "r+") as f:
    def walk(g):
        for v in g.values():
            yield from (walk(v) if isinstance(v, h5py.Group) else [v])
    for ds in list(walk(f)):
        if ds.name not in ("/weights/theta", "/weights/P", "/weights/Q") and ds.shape and ds.shape[0] == 16:
            a, b = ds[0].copy(), ds[1].copy()
            ds[0], ds[1] = b, a
PY
out=$("$bin" verify "$dir/sw.h5" 2>&1); rc=$?
out2=$(run1 "$spec" -o "$dir/sw.h5" --resume 2>&1); rc2=$?
[ $rc -eq 1 ] && grep -q "row(s) damaged: 0 1" <<<"$out" && [ $rc2 -eq 0 ] && grep -q "damaged: 0 1: recovered from the logs or recomputed" <<<"$out2" \
  && ok "two rows swapped: verify names rows 0 and 1, --resume recomputes them" || fail "swapped rows: verify rc $rc: $out; resume rc $rc2: $out2"
compare "$dir/ref.h5" "$dir/sw.h5" "swapped rows recomputed == original"
# ... and intact rows of another plan (the attributes transplanted from the plan's own file): refused.
cp "$dir/ref.h5" "$dir/tp.h5"
sed 's/^sweep_seed.*/sweep_seed = 99/' "$spec" > "$dir/other.ini"
run1 "$dir/other.ini" -o "$dir/other.h5" >/dev/null 2>&1
"$py" - "$dir/tp.h5" "$dir/other.h5" <<'PY'
import h5py, sys
with h5py.File(sys.argv[1], "r+") as f, h5py.File(sys.argv[2], "r") as g:
    for k in list(f.attrs): del f.attrs[k]
    for k, v in g.attrs.items(): f.attrs[k] = v
PY
before=$(md5sum < "$dir/tp.h5")
out=$(run1 "$dir/other.ini" -o "$dir/tp.h5" --resume 2>&1); rc=$?
[ $rc -eq 2 ] && grep -q "not this spec's point" <<<"$out" && [ "$(md5sum < "$dir/tp.h5")" = "$before" ] \
  && ok "another plan's rows under transplanted attributes: --resume refuses, file untouched" || fail "transplanted attributes: rc $rc: $out"
cp "$dir/ref.h5" "$dir/fv.h5"
"$py" -c "
import h5py, sys
with h5py.File(sys.argv[1], 'r+') as f:
    f.attrs['format_version'] = 0
    f['metrics/test_loss'][3] = 0.5" "$dir/fv.h5"
out=$(PYTHONPATH="$src/../tools/python" "$py" -c "
import sys, icl_sweep
try:
    icl_sweep.open_sweep(sys.argv[1]); print('loaded')
except ValueError as e:
    print('refused', e)" "$dir/fv.h5" 2>&1)
grep -q "^refused.*do not match their digest" <<<"$out" && ok "loader: damaged attributes refused, no value read" || fail "loader attributes: $out"
cp "$dir/ref.h5" "$dir/ur.h5"
printf X | dd of="$dir/ur.h5" bs=1 seek=1 conv=notrunc status=none
before=$(md5sum < "$dir/ur.h5")
"$bin" verify "$dir/ur.h5" --repair --spec "$spec" >/dev/null 2>&1
kept=$(ls "$dir" | grep -c "^ur.h5.unreadable-")
[ "$kept" = 1 ] && [ "$(md5sum < "$dir"/ur.h5.unreadable-*)" = "$before" ] && ok "repair keeps an unreadable file aside, byte for byte" \
  || fail "repair of an unreadable file: $(ls "$dir" | grep '^ur.h5')"

echo "adversarial tests: $failures failed"
exit $failures
