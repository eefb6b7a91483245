"""Tables: every point (points.csv), every condition with mean and spread over replicas (summary.csv and
the terminal summary), and pivot tables of chosen metrics (e.g. [V24] Table 1)."""
import csv
import os
import numpy as np

from .groups import label, sort_key, stats

# Columns of the terminal summary beside the trained model's test loss, when the file has them.
SUMMARY_METRICS = ("loss_gd", "loss_gdpp", "loss_gdpp_tied", "loss_bayes")
LOSS_PREFIXES = ("loss_", "adjusted_", "se_", "test_loss", "train_loss")   # se_*: standard errors of losses


def is_loss(name):
    return name.startswith(LOSS_PREFIXES)


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


def summary(r):
    """Per condition (the varied options): count, mean and s.d. over replicas of every metric."""
    axes = r.view.axes
    metrics = r.sweep.metrics
    groups = list(r.view.groups(axes).items())
    header = axes + ["replicas"]
    for name in metrics:
        header += [f"{name} mean", f"{name} sd"]
    rows = []
    for key, idx in groups:
        row = [str(v) for v in key] + [len(idx)]
        for name, values in metrics.items():
            scaled = r.scale(values[idx]) if is_loss(name) else values[idx]
            mean, _, _, sd, _ = stats(scaled[:, None])
            row += [_fmt(mean[0]), _fmt(sd[0])]
        rows.append(row)
    write_csv(os.path.join(r.outdir, "summary.csv"), header, rows)
    shown = ["test_loss"] + [m for m in SUMMARY_METRICS if m in metrics]
    short = [axes + ["reps"] + [f"{m} ({r.scale.name})" for m in shown]]
    for key, idx in groups:
        short.append([str(v) for v in key] + [str(len(idx))] + [_mean_sd(r.scale(metrics[m][idx])) for m in shown])
    r.table("summary", "Every condition: test loss (mean +- s.d. over replicas) beside GD, GD++ and Bayes",
            short[0], short[1:], f"All metrics, with standard deviations: summary.csv. {r.scale.note}",
            csv_name="summary.csv")


def pivot(r, rows_axis, columns_axis, metric_names):
    """One table per metric and per combination of the other varied options: rows x columns of the mean
    over the remaining points (replicas), each cell mean (s.d.)."""
    others = [a for a in r.view.axes if a not in (rows_axis, columns_axis)]
    points = r.sweep.points
    row_values = sorted(set(points[rows_axis][r.view.mask]), key=sort_key)
    col_values = sorted(set(points[columns_axis][r.view.mask]), key=sort_key)
    for metric in metric_names:
        values = r.scale(r.sweep.metrics[metric]) if is_loss(metric) else r.sweep.metrics[metric]
        for okey, oidx in r.view.groups(others).items():
            rows = []
            for rv in row_values:
                cells = [str(rv)]
                for cv in col_values:
                    at = oidx[(points[rows_axis][oidx] == rv) & (points[columns_axis][oidx] == cv)]
                    cells.append(_mean_sd(values[at]))
                rows.append(cells)
            scale = f" ({r.scale.name})" if is_loss(metric) else ""
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
