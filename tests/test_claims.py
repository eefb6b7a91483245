"""The claims check (tools/python/icl_sweep/claims.py) can fail: verdict words at the boundaries, a range,
a one-sided claim, a document whose clause says "matches" where its numbers differ, or whose clause is gone;
the optional `commit` column: rows without it still parse, a malformed or unknown commit fails."""
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools", "python"))
from icl_sweep.claims import check, distance_in_se, read_table, verdict  # noqa: E402

failures = 0


def expect(cond, what):
    global failures
    print(("ok: " if cond else "FAIL: ") + what)
    failures += not cond


expect(verdict(distance_in_se(1.0, 0.1, 1.1)) == "matches", "k = 1 matches")
expect(verdict(distance_in_se(1.0, 0.1, 1.15)) == "within 2 s.e.", "k = 1.5 is within 2 s.e.")
expect(verdict(distance_in_se(1.0, 0.1, 1.3)) == "differs by 3.0 s.e.", "k = 3 differs by 3.0 s.e.")
expect(distance_in_se(1.05, 0.1, 1.0, 1.1) == 0, "inside the paper's range: k = 0")
expect(abs(distance_in_se(1.3, 0.1, 1.0, 1.1) - 2.0) < 1e-12, "above a range: the distance to its upper end")
expect(distance_in_se(-0.5, 0.1, float("-inf"), 0.0) == 0, "one-sided claim [-inf, 0]: below 0 is inside")
expect(abs(distance_in_se(0.3, 0.1, float("-inf"), 0.0) - 3.0) < 1e-12, "one-sided claim: above 0 by 3 s.e.")

with tempfile.TemporaryDirectory() as root:
    os.makedirs(os.path.join(root, "docs"))
    with open(os.path.join(root, "docs", "r.md"), "w") as f:
        f.write("The loss matches\nthe paper (0.30 ± 0.01 against 0.25).\nOther text: X differs by 3.0 s.e.\n")
    head = "id,doc,quantity,ours,se,n,paper,paper_high,protocol,reason,prose\n"
    cases = {
        "a clause saying 'matches' for k = 5 fails": ("a,docs/r.md,q,0.30,0.01,1,0.25,,p,,The loss matches the paper", 1),
        "the right verdict passes, across a line break": ("a,docs/r.md,q,0.30,0.10,1,0.25,,p,,The loss matches the paper", 0),
        "a clause no longer in the document fails": ("a,docs/r.md,q,0.30,0.10,1,0.25,,p,,The loss equals the paper", 1),
        "'differs' without a reason fails": ("a,docs/r.md,q,0.30,0.01,1,0.27,,p,,X differs by 3.0 s.e.", 1),
        "'differs' with its reason passes": ("a,docs/r.md,q,0.30,0.01,1,0.27,,p,measured: the init,X differs by 3.0 s.e.", 0),
    }
    for what, (row, want) in cases.items():
        with open(os.path.join(root, "t.csv"), "w") as f:
            f.write(head + row + "\n")
        lines, failed = check(read_table(os.path.join(root, "t.csv")), root)
        expect(failed == want, what + ("" if failed == want else ": " + " / ".join(lines)))

    # The commit column: optional per row (others append 11-column rows), checked when given.
    def table(text):
        with open(os.path.join(root, "t.csv"), "w") as f:
            f.write(text)
        return read_table(os.path.join(root, "t.csv"))
    ok_row = "a,docs/r.md,q,0.30,0.10,1,0.25,,p,,The loss matches the paper"
    rows = table(head.rstrip("\n") + ",commit\n" + ok_row + "\n" + ok_row + ",abc1234\n")
    expect([r["commit"] for r in rows] == ["", "abc1234"], "12-column header: a row of 11 values reads commit ''")
    expect(check(rows, root)[1] == 0, "rows with and without a commit pass outside a git clone")
    rows = table(head + ok_row + ",abc1234\n" + ok_row + "\n")
    expect([r["commit"] for r in rows] == ["abc1234", ""], "11-column header: a 12th value is the commit")
    expect(check(table(head.rstrip("\n") + ",commit\n" + ok_row + ",HEAD~1\n"), root)[1] == 1,
           "a commit that is not a hex id fails")
    try:
        table(head + ok_row + ",abc1234,extra\n")
        expect(False, "a row with two values too many is refused")
    except ValueError:
        expect(True, "a row with two values too many is refused")
    git = shutil.which("git")
    if git:
        env = dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@t", GIT_COMMITTER_NAME="t",
                   GIT_COMMITTER_EMAIL="t@t")
        run = lambda *a: subprocess.run([git, "-C", root, *a], env=env, capture_output=True, text=True, check=True)
        run("init", "-q")
        run("add", "docs/r.md")
        run("commit", "-q", "-m", "doc")
        real = run("rev-parse", "--short=7", "HEAD").stdout.strip()
        bogus = "0" * 7 if real != "0" * 7 else "1" * 7
        rows = table(head.rstrip("\n") + ",commit\n" + ok_row + "," + real + "\n")
        expect(check(rows, root)[1] == 0, "in a git clone: a commit of the repository passes")
        rows = table(head.rstrip("\n") + ",commit\n" + ok_row + "," + bogus + "\n")
        expect(check(rows, root)[1] == 1, "in a git clone: a commit the repository lacks fails")
    else:
        print("skip: no git, the commit-existence checks")

print("all claims-check checks passed" if failures == 0 else f"{failures} check(s) failed")
sys.exit(1 if failures else 0)
