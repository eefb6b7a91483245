"""Checks of icl-report's outputs and of the loader, called by tests/test_report.sh.

    test_report.py outputs DIR H5 [figure ...]   PNGs well-formed, CSV columns and rows, HTML links resolve
    test_report.py loader H5                      load() / open_sweep() agree with the file; --best, summary
    test_report.py lu_theory [H5]                 Lu et al.'s formulas: closed forms, branches, their simulations;
                                                  with H5, icl-lu-theory's table and figure
    test_report.py steps_to_gd DIR H5             [VO23] Fig. 15's steps to GD against the curves (heads varied)
    test_report.py weights DIR H5                 [VO23] Fig. 9, 11, App. A.3, A.10 read-outs: planted matrices,
                                                  and construction.csv against the file's w_xx
"""
import csv
import os
import re
import struct
import sys

import h5py
import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools", "python"))
import icl_sweep  # noqa: E402
from icl_sweep.groups import View  # noqa: E402

failures = []


def check(condition, what):
    print(("ok: " if condition else "FAIL: ") + what)
    if not condition:
        failures.append(what)


def png_size(path):
    """(width, height) from a PNG's IHDR chunk, None if the file is not a PNG."""
    with open(path, "rb") as f:
        head = f.read(24)
    if len(head) < 24 or head[:8] != b"\x89PNG\r\n\x1a\n" or head[12:16] != b"IHDR":
        return None
    return struct.unpack(">II", head[16:24])


def outputs(outdir, h5, expected):
    names = sorted(n for n in os.listdir(outdir) if n.endswith(".png"))
    check(len(names) > 0, f"{len(names)} PNG figures")
    for name in expected:
        check(name in names, f"expected figure {name}")
    for name in names:
        size = png_size(os.path.join(outdir, name))
        check(size is not None and size[0] >= 400 and size[1] >= 300 and
              os.path.getsize(os.path.join(outdir, name)) > 5000, f"{name} is a PNG of {size} pixels")
    with h5py.File(h5, "r") as f:
        n_points = f.attrs["n_points"]
        metrics = sorted(f["metrics"].keys())
        options = sorted(k for k in f["points"].keys())
        test_loss = f["metrics/test_loss"][:]
    with open(os.path.join(outdir, "points.csv")) as f:
        rows = list(csv.reader(f))
    header = rows[0]
    check(set(["point"] + options + metrics) <= set(header) and len(header) == 1 + len(options) + len(metrics),
          f"points.csv has point, every option ({len(options)}) and metric ({len(metrics)}) as columns")
    check(len(rows) - 1 == n_points, f"points.csv has one row per point ({len(rows) - 1} of {n_points})")
    column = header.index("test_loss")
    stored = np.array([float(r[column]) if r[column] else np.nan for r in rows[1:]])
    check(np.allclose(stored, test_loss, rtol=0, atol=0, equal_nan=True), "points.csv test_loss equals the file's, bit for bit")
    with open(os.path.join(outdir, "summary.csv")) as f:
        summary = list(csv.reader(f))
    check(all(c in summary[0] for c in ("n", "n_diverged", "n_failed", "test_loss mean", "test_loss se",
                                        "test_loss median", "test_loss iqr")) and len(summary) >= 2,
          f"summary.csv has conditions x (counts, mean, s.e., median, IQR) columns ({len(summary) - 1} conditions)")
    page = open(os.path.join(outdir, "index.html")).read()
    links = set(re.findall(r"(?:href|src)='([^'#]+)'", page))
    missing = [l for l in links if not os.path.isfile(os.path.join(outdir, l))]
    check(not missing and len(links) >= len(names) + 2, f"index.html: {len(links)} links, all resolve {missing}")
    linked = {l for l in links if l.endswith(".png")}
    check(linked == set(names), "index.html shows every figure")
    check("http://" not in page and "https://" not in page, "index.html needs no network")


def loader(h5):
    table = icl_sweep.load(h5, frame=False)
    with h5py.File(h5, "r") as f:
        size = f.attrs["n_points"]
        same = all(np.array_equal(table[k], f["metrics"][k][:], equal_nan=True) for k in f["metrics"])
        strings = all(table[k].dtype.kind == "U" for k in f["points"] if f["points"][k].dtype.kind == "O")
    check(all(len(v) == size for v in table.values()), f"load(frame=False): {len(table)} columns of {size} rows")
    check(same, "load(): metrics equal the file's")
    check(strings, "load(): text columns are str, not bytes")
    try:
        import pandas
    except ImportError:
        pandas = None
    if pandas is not None:
        frame = icl_sweep.load(h5)
        check(isinstance(frame, pandas.DataFrame) and frame.shape == (size, len(table))
              and list(frame["point"]) == list(range(size)), f"load(): DataFrame {frame.shape}, one row per point")
    else:
        try:
            icl_sweep.load(h5)
            check(False, "load() without pandas raises ImportError")
        except ImportError as e:
            check("frame=False" in str(e), f"load() without pandas: ImportError naming the dict fallback ({e})")
    sweep = icl_sweep.open_sweep(h5)
    check(sweep.varied()[:4] == ["layers", "noise", "param", "optimizer"], f"varied options in grid order: {sweep.varied()}")
    # --best lr: per (layers, noise, param, optimizer) the kept rate is the one with the lowest mean loss.
    view = View(sweep, ["lr"])
    pts, loss = sweep.points, sweep.metrics["test_loss"]
    good = True
    for key, idx in view.groups(view.axes).items():
        kept = set(pts["lr"][idx])
        same = np.flatnonzero(sweep.ok() & np.all([pts[a] == v for a, v in zip(view.axes, key)], axis=0))
        means = {lr: np.mean(loss[same[pts["lr"][same] == lr]]) for lr in set(pts["lr"][same])}
        good &= len(kept) == 1 and kept.pop() == min(means, key=means.get)
    check(good and "lr" not in view.axes, "--best lr keeps the rate with the lowest mean test loss per condition")
    best = View(sweep, ["replica"])
    check(all(len(v) == 1 for v in best.groups(best.axes).values()), "--best replica keeps one point per condition")


def lu_finite_d():
    """The finite-d error of their reduced model (icl_sweep/lu_theory.py, gamma_*): at kappa = tau = inf the
    population optimum is one GD step, loss/d = 1 - n/(n + d + 1 + sigma^2) (derived independently); its
    moments against a direct simulation of contexts; a least-squares fit on many contexts tends to the
    population optimum; and the pool's population optimum tends to the d -> inf formulas as d grows."""
    import math
    import numpy as np
    from icl_sweep.lu_theory import errors, finite_d_errors, gamma_error, gamma_fit, gamma_moments
    for d, n, s2 in ((20, 40, 2.0), (10, 5, 0.3), (50, 400, 0.0)):
        G, _ = gamma_fit(d, n, s2, 0, 0, np.random.default_rng(0))
        want = 1 - n / (n + d + 1 + s2)
        check(abs(gamma_error(G, n, s2) - want) < 1e-12, f"d {d} n {n}: one GD step {gamma_error(G, n, s2):.6f} = {want:.6f}")
    rng = np.random.default_rng(5)
    d, n, s2 = 4, 6, 0.7
    W = rng.standard_normal((d, 3))
    A, B, _ = gamma_moments(n, s2, W)
    w = W[:, rng.integers(0, 3, 400000)].T
    x = rng.standard_normal((len(w), n, d))
    y = np.einsum("mid,md->mi", x, w) + math.sqrt(s2) * rng.standard_normal((len(w), n))
    h = np.concatenate([np.einsum("mi,mid->md", y, x), (y ** 2).sum(1, keepdims=True)], 1) / n
    gap = max(np.abs(h.T @ h / len(w) - A).max() / np.abs(A).max(), np.abs(h.T @ w / len(w) - B).max() / np.abs(B).max())
    check(gap < 0.01, f"pool moments against 400,000 simulated contexts: worst relative gap {gap:.4f}")
    (G_fit, W_fit), (G_pop, W_pop) = (gamma_fit(6, 12, 0.6, 3, P, np.random.default_rng(1)) for P in (60000, 0))
    fit = [gamma_error(G_fit, 12, 0.6), gamma_error(G_fit, 12, 0.6, W_fit)]
    pop = [gamma_error(G_pop, 12, 0.6), gamma_error(G_pop, 12, 0.6, W_pop)]
    check(np.array_equal(W_fit, W_pop) and abs(fit[0] / pop[0] - 1) < 0.02 and abs(fit[1] / pop[1] - 1) < 0.02,
          f"one pool: least squares on 60,000 contexts {fit} against the population optimum {pop}")
    icl, idg = (e - 0.1 for e in errors(2, 0.1, 0.5, math.inf))
    gaps = []
    for d in (20, 160):
        (f_icl, f_idg), _ = finite_d_errors(d, 2 * d, 0.1 * d, d // 2, 0, 3, seed=2)
        gaps.append(f_icl - icl)
    check(gaps[1] < gaps[0] / 4 and abs(gaps[1]) < 0.02 * icl and abs(f_idg / idg - 1) < 0.03,
          f"d -> inf (alpha 2, kappa 0.5, rho 0.1): ICL gap {gaps[0]:.4f} at d = 20, {gaps[1]:.4f} at d = 160; "
          f"IDG {f_idg:.4f} vs {idg:.4f}")


def lu_theory(h5=None):
    """The transcribed formulas (icl_sweep/lu_theory.py) against what they must satisfy: the kappa = inf,
    tau > 1 closed form tau/(tau-1) (rho + x/(1+x)), x = (1+rho)/alpha (derived independently); the tau > 1
    branch tending to the tau = inf one; and Lu et al.'s own finite-d simulations committed with their code
    (d = 100, kappa = 0.5, rho = 0.01, alpha = 1: e_ICL 1.047, 1.305, 1.770, 1.279 at tau = 0.2, 0.5, 1.5, 2;
    d = 50, alpha = 100, tau = 100, rho = 0.25: e_ICL 0.353, 0.266, 0.265 at kappa = 1, 5, 50), within 8%."""
    from icl_sweep.lu_theory import errors
    for alpha, rho, tau in ((1, 0.01, 1.5), (4, 0.25, 3), (0.5, 0.1, 20)):
        x = (1 + rho) / alpha
        icl, idg = errors(alpha, rho, float("inf"), tau)
        want = tau / (tau - 1) * (rho + x / (1 + x))
        check(abs(icl - want) < 1e-12 and abs(idg - want) < 1e-12, f"kappa = inf, tau = {tau}: {icl:.6f} = {want:.6f}")
    for kappa in (0.3, 1.0, 4.0):
        far, limit = errors(2, 0.05, kappa, 1e9), errors(2, 0.05, kappa, float("inf"))
        check(abs(far[0] - limit[0]) < 1e-6 and abs(far[1] - limit[1]) < 1e-6, f"kappa = {kappa}: tau -> inf branch")
    for (alpha, rho, kappa, tau), sim in (((1, 0.01, 0.5, 0.2), 1.047), ((1, 0.01, 0.5, 0.5), 1.305),
                                          ((1, 0.01, 0.5, 1.5), 1.770), ((1, 0.01, 0.5, 2.0), 1.279),
                                          ((100, 0.25, 1, 100), 0.353), ((100, 0.25, 5, 100), 0.266),
                                          ((100, 0.25, 50, 100), 0.265)):
        icl = errors(alpha, rho, kappa, tau)[0]
        check(abs(icl / sim - 1) < 0.08, f"alpha {alpha} kappa {kappa} tau {tau}: theory {icl:.3f} vs their simulation {sim}")
    lu_finite_d()
    if h5:
        import subprocess
        tool = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools", "icl-lu-theory")
        outdir = os.path.join(os.path.dirname(h5), "lu_theory")
        out = subprocess.run([tool, h5, "-o", outdir], capture_output=True, text=True)
        check(out.returncode == 0 and "theory" in out.stdout and "inf" in out.stdout, "icl-lu-theory table: " + out.stdout[-300:] + out.stderr[-300:])
        size = png_size(os.path.join(outdir, "lu_theory.png")) if os.path.exists(os.path.join(outdir, "lu_theory.png")) else None
        check(size is not None and size[0] >= 400, f"lu_theory.png of {size} pixels")


def weights(outdir, h5):
    from icl_sweep import figures_weights as fw
    rng = np.random.default_rng(3)
    # A.3's correction on a planted construction in the gauge (P s, Q / s): it undoes s and reads gamma, eta.
    d, s, gamma, eta = 4, -2.5, 0.17, 1.3
    P0, Q0 = np.diag(np.r_[np.full(d, -gamma), -eta]), np.diag(np.r_[np.ones(d), 0.0])
    c = fw.construction_residuals(P0 * s, Q0 / s)
    check(abs(c["beta"] - 1 / s) < 1e-15 and abs(c["gamma"] - gamma) < 1e-15 and abs(c["eta"] - eta) < 1e-15
          and c["residual_q"] < 1e-15 and c["residual_p"] < 1e-15, f"scale correction of a planted construction: {c}")
    E = np.zeros((d + 1, d + 1))
    E[0, 1] = 0.2   # one off-diagonal entry of P: |E|_F / |P0|_F
    c = fw.construction_residuals((P0 + E) * s, Q0 / s)
    check(abs(c["residual_p"] - 0.2 / np.linalg.norm(P0)) < 1e-12 and c["residual_p_label"] < 1e-15,
          f"a perturbation outside the label row: residual {c['residual_p']:.4f}")
    # Fig. 11's per-head products from a transformer's theta and views (row-vector convention, heads side
    # by side in the columns of W_Q, W_K, W_V and the rows of W_O).
    D, k, H = 3, 3, 2
    mats = {c: rng.normal(size=(D, k * H)) for c in "qkv"}
    mats["o"] = rng.normal(size=(k * H, D))
    theta, views, offset = [], [], 0
    for c in "qkvo":
        views.append(f"attn.W{c} 0 {offset} {mats[c].shape[0]} {mats[c].shape[1]}")
        theta.append(mats[c].ravel())
        offset += mats[c].size
    heads = fw._head_products({"theta": np.concatenate(theta), "views": "\n".join(views)}, H, D)
    for h, (kq, eta_h) in enumerate(heads):
        cols = slice(h * k, (h + 1) * k)
        want = mats["k"][:, cols] @ mats["q"][:, cols].T
        value = mats["v"][:, cols] @ mats["o"][cols, :]
        check(np.allclose(kq, want, rtol=1e-14) and abs(eta_h - value[-1, -1]) < 1e-14, f"head {h + 1}: W_K W_Q^T, eta_h")
        kq2, pv = fw._head_products({"theta": np.concatenate(theta), "views": "\n".join(views)}, H, D, products=True)[h]
        check(np.allclose(kq2, want, rtol=1e-14) and np.allclose(pv, value.T, rtol=1e-14),
              f"head {h + 1}: the lsa products Q = W_K W_Q^T, P = (W_V W_O)^T")
    M = np.array([[2.0, 1.0], [-1.0, 2.0]])
    check(abs(fw.off_diagonal_ratio(M) - 0.5) < 1e-15 and fw.off_diagonal_ratio(M + M.T) == 0, "off-diagonal ratio")
    # construction.csv: every recurrent point, gamma = -w_xx of layer 1 (c = 1).
    with open(os.path.join(outdir, "construction.csv")) as f:
        rows = list(csv.DictReader(f))
    with h5py.File(h5, "r") as f:
        w_xx = f["analysis/v24_w_xx"][:, 0]
    check(len(rows) == len(w_xx), f"construction.csv: a row per recurrent point ({len(rows)})")
    check(all(abs(float(r["gamma"]) + w_xx[int(r["point"])]) <= 1e-3 * abs(w_xx[int(r["point"])]) for r in rows),
          "construction.csv's gamma is the engine's -w_xx (4 digits)")


def steps_to_gd(outdir, h5):
    """steps_to_gd.csv against the curves: the first evaluation step within 5% of the point's GD loss."""
    sweep = icl_sweep.open_sweep(h5)
    with open(os.path.join(outdir, "steps_to_gd.csv")) as f:
        rows = list(csv.DictReader(f))
    check(len(rows) == sweep.size, f"steps_to_gd.csv: a row per point ({len(rows)} of {sweep.size})")
    for r in rows:
        i = int(np.flatnonzero((sweep.points["replica"] == int(r["replica"])) &
                               (np.array([f"heads={h}" for h in sweep.points["heads"]]) == r["condition"]))[0])
        step, loss = sweep.curves["step"][i], sweep.curves["test_loss"][i]
        near = [int(s) for s, v in zip(step, loss) if s >= 0 and v <= 1.05 * sweep.metrics["loss_gd"][i]]
        check(r["step"] == (str(near[0]) if near else ""), f"{r['condition']} replica {r['replica']}: step {r['step']!r}")


def fixed_set(outdir, h5):
    """fixed_set.csv against the file: a row per set size B, its replicas, the trained / GD - 1 and the
    alignment as mean and s.e. over replicas of the per-point values, and the training-set loss the last
    finite train_loss (1/2 MSE: the report ran with --half)."""
    sweep = icl_sweep.open_sweep(h5)
    with open(os.path.join(outdir, "fixed_set.csv")) as f:
        rows = list(csv.DictReader(f))
    sizes = sorted(set(int(b) for b in sweep.points["batch"]))
    check([int(r["B"]) for r in rows] == sizes, f"fixed_set.csv: a row per set size {sizes}")
    m = sweep.metrics
    for r in rows:
        i = np.flatnonzero(sweep.points["batch"] == int(r["B"]))
        rel = 100 * (m["loss_tf"][i] / m["loss_gd"][i] - 1)
        se = rel.std(ddof=1) / np.sqrt(len(i))
        train = np.mean([row[np.isfinite(row)][-1] / 2 for row in sweep.curves["train_loss"][i]])
        check(int(r["replicas"]) == len(i) and abs(float(r["trained / GD - 1 (%)"]) - rel.mean()) <= 5e-3 * abs(rel.mean())
              and abs(float(r["trained s.e."]) - se) <= 0.05 * se and abs(float(r["final train loss"]) / train - 1) < 1e-3
              and abs(float(r["cos with GD"]) - m["align_gd_cos"][i].mean()) < 1e-4,
              f"B = {r['B']}: trained / GD - 1 {r['trained / GD - 1 (%)']}% ({rel.mean():.4g}), s.e. {r['trained s.e.']}, "
              f"train loss {r['final train loss']} ({train:.4g}), cos {r['cos with GD']}")


def depth(outdir, h5):
    """depth_alpha.csv of a tied sparse_a sweep with residual 1/L: a row per (condition, n, L); the ISO theory
    column is d times depth_theory.iso_loss; trained / GD the mean of the replicas' ratios; and every ISO and RRS model's loss
    recomputed from its weights as the reduced model (depth_theory.reduced_loss, 20,000 Monte Carlo contexts)
    within 5 standard errors of the engine's on its evaluation set: tie + sparse_a + residual 1/L is L GD steps
    with one preconditioner, and rotated_per_task a Haar rotation per context."""
    from icl_sweep import depth_theory
    from icl_sweep.figures_depth import _gamma, _setting, _spectrum
    sweep = icl_sweep.open_sweep(h5)
    p = sweep.points
    with open(os.path.join(outdir, "depth_alpha.csv")) as f:
        rows = list(csv.DictReader(f))
    conditions = {(c, n, L) for c, n, L in zip(p["cov"], p["n"], p["layers"])}
    check(len(rows) == len(conditions), f"depth_alpha.csv: a row per condition, n and L ({len(rows)})")
    for row in rows:
        d, n, L = int(row["d"]), int(row["n"]), int(row["L"])
        iso = "identity" in row["condition"]
        j = np.flatnonzero((p["n"] == n) & (p["layers"] == L) & ((p["cov"] == "identity") == iso))
        ratio = np.mean(sweep.metrics["loss_tf"][j] / sweep.metrics["loss_gd"][j])   # ISO and RRS: plain GD
        theory = row["theory, d -> inf (ISO)"]
        want = d * depth_theory.iso_loss(L, n / d)[1] if iso else float("nan")
        check(abs(float(row["trained / GD"]) / ratio - 1) < 1e-9 and
              (np.isnan(want) and theory in ("", "nan") or abs(float(theory) / want - 1) < 1e-9),
              f"{row['condition'][:30]} n {n} L {L}: trained / GD {ratio:.4g} per replica, theory {theory}")
    r = type("R", (), {"sweep": sweep})()
    for i in range(sweep.size):
        setting = _setting(p, i)
        if setting not in ("ISO", "RRS"):
            continue
        G = _gamma(r, i)
        spectrum = _spectrum(p["cov"][i]) if setting == "RRS" else None
        mc, mc_se = depth_theory.reduced_loss(G, int(p["layers"][i]), int(p["n"][i]), spectrum, contexts=20000, seed=i)
        ours, se = sweep.metrics["loss_tf"][i], sweep.metrics["se_loss_tf"][i]
        check(abs(mc - ours) < 5 * np.hypot(se, mc_se), f"point {i} ({setting}, L = {p['layers'][i]}, n = {p['n'][i]}): "
              f"the engine's loss {ours:.5g} ± {se:.2g}, the reduced model from its weights {mc:.5g} ± {mc_se:.2g}")


def gpt2(h5):
    """Raventos et al.'s GPT-2 (the reduced task_diversity_gpt2): its options stored per point; the trained model's
    per-prefix losses finite up to the training length n; NaN at 2n, where its learnt positional table ends."""
    with h5py.File(h5, "r") as f:
        pts = f["points"]
        stored = {k: {v.decode() for v in pts[k][:]} for k in ("causal", "readout", "prefix_loss", "tokens", "pe", "init")}
        check(stored == {"causal": {"true"}, "readout": {"head"}, "prefix_loss": {"true"}, "tokens": {"padded"},
                         "pe": {"learnt"}, "init": {"gpt2"}}, f"GPT-2 options stored per point: {stored}")
        n = int(pts["n"][0])
        k = f["analysis/context_length"][0]
        curve = f["analysis/context_loss_tf"][:]
        check(list(k) == list(range(1, n + 1)) and np.isfinite(curve).all(),
              f"per-prefix losses of the trained model at k = 1..{n}, all finite")
        dmmse = f["analysis/context_loss_dmmse"][:]
        pool = f["points/task_pool"][:]
        check(np.isfinite(dmmse[pool > 0]).all() and np.isnan(dmmse[pool == 0]).all(),
              "dMMSE per prefix where the training has a pool, NaN without")
        ood = f["analysis/ood_context"][0]
        tf = f["analysis/ood_context_loss_tf"][:]
        check(list(ood) == [n // 2, n, 2 * n] and np.isfinite(tf[:, :2]).all() and np.isnan(tf[:, 2]).all(),
              f"ood_context: finite at n/2 and n, NaN at 2n = {2 * n} (no positions beyond n)")
        probes(f)


def probes(f):
    """Fu et al.'s probes stored per point: Newton's L x (K_max + 1) and GD's L x 13 cosines in [-1, 1], each best
    step their argmax (GD's as the step count 2^c), least squares' L."""
    L = int(f["points/layers"][0])
    K = min(64, max(12, 4 * L)) + 1
    for method, columns, step in (("newton", K, lambda c: c), ("gd", 13, lambda c: 2 ** c)):
        sim, best = f[f"analysis/probe_{method}_similarity"][:], f[f"analysis/probe_{method}_best_step"][:]
        grid = sim[:, :L * columns]
        check(sim.shape[1] >= L * columns and np.isfinite(grid).all() and (np.abs(grid) <= 1).all()
              and (best[:, :L] == step(grid.reshape(-1, L, columns).argmax(axis=2))).all(),
              f"Fu et al.'s probes against {method}: L x {columns} cosines in [-1, 1] per point, the best step their argmax")
    ols = f["analysis/probe_ols_similarity"][:, :L]
    check(np.isfinite(ols).all() and (np.abs(ols) <= 1).all(), "Fu et al.'s probes against least squares: L cosines")


def fu(h5):
    """Fu et al.'s experiment (the reduced fu_newton): Garg et al.'s tokens (classic, width d), the probes stored."""
    with h5py.File(h5, "r") as f:
        pts = f["points"]
        stored = {k: {v.decode() for v in pts[k][:]} for k in ("causal", "prefix_loss", "tokens", "embed_bias")}
        check(stored == {"causal": {"true"}, "prefix_loss": {"true"}, "tokens": {"classic"}, "embed_bias": {"true"}},
              f"Garg et al.'s GPT-2 options stored per point: {stored}")
        probes(f)


def depth_theory():
    """The reduced model's d -> inf losses (icl_sweep/depth_theory.py) against what they must satisfy: at L = 1
    the closed forms gamma* = alpha/(1+alpha), loss/d = 1/(1+alpha) and, for a fixed spectrum,
    gamma* = sum l^2 / sum l^3, loss = sum l - (sum l^2)^2 / sum l^3 (derived independently); the optimal
    per-layer rate gamma*/L = alpha/(1+alpha) at every depth (the MP law is symmetric about 1 + 1/alpha, so the
    odd powers of the derivative vanish there); the floor 1 - alpha below alpha = 1; the best gamma I a
    saddle of the general class at L = 16; and a simulation of Wishart spectra at d = 300 within 3
    standard errors."""
    from icl_sweep.depth_theory import iso_finite_d, iso_loss, reduced_loss, rotated_limit
    for alpha in (0.5, 1.0, 3.0, 8.0):
        g, loss = iso_loss(1, alpha)
        check(abs(g - alpha / (1 + alpha)) < 1e-7 and abs(loss - 1 / (1 + alpha)) < 1e-9,
              f"ISO L = 1, alpha {alpha}: gamma* {g:.8f}, loss/d {loss:.10f}")
        for L in (2, 5, 16):
            g, loss = iso_loss(L, alpha)
            check(abs(g / L - alpha / (1 + alpha)) < 1e-6 and loss < iso_loss(L - 1, alpha)[1],
                  f"ISO L = {L}, alpha {alpha}: rate gamma*/L {g / L:.8f}, loss/d {loss:.6g} below depth L - 1's")
        check(iso_loss(16, alpha)[1] >= max(0.0, 1 - alpha) - 1e-12, f"alpha {alpha}: loss/d >= 1 - alpha")
    lam = np.array([3.0, 1.0, 0.5, 0.2])
    g, loss = rotated_limit(lam, 1)
    want_g, want = (lam ** 2).sum() / (lam ** 3).sum(), lam.sum() - (lam ** 2).sum() ** 2 / (lam ** 3).sum()
    check(abs(g - want_g) < 1e-7 and abs(loss - want) < 1e-10, f"RRS L = 1: gamma* {g:.8f} = {want_g:.8f}")
    limits = [rotated_limit(lam, L)[1] for L in (1, 2, 4, 8)]
    check(all(b < a for a, b in zip(limits, limits[1:])), f"RRS alpha -> inf: loss falls with depth {limits}")
    # The best gamma I is a minimum of the general class at L = 1 (convex) and a saddle at L = 16 (d = 10,
    # alpha = 4): a step along an antisymmetric K lowers the loss (same Monte Carlo contexts).
    K = np.random.default_rng(3).standard_normal((10, 10))
    K = (K - K.T) / np.linalg.norm(K - K.T) * np.sqrt(10)
    for L, lower in ((1, False), (16, True)):
        grid = [reduced_loss(g * L * np.eye(10), L, 40, contexts=3000, seed=1)[0] for g in np.linspace(0.4, 1.0, 31)]
        g = np.linspace(0.4, 1.0, 31)[int(np.argmin(grid))] * L
        ratio = reduced_loss(g * np.eye(10) + 0.2 * L * K, L, 40, contexts=3000, seed=1)[0] / min(grid)
        check((ratio < 0.9) == lower, f"L = {L}: gamma I + 0.2 L K over the best gamma I: {ratio:.3f}")
    d = 300
    for alpha, L in ((2.0, 4), (1.0, 3), (0.5, 2)):
        g, theory = iso_loss(L, alpha)
        mean, se, _ = iso_finite_d(L, alpha, d, g, 12, seed=4)
        check(abs(mean - theory) < 3 * se + 2.0 / d * theory, f"ISO alpha {alpha}, L = {L}: d = {d} simulation "
              f"{mean:.5f} ± {se:.5f} against {theory:.5f}")


if __name__ == "__main__":
    if sys.argv[1] == "outputs":
        outputs(sys.argv[2], sys.argv[3], sys.argv[4:])
    elif sys.argv[1] == "fixed_set":
        fixed_set(sys.argv[2], sys.argv[3])
    elif sys.argv[1] == "steps_to_gd":
        steps_to_gd(sys.argv[2], sys.argv[3])
    elif sys.argv[1] == "weights":
        weights(sys.argv[2], sys.argv[3])
    elif sys.argv[1] == "depth":
        depth(sys.argv[2], sys.argv[3])
    elif sys.argv[1] == "gpt2":
        gpt2(sys.argv[2])
    elif sys.argv[1] == "fu":
        fu(sys.argv[2])
    elif sys.argv[1] == "depth_theory":
        depth_theory()
    elif sys.argv[1] == "lu_theory":
        lu_theory(*sys.argv[2:3])
    else:
        loader(sys.argv[2])
    sys.exit(1 if failures else 0)
