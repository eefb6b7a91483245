"""Fu et al. 2023's per-layer comparison with iterative Newton (their heat maps, src/eval_similarity.py): for
the deepest trained models of each condition, the similarity of each layer's errors with those of Newton
steps k = 0..K_max as a heat map, replicas averaged, the best-matching step of each layer boxed; for causal
models read out by probes, the same against their gradient descent grid, and their "over layers" plot of the
best match per method."""
import numpy as np
from matplotlib.patches import Rectangle

from . import plot
from .groups import label

MAX_PANELS = 9


def _deepest(r, metric, min_layers):
    """(series, per condition the indices of its deepest models that have `metric`, the condition axes); None if
    no point has it."""
    sim = r.sweep.analysis(metric)
    layers = r.sweep.points["layers"]
    if not sim.shape[1]:
        return None
    has = r.view.mask & np.isfinite(sim).any(axis=1) & (layers >= min_layers)
    if not has.any():
        return None
    axes = [a for a in r.view.axes if a != "layers"]
    groups = {}
    for key, idx in r.view.groups(axes).items():
        idx = idx[has[idx]]
        if len(idx):
            groups[key] = idx[layers[idx] == layers[idx].max()]
    return sim, dict(list(groups.items())[:MAX_PANELS]), axes


def _per_layer(sim, idx, L):
    """The rows idx of an L x columns series as (replica, layer, column); the columns from the finite entries
    (the rest of a row is NaN padding)."""
    columns = np.isfinite(sim[idx[0]]).sum() // L
    return sim[idx, :L * columns].reshape(len(idx), L, columns)


def _frame(r, ax, axes, key, idx, L, ylabel):
    """A panel's labels, layer ticks and title (its condition, depth and replicas)."""
    ax.set_xlabel("layer l")
    ax.set_ylabel(ylabel)
    ax.set_xticks(range(1, L + 1))
    title = label(axes, key) if axes else r.sweep_name
    ax.set_title(f"{title}; L = {L}, {len(idx)} replica(s)", fontsize=9)


def _heat_maps(r, metric, min_layers, ylabel="Newton step k", step_labels=None):
    """Per condition, the deepest models' `metric` (L x columns per point) as a heat map; None if no point has it.
    step_labels: what column c stands for (default c itself)."""
    found = _deepest(r, metric, min_layers)
    if found is None:
        return None
    sim, groups, axes = found
    layers = r.sweep.points["layers"]
    fig, panels = plot.panels(len(groups), width=5.0, height=3.8)
    for ax, (key, idx) in zip(panels, groups.items()):
        L = int(layers[idx[0]])
        grid = np.nanmean(_per_layer(sim, idx, L), axis=0)
        steps = grid.shape[1]
        K_max = steps - 1
        image = ax.imshow(grid.T, origin="lower", aspect="auto", cmap="viridis", vmin=0, vmax=1,
                          extent=(0.5, L + 0.5, -0.5, K_max + 0.5))
        for l, k in enumerate(np.nanargmax(grid, axis=1)):
            ax.add_patch(Rectangle((l + 0.5, k - 0.5), 1, 1, fill=False, edgecolor="red", lw=1.5))
        _frame(r, ax, axes, key, idx, L, ylabel)
        if step_labels is not None:
            ax.set_yticks(range(steps), [str(v) for v in step_labels[:steps]], fontsize=7)
        fig.colorbar(image, ax=ax, label="cosine of the errors")
    return fig


def _heat_map_figure(r, metric, min_layers, name, title, caption, **axes_labels):
    """The heat maps of `metric` as figure `name`, if any point has it."""
    fig = _heat_maps(r, metric, min_layers, **axes_labels)
    if fig is not None:
        r.figure(plot.save(fig, r.outdir, name, title), title, caption, "layers")


def newton_similarity(r):
    _heat_map_figure(
        r, "newton_similarity", 2, "newton_similarity.png", "Layers against iterative Newton (Fu et al. 2023)",
        "Cosine similarity, over the evaluation tasks, of the errors of each layer's readout of the deepest "
        "trained models and of k steps of iterative Newton (k = 0: its initialisation), replicas averaged; "
        "red: each layer's best-matching step. Fu et al. average a per-task cosine over the prefix positions "
        "of a causal model read out by a trained probe per layer (probe_newton_similarity.png where the "
        "sweep has such models); the LSA predicts only the query.")


def probe_newton_similarity(r):
    _heat_map_figure(
        r, "probe_newton_similarity", 1, "probe_newton_similarity.png",
        "Layers' probes against iterative Newton, Fu et al.'s metric",
        "Causal transformers trained at every prefix: per layer a least-squares linear probe of its output at "
        "every x token; the cosine between a task's vector of probe errors over the prefixes and that of k "
        "steps of iterative Newton on the same prefixes, averaged over 2,000 fresh tasks (Fu et al. 2023, "
        "src/eval_similarity.py), the deepest models of each condition, replicas averaged; red: each "
        "layer's best-matching step.")


GD_STEPS = [2 ** c for c in range(13)]   # probe_gd_similarity's columns (probes.hpp: Fu et al.'s log grid)


def probe_gd_similarity(r):
    _heat_map_figure(
        r, "probe_gd_similarity", 1, "probe_gd_similarity.png",
        "Layers' probes against gradient descent, Fu et al.'s metric",
        "As probe_newton_similarity.png, against gradient descent from w = 0 at rate 0.01 on half the prefix's "
        "summed squared error after 2^0 .. 2^12 steps (Fu et al.'s log grid, src/eval_similarity.py; they find "
        "that each further layer needs exponentially more GD steps).",
        ylabel="GD steps (rate 0.01)", step_labels=GD_STEPS)


def probe_over_layers(r):
    """Fu et al.'s "over layers" plot: per layer the similarity with the best-matching Newton step, the
    best-matching GD step count and least squares, mean and standard error over replicas."""
    found = _deepest(r, "probe_newton_similarity", 1)
    if found is None:
        return
    _, groups, axes = found
    layers = r.sweep.points["layers"]
    series = {"Newton (best step)": "probe_newton_similarity", "GD (best step count)": "probe_gd_similarity",
              "least squares": "probe_ols_similarity"}
    fig, panels = plot.panels(len(groups), width=5.0, height=3.8)
    for ax, (key, idx) in zip(panels, groups.items()):
        L = int(layers[idx[0]])
        for name, metric in series.items():
            best = np.nanmax(_per_layer(r.sweep.analysis(metric), idx, L), axis=2)   # replica x layer
            mean = best.mean(axis=0)
            se = best.std(axis=0, ddof=1) / np.sqrt(len(idx)) if len(idx) > 1 else np.zeros(L)
            ax.errorbar(range(1, L + 1), mean, yerr=se, marker="o", ms=3, capsize=2, label=name)
        _frame(r, ax, axes, key, idx, L, "cosine of the errors")
    title = "Layers' probes: the best match per method, Fu et al.'s over-layers plot"
    r.figure(plot.save(fig, r.outdir, "probe_over_layers.png", title), title,
             "Per layer of the deepest causal models, the cosine of its probe's errors with those of the "
             "best-matching Newton step, the best-matching GD step count (rate 0.01, 2^0 .. 2^12) and minimum-norm "
             "least squares (Fu et al. 2023, the first version of src/eval_similarity.py, over_layers.pdf, whose GD "
             "curve takes the best step of a linear grid 1, 50, .., 1300); mean and standard error over replicas "
             "(the best step chosen per replica).", "layers")
