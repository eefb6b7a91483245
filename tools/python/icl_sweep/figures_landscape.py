"""[A24] optimisation landscape: stochastic-gradient noise, robust condition number of the Hessian
diagonal over training, smoothness against gradient norm, and the condition-number ratio table."""
import numpy as np

from . import plot
from .groups import label, model_label, stats


def _landscape_groups(r):
    steps = r.sweep.analysis("landscape_step")
    has = np.isfinite(steps).any(axis=1) & r.view.mask if steps.shape[1] else np.zeros(r.sweep.size, bool)
    if not has.any():
        return None
    panel_axes, line_axes = r.view.facets()
    if "optimizer" in panel_axes + line_axes:   # optimizers side by side in every panel ([A24])
        (panel_axes if "optimizer" in panel_axes else line_axes).remove("optimizer")
        line_axes.insert(0, "optimizer")
    by_panel = {}
    for key, idx in r.view.groups(panel_axes + line_axes).items():
        idx = idx[has[idx]]
        if len(idx):
            by_panel.setdefault(key[:len(panel_axes)], {})[key[len(panel_axes):]] = idx
    return panel_axes, line_axes, by_panel


def landscape(r):
    found = _landscape_groups(r)
    if found is None:
        return
    panel_axes, line_axes, by_panel = found
    steps = r.sweep.analysis("landscape_step")
    _noise_histograms(r, panel_axes, by_panel, steps)
    _condition_numbers(r, panel_axes, line_axes, by_panel, steps)
    _smoothness(r, panel_axes, line_axes, by_panel)
    if "optimizer" in line_axes:
        _ratio_table(r, panel_axes, line_axes, by_panel, steps)


def _title(r, axes, key):
    return label(axes, key) if axes else r.sweep_name


def _noise_histograms(r, panel_axes, by_panel, steps):
    noise = r.sweep.analysis("landscape_grad_noise")
    fig, axes = plot.panels(len(by_panel))
    for ax, (pkey, lines) in zip(axes, by_panel.items()):
        every = np.concatenate(list(lines.values()))
        first = steps[every, 0]
        per_step = noise.shape[1] // steps.shape[1]
        samples = noise[every, :per_step][first == 0].ravel()
        samples = samples[np.isfinite(samples)]
        if samples.size == 0:
            ax.set_visible(False)
            continue
        ax.hist(samples, bins=30, density=True, color=plot.MODEL_COLOURS[0], alpha=0.75,
                label=f"{samples.size} mini-batches, {len(every)} inits")
        mean, sd = samples.mean(), samples.std()
        ax.axvline(mean, color="k", linewidth=1, label=f"mean {mean:.3g}, s.d. {sd:.3g}")
        ax.set_xlabel("|g_B - g_full| at initialisation")
        ax.set_ylabel("density")
        ax.set_title(_title(r, panel_axes, pkey), fontsize=9)
        ax.grid(alpha=0.3)
        plot.legend(ax)
    r.figure(plot.save(fig, r.outdir, "landscape_gradient_noise.png", "Stochastic-gradient noise at initialisation ([A24])"),
             "Stochastic-gradient noise at initialisation",
             "Norm of the difference between mini-batch and large-batch gradients at step 0, pooled over the "
             "points of each data setting (heavy-tailed inputs give heavy-tailed noise).", "landscape")


def _condition_numbers(r, panel_axes, line_axes, by_panel, steps):
    cond = r.sweep.analysis("landscape_hessian_cond")
    fig, axes = plot.panels(len(by_panel))
    for ax, (pkey, lines) in zip(axes, by_panel.items()):
        for i, (lkey, idx) in enumerate(lines.items()):
            plot.band(ax, steps[idx[0]], cond[idx], model_label(line_axes, lkey),
                      **plot.model_style(i))
        ax.set_xlabel("training step")
        ax.set_ylabel("max|H_ii| / median|H_ii|")
        ax.set_title(_title(r, panel_axes, pkey), fontsize=9)
        ax.set_yscale("log")
        ax.grid(alpha=0.3)
    r.figure(plot.save(fig, r.outdir, "landscape_condition_number.png", "Robust condition number during training ([A24])"),
             "Robust condition number during training",
             "Robust condition number max|H_ii| / median|H_ii| (lower median) of the loss Hessian's diagonal "
             "on the fixed landscape set (the same tasks for every point) at the measured steps, mean over "
             "replicas, band min-max.",
             "landscape")


def _smoothness(r, panel_axes, line_axes, by_panel):
    norm = r.sweep.analysis("landscape_grad_norm")
    smooth = r.sweep.analysis("landscape_smoothness")
    fig, axes = plot.panels(len(by_panel))
    for ax, (pkey, lines) in zip(axes, by_panel.items()):
        for i, (lkey, idx) in enumerate(lines.items()):
            x, y = norm[idx].ravel(), np.abs(smooth[idx].ravel())
            ok = np.isfinite(x) & np.isfinite(y) & (x > 0) & (y > 0)
            style = plot.model_style(i)
            ax.scatter(x[ok], y[ok], s=10, color=style["color"], marker=style["marker"], alpha=0.7,
                       label=model_label(line_axes, lkey))
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("|g| on the fixed set")
        ax.set_ylabel("|u^T H u| / |u|^2 along the update")
        ax.set_title(_title(r, panel_axes, pkey), fontsize=9)
        ax.grid(alpha=0.3)
    r.figure(plot.save(fig, r.outdir, "landscape_smoothness.png", "Directional smoothness against gradient norm ([A24])"),
             "Directional smoothness against gradient norm",
             "Every measured step of every point: smoothness along the optimiser's update against the "
             "gradient norm, both on the fixed landscape set (log-log).", "landscape")


def _ratio_table(r, panel_axes, line_axes, by_panel, steps):
    """Robust condition number of SGD over Adam at each measured step, mean (s.d.) over replica pairs."""
    cond = r.sweep.analysis("landscape_hessian_cond")
    rows = []
    for pkey, lines in by_panel.items():
        by_opt = {}
        for lkey, idx in lines.items():
            by_opt.setdefault(lkey[0], {})[lkey[1:]] = idx
        adam = by_opt.get("adam", by_opt.get("adamw"))
        if adam is None or "sgd" not in by_opt:
            continue
        for rest, a in adam.items():
            s = by_opt["sgd"].get(rest)
            if s is None:
                continue
            replica = r.sweep.points["replica"]   # pair seeds by replica, as the paired sweep draws them
            a_by = {replica[i]: i for i in a}
            pairs = [(i, a_by[replica[i]]) for i in s if replica[i] in a_by]
            if not pairs:
                continue
            mean, _, _, sd, k = stats(cond[[i for i, _ in pairs]] / cond[[j for _, j in pairs]])
            for j, step in enumerate(steps[a[0]]):
                if np.isfinite(step) and k[j]:
                    rows.append([_title(r, panel_axes, pkey), label(line_axes[1:], rest) if rest else "-",
                                 int(step), f"{mean[j]:.3g}", f"{sd[j]:.2g}" if k[j] > 1 else "", int(k[j])])
    if rows:
        r.table("landscape_ratio", "Robust condition number ratio SGD / Adam ([A24] table)",
                ["setting", "condition", "step", "ratio mean", "s.d.", "pairs"], rows,
                "Replica r of SGD over replica r of Adam (same seed: initialisation and tasks), mean and standard "
                "deviation (n - 1) over the pairs, as [A24]'s plot_condition_number.ipynb. [A24] Setting 1 "
                "(rate 0.02): 1.76 (0.40) at step 750, 1.58 (0.41) at 1250.")
