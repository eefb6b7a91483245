#!/usr/bin/env bash
# Successive halving cut at every record (issue 28, 2.1): a singleton sweep (one rank without mpiexec: a
# killed mpiexec job takes seconds to wind down) killed with SIGKILL right after its k-th stored record
# (ICL_SWEEP_KILL_AFTER, sweep_loop.cpp; rung records and pruned points count), for every k, then
# --resume: OUT.h5 equals the uninterrupted run's bit for bit and no point is recorded twice.  The spec
# keeps two survivors of the last rung per condition, so a resume must rank them with the points already
# pruned there.  Then kills after a random record under 1, 2 and 3 ranks (twice each, the second during
# the first resume), and --resume on as many ranks.
set -u
bin=$1
src=$2
dir=$(mktemp -d)
cleanup() { pkill -9 -f "icl-sweep run .*$dir" 2>/dev/null; rm -rf "$dir"; }
trap cleanup EXIT
. "$src/lib.sh"
need_python h5py numpy
spec=$src/specs/halving_resume.ini
started=$SECONDS
duplicates() { "$bin" status "$1" 2>/dev/null | awk '/^records/ {print $6}'; }

mpi 1 "$bin" run "$spec" -o "$dir/ref.h5" --quiet || fail "uninterrupted run"
out=$("$bin" status "$dir/ref.h5")
grep -q "ok 4  pruned 12" <<<"$out" && ok "uninterrupted: 2 survivors of the last rung per condition" || fail "reference: $out"

# Every record boundary: k = 1, 2, ... until a run stores all its records without being cut.
cut=0 dup=""
for k in $(seq 1 200); do
  ICL_SWEEP_KILL_AFTER=$k "$bin" run "$spec" -o "$dir/c$k.h5" --quiet >/dev/null 2>&1 && break
  cut=$k
  "$bin" run "$spec" -o "$dir/c$k.h5" --resume --quiet >/dev/null 2>&1 || fail "resume after record $k"
  [ "$(duplicates "$dir/c$k.h5")" = 0 ] || dup="$dup $k"
done
[ $cut -eq 40 ] && ok "cut after each of the 40 records" || fail "$cut cuts: the sweep stores 40 records"
[ -z "$dup" ] && ok "no point recorded twice after any cut" || fail "points recorded twice after the cut at record(s)$dup"
"$py" - "$src" "$dir" "$cut" <<'PY' && ok "every cut + resume == uninterrupted, bit for bit" || fail "cut + resume differs from the uninterrupted run"
import sys
sys.path.insert(0, sys.argv[1])
from compare_sweeps import main
bad = [k for k in range(1, int(sys.argv[3]) + 1) if main(f"{sys.argv[2]}/ref.h5", f"{sys.argv[2]}/c{k}.h5")]
print(f"  cuts whose resumed file differs: {bad}" if bad else "  all cuts resumed to the same bits")
sys.exit(1 if bad else 0)
PY

# Kills after a random record, under 1, 2 and 3 ranks: the run, then its first resume; the second resume ends.
for n in 1 2 3; do
  for round in 1 2; do
    k=$((1 + RANDOM % (40 / n)))
    resume=$([ $round -eq 2 ] && echo --resume)
    if ICL_SWEEP_KILL_AFTER=$k mpi $n "$bin" run "$spec" -o "$dir/n$n.h5" $resume --quiet >/dev/null 2>&1; then
      echo "  $n rank(s), round $round: no rank stored $k records: ran to the end"
    else
      echo "  $n rank(s), round $round: killed after record $k of a rank"
    fi
  done
  mpi $n "$bin" run "$spec" -o "$dir/n$n.h5" --resume --quiet || fail "final resume on $n ranks"
  [ "$(duplicates "$dir/n$n.h5")" = 0 ] || fail "$n ranks: a point recorded twice"
  compare "$dir/ref.h5" "$dir/n$n.h5" "$n rank(s): two random kills + resume == uninterrupted"
done

echo "  ($((SECONDS - started)) s)"
[ $failures -eq 0 ] && echo "all halving resume checks passed" || { echo "$failures check(s) failed"; exit 1; }
