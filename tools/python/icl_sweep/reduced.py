"""Reduced presets as regression numbers (issue 29: "a test fails when a preset cited in the table no longer
produces its number"). docs/reduced_numbers.csv lists numbers that the cheap reduced presets
(jobs/presets/reduced/) produce, each the reduced counterpart of claims in docs/claims.csv, with a relative
tolerance. `--check` runs those presets with a built icl-sweep and fails when a number moved beyond its
tolerance; `--write` reruns them and stores the new values (when a number changes on purpose; the
tolerances and selectors stay).

Results are bitwise for a given build, but not across instruction sets (-march=native on another CPU,
another SIMD width): the tolerances come from measuring that drift (docs/testing.md, "Reduced presets").

    python -m icl_sweep.reduced --bin build/icl-sweep [--check | --write] [--all] [--ranks 2] [--only PRESET ...]

Every preset run must finish every point (status ok, or pruned by successive halving) with its analysis,
and every stored metric must carry the registry's doc (include/icl/analysis/metrics.hpp; a name outside it
does not compile).  `--all` runs every reduced preset, with
numbers in the table or not: about 2.5 core-hours, so not in CI (ctest `reduced_numbers` runs the table's
presets; docs/testing.md).

Columns: preset (a file of jobs/presets/reduced/ without .ini), metric (a /metrics dataset, or column k of
an /analysis series as `name[k]`, e.g. `ood_teacher_loss_tf[5]`; plain MSE as stored), select (the point: `option=value` pairs of /points joined by `;`, e.g. `heads=2;replica=0`; it must
pick exactly one point), value, rel_tol (|got - value| <= rel_tol |value|), claims (the claims it stands
for).
"""
import argparse
import csv
import io
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np

from .load import Sweep

COLUMNS = ["preset", "metric", "select", "value", "rel_tol", "claims"]
HEADER = """# Numbers the reduced presets (jobs/presets/reduced/) produce: the reduced counterparts of claims in
# docs/claims.csv. ctest `reduced_numbers` reruns the presets and fails when one moves beyond rel_tol
# (measured drift between instruction sets: docs/testing.md, "Reduced presets"). Regenerate after an
# intended change: tools/icl-reduced-numbers --write --bin build/icl-sweep
"""


def read_table(path):
    with open(path, newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(row for row in f if not row.startswith("#")))
    for i, r in enumerate(rows):
        missing = [c for c in COLUMNS if r.get(c) is None]
        if missing:
            raise ValueError(f"{path}: row {i + 2}: missing column(s) {missing}")
    return rows


def write_table(path, rows):
    out = io.StringIO()
    out.write(HEADER)
    w = csv.DictWriter(out, fieldnames=COLUMNS, lineterminator="\n", extrasaction="ignore")
    w.writeheader()
    w.writerows(rows)
    with open(path, "w", encoding="utf-8") as f:
        f.write(out.getvalue())


def parse_select(text):
    pairs = [p.strip() for p in text.split(";") if p.strip()]
    sel = {}
    for p in pairs:
        if "=" not in p:
            raise ValueError(f"select '{text}': '{p}' is not option=value")
        k, v = p.split("=", 1)
        sel[k.strip()] = v.strip()
    return sel


def _same(column_value, wanted):
    try:
        return float(column_value) == float(wanted)
    except (TypeError, ValueError):
        return str(column_value) == wanted


def pick(sweep, select, metric):
    """The metric's value at the one point the selector names."""
    mask = np.ones(sweep.size, dtype=bool)
    for k, v in parse_select(select).items():
        if k not in sweep.points:
            raise ValueError(f"select '{select}': no /points column '{k}'")
        mask &= np.array([_same(x, v) for x in sweep.points[k]])
    idx = np.flatnonzero(mask)
    if len(idx) != 1:
        raise ValueError(f"select '{select}' picks {len(idx)} points, not 1")
    i = idx[0]
    status = str(sweep.points["status"][i])
    if status != "ok":
        raise ValueError(f"select '{select}': the point's status is '{status}'")
    series = re.fullmatch(r"(\w+)\[(\d+)\]", metric)
    if series:
        name, column = series.group(1), int(series.group(2))
        if name not in sweep.analysis_names:
            raise ValueError(f"no /analysis dataset '{name}'")
        values = sweep.analysis(name)[i]
        if column >= len(values) or not math.isfinite(values[column]):
            raise ValueError(f"/analysis/{name} has no column {column} at select '{select}'")
        return float(values[column])
    if metric not in sweep.metrics:
        raise ValueError(f"no /metrics dataset '{metric}'")
    return float(sweep.metrics[metric][i])


def within(got, want, rel_tol):
    """(ok, relative difference): |got - want| <= rel_tol |want|; a non-finite number is never within."""
    rel = abs(got - want) / abs(want) if want != 0 else abs(got)
    return (math.isfinite(got) and rel <= rel_tol), rel


def unfinished(sweep):
    """Why a preset's file is not a finished, fully analysed sweep (a list of reasons; empty when it is)."""
    why = []
    p = sweep.points
    for i in range(sweep.size):
        st, an = str(p["status"][i]), str(p["analysis_status"][i])
        if st not in ("ok", "pruned"):
            why.append(f"point {i}: status {st} ({p['message'][i]})")
        elif st == "ok" and an == "failed":
            why.append(f"point {i}: analysis failed ({p['analysis_message'][i]})")
    for name, doc in sweep.metric_docs.items():
        if not doc:
            why.append(f"metric {name}: no doc from the registry")
    if any(n.startswith("loss_") for n in sweep.metrics) and not sweep.attrs.get("methods"):
        why.append("no @methods attribute")
    return why


def run_preset(binary, root, preset, ranks, out):
    spec = os.path.join(root, "jobs", "presets", "reduced", preset + ".ini")
    if not os.path.isfile(spec):
        raise FileNotFoundError(f"no reduced preset {spec}")
    env = dict(os.environ)
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    launcher = shutil.which("mpiexec") or shutil.which("mpirun")
    cmd = ([launcher, "--oversubscribe", "-n", str(ranks)] if launcher and ranks > 1 else []) + \
          [binary, "run", spec, "-o", out, "--quiet", "--progress", "0"]
    t0 = time.time()
    proc = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} exited {proc.returncode}:\n{proc.stdout[-2000:]}")
    return time.time() - t0


def main(argv=None):
    ap = argparse.ArgumentParser(prog="icl-reduced-numbers", description=__doc__.split("\n\n")[0])
    ap.add_argument("--bin", required=True, help="the icl-sweep executable")
    ap.add_argument("--root", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", ".."),
                    help="the source tree (default: this package's)")
    ap.add_argument("--table", default="docs/reduced_numbers.csv", help="relative to --root")
    ap.add_argument("--ranks", type=int, default=2, help="MPI ranks per preset (default 2)")
    mode = ap.add_mutually_exclusive_group()
    mode.add_argument("--check", action="store_true", help="exit 1 when a number moved beyond its tolerance")
    mode.add_argument("--write", action="store_true", help="store the values this build produces")
    ap.add_argument("--only", nargs="+", metavar="PRESET", help="only these presets' numbers")
    ap.add_argument("--all", action="store_true", help="run every reduced preset, with numbers or not")
    ap.add_argument("--keep", metavar="DIR", help="keep the result files in DIR")
    a = ap.parse_args(argv)
    table = os.path.join(a.root, a.table)
    rows = read_table(table)
    failed, total = 0, 0.0
    # The claims each number stands for must exist (ids; text in parentheses is a note).
    from .claims import read_table as read_claims
    ids = {r["id"] for r in read_claims(os.path.join(a.root, "docs", "claims.csv"))}
    for r in rows:
        unknown = [c for c in r["claims"].split() if not r["claims"].startswith("(") and c not in ids]
        if unknown:
            print(f"FAIL {r['preset']} {r['metric']} [{r['select']}]: claims {unknown} not in docs/claims.csv")
            failed += 1
    named = [r["preset"] for r in rows]
    if a.all:
        named += sorted(f[:-len(".ini")] for f in os.listdir(os.path.join(a.root, "jobs", "presets", "reduced"))
                        if f.endswith(".ini"))
    presets = [p for p in dict.fromkeys(named) if not a.only or p in a.only]
    work = a.keep or tempfile.mkdtemp(prefix="icl-reduced-")
    os.makedirs(work, exist_ok=True)
    try:
        for preset in presets:
            out = os.path.join(work, preset + ".h5")
            for stale in (out, out + ".points"):
                if os.path.isdir(stale):
                    shutil.rmtree(stale)
                elif os.path.exists(stale):
                    os.remove(stale)
            try:
                secs = run_preset(os.path.abspath(a.bin), a.root, preset, a.ranks, out)
                sweep = Sweep(out)
            except (OSError, RuntimeError, ValueError) as e:
                print(f"FAIL {preset}: {e}")
                failed += sum(r["preset"] == preset for r in rows)
                continue
            total += secs
            why = unfinished(sweep)
            print(f"{preset}: {secs:.1f} s, {sweep.size} points{'' if why else ', all finished and analysed'}")
            for w in why:
                print(f"  FAIL {w}")
            failed += bool(why)
            for r in (r for r in rows if r["preset"] == preset):
                try:
                    got = pick(sweep, r["select"], r["metric"])
                except ValueError as e:
                    print(f"  FAIL {r['metric']} [{r['select']}]: {e}")
                    failed += 1
                    continue
                want, tol = float(r["value"]), float(r["rel_tol"])
                good, rel = within(got, want, tol)
                bad = not good
                if a.write:
                    r["value"] = f"{got:.10g}"
                    bad = not math.isfinite(got)
                failed += bad
                print(f"  {'FAIL' if bad else 'ok  '} {r['metric']} [{r['select']}]: {got:.10g}, table {want:.10g}, "
                      f"relative difference {rel:.2e} (tolerance {tol:g})")
    finally:
        if not a.keep:
            shutil.rmtree(work, ignore_errors=True)
    if a.write and not failed:
        write_table(table, rows)
        print(f"wrote {table}")
    n = sum(1 for r in rows if r["preset"] in presets)
    print(f"{n} numbers of {len(presets)} presets, {failed} failed, {total:.1f} s of runs")
    return 1 if (failed and (a.check or a.write)) else 0


if __name__ == "__main__":
    sys.exit(main())
