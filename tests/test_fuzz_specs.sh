#!/usr/bin/env bash
# Fuzzed specs (issue 11): a few hundred deterministic hostile mutations of the presets and special
# inputs (directory, FIFO, /dev/zero, empty, NUL bytes, > 1 MiB, symlinks) through `icl-sweep run SPEC
# --dry-run`, and a handful of the accepted ones through a real 1-rank run with tiny budgets.  Every case
# must exit 0 (a correct dry run or run) or 2 (a message naming the spec, option or limit), never a
# signal (>= 128) or a timeout (124), and exit 2 must write nothing.
set -u
bin=$1
src=$2
count=${3:-200}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
. "$src/lib.sh"
# Every case is a 1-rank singleton: skip Open MPI's helper daemon and network probing (0.9 s -> 0.4 s each);
# isolated singletons share a session directory name, so each case gets its own temporary directory.
export OMPI_MCA_ess_singleton_isolated=1 OMPI_MCA_pml=ob1 OMPI_MCA_btl=self
need_python
"$py" "$src/gen_fuzz_specs.py" "$src/../jobs/presets" "$dir/specs" "$count" > "$dir/list" || { echo "FAIL: generator"; exit 1; }

# One case: dry run in an empty working directory of its own; prints "rc<TAB>path" and keeps the output.
dry() {
  local i=$1 spec=$2 w="$dir/work/$1"
  mkdir -p "$w" "$dir/tmp/$i"
  (cd "$w" && OMPI_MCA_orte_tmpdir_base="$dir/tmp/$i" timeout -k 5 20 "$bin" run "$spec" --dry-run > "$dir/out/$i.out" 2> "$dir/out/$i.err")
  local rc=$?
  [ -z "$(ls -A "$w")" ] && rmdir "$w"
  printf '%s\t%s\n' "$rc" "$spec"
}
export -f dry
export bin dir
mkdir -p "$dir/work" "$dir/out"
nl -nln -w1 -s' ' "$dir/list" | xargs -P 6 -L 1 bash -c 'dry "$0" "$1"' > "$dir/results"

total=$(wc -l < "$dir/results")
[ "$total" -eq "$(wc -l < "$dir/list")" ] && ok "$total cases ran" || fail "ran $total of $(wc -l < "$dir/list") cases"
bad=$(awk -F'\t' '$1 != 0 && $1 != 2' "$dir/results")
[ -z "$bad" ] && ok "every dry run exits 0 or 2" || fail "dry runs with another exit (signal >= 128, timeout 124): $bad"
[ -z "$(ls -A "$dir/work")" ] && ok "no dry run wrote a file" || fail "files written by dry runs: $(ls "$dir/work")"
n0=$(awk -F'\t' '$1 == 0' "$dir/results" | wc -l)
n2=$(awk -F'\t' '$1 == 2' "$dir/results" | wc -l)
echo "dry runs: $n0 accepted, $n2 refused"
[ "$n0" -ge 10 ] && [ "$n2" -ge 100 ] && ok "both outcomes are exercised" || fail "too few accepted ($n0) or refused ($n2)"
# Exit 2 explains itself; exit 0 prints the plan with its memory line.
i=0
msg_bad=0
while IFS= read -r spec; do
  i=$((i + 1))
  rc=$(awk -F'\t' -v s="$spec" '$2 == s {print $1; exit}' "$dir/results")
  if [ "$rc" = 2 ] && ! grep -q "^icl-sweep run: " "$dir/out/$i.err"; then msg_bad=1; echo "no message: $spec"; fi
  if [ "$rc" = 0 ] && ! grep -q "^memory      largest point" "$dir/out/$i.out"; then msg_bad=1; echo "no plan: $spec"; fi
done < "$dir/list"
[ $msg_bad -eq 0 ] && ok "every refusal has a message, every acceptance a plan" || fail "messages"
for special in a_directory fifo empty nul nul_inside over_1mib only_comments only_repeats link_to_dir loop missing; do
  grep -qP "^2\t.*/$special.ini$" "$dir/results" || fail "special input $special.ini not refused with exit 2"
done
grep -qP "^2\t/dev/zero$" "$dir/results" && grep -qP "^2\t/dev/null$" "$dir/results" && ok "special inputs refused" \
  || fail "/dev/zero or /dev/null not refused"

# A handful of accepted specs through a real 1-rank run with tiny budgets (the overrides keep every
# point to a few milliseconds; a combination they make invalid must be refused with nothing written).
tiny=(--steps 2 --warmup 0 --batch 8 --eval_tasks 8 --eval_every 1 --analysis false --landscape off --repeats 1
      --layers 1 --heads 1 --n 8 --quiet)
runs=0
while IFS=$'\t' read -r rc spec; do
  [ "$rc" = 0 ] || continue
  points=$("$bin" run "$spec" --dry-run "${tiny[@]}" 2>/dev/null | awk '/^points/ {print $2}')
  [ -n "$points" ] && [ "$points" -le 4 ] || continue
  runs=$((runs + 1))
  w="$dir/run$runs"
  mkdir -p "$w"
  (cd "$w" && timeout -k 5 120 "$bin" run "$spec" -o out.h5 "${tiny[@]}" > log 2>&1)
  rc=$?
  case $rc in
    0) "$bin" status "$w/out.h5" > "$w/status" 2>&1 && ok "real run $runs ($points points): exit 0" \
         || fail "real run of $spec: status failed: $(cat "$w/status")" ;;
    2) [ -z "$(ls -A "$w" | grep -v '^log$')" ] && ok "real run $runs refused, nothing written" \
         || fail "real run of $spec: exit 2 wrote $(ls "$w")" ;;
    *) fail "real run of $spec: exit $rc: $(tail -3 "$w/log")" ;;
  esac
  [ $runs -ge 6 ] && break
done < "$dir/results"
[ $runs -ge 3 ] || fail "only $runs real runs"
[ $failures -eq 0 ] && echo "fuzzed specs: all checks passed"
exit $((failures > 0))
