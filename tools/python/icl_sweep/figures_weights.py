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


def _recurrent(r):
    """The points whose model is one single-head linear attention layer applied L times (recurrent, or one
    layer): `lsa`, or [VO23]'s transformer with linear attention on constructed tokens and nothing else
    (no MLP, LayerNorm, bias, embedding or positions; square keys)."""
    p = r.sweep.points

    def equals(option, value):   # False where a file (an older build's) lacks the option
        return p[option] == value if option in p else np.zeros(r.sweep.size, dtype=bool)
    once = (p["heads"] == 1) & ((p["tie"] == "true") | (p["layers"] == 1))
    bare = (equals("arch", "transformer") & equals("attention", "linear") & equals("attention_first", "same")
            & equals("tokens", "constructed") & equals("mlp", "false") & equals("layer_norm", "false")
            & equals("layer_norm_first", "false") & equals("bias", "false") & equals("embed", "none")
            & equals("pe", "none") & equals("key_size", p["d"] + 1))
    return r.view.mask & once & (equals("arch", "lsa") | bare)


def _products(r, i):
    """Layer 1's P = W_PV and Q = W_KQ of a point of _recurrent, in the lsa's column convention (Z <- Z + c P Z M
    Z^T Q Z): its own P, Q, or from the transformer's factors (row convention, x W): P = (W_V W_O)^T,
    Q = W_K W_Q^T. None if the point stored no weights."""
    w = r.sweep.weights(i)
    if w is None:
        return None
    if "P" in w:
        return w["P"][0, 0], w["Q"][0, 0]
    if "views" not in w:
        return None
    Q, P = _head_products(w, 1, int(r.sweep.points["d"][i]) + 1, products=True)[0]
    return P, Q


def gdpp_gamma(r):
    """[VO23] App. A.10: the GD++ gamma that trained recurrent models learned, read from their weights as
    App. A.3 corrects the scale (-mean diag P_xx * mean diag Q_xx = -w_xx, times the attention's c), against
    the gamma of tied GD++ tuned to its optimum, over the context length n; beside it, how far each model
    is from tied GD++'s loss (a model that has not reached it has not finished learning its gamma)."""
    p = r.sweep.points
    L = p["layers"]
    w_xx = r.sweep.analysis("v24_w_xx")
    tied_gamma = r.sweep.analysis("gdpp_tied_gamma")
    use = _recurrent(r) & (L >= 2) & np.isfinite(r.sweep.metrics.get("loss_gdpp_tied", np.full(r.sweep.size, np.nan)))
    if not use.any():
        return
    c = np.where(p["norm"] == "1/n", 1.0 / p["n"], 1.0) * np.where(p["residual"] == "1/L", 1.0 / L, 1.0)
    gamma = -w_xx[:, 0] * c if w_xx.shape[1] else np.full(r.sweep.size, np.nan)
    for i in np.flatnonzero(use & (p["arch"] == "transformer")):   # no w_xx: read from the factors
        P, Q = _products(r, i)
        gamma[i] = construction_residuals(P, Q)["gamma"]
    tuned = tied_gamma[np.arange(r.sweep.size), np.maximum(L - 1, 0)]
    gap = r.sweep.metrics["loss_tf"] / r.sweep.metrics["loss_gdpp_tied"] - 1
    beats_gd = r.sweep.metrics["loss_tf"] < r.sweep.metrics["loss_gd"]   # left the plateau ([VO23] App. A.11)
    rest = [a for a in r.view.axes if a not in ("n", "replica")]
    groups = {k: idx[use[idx]] for k, idx in r.view.groups(rest).items()}
    groups = {k: idx for k, idx in groups.items() if len(idx)}
    fig, (ax, gap_ax) = plot.panels(2, columns=2)
    for g, (key, idx) in enumerate(groups.items()):
        style = plot.model_style(g)
        name = f"{label(rest, key)}: " if rest else ""
        ns = np.unique(p["n"][idx])
        for reached, what in ((True, "trained, one marker per replica"),
                              (False, "trained, still on a plateau (not below L-step GD)")):
            j = idx[beats_gd[idx] == reached]
            if len(j):
                ax.plot(p["n"][j], gamma[j], color=style["color"], marker=style["marker"], linestyle="none",
                        markersize=5, alpha=0.8, label=f"{name}{what}",
                        markerfacecolor=style["color"] if reached else "none")
        ax.plot(ns, [np.mean(tuned[idx][p["n"][idx] == v]) for v in ns], color=style["color"], linestyle="--",
                linewidth=1.3, label=f"{name}tied GD++ tuned to its optimum")
        gap_ax.plot(p["n"][idx], gap[idx], color=style["color"], marker=style["marker"], linestyle="none",
                    markersize=4, alpha=0.7)
    for a in (ax, gap_ax):
        a.set_xlabel("context length n")
        a.set_xscale("log")
        plot.value_ticks(a, np.unique(p["n"][use]))
        a.grid(alpha=0.3)
    ax.set_yscale("log")
    ax.set_ylabel("gamma (x <- (I - gamma X X^T) x)")
    ax.set_title("GD++ gamma of the recurrent models", fontsize=9)
    if np.all(gap[use] > 0):
        gap_ax.set_yscale("log")
    else:
        gap_ax.set_yscale("symlog", linthresh=0.01)
    gap_ax.set_ylabel("loss / tied GD++'s loss - 1")
    gap_ax.set_title("distance from tied GD++'s loss", fontsize=9)
    r.figure(plot.save(fig, r.outdir, "gdpp_gamma.png", "[VO23] App. A.10: GD++ gamma of recurrent models"),
             "[VO23] App. A.10: GD++ gamma of recurrent models",
             "Left: gamma read from each trained recurrent model's weights as [VO23] App. A.3 corrects the scale "
             "(-mean diag P_xx times mean diag Q_xx, times the attention's c: the gamma of x <- (I - gamma X X^T) x "
             "with X X^T a plain sum), one marker per replica, and the gamma of tied GD++ tuned to its optimum "
             "(dashed, mean over replicas); hollow markers: models still on a plateau, not below L steps of GD at its "
             "tuned rate ([VO23] App. A.11's phase transitions). Right: each model's loss over tied GD++'s on the "
             "same tasks, minus 1.", "weights")


def scale_corrected(P, Q):
    """[VO23] App. A.3's correction of one layer's (single-head) P = W_PV and Q = W_KQ: beta = the mean of Q's
    x-block diagonal; returns (P * beta, Q / beta, beta)."""
    beta = float(np.mean(np.diag(Q)[:-1]))
    return P * beta, Q / beta, beta


def construction_residuals(P, Q):
    """How far the corrected products are from the construction (App. A.1, A.10): Q / beta against
    diag(I_d, 0) and P * beta against diag(p_x I_d, p_y) with p_x its mean x-block diagonal, each as
    |difference|_F over |construction|_F, P also over its label row alone (the only row a 1-layer model's
    prediction uses); and the construction's gamma = -p_x, eta = -p_y."""
    Pc, Qc, beta = scale_corrected(P, Q)
    d = P.shape[0] - 1
    q0 = np.diag(np.r_[np.ones(d), 0.0])
    p_x, p_y = float(np.mean(np.diag(Pc)[:-1])), float(Pc[-1, -1])
    p0 = np.diag(np.r_[np.full(d, p_x), p_y])
    return dict(beta=beta, gamma=-p_x, eta=-p_y, residual_q=float(np.linalg.norm(Qc - q0) / np.linalg.norm(q0)),
                residual_p=float(np.linalg.norm(Pc - p0) / np.linalg.norm(p0)),
                residual_p_label=float(np.linalg.norm(Pc[-1] - p0[-1]) / abs(p_y)))


def construction_heatmaps(r):
    """[VO23] Fig. 9: a recurrent single-head model's W_KQ = Q and W_PV = P after App. A.3's scale correction
    (one replica per condition), beside the construction's distance; construction.csv for every such point."""
    p = r.sweep.points
    rows, shown = [], {}
    rest = [a for a in r.view.axes if a != "replica"]
    for i in np.flatnonzero(_recurrent(r)):
        w = _products(r, i)
        if w is None:
            continue
        c = construction_residuals(*w)
        rows.append([int(i)] + [str(p[a][i]) for a in rest] + [int(p["replica"][i])] +
                    [f"{c[k]:.4g}" for k in ("beta", "gamma", "eta", "residual_q", "residual_p", "residual_p_label")])
        shown.setdefault(tuple(p[a][i] for a in rest), (i, w, c))
    if not rows:
        return
    r.table("construction", "[VO23] App. A.3: recurrent models' layer 1 after the scale correction, against the "
            "construction", ["point"] + rest + ["replica", "beta", "gamma", "eta", "|Q/beta - Q0|/|Q0|",
                                                "|P beta - P0|/|P0|", "label row"], rows,
            "beta = mean x-block diagonal of Q; gamma, eta: minus the corrected P's mean x-block diagonal and "
            "its label entry (x <- x - gamma X X^T x, y_q <- y_q - eta sum y_i <x_i, x_q> in the model's units); "
            "the residuals: Q / beta against diag(I, 0), P beta against diag(-gamma I, -eta), relative (Frobenius), and P's "
            "label row alone (a 1-layer model's x rows of P never act on its prediction).")
    shown = list(shown.items())[:MAX_HEATMAP_POINTS]
    fig, axes = plot.plt.subplots(len(shown), 2, figsize=(9, 3.4 * len(shown) + 1.0), squeeze=False)
    for row, (key, (i, w, c)) in enumerate(shown):
        Pc, Qc, _ = scale_corrected(*w)
        name = label(rest, key) if rest else r.sweep_name
        _heat(axes[row][0], Qc, f"{name}, replica {p['replica'][i]}: W_KQ / beta (|. - diag(I,0)| {c['residual_q']:.3f})")
        _heat(axes[row][1], Pc, f"W_PV * beta: gamma {c['gamma']:.3g}, eta {c['eta']:.3g} (residual {c['residual_p']:.3f})")
    r.figure(plot.save(fig, r.outdir, "construction.png", "[VO23] Fig. 9: trained weights after the scale correction"),
             "[VO23] Fig. 9: trained weights after the scale correction",
             "Layer 1 of a recurrent single-head model (one replica per condition): W_KQ = Q divided by beta, the mean "
             "of its x-block diagonal, and W_PV = P times beta ([VO23] App. A.3). The construction of 1 step of GD "
             "(App. A.1) is diag(I, 0) and diag(0, -eta); GD++ (App. A.10) adds -gamma on P's x-block diagonal. "
             "Tokens (x, y): the last row and column belong to y. Every such point in construction.csv.", "weights")


def _head_products(w, heads, D, products=False):
    """Per head of layer 1 of a transformer (row-vector convention: q = x W_Q): W_K W_Q^T (keys x queries, as
    [VO23]'s notebook draws it) and eta_h = (W_V W_O)[-1, -1], from the stored theta and its views; with
    `products`, (W_K W_Q^T, (W_V W_O)^T) in place of the pair."""
    views = {}
    for line in w["views"].splitlines():
        name, layer, offset, rows, cols = line.split()
        if int(layer) == 0:
            views[name] = w["theta"][int(offset):int(offset) + int(rows) * int(cols)].reshape(int(rows), int(cols))
    Wq, Wk, Wv, Wo = (views[f"attn.W{c}"] for c in "qkvo")
    k = Wq.shape[1] // heads
    out = []
    for h in range(heads):
        cols = slice(h * k, (h + 1) * k)
        kq, vo = Wk[:, cols] @ Wq[:, cols].T, Wv[:, cols] @ Wo[cols, :]
        out.append((kq, vo.T) if products else (kq, float(vo[D - 1, D - 1])))
    return out


def off_diagonal_ratio(M):
    """|off-diagonal|_F / |diagonal|_F of a square matrix."""
    diag = np.diag(np.diag(M))
    return float(np.linalg.norm(M - diag) / np.linalg.norm(diag))


def softmax_heads(r):
    """[VO23] Fig. 11 (App. A.9): a one-layer multi-head softmax model's W_K W_Q^T per head, times its
    eta_h = (W_V W_O)[-1, -1], and their sum: the heads' off-diagonal terms cancel in the sum."""
    p = r.sweep.points
    use = (r.view.mask & (p["arch"] == "transformer") & (p["attention"] == "softmax") & (p["heads"] >= 2)
           & (p["layers"] == 1) & (p["tokens"] == "constructed"))
    rows, shown = [], None
    for i in np.flatnonzero(use):
        w = r.sweep.weights(i)
        if w is None or "views" not in w:
            continue
        H = int(p["heads"][i])
        scaled = [kq * eta for kq, eta in _head_products(w, H, int(p["d"][i]) + 1)]
        ratios = [off_diagonal_ratio(M) for M in scaled] + [off_diagonal_ratio(sum(scaled))]
        rows.append([int(i), H, int(p["replica"][i])] + [f"{x:.3g}" for x in ratios])
        shown = shown or (i, scaled, ratios)
    if not rows:
        return
    H = max(int(x[1]) for x in rows)
    r.table("softmax_heads", "[VO23] Fig. 11: off-diagonal over diagonal of each head's eta_h W_K W_Q^T and of their sum",
            ["point", "heads", "replica"] + [f"head {h + 1}" for h in range(H)] + ["sum"],
            [x[:-1] + [""] * (H - x[1]) + x[-1:] for x in rows],   # heads beyond a point's own left empty
            "|off-diagonal|_F / |diagonal|_F of eta_h W_K,h W_Q,h^T (eta_h = (W_V,h W_O,h)[-1, -1]) per head of "
            "layer 1, and of the sum over heads ([VO23] App. A.9: the heads' off-diagonal terms cancel).")
    i, scaled, ratios = shown
    fig, axes = plot.plt.subplots(1, len(scaled) + 1, figsize=(4 * (len(scaled) + 1), 3.8), squeeze=False)
    for h, M in enumerate(scaled):
        _heat(axes[0][h], M, f"head {h + 1}: eta_h W_K W_Q^T (off/diag {ratios[h]:.2f})")
    _heat(axes[0][-1], sum(scaled), f"sum over heads (off/diag {ratios[-1]:.2f})")
    r.figure(plot.save(fig, r.outdir, "softmax_heads.png", f"[VO23] Fig. 11: softmax heads, point {i}"),
             "[VO23] Fig. 11: softmax heads and their sum",
             "A trained one-layer softmax model with several heads (the first such point): each head's W_K W_Q^T "
             "(rows: keys, columns: queries) times eta_h = (W_V W_O)[-1, -1], and the sum over heads, whose "
             "off-diagonal terms cancel ([VO23] App. A.9). Every such point in softmax_heads.csv.", "weights")
