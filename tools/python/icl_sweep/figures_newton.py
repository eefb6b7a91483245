"""Fu et al. 2023's per-layer comparison with iterative Newton (their heat maps, src/eval_similarity.py): for
the deepest trained models of each condition, the similarity of each layer's errors with those of Newton
steps k = 0..K_max as a heat map, replicas averaged, the best-matching step of each layer boxed."""
import numpy as np
from matplotlib.patches import Rectangle

from . import plot
from .groups import label

MAX_PANELS = 9


def _heat_maps(r, metric, min_layers):
    """Per condition, the deepest models' `metric` (L x (K_max + 1) per point) as a heat map; None if no point has it."""
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
    groups = dict(list(groups.items())[:MAX_PANELS])
    fig, panels = plot.panels(len(groups), width=5.0, height=3.8)
    for ax, (key, idx) in zip(panels, groups.items()):
        L = int(layers[idx[0]])
        steps = np.isfinite(sim[idx[0]]).sum() // L   # K_max + 1 per layer; the rest of the row is NaN padding
        K_max = steps - 1
        grid = np.nanmean(sim[idx, :L * steps].reshape(len(idx), L, steps), axis=0)
        image = ax.imshow(grid.T, origin="lower", aspect="auto", cmap="viridis", vmin=0, vmax=1,
                          extent=(0.5, L + 0.5, -0.5, K_max + 0.5))
        for l, k in enumerate(np.nanargmax(grid, axis=1)):
            ax.add_patch(Rectangle((l + 0.5, k - 0.5), 1, 1, fill=False, edgecolor="red", lw=1.5))
        ax.set_xlabel("layer l")
        ax.set_ylabel("Newton step k")
        ax.set_xticks(range(1, L + 1))
        title = label(axes, key) if axes else r.sweep_name
        ax.set_title(f"{title}; L = {L}, {len(idx)} replica(s)", fontsize=9)
        fig.colorbar(image, ax=ax, label="cosine of the errors")
    return fig


def newton_similarity(r):
    fig = _heat_maps(r, "newton_similarity", 2)
    if fig is None:
        return
    r.figure(plot.save(fig, r.outdir, "newton_similarity.png", "Layers against iterative Newton (Fu et al. 2023)"),
             "Layers against iterative Newton (Fu et al. 2023)",
             "Cosine similarity, over the evaluation tasks, of the errors of each layer's readout of the deepest "
             "trained models and of k steps of iterative Newton (k = 0: its initialisation), replicas averaged; "
             "red: each layer's best-matching step. Fu et al. average a per-task cosine over the prefix positions "
             "of a causal model read out by a trained probe per layer (probe_newton_similarity.png where the "
             "sweep has such models); the LSA predicts only the query.", "layers")


def probe_newton_similarity(r):
    fig = _heat_maps(r, "probe_newton_similarity", 1)
    if fig is None:
        return
    title = "Layers' probes against iterative Newton, Fu et al.'s metric"
    r.figure(plot.save(fig, r.outdir, "probe_newton_similarity.png", title), title,
             "Causal transformers trained at every prefix: per layer a least-squares linear probe of its output at "
             "every x token; the cosine between a task's vector of probe errors over the prefixes and that of k "
             "steps of iterative Newton on the same prefixes, averaged over 2,000 fresh tasks (Fu et al. 2023, "
             "src/eval_similarity.py), the deepest models of each condition, replicas averaged; red: each "
             "layer's best-matching step.", "layers")
