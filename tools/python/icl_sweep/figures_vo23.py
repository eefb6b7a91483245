"""[VO23]'s transformer analyses: Fig. 5's copy analysis of the first layer over training (one line per
replica: the paper shows seeds separately, and plateau escapes happen at different steps), and the
roll-out of Figs. 10 / 1 (right): the trained recurrent layer applied more times than it was trained for,
beside as many damped GD steps."""
import numpy as np

from . import plot
from .groups import label, stats

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


def _mean_se(values):
    """Mean and standard error over the finite values."""
    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v)]
    return (float(v.mean()), float(v.std(ddof=1) / np.sqrt(len(v))) if len(v) > 1 else float("nan")) if len(v) \
        else (float("nan"), float("nan"))


def fixed_set(r):
    """[VO23] Fig. 16 (App. A.12): models trained on one fixed set of `batch` tasks (refresh >= steps: the batch
    of step 0 is the whole training set), against L-step GD at its tuned rate: the loss on the training set
    and on fresh tasks over training, and per set size the trained model's and the interpolation's loss
    relative to GD and the alignment with GD (fixed_set.csv)."""
    fixed = r.view.mask & (r.sweep.points["refresh"] >= r.sweep.points["steps"])
    if not fixed.any() or "loss_gd" not in r.sweep.metrics:
        return
    M, curves = r.sweep.metrics, r.sweep.curves
    rest = [a for a in r.view.axes if a not in ("replica", "batch")]
    conditions = {}
    for i in np.flatnonzero(fixed):
        conditions.setdefault(tuple(r.sweep.points[a][i] for a in rest), []).append(i)
    rows = []
    fig, panels = plot.panels(3 * len(conditions), columns=3)
    for c, (key, members) in enumerate(conditions.items()):
        loss_ax, rel_ax, align_ax = panels[3 * c: 3 * c + 3]
        members = np.array(members)
        sizes = sorted(set(r.sweep.points["batch"][members]))
        per_size = {b: members[r.sweep.points["batch"][members] == b] for b in sizes}
        for i, (b, idx) in enumerate(per_size.items()):
            style = plot.model_style(i)
            x = curves["step"][idx[0]]
            ok = x >= 0
            for name, dash, text in (("test_loss", "-", "fresh tasks"), ("train_loss", ":", "the training set")):
                mean = stats(curves[name][idx])[0]   # NaN where no replica has a value (train_loss at step 0)
                loss_ax.plot(x[ok], r.scale(mean[ok]), color=style["color"], linestyle=dash, label=f"B = {b}: {text}")
        plot.baseline_line(loss_ax, [0, np.nanmax(curves["step"][members])],
                           [r.scale(np.nanmean(M["loss_gd"][members]))] * 2, "gd")
        loss_ax.set_xlabel("training step")
        loss_ax.set_ylabel(f"loss ({r.scale.name})")
        plot.log_if_positive(loss_ax)
        summary = {name: [] for name in ("tf", "interp", "1-cos", "l2")}
        for b, idx in per_size.items():
            gd = M["loss_gd"][idx]
            tf_rel, tf_se = _mean_se(100 * (M["loss_tf"][idx] / gd - 1))
            in_rel, in_se = _mean_se(100 * (M["loss_interp"][idx] / gd - 1)) if "loss_interp" in M else (np.nan,) * 2
            test, test_se = _mean_se(r.scale(M["loss_tf"][idx]))
            train, _ = _mean_se(r.scale(np.array([row[np.isfinite(row)][-1] for row in curves["train_loss"][idx]])))
            cos, cos_se = _mean_se(M["align_gd_cos"][idx])
            l2, l2_se = _mean_se(M["align_gd_l2"][idx])
            for name, v in zip(summary, ((tf_rel, tf_se), (in_rel, in_se), (1 - cos, cos_se), (l2, l2_se))):
                summary[name].append(v)
            rows.append([label(rest, key) if rest else r.sweep_name, int(b), len(idx), f"{train:.4g}", f"{test:.4g}",
                         f"{test_se:.2g}", f"{r.scale(np.nanmean(gd)):.4g}", f"{tf_rel:+.3g}", f"{tf_se:.2g}",
                         f"{in_rel:+.3g}", f"{in_se:.2g}", f"{cos:.4f}", f"{cos_se:.2g}", f"{l2:.4g}", f"{l2_se:.2g}"])
        for ax, names, ylabel in ((rel_ax, (("tf", "trained"), ("interp", "interpolated")), "loss / GD's - 1 (%)"),
                                  (align_ax, (("1-cos", "1 - cosine of d yhat / d x_q"), ("l2", "L2 distance")),
                                   "misalignment with GD")):
            for i, (name, text) in enumerate(names):
                mean, se = (np.array(v) for v in zip(*summary[name]))
                ax.errorbar(sizes, mean, yerr=se, capsize=3, label=text, **plot.model_style(i))
            ax.set_xscale("log", base=2)
            ax.set_xlabel("tasks in the training set B")
            ax.set_ylabel(ylabel)
        rel_ax.set_yscale("symlog", linthresh=1)
        plot.log_if_positive(align_ax)
        for ax in (loss_ax, rel_ax, align_ax):
            ax.set_title(label(rest, key) if rest else r.sweep_name, fontsize=9)
            ax.grid(alpha=0.3)
    r.table("fixed_set", "Training on one fixed set of B tasks ([VO23] Fig. 16)",
            ["condition", "B", "replicas", "final train loss", "test loss", "test loss s.e.", "GD",
             "trained / GD - 1 (%)", "trained s.e.", "interpolated / GD - 1 (%)", "interpolated s.e.", "cos with GD",
             "cos s.e.", "L2 with GD", "L2 s.e."], rows,
            f"Per set size B (refresh >= steps: one batch of B tasks for the whole run): the loss on the training set "
            f"at the last evaluation, on fresh tasks, and relative to L-step GD on the same fresh tasks (per replica, "
            f"then mean and s.e.); the alignment with GD as in alignment.png. {r.scale.note}")
    r.figure(plot.save(fig, r.outdir, "fixed_set.png", "Training on one fixed set of tasks ([VO23] Fig. 16)"),
             "Training on one fixed set of tasks ([VO23] Fig. 16)",
             "Left: loss over training on fresh tasks (solid) and on the training set (dotted), mean over replicas, "
             "dashed red: L-step GD. Centre: the trained model's and the interpolation's loss relative to GD's per set "
             "size (symmetric log scale). Right: misalignment with GD (1 - cosine and L2 distance of the sensitivities "
             f"d yhat / d x_query; 0 = identical). Bars: s.e. over replicas. {r.scale.note}", "training")
