#!/usr/bin/env bash
# The train command's contract: bad input -> exit 2, a message naming option, value and rule, and
# nothing written; good input -> a readable HDF5 file; an existing output is never clobbered.
set -u
bin=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail=0
expect_usage_error() {   # expect_usage_error PATTERN ARGS... -o "$dir/bad.h5"
  local pattern=$1; shift
  local out rc
  out=$("$bin" train --eval_tasks 16 --batch 16 "$@" 2>&1); rc=$?
  if [ $rc -ne 2 ]; then echo "FAIL: $* exited $rc, not 2"; fail=1; fi
  if ! grep -qF -- "$pattern" <<<"$out"; then echo "FAIL: $* printed '$out', expected '$pattern'"; fail=1; fi
  if [ -e "$dir/bad.h5" ] || ls "$dir"/bad.h5.tmp.* >/dev/null 2>&1; then echo "FAIL: $* wrote a file"; fail=1; fi
}
expect_usage_error "option 'n' = '-3': must be an integer" --n -3 -o "$dir/bad.h5"
expect_usage_error "option 'param' = 'dense': must be one of" --param dense -o "$dir/bad.h5"
expect_usage_error "option 'noise' = 'set:1,,3'" --noise set:1,,3 -o "$dir/bad.h5"
expect_usage_error "option 'cov' = 'diag:1,0,1,1,1': every eigenvalue must be > 0" --cov diag:1,0,1,1,1 -o "$dir/bad.h5"
expect_usage_error "option 'cov' = 'diag:1,2': the spectrum needs exactly d = 5" --cov diag:1,2 -o "$dir/bad.h5"
expect_usage_error "option 'steps' = '0'" --steps 0 -o "$dir/bad.h5"
expect_usage_error "argument 'd=4': options are given as --name VALUE (here --d 4)" d=4 -o "$dir/bad.h5"
G="--arch transformer --norm 1 --tokens padded --causal true --readout head"
expect_usage_error "option 'prefix_loss' = 'true': needs causal = true" --arch transformer --norm 1 --tokens classic --prefix_loss true -o "$dir/bad.h5"
expect_usage_error "option 'prefix_loss' = 'true': needs causal = true and tokens = classic or padded" --arch transformer --norm 1 --causal true --prefix_loss true -o "$dir/bad.h5"
expect_usage_error "option 'readout' = 'channel': channel reads the label channel" --arch transformer --norm 1 --tokens padded -o "$dir/bad.h5"
expect_usage_error "option 'pe_size' = '4': pe = learnt needs the token width, 6" $G --pe learnt --pe_size 4 -o "$dir/bad.h5"
expect_usage_error "option 'init' = 'gpt2': gpt2 applies only to arch = transformer" --init gpt2 -o "$dir/bad.h5"
expect_usage_error "option 'eval_seed' = '-1': must be point or an integer >= 0" --eval_seed -1 -o "$dir/bad.h5"
expect_usage_error "option 'eval_seed' = '7': a shared evaluation set needs" --eval_seed 7 --cov rotated:1,1,1,1,2 -o "$dir/bad.h5"
expect_usage_error "unrecognised option '--colour'" --colour red -o "$dir/bad.h5"
expect_usage_error "option 'output' = '$dir/no/such/dir/x.h5': directory" -o "$dir/no/such/dir/x.h5"

# Sizes that overflow the model's int indexing and degenerate laws are refused before any work (issue 28).
expect_usage_error "option 'widening' = '64': " --arch transformer --norm 1 --embed linear --embed_size 4096 --widening 64 --mlp true -o "$dir/bad.h5"
expect_usage_error "option 'x_dist' = 'gamma:1e-300': " --x_dist gamma:1e-300 -o "$dir/bad.h5"
printf 'arch = transformer\nnorm = 1\nembed = linear\nembed_size = 4096\nwidening = 8 64\nmlp = true\n' > "$dir/huge.ini"
out=$("$bin" run "$dir/huge.ini" --dry-run --max_point_memory off 2>&1); rc=$?
[ $rc -eq 2 ] && grep -qF "widening=64, mlp=true): option 'widening' = '64': " <<<"$out" \
  || { echo "FAIL: dry run of a transformer past the size limit: rc $rc: $out"; fail=1; }
# A value listed twice in a list (as written or as the point holds it), or a zip group's row twice: refused, naming
# the option and the value, nothing written (it made the same points twice; the report counted them as replicas).
printf 'd = 3\nsteps = 1\nlayers = 1 2\nlr = 0.001 3e-3 1e-3\n' > "$dir/dup.ini"
printf 'd = 3\nsteps = 1\nlr = 0.1 0.1 0.2\nbeta1 = 0.9 0.9 0.9\nzip = lr beta1\n' > "$dir/dupzip.ini"
printf 'd = 3\nsteps = 1\nlr = 0.1 0.1\nbeta1 = 0.9 0.95\nzip = lr beta1\n' > "$dir/zipok.ini"
out=$("$bin" run "$dir/dup.ini" -o "$dir/dup.h5" 2>&1); rc=$?
[ $rc -eq 2 ] && grep -qF "dup.ini:4: option 'lr': 'lr = 0.001' is listed twice (values 1 and 3)" <<<"$out" && [ ! -e "$dir/dup.h5" ] && [ ! -e "$dir/dup.h5.points" ] \
  || { echo "FAIL: a value listed twice: rc $rc: $out"; fail=1; }
out=$("$bin" run "$dir/dupzip.ini" --dry-run 2>&1); rc=$?
[ $rc -eq 2 ] && grep -qF "option 'lr' (zipped): 'lr = 0.1, beta1 = 0.9' is listed twice" <<<"$out" || { echo "FAIL: a zip row twice: rc $rc: $out"; fail=1; }
"$bin" run "$dir/zipok.ini" --dry-run >/dev/null 2>&1 || { echo "FAIL: a zip group repeating one option's value with distinct rows was refused"; fail=1; }
# A memory limit of 0 is no limit inside; written by a user it is refused (it meant "off" or a typo), nothing written.
printf 'd = 5\nsteps = 1\n' > "$dir/m0.ini"
out=$("$bin" run "$dir/m0.ini" -o "$dir/m0.h5" --max_point_memory 0 2>&1); rc=$?
[ $rc -eq 2 ] && grep -qF "'max_point_memory' = '0': must be one size above 0" <<<"$out" && [ ! -e "$dir/m0.h5" ] && [ ! -e "$dir/m0.h5.points" ] \
  || { echo "FAIL: max_point_memory = 0: rc $rc: $out"; fail=1; }
# A sweep run with max_point_memory above a node's default (here off, on a node whose default is this machine's
# memory over a million ranks) is merged and verified there: the stored spec does not hold the limit, and
# re-expanding it under the default refused its own points, so the merge after a kill left OUT.h5 `running`.
printf 'd = 2\nn = 4\nsteps = 2\nbatch = 8\neval_tasks = 8\neval_every = 1\nanalysis = false\nrepeats = 2\n' > "$dir/mo.ini"
"$bin" run "$dir/mo.ini" -o "$dir/mo.h5" --quiet --max_point_memory off >/dev/null 2>&1 || { echo "FAIL: a sweep with max_point_memory off"; fail=1; }
for cmd in merge verify; do
  out=$(OMPI_COMM_WORLD_LOCAL_SIZE=1048576 "$bin" $cmd "$dir/mo.h5" 2>&1); rc=$?
  [ $rc -eq 0 ] || { echo "FAIL: $cmd where the default limit is below the sweep's points: rc $rc: $out"; fail=1; }
done
out=$(OMPI_COMM_WORLD_LOCAL_SIZE=1048576 "$bin" run "$dir/mo.ini" -o "$dir/mo2.h5" 2>&1); rc=$?   # a run still obeys it
[ $rc -eq 2 ] && grep -qF "more than max_point_memory" <<<"$out" && [ ! -e "$dir/mo2.h5" ] \
  || { echo "FAIL: a run under a default below its points: rc $rc: $out"; fail=1; }
# A point that fails (here: std::bad_alloc under a 2 GiB address-space limit) is a failure: exit 1 with its
# reason; its result (NaN, the reason) is still written.
out=$( (ulimit -v 2000000; "$bin" train --eval_tasks 10000000 --steps 1 --batch 16 -o "$dir/failed.h5") 2>&1); rc=$?
[ $rc -eq 1 ] && grep -qF "failed: std::bad_alloc" <<<"$out" && [ -s "$dir/failed.h5" ] \
  || { echo "FAIL: a failed allocation: rc $rc: $out"; fail=1; }

"$bin" train -o "$dir/ok.h5" --steps 20 --batch 64 --eval_tasks 64 --eval_every 10 >/dev/null || { echo "FAIL: good run"; fail=1; }
[ -s "$dir/ok.h5" ] || { echo "FAIL: no output file"; fail=1; }
before=$(md5sum < "$dir/ok.h5")
out=$("$bin" train -o "$dir/ok.h5" --steps 5 --batch 16 --eval_tasks 16 2>&1); rc=$?
[ $rc -eq 2 ] && grep -qF "exists; pass --force" <<<"$out" || { echo "FAIL: existing output: rc $rc, '$out'"; fail=1; }
[ "$(md5sum < "$dir/ok.h5")" = "$before" ] || { echo "FAIL: existing output was modified"; fail=1; }
"$bin" train -o "$dir/ok.h5" --force --steps 5 --batch 16 --eval_tasks 16 >/dev/null || { echo "FAIL: --force"; fail=1; }
[ "$(md5sum < "$dir/ok.h5")" != "$before" ] || { echo "FAIL: --force did not rewrite"; fail=1; }
# The sweep's repeats and sweep_seed can be overridden like any option; a bad value exits 2 naming it.
printf 'd = 3\nn = 6\nlayers = 1 2\nrepeats = 3\n' > "$dir/spec.ini"
out=$("$bin" run "$dir/spec.ini" --repeats 2 --dry-run 2>&1)
grep -q "^points      4 (2 replicas" <<<"$out" || { echo "FAIL: --repeats override: $out"; fail=1; }
out=$("$bin" run "$dir/spec.ini" --repeats 0 --dry-run 2>&1); rc=$?
[ $rc -eq 2 ] && grep -qF "command line: 'repeats' = '0': must be one integer >= 1" <<<"$out" \
  || { echo "FAIL: --repeats 0: rc $rc: $out"; fail=1; }
# --measure times a few steps on this core and prints the scaled estimate; without --dry-run it is refused.
out=$("$bin" run "$dir/spec.ini" --dry-run --measure --steps 20 --batch 16 2>&1)
grep -q "^measured    .* core-hours in all on this core" <<<"$out" || { echo "FAIL: --measure: $out"; fail=1; }
out=$("$bin" run "$dir/spec.ini" -o "$dir/m.h5" --measure 2>&1); rc=$?
[ $rc -eq 2 ] && grep -qF "option '--measure': applies only with --dry-run" <<<"$out" && [ ! -e "$dir/m.h5" ] \
  || { echo "FAIL: --measure without --dry-run: rc $rc: $out"; fail=1; }
# Options of a resume without --resume, an empty output name, an output that is a directory: exit 2, nothing
# written (they ran, and wrote a file named after the spec, or trained every point before failing to rename).
for flag in --retry-failed --allow-mixed-builds; do
  out=$(cd "$dir" && "$bin" run "$dir/spec.ini" -o "$dir/r.h5" $flag 2>&1); rc=$?
  [ $rc -eq 2 ] && grep -qF "option '$flag': applies only with --resume" <<<"$out" && [ ! -e "$dir/r.h5" ] && [ ! -e "$dir/r.h5.points" ] \
    || { echo "FAIL: $flag without --resume: rc $rc: $out"; fail=1; }
done
out=$(cd "$dir" && "$bin" run "$dir/spec.ini" -o "" 2>&1); rc=$?
[ $rc -eq 2 ] && grep -qF "option '--output' = '': must name the sweep's file" <<<"$out" && [ ! -e "$dir/spec.h5" ] \
  || { echo "FAIL: -o '': rc $rc: $out"; fail=1; }
# verify --repair's refusals name verify --repair, not --resume (which it was not given).
"$bin" run "$dir/spec.ini" -o "$dir/v.h5" --steps 20 --batch 16 --quiet || { echo "FAIL: a small sweep"; fail=1; }
out=$("$bin" verify "$dir/v.h5" --repair --spec "$dir/spec.ini" 2>&1); rc=$?
[ $rc -eq 2 ] && grep -qF "'$dir/v.h5': verify --repair: it was written by a different spec" <<<"$out" \
  || { echo "FAIL: verify --repair with another spec: rc $rc: $out"; fail=1; }
# A FIFO named *.log among the logs is no log: status and verify do not block opening it (they hung).
mkfifo "$dir/v.h5.points/fifo.log"
for cmd in status verify; do
  out=$(timeout 20 "$bin" $cmd "$dir/v.h5" 2>&1); rc=$?
  [ $rc -eq 0 ] || { echo "FAIL: $cmd with a FIFO named *.log: rc $rc: $out"; fail=1; }
done
rm -f "$dir/v.h5.points/fifo.log"
# --force starts over from the sweep's own files (OUT.h5 and its logs): a user's file kept beside the logs stays
# (it was deleted), and a directory holding only such files holds no sweep: a new run there needs no --force.
echo "my notes" > "$dir/v.h5.points/notes.txt"
old_logs=$(cd "$dir/v.h5.points" && ls *.log)
printf '%-126s\n' "5 100 1000 0.5 train $(date +%s) 1" > "$dir/v.h5.points/killed-1-2-3.log.live"   # a killed run's live view
"$bin" run "$dir/spec.ini" -o "$dir/v.h5" --steps 20 --batch 16 --quiet --force || { echo "FAIL: --force over a sweep"; fail=1; }
[ "$(cat "$dir/v.h5.points/notes.txt" 2>/dev/null)" = "my notes" ] || { echo "FAIL: --force deleted a user's file in OUT.h5.points/"; fail=1; }
for log in $old_logs; do [ ! -e "$dir/v.h5.points/$log" ] || { echo "FAIL: --force kept the old log $log"; fail=1; }; done
[ ! -e "$dir/v.h5.points/killed-1-2-3.log.live" ] || { echo "FAIL: --force kept a killed run's .live file"; fail=1; }
mkdir -p "$dir/fresh.h5.points" && echo "my notes" > "$dir/fresh.h5.points/notes.txt"
cp "$dir/v.h5.points/notes.txt" "$dir/fresh.h5.points/killed-1-2-3.log.live"
"$bin" run "$dir/spec.ini" -o "$dir/fresh.h5" --steps 20 --batch 16 --quiet && [ -f "$dir/fresh.h5" ] &&
  [ -f "$dir/fresh.h5.points/notes.txt" ] && [ ! -e "$dir/fresh.h5.points/killed-1-2-3.log.live" ] ||
  { echo "FAIL: a new sweep beside a user's file and a killed run's .live file in OUT.h5.points/"; fail=1; }
mkdir -p "$dir/isdir.h5/x"
for flag in "" --force --resume; do
  out=$("$bin" run "$dir/spec.ini" -o "$dir/isdir.h5" $flag 2>&1); rc=$?
  [ $rc -eq 2 ] && grep -qF "is a directory" <<<"$out" && [ -d "$dir/isdir.h5/x" ] && [ ! -e "$dir/isdir.h5.points" ] \
    || { echo "FAIL: an output that is a directory ($flag): rc $rc: $out"; fail=1; }
done
# status and verify of a FIFO named OUT.h5: refused at once, naming it (HDF5 would block opening it: it hung).
mkfifo "$dir/fifo.h5"
for cmd in status verify; do
  out=$(timeout 20 "$bin" $cmd "$dir/fifo.h5" 2>&1); rc=$?
  [ $rc -ne 124 ] && [ $rc -ne 0 ] && grep -qF "is a FIFO: a results file is a regular HDF5 file" <<<"$out" \
    || { echo "FAIL: $cmd of a FIFO: rc $rc: $out"; fail=1; }
done
# Every preset validates (a dry run: exit 0, nothing written), and every paper preset has a reduced variant.
root=$(cd "$(dirname "$0")/.." && pwd)
for spec in "$root"/jobs/presets/*.ini "$root"/jobs/presets/reduced/*.ini; do
  out=$("$bin" run "$spec" --dry-run 2>&1) || { echo "FAIL: preset $spec: $out"; fail=1; }
  name=$(basename "$spec")
  [ "$name" = quickstart.ini ] || [ -e "$root/jobs/presets/reduced/$name" ] || { echo "FAIL: $name has no reduced variant"; fail=1; }
done
# A stop signal ends --dry-run --measure at once (it writes nothing; the sweep's handlers only set a flag that
# nothing there polls: Ctrl-C and SIGTERM left fu_newton's 25-minute measure running).  The signal's action
# before the sweep's handlers is the one restored: set here to the default by perl, whatever this shell had
# (a background job's SIGINT is ignored); one that was ignored stays ignored.
measure_under() {   # ACTION SIGNAL: rc of timeout sending SIGNAL after 2 s to a dry-run measure started with ACTION
  timeout -k 8 -s "$2" 2 perl -e '$SIG{$ARGV[0]} = $ARGV[1]; shift; shift; exec @ARGV' "$2" "$1" \
    "$bin" run "$root/jobs/presets/fu_newton.ini" --dry-run --measure >/dev/null 2>&1
}
for sig in INT TERM USR1; do
  t0=$(date +%s)
  measure_under DEFAULT $sig; rc=$?
  [ $rc -ne 137 ] && [ $(( $(date +%s) - t0 )) -lt 8 ] || { echo "FAIL: SIG$sig did not stop --dry-run --measure (rc $rc)"; fail=1; }
done
rc=$( (measure_under IGNORE INT) 2>/dev/null; echo $?)   # (the shell's "Killed" about timeout's own kill not shown)
[ $rc -eq 137 ] || { echo "FAIL: a dry run started with SIGINT ignored did not keep ignoring it (rc $rc)"; fail=1; }
# README's HDF5 layout table is the declared layout (src/io/layout.cpp), word for word.
readme=$(sed -n '/^<!-- layout: icl-sweep layout -->$/,/^<!-- \/layout -->$/p' "$root/README.md" | sed '1d;$d')
[ -n "$readme" ] && [ "$readme" = "$("$bin" layout)" ] || { echo "FAIL: README's layout table differs from 'icl-sweep layout'"; fail=1; }
[ $fail -eq 0 ] && echo "cli contract: all checks passed"
exit $fail
