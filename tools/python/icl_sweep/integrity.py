"""Row digests of an icl-sweep results file, as `icl-sweep verify` computes them (src/io/integrity.cpp):
a row's digest is the sum (mod 2^64) over its datasets of part(key(path), the row's stored bytes), plus
part(key("@row"), its index as 8 little-endian bytes), where
the datasets and their shapes come from the file's own `layout` attribute (src/io/layout.cpp), never
from a list kept here.  Vectorised over blocks of rows: linear in the points, memory of a block."""
import numpy as np

M1, M2 = np.uint64(0xBF58476D1CE4E5B9), np.uint64(0x94D049BB133111EB)
S30, S27, S31 = np.uint64(30), np.uint64(27), np.uint64(31)
BLOCK = 1 << 16


def _mix(z):
    """SplitMix64's finaliser, in place on a uint64 array (wrapping arithmetic)."""
    z ^= z >> S30
    z *= M1
    z ^= z >> S27
    z *= M2
    z ^= z >> S31
    return z


def _mix_scalar(z):
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9 & 0xFFFFFFFFFFFFFFFF
    z = (z ^ (z >> 27)) * 0x94D049BB133111EB & 0xFFFFFFFFFFFFFFFF
    return z ^ (z >> 31)


def key(path):
    h = 0x452821E638D01377
    for c in path.encode():
        h = _mix_scalar(h ^ c)
    return _mix_scalar(h ^ 0xFF)


def part(k, rows):
    """The digest part of every row of `rows`, a (n, nbytes) uint8 array of the rows' stored bytes."""
    n, nbytes = rows.shape
    h = np.full(n, k, dtype=np.uint64)
    words = nbytes // 8
    with np.errstate(over="ignore"):
        if words:
            w = np.ascontiguousarray(rows[:, :8 * words]).view("<u8")
            for j in range(words):
                h ^= w[:, j]
                _mix(h)
        for j in range(8 * words, nbytes):
            h ^= rows[:, j].astype(np.uint64)
            _mix(h)
        h ^= np.uint64(nbytes)
        return _mix(h)


def _bytes(a):
    """(n, ...) array -> (n, row bytes) uint8 view of its stored form (little-endian)."""
    a = np.ascontiguousarray(a)
    if a.dtype.kind in "fiu" and a.dtype.byteorder == ">":
        a = a.astype(a.dtype.newbyteorder("<"))
    return a.reshape(len(a), -1).view(np.uint8).reshape(len(a), -1)


def layout(f):
    """{path: (shape, index)} from the file's `layout` attribute; families as "group/*"."""
    text = f.attrs["layout"]
    text = text.decode() if isinstance(text, bytes) else str(text)
    out = {}
    for line in text.splitlines():
        path, shape, _type, index = (line.split("\t") + [""] * 4)[:4]
        out[path] = (shape, index)
    return out


def row_datasets(f, entries):
    """Every row dataset (path) of the file, and the flat ones as {path: index path}."""
    rows, flat = [], {}
    groups = sorted({p.rsplit("/", 1)[0] for p in entries})
    for g in groups:
        if g.lstrip("/") not in f:
            continue
        for name in f[g.lstrip("/")]:
            path = f"{g}/{name}"
            shape = entries.get(path, entries.get(f"{g}/*", (None, "")))[0]
            if shape == "flat":
                flat[path] = entries[path][1]
            elif shape in ("row", None):   # an undeclared dataset counts, as in `icl-sweep verify`
                rows.append(path)
    return rows, flat


def attributes_intact(f):
    """Whether the root attributes match `attributes_digest` (as src/io/integrity.cpp computes it)."""
    if "attributes_digest" not in f.attrs:
        return False
    h = 0
    for name in sorted(f.attrs.keys()):
        if name == "attributes_digest":
            continue
        v = f.attrs[name]
        if isinstance(v, (str, bytes)):
            data = v.encode() if isinstance(v, str) else v
        else:
            data = np.asarray(v, dtype="<i8").reshape(1).tobytes()
        rows = np.frombuffer(data, dtype=np.uint8).reshape(1, -1)
        with np.errstate(over="ignore"):
            h = (h + int(part(key("@" + name), rows)[0])) & 0xFFFFFFFFFFFFFFFF
    return h == int(np.int64(f.attrs["attributes_digest"]).astype(np.uint64))


def damaged_rows(f):
    """Indices of the rows whose stored digest does not match what is stored (empty when intact).
    Raises ValueError when the file's own description (its root attributes, the digests, a dataset's row
    count) cannot be trusted: then no row can be."""
    if int(f.attrs.get("format_version", 1)) < 2 and "layout" not in f.attrs and "attributes_digest" in f.attrs:
        return np.array([], dtype=np.int64)   # format 1: `icl-sweep verify` checks it
    if not attributes_intact(f):
        raise ValueError(f"{f.filename}: its root attributes do not match their digest (damaged): no row can be trusted; "
                         f"icl-sweep verify {f.filename} --repair --spec SPEC restores it")
    P = int(f.attrs["n_points"])
    if "points/row_digest" not in f:
        raise ValueError(f"{f.filename}: /points/row_digest is missing: no row can be checked")
    entries = layout(f)
    rows, flat = row_datasets(f, entries)
    for path in rows:
        if f[path.lstrip("/")].shape[0] != P:
            raise ValueError(f"{f.filename}: {path} has {f[path.lstrip('/')].shape[0]} rows, not {P}: damaged")
    stored = f["points/row_digest"][:].astype("<i8").view(np.uint64)
    bad = np.zeros(P, dtype=bool)
    for first in range(0, P, BLOCK):
        last = min(P, first + BLOCK)
        d = np.zeros(last - first, dtype=np.uint64)
        with np.errstate(over="ignore"):
            for path in rows:
                try:
                    d += part(key(path), _bytes(f[path.lstrip("/")][first:last]))
                except OSError:   # a chunk that fails its Fletcher32 checksum
                    bad[first:last] = True
            for path, index in flat.items():
                ix = f[index.lstrip("/")][first:last]
                start, count = ix[:, 0], ix[:, 1]
                lo, hi = int(start.min()), int((start + count).max())
                try:
                    data = f[path.lstrip("/")][lo:hi] if hi > lo else np.zeros(0)
                except OSError:
                    bad[first:last] = True
                    continue
                for c in np.unique(count):
                    sel = np.flatnonzero(count == c)
                    if c == 0:
                        d[sel] += part(key(path), np.zeros((len(sel), 0), dtype=np.uint8))
                        continue
                    s = start[sel] - lo
                    ok = (s >= 0) & (s + c <= len(data))
                    bad[first + sel[~ok]] = True
                    take = data[s[ok, None] + np.arange(c)]
                    d[sel[ok]] += part(key(path), _bytes(take))
            idx = np.arange(first, last, dtype="<u8").reshape(-1, 1).view(np.uint8)   # each row's place
            d += part(key("@row"), idx)
        bad[first:last] |= d != stored[first:last]
    return np.flatnonzero(bad)
