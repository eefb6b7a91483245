"""tools/python/icl_sweep/reduced.py without the executable: a point picked by its selector (exactly one,
status ok), the tolerance test, and the table read back as written (ctest `claims`; the presets themselves
run in ctest `reduced_numbers`)."""
import math
import os
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools", "python"))
from icl_sweep.reduced import parse_select, pick, read_table, unfinished, within, write_table  # noqa: E402

failures = 0


def expect(cond, what):
    global failures
    print(("ok: " if cond else "FAIL: ") + what)
    failures += not cond


def raises(f, what):
    try:
        f()
    except ValueError:
        expect(True, what)
        return
    expect(False, what)


class FakeSweep:
    points = {"heads": np.array([1, 2, 1, 2]), "replica": np.array([0, 0, 1, 1]),
              "noise": np.array(["none", "none", "none", "uniform:2"]),
              "status": np.array(["ok", "ok", "ok", "failed"])}
    metrics = {"test_loss": np.array([0.5, 0.25, 0.4, np.nan])}
    analysis_names = ["ood_teacher_loss_tf"]
    size = 4

    def analysis(self, name):
        return np.array([[1.0, 2.0, np.nan], [3.0, 4.0, 5.0], [6.0, 7.0, 8.0], [np.nan] * 3])


s = FakeSweep()
expect(parse_select("heads=2; replica=0") == {"heads": "2", "replica": "0"}, "selector parsed")
expect(pick(s, "heads=2;replica=0", "test_loss") == 0.25, "the one point of heads=2, replica=0")
expect(pick(s, "noise=none;heads=1;replica=1", "test_loss") == 0.4, "a string option in the selector")
raises(lambda: pick(s, "heads=1", "test_loss"), "a selector picking 2 points is refused")
raises(lambda: pick(s, "heads=3", "test_loss"), "a selector picking no point is refused")
raises(lambda: pick(s, "heads=2;replica=1", "test_loss"), "a point that did not finish is refused")
raises(lambda: pick(s, "layers=1", "test_loss"), "an unknown option is refused")
raises(lambda: pick(s, "heads=2;replica=0", "loss_gd"), "an unknown metric is refused")
expect(pick(s, "heads=2;replica=0", "ood_teacher_loss_tf[2]") == 5.0, "column 2 of an /analysis series")
raises(lambda: pick(s, "heads=1;replica=0", "ood_teacher_loss_tf[2]"), "a NaN (padding) column is refused")
raises(lambda: pick(s, "heads=2;replica=0", "ood_teacher_loss_tf[3]"), "a column beyond the series is refused")
raises(lambda: pick(s, "heads=2;replica=0", "ood_alpha_loss_tf[0]"), "an unknown series is refused")
expect(within(1.0 + 0.9e-5, 1.0, 1e-5)[0], "inside the relative tolerance")
expect(not within(1.0 + 1.1e-5, 1.0, 1e-5)[0], "beyond the relative tolerance")
expect(not within(math.nan, 1.0, 1.0)[0], "NaN is never within")


class Finished:   # a finished, analysed sweep of 3 points, one pruned by successive halving
    def __init__(self):
        self.points = {"status": np.array(["ok", "pruned", "ok"], dtype=object),
                       "analysis_status": np.array(["ok", "skipped", "ok"], dtype=object),
                       "message": np.array([""] * 3, dtype=object), "analysis_message": np.array([""] * 3, dtype=object)}
        self.metrics = {"loss_gd": np.zeros(3), "test_loss": np.zeros(3)}
        self.metric_docs = {"loss_gd": "K steps of GD", "test_loss": "the model's loss"}
        self.attrs = {"methods": "gd\tGD\n"}
        self.size = 3


expect(unfinished(Finished()) == [], "a finished sweep (ok and pruned points, every metric documented) passes")
f = Finished()
f.points["analysis_status"][2], f.points["analysis_message"][2] = "failed", "metric 'loss_x' is not in the registry"
expect(any("not in the registry" in w for w in unfinished(f)), "a failed analysis (an unregistered name) fails")
f = Finished()
f.points["status"][0], f.points["message"][0] = "diverged", "loss is NaN at step 3"
expect(any("status diverged" in w for w in unfinished(f)), "a diverged point fails")
f = Finished()
f.metric_docs["loss_gd"] = ""
expect(any("loss_gd" in w for w in unfinished(f)), "a metric without the registry's doc fails")
f = Finished()
f.attrs = {}
expect(any("@methods" in w for w in unfinished(f)), "losses without @methods fail")
with tempfile.TemporaryDirectory() as d:
    rows = [{"preset": "vo23_fig2", "metric": "test_loss", "select": "replica=0", "value": "0.4193217308",
             "rel_tol": "1e-5", "claims": "vo23_fig2_gd"}]
    write_table(os.path.join(d, "t.csv"), rows)
    expect(read_table(os.path.join(d, "t.csv")) == rows, "the table reads back as written (comments skipped)")

print("all reduced-number checks passed" if failures == 0 else f"{failures} check(s) failed")
sys.exit(1 if failures else 0)
