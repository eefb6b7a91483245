"""Summaries robust to blow-ups (issue 30), on synthetic sweep files written here with h5py (no icl-sweep
binary needed): per condition n, n_diverged, n_failed, mean, s.e., s.d., median and IQR, checked against
numpy on the same numbers; a condition whose points all diverged stays in summary.csv with its counts and
NaN statistics; a successive-halving file's table names each condition's winner (rate, replica, seed); the
loader's DataFrame has one row per point.  The whole icl-report runs on both files.

    python3 tests/test_summaries.py -v                  (ctest: python_summaries)
    python3 tests/test_summaries.py --write OUT.h5      writes the grid file only (tests/test_pip_install.sh)

Imports icl_sweep from the source tree (tools/python), unless ICL_SWEEP_INSTALLED=1: then from wherever
the interpreter finds it (an installed package).
"""
import contextlib
import csv
import io
import os
import sys
import tempfile
import unittest

import h5py
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
if os.environ.get("ICL_SWEEP_INSTALLED") != "1":
    sys.path.insert(0, os.path.join(HERE, "..", "tools", "python"))

# The grid: layers 1, 2 x lr 0.001, 0.01, 0.1 x 5 replicas.  lr = 0.1 diverges on every point; at
# (layers 2, lr 0.01) one replica failed, one diverged and one blew up to a finite 1e6 (mean and s.d.
# follow it, median and IQR hardly).
LAYERS, RATES, REPLICAS = (1, 2), (0.001, 0.01, 0.1), 5


# Every other column of a real file's /points (an icl-sweep run of this version), at its default.
OPTIONS = {
    'act_clip': 0.0, 'analysis': 'false', 'analysis_message': '', 'analysis_status': 'skipped', 'arch': 'lsa',
    'attention': 'linear', 'attention_first': 'same', 'batch': 256, 'beta1': 0.9, 'beta2': 0.999, 'bias': 'true',
    'build': 0, 'clip': 0.0, 'clip_mode': 'global', 'context_curve': 0, 'cov': 'identity', 'd': 4,
    'decay_every': 0, 'diverge_factor': 10000.0, 'embed': 'none', 'embed_size': 0, 'eps': 1e-08,
    'eval_every': 50, 'eval_log': 0, 'eval_seed': 'point', 'eval_tasks': 512, 'gd_attention': 0.0, 'heads': 1, 'hessian_tasks': 1000,
    'init': 'normal', 'init_scale': 0.02, 'key_size': 0, 'landscape': 'off', 'layer_norm': 'false',
    'layer_norm_first': 'false', 'message': '', 'mlp': 'false', 'momentum': 0.9, 'n': 10,
    'noise': 'none', 'norm': '1/n', 'optimizer': 'adam', 'param': 'full', 'pe': 'none', 'pe_size': 0,
    'precision': 'float32', 'refresh': 1, 'residual': '1', 'ridge_lambda': 1.0, 'rollout': 0,
    'rollout_damping': 0.75, 'row_digest': 0, 'schedule': 'constant', 'steps': 100, 'task': 'linear',
    'task_pool': 0, 'tie': 'false', 'tokens': 'constructed', 'train_contexts': 0, 'w_prior': 'identity',
    'warmup': 0, 'weight_decay': 0.0, 'widening': 4, 'x_dist': 'gaussian'}


def _text(values):
    values = [str(v) for v in values]
    width = max(1, max(len(v) for v in values))
    return np.array([v.encode() for v in values], dtype=f"S{width}")


def write_sweep(path, points, losses, spec, curves=None):
    """A format-1 results file (no row digests to check) with the datasets the report reads.
    points: {option or bookkeeping column: list}; losses: test_loss per point (NaN where not finished)."""
    size = len(losses)
    test_loss = np.asarray(losses, dtype=float)
    with h5py.File(path, "w") as f:
        f.attrs["format"] = "icl-sweep results"
        f.attrs["format_version"] = 1
        f.attrs["attributes_digest"] = 0
        f.attrs["n_points"] = size
        f.attrs["spec"] = spec
        f.attrs["sweep_state"] = "complete"
        f.attrs["loss_convention"] = "plain MSE"
        base = {k: [v] * size for k, v in OPTIONS.items()}
        base.update(points)
        for k, v in base.items():
            f["points/" + k] = _text(v) if isinstance(v[0], str) else np.asarray(v)
        f["metrics/test_loss"] = test_loss
        f["metrics/train_loss"] = test_loss * 0.9
        f["metrics/loss_gd"] = np.where(np.isfinite(test_loss), 1.5, np.nan)
        f["metrics/steps_done"] = np.where(np.isfinite(test_loss), 100.0, np.nan)
        f["metrics/wall_seconds"] = np.ones(size)
        f["layers/test_loss"] = np.where(np.isfinite(test_loss), 1.0, np.nan)[:, None] * np.ones((1, 2))
        steps, curve = curves if curves is not None else (
            np.tile(np.array([0, 50, 100]), (size, 1)), test_loss[:, None] * np.array([[3.0, 1.5, 1.0]]))
        f["curves/step"] = steps
        f["curves/test_loss"] = curve
        f["curves/train_loss"] = curve * 0.9


def grid_sweep(path):
    """The grid file; returns {(layers, lr): (statuses, test losses)} as written."""
    rng = np.random.default_rng(7)
    points = {k: [] for k in ("layers", "lr", "replica", "seed", "status")}
    losses, truth = [], {}
    for layers in LAYERS:
        for lr in RATES:
            st, lo = [], []
            for rep in range(REPLICAS):
                status, loss = "ok", float(rng.lognormal(np.log(0.5 / layers), 0.3))
                if lr == 0.1:
                    status, loss = "diverged", np.nan
                elif (layers, lr) == (2, 0.01) and rep in (1, 3):
                    status, loss = ("failed" if rep == 1 else "diverged"), np.nan
                elif (layers, lr) == (2, 0.01) and rep == 4:
                    loss = 1e6
                points["layers"].append(layers)
                points["lr"].append(lr)
                points["replica"].append(rep)
                points["seed"].append(1000 + len(losses))
                points["status"].append(status)
                losses.append(loss)
                st.append(status)
                lo.append(loss)
            truth[(layers, lr)] = (st, np.array(lo))
    write_sweep(path, points, losses, "d = 4\nn = 10\nlayers = 1 2\nlr = 0.001 0.01 0.1\nrepeats = 5\n")
    return truth


def halving_sweep(path):
    """A successive-halving file: layers 1, 2, 3 x lr 0.001, 0.01, 0.1 x 3 replicas, search = replica lr.
    Per condition one survivor (two at layers 2), the rest pruned; at layers 3 the survivor diverged after
    the last rung.  Returns {layers: (winner point or None, its lr, replica, seed)} as written."""
    points = {k: [] for k in ("layers", "lr", "replica", "seed", "status")}
    losses, winners = [], {}
    for layers in (1, 2, 3):
        survivors = {1: [(0.01, 2)], 2: [(0.001, 0), (0.01, 1)], 3: [(0.01, 0)]}[layers]
        best = None
        for lr in RATES:
            for rep in range(3):
                i = len(losses)
                status, loss = "pruned", np.nan
                if (lr, rep) in survivors:
                    status, loss = ("diverged", np.nan) if layers == 3 else ("ok", 0.1 * layers + lr + 0.01 * rep)
                    if status == "ok" and (best is None or loss < losses[best]):
                        best = i
                points["layers"].append(layers)
                points["lr"].append(lr)
                points["replica"].append(rep)
                points["seed"].append(5000 + i)
                points["status"].append(status)
                losses.append(loss)
        winners[layers] = None if best is None else (best, points["lr"][best], points["replica"][best],
                                                     points["seed"][best])
    size = len(losses)
    steps = np.tile(np.array([0, 50, 100]), (size, 1))
    curve = np.tile(np.array([1.0, 0.8, 0.5]), (size, 1))
    for i, s in enumerate(points["status"]):
        if s == "pruned":
            steps[i, 2], curve[i, 2] = -1, np.nan
    write_sweep(path, points, losses, "d = 4\nn = 10\nlayers = 1 2 3\nlr = 0.001 0.01 0.1\nrepeats = 3\n"
                "search = replica lr\nrungs = 50\n", curves=(steps, curve))
    return winners


def three_survivors(path, search, zipped=False):
    """One condition, lr 0.001, 0.01, 0.1 x 3 replicas, halved with `search`; three survivors: (0.001, replica 0)
    loss 0.30, (0.001, 1) 0.10, (0.01, 2) 0.15.  The best single survivor is 0.10 (lr 0.001); the rate of least
    mean loss is 0.01; each replica's winner: 0.30, 0.10, 0.15."""
    points = {k: [] for k in ("layers", "lr", "replica", "seed", "status")}
    survivors = {(0.001, 0): 0.30, (0.001, 1): 0.10, (0.01, 2): 0.15}
    losses = []
    for lr in RATES:
        for rep in range(3):
            points["layers"].append(1)
            points["lr"].append(lr)
            points["replica"].append(rep)
            points["seed"].append(7000 + len(losses))
            points["status"].append("ok" if (lr, rep) in survivors else "pruned")
            losses.append(survivors.get((lr, rep), np.nan))
    if zipped:   # beta1 zipped with the rate: a zip group is searched whole
        points["beta1"] = [{0.001: 0.9, 0.01: 0.95, 0.1: 0.99}[lr] for lr in points["lr"]]
    write_sweep(path, points, losses, f"d = 4\nn = 10\nlr = 0.001 0.01 0.1\nrepeats = 3\nsearch = {search}\nrungs = 50\n")


def analysed_sweep(path):
    """The grid file's shape, 2 layers x 1 rate x 4 replicas, every point ok; point 1's analysis failed (its
    loss_gd NaN); a pool loss stored as plain MSE (its convention attribute) of 2.0 everywhere."""
    points = {"layers": [1, 1, 1, 1, 2, 2, 2, 2], "lr": [0.01] * 8, "replica": [0, 1, 2, 3] * 2,
              "seed": list(range(8000, 8008)), "status": ["ok"] * 8}
    write_sweep(path, points, [0.5, 0.6, 0.7, 0.8, 0.4, 0.5, 0.6, 0.7], "d = 4\nn = 10\nlayers = 1 2\nrepeats = 4\n")
    with h5py.File(path, "r+") as f:
        del f["points/analysis_status"]
        f["points/analysis_status"] = _text(["ok", "failed"] + ["ok"] * 6)
        f["metrics/loss_gd"][1] = np.nan
        f["metrics/pool_loss_tf"] = np.full(8, 2.0)
        f["metrics/pool_loss_tf"].attrs["convention"] = "MSE (plain mean squared error; [VO23], [V24] tables show half)"


def run_report(argv):
    from icl_sweep import report
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        report.main(argv)
    return out.getvalue()


def read_csv(path):
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    return rows[0], rows[1:]


def num(cell):
    return float(cell) if cell != "" else np.nan


class Summaries(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.grid = os.path.join(cls.tmp.name, "grid.h5")
        cls.truth = grid_sweep(cls.grid)
        cls.grid_out = os.path.join(cls.tmp.name, "grid_report")
        cls.grid_text = run_report([cls.grid, "-o", cls.grid_out, "--table", "layers", "lr"])
        cls.halving = os.path.join(cls.tmp.name, "halving.h5")
        cls.winners = halving_sweep(cls.halving)
        cls.halving_out = os.path.join(cls.tmp.name, "halving_report")
        cls.halving_text = run_report([cls.halving, "-o", cls.halving_out])

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def summary(self):
        header, rows = read_csv(os.path.join(self.grid_out, "summary.csv"))
        col = {name: k for k, name in enumerate(header)}
        return {(int(r[col["layers"]]), float(r[col["lr"]])): {n: r[k] for n, k in col.items()} for r in rows}

    def test_every_condition_has_a_row(self):
        table = self.summary()
        self.assertEqual(sorted(table), sorted(self.truth), "one row per condition, the all-diverged ones included")

    def test_counts(self):
        for key, row in self.summary().items():
            status, _ = self.truth[key]
            self.assertEqual(int(row["n"]), status.count("ok"), key)
            self.assertEqual(int(row["n_diverged"]), status.count("diverged"), key)
            self.assertEqual(int(row["n_failed"]), status.count("failed"), key)
            self.assertEqual(int(row["n_pruned"]), 0, key)

    def test_statistics_against_numpy(self):
        for key, row in self.summary().items():
            status, loss = self.truth[key]
            v = loss[np.array(status) == "ok"]
            if not len(v):
                continue
            q1, med, q3 = np.percentile(v, [25, 50, 75])
            want = {"mean": np.mean(v), "median": med, "iqr": q3 - q1, "sd": np.std(v, ddof=1),
                    "se": np.std(v, ddof=1) / np.sqrt(len(v))}
            for stat, value in want.items():
                self.assertTrue(np.isclose(num(row[f"test_loss {stat}"]), value, rtol=1e-12, atol=0),
                                f"{key} test_loss {stat}: {row[f'test_loss {stat}']} vs numpy {value}")

    def test_blow_up_moves_the_mean_not_the_median(self):
        row = self.summary()[(2, 0.01)]
        self.assertGreater(num(row["test_loss mean"]), 1e5)
        self.assertLess(num(row["test_loss median"]), 1.0)

    def test_all_diverged_rows_are_nan_with_counts(self):
        for layers in LAYERS:
            row = self.summary()[(layers, 0.1)]
            self.assertEqual((row["n"], row["n_diverged"], row["n_failed"]), ("0", str(REPLICAS), "0"))
            for stat in ("mean", "se", "sd", "median", "iqr"):
                self.assertTrue(np.isnan(num(row[f"test_loss {stat}"])), f"layers {layers}: test_loss {stat} NaN")

    def test_terminal_summary_names_the_all_diverged(self):
        summary = next(b for b in self.grid_text.split("\n\n") if "Every condition" in b)
        lines = [l.split() for l in summary.splitlines() if "all diverged" in l]
        self.assertEqual([l[:5] for l in lines], [[str(k), "0.1", "0", str(REPLICAS), "0"] for k in LAYERS], summary)

    def test_pivot_keeps_the_all_diverged_column(self):
        header, rows = read_csv(os.path.join(self.grid_out, "table_test_loss.csv"))
        self.assertEqual(header, ["layers \\ lr", "0.001", "0.01", "0.1"])
        self.assertEqual([r[3] for r in rows], ["all diverged"] * len(LAYERS))
        v = self.truth[(1, 0.001)][1]
        self.assertEqual(rows[0][1], f"{np.mean(v):.4g} +- {np.std(v, ddof=1):.2g}")

    def test_summary_csv_reads_as_nan_with_pandas(self):
        try:
            import pandas as pd
        except ImportError:
            self.skipTest("no pandas")
        df = pd.read_csv(os.path.join(self.grid_out, "summary.csv"))
        gone = df[df["lr"] == 0.1]
        self.assertEqual(len(gone), len(LAYERS))
        self.assertTrue(gone["test_loss median"].isna().all() and (gone["n_diverged"] == REPLICAS).all())

    def test_loader_one_row_per_point(self):
        import pandas as pd
        import icl_sweep
        df = icl_sweep.load(self.grid)
        self.assertIsInstance(df, pd.DataFrame)
        self.assertEqual(len(df), len(LAYERS) * len(RATES) * REPLICAS)
        self.assertEqual(list(df["point"]), list(range(len(df))))
        self.assertEqual(int((df["status"] == "diverged").sum()), len(LAYERS) * REPLICAS + 1)
        self.assertEqual(df["status"].map(type).unique().tolist(), [str])
        self.assertTrue(df.loc[df["status"] != "ok", "test_loss"].isna().all())
        cols = icl_sweep.load(self.grid, frame=False)
        self.assertIsInstance(cols, dict)
        self.assertTrue(np.array_equal(cols["test_loss"], df["test_loss"].to_numpy(), equal_nan=True))

    def test_halving_winners(self):
        header, rows = read_csv(os.path.join(self.halving_out, "halving.csv"))
        col = {name: k for k, name in enumerate(header)}
        for name in ("candidates", "pruned", "diverged", "failed", "winner (point)", "winner lr", "winner replica",
                     "winner seed"):
            self.assertIn(name, col)
        got = {int(r[col["layers"]]): r for r in rows}
        self.assertEqual(sorted(got), [1, 2, 3])
        for layers, want in self.winners.items():
            r = got[layers]
            self.assertEqual(int(r[col["candidates"]]), 9)
            if want is None:
                self.assertEqual(r[col["winner (point)"]], "all diverged")
                self.assertEqual(int(r[col["diverged"]]), 1)
                continue
            point, lr, replica, seed = want
            self.assertEqual((int(r[col["winner (point)"]]), float(r[col["winner lr"]]),
                              int(r[col["winner replica"]]), int(r[col["winner seed"]])), (point, lr, replica, seed))
        self.assertIn("each condition's winner", self.halving_text)

    def test_halving_summary_counts_pruned(self):
        header, rows = read_csv(os.path.join(self.halving_out, "summary.csv"))
        col = {name: k for k, name in enumerate(header)}
        got = {int(r[col["layers"]]): r for r in rows}
        self.assertEqual(sorted(got), [1, 2, 3], "the condition whose survivor diverged stays")
        self.assertEqual([got[k][col["n_pruned"]] for k in (1, 2, 3)], ["8", "7", "8"])
        self.assertEqual(got[3][col["n"]], "0")
        self.assertTrue(np.isnan(num(got[3][col["test_loss median"]])))


class HalvingWinnersAndCounts(unittest.TestCase):
    """The summary of a successive-halving file is each group's winner, as halving.csv names it, whatever the
    order of `search` (the searched axes were resolved one at a time by their mean loss: 0.15 or 0.10 by the
    order); with the replica not searched, each replica's winner (C++ halves them apart; the rates' mean loss
    pooled them and kept one).  A point trained but not analysed is counted, and each metric has its n; pending
    points are counted; --best names the value it kept.  --half halves every loss its convention names
    (pool_loss_* was left as stored beside halved losses)."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def report(self, name, argv=()):
        out = os.path.join(self.tmp.name, name + "_report")
        run_report([os.path.join(self.tmp.name, name + ".h5"), "-o", out] + list(argv))
        header, rows = read_csv(os.path.join(out, "summary.csv"))
        return [dict(zip(header, r)) for r in rows]

    def test_winner_whatever_the_order_of_search(self):
        for k, search in enumerate(("replica lr", "lr replica")):
            three_survivors(os.path.join(self.tmp.name, f"order{k}.h5"), search)
            rows = self.report(f"order{k}")
            self.assertEqual(len(rows), 1, search)
            self.assertEqual((rows[0]["n"], num(rows[0]["test_loss mean"])), ("1", 0.10), search)

    def test_a_zip_partner_of_a_searched_rate_is_searched_with_it(self):
        three_survivors(os.path.join(self.tmp.name, "zipped.h5"), "replica lr", zipped=True)
        rows = self.report("zipped")
        self.assertEqual([(r["n"], num(r["test_loss mean"])) for r in rows], [("1", 0.10)])
        header, rows = read_csv(os.path.join(self.tmp.name, "zipped_report", "halving.csv"))
        self.assertEqual(len(rows), 1, "one group of 9 candidates, not one per beta1")

    def test_each_replicas_winner_where_the_replica_is_not_searched(self):
        three_survivors(os.path.join(self.tmp.name, "per_replica.h5"), "lr")
        rows = self.report("per_replica")
        self.assertEqual(len(rows), 1)
        self.assertEqual(rows[0]["n"], "3")
        self.assertAlmostEqual(num(rows[0]["test_loss mean"]), (0.30 + 0.10 + 0.15) / 3)

    def test_analysis_failures_counted_and_each_metric_its_n(self):
        analysed_sweep(os.path.join(self.tmp.name, "analysed.h5"))
        rows = {r["layers"]: r for r in self.report("analysed")}
        self.assertEqual((rows["1"]["n"], rows["1"]["n_analysis_failed"], rows["1"]["test_loss n"], rows["1"]["loss_gd n"]),
                         ("4", "1", "4", "3"))
        self.assertEqual(rows["2"]["n_analysis_failed"], "0")

    def test_pending_points_counted(self):
        analysed_sweep(os.path.join(self.tmp.name, "pending.h5"))
        with h5py.File(os.path.join(self.tmp.name, "pending.h5"), "r+") as f:
            status = [v.decode() for v in f["points/status"][:]]
            status[5] = "pending"
            del f["points/status"]
            f["points/status"] = _text(status)
            f["metrics/test_loss"][5] = np.nan
        rows = {r["layers"]: r for r in self.report("pending")}
        self.assertEqual((rows["2"]["n"], rows["2"]["n_pending"], rows["1"]["n_pending"]), ("3", "1", "0"))

    def test_best_names_the_value_it_kept(self):
        truth = grid_sweep(os.path.join(self.tmp.name, "best.h5"))
        rows = {r["layers"]: r for r in self.report("best", ["--best", "lr"])}
        for layers in LAYERS:
            means = {lr: np.nanmean(np.where(np.array(st) == "ok", lo, np.nan)) for lr, (st, lo) in
                     ((lr, truth[(layers, lr)]) for lr in RATES) if (np.array(st) == "ok").any()}
            self.assertEqual(float(rows[str(layers)]["best lr"]), min(means, key=means.get), layers)

    def test_half_halves_every_loss_by_its_convention(self):
        analysed_sweep(os.path.join(self.tmp.name, "halved.h5"))
        rows = self.report("halved", ["--half"])
        self.assertEqual([num(r["pool_loss_tf mean"]) for r in rows], [1.0, 1.0])
        self.assertAlmostEqual(num(rows[0]["test_loss mean"]), (0.5 + 0.6 + 0.7 + 0.8) / 4 / 2)


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--write":
        grid_sweep(sys.argv[2])
        sys.exit(0)
    unittest.main()
