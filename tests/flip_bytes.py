"""Single-byte flips of an icl-sweep results file, each on a fresh copy: every flip must be detected
(`icl-sweep verify` exits 1, or the file no longer opens) or change nothing a reader sees.  A flip that
changes a value while verify passes is a silent corruption, and fails the test.
usage: flip_bytes.py ICL_SWEEP OUT.h5 WORKDIR N SEED"""
import random
import shutil
import subprocess
import sys

import h5py
import numpy as np


def contents(path):
    out = {}
    with h5py.File(path, "r") as f:
        f.visititems(lambda n, o: out.__setitem__(n, np.asarray(o[()]).tobytes() if o.dtype.kind in "fiu" else
                                                  repr(list(np.asarray(o.asstr()[()] if o.dtype.kind == "O" else o[()]).ravel())))
                     if isinstance(o, h5py.Dataset) else None)
        for k, v in f.attrs.items():
            out["@" + k] = repr(v)
    return out


def main(binary, path, work, n, seed):
    rng = random.Random(seed)
    original = contents(path)
    data = open(path, "rb").read()
    detected = harmless = silent = crashed = 0
    for k in range(n):
        at = rng.randrange(len(data))
        bit = 1 << rng.randrange(8)
        copy = f"{work}/flip{k}.h5"
        shutil.copy(path, copy)
        with open(copy, "r+b") as f:
            f.seek(at)
            f.write(bytes([data[at] ^ bit]))
        rc = subprocess.run([binary, "verify", copy], capture_output=True).returncode
        # Read in a child process: HDF5 itself may crash on damaged metadata (loud, not silent).
        read = subprocess.run([sys.executable, __file__, "--contents", copy, path], capture_output=True)
        same = None if read.returncode not in (0, 3) else read.returncode == 0
        if rc == 1:
            detected += 1
        elif rc > 1 and not same:
            crashed += 1   # verify could not read it at all: loud
        elif same is None or same:
            harmless += 1
        else:
            silent += 1
            print(f"  silent corruption: byte {at} bit {bit}: verify passed, values differ")
    print(f"  {n} flips: {detected} detected by verify, {crashed} made the file unreadable to verify, {harmless} changed "
          f"nothing a reader sees or made the file unreadable to h5py, {silent} silent")
    return 1 if silent else 0


if __name__ == "__main__":
    if sys.argv[1] == "--contents":   # exit 0: same values as the original; 3: different; else unreadable
        try:
            sys.exit(0 if contents(sys.argv[2]) == contents(sys.argv[3]) else 3)
        except Exception:
            sys.exit(4)
    sys.exit(main(sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])))
