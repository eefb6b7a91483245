"""[VO23]'s transformer analyses: Fig. 5's copy analysis of the first layer over training (one line per
replica: the paper shows seeds separately, and plateau escapes happen at different steps), and the
roll-out of Figs. 10 / 1 (right): the trained recurrent layer applied more times than it was trained for,
beside as many damped GD steps."""
import numpy as np

from . import plot
from .groups import label

COPY = (("copy_own", "d t_k / d x_k (own)", "-"), ("copy_next", "d t_k / d x_{k+1} (next)", "--"),
        ("copy_other", "others", ":"))


def _panels(r, name):
    """Groups of the points that hold series `name`, by every varying option."""
    values = r.sweep.analysis(name)
    has = np.isfinite(values).any(axis=1) & r.view.mask if values.shape[1] else np.zeros(r.sweep.size, bool)
    if not has.any():
        return None, values
    panel_axes, line_axes = r.view.facets()
    axes = panel_axes + line_axes
    groups = {k: idx[has[idx]] for k, idx in r.view.groups(axes).items()}
    return (axes, {k: idx for k, idx in groups.items() if len(idx)}), values


def copy_analysis(r):
    found, _ = _panels(r, "copy_step")
    if found is None:
        return
    axes, groups = found
    steps = r.sweep.analysis("copy_step")
    fig, panels = plot.panels(2 * len(groups), columns=2)
    for row, (key, idx) in enumerate(groups.items()):
        loss_ax, copy_ax = panels[2 * row], panels[2 * row + 1]
        x = r.sweep.curves["step"]
        for i, p in enumerate(idx):
            style = plot.model_style(i)
            ok = x[p] >= 0
            loss_ax.plot(x[p][ok], r.scale(r.sweep.curves["test_loss"][p][ok]), color=style["color"],
                         label=f"replica {r.sweep.points['replica'][p]}")
            for name, text, dash in COPY:
                v = r.sweep.analysis(name)[p]
                ok = np.isfinite(v)
                copy_ax.plot(steps[p][ok], v[ok], color=style["color"], linestyle=dash,
                             label=text if i == 0 else None)
        gd1 = r.sweep.analysis("layer_loss_gd")[idx, 0]
        plot.baseline_line(loss_ax, [0, np.nanmax(x[idx])], [r.scale(np.nanmean(gd1))] * 2, "gd")
        loss_ax.set_ylabel(f"test loss ({r.scale.name}); dashed: 1-step GD")
        copy_ax.set_ylabel("norm of the task-mean gradient")
        for ax in (loss_ax, copy_ax):
            ax.set_xlabel("training step")
            ax.set_title(label(axes, key) if axes else r.sweep_name, fontsize=9)
            ax.grid(alpha=0.3)
    r.figure(plot.save(fig, r.outdir, "copy_analysis.png", "[VO23] Fig. 5: loss and copying of the first layer"),
             "[VO23] Fig. 5: loss and copying of the first layer",
             "Left: test loss of each replica over training, dashed red the tuned 1-step GD. Right: the copy "
             "analysis of the first (softmax) layer, t_k = sum of its output at token k: the norm of the task-mean "
             "d t_k / d x_j for j = k (own, solid), k+1 (next, dashed) and the others (dotted, / (2n-1)), averaged "
             f"over k, as [VO23]'s code. {r.scale.note}", "transformer")


def rollout(r):
    found, tf = _panels(r, "rollout_loss_tf")
    if found is None:
        return
    axes, groups = found
    gd = r.sweep.analysis("rollout_loss_gd")
    fig, panels = plot.panels(len(groups))
    for ax, (key, idx) in zip(panels, groups.items()):
        k = np.arange(1, tf.shape[1] + 1)
        for i, p in enumerate(idx):   # one line per replica: a replica that did not train stays apart
            ax.plot(k, r.scale(tf[p]), color=plot.model_style(i)["color"], marker="+", linestyle="none",
                    label=f"trained layer rolled out, replica {r.sweep.points['replica'][p]}")
        ax.plot(k, r.scale(np.nanmean(gd[idx], axis=0)), color="#d62728", linestyle="--",
                label="GD at the damped tuned rate (mean over replicas)")
        ax.set_xlabel("applications of the layer / GD steps")
        ax.set_ylabel(f"test loss ({r.scale.name})")
        ax.set_title(label(axes, key) if axes else r.sweep_name, fontsize=9)
        plot.log_if_positive(ax)
        ax.grid(alpha=0.3)
    r.figure(plot.save(fig, r.outdir, "rollout.png", "[VO23] roll-out of a recurrent layer"),
             "[VO23] roll-out of a recurrent layer",
             "The trained 1-layer recurrent model applied `rollout` times (each application damped by "
             "rollout_damping, label channel only), one marker per replica, against as many GD steps at the damped "
             f"tuned 1-step rate, on the evaluation set. {r.scale.note}", "transformer")


MIN_REPLICAS = 3     # replica_curves draws conditions with at least this many replicas
NEAR_GD = 0.05       # "reached GD": test loss within 5% of its own L-step GD loss


def replica_curves(r):
    """[VO23] Fig. 15 (left, centre; App. A.11): every replica's test loss over training, per condition, beside
    L-step GD, and per replica the first evaluation step within 5% of its GD loss (steps_to_gd.csv): a seed
    that sits on a plateau reaches it late or never."""
    if "loss_gd" not in r.sweep.metrics:
        return
    rest = [a for a in r.view.axes if a != "replica"]
    groups = {k: idx for k, idx in r.view.groups(rest).items() if len(idx) >= MIN_REPLICAS}
    if not groups:
        return
    steps, loss = r.sweep.curves["step"], r.sweep.curves["test_loss"]
    gd = r.sweep.metrics["loss_gd"]
    rows = []
    shown = list(groups.items())[:8]
    fig, panels = plot.panels(len(shown))
    for ax, (key, idx) in zip(panels, shown):
        for i, p in enumerate(idx):
            ok = steps[p] >= 0
            ax.plot(steps[p][ok], r.scale(loss[p][ok]), color=plot.model_style(i)["color"], linewidth=1.1,
                    label=f"replica {r.sweep.points['replica'][p]}")
        plot.baseline_line(ax, [0, np.nanmax(steps[idx])], [r.scale(np.nanmean(gd[idx]))] * 2, "gd")
        ax.set_xlabel("training step")
        ax.set_ylabel(f"test loss ({r.scale.name})")
        ax.set_title(label(rest, key) if rest else r.sweep_name, fontsize=9)
        plot.log_if_positive(ax)
        ax.grid(alpha=0.3)
    for key, idx in groups.items():
        for p in idx:
            ok = (steps[p] >= 0) & np.isfinite(loss[p])
            near = np.flatnonzero(loss[p][ok] <= (1 + NEAR_GD) * gd[p])
            rows.append([label(rest, key) if rest else r.sweep_name, int(r.sweep.points["replica"][p]),
                         int(steps[p][ok][near[0]]) if len(near) else ""])
    r.table("steps_to_gd", f"Steps until the test loss is within {NEAR_GD:.0%} of L-step GD's, per replica",
            ["condition", "replica", "step"], rows,
            f"The first evaluation step at which the replica's test loss is at most {1 + NEAR_GD:g} x its own "
            "L-step GD loss (the same evaluation tasks); empty: never within the training run.")
    r.figure(plot.save(fig, r.outdir, "replica_curves.png", "Every replica's test loss during training"),
             "Every replica's test loss during training ([VO23] Fig. 15)",
             "One line per replica (conditions with at least 3), dashed red: L-step GD at its tuned rate (mean over "
             f"the replicas). A seed on a plateau leaves it late; steps_to_gd.csv has each replica's first step "
             f"within {NEAR_GD:.0%} of its GD loss. {r.scale.note}", "training")
