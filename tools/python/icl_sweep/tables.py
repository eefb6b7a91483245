"""Tables: every point (points.csv), every condition with mean, standard error, median and inter-quartile
range over its replicas and its counts of diverged and failed points (summary.csv and the terminal
summary), the candidates and winner of each condition of a successive-halving sweep (halving.csv), and
pivot tables of chosen metrics (e.g. [V24] Table 1)."""
import csv
import os
import numpy as np

from .groups import counts, halving_group, label, robust, sort_key, stats

# Columns of the terminal summary beside the trained model's test loss, when the file has them.
SUMMARY_METRICS = ("loss_gd", "loss_gdpp", "loss_gdpp_tied", "loss_bayes")
LOSS_PREFIXES = ("loss_", "adjusted_", "se_", "test_loss", "train_loss")   # se_*: standard errors of losses


def is_loss(sweep, name):
    """Whether metric `name` is a loss (plain MSE, halved by --half): its dataset's convention says so, and
    where it has none (training's losses, older files) its name (before, by name alone: pool_loss_* stayed
    unhalved beside halved losses)."""
    return sweep.metric_conventions.get(name, "").startswith("MSE") or name.startswith(LOSS_PREFIXES)


def write_points(r):
    """points.csv: one row per point, every option, status and metric (losses as stored: plain MSE)."""
    table = r.sweep.table()
    names = list(table)
    path = os.path.join(r.outdir, "points.csv")
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(names)
        for i in range(r.sweep.size):
            w.writerow([_fmt(table[k][i]) for k in names])
    return "points.csv"


def _fmt(value):
    if isinstance(value, (float, np.floating)):
        return "" if np.isnan(value) else repr(float(value))
    return str(value)


STATS = ("n", "mean", "se", "sd", "median", "iqr")   # summary.csv's columns per metric, in this order: n, its finite values


def condition_rows(r):
    """Every condition of the view (a combination of the varied options), in grid order, as
    (key, used, every): the indices of its points the statistics use (ok, and the --best ones) and of all
    its points, whatever their status. A condition whose points all diverged or failed is kept (used empty)."""
    return [(key, used, every) for key, (used, every) in r.view.conditions(r.view.axes).items()]


def summary(r):
    """Per condition (the varied options): n (the points in the statistics: ok, and with --best the kept
    ones), n_diverged, n_failed, n_pruned, n_pending (over every point of the condition, every --best candidate
    included; pending: a running or incomplete sweep's), n_analysis_failed (of the n: trained, but their
    analysis failed, so the analysis metrics have fewer values), with --best the value each option kept, then
    per metric n, mean, s.e., s.d., median and IQR of its finite values (empty: NaN)."""
    axes = r.view.axes
    metrics = r.sweep.metrics
    status = r.sweep.points["status"]
    analysis_failed = r.sweep.analysis_failed()
    kept = [a for a in r.view.best if not r.view.halving and a in r.sweep.points]   # --best: which value won
    conditions = condition_rows(r)
    header = axes + ["n", "n_diverged", "n_failed", "n_pruned", "n_pending", "n_analysis_failed"] + [f"best {a}" for a in kept]
    for name in metrics:
        header += [f"{name} {s}" for s in STATS]
    rows = []
    for key, used, every in conditions:
        c = counts(status[every])
        row = [str(v) for v in key] + [len(used), c["n_diverged"], c["n_failed"], c["n_pruned"], c["n_pending"],
                                       int(analysis_failed[used].sum())]
        row += [_kept_values(r, a, used) for a in kept]
        for name, values in metrics.items():
            st = robust(r.scale(values[used]) if is_loss(r.sweep, name) else values[used])
            row += [_fmt(st[s]) for s in STATS]
        rows.append(row)
    write_csv(os.path.join(r.outdir, "summary.csv"), header, rows)
    shown = [m for m in SUMMARY_METRICS if m in metrics]
    halving = r.pruned > 0
    any_analysis_failed = bool(analysis_failed[r.view.mask].any())
    any_pending = bool((status[r.view.selected] == "pending").any())
    short = [axes + ["n", "diverged", "failed"] + (["pruned"] if halving else []) + (["pending"] if any_pending else [])
             + (["analysis failed"] if any_analysis_failed else []) + [f"best {a}" for a in kept]
             + [f"test_loss ({r.scale.name}) mean +- s.e.", "median [IQR]"] + [f"{m} ({r.scale.name})" for m in shown]]
    for key, used, every in conditions:
        c = counts(status[every])
        row = [str(v) for v in key] + [str(len(used)), str(c["n_diverged"]), str(c["n_failed"])]
        row += [str(c["n_pruned"])] if halving else []
        row += [str(c["n_pending"])] if any_pending else []
        row += [str(int(analysis_failed[used].sum()))] if any_analysis_failed else []
        row += [_kept_values(r, a, used) for a in kept]
        st = robust(r.scale(metrics["test_loss"][used]))
        if st["n"]:
            row += [_mean_se(st), f"{st['median']:.4g} [{st['iqr']:.2g}]"]
        else:
            row += [_none_left(c, len(every)), "-"]
        row += [_mean_se(robust(r.scale(metrics[m][used]))) if len(used) else "-" for m in shown]
        short.append(row)
    r.table("summary", "Every condition: test loss (mean +- standard error, median [inter-quartile range] over "
            "replicas) beside GD, GD++ and Bayes (mean +- s.e.)", short[0], short[1:],
            "n: the points in the statistics (finished; with --best the kept ones; with successive halving each "
            "group's winner); diverged, failed, pending: among every point of the condition; best: the value --best "
            "kept; analysis failed: of the n, "
            "trained but not analysed (GD, GD++, Bayes have fewer values). All metrics with their n, s.e., s.d., "
            "median and IQR: summary.csv. "
            f"{r.scale.note}", csv_name="summary.csv")


def _mean_se(st):
    """'mean +- s.e.' of a robust() summary, 'mean' for one value, '' for none."""
    if not st["n"]:
        return ""
    return f"{st['mean']:.4g}" + (f" +- {st['se']:.2g}" if st["n"] > 1 else "")


def _kept_values(r, option, used):
    """The values of `option` among a condition's points in the statistics (with --best: the one it kept)."""
    return " ".join(str(v) for v in sorted(set(r.sweep.points[option][used].tolist())))


def _none_left(c, total):
    """What a condition with no point in the statistics is: all diverged, all failed, or else (its points
    pruned by successive halving left out)."""
    total -= c["n_pruned"]
    if total <= 0:
        return "none finished"
    if c["n_diverged"] == total:
        return "all diverged"
    if c["n_failed"] == total:
        return "all failed"
    if c["n_diverged"] + c["n_failed"] == total:
        return "all diverged or failed"
    if c["n_pending"] == total:
        return "all pending"
    return "none finished"


def halving(r):
    """A successive-halving sweep: per condition (the unsearched options), its candidates, how many were
    pruned, diverged or failed, and its winner: the survivor with the least test loss, named by its values
    of the searched axes (rate, replica, ...) and its seed. halving.csv and the terminal."""
    searched = r.searched
    if not searched:
        return
    pts, status = r.sweep.points, r.sweep.points["status"]
    loss = r.sweep.metrics["test_loss"]
    keys = halving_group(r.sweep, searched)
    named = [a for a in searched if a in pts]
    if "seed" not in named:
        named.append("seed")
    conditions = {}
    for i in range(r.sweep.size):
        conditions.setdefault(tuple(pts[k][i] for k in keys), []).append(i)
    header = keys + ["candidates", "pruned", "diverged", "failed", "winner (point)"] + \
        [f"winner {a}" for a in named] + [f"winner test_loss ({r.scale.name})"]
    rows = []
    for key, idx in conditions.items():
        idx = np.array(idx)
        c = counts(status[idx])
        ok = [i for i in idx if status[i] == "ok" and np.isfinite(loss[i])]
        row = [str(v) for v in key] + [len(idx), c["n_pruned"], c["n_diverged"], c["n_failed"]]
        if ok:
            w = min(ok, key=lambda i: (loss[i], i))
            row += [int(w)] + [str(pts[a][w]) for a in named] + [f"{float(r.scale(loss[w])):.5g}"]
        else:
            row += [_none_left(c, len(idx))] + ["-"] * len(named) + ["-"]
        rows.append(row)
    r.table("halving", "Successive halving: each condition's winner (the survivor with the least test loss)",
            header, rows, "Candidates: the points of the condition (the searched axes: " + ", ".join(searched) +
            "); the winner is named by its searched values and seed. " + r.scale.note)


def pivot(r, rows_axis, columns_axis, metric_names):
    """One table per metric and per combination of the other varied options: rows x columns of the mean
    over the remaining points (replicas), each cell mean (s.d.); a cell whose points all diverged or
    failed says so (its row and column stay)."""
    others = [a for a in r.view.axes if a not in (rows_axis, columns_axis)]
    points = r.sweep.points
    status = points["status"]
    row_values = sorted(set(points[rows_axis]), key=sort_key)
    col_values = sorted(set(points[columns_axis]), key=sort_key)
    for metric in metric_names:
        values = r.scale(r.sweep.metrics[metric]) if is_loss(r.sweep, metric) else r.sweep.metrics[metric]
        for okey, (oidx, every) in r.view.conditions(others).items():
            rows = []
            for rv in row_values:
                cells = [str(rv)]
                for cv in col_values:
                    at = oidx[(points[rows_axis][oidx] == rv) & (points[columns_axis][oidx] == cv)]
                    if len(at):
                        cells.append(_mean_sd(values[at]))
                        continue
                    there = every[(points[rows_axis][every] == rv) & (points[columns_axis][every] == cv)]
                    if not len(there):
                        cells.append("")
                    elif (status[there] == "ok").any():   # finished, but not the --best value
                        cells.append("not kept")
                    else:
                        cells.append(_none_left(counts(status[there]), len(there)))
                rows.append(cells)
            scale = f" ({r.scale.name})" if is_loss(r.sweep, metric) else ""
            title = f"{metric}{scale}: {rows_axis} x {columns_axis}" + (f"; {label(others, okey)}" if others else "")
            name = "table_" + "_".join([metric] + [f"{a}-{v}" for a, v in zip(others, okey)])
            r.table(_safe(name), title, [f"{rows_axis} \\ {columns_axis}"] + [str(v) for v in col_values], rows,
                    "Mean over the points of each cell (replicas) +- their standard deviation.")


def _mean_sd(values):
    """'mean +- s.d.' of the finite values, 'mean' for one, '' for none."""
    mean, _, _, sd, k = stats(np.asarray(values, dtype=float)[:, None])
    if not k[0]:
        return ""
    return f"{mean[0]:.4g}" + (f" +- {sd[0]:.2g}" if k[0] > 1 else "")


def _safe(name):
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name)


def write_csv(path, header, rows):
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(header)
        w.writerows(rows)


def text_table(header, rows):
    widths = [max(len(str(c)) for c in col) for col in zip(header, *rows)]
    lines = ["  ".join(str(c).rjust(w) for c, w in zip(header, widths))]
    lines += ["  ".join(str(c).rjust(w) for c, w in zip(row, widths)) for row in rows]
    return "\n".join(lines)
