"""What every figure shares: the loss scale, method names and styles, panel grids, saving."""
import os
import numpy as np
import matplotlib
import matplotlib.ticker

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from .groups import stats  # noqa: E402

# The baselines are the methods of the file's @methods (the registry of the C++ analyses, metrics.hpp:
# keys and legend labels, in its order) other than the trained model; use_methods() installs a file's.
# Their styles, by key: (colour, dash).  A method without one here (new in the registry) gets a grey.
STYLE = {
    "zero": ("#999999", (0, (1, 1))),
    "ols": ("#8c564b", (0, (5, 2))),
    "ridge": ("#bcbd22", (0, (5, 2))),
    "const_rr": ("#17becf", (0, (5, 2))),
    "ada_rr": ("#9467bd", (0, (5, 2))),
    "tuned_rr": ("#e377c2", (0, (5, 2))),
    "oracle_ridge": ("#7f7f7f", (0, (3, 1, 1, 1))),
    "bayes": ("#000000", (0, (3, 1, 1, 1))),
    "gd": ("#d62728", (0, (6, 2))),
    "pgd": ("#ff7f0e", (0, (6, 2))),
    "gdpp": ("#2ca02c", (0, (6, 2))),
    "gdpp_tied": ("#98df8a", (0, (2, 2))),
    "dmmse": ("#1b9e77", (0, (4, 1, 1, 1))),
    "newton": ("#7570b3", (0, (1, 2))),
}
MODEL_METHODS = ("tf", "tf_unclipped")   # the trained model itself, not a baseline
METHODS = []   # [(key, label)] of the file in use
LABELS = {}


def use_methods(methods):
    """The methods of a results file, [(key, label)] in the registry's order (Sweep.methods)."""
    METHODS[:] = list(methods)
    LABELS.update(dict(methods))


def method_label(key):
    return LABELS.get(key, key)


def baseline_keys():
    """The baselines of the file in use, in the registry's order (every styled one before any is installed)."""
    keys = [k for k, _ in METHODS] if METHODS else list(STYLE)
    return [k for k in keys if k not in MODEL_METHODS]


def style(key):
    return STYLE.get(key, ("#bbbbbb", (0, (2, 1))))


def baseline_labels():
    return [method_label(key) for key in baseline_keys()]



MODEL_COLOURS = ("#1f77b4", "#6a3d9a", "#8c564b", "#008080", "#808000", "#000080", "#c51b7d", "#b8860b",
                 "#2f4f4f", "#e6550d")
MARKERS = "osD^v<>ph*"
TINY = 1e-10  # a baseline below this is exact (e.g. ridge on noiseless tasks with n > d): not drawn
EXACT = 0.1  # nor one below this fraction of the best trained model's loss in the same panel (off the axis)


class Scale:
    """Losses are stored as plain MSE; [VO23] and [V24] report half of it."""

    def __init__(self, half):
        self.factor = 0.5 if half else 1.0
        self.name = "1/2 MSE" if half else "MSE"
        self.note = ("Losses shown halved (1/2 MSE, the [VO23]/[V24] convention; files store plain MSE)."
                     if half else "Losses in plain MSE, not halved (the [A23]/[A24] convention; [VO23]/[V24] "
                     "report half: icl-report --half).")

    def __call__(self, values):
        return np.asarray(values, dtype=float) * self.factor


def model_style(i):
    """Line i of the trained models: colour and marker cycle, the dash changes every len(colours) lines."""
    k = len(MODEL_COLOURS)
    return dict(color=MODEL_COLOURS[i % k], marker=MARKERS[i % len(MARKERS)],
                linestyle=("-", (0, (4, 1.5)), ":")[(i // k) % 3], markersize=4, linewidth=1.6)


def panels(count, width=4.6, height=3.5, columns=3):
    columns = max(1, min(columns, count))
    width = max(width, 6.4 / columns)   # room for the legend below a single panel
    rows = (count + columns - 1) // columns
    fig, axes = plt.subplots(rows, columns, figsize=(width * columns, height * rows), squeeze=False)
    axes = axes.ravel()
    for ax in axes[count:]:
        ax.set_visible(False)
    return fig, list(axes[:count])


def band(ax, x, rows, label, replicas_note=True, **style):
    """Mean over the rows (replicas) as a line, min-max as a shaded band; returns the mean."""
    mean, lo, hi, _, count = stats(rows)
    x = np.asarray(x, dtype=float)
    ok = np.isfinite(mean) & np.isfinite(x)
    if not ok.any():
        return mean
    ax.plot(x[ok], mean[ok], label=label, **style)
    if np.asarray(rows).shape[0] > 1 and replicas_note:
        ax.fill_between(x[ok], lo[ok], hi[ok], color=style.get("color"), alpha=0.18, linewidth=0)
    return mean


def baseline_line(ax, x, values, key, floor=TINY):
    """A baseline as a dashed line; values at or below floor (exact: e.g. ridge on noiseless tasks with
    n > d) are not drawn. Returns whether anything was drawn."""
    colour, dash = style(key)
    name = method_label(key)
    values = np.asarray(values, dtype=float)
    ok = np.isfinite(values) & (values > floor)
    if ok.sum() == 0:
        return False
    ax.plot(np.asarray(x, dtype=float)[ok], values[ok], color=colour, linestyle=dash, linewidth=1.3,
            label=name)
    return True


def log_if_positive(ax, axis="y"):
    """Log scale when every value drawn in data coordinates on that axis is positive. On y, the lower
    limit stays within a factor 10 of the lowest trained model, so an exact baseline (Bayes at sigma = 0,
    say) does not flatten the models: it leaves the frame instead."""
    lines = [l for l in ax.get_lines() if l.get_transform() == ax.transData]
    data = [np.asarray(l.get_ydata() if axis == "y" else l.get_xdata(), dtype=float) for l in lines]
    values = np.concatenate(data) if data else np.array([])
    values = values[np.isfinite(values)]
    if not values.size or np.any(values <= 0):
        return
    if axis == "x":
        ax.set_xscale("log")
        return
    ax.set_yscale("log")
    baseline_names = set(baseline_labels())
    models = [d[np.isfinite(d)] for l, d in zip(lines, data) if l.get_label() not in baseline_names]
    models = np.concatenate(models) if models else np.array([])
    if models.size and values.min() < EXACT * models.min():
        ax.set_ylim(bottom=EXACT * models.min())
    references = [d[np.isfinite(d)] for l, d in zip(lines, data) if l.get_label() in baseline_names]
    references = np.concatenate(references) if references else np.array([])
    if models.size and references.size and models.max() > 100 * references.max():
        ax.set_ylim(top=100 * references.max())   # a model far off every baseline leaves the frame


def legend(ax, **kw):
    """A legend inside one panel (for panels whose entries differ, e.g. statistics)."""
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=7, framealpha=0.85, **kw)


def value_ticks(ax, values):
    """Ticks at exactly the swept values (a log axis over a short range otherwise crowds its labels)."""
    ax.set_xticks(values)
    ax.set_xticklabels([f"{v:g}" for v in values])
    ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())


def integer_ticks(ax):
    ax.xaxis.set_major_locator(matplotlib.ticker.MaxNLocator(integer=True))


def save(fig, outdir, name, title):
    """Title, one legend below the panels with every distinct entry of all panels, PNG at 100 dpi."""
    handles, labels = {}, []
    for ax in fig.axes:
        if ax.get_legend() is not None:
            continue
        for h, l in zip(*ax.get_legend_handles_labels()):
            if l not in handles:
                handles[l] = h
                labels.append(l)
    baseline_names = baseline_labels()
    labels.sort(key=lambda l: baseline_names.index(l) + 1 if l in baseline_names
                else 100 if l.startswith("training") else 0)   # models, baselines, then markers
    width, height = fig.get_size_inches()
    bottom = 0.0
    if labels:
        entry = 0.6 + 0.065 * max(len(l) for l in labels)   # inches: handle + text at fontsize 8
        columns = max(1, min(4, len(labels), int(width / entry)))
        rows = (len(labels) + columns - 1) // columns
        extra = 0.22 * rows + 0.15
        fig.set_size_inches(width, height + extra)
        bottom = extra / (height + extra)
        fig.legend([handles[l] for l in labels], labels, loc="lower center", ncol=columns, fontsize=8,
                   frameon=False)
    fig.suptitle(title, fontsize=11)
    fig.tight_layout(rect=(0, bottom, 1, 1 - 0.25 / fig.get_size_inches()[1]))   # room for the title
    path = os.path.join(outdir, name)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return name
