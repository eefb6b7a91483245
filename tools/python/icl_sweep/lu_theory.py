"""icl-lu-theory OUT.h5 [-o DIR]: a task-diversity sweep (task_pool, train_contexts) of one-layer linear attention
against the asymptotic formulas of Lu, Letey, Zavatone-Veth, Maiti, Pehlevan 2024 ("Asymptotic theory of
in-context learning by linear attention"; official code Pehlevan-Group/icl-asymptotic, Linear/common.py and
fig67/resultsdump/testridgeless.py, transcribed here, ridgeless).

Their units: x ~ N(0, I/d), w ~ N(0, I), noise variance rho on every label (the query's too), context
l = alpha d, k = kappa d pool tasks, P = tau d^2 training contexts; errors unnormalised, including rho.  Ours:
x ~ N(0, I), noise std sigma, noiseless query label.  Hence alpha = n/d, rho = sigma^2/d, and our loss/d is
their error minus rho; this tool prints loss/d beside e - rho.  The formulas are d -> infinity limits: at
finite d the optimum of the same model class sits higher by O(1/d) (docs/reproductions.md); --finite-d N adds
that class's exact error at the sweep's own d (finite_d_errors: N draws of the pool and the training set, their
Fig2_Context_Length/largealpha.py protocol in our units)."""
import argparse
import math
import os
import sys

import h5py
import numpy as np


def wishart_stieltjes(x, kappa):
    """M_kappa(x) = lim (1/d) tr (W + x I)^-1, W = (1/k) sum_j w_j w_j^T (k = kappa d); M_inf(x) = 1/(1+x)."""
    if math.isinf(kappa):
        return 1.0 / (1.0 + x)
    a = x + 1.0 - 1.0 / kappa
    return 2.0 / (a + math.sqrt(a * a + 4.0 * x / kappa))


def errors(alpha, rho, kappa, tau):
    """(e_ICL, e_IDG) of the ridgeless optimum: fresh tasks, and pool tasks with fresh inputs.  tau = inf is
    online training on the pool; tau < 1 has no IDG formula in their code (returned as NaN)."""
    x = (1.0 + rho) / alpha
    m = wishart_stieltjes(x, kappa)
    k_star = 1.0 if math.isinf(kappa) else 1.0 / (1.0 - kappa * (m / (kappa + m)) ** 2)
    if math.isinf(tau):
        return k_star * (1 + x) * (x * m) ** 2 - 2 * m * x * x + x + rho, rho + x * (1 - x * m)
    if tau > 1:
        icl = ((k_star - 1 / (tau - 1)) * (1 + x) * (x * m) ** 2 + (3 - 2 * tau) / (tau - 1) * m * x * x
               + ((1 + rho) / (tau - 1) * m + 1) * x + rho * m / (tau - 1) + rho)
        return icl, tau / (tau - 1) * (rho + x * (1 - x * m))
    if tau < 1:
        mu = x * wishart_stieltjes(x, kappa / tau)
        icl = (tau * (1 + x) / (1 - tau) * (1 - tau * (1 - mu) ** 2 - (x - rho) / x * mu)
               - 2 * tau * (1 - mu) + rho + 1)
        return icl, float("nan")
    return float("inf"), float("inf")


# The exact finite-d error of their reduced model in our units (x ~ N(0, I), w ~ N(0, I) or a pool, noise
# variance sigma2 on context labels, noiseless query): y_hat = x_q^T G h, h = [s; q] (d+1), s = (1/n) sum y_i x_i,
# q = (1/n) sum y_i^2, G (d x (d+1)).  Over x_q ~ N(0, I) the error is E|G h - w|^2 = tr(G A G^T) - 2 tr(G B) +
# E|w|^2, A = E[h h^T], B = E[h w^T].  Given w (a = |w|^2 + sigma2; Gaussian moments, E[x y^3] = 3 a w):
#   E[s] = w, Cov s = (a I + w w^T)/n, E[q] = a, Var q = 2 a^2/n, Cov(s, q) = 2 a w/n, so
#   A(w) = [[(1 + 1/n) w w^T + a I/n, (1 + 2/n) a w], [., (1 + 2/n) a^2]],  B(w) = [[w w^T], [a w^T]].
# Over w ~ N(0, I): E[w w^T] = I, E[a] = d + sigma2, E[a w] = 0, E[a^2] = (d + sigma2)^2 + 2d.
def gamma_moments(n, sigma2, W=None, d=None):
    """(A, B, E|w|^2): the moments above averaged over the columns of W (d x K), or over w ~ N(0, I_d)."""
    if W is None:
        A = np.zeros((d + 1, d + 1))
        A[:d, :d] = (1 + (d + 1 + sigma2) / n) * np.eye(d)
        A[d, d] = (1 + 2 / n) * ((d + sigma2) ** 2 + 2 * d)
        B = np.vstack([np.eye(d), np.zeros((1, d))])
        return A, B, float(d)
    d, K = W.shape
    a = (W * W).sum(axis=0) + sigma2
    A = np.zeros((d + 1, d + 1))
    A[:d, :d] = (1 + 1 / n) * (W @ W.T) / K + a.mean() / n * np.eye(d)
    A[:d, d] = A[d, :d] = (1 + 2 / n) * (W @ a) / K
    A[d, d] = (1 + 2 / n) * (a * a).mean()
    B = np.vstack([W @ W.T / K, (W @ a)[None, :] / K])
    return A, B, float((W * W).sum() / K)


def gamma_error(G, n, sigma2, W=None):
    """loss/d of y_hat = x_q^T G h on fresh tasks (W None) or on the pool W's tasks with fresh inputs."""
    d = G.shape[0]
    A, B, ww = gamma_moments(n, sigma2, W, d)
    return (np.trace(G @ A @ G.T) - 2 * np.trace(G @ B) + ww) / d


def gamma_fit(d, n, sigma2, K, P, rng):
    """(G, W): the pool W (d x K, 0 = none) and G, the least-squares (ridgeless) fit on P contexts whose tasks are
    uniform from the pool; P = 0: the population optimum G = B^T A^-1 of the pool (their tau = inf)."""
    W = rng.standard_normal((d, K)) if K else None
    if not P:
        A, B, _ = gamma_moments(n, sigma2, W, d)
        return np.linalg.solve(A, B).T, W
    F, t = np.empty((P, d * (d + 1))), np.empty(P)
    for lo in range(0, P, 500):
        m = min(500, P - lo)
        w = W[:, rng.integers(0, K, m)].T if K else rng.standard_normal((m, d))
        x = rng.standard_normal((m, n + 1, d))
        y = np.einsum("mid,md->mi", x, w)
        y[:, :n] += np.sqrt(sigma2) * rng.standard_normal((m, n))
        h = np.concatenate([np.einsum("mi,mid->md", y[:, :n], x[:, :n]), (y[:, :n] ** 2).sum(1, keepdims=True)], 1) / n
        F[lo:lo + m] = (x[:, n, :, None] * h[:, None, :]).reshape(m, -1)
        t[lo:lo + m] = y[:, n]
    g = np.linalg.lstsq(F, t, rcond=None)[0]
    return g.reshape(d, d + 1), W


def finite_d_errors(d, n, sigma2, K, P, draws, seed=0):
    """Means and standard errors over draws of (fresh-task loss/d, pool-task loss/d) of their reduced model fitted
    at this d: Lu et al.'s finite-size protocol (Linear/Fig2_Context_Length/largealpha.py:21-36: a pool of k tasks,
    P = tau d^2 contexts, Gamma by ridge with lam -> 0, the error in closed form on fresh and pool tasks), with
    our data law (Gaussian pool tasks, noiseless query, each context's task uniform from the pool)."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(draws):
        G, W = gamma_fit(d, n, sigma2, K, P, rng)
        out.append((gamma_error(G, n, sigma2), gamma_error(G, n, sigma2, W) if K else np.nan))
    v = np.array(out)
    se = v.std(axis=0, ddof=1) / math.sqrt(draws) if draws > 1 else np.full(2, np.nan)
    return v.mean(axis=0), se


def point_setting(points, i):
    """(alpha, rho, kappa, tau, d) of point i, or None if it is not a noise-fixed linear-attention point."""
    text = lambda k: points[k][i].decode() if isinstance(points[k][i], bytes) else str(points[k][i])
    noise = text("noise")
    if not (noise.startswith("fixed:") or noise == "none"):
        return None
    d, n = int(points["d"][i]), int(points["n"][i])
    sigma = float(noise.split(":")[1]) if noise != "none" else 0.0
    M, P = int(points["task_pool"][i]), int(points["train_contexts"][i])
    return n / d, sigma * sigma / d, (M / d if M else math.inf), (P / d ** 2 if P else math.inf), d


def mean_se(v):
    """(mean, s.e.) of the finite entries of v (s.e. NaN with fewer than two)."""
    v = v[np.isfinite(v)]
    if not len(v):
        return float("nan"), float("nan")
    return float(v.mean()), (float(v.std(ddof=1) / math.sqrt(len(v))) if len(v) > 1 else float("nan"))


def main(argv=None):
    p = argparse.ArgumentParser(prog="icl-lu-theory", description=__doc__.split("\n")[0].split(": ", 1)[1])
    p.add_argument("file")
    p.add_argument("-o", "--outdir", help="also draw lu_theory.png here")
    p.add_argument("--finite-d", type=int, default=0, metavar="DRAWS",
                   help="also the exact error of their reduced model at the sweep's d, mean over DRAWS pools and "
                        "training sets (finite_d_errors; 0 = not computed)")
    a = p.parse_args(sys.argv[1:] if argv is None else argv)
    if not os.path.isfile(a.file):
        print(f"icl-lu-theory: option 'file' = '{a.file}': no such file", file=sys.stderr)
        return 2
    if a.finite_d < 0 or a.finite_d == 1:
        print(f"icl-lu-theory: option '--finite-d' = {a.finite_d}: 0 or at least 2 draws", file=sys.stderr)
        return 2
    with h5py.File(a.file, "r") as f:
        points = {k: v[:] for k, v in f["points"].items()}
        metrics = {k: v[:] for k, v in f["metrics"].items()}
    if "task_pool" not in points:
        print(f"icl-lu-theory: option 'file' = '{a.file}': written before task_pool existed", file=sys.stderr)
        return 2
    ok = points["status"].astype(str) == "ok"
    cells = {}
    for i in np.flatnonzero(ok):
        s = point_setting(points, i)
        if s is not None:
            cells.setdefault(s, []).append(i)
    pool = metrics.get("pool_loss_tf", np.full(len(ok), np.nan))
    rows = []
    fd_head = f"  {'finite-d fresh':>16} {'finite-d pool':>16}" if a.finite_d else ""
    print(f"{'d':>4} {'alpha':>6} {'rho':>7} {'kappa':>7} {'tau':>6} {'seeds':>5}  {'fresh loss/d':>16} {'theory':>7}  "
          f"{'pool loss/d':>16} {'theory':>7}{fd_head}")
    cell = lambda m, se: (f"{'':>16}" if not math.isfinite(m) else f"{m:8.4f} ± {se:5.4f}" if math.isfinite(se)
                          else f"{m:8.4f}        ")
    for (alpha, rho, kappa, tau, d), idx in sorted(cells.items(), key=lambda c: (c[0][4], c[0][0], c[0][2], c[0][3])):
        idx = np.array(idx)
        fresh, in_pool = mean_se(metrics["test_loss"][idx] / d), mean_se(pool[idx] / d)
        icl, idg = errors(alpha, rho, kappa, tau)
        fd = (np.full(2, np.nan), np.full(2, np.nan))
        if a.finite_d:
            n = int(round(alpha * d))
            K = 0 if math.isinf(kappa) else int(round(kappa * d))
            P = 0 if math.isinf(tau) else int(round(tau * d * d))
            fd = finite_d_errors(d, n, rho * d, K, P, a.finite_d, seed=n)
        fd_cols = f"  {cell(fd[0][0], fd[1][0])} {cell(fd[0][1], fd[1][1])}" if a.finite_d else ""
        print(f"{d:>4} {alpha:>6.3g} {rho:>7.4g} {kappa:>7.3g} {tau:>6.3g} {len(idx):>5}  {cell(*fresh)} {icl - rho:>7.4f}  "
              f"{cell(*in_pool)} {idg - rho:>7.4f}{fd_cols}")
        rows.append(dict(alpha=alpha, kappa=kappa, tau=tau, rho=rho, d=d, fresh=fresh, pool=in_pool,
                         icl=icl - rho, idg=idg - rho, fd=fd))
    if a.outdir and rows:
        draw(a, rows)
    return 0


def draw(a, rows):
    """lu_theory.png: ours (mean ± s.e.) and the finite-d curve against the swept variable, with their d -> inf
    formulas on a dense grid (the other variables as in the first cell)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    os.makedirs(a.outdir, exist_ok=True)
    along = next((v for v in ("alpha", "tau") if len({r[v] for r in rows}) > 1), "kappa")
    rows.sort(key=lambda r: r[along])
    finite = [r[along] for r in rows if math.isfinite(r[along])]
    inf_x = 4 * max(finite) if finite else 1.0
    x = np.array([r[along] if math.isfinite(r[along]) else inf_x for r in rows])
    fig, ax = plt.subplots(figsize=(6.4, 4.4))
    for key, fd_i, mark, color, label in (("fresh", 0, "o", "#1f77b4", "fresh tasks (ICL)"),
                                         ("pool", 1, "s", "#6a3d9a", "pool tasks (IDG)")):
        m = np.array([r[key][0] for r in rows])
        if not np.isfinite(m).any():
            continue
        se = np.nan_to_num(np.array([r[key][1] for r in rows]))
        ax.errorbar(x, m, yerr=se, fmt=mark + "-", color=color, capsize=3, label=f"trained, {label}")
        f = np.array([r["fd"][0][fd_i] for r in rows])
        if np.isfinite(f).any():
            fse = np.nan_to_num(np.array([r["fd"][1][fd_i] for r in rows]))
            ax.errorbar(x, f, yerr=fse, fmt=mark, mfc="none", ls=":", color=color, capsize=2,
                        label=f"their reduced model at d = {rows[0]['d']}, {label.split(' (')[0]}")
    r0 = rows[0]
    # An alpha sweep's theory runs on to alpha = 1,000, the end of their grid (Fig2_Context_Length/alpha.sh:16),
    # where finite tau makes the fresh-task error rise again.
    hi = max(max(finite), 1000.0) if along == "alpha" and finite else max(finite, default=1.0)
    dense = np.geomspace(min(finite), hi, 400) if finite else np.array([])
    curve = [errors(v if along == "alpha" else r0["alpha"], r0["rho"], v if along == "kappa" else r0["kappa"],
                    v if along == "tau" else r0["tau"]) for v in dense]
    ax.plot(dense, [c[0] - r0["rho"] for c in curve], "--", color="#1f77b4", label="Lu et al. theory (d -> inf), ICL")
    if any(np.isfinite(c[1]) for c in curve):
        ax.plot(dense, [c[1] - r0["rho"] for c in curve], "--", color="#6a3d9a", label="Lu et al. theory, IDG")
    if len(finite) < len(rows):   # the infinite end
        ax.plot([inf_x], [rows[-1]["icl"]], "x", color="#1f77b4", markersize=8)
    ax.set_xscale("log")
    ax.set_yscale("log")
    top = np.nanmax([r["fresh"][0] for r in rows] + [r["pool"][0] for r in rows])
    ax.set_ylim(top=3 * top)   # the ridgeless peak is infinite at tau = 1
    names = {"tau": "tau (P/d^2)", "kappa": "kappa (M/d)", "alpha": "alpha (n/d)"}
    ax.set_xlabel(names[along] + ("; rightmost: inf" if len(finite) < len(rows) else ""))
    ax.set_ylabel("loss / d (noiseless query)")
    fixed = ", ".join(f"{v} = {r0[v]:.3g}" for v in ("alpha", "kappa", "tau", "rho") if v != along)
    ax.set_title(f"{os.path.basename(a.file)}: d = {r0['d']}, {fixed}", fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    out = os.path.join(a.outdir, "lu_theory.png")
    fig.savefig(out, dpi=110)
    print(f"\nicl-lu-theory: wrote {out}")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
