"""Compare two icl-sweep result files bit for bit, except timings, dates and the rank count.
usage: compare_sweeps.py A.h5 B.h5   (exit 0 when equal; prints every difference)"""
import sys
import h5py
import numpy as np

TIMING = {"wall_seconds", "train_seconds", "eval_seconds", "steps_per_second", "analysis_seconds", "landscape_seconds"}
VOLATILE_ATTRS = {"written_utc", "started_utc", "ended_utc", "rank_count", "spec_file", "attributes_digest"}
DIGESTS = {"points/row_digest"}   # cover the timings too: checked by icl-sweep verify, not compared


def datasets(f):
    out = {}
    f.visititems(lambda name, obj: out.__setitem__(name, obj[()]) if isinstance(obj, h5py.Dataset) else None)
    return out


def main(a_path, b_path):
    diffs = []
    with h5py.File(a_path, "r") as a, h5py.File(b_path, "r") as b:
        da, db = datasets(a), datasets(b)
        for name in sorted(set(da) | set(db)):
            if (name.startswith("metrics/") and name.split("/")[-1] in TIMING) or name in DIGESTS:
                continue
            if name not in da or name not in db:
                diffs.append(f"{name}: only in one file")
                continue
            x, y = np.asarray(da[name]), np.asarray(db[name])
            same = x.shape == y.shape and (x.tobytes() == y.tobytes() if x.dtype.kind in "fiu" else list(x.ravel()) == list(y.ravel()))
            if not same:
                diffs.append(f"{name}: differs")
        for k in sorted(set(a.attrs) | set(b.attrs)):
            if k not in VOLATILE_ATTRS and (k not in a.attrs or k not in b.attrs or str(a.attrs[k]) != str(b.attrs[k])):
                diffs.append(f"attribute {k}: differs")
    for d in diffs:
        print("  " + d)
    return 1 if diffs else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
