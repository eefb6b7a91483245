"""What the trained weights are: heatmaps of P, Q and Sigma^1/2 A_l Sigma^1/2 ([A23]), the learned
preconditioners' distance to a multiple of the identity, and [V24]'s per-layer w-scalars."""
import numpy as np

from . import plot
from .groups import label, model_label

MAX_HEATMAP_POINTS = 6


def _deepest_per_group(r):
    """{group key: point indices} at each group's deepest L, groups over the varied axes but layers."""
    rest = [a for a in r.view.axes if a != "layers"]
    layers = r.sweep.points["layers"]
    out = {}
    for key, idx in r.view.groups(rest).items():
        out[key] = idx[layers[idx] == layers[idx].max()]
    return rest, out


def _heat(ax, matrix, title):
    limit = np.nanmax(np.abs(matrix)) or 1.0
    image = ax.imshow(matrix, cmap="RdBu_r", vmin=-limit, vmax=limit)
    ax.set_title(title, fontsize=8)
    ax.set_xticks([])
    ax.set_yticks([])
    plot.plt.colorbar(image, ax=ax, fraction=0.046, pad=0.03).ax.tick_params(labelsize=6)


def weight_heatmaps(r):
    """One figure per representative point: per layer, P and Q of head 1 and Sigma^1/2 A_l Sigma^1/2."""
    rest, groups = _deepest_per_group(r)
    whitened = r.sweep.analysis("precond_whitened")
    sigma = r.sweep.analysis("sigma")
    for n, (key, idx) in enumerate(list(groups.items())[:MAX_HEATMAP_POINTS]):
        i = idx[0]
        w = r.sweep.weights(i)
        if w is None or "P" not in w:   # arch = transformer stores theta only
            continue
        L, H, D, _ = w["P"].shape
        d = D - 1
        fig, axes = plot.plt.subplots(L, 4, figsize=(11, 2.5 * L + 0.6), squeeze=False)
        for l in range(L):
            _heat(axes[l][0], w["P"][l, 0], f"layer {l + 1}: P (head 1 of {H})")
            _heat(axes[l][1], w["Q"][l, 0], f"layer {l + 1}: Q (head 1 of {H})")
            if whitened.shape[1] >= (l + 1) * d * d:
                _heat(axes[l][2], whitened[i, l * d * d:(l + 1) * d * d].reshape(d, d),
                      f"layer {l + 1}: Sigma^1/2 A_l Sigma^1/2")
            else:
                axes[l][2].set_visible(False)
            if l == 0 and sigma.shape[1] >= d * d:
                _heat(axes[l][3], sigma[i, :d * d].reshape(d, d), "input covariance Sigma")
            else:
                axes[l][3].set_visible(False)
        title = f"Learned weights, point {i}: {label(rest, key) if rest else r.sweep_name}"
        name = plot.save(fig, r.outdir, f"weights_{n + 1}.png", title)
        r.figure(name, title,
                 "P and Q of each layer (tokens (x, y): the last row and column belong to y), and the gauge-free "
                 "product A_l (P corner times Q block, summed over heads) whitened by Sigma. [A23]: for sparse_a "
                 "it tends to a_l times the identity; our sign: A_l is minus the preconditioner.", "weights")


def preconditioners(r):
    """[A23] Fig. 2: Dist(Sigma^1/2 A_l Sigma^1/2, I) and a_l per layer."""
    params = set(r.sweep.points["param"][r.view.mask])
    covs = set(r.sweep.points["cov"][r.view.mask])
    if not (params & {"sparse_a", "sparse_ab"} or covs - {"identity"}):
        return
    rest, groups = _deepest_per_group(r)
    groups = dict(list(groups.items())[:10])
    fig, axes = plot.panels(3)
    for ax, (series, name) in zip(axes, (("precond_dist_whitened", "Dist(Sigma^1/2 A_l Sigma^1/2, I)"),
                                         ("precond_dist", "Dist(A_l, I)"),
                                         ("precond_a", "a_l = -tr(Sigma^1/2 A_l Sigma^1/2) / d"))):
        values = r.sweep.analysis(series)
        for i, (key, idx) in enumerate(groups.items()):
            L = r.sweep.points["layers"][idx[0]]
            plot.band(ax, np.arange(1, L + 1), values[idx][:, :L], model_label(rest, key),
                      **plot.model_style(i))
        ax.set_xlabel("layer l")
        plot.integer_ticks(ax)
        ax.set_ylabel(name)
        ax.set_title(name, fontsize=9)
        if series.startswith("precond_dist"):
            ax.set_ylim(0, 1.02)   # Dist is in [0, 1]: 0 is a multiple of the identity
        ax.grid(alpha=0.3)
    r.figure(plot.save(fig, r.outdir, "preconditioners.png", "Learned preconditioners ([A23] Fig. 2)"),
             "Learned preconditioners",
             "Dist(M, I) = |M - (tr M / d) I|_F / |M|_F per layer (0: a multiple of the identity) and the "
             "scalar a_l with the paper's sign, deepest models, mean over replicas (band min-max).", "weights")


def v24_scalars(r):
    """[V24]: per-layer w_xx, w_xy, w_yx, w_yy (projected for full)."""
    if not np.isfinite(r.sweep.analysis("v24_w_xx")[r.view.mask]).any():
        return
    rest, groups = _deepest_per_group(r)
    groups = dict(list(groups.items())[:12])
    fig, axes = plot.panels(4, columns=4, width=4.2)
    for ax, w in zip(axes, ("xx", "xy", "yx", "yy")):
        values = r.sweep.analysis(f"v24_w_{w}")
        for i, (key, idx) in enumerate(groups.items()):
            L = r.sweep.points["layers"][idx[0]]
            plot.band(ax, np.arange(1, L + 1), values[idx][:, :L], model_label(rest, key),
                      **plot.model_style(i))
        ax.axhline(0, color="#888888", linewidth=0.8)
        ax.set_xlabel("layer l")
        plot.integer_ticks(ax)
        ax.set_ylabel(f"w_{w}")
        ax.set_title(f"w_{w}", fontsize=9)
        ax.grid(alpha=0.3)
    r.figure(plot.save(fig, r.outdir, "v24_scalars.png", "[V24] per-layer scalars"), "[V24] per-layer scalars",
             "x_i <- x_i + w_xx S x_i + w_xy y_i alpha; y_i <- y_i + w_yx <alpha, x_i> + w_yy lambda y_i "
             "(docs/science.md 2); diag and gdpp weights exactly, full weights projected; deepest models, mean "
             "over replicas.", "weights")
