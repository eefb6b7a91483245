#!/usr/bin/env bash
# The bench scripts as a cluster user runs them (issue 32, item 3): inside a cpuset without CPU 0, as a Slurm
# job's often is, on a build given as it is (ICL_BENCH_BUILD) and without the PyTorch peer
# (ICL_PEER_PYTHON=none).  `run_bench_d.sh` at d = 5 must print its row, measured on the one allowed core
# beside that core's peak, and exit 0.  A build directory that does not exist, and a peer Python without
# torch, are refused with exit 2.
#   test_bench_scripts.sh SOURCE_DIR BUILD_DIR
set -u
src=$1 build=$2
source "$src/tests/lib.sh"
cd "$src"
last=$(( $(nproc) - 1 ))
cg=""
# A cpuset of the last CPU alone (root, cgroup v1 or v2); otherwise the affinity alone, which a child may widen.
if [ "$last" -gt 0 ] && [ "$(id -u)" -eq 0 ]; then
  if [ -d /sys/fs/cgroup/cpuset ] && [ -w /sys/fs/cgroup/cpuset ]; then
    cg=/sys/fs/cgroup/cpuset/icl_bench_test_$$
    mkdir "$cg" && echo "$last" > "$cg/cpuset.cpus" && cat /sys/fs/cgroup/cpuset/cpuset.mems > "$cg/cpuset.mems" || cg=""
  elif grep -qw cpuset /sys/fs/cgroup/cgroup.controllers 2>/dev/null; then
    cg=/sys/fs/cgroup/icl_bench_test_$$
    echo +cpuset > /sys/fs/cgroup/cgroup.subtree_control 2>/dev/null
    mkdir "$cg" && echo "$last" > "$cg/cpuset.cpus" || cg=""
  fi
fi
tmp_err=$(mktemp)
trap 'rm -f "$tmp_err"; [ -n "$cg" ] && rmdir "$cg" 2>/dev/null' EXIT
confined() {   # CMD... in the cpuset (or under taskset without one)
  if [ -n "$cg" ]; then
    bash -c 'echo $$ > "$1/cgroup.procs" 2>/dev/null || echo $$ > "$1/tasks"; shift; exec "$@"' _ "$cg" "$@"
  else
    taskset -c "$last" "$@"
  fi
}
[ -n "$cg" ] && ok "a cpuset of CPU $last alone: $cg" || echo "note: no cpuset here (not root, or no cgroup cpuset): CPU $last by affinity only"

out=$(ICL_BENCH_D=5 ICL_BENCH_BUILD="$build" ICL_PEER_PYTHON=none confined bash bench/run_bench_d.sh 2>"$tmp_err")
rc=$?
echo "$out"
[ "$rc" -eq 0 ] && ok "run_bench_d.sh exit 0" || { fail "run_bench_d.sh exit $rc"; cat "$tmp_err"; }
grep -q "core $last\b" <<<"$out" && ok "measured on core $last" || fail "not on core $last"
row=$(grep '^| *5 |' <<<"$out")
awk -F'|' '{ gsub(/ /, ""); exit !($5 > 0 && $6 == "-" && $7 == "-" && $8 > 0 && $9 > 0 && $10 ~ /%$/) }' <<<"$row" \
  && ok "d = 5: steps/s, GFLOP/s and the core's peak, no peer columns" || fail "d = 5 row: '$row'"

err=$(ICL_BENCH_BUILD=/nonexistent ICL_PEER_PYTHON=none bash bench/run_bench_d.sh 2>&1 >/dev/null)
rc=$?
[ "$rc" -eq 2 ] && grep -q ICL_BENCH_BUILD <<<"$err" && ok "a missing build: exit 2 naming ICL_BENCH_BUILD" \
  || fail "a missing build: exit $rc, '$err'"
err=$(ICL_BENCH_BUILD="$build" ICL_PEER_PYTHON=/bin/false bash bench/run_bench_d.sh 2>&1 >/dev/null)
rc=$?
[ "$rc" -eq 2 ] && grep -q "ICL_PEER_PYTHON=/bin/false" <<<"$err" && ok "a peer Python without torch: exit 2 naming it" \
  || fail "a peer Python without torch: exit $rc, '$err'"
[ "$failures" -eq 0 ]
