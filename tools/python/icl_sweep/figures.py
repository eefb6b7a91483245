"""Loss figures: loss against the varied numeric axes with every baseline, per noise level, per layer
readout, training curves, alignment with GD / GD++, out-of-distribution inputs and contexts."""
import numpy as np

from . import plot
from .groups import label, model_label, sort_key, stats

# Numeric options that make a meaningful x axis, in order of preference.
X_AXES = ("layers", "n", "d", "heads", "steps", "batch", "lr", "init_scale", "ridge_lambda", "refresh")


def _panel_title(r, axes, key):
    return label(axes, key) if axes else r.sweep_name


def _by_panel_and_line(r, x=None):
    """{panel key: {line key: point indices}} with the facet axes for x."""
    panel_axes, line_axes = r.view.facets(x)
    out = {}
    for key, idx in r.view.groups(panel_axes + line_axes).items():
        out.setdefault(key[:len(panel_axes)], {})[key[len(panel_axes):]] = idx
    return panel_axes, line_axes, out


def _rows_over(r, idx, x, values):
    """Values of the points idx arranged as (replica rows, x columns), NaN where missing."""
    xs = sorted(set(r.sweep.points[x][idx]), key=sort_key)
    columns = [values[idx[r.sweep.points[x][idx] == v]] for v in xs]
    depth = max(len(c) for c in columns)
    rows = np.full((depth, len(xs)), np.nan)
    for j, c in enumerate(columns):
        rows[:len(c), j] = c
    return np.array(xs, dtype=float), rows


DEPTH_BASELINES = ("gd", "pgd", "gdpp", "gdpp_tied")   # K = L steps: they depend on the depth


def loss_vs_axis(r):
    """Test loss against each numeric varied option, every baseline as a line."""
    metrics = r.sweep.metrics
    for x in [a for a in X_AXES if a in r.view.axes]:
        panel_axes, line_axes, by_panel = _by_panel_and_line(r, x)
        fig, axes = plot.panels(len(by_panel))
        skipped = set()
        for ax, (pkey, lines) in zip(axes, by_panel.items()):
            every = np.concatenate(list(lines.values()))
            floor = plot.EXACT * r.scale(np.nanmin(metrics["test_loss"][every]))
            mixed_depths = x != "layers" and len(set(r.sweep.points["layers"][every])) > 1
            for key in plot.baseline_keys():
                if f"loss_{key}" not in metrics or (key == "pgd" and _same(metrics["loss_pgd"], metrics["loss_gd"], every)):
                    continue
                if mixed_depths and key in DEPTH_BASELINES:   # K = L steps: one line per depth would be needed
                    continue
                xs, rows = _rows_over(r, every, x, r.scale(metrics[f"loss_{key}"]))
                if not plot.baseline_line(ax, xs, stats(rows)[0], key, floor):
                    skipped.add(plot.method_label(key))
            for i, (lkey, idx) in enumerate(lines.items()):
                xs, rows = _rows_over(r, idx, x, r.scale(metrics["test_loss"]))
                plot.band(ax, xs, rows, model_label(line_axes, lkey, "trained: "),
                          **plot.model_style(i))
            ax.set_xlabel(x)
            if x in ("lr", "init_scale", "batch", "steps", "ridge_lambda"):
                plot.log_if_positive(ax, "x")
                plot.value_ticks(ax, _rows_over(r, every, x, metrics["test_loss"])[0])
            elif r.sweep.points[x].dtype.kind in "iu":
                plot.integer_ticks(ax)
            ax.set_ylabel(f"test loss ({r.scale.name})")
            ax.set_title(_panel_title(r, panel_axes, pkey), fontsize=9)
            plot.log_if_positive(ax)
            ax.grid(alpha=0.3)
        note = (f" Not drawn, more than {1 / plot.EXACT:g}x below the best trained model (exact or nearly, "
                f"e.g. on noiseless tasks): {', '.join(sorted(skipped))}." if skipped else "")
        r.figure(plot.save(fig, r.outdir, f"loss_vs_{x}.png", f"Test loss against {x}"),
                 f"Test loss against {x}",
                 f"Trained models (solid, mean over replicas, band min-max) and every baseline on the same "
                 f"evaluation tasks (dashed; GD and GD++ take K = L steps and are drawn where the panel has one "
                 f"depth or the x axis is the depth). {r.scale.note}{note}", "losses")


def _deepest(layers, lines):
    """A panel's points, its deepest L and the points at that depth."""
    every = np.concatenate(list(lines.values()))
    deepest = layers[every].max()
    return every, deepest, every[layers[every] == deepest]


def _same(a, b, idx):
    return np.allclose(a[idx], b[idx], rtol=1e-4, equal_nan=True)  # e.g. Sigma = I / 12: same method


def _training_range(ax, noise):
    """Shade or mark the noise levels seen in training."""
    kind, _, arg = noise.partition(":")
    if kind == "uniform":
        ax.axvspan(0, float(arg), color="#dddddd", alpha=0.6, label="training range")
    elif kind in ("fixed", "set"):
        for s in arg.split(","):
            ax.axvline(float(s), color="#aaaaaa", linewidth=4, alpha=0.6)
    else:
        ax.axvline(0, color="#aaaaaa", linewidth=4, alpha=0.6)


NOISE_METHODS = ("gd", "gdpp", "const_rr", "ada_rr", "tuned_rr", "oracle_ridge", "bayes")


def loss_vs_noise(r):
    """[V24] Fig. 2: loss per noise level sigma, in and out of the training range."""
    if "noise_sigma" not in r.sweep.analysis_names or not _has_noise(r):
        return
    sigma = r.sweep.analysis("noise_sigma")
    layers = r.sweep.points["layers"]
    panel_axes, line_axes, by_panel = _by_panel_and_line(r, x="layers")
    fig, axes = plot.panels(len(by_panel))
    for ax, (pkey, lines) in zip(axes, by_panel.items()):
        every, deepest, deep = _deepest(layers, lines)
        noise = str(r.sweep.points["noise"][every[0]])
        _training_range(ax, noise)
        for key in NOISE_METHODS:
            plot.baseline_line(ax, sigma[deep[0]], stats(r.scale(r.sweep.analysis(f"noise_loss_{key}")[deep]))[0], key)
        for i, (lkey, idx) in enumerate(lines.items()):
            idx = idx[layers[idx] == deepest]
            if len(idx):
                plot.band(ax, sigma[idx[0]], r.scale(r.sweep.analysis("noise_loss_tf")[idx]),
                          model_label(line_axes, lkey, "trained: "),
                          **plot.model_style(i))
        ax.set_xlabel("noise level sigma of the evaluation tasks")
        ax.set_ylabel(f"loss ({r.scale.name})")
        ax.set_title(f"{_panel_title(r, panel_axes, pkey)}; L = {deepest}", fontsize=9)
        plot.log_if_positive(ax)
        ax.grid(alpha=0.3)
    r.figure(plot.save(fig, r.outdir, "loss_vs_noise_level.png", "Loss per noise level ([V24] Fig. 2)"),
             "Loss per noise level",
             "Each method on 1,000 tasks per noise level sigma (grey: the training law's range or values); "
             f"trained models at the deepest L of each panel, mean over replicas. {r.scale.note}", "noise")
    if "layers" in r.view.axes:
        _noise_profile_by_depth(r, sigma)


def _noise_profile_by_depth(r, sigma):
    """[V24] Fig. 2 (bottom): the per-variance profile of each depth."""
    layers = r.sweep.points["layers"]
    rest = [a for a in r.view.axes if a != "layers"]
    groups = r.view.groups(rest)
    groups = {k: v for k, v in groups.items() if _noisy(r.sweep.points["noise"][v[0]])}
    if not groups:
        return
    fig, axes = plot.panels(len(groups), columns=4)
    depths = sorted(set(layers[r.view.mask]))
    for ax, (key, idx) in zip(axes, groups.items()):
        _training_range(ax, str(r.sweep.points["noise"][idx[0]]))
        plot.baseline_line(ax, sigma[idx[0]], stats(r.scale(r.sweep.analysis("noise_loss_bayes")[idx]))[0], "bayes")
        cmap = plot.plt.get_cmap("viridis")
        for j, depth in enumerate(depths):
            at = idx[layers[idx] == depth]
            if len(at):
                plot.band(ax, sigma[at[0]], r.scale(r.sweep.analysis("noise_loss_tf")[at]), f"L = {depth}",
                          color=cmap(j / max(1, len(depths) - 1)), linewidth=1.4)
        ax.set_xlabel("noise level sigma")
        ax.set_ylabel(f"loss ({r.scale.name})")
        ax.set_title(label(rest, key), fontsize=9)
        plot.log_if_positive(ax)
        ax.grid(alpha=0.3)
    r.figure(plot.save(fig, r.outdir, "noise_profile_by_depth.png", "Per-variance profile by depth ([V24] Fig. 2, bottom)"),
             "Per-variance profile by depth",
             f"Trained models of every depth L per noise level (grey: training range), the Bayes-optimal "
             f"predictor dashed. {r.scale.note}", "noise")


def _noisy(noise):
    return not str(noise).startswith("none")


def _has_noise(r):
    return any(_noisy(v) for v in r.sweep.points["noise"][r.view.mask])


def layer_readouts(r):
    """Per-layer readout losses of the deepest models beside K-step GD, preconditioned GD and GD++."""
    layers = r.sweep.points["layers"]
    if layers[r.view.mask].max() < 2:
        return
    panel_axes, line_axes, by_panel = _by_panel_and_line(r, x="layers")
    fig, axes = plot.panels(len(by_panel))
    for ax, (pkey, lines) in zip(axes, by_panel.items()):
        _, deepest, deep = _deepest(layers, lines)
        ks = np.arange(1, deepest + 1)
        for key in ("gd", "pgd", "gdpp", "gdpp_tied"):
            series = r.sweep.analysis(f"layer_loss_{key}")
            if series.shape[1] and not (key == "pgd" and _same(series, r.sweep.analysis("layer_loss_gd"), deep)):
                plot.baseline_line(ax, ks, stats(r.scale(series[deep][:, :deepest]))[0], key)
        for i, (lkey, idx) in enumerate(lines.items()):
            idx = idx[layers[idx] == deepest]
            if len(idx):
                plot.band(ax, ks, r.scale(r.sweep.layer_loss[idx][:, :deepest]),
                          model_label(line_axes, lkey, "trained: "), **plot.model_style(i))
        ax.set_xlabel("readout after layer l / K steps of the algorithm")
        ax.set_ylabel(f"loss ({r.scale.name})")
        ax.set_title(f"{_panel_title(r, panel_axes, pkey)}; L = {deepest}", fontsize=9)
        ax.set_xticks(ks)
        plot.log_if_positive(ax)
        ax.grid(alpha=0.3)
    r.figure(plot.save(fig, r.outdir, "layer_readouts.png", "Per-layer readout loss"), "Per-layer readout loss",
             "Loss of the readout after each layer of the deepest trained models (solid) against K steps of "
             f"GD, preconditioned GD and GD++, each tuned for its K (dashed). {r.scale.note}", "layers")


def loss_curves(r):
    """Test loss over training; optimizers in one panel when they vary ([A24] Adam vs SGD)."""
    steps = r.sweep.curves["step"]
    panel_axes, line_axes = r.view.facets()
    if "layers" in line_axes:
        line_axes.remove("layers")
        panel_axes.append("layers")
    if "optimizer" in line_axes:
        line_axes.insert(0, line_axes.pop(line_axes.index("optimizer")))
    groups = r.view.groups(panel_axes + line_axes)
    by_panel = {}
    for key, idx in groups.items():
        by_panel.setdefault(key[:len(panel_axes)], {})[key[len(panel_axes):]] = idx
    if len(by_panel) > 16 and "layers" in panel_axes:
        j = panel_axes.index("layers")
        ends = {min(k[j] for k in by_panel), max(k[j] for k in by_panel)}
        by_panel = {k: v for k, v in by_panel.items() if k[j] in ends}
    fig, axes = plot.panels(len(by_panel), columns=4 if len(by_panel) > 6 else 3)
    for ax, (pkey, lines) in zip(axes, by_panel.items()):
        every = np.concatenate(list(lines.values()))
        optimizers = sorted({k[0] for k in lines}) if line_axes[:1] == ["optimizer"] else None
        for i, (lkey, idx) in enumerate(lines.items()):
            x = steps[idx[0]]
            ok = x >= 0
            style = plot.model_style(i)
            style.update(marker=None)
            if optimizers:
                style["linestyle"] = ("-", "--", ":", "-.")[optimizers.index(lkey[0]) % 4]
            plot.band(ax, x[ok], r.scale(r.sweep.curves["test_loss"][idx][:, ok]),
                      model_label(line_axes, lkey), **style)
        if len(set(r.sweep.points["layers"][every])) == 1 and "loss_gd" in r.sweep.metrics:   # analysis = false: none
            plot.baseline_line(ax, [0, steps[every].max()], [r.scale(stats(r.sweep.metrics["loss_gd"][every][:, None])[0][0])] * 2, "gd")
        ax.set_xlabel("training step")
        ax.set_ylabel(f"test loss ({r.scale.name})")
        ax.set_title(_panel_title(r, panel_axes, pkey), fontsize=9)
        plot.log_if_positive(ax)
        ax.grid(alpha=0.3)
    r.figure(plot.save(fig, r.outdir, "loss_curves.png", "Test loss during training"), "Test loss during training",
             "Loss on the fixed evaluation set at every evaluation (mean over replicas, band min-max); dashed "
             f"red: L-step GD with a tuned rate. {r.scale.note}", "training")


ALIGN = (("abs", "mean |yhat_TF - yhat_ref|"), ("cos", "cosine of sensitivities d yhat / d x_q"),
         ("l2", "L2 distance of sensitivities"))


def alignment(r):
    """[VO23]: how closely the trained model's predictions and sensitivities follow GD and GD++."""
    metrics = r.sweep.metrics
    if "align_gd_cos" not in metrics or not np.isfinite(metrics["align_gd_cos"][r.view.mask]).any():
        return
    x = "layers"
    groups = r.view.groups([a for a in r.view.axes if a != x])
    groups = dict(list(groups.items())[:10])
    rest = [a for a in r.view.axes if a != x]
    fig, axes = plot.panels(len(ALIGN))
    for ax, (what, name) in zip(axes, ALIGN):
        for i, (key, idx) in enumerate(groups.items()):
            for ref, dash, text in (("gd", "-", "GD"), ("gdpp", "--", "GD++"), ("gdpp_tied", ":", "tied GD++")):
                if f"align_{ref}_{what}" not in metrics:   # files written before tied GD++ was aligned
                    continue
                xs, rows = _rows_over(r, idx, x, metrics[f"align_{ref}_{what}"])
                style = plot.model_style(i)
                style["linestyle"] = dash
                plot.band(ax, xs, rows, f"{text}: {label(rest, key)}", **style)
        ax.set_xlabel("layers L (reference: L steps)")
        plot.integer_ticks(ax)
        ax.set_ylabel(name)
        ax.set_title(name, fontsize=9)
        if what != "cos":
            plot.log_if_positive(ax)
        ax.grid(alpha=0.3)
    r.figure(plot.save(fig, r.outdir, "alignment.png", "Alignment with GD and GD++ ([VO23])"),
             "Alignment with GD and GD++",
             "Trained transformer against L steps of GD (solid), GD++ (dashed) and tied GD++ (dotted) on the evaluation tasks: "
             "prediction difference, cosine and L2 distance of the sensitivities d yhat / d x_query (1 = "
             "identical direction), mean over replicas.", "alignment")


# The out-of-distribution curves (analysis.hpp, OodScales): axis, x label, title, the training value's x
# ("n": the point's context length; None: the axis has none).
OOD_CURVES = (("ood_alpha", "input scale alpha (x -> alpha x)", "Input scale", 1.0),
              ("ood_teacher", "teacher scale alpha (w -> alpha w)", "Teacher scale", 1.0),
              ("ood_other", "input range alpha of the other laws (|X_context|_F = alpha)", "Other input laws", None),
              ("ood_other_teacher", "teacher scale alpha, other input laws at range 1", "Other input laws, teacher scale", 1.0),
              ("ood_context", "context length M", "Context length", "n"))


MAX_OOD_ROWS = 8   # ood_grid draws at most this many conditions (icl-report --where picks others)


def _ood_references(r, idx):
    """The references of a condition's out-of-distribution curves: L-step GD, and for L > 1 GD++, tied for
    recurrent models (as [VO23]'s code compares them; files before tied GD++ had these curves: per-step)."""
    layers = int(r.sweep.points["layers"][idx[0]])
    tied = str(r.sweep.points["tie"][idx[0]]) == "true" and "ood_alpha_loss_gdpp_tied" in r.sweep.analysis_names
    return ("gd",) if layers == 1 else ("gd", "gdpp_tied" if tied else "gdpp")


def _ood_panel(r, ax, curve, idx, title, fontsize=9):
    """One out-of-distribution curve of one condition: the trained model and (where made) the interpolation,
    mean and range over replicas, beside its references, the training value in grey."""
    axis, xname, _, trained_at = curve
    xs = r.sweep.analysis(axis)[idx[0]]
    for ref in _ood_references(r, idx):
        plot.baseline_line(ax, xs, stats(r.scale(r.sweep.analysis(f"{axis}_loss_{ref}")[idx]))[0], ref)
    plot.band(ax, xs, r.scale(r.sweep.analysis(f"{axis}_loss_tf")[idx]), "trained", **plot.model_style(0))
    interp = r.sweep.analysis(f"{axis}_loss_interp")
    if interp.shape[1] and np.isfinite(interp[idx]).any():
        plot.band(ax, xs, r.scale(interp[idx]), "interpolated", **plot.model_style(1))
    if trained_at is not None:
        ax.axvline(r.sweep.points["n"][idx[0]] if trained_at == "n" else trained_at, color="#aaaaaa", linewidth=4,
                   alpha=0.5, label="training value")
    ax.set_xlabel(xname, fontsize=fontsize)
    ax.set_ylabel(f"loss ({r.scale.name})")
    ax.set_title(title, fontsize=fontsize)
    ax.set_xscale("log", base=2)
    plot.log_if_positive(ax)
    ax.grid(alpha=0.3)


def ood_grid(r):
    """[VO23] Fig. 6: a row per condition, a column per out-of-distribution curve at the training length."""
    curves = [c for c in OOD_CURVES if c[3] != "n" and c[0] in r.sweep.analysis_names]
    if not curves:
        return
    rest = [a for a in r.view.axes if a != "replica"]
    groups = list(r.view.groups(rest).items())[:MAX_OOD_ROWS]
    fig, axes = plot.panels(len(groups) * len(curves), columns=len(curves))
    for row, (key, idx) in enumerate(groups):
        for col, curve in enumerate(curves):
            _ood_panel(r, axes[row * len(curves) + col], curve, idx,
                       f"{curve[2]}: {label(rest, key)}" if rest else curve[2], fontsize=8)
    r.figure(plot.save(fig, r.outdir, "ood_grid.png", "Out of distribution: every curve ([VO23] Fig. 6)"),
             "Out of distribution: every curve ([VO23] Fig. 6)",
             "A row per condition (at most 8; icl-report --where picks others), a column per curve at the training "
             "length: input scale, teacher scale, [VO23]'s other input laws (exponential, normal or Laplace per task, "
             "the context scaled to Frobenius norm alpha) and the same with the teacher scaled. Trained model and "
             "interpolation: mean over replicas, range shaded; dashed: L-step GD and GD++ (tied GD++ for recurrent "
             f"models), each through the model's act_clip. {r.scale.note}", "ood")


def out_of_distribution(r):
    """Each out-of-distribution curve (input and teacher scale, [VO23]'s other input laws, context length) for
    the deepest models, GD and GD++."""
    for curve in OOD_CURVES:
        axis, title = curve[0], curve[2]
        if axis not in r.sweep.analysis_names:
            continue
        groups = r.view.groups(r.view.axes)
        layers = r.sweep.points["layers"]
        deepest = layers[r.view.mask].max()
        groups = {k: v for k, v in groups.items() if layers[v[0]] == deepest}
        if not groups:
            continue
        groups = dict(list(groups.items())[:9])
        fig, axes = plot.panels(len(groups))
        for ax, (key, idx) in zip(axes, groups.items()):
            _ood_panel(r, ax, curve, idx, label(r.view.axes, key) if r.view.axes else r.sweep_name)
        r.figure(plot.save(fig, r.outdir, f"{axis}.png", f"Out of distribution: {title.lower()}"),
                 f"Out of distribution: {title.lower()}",
                 f"The deepest trained models (L = {deepest}) against L-step GD and GD++ (tied GD++ for recurrent "
                 f"models) away from the training value (grey), mean over replicas. {r.scale.note}", "ood")
