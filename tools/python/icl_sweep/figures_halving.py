"""Successive halving (README "Adaptive sweeps"): every candidate's test-loss curve per condition, the
pruned ones ending at their rung, the survivors to the end; dotted verticals at the rungs."""
import re

import numpy as np

from . import plot
from .groups import halving_group, label

MAX_PANELS = 12


def halving(r):
    spec = r.sweep.attrs.get("spec", "")
    found = re.search(r"^search = (.*)$", spec, re.M)
    status = r.sweep.points["status"]
    if not found or not (status == "pruned").any():
        return
    searched = found.group(1).split()
    rungs = [int(s) for s in re.search(r"^rungs = (.*)$", spec, re.M).group(1).split()]
    keys = halving_group(r.sweep, searched)
    column = {k: r.sweep.points[k] for k in keys}
    named = [a for a in searched if a in r.sweep.points] + ["seed"]   # a survivor's name: its rate, replica, seed
    conditions = {}
    for i in range(r.sweep.size):
        conditions.setdefault(tuple(column[k][i] for k in keys), []).append(i)
    shown = list(conditions.items())
    if len(shown) > MAX_PANELS:   # evenly spaced conditions
        shown = [shown[k] for k in np.linspace(0, len(shown) - 1, MAX_PANELS).round().astype(int)]
    fig, axes = plot.panels(len(shown), columns=4 if len(shown) > 6 else 3)
    x_all, y_all = r.sweep.curves["step"], r.sweep.curves["test_loss"]
    for ax, (key, idx) in zip(axes, shown):
        survivors = 0
        for p in idx:
            ok = x_all[p] >= 0
            x, y = x_all[p][ok], r.scale(y_all[p][ok])
            if status[p] == "ok":
                ax.plot(x, y, color=plot.model_style(survivors)["color"], linewidth=1.6,
                        label=f"survivor {p}: " + ", ".join(f"{a}={r.sweep.points[a][p]}" for a in named))
                survivors += 1
            else:
                ax.plot(x, y, color="0.6", linewidth=0.7, alpha=0.7)
                if status[p] == "pruned" and len(x):
                    ax.plot(x[-1], y[-1], "x", color="0.4", markersize=3)
        for step in rungs:
            ax.axvline(step, color="0.3", linestyle=":", linewidth=0.8)
        ax.set_xlabel("training step")
        ax.set_ylabel(f"test loss ({r.scale.name})")
        ax.set_title(label(keys, key) + f": {len(idx)} candidates", fontsize=9)
        plot.log_if_positive(ax)
        ax.grid(alpha=0.3)
        plot.legend(ax)
    title = "Successive halving: the candidates of each condition"
    r.figure(plot.save(fig, r.outdir, "halving.png", title), title,
             "Test loss of every candidate (the searched axes: " + ", ".join(searched) + ") over training; grey: "
             "pruned at a rung (x, dotted verticals), colour: the survivors trained to the end. "
             f"{r.scale.note}", "training")
