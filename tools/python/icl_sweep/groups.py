"""Conditions of a sweep: points grouped by the options that vary, replicas aggregated (mean, spread)."""
import numpy as np

# Options that define the data (the task law): figures put them in panels, other options in lines.
DATA_OPTIONS = ("x_dist", "cov", "w_prior", "noise", "d", "n", "norm")


class View:
    """The points a report looks at: the ok points of a sweep, optionally reduced to the best value of
    some options per condition (`best`, e.g. lr or replica, as the papers report best-of-grid results).
    `halving`: a successive-halving sweep's searched axes; the view is then each candidate group's winner,
    the survivor with the least test loss (halving.csv's), the group being the other varied options and the
    replica where it is not searched (C++ halves each replica apart then)."""

    def __init__(self, sweep, best=(), where=None, halving=()):
        self.sweep = sweep
        self.best = tuple(best)
        self.halving = tuple(halving) if not best else ()
        group = halving_group(sweep, self.halving) if self.halving else []
        if self.halving:   # the searched axes and their zip partners: not conditions
            self.best = tuple(a for a in sweep.varied() if a not in group)
        self.selected = np.ones(sweep.size, dtype=bool)   # --where: only the points with one of these values
        for option, values in (where or {}).items():
            self.selected &= np.array([any(_matches(v, w) for w in values) for v in sweep.points[option]])
        self.mask = sweep.ok() & self.selected
        if self.halving:
            self.mask &= _winners(sweep, self.mask, group)
        else:
            for axis in self.best:
                self.mask &= _best_mask(sweep, self.mask, axis, self.grid_axes(exclude=(axis,)))
        # Zipped options are told by every point, not only the ok ones: a value whose points all diverged
        # stays a condition of its own instead of looking determined by another option. (Not by a damaged
        # row: its option values cannot be trusted.)
        self.every = sweep.points["status"] != "damaged"
        self.axes = _independent([a for a in sweep.varied() if a not in self.best], sweep.points, self.every)

    def kept(self):
        """What the view keeps of a successive-halving sweep, in words."""
        return "each group's winner (halving.csv)" if self.halving else "the survivors, as --best chose among them"

    def grid_axes(self, exclude=()):
        return [a for a in self.sweep.varied() if a not in exclude and a not in self.best]

    def dependents(self):
        """Varied options left out of self.axes because an earlier one determines them (zip, e.g. lr
        per depth): {option: the option that determines it}."""
        out = {}
        for b in self.grid_axes():
            if b not in self.axes:
                out[b] = next(a for a in self.axes if _determines(self.sweep.points, self.every, a, b))
        return out

    def conditions(self, axes):
        """{key tuple: (indices of the view's points, indices of every point of the condition)} over every
        point of the file that --where selects, whatever its status, keys in grid order: a condition whose
        points all diverged or failed is still there, with no point in the view."""
        used = self.groups(axes)
        every = {}
        for i in np.flatnonzero(self.selected):
            every.setdefault(tuple(self.sweep.points[a][i] for a in axes), []).append(i)
        return {k: (used.get(k, np.array([], dtype=np.int64)), np.array(v)) for k, v in every.items()}

    def groups(self, axes):
        """{key tuple: point indices} over the view's points, keys in grid order."""
        out = {}
        for i in np.flatnonzero(self.mask):
            out.setdefault(tuple(self.sweep.points[a][i] for a in axes), []).append(i)
        return {k: np.array(v) for k, v in out.items()}

    def facets(self, x=None):
        """Split the varied axes other than x into panel axes (data law) and line axes (the rest)."""
        rest = [a for a in self.axes if a != x]
        panels = [a for a in rest if a in DATA_OPTIONS]
        lines = [a for a in rest if a not in DATA_OPTIONS]
        if not panels and len(lines) > 1:
            panels, lines = lines[:1], lines[1:]
        return panels, lines


def _determines(points, mask, a, b):
    """Whether each value of option a comes with a single value of option b among the masked points."""
    pairs = set(zip(points[a][mask], points[b][mask]))
    return len(pairs) == len({p[0] for p in pairs})


def _independent(axes, points, mask):
    """The axes that no earlier kept axis determines (zipped options collapse onto the first)."""
    kept = []
    for b in axes:
        if not any(_determines(points, mask, a, b) for a in kept):
            kept.append(b)
    return kept


def halving_group(sweep, searched):
    """The options whose values make one successive-halving group of candidates, as C++ forms it: the varied
    options neither searched nor zipped with a searched one (a zip group is searched whole: before, a rate's
    zipped beta1 split its candidates into groups of one rate each), and the replica where it is not searched."""
    every = sweep.points["status"] != "damaged"
    axes = [a for a in searched if a in sweep.points]
    group = [b for b in sweep.varied() if b not in searched and not any(_determines(sweep.points, every, a, b) for a in axes)]
    return group + ([] if "replica" in searched else ["replica"])


def _winners(sweep, mask, group):
    """Keep, per combination of the `group` options, the point with the least finite test loss (ties: the
    first), as successive halving names its winner; before, the searched axes were resolved one at a time
    by their values' mean loss, so the view depended on their order in `search` and pooled the replicas that
    C++ had halved apart."""
    keep = np.zeros_like(mask)
    loss = sweep.metrics["test_loss"]
    best = {}
    for i in np.flatnonzero(mask & np.isfinite(loss)):
        key = tuple(sweep.points[a][i] for a in group)
        if key not in best or loss[i] < loss[best[key]]:
            best[key] = i
    keep[list(best.values())] = True
    return keep


def _best_mask(sweep, mask, axis, others):
    """Keep, per combination of `others`, the points of the value of `axis` with the lowest mean test
    loss (for axis = replica: the single best replica)."""
    keep = np.zeros_like(mask)
    loss = sweep.metrics["test_loss"]
    column = np.arange(sweep.size) if axis == "replica" else sweep.points[axis]
    by_condition = {}
    for i in np.flatnonzero(mask):
        key = tuple(sweep.points[a][i] for a in others if a != "replica")
        by_condition.setdefault(key, {}).setdefault(column[i], []).append(i)
    for values in by_condition.values():
        best = min(values, key=lambda v: np.nanmean(loss[values[v]]))
        keep[values[best]] = True
    return keep


def _short(value):
    """A long list value (a spectrum of d numbers) cut to its first two numbers and its length, for titles."""
    text = str(value)
    items = text.split(",")
    return f"{items[0]},{items[1]},..({len(items)} values)" if len(items) > 4 and len(text) > 30 else text


def _matches(value, text):
    """Whether a /points value is the value written as `text` (a number compared as a number)."""
    try:
        return float(value) == float(text)
    except (TypeError, ValueError):
        return str(value) == text


def label(axes, key):
    return ", ".join(f"{a}={_short(v)}" for a, v in zip(axes, key)) if axes else "all points"


def model_label(axes, key, prefix=""):
    """Legend entry of a trained-model line: its options, or just 'trained' when nothing else varies."""
    return prefix + label(axes, key) if axes else "trained"


def stats(values):
    """Mean, min, max, standard deviation and count of the finite values (rows: replicas)."""
    values = np.asarray(values, dtype=float)
    finite = np.isfinite(values)
    count = finite.sum(axis=0)
    with np.errstate(invalid="ignore"), np.testing.suppress_warnings() as sup:
        sup.filter(RuntimeWarning)
        mean = np.nanmean(values, axis=0)
        lo = np.nanmin(values, axis=0) if values.size else mean
        hi = np.nanmax(values, axis=0) if values.size else mean
        sd = np.nanstd(values, axis=0, ddof=1) if values.shape[0] > 1 else np.zeros_like(mean)
    return mean, lo, hi, sd, count


# Statuses counted as failed per condition (diverged is counted apart; pruned and pending are neither).
FAILED = ("failed", "damaged", "cancelled")


def counts(status):
    """{'n_diverged', 'n_failed', 'n_pruned', 'n_pending'} of an array of point statuses."""
    status = np.asarray(status)
    return {"n_diverged": int(np.sum(status == "diverged")), "n_failed": int(np.isin(status, FAILED).sum()),
            "n_pruned": int(np.sum(status == "pruned")), "n_pending": int(np.sum(status == "pending"))}


def robust(values):
    """Summary of the finite values of a 1-D array (NaN, a point that did not finish, and +-inf are left
    out): n, mean, se (standard error: s.d. / sqrt(n)), sd (ddof 1), median, q1, q3, iqr (q3 - q1;
    numpy's linear percentiles). With no finite value every statistic is NaN and n is 0; with one, sd and
    se are NaN."""
    v = np.asarray(values, dtype=float).ravel()
    v = v[np.isfinite(v)]
    n = len(v)
    out = dict(n=n, mean=np.nan, se=np.nan, sd=np.nan, median=np.nan, q1=np.nan, q3=np.nan, iqr=np.nan)
    if n:
        q1, median, q3 = np.percentile(v, [25, 50, 75])
        out.update(mean=float(np.mean(v)), median=float(median), q1=float(q1), q3=float(q3), iqr=float(q3 - q1))
        if n > 1:
            out["sd"] = float(np.std(v, ddof=1))
            out["se"] = out["sd"] / np.sqrt(n)
    return out


def sort_key(value):
    """Numeric values in numeric order, strings as strings, numbers before strings."""
    try:
        return (0, float(value), "")
    except (TypeError, ValueError):
        return (1, 0.0, str(value))
