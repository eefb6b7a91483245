"""Reading icl-sweep result files (HDF5 layout: README.md, section "HDF5 layout").

    import sys; sys.path.insert(0, "tools/python")
    import icl_sweep
    table = icl_sweep.load("results/quickstart.h5")       # DataFrame if pandas is present, else dict
    sweep = icl_sweep.open_sweep("results/quickstart.h5")  # everything: points, metrics, series, weights

Every loss is plain MSE (not halved), as the file's `loss_convention` attribute says.
"""
import numpy as np
import h5py

# Bookkeeping columns of /points that are not options of the grid.
POINT_META = ("status", "message", "replica", "seed", "analysis_status", "analysis_message", "row_digest")


def _column(dataset):
    """A /points or /metrics dataset as a numpy array; strings decoded to str."""
    if dataset.dtype.kind in "OS":
        return np.array(dataset.asstr()[:], dtype=str)
    return dataset[:]


def _text(value):
    return value.decode() if isinstance(value, bytes) else str(value)


class Sweep:
    """One result file, read once: attributes, /points, /metrics, /layers, /curves; /analysis series and
    /weights are read on demand."""

    def __init__(self, path):
        self.path = str(path)
        with h5py.File(self.path, "r") as f:
            if f.attrs.get("format") != "icl-sweep results":
                raise ValueError(f"{self.path}: not an icl-sweep results file (attribute 'format' is "
                                 f"{f.attrs.get('format')!r})")
            self.attrs = {k: (v.decode() if isinstance(v, bytes) else v) for k, v in f.attrs.items()}
            self.points = {k: _column(v) for k, v in f["points"].items()}
            self.metrics = {k: v[:] for k, v in f["metrics"].items()}
            # Legend label of every method, {key: label}, from the registry's attributes of /metrics/loss_<key>.
            self.labels = {k[len("loss_"):]: _text(v.attrs["label"]) for k, v in f["metrics"].items()
                           if k.startswith("loss_") and "label" in v.attrs}
            self.layer_loss = f["layers/test_loss"][:]
            self.curves = {k: v[:] for k, v in f["curves"].items()}
            self.analysis_names = sorted(f["analysis"].keys()) if "analysis" in f else []
        self._analysis = {}
        self.size = len(self.points["status"])

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

    def analysis(self, name):
        """/analysis/<name> as a (points, width) array, NaN-padded; all-NaN if the file has no such series."""
        if name not in self._analysis:
            if name in self.analysis_names:
                with h5py.File(self.path, "r") as f:
                    self._analysis[name] = f["analysis"][name][:]
            else:
                self._analysis[name] = np.full((self.size, 0), np.nan)
        return self._analysis[name]

    def weights(self, i):
        """Learned weights of point i: dict with theta (#params,), P and Q (L, H, d+1, d+1); None if the
        point did not finish."""
        with h5py.File(self.path, "r") as f:
            key = f"weights/{i}"
            if key not in f:
                return None
            return {k: v[:] for k, v in f[key].items()}

    def table(self):
        """Points x (options, status, replica, seed, metrics) as a dict of equal-length 1-D arrays."""
        out = {"point": np.arange(self.size)}
        out.update(self.points)
        out.update(self.metrics)
        return out


def open_sweep(path):
    return Sweep(path)


def load(path, frame=None):
    """Points x metrics of a sweep file in one call.

    frame=None: a pandas DataFrame if pandas can be imported, else a dict of 1-D numpy arrays;
    frame=True: a DataFrame (ImportError without pandas); frame=False: always the dict."""
    table = Sweep(path).table()
    if frame is False:
        return table
    try:
        import pandas as pd
    except ImportError:
        if frame:
            raise
        return table
    return pd.DataFrame(table)
