"""Bordelon, Letey, Pehlevan 2025 (arXiv 2510.01098): the loss of deep models with the 1/L residual against the
context's alpha = n/d, one line per depth, beside L steps of GD at its tuned rate on the same evaluation tasks
and the d -> inf theory of their reduced model (depth_theory): the ISO curve at every alpha, the RRS limit at
alpha -> inf (in ISO and FS that limit is 0 at every depth)."""
import numpy as np

from . import depth_theory, plot
from .groups import label
from .lu_theory import mean_se


def _setting(p, i):
    """'ISO', 'FS' or 'RRS' for the noiseless Gaussian laws the theory covers, else None."""
    if p["x_dist"][i] != "gaussian" or p["w_prior"][i] != "identity" or p["noise"][i] != "none":
        return None
    cov = p["cov"][i]
    return "ISO" if cov == "identity" else "RRS" if cov.startswith("rotated_per_task:") else \
        "FS" if cov.startswith("rotated:") else None


def _spectrum(cov):
    return np.array([float(v) for v in cov.split(":", 1)[1].split(",")])


def _gamma(r, i):
    """The shared preconditioner of a tied `sparse_a` model: the GD step is w <- w - (1/L) Gamma S (w - w*)."""
    w = r.sweep.weights(i)
    if w is None:
        return None
    d = int(r.sweep.points["d"][i])
    return -w["P"][0, 0, d, d] * w["Q"][0, 0, :d, :d]


def _symmetry(r, j, setting):
    """Over the replicas j of a tied model: the antisymmetric share |G - G^T| / |G + G^T| of Gamma, and the loss
    of Gamma's symmetric part alone over Gamma's, both on the same Monte Carlo contexts (ISO and RRS, whose laws
    any rotation leaves unchanged); means over the replicas."""
    p = r.sweep.points
    shares, ratios = [], []
    for i in j:
        G = _gamma(r, i)
        if G is None:
            continue
        shares.append(np.linalg.norm(G - G.T) / np.linalg.norm(G + G.T))
        spectrum = _spectrum(p["cov"][i]) if setting == "RRS" else None
        L, n = int(p["layers"][i]), int(p["n"][i])
        ratios.append(depth_theory.reduced_loss(0.5 * (G + G.T), L, n, spectrum, seed=int(i))[0] /
                      depth_theory.reduced_loss(G, L, n, spectrum, seed=int(i))[0])
    return (np.mean(shares), np.mean(ratios)) if shares else (np.nan, np.nan)


def _baseline(m, setting):
    """L steps of GD at its tuned rate; in FS preconditioned by the true Sigma^-1, which the shared Gamma can learn."""
    return ("loss_pgd", "L-step GD preconditioned by Sigma^-1 (FS)") if setting == "FS" and "loss_pgd" in m \
        else ("loss_gd", "L-step GD")


def _condition(r, j, setting, tied, L, alpha):
    """One row of depth_alpha.csv: the replicas j of one (condition, n, L)."""
    p, m = r.sweep.points, r.sweep.metrics
    d = int(p["d"][j[0]])
    tf, se = mean_se(r.scale(m["loss_tf"][j]))
    k = int(np.isfinite(m["loss_tf"][j]).sum())
    base = m[_baseline(m, setting)[0]][j]
    ratio, ratio_se = mean_se(m["loss_tf"][j] / base)
    iso = r.scale(np.array([d * depth_theory.iso_loss(int(L), alpha)[1]]))[0] if setting == "ISO" else np.nan
    share, symmetric = _symmetry(r, j, setting) if tied and setting in ("ISO", "RRS") else (np.nan, np.nan)
    return [d, round(alpha * d), f"{alpha:g}", int(L), k, tf, se, mean_se(r.scale(base))[0], iso, ratio, ratio_se,
            share, symmetric]


def _panel(r, ax, idx, title, rows):
    p, m = r.sweep.points, r.sweep.metrics
    d = int(p["d"][idx[0]])
    setting = _setting(p, idx[0]) if len(np.unique(p["d"][idx])) == 1 else None
    tied = p["tie"][idx[0]] == "true" and p["param"][idx[0]] == "sparse_a"
    alphas = np.unique(p["n"][idx]) / d
    for i, L in enumerate(np.unique(p["layers"][idx])):
        style = plot.model_style(i)
        at = [idx[(p["layers"][idx] == L) & (p["n"][idx] == round(a * d))] for a in alphas]
        cells = [_condition(r, j, setting, tied, L, a) for j, a in zip(at, alphas)]
        rows += [[title] + c for c in cells]
        tf, se, base, iso = (np.array([c[col] for c in cells]) for col in (5, 6, 7, 8))
        ax.errorbar(alphas, tf, yerr=se, color=style["color"], marker=style["marker"], markersize=4, linewidth=1.6,
                    capsize=2, label=f"trained, L = {L}")
        ax.plot(alphas, base, color=style["color"], linestyle="--", linewidth=1.1,
                label=f"{_baseline(m, setting)[1]} at its tuned rate (dashed)")
        if setting == "ISO":
            ax.plot(alphas, iso, color=style["color"], linestyle=":", linewidth=1.1,
                    label="reduced model, d -> inf (dotted)")
        if setting == "RRS" and tied:
            limit = depth_theory.rotated_limit(_spectrum(p["cov"][idx[0]]), int(L))[1]
            ax.plot([alphas[-1] * 1.3, alphas[-1] * 2.0], r.scale(np.array([limit, limit])), color=style["color"],
                    linewidth=2.5, label="reduced model with gamma I, alpha -> inf (bar at the right)")
    ax.set_xscale("log")
    ax.set_yscale("log")
    plot.value_ticks(ax, alphas)
    ax.set_xlabel("alpha = n / d")
    ax.set_ylabel(f"test loss ({r.scale.name})")
    ax.set_title(f"{setting}: {title}" if setting else title, fontsize=9)
    ax.grid(alpha=0.3)


def depth_alpha(r):
    p = r.sweep.points
    use = r.view.mask & (p["residual"] == "1/L")
    if len(np.unique(p["n"][use])) < 2 or len(np.unique(p["layers"][use])) < 2:
        return
    axes = [a for a in r.view.axes if a not in ("n", "layers", "replica")]
    groups = {k: idx[use[idx]] for k, idx in r.view.groups(axes).items()}
    groups = {k: idx for k, idx in groups.items() if len(idx)}
    fig, panels = plot.panels(len(groups))
    rows = []
    for ax, (key, idx) in zip(panels, groups.items()):
        _panel(r, ax, idx, label(axes, key), rows)
    title = "Loss against alpha per depth (Bordelon et al. 2025)"
    r.figure(plot.save(fig, r.outdir, "depth_alpha.png", title), title,
             "Trained models with the 1/L residual (mean ± s.e. over replicas), L steps of GD at its tuned rate on "
             "the same evaluation tasks (dashed; in FS preconditioned by the true Sigma^-1), and the reduced model "
             "of Bordelon et al. (one preconditioner shared by the layers: param = sparse_a, tie = true) in the "
             "d -> inf limit at the same alpha (ISO, dotted; tools/python/icl_sweep/depth_theory.py) and at "
             "alpha -> inf with Gamma = gamma I (RRS, bars at the right; 0 in ISO and FS at every depth). At small "
             "d and large L the mean over contexts is ruled by the rare contexts whose top eigenvalue passes 2L / gamma, "
             "where L steps at one rate blow up; the theory is the d -> inf law, which the median follows first "
             "(depth_theory.iso_finite_d). " + r.scale.note, "layers")
    r.table("depth_alpha", "Loss against alpha per depth",
            ["condition", "d", "n", "alpha", "L", "replicas", "trained", "s.e.", "L-step GD, tuned rate",
             "theory, d -> inf (ISO)", "trained / GD", "s.e. of trained / GD", "Gamma antisymmetric share",
             "symmetric part / Gamma (Monte Carlo)"],
            rows,
            "Mean and standard error over replicas of the trained loss; L-step GD at its tuned rate (in FS "
            "preconditioned by the true Sigma^-1; mean over the replicas' evaluation sets); the ISO reduced "
            "model's d -> inf loss at the same alpha; the trained loss over GD's on the same evaluation tasks, mean "
            "and s.e. over replicas. For tied sparse_a models in ISO and RRS: |G - G^T| / |G + G^T| of the shared "
            "preconditioner G (mean over replicas), and the loss of its symmetric part (G + G^T) / 2 alone over G's "
            "on the same 4,000 Monte Carlo contexts per replica (above 1: the antisymmetric part helps, and the "
            "layers are more than GD at one rate). " + r.scale.note)
