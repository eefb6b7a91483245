"""The claims check (tools/python/icl_sweep/claims.py) can fail: verdict words at the boundaries, a range,
and a document whose clause says "matches" where its numbers differ, or whose clause is gone."""
import os
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

print("all claims-check checks passed" if failures == 0 else f"{failures} check(s) failed")
sys.exit(1 if failures else 0)
