#!/usr/bin/env bash
# icl-report end to end: the smallest paper preset (jobs/presets/reduced/vo23_fig2.ini) and a tiny sweep that
# varies everything a figure is chosen by (tests/specs/report_small.ini), each through `icl-sweep run` under
# mpiexec and `tools/icl-report`; checks PNGs, CSV columns, HTML links (tests/test_report.py), the loader,
# and that bad arguments exit 2 naming the option and write nothing.
set -u
bin=$1
src=$2
root=$src/..
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
. "$src/lib.sh"
need_python numpy h5py matplotlib
report() { "$root/tools/icl-report" "$@"; }

# The smallest preset, as a user runs it.
mpiexec --oversubscribe -n 2 "$bin" run "$root/jobs/presets/reduced/vo23_fig2.ini" -o "$dir/vo23.h5" --quiet \
  && ok "reduced vo23_fig2 preset ran" || fail "reduced vo23_fig2 preset"
out=$(report "$dir/vo23.h5" -o "$dir/vo23_report" --half 2>&1) && ok "icl-report on it" || fail "icl-report: $out"
grep -q "test_loss (1/2 MSE)" <<<"$out" && ok "terminal summary in 1/2 MSE" || fail "terminal summary: $out"
"$py" "$src/test_report.py" outputs "$dir/vo23_report" "$dir/vo23.h5" loss_curves.png weights_1.png ood_alpha.png \
  construction.png || failures=$((failures + 1))

# The trained weights' read-outs ([VO23] Fig. 9, 11, App. A.3, A.10): recurrent 2-layer models over n (lsa, and
# the notebook's factored model), and
# one-layer softmax models with 1 and 2 heads; the roll-out of a recurrent layer; every seed's curve with 1 and
# 2 heads ([VO23] Fig. 15) (the reduced presets).
for preset in vo23_a10_gamma vo23_a10_gamma_factored vo23_fig12 vo23_fig10 vo23_fig15; do
  mpiexec --oversubscribe -n 2 "$bin" run "$root/jobs/presets/reduced/$preset.ini" -o "$dir/$preset.h5" --quiet \
    && report "$dir/$preset.h5" -o "$dir/${preset}_report" --quiet >/dev/null 2>&1 && ok "reduced $preset and its report" \
    || fail "reduced $preset"
done
"$py" "$src/test_report.py" outputs "$dir/vo23_a10_gamma_report" "$dir/vo23_a10_gamma.h5" gdpp_gamma.png construction.png \
  || failures=$((failures + 1))
"$py" "$src/test_report.py" weights "$dir/vo23_a10_gamma_report" "$dir/vo23_a10_gamma.h5" || failures=$((failures + 1))
"$py" "$src/test_report.py" outputs "$dir/vo23_a10_gamma_factored_report" "$dir/vo23_a10_gamma_factored.h5" \
  gdpp_gamma.png construction.png || failures=$((failures + 1))
"$py" "$src/test_report.py" outputs "$dir/vo23_fig12_report" "$dir/vo23_fig12.h5" softmax_heads.png \
  || failures=$((failures + 1))
[ -f "$dir/vo23_fig12_report/softmax_heads.csv" ] && ok "softmax_heads.csv written" || fail "no softmax_heads.csv"
"$py" "$src/test_report.py" outputs "$dir/vo23_fig10_report" "$dir/vo23_fig10.h5" rollout.png || failures=$((failures + 1))
"$py" "$src/test_report.py" outputs "$dir/vo23_fig15_report" "$dir/vo23_fig15.h5" replica_curves.png \
  || failures=$((failures + 1))
"$py" "$src/test_report.py" steps_to_gd "$dir/vo23_fig15_report" "$dir/vo23_fig15.h5" || failures=$((failures + 1))

# A fixed set of B tasks ([VO23] Fig. 16, the reduced preset): fixed_set.png and its table against the file; the
# out-of-distribution grid (Fig. 6); --where keeps the points with the values named.
mpiexec --oversubscribe -n 2 "$bin" run "$root/jobs/presets/reduced/vo23_fig16.ini" -o "$dir/fig16.h5" --quiet \
  && report "$dir/fig16.h5" -o "$dir/fig16_report" --half --quiet >/dev/null 2>&1 && ok "reduced vo23_fig16 and its report" \
  || fail "reduced vo23_fig16"
"$py" "$src/test_report.py" outputs "$dir/fig16_report" "$dir/fig16.h5" fixed_set.png ood_grid.png ood_teacher.png \
  ood_other.png ood_other_teacher.png || failures=$((failures + 1))
"$py" "$src/test_report.py" fixed_set "$dir/fig16_report" "$dir/fig16.h5" || failures=$((failures + 1))
report "$dir/fig16.h5" -o "$dir/fig16_where" --where batch=2048 --quiet >/dev/null 2>&1 \
  && [ "$(tail -n +2 "$dir/fig16_where/fixed_set.csv" | wc -l)" -eq 1 ] && grep -q ",2048," "$dir/fig16_where/fixed_set.csv" \
  && ok "--where batch=2048 keeps one set size" || fail "--where: $(cat "$dir/fig16_where/fixed_set.csv" 2>&1)"
[ "$(tail -n +2 "$dir/fig16_where/summary.csv" | cut -d, -f1 | tr '\n' ' ')" = "2048 " ] \
  && ok "--where: summary.csv lists only the conditions selected" || fail "--where: summary.csv $(cut -d, -f1-2 "$dir/fig16_where/summary.csv" 2>&1)"

# Raventos et al.'s GPT-2 over the task pool (the reduced preset): the task diversity figure and the per-prefix curve.
mpiexec --oversubscribe -n 2 "$bin" run "$root/jobs/presets/reduced/task_diversity_gpt2.ini" -o "$dir/gpt2.h5" --quiet \
  && report "$dir/gpt2.h5" -o "$dir/gpt2_report" --quiet >/dev/null 2>&1 && ok "reduced task_diversity_gpt2 and its report" \
  || fail "reduced task_diversity_gpt2"
"$py" "$src/test_report.py" outputs "$dir/gpt2_report" "$dir/gpt2.h5" task_diversity.png context_curve.png \
  probe_newton_similarity.png \
  || failures=$((failures + 1))
"$py" "$src/test_report.py" gpt2 "$dir/gpt2.h5" || failures=$((failures + 1))

# Fu et al.'s experiment (the reduced preset): Garg et al.'s GPT-2 and its layers' probes against Newton and GD.
mpiexec --oversubscribe -n 2 "$bin" run "$root/jobs/presets/reduced/fu_newton.ini" -o "$dir/fu.h5" --quiet \
  && report "$dir/fu.h5" -o "$dir/fu_report" --quiet >/dev/null 2>&1 && ok "reduced fu_newton and its report" \
  || fail "reduced fu_newton"
"$py" "$src/test_report.py" outputs "$dir/fu_report" "$dir/fu.h5" probe_newton_similarity.png \
  probe_gd_similarity.png probe_over_layers.png context_curve.png || failures=$((failures + 1))
"$py" "$src/test_report.py" fu "$dir/fu.h5" || failures=$((failures + 1))

# Depth against context (Bordelon et al. 2025): the reduced model over alpha, its d -> inf theory and the
# reduced model recomputed from the trained weights (the reduced preset).
mpiexec --oversubscribe -n 2 "$bin" run "$root/jobs/presets/reduced/bordelon_alpha.ini" -o "$dir/bordelon.h5" --quiet \
  && report "$dir/bordelon.h5" -o "$dir/bordelon_report" --quiet >/dev/null 2>&1 && ok "reduced bordelon_alpha and its report" \
  || fail "reduced bordelon_alpha"
"$py" "$src/test_report.py" outputs "$dir/bordelon_report" "$dir/bordelon.h5" depth_alpha.png || failures=$((failures + 1))
"$py" "$src/test_report.py" depth "$dir/bordelon_report" "$dir/bordelon.h5" || failures=$((failures + 1))
"$py" "$src/test_report.py" depth_theory || failures=$((failures + 1))

# Every kind of figure and table.
mpiexec --oversubscribe -n 2 "$bin" run "$src/specs/report_small.ini" -o "$dir/small.h5" --quiet \
  && ok "report_small sweep ran" || fail "report_small sweep"
out=$(report "$dir/small.h5" -o "$dir/small_report" --best lr --table layers noise \
      --metric test_loss adjusted_tf 2>&1) && ok "icl-report --best lr --table" || fail "icl-report: $out"
grep -q "Robust condition number ratio SGD / Adam" <<<"$out" && ok "landscape ratio table printed" \
  || fail "no ratio table: $out"
grep -q "adjusted_tf (MSE): layers x noise; param=sparse_a, optimizer=adam" <<<"$out" && ok "pivot table per condition" \
  || fail "no pivot table: $out"
"$py" "$src/test_report.py" outputs "$dir/small_report" "$dir/small.h5" loss_vs_layers.png layer_readouts.png \
  loss_vs_noise_level.png noise_profile_by_depth.png loss_curves.png alignment.png ood_alpha.png ood_context.png \
  preconditioners.png v24_scalars.png weights_1.png landscape_gradient_noise.png landscape_condition_number.png \
  landscape_smoothness.png newton_similarity.png || failures=$((failures + 1))
[ -f "$dir/small_report/landscape_ratio.csv" ] && [ -f "$dir/small_report/table_adjusted_tf_param-full_optimizer-sgd.csv" ] \
  && ok "table CSVs written" || fail "table CSVs: $(ls "$dir/small_report")"
"$py" "$src/test_report.py" loader "$dir/small.h5" || failures=$((failures + 1))

# Task diversity and loss against context length (tests/specs/report_diversity.ini).
"$bin" run "$src/specs/report_diversity.ini" -o "$dir/diversity.h5" --quiet && ok "report_diversity sweep ran" \
  || fail "report_diversity sweep"
out=$(report "$dir/diversity.h5" -o "$dir/diversity_report" 2>&1) && ok "icl-report on it" || fail "icl-report: $out"
"$py" "$src/test_report.py" outputs "$dir/diversity_report" "$dir/diversity.h5" task_diversity.png \
  context_curve.png || failures=$((failures + 1))
"$py" "$src/test_report.py" lu_theory "$dir/diversity.h5" || failures=$((failures + 1))

# Bad arguments: exit 2, the option, the value and the rule; nothing written.
expect2() {
  local what=$1 pattern=$2; shift 2
  local o rc
  o=$(report "$@" -o "$dir/bad_report" 2>&1); rc=$?
  [ $rc -eq 2 ] && grep -qF "$pattern" <<<"$o" && [ ! -e "$dir/bad_report" ] && ok "$what: exit 2" \
    || fail "$what: rc $rc: $o"
}
expect2 "missing file" "option 'file' = '$dir/none.h5': no such file" "$dir/none.h5"
echo "not hdf5" > "$dir/text.h5"
expect2 "not a results file" "not a readable icl-sweep results file" "$dir/text.h5"
expect2 "unknown --best" "option '--best' = 'colour': must be an option of the file or 'replica'" "$dir/small.h5" --best colour
expect2 "unknown --metric" "option '--metric' = 'loss_magic': must be a metric of the file" "$dir/small.h5" --table layers noise --metric loss_magic
expect2 "unknown --table" "option '--table' = 'depth': must be an option of the file" "$dir/small.h5" --table depth noise
expect2 "unknown --where option" "option '--where' = 'colour=red': must be OPTION=VALUE" "$dir/small.h5" --where colour=red
expect2 "--where without a value" "option '--where' = 'layers': must be OPTION=VALUE" "$dir/small.h5" --where layers
expect2 "--where matching nothing" "option '--where' = 'layers=99': no finished point has these values" "$dir/small.h5" --where layers=99
# A slow report says what it has done (here forced from the start): a line per stage on stderr, none with --quiet.
err=$(ICL_REPORT_STAGES_AFTER=0 report "$dir/vo23.h5" -o "$dir/stages_report" 2>&1 >/dev/null)
quiet=$(ICL_REPORT_STAGES_AFTER=0 report "$dir/vo23.h5" -o "$dir/stages_report" --quiet 2>&1 >/dev/null)
grep -q "^icl-report: read .* points" <<<"$err" && grep -q "^icl-report: figure loss_vs_axis" <<<"$err" && [ -z "$quiet" ] \
  && ok "a slow report prints its stages ($(grep -c '^icl-report' <<<"$err") lines), none with --quiet" || fail "report stages: '$err' / quiet: '$quiet'"

[ $failures -eq 0 ] && echo "all report checks passed" || echo "$failures report check(s) failed"
[ $failures -eq 0 ]
