#!/usr/bin/env bash
# The bench scripts as a cluster user runs them (issue 32, item 3; bench/prelude.sh), without the PyTorch peer
# (ICL_PEER_PYTHON=none), on a build given as it is (ICL_BENCH_BUILD):
# - every script on a stub build whose programs record the CPUs they may run on: each ran on exactly one, the
#   first this test may use; inside a cpuset that lacks that CPU (as a Slurm job's may lack CPU 0), on the
#   cpuset's own;
# - run_bench_d.sh at d = 5 on the real build inside that cpuset: its row, beside that core's peak;
# - every bad setting refused with exit 2 naming it, before anything is written to the build or the repository;
# - a relative ICL_BENCH_BUILD is the caller's.
#   test_bench_scripts.sh SOURCE_DIR BUILD_DIR
set -u
src=$1 build=$2
source "$src/tests/lib.sh"
tmp=$(mktemp -d)
cg=""
cleanup() { [ -n "$cg" ] && rmdir "$cg" 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT
trap 'exit 1' INT TERM
# The CPUs this test may use, one a line.
cpus_of() { taskset -pc "$1" | sed 's/.*: //' | tr ',' '\n' | awk -F- '{for (c = $1; c <= ($2 == "" ? $1 : $2); ++c) print c}'; }
mine=$(cpus_of $$)
first=$(head -n 1 <<<"$mine") last=$(tail -n 1 <<<"$mine")

# A cpuset of the last CPU alone, below this test's own (cgroup v1, or v2 where its parent delegates cpuset).
if [ "$last" != "$first" ] && [ "$(id -u)" -eq 0 ]; then
  if [ -d /sys/fs/cgroup/cpuset ]; then
    parent=/sys/fs/cgroup/cpuset$(awk -F: '$2 == "cpuset" {print $3}' /proc/self/cgroup | sed 's:/$::')
    mems=$parent/cpuset.mems
  else
    parent=/sys/fs/cgroup$(awk -F: '$1 == "0" {print $3}' /proc/self/cgroup | sed 's:/$::')
    mems=""
    grep -qw cpuset "$parent/cgroup.subtree_control" 2>/dev/null || parent=""
  fi
  if [ -n "$parent" ]; then
    for old in "$parent"/icl_bench_test_*; do [ -d "$old" ] && rmdir "$old" 2>/dev/null; done   # a killed run's
    cg=$parent/icl_bench_test_$$
    { mkdir "$cg" && echo "$last" > "$cg/cpuset.cpus" && { [ -z "$mems" ] || cat "$mems" > "$cg/cpuset.mems"; }; } || cg=""
  fi
fi
confined() {   # CMD... inside the cpuset
  bash -c 'echo $$ > "$1/cgroup.procs"; shift; exec "$@"' _ "$cg" "$@"
}

# The stub build: its programs print result lines of the right form and record their CPU lists.
stub=$tmp/stub
mkdir -p "$stub/bench"
bits=$("$build/bench/bench_tiles" --bits)
cat > "$stub/bench/bench_train" <<EOF
#!/usr/bin/env bash
taskset -pc \$\$ | sed 's/.*: //' >> "$tmp/cpus.log"
echo "icl config=\$1 d=5 n=10 layers=2 batch=64 status=ok steps=1 steps_per_s=100.0 flops_per_step=1e+06 gflops=10.00 data_share=0.100 final_loss=1 max_rss_mib=8.0 analysis_s=0.100 analysis_share_run=0.010 analysis_share_paper_budget=0.0010"
EOF
cat > "$stub/bench/bench_lsa_split" <<EOF
#!/usr/bin/env bash
taskset -pc \$\$ | sed 's/.*: //' >> "$tmp/cpus.log"
echo "d=\$1 D=6 kernels=fixed chunks=4 products_gflops=9.00 model_gflops=8.00 products_ms=1.000 model_ms=1.100 draw_ms=0.500 draw_then_model_ms=1.600 interaction=0.000"
EOF
cat > "$stub/bench/bench_tiles" <<EOF
#!/usr/bin/env bash
case \$1 in
  --isa) echo STUB ;;
  --bits) echo $bits ;;
  *) taskset -pc \$\$ | sed 's/.*: //' >> "$tmp/cpus.log"; echo "tile=5x5 gflops=10.00 (this build's kTile)" ;;
esac
EOF
cat > "$stub/bench/bench_normals" <<EOF
#!/usr/bin/env bash
taskset -pc \$\$ | sed 's/.*: //' >> "$tmp/cpus.log"
echo "v2 normals/s 1e9"
EOF
chmod +x "$stub"/bench/*
# What was written since the mark; not git's own files: a build beside this test (the ISA tests') runs `git status`
# for its identity (cmake/BuildInfo.cmake), which may rewrite .git/index.
listing() { (cd "$1" && find . -path ./.git -prune -o -newer "$tmp/start" -print | sort); }
touch "$tmp/start"; sleep 1

export ICL_PEER_PYTHON=none
for script in run_bench_d.sh run_bench.sh run_bench_kernels.sh run_bench_sampler.sh; do
  rm -f "$tmp/cpus.log"
  out=$(ICL_BENCH_D="5 7" ICL_BENCH_BUILD="$stub" SKIP_LOSSES=1 bash "$src/bench/$script" 2>"$tmp/err")
  rc=$?
  ran=$(sort -u "$tmp/cpus.log" 2>/dev/null | paste -sd' ')
  [ "$rc" -eq 0 ] && [ "$ran" = "$first" ] && grep -q "core $first\b" <<<"$out" &&
    ok "$script: exit 0, every program on CPU $first alone" || { fail "$script: exit $rc, ran on '$ran'"; cat "$tmp/err"; }
done
grep -c '^| *[57] |' <<<"$(ICL_BENCH_D="5 7" ICL_BENCH_BUILD="$stub" bash "$src/bench/run_bench_d.sh" 2>/dev/null)" |
  grep -qx 2 && ok "run_bench_d.sh: a row per d of ICL_BENCH_D" || fail "run_bench_d.sh: not a row per d"

if [ -n "$cg" ]; then
  ok "a cpuset of CPU $last alone: $cg"
  rm -f "$tmp/cpus.log"
  out=$(ICL_BENCH_D=5 ICL_BENCH_BUILD="$stub" confined bash "$src/bench/run_bench_d.sh" 2>"$tmp/err")
  rc=$?
  ran=$(sort -u "$tmp/cpus.log" 2>/dev/null | paste -sd' ')
  [ "$rc" -eq 0 ] && [ "$ran" = "$last" ] && ok "in the cpuset: exit 0, on CPU $last" ||
    { fail "in the cpuset: exit $rc, ran on '$ran'"; cat "$tmp/err"; }
  out=$(ICL_BENCH_D=5 ICL_BENCH_BUILD="$build" confined bash "$src/bench/run_bench_d.sh" 2>"$tmp/err")
  rc=$?
  echo "$out"
  row=$(grep '^| *5 |' <<<"$out")
  [ "$rc" -eq 0 ] && grep -q "core $last\b" <<<"$out" &&
    awk -F'|' '{ gsub(/ /, ""); exit !($5 > 0 && $6 == "-" && $7 == "-" && $8 > 0 && $9 > 0 && $10 ~ /%$/ && $10 + 0 > 0) }' <<<"$row" &&
    ok "the real build in the cpuset: steps/s, GFLOP/s and the core's peak at d = 5, no peer columns" ||
    { fail "the real build in the cpuset: exit $rc, row '$row'"; cat "$tmp/err"; }
else
  echo "note: no cpuset made here (not root, one CPU, or no cgroup cpuset to delegate): the stub runs above only"
fi

# A peer held by the environment: a cluster's modules may set OPENBLAS_CORETYPE (this development machine's
# environment does).  The native run then holds the peer to it and says so (it stopped: ATEN_CPU_CAPABILITY
# unbound).  The peer is a stub Python: its version line, and 50 steps/s against the stub build's 100.
cat > "$tmp/peer_python" <<'EOF'
#!/usr/bin/env bash
case $1 in
  -c) echo "0.0-stub with BLAS openblas:Haswell" ;;
  *) echo "torch_steps_per_s 50.000 stub" ;;
esac
EOF
chmod +x "$tmp/peer_python"
out=$(env -u ATEN_CPU_CAPABILITY ICL_PEER_PYTHON="$tmp/peer_python" OPENBLAS_CORETYPE=Haswell ICL_BENCH_D=5 ICL_BENCH_BUILD="$stub" \
  bash "$src/bench/run_bench_d.sh" 2>"$tmp/err")
rc=$?
[ "$rc" -eq 0 ] && grep -qF "peer held to OpenBLAS Haswell, PyTorch (its own choice)" <<<"$out" && grep -q '^| *5 |.* 2\.0x |' <<<"$out" &&
  ok "OPENBLAS_CORETYPE set by the environment: the peer held to it, said so, its row" ||
  { fail "OPENBLAS_CORETYPE set by the environment: exit $rc: $out"; cat "$tmp/err"; }

# bench_lsa_split times the products with the model's own kernels only: fixed-size at d = 5 and 10, tiled at
# d >= 16; at the other d below 16 (fixed-size kernels it does not instantiate) they are nan, the model timed.
for d in 5 12 16; do
  case $d in
    5) want='kernels=fixed .*products_gflops=[0-9][0-9.]* model_gflops=[0-9]' ;;
    12) want='kernels=fixed_not_here .*products_gflops=nan model_gflops=[0-9]' ;;
    16) want='kernels=tiled .*products_gflops=[0-9][0-9.]* model_gflops=[0-9]' ;;
  esac
  line=$("$build/bench/bench_lsa_split" "$d" 2>&1)
  grep -q "$want" <<<"$line" && ok "bench_lsa_split $d: $(grep -o 'kernels=[a-z_]*' <<<"$line")" ||
    fail "bench_lsa_split $d: '$line'"
done

# Bad settings: exit 2 naming the setting, nothing written to the build or the repository.
refused() {   # WHAT SETTING... : run_bench_d.sh with the settings must exit 2 naming WHAT
  local what=$1 err rc
  shift
  err=$(env ICL_BENCH_BUILD="$stub" "$@" bash "$src/bench/run_bench_d.sh" 2>&1 >/dev/null)
  rc=$?
  [ "$rc" -eq 2 ] && grep -q "$what" <<<"$err" && ok "refused: $* ($(tail -n 1 <<<"$err"))" ||
    fail "not refused with exit 2 naming $what: $* (exit $rc: $err)"
}
refused ICL_BENCH_BUILD ICL_BENCH_BUILD=/nonexistent
refused ICL_BENCH_BUILD ICL_BENCH_BUILD="$src"
refused ICL_PEER_PYTHON ICL_PEER_PYTHON=/bin/false
refused ICL_PEER_PYTHON ICL_PEER_PYTHON=/bin/true
refused ICL_PEER_PYTHON ICL_PEER_PYTHON=/nonexistent/python
for bad in 0 256 abc '*' -5 '5,10'; do refused ICL_BENCH_D ICL_BENCH_D="$bad"; done
refused ICL_MARCH ICL_MARCH=no-such-cpu
[ "$bits" = 128 ] || refused ICL_MARCH ICL_MARCH=x86-64-v2   # a 128-bit peak kernel beside a wider build
written=$(listing "$stub"; listing "$src" | grep -v '^\./build' )
[ -z "$written" ] && ok "nothing written to the stub build or the repository" || fail "written: $written"

# A relative ICL_BENCH_BUILD is the caller's.
out=$(cd "$tmp" && ICL_BENCH_D=5 ICL_BENCH_BUILD=stub bash "$src/bench/run_bench_d.sh" 2>/dev/null)
grep -q "build: $stub," <<<"$out" && ok "ICL_BENCH_BUILD=stub from $tmp: $stub" || fail "a relative build: $out"
[ "$failures" -eq 0 ]
