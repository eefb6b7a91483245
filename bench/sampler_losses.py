"""Sampler v2 against v1 on trained models (issue 32, item 5): a sweep whose `sampler` axis is v1 v2 trains every
other point twice, with the same seed (`seeds = replica`: replica r has one seed at every point). Prints, per
configuration, each sampler's mean over seeds with its standard error, their difference in units of its s.e.
(unpaired: the two samplers' seed scatter), and the spread of the per-seed differences (paired: the same seed
and point, drawn by each sampler) beside the seed standard deviation.
usage: sampler_losses.py RESULT.h5 [METRIC ...]   (default: test_loss; GROUP/NAME for another group, a 2-D
dataset compared per column, e.g. analysis/precond_dist_whitened per layer)"""
import sys
from collections import defaultdict

import h5py
import numpy as np


def text(col):
    return [x.decode() if isinstance(x, bytes) else str(x) for x in col]


def main(path, metrics):
    with h5py.File(path, "r") as f:
        pts = f["points"]
        sampler = text(pts["sampler"][:])
        replica = pts["replica"][:]
        # A configuration: every option but the sampler, the replica and the seed; its points paired by seed.
        skip = {"sampler", "replica", "seed", "row_digest", "status", "message", "build", "analysis_status", "analysis_message"}
        names = [k for k in pts if k not in skip and pts[k].ndim == 1]
        cols = {k: pts[k][:] for k in names}
        varying = [k for k in names if len(set(text(cols[k]))) > 1]
        for metric in metrics:
            data = f[metric if "/" in metric else "metrics/" + metric][:]
            columns = [(metric, data)] if data.ndim == 1 else [(f"{metric}[{j}]", data[:, j]) for j in range(data.shape[1])]
            for name, values in columns:
                compare(name, values, sampler, replica, cols, varying)


def compare(metric, values, sampler, replica, cols, varying):
    groups = defaultdict(lambda: {"v1": {}, "v2": {}})
    for i in range(len(sampler)):
        key = tuple(text([cols[k][i]])[0] for k in varying)
        groups[key][sampler[i]][int(replica[i])] = values[i]
    print(f"{metric}: mean over seeds +- s.e., v1 | v2 | (v2 - v1)/s.e. | paired: mean and s.d. of v2 - v1 per seed")
    for key, g in sorted(groups.items()):
        seeds = sorted(set(g["v1"]) & set(g["v2"]))
        a = np.array([g["v1"][s] for s in seeds])
        b = np.array([g["v2"][s] for s in seeds])
        se_a, se_b = a.std(ddof=1) / np.sqrt(len(a)), b.std(ddof=1) / np.sqrt(len(b))
        k = (b.mean() - a.mean()) / np.hypot(se_a, se_b)
        d = b - a
        label = " ".join(f"{n}={v}" for n, v in zip(varying, key)) or "all"
        print(f"  {label:<24} {a.mean():.5g} +- {se_a:.2g} | {b.mean():.5g} +- {se_b:.2g} | {k:+.2f} | "
              f"{d.mean():+.2g} (s.d. {d.std(ddof=1):.2g}; seed s.d. {a.std(ddof=1):.2g}) over {len(seeds)} seeds")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:] or ["test_loss"])
