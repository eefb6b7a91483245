"""Reading icl-sweep result files (HDF5 layout: README.md, section "HDF5 layout").

    import icl_sweep                                       # installed: pip install --no-build-isolation .
    df = icl_sweep.load("results/quickstart.h5")           # pandas DataFrame, one row per point
    cols = icl_sweep.load("results/quickstart.h5", frame=False)   # the same as a dict of numpy arrays
    sweep = icl_sweep.open_sweep("results/quickstart.h5")  # everything: points, metrics, series, weights

Every loss is plain MSE (not halved), as the file's `loss_convention` attribute says.
"""
import warnings

import numpy as np
import h5py

from . import integrity

# Bookkeeping columns of /points that are not options of the grid.
POINT_META = ("status", "message", "replica", "seed", "analysis_status", "analysis_message", "row_digest", "build")


def _column(dataset):
    """A /points or /metrics dataset as a numpy array; strings decoded to str (fixed-length text in one
    vectorised cast when it is ASCII, as option values always are)."""
    if dataset.dtype.kind == "S":
        raw = dataset[:]
        if raw.size == 0 or raw.view(np.uint8).max() < 128:
            return raw.astype(str)
        return np.char.decode(raw, "utf-8")
    if dataset.dtype.kind == "O":
        return np.array(dataset.asstr()[:], dtype=str)
    return dataset[:]


def _text(value):
    return value.decode() if isinstance(value, bytes) else str(value)


class Sweep:
    """One result file, read once: attributes, /points, /metrics, /layers, /curves; /analysis series and
    /weights are read on demand.  Every row's digest is checked (verify=True): a damaged row is reported
    (a warning naming it, `damaged`), gets status "damaged" and NaN metrics, never other values."""

    def __init__(self, path, verify=True):
        self.path = str(path)
        with h5py.File(self.path, "r") as f:
            self.damaged = integrity.damaged_rows(f) if verify else np.array([], dtype=np.int64)
            if f.attrs.get("format") != "icl-sweep results":
                raise ValueError(f"{self.path}: not an icl-sweep results file (attribute 'format' is "
                                 f"{f.attrs.get('format')!r})")
            self.attrs = {k: (v.decode() if isinstance(v, bytes) else v) for k, v in f.attrs.items()}
            self.points = {k: _column(v) for k, v in f["points"].items()}
            self.metrics = {k: v[:] for k, v in f["metrics"].items()}
            self.metric_docs = {k: _text(v.attrs.get("doc", "")) for k, v in f["metrics"].items()}
            self.metric_conventions = {k: _text(v.attrs.get("convention", "")) for k, v in f["metrics"].items()}
            # The analyses' methods, [(key, label)] in the registry's order (@methods), and {key: label};
            # files written before @methods existed: the labels of /metrics/loss_<key>, in file order.
            self.methods = [tuple(line.split("\t")[:2]) for line in self.attrs.get("methods", "").splitlines() if line]
            if not self.methods:
                self.methods = [(k[len("loss_"):], _text(v.attrs["label"])) for k, v in f["metrics"].items()
                                if k.startswith("loss_") and "label" in v.attrs]
            self.labels = dict(self.methods)
            self.layer_loss = f["layers/test_loss"][:]
            self.curves = {k: v[:] for k, v in f["curves"].items()}
            self.analysis_names = sorted(f["analysis"].keys()) if "analysis" in f else []
        self._analysis = {}
        self.size = len(self.points["status"])
        if len(self.damaged):
            shown = ", ".join(str(i) for i in self.damaged[:20]) + (" ..." if len(self.damaged) > 20 else "")
            warnings.warn(f"{self.path}: {len(self.damaged)} row(s) damaged (their digests do not match): {shown}; "
                          f"their metrics read as NaN; icl-sweep verify --repair recovers them from the logs")
            self.points["status"] = self.points["status"].astype(object)
            self.points["status"][self.damaged] = "damaged"
            self.points["status"] = self.points["status"].astype(str)
            for v in list(self.metrics.values()) + [self.layer_loss] + [c for k, c in self.curves.items() if k != "step"]:
                v[self.damaged] = np.nan

    def option_order(self):
        """Options in the order the spec lists them (the grid's order: first slowest), then the rest."""
        listed = [line.split("=", 1)[0].strip() for line in str(self.attrs.get("spec", "")).splitlines()
                  if "=" in line and not line.lstrip().startswith("#")]
        options = [k for k in self.points if k not in POINT_META]
        return [k for k in listed if k in options] + sorted(k for k in options if k not in listed)

    def varied(self):
        """Options that take more than one value in this file, in grid order."""
        return [k for k in self.option_order() if len(np.unique(self.points[k])) > 1]

    def ok(self):
        return self.points["status"] == "ok"

    def analysis_failed(self):
        """The points trained but not analysed (their analysis metrics NaN); none in files without the column."""
        return self.points.get("analysis_status", np.full(self.size, "", dtype=str)) == "failed"

    def analysis(self, name):
        """/analysis/<name> as a (points, width) array, NaN-padded; all-NaN if the file has no such series,
        and NaN in a damaged row (it read the row's stored values before)."""
        if name not in self._analysis:
            if name in self.analysis_names:
                with h5py.File(self.path, "r") as f:
                    self._analysis[name] = f["analysis"][name][:]
                if len(self.damaged) and self._analysis[name].dtype.kind == "f":
                    self._analysis[name][self.damaged] = np.nan
            else:
                self._analysis[name] = np.full((self.size, 0), np.nan)
        return self._analysis[name]

    def weights(self, i):
        """Learned weights of point i: dict with theta (#params,), P and Q (L, H, d+1, d+1) for arch = lsa,
        and `views` for a transformer; None if the point learned nothing (or its row is damaged)."""
        if i in self.damaged:
            return None
        with h5py.File(self.path, "r") as f:
            if "weights/theta_index" not in f:   # format 1: a group per point
                key = f"weights/{i}"
                return {k: v[:] for k, v in f[key].items()} if key in f else None
            start, count = (int(x) for x in f["weights/theta_index"][i])
            if count == 0:
                return None
            out = {"theta": f["weights/theta"][start:start + count]}
            p_start, p_count = (int(x) for x in f["weights/pq_index"][i])
            if p_count:
                shape = (int(self.points["layers"][i]), int(self.points["heads"][i]), int(self.points["d"][i]) + 1, -1)
                out["P"] = f["weights/P"][p_start:p_start + p_count].reshape(shape)
                out["Q"] = f["weights/Q"][p_start:p_start + p_count].reshape(shape)
            views = _text(f["weights/views"][i])
            if views:
                out["views"] = views
            return out

    def table(self):
        """Points x (options, status, replica, seed, metrics) as a dict of equal-length 1-D arrays."""
        out = {"point": np.arange(self.size)}
        out.update(self.points)
        out.update(self.metrics)
        return out


def open_sweep(path, verify=True):
    return Sweep(path, verify)


def load(path, frame=True, verify=True):
    """Points x metrics of a sweep file in one call: a pandas DataFrame with one row per point (index 0..P-1, the
    row in the file, also the column `point`), a column per option, per bookkeeping field (status,
    message, replica, seed, ...) and per metric; text as str, losses as stored (plain MSE), NaN where a
    point did not finish.  frame=False: the same columns as a dict of equal-length 1-D numpy arrays (no
    pandas needed)."""
    table = Sweep(path, verify).table()
    if not frame:
        return table
    try:
        import pandas as pd
    except ImportError as e:
        raise ImportError("icl_sweep.load needs pandas (a dependency of the icl-sweep package: Debian's "
                          "python3-pandas, or pip install pandas); load(path, frame=False) gives a dict of "
                          "numpy arrays without it") from e
    return pd.DataFrame(table)
