"""Fu et al. 2023's per-layer comparison with iterative Newton (their heat maps, src/eval_similarity.py): for
the deepest trained models of each condition, the similarity of each layer's errors with those of Newton
steps k = 0..K_max as a heat map, replicas averaged, the best-matching step of each layer boxed."""
import numpy as np
from matplotlib.patches import Rectangle

from . import plot
from .groups import label

MAX_PANELS = 9


def newton_similarity(r):
    sim = r.sweep.analysis("newton_similarity")
    layers = r.sweep.points["layers"]
    if not sim.shape[1]:
        return
    has = r.view.mask & np.isfinite(sim).any(axis=1) & (layers > 1)
    if not has.any():
        return
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
    r.figure(plot.save(fig, r.outdir, "newton_similarity.png", "Layers against iterative Newton (Fu et al. 2023)"),
             "Layers against iterative Newton (Fu et al. 2023)",
             "Cosine similarity, over the evaluation tasks, of the errors of each layer's readout of the deepest "
             "trained models and of k steps of iterative Newton (k = 0: its initialisation), replicas averaged; "
             "red: each layer's best-matching step. Fu et al. average a per-task cosine over the prefix positions "
             "of a causal model read out by a trained probe per layer; the LSA predicts only the query.", "layers")
