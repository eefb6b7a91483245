"""Verdicts computed, not written (issue 29): every claim of docs/claims.csv is a number of ours with its
standard error against a paper's value (or range), and its verdict word follows from them:

    k = distance / s.e.   (distance to the paper's value, or to the nearest end of its range; 0 inside)
    k <= 1: "matches"      1 < k <= 2: "within 2 s.e."      k > 2: "differs by K s.e." (K to one decimal)

Each row names the document and the exact clause (`prose`, whitespace-insensitive) that states the
verdict there: the check fails when the clause is missing from the document or does not contain the
verdict the numbers give, so prose can no longer say "matches" where the table says otherwise.

A one-sided claim of a paper ("the model beats GD") is a range with an infinite end: ours minus GD
against [-inf, 0]. The last column, `commit`, is the git commit whose run produced the number (the commit
that brought it into the document); it may be empty (unknown) and may be absent from a row altogether
(rows of 11 columns still parse). A non-empty commit must be a hex id that names a commit of the
repository when --root is a full (not shallow) git clone.

    python -m icl_sweep.claims [--check] [--root DIR] [--table docs/claims.csv]
"""
import argparse
import csv
import math
import os
import re
import subprocess
import sys

COLUMNS = ["id", "doc", "quantity", "ours", "se", "n", "paper", "paper_high", "protocol", "reason", "prose"]
OPTIONAL = ["commit"]   # may be missing from the header or from a row: read as ""


def distance_in_se(ours, se, paper, paper_high=None):
    """|ours - paper| / se; with a range [paper, paper_high], the distance to its nearest end (0 inside)."""
    if not (se > 0):
        raise ValueError(f"standard error {se} must be > 0")
    lo, hi = (paper, paper) if paper_high is None else (min(paper, paper_high), max(paper, paper_high))
    gap = lo - ours if ours < lo else ours - hi if ours > hi else 0.0
    return gap / se


def verdict(k):
    """The verdict words for a distance of k standard errors."""
    if not math.isfinite(k):
        raise ValueError(f"distance {k} is not finite")
    k = round(k, 9)   # 0.1 / 0.1 is 1.0000000000000009
    if k <= 1:
        return "matches"
    if k <= 2:
        return "within 2 s.e."
    return f"differs by {k:.1f} s.e."


def accepts(prose, words):
    """Whether the clause states these verdict words ("match" for "matches": a plural subject)."""
    if words == "matches":
        return re.search(r"\bmatch(es)?\b", prose) is not None and "differs" not in prose and "within 2" not in prose
    return words in prose


def normalised(text):
    return " ".join(text.split())


def read_table(path):
    """The rows as dicts; the optional columns read as "" where a row (or the header) lacks them, and a
    row with one value more than a header without `commit` gets it as its commit."""
    with open(path, newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader((row for row in f if not row.startswith("#")), restkey="__extra__"))
    for i, r in enumerate(rows):
        missing = [c for c in COLUMNS if r.get(c) is None]
        if missing:
            raise ValueError(f"{path}: row {i + 2}: missing column(s) {missing}")
        extra = r.pop("__extra__", None)
        for c in OPTIONAL:
            if r.get(c) is None:
                r[c] = extra.pop(0) if extra else ""
        if extra:
            raise ValueError(f"{path}: row {i + 2}: {len(extra)} value(s) more than the columns {COLUMNS + OPTIONAL}")
    return rows


def _git_commits(root):
    """A function telling whether a commit id names a commit of the repository at root, or None when root
    is not a full git clone (no git, not a repository, or shallow: old commits may be missing)."""
    try:
        shallow = subprocess.run(["git", "-C", root, "rev-parse", "--is-shallow-repository"],
                                 capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if shallow.returncode != 0 or shallow.stdout.strip() != "false":
        return None
    return lambda c: subprocess.run(["git", "-C", root, "cat-file", "-e", c + "^{commit}"],
                                    capture_output=True, timeout=30).returncode == 0


def check(rows, root):
    """Returns (lines to print, number of failed claims)."""
    docs, out, failed = {}, [], 0
    known = None
    for r in rows:
        doc = r["doc"]
        if doc not in docs:
            with open(os.path.join(root, doc), encoding="utf-8") as f:
                docs[doc] = normalised(f.read())
        high = float(r["paper_high"]) if r["paper_high"].strip() else None
        k = distance_in_se(float(r["ours"]), float(r["se"]), float(r["paper"]), high)
        words = verdict(k)
        prose = normalised(r["prose"])
        problems = []
        if prose not in docs[doc]:
            problems.append(f"the clause is not in {doc}: '{prose}'")
        if not accepts(prose, words):
            problems.append(f"the clause says otherwise: '{prose}'")
        if words.startswith("differs") and not r["reason"].strip():
            problems.append("a claim that differs needs its measured reason (or 'not measured')")
        commit = (r.get("commit") or "").strip()
        if commit:
            if not re.fullmatch(r"[0-9a-f]{7,40}", commit):
                problems.append(f"commit '{commit}' is not a git commit id (7-40 lower-case hex digits)")
            else:
                if known is None:
                    known = _git_commits(root) or (lambda c: True)
                if not known(commit):
                    problems.append(f"commit '{commit}' is not a commit of the repository at {root}")
        failed += bool(problems)
        paper = r["paper"] if high is None else f"[{r['paper']}, {r['paper_high']}]"
        out.append(f"{'FAIL' if problems else 'ok  '} {r['id']}: {r['quantity']}: ours {r['ours']} ± {r['se']} (n {r['n']}), "
                   f"paper {paper}: k = {k:.2f}: {words}" + (f" (commit {commit})" if commit else ""))
        out.extend(f"       {p}" for p in problems)
    return out, failed


def main(argv=None):
    ap = argparse.ArgumentParser(prog="icl-claims", description=__doc__.split("\n\n")[0])
    ap.add_argument("--root", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", ".."),
                    help="the source tree (default: this package's)")
    ap.add_argument("--table", default="docs/claims.csv", help="the claims table, relative to --root")
    ap.add_argument("--check", action="store_true", help="exit 1 when a clause does not state its verdict")
    a = ap.parse_args(argv)
    rows = read_table(os.path.join(a.root, a.table))
    lines, failed = check(rows, a.root)
    print("\n".join(lines))
    print(f"{len(rows)} claims, {failed} failed")
    return 1 if (a.check and failed) else 0


if __name__ == "__main__":
    sys.exit(main())
