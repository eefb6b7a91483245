#!/usr/bin/env bash
# The quickstart preset's "What to look for" (jobs/presets/quickstart.ini) holds for what it prints: at
# L = 1 every model equals tuned one-step GD (within 1%); at L = 3 every model is below 3-step GD; with
# noise no model is below the Bayes-optimal predictor; the run on 2 ranks prints that table.
set -u
bin=$1
src=$2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
. "$src/lib.sh"
need_python h5py numpy
out=$(mpi 2 "$bin" run "$src/../jobs/presets/quickstart.ini" -o "$dir/q.h5" --progress 0 2>&1) || fail "quickstart run: $out"
grep -q "18/18 points done" <<<"$out" && grep -q "loss_bayes" <<<"$out" && ok "quickstart: 18 points, the summary table printed" \
  || fail "quickstart output: $out"
"$py" - "$dir/q.h5" <<'PY' || fail "the quickstart's 'What to look for'"
import sys
import h5py
import numpy as np
f = h5py.File(sys.argv[1], "r")
L, noise = f["points/layers"][:], f["points/noise"].asstr()[:]
tf, gd, bayes = (f["metrics/" + k][:] for k in ("test_loss", "loss_gd", "loss_bayes"))
one, three, noisy = L == 1, L == 3, noise != "none"
checks = {
    f"L = 1 equals one-step GD within 1% (largest gap {np.max(np.abs(tf[one] / gd[one] - 1)):.2%})": np.all(np.abs(tf[one] / gd[one] - 1) < 0.01),
    f"L = 3 below 3-step GD (test {tf[three].min():.3f}-{tf[three].max():.3f}, GD {gd[three].min():.3f}-{gd[three].max():.3f})": np.all(tf[three] < gd[three]),
    f"with noise never below Bayes (smallest ratio {np.min(tf[noisy] / bayes[noisy]):.2f})": np.all(tf[noisy] >= bayes[noisy]),
}
for what, good in checks.items():
    print(("ok: " if good else "FAIL: ") + "quickstart: " + what)
sys.exit(0 if all(checks.values()) else 1)
PY
[ $failures -eq 0 ] && echo "all quickstart checks passed" || { echo "$failures check(s) failed"; exit 1; }
