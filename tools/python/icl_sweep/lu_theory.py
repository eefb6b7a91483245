"""icl-lu-theory OUT.h5 [-o DIR]: a task-diversity sweep (task_pool, train_contexts) of one-layer linear attention
against the asymptotic formulas of Lu, Letey, Zavatone-Veth, Maiti, Pehlevan 2024 ("Asymptotic theory of
in-context learning by linear attention"; official code Pehlevan-Group/icl-asymptotic, Linear/common.py and
fig67/resultsdump/testridgeless.py, transcribed here, ridgeless).

Their units: x ~ N(0, I/d), w ~ N(0, I), noise variance rho on every label (the query's too), context
l = alpha d, k = kappa d pool tasks, P = tau d^2 training contexts; errors unnormalised, including rho.  Ours:
x ~ N(0, I), noise std sigma, noiseless query label.  Hence alpha = n/d, rho = sigma^2/d, and our loss/d is
their error minus rho; this tool prints loss/d beside e - rho.  The formulas are d -> infinity limits: at
finite d the optimum of the same model class sits higher by O(1/d) (docs/reproductions.md)."""
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


def main(argv=None):
    p = argparse.ArgumentParser(prog="icl-lu-theory", description=__doc__.split("\n")[0].split(": ", 1)[1])
    p.add_argument("file")
    p.add_argument("-o", "--outdir", help="also draw lu_theory.png here")
    a = p.parse_args(sys.argv[1:] if argv is None else argv)
    if not os.path.isfile(a.file):
        print(f"icl-lu-theory: option 'file' = '{a.file}': no such file", file=sys.stderr)
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
    print(f"{'d':>4} {'alpha':>6} {'rho':>7} {'kappa':>7} {'tau':>6} {'seeds':>5}  {'fresh loss/d':>16} {'theory':>7}  "
          f"{'pool loss/d':>16} {'theory':>7}")
    for (alpha, rho, kappa, tau, d), idx in sorted(cells.items(), key=lambda c: (c[0][4], c[0][0], c[0][2], c[0][3])):
        idx = np.array(idx)
        fresh, in_pool = metrics["test_loss"][idx] / d, pool[idx] / d
        icl, idg = errors(alpha, rho, kappa, tau)

        def cell(v):
            v = v[np.isfinite(v)]
            if not len(v):
                return f"{'':>16}"
            se = v.std(ddof=1) / math.sqrt(len(v)) if len(v) > 1 else float("nan")
            return f"{v.mean():8.4f} ± {se:5.4f}" if len(v) > 1 else f"{v.mean():8.4f}        "

        print(f"{d:>4} {alpha:>6.3g} {rho:>7.4g} {kappa:>7.3g} {tau:>6.3g} {len(idx):>5}  {cell(fresh)} {icl - rho:>7.4f}  "
              f"{cell(in_pool)} {idg - rho:>7.4f}")
        mean = lambda v: float(np.mean(v[np.isfinite(v)])) if np.isfinite(v).any() else float("nan")
        rows.append((kappa, tau, mean(fresh), mean(in_pool), icl - rho, idg - rho))
    if a.outdir and rows:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        os.makedirs(a.outdir, exist_ok=True)
        kappas, taus = {r[0] for r in rows}, {r[1] for r in rows}
        along = "tau" if len(taus) > 1 else "kappa"
        key = (lambda r: r[1]) if along == "tau" else (lambda r: r[0])
        rows.sort(key=key)
        finite = [key(r) for r in rows if math.isfinite(key(r))]
        inf_x = 4 * max(finite) if finite else 1.0
        x = [key(r) if math.isfinite(key(r)) else inf_x for r in rows]
        fig, ax = plt.subplots(figsize=(6, 4))
        ax.plot(x, [r[2] for r in rows], "o-", color="#1f77b4", label="trained, fresh tasks (ICL)")
        if any(np.isfinite(r[3]) for r in rows):
            ax.plot(x, [r[3] for r in rows], "s-", color="#6a3d9a", label="trained, pool tasks (IDG)")
        # The theory on a dense grid of the swept variable (the others as in the sweep's first cell).
        (alpha, rho, kappa0, tau0, _), = [c for c in list(cells)[:1]]
        dense = np.geomspace(min(finite), max(finite), 400) if finite else np.array([])
        curve = [errors(alpha, rho, v if along == "kappa" else kappa0, v if along == "tau" else tau0) for v in dense]
        ax.plot(dense, [c[0] - rho for c in curve], "--", color="#1f77b4", label="Lu et al. theory (d -> inf), ICL")
        if any(np.isfinite(c[1]) for c in curve):
            ax.plot(dense, [c[1] - rho for c in curve], "--", color="#6a3d9a", label="Lu et al. theory, IDG")
        if len(finite) < len(rows):   # the infinite end
            ax.plot([inf_x], [rows[-1][4]], "x", color="#1f77b4", markersize=8)
        ax.set_xscale("log")
        ax.set_yscale("log")
        top = np.nanmax([r[2] for r in rows] + [r[3] for r in rows])
        ax.set_ylim(top=3 * top)   # the ridgeless peak is infinite at tau = 1
        ax.set_xlabel(f"{along} ({'P/d^2' if along == 'tau' else 'M/d'}; rightmost: inf)" if math.isinf(max(key(r) for r in rows))
                      else f"{along} ({'P/d^2' if along == 'tau' else 'M/d'})")
        ax.set_ylabel("loss / d (noiseless query)")
        ax.set_title(os.path.basename(a.file), fontsize=9)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
        fig.tight_layout()
        out = os.path.join(a.outdir, "lu_theory.png")
        fig.savefig(out, dpi=110)
        print(f"\nicl-lu-theory: wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
