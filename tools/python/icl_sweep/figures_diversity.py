"""Finite task diversity and loss against context length (README "What is measured on every point"):
the trained model and the baselines on fresh and on pool tasks against the pool size M, and every method
against the context length."""
import numpy as np

from . import plot
from .groups import label, robust, stats

MAX_PANELS = 9


def _panels(r, exclude):
    """Conditions over the varied axes but `exclude`, replicas pooled."""
    axes = [a for a in r.view.axes if a not in exclude]
    groups = r.view.groups(axes)
    return axes, dict(list(groups.items())[:MAX_PANELS])


def _finish(r, ax, axes, key, xlabel, ylabel):
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(label(axes, key) if axes else r.sweep_name, fontsize=9)
    plot.log_if_positive(ax)
    ax.grid(alpha=0.3)
    plot.legend(ax)


def task_diversity(r):
    """Loss against the pool size M (task_pool; 0 = a fresh task every time, drawn at the right as 'inf')."""
    if "task_pool" not in r.view.axes:
        return
    axes, groups = _panels(r, ("task_pool",))
    fig, panels = plot.panels(len(groups))
    for ax, (key, idx) in zip(panels, groups.items()):
        M = r.sweep.points["task_pool"][idx].astype(float)
        finite = sorted(set(M[M > 0]))
        inf_x = 4 * max(finite) if finite else 1
        xs = sorted(set(M), key=lambda m: inf_x if m == 0 else m)
        x_plot = [inf_x if m == 0 else m for m in xs]

        def series(metric):
            rows = [r.scale(r.sweep.metrics[metric][idx[M == m]]) if metric in r.sweep.metrics else [np.nan]
                    for m in xs]
            return [stats(np.asarray(v))[0] for v in rows]

        best = np.inf
        for i, (metric, name) in enumerate((("loss_tf", "trained, fresh tasks"), ("pool_loss_tf", "trained, pool tasks"))):
            mean = np.array(series(metric), dtype=float)
            se = [robust(r.scale(r.sweep.metrics[metric][idx[M == m]]))["se"] if metric in r.sweep.metrics else np.nan
                  for m in xs]   # over the finite values (it divided by every point's count, NaN included)
            se = np.array(se, dtype=float)
            best = min(best, np.nanmin(mean, initial=np.inf))
            ax.errorbar(x_plot, mean, yerr=se if np.isfinite(se).any() else None, label=name, capsize=2,
                        **plot.model_style(i))
        for metric, key, dash in (("loss_dmmse", "dmmse", "--"), ("pool_loss_dmmse", "dmmse", ":"),
                                  ("loss_bayes", "bayes", "--"), ("pool_loss_bayes", "bayes", ":")):
            colour, _ = plot.style(key)
            where = "fresh" if metric.startswith("loss_") else "pool"
            values = np.array(series(metric), dtype=float)
            values[values < plot.EXACT * best] = np.nan   # exact (dMMSE identifies a small pool's task): off the axis
            ax.plot(x_plot, values, color=colour, linestyle=dash, linewidth=1.2,
                    label=f"{plot.method_label(key)}, {where} tasks")
        ax.set_xscale("log", base=2)
        ax.set_xticks(x_plot)
        ax.set_xticklabels(["inf" if m == 0 else f"{int(m)}" for m in xs], fontsize=7, rotation=45)
        _finish(r, ax, axes, key, "task pool size M (inf: a fresh task every time)", f"loss ({r.scale.name})")
    title = "Task diversity: fresh and pool tasks against the pool size"
    r.figure(plot.save(fig, r.outdir, "task_diversity.png", title), title,
             "The trained model on fresh tasks (the test loss) and on pool tasks (fresh inputs, w from the training "
             "pool), mean and standard error over replicas, beside dMMSE (the posterior mean under the pool prior) "
             "and the Bayes predictor of the Gaussian prior (ridge with lambda = sigma^2); a baseline below a tenth of "
             f"the trained model's best loss is left off the axis. {r.scale.note}", "diversity")


def context_curve(r):
    """Every method's loss against the context length (context_curve = n_test)."""
    if "context_length" not in r.sweep.analysis_names:
        return
    axes, groups = _panels(r, ())
    fig, panels = plot.panels(len(groups))
    for ax, (key, idx) in zip(panels, groups.items()):
        xs = r.sweep.analysis("context_length")[idx[0]]
        for ref in ("zero", "bayes", "gd", "gdpp", "dmmse"):
            rows = r.sweep.analysis(f"context_loss_{ref}")[idx]
            if rows.size:
                plot.baseline_line(ax, xs, stats(r.scale(rows))[0], ref)
        plot.band(ax, xs, r.scale(r.sweep.analysis("context_loss_tf")[idx]), "trained", **plot.model_style(0))
        ax.axvline(r.sweep.points["n"][idx[0]], color="#aaaaaa", linewidth=4, alpha=0.5, label="training n")
        _finish(r, ax, axes, key, "context length k", f"loss at the query ({r.scale.name})")
    title = "Loss against context length"
    r.figure(plot.save(fig, r.outdir, "context_curve.png", title), title,
             "The trained weights and the baselines on fresh tasks of each context length (2,000 each; c = 1/k "
             "under norm = 1/n, nothing retuned per length), mean over replicas (band: min-max). "
             f"{r.scale.note}", "context")
