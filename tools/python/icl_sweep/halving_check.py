"""icl-halving-check: does a successive-halving sweep pick what the full grid picks?
usage: icl-halving-check FULL.h5 HALVING.h5 [--half]
       icl-halving-check FULL.h5 --replay 200,600 400,1200 [--search replica lr] [--reduction 3]

FULL.h5 is the same spec trained without `search` / `rungs` (every candidate to the end). Per condition
(the points that differ only in the searched axes): the full grid's best candidate (least test loss),
the standard error over replicas at its rate, and the halving sweep's survivor; a cell agrees when the
survivor is the same point or its loss is within that standard error of the best. Then the compute:
core-seconds of every leg against the full grid's, and training steps.
--replay runs successive halving on FULL.h5's curves for each list of rungs (evaluation steps), without
training: exact, since the decisions read the curves at the rungs and a survivor's row is its full-grid
row bit for bit. It shows what a choice of rungs would have picked and cost.
"""
import argparse
import re
import sys

import h5py
import numpy as np

META = ("status", "message", "seed", "replica", "analysis_message", "analysis_status", "row_digest", "build")


def text(v):
    return v.decode() if isinstance(v, bytes) else v


def conditions(f, search):
    """Point indices per condition (the combination of the varied, unsearched options), and their names."""
    pts = f["points"]
    keys = [k for k in pts if k not in META and k not in search and len(np.unique(pts[k][:])) > 1]
    if "replica" not in search:
        keys.append("replica")
    cols = {k: pts[k][:] for k in keys}
    out = {}
    for i in range(len(pts["status"])):
        out.setdefault(", ".join(f"{k}={text(cols[k][i])}" for k in keys), []).append(i)
    return out


def best_and_se(f, idx, search, loss):
    """The full grid's best candidate and the standard error of the loss over replicas at its values of
    the other searched options (e.g. its rate)."""
    ok = [i for i in idx if text(f["points/status"][i]) == "ok" and np.isfinite(loss[i])]
    if not ok:   # every candidate diverged or failed: no best
        return None, np.nan
    best = min(ok, key=lambda i: loss[i])
    others = [k for k in search if k != "replica"]
    peers = [i for i in ok if all(f["points"][k][i] == f["points"][k][best] for k in others)]
    se = np.std(loss[peers], ddof=1) / np.sqrt(len(peers)) if len(peers) > 1 else 0.0
    return best, se


def winner_name(f, i, search):
    """Point i named by its values of the searched axes and its seed: 'lr=0.001 replica=2 seed=7'."""
    if i is None:
        return "-"
    names = [k for k in search if k in f["points"]] + (["seed"] if "seed" not in search else [])
    return " ".join(f"{k}={text(f['points'][k][i])}" for k in names)


def replay(f, idx, rungs, reduction, curve_step, curve_loss, steps):
    """The survivor of successive halving on the full grid's curves, and the training steps it costs."""
    cand, prev, cost = list(idx), 0, 0
    for r in rungs:
        cost += sum(min(r, steps[i]) - prev for i in cand)
        prev = r
        at = {i: curve_loss[i][list(curve_step[i]).index(r)] if r in curve_step[i] else np.inf for i in cand}
        cand = sorted(cand, key=lambda i: (at[i] if np.isfinite(at[i]) else np.inf, i))[:max(1, len(cand) // reduction)]
    cost += sum(steps[i] - prev for i in cand)
    return cand[0], cost


def main(argv=None):
    p = argparse.ArgumentParser(prog="icl-halving-check", description=__doc__.split("\n")[0].split(": ", 1)[1])
    p.add_argument("full")
    p.add_argument("halving", nargs="?")
    p.add_argument("--half", action="store_true", help="losses as 1/2 MSE ([VO23], [V24])")
    p.add_argument("--replay", nargs="+", metavar="RUNGS", help="comma-separated rung steps, one list per replay")
    p.add_argument("--search", nargs="+", default=["replica", "lr"], help="with --replay: the searched axes")
    p.add_argument("--reduction", type=int, default=3, help="with --replay: keep the best 1/reduction")
    a = p.parse_args(sys.argv[1:] if argv is None else argv)
    if (a.halving is None) == (a.replay is None):
        p.error("give HALVING.h5 or --replay, not both")
    scale = 0.5 if a.half else 1.0
    with h5py.File(a.full, "r") as f:
        loss = f["metrics/test_loss"][:] * scale
        if a.replay:
            step, curve, steps = f["curves/step"][:], f["curves/test_loss"][:] * scale, f["points/steps"][:]
            cells = conditions(f, a.search)
            for spec in a.replay:
                rungs = [int(s) for s in spec.split(",")]
                agree = same = cost = 0
                for idx in cells.values():
                    best, se = best_and_se(f, idx, a.search, loss)
                    pick, c = replay(f, idx, rungs, a.reduction, step, curve, steps)
                    cost += c
                    if best is None:   # nothing to pick: every candidate diverged or failed
                        agree += 1
                        same += 1
                        continue
                    same += pick == best
                    agree += pick == best or loss[pick] - loss[best] <= se
                print(f"rungs {spec:>12s}: agreement {agree}/{len(cells)} cells ({100 * agree / len(cells):.0f}%), "
                      f"{same} the same point; {100 * cost / steps.sum():.1f}% of the full grid's training steps")
            return 0
        with h5py.File(a.halving, "r") as h:
            found = re.search(r"^search = (.*)$", text(h.attrs["spec"]), re.M)
            if not found:
                sys.exit("icl-halving-check: HALVING.h5 was not written by a successive-halving spec (no 'search')")
            search = found.group(1).split()
            loss_h, status_h = h["metrics/test_loss"][:] * scale, h["points/status"][:].astype(str)
            agree = same = 0
            cells = conditions(h, search)
            print(f"{'cell':36s} {'full best: point':>16s} {'loss':>10s} {'s.e.':>8s} {'halving: point':>15s} {'loss':>10s}  "
                  f"verdict; the winners (searched values, seed)")
            for name, idx in cells.items():
                best, se = best_and_se(f, idx, search, loss)
                survivors = [i for i in idx if status_h[i] == "ok" and np.isfinite(loss_h[i])]
                pick = min(survivors, key=lambda i: (loss_h[i], i)) if survivors else None
                is_same = pick == best   # both None: every candidate diverged or failed in both
                within = pick is not None and best is not None and loss_h[pick] - loss[best] <= se
                same += is_same
                agree += is_same or within
                verdict = ("none finished in either" if best is None and pick is None else "same point" if is_same
                           else "within 1 s.e." if within else "DIFFERS")
                print(f"{name:36s} {best if best is not None else -1:>16d} {loss[best] if best is not None else np.nan:>10.5g} "
                      f"{se:>8.2g} {pick if pick is not None else -1:>15d} "
                      f"{loss_h[pick] if pick is not None else np.nan:>10.5g}  {verdict}; full: {winner_name(f, best, search)}"
                      + ("" if is_same else f"; halving: {winner_name(h, pick, search)}"))
            sec_f, sec_h = np.nansum(f["metrics/wall_seconds"][:]), np.nansum(h["metrics/wall_seconds"][:])
            steps_f = f["points/steps"][:].sum()
            steps_h = np.nansum(np.maximum(h["metrics/steps_done"][:], 0))
            print(f"\nagreement   {agree}/{len(cells)} cells ({100 * agree / len(cells):.0f}%): {same} the same point, "
                  f"{agree - same} within the cell's seed standard error")
            print(f"compute     {sec_h:.0f} core-seconds in the halving sweep's legs vs {sec_f:.0f} in the full grid: "
                  f"{100 * sec_h / sec_f:.1f}%")
            print(f"steps       {100 * steps_h / steps_f:.1f}% of the full grid's training steps")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
