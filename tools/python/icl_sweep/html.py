"""index.html: one self-contained page linking every figure and table of a report (no network needed)."""
import html
import os

SECTIONS = (("losses", "Loss against the varied options"), ("layers", "Per-layer readouts"),
            ("noise", "Noise levels"), ("training", "Training"), ("alignment", "Alignment with GD / GD++"),
            ("diversity", "Task diversity"), ("context", "Loss against context length"), ("ood", "Out of distribution"),
            ("weights", "Learned weights"), ("transformer", "[VO23]'s transformer: copying, roll-out"),
            ("landscape", "Optimisation landscape"))

STYLE = """body{font-family:sans-serif;max-width:1250px;margin:2em auto;padding:0 1em;color:#222}
table{border-collapse:collapse;font-size:13px;margin:.5em 0}td,th{border:1px solid #ccc;padding:2px 6px;
text-align:right}th{background:#f0f0f0}img{max-width:100%;border:1px solid #ddd}pre{background:#f6f6f6;
padding:.6em;font-size:12px;overflow-x:auto}.cap{color:#555;font-size:13px;margin-bottom:1.5em}
nav a{margin-right:1em}"""


def _table(t):
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in t["header"])
    body = "".join("<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in row) + "</tr>" for row in t["rows"])
    return (f"<h3 id='{t['name']}'>{html.escape(t['title'])}</h3><table><tr>{head}</tr>{body}</table>"
            f"<div class='cap'>{html.escape(t['caption'])} CSV: <a href='{t['csv']}'>{t['csv']}</a></div>")


def _best_of(view):
    if view.halving:
        return "successive halving's winners (searched: " + ", ".join(view.halving) + ")"
    return ", ".join(view.best) or "-"


def write(r):
    a = r.sweep.attrs
    facts = [("file", r.sweep.path), ("sweep state", a.get("sweep_state", "-")),
             ("points", f"{r.sweep.size} ({int(r.sweep.ok().sum())} ok)"),
             ("varied", ", ".join(r.view.axes) or "nothing (replicas only)"),
             ("folded", ", ".join(f"{b} (follows {a})" for b, a in r.view.dependents().items()) or "-"),
             ("best of", _best_of(r.view)), ("losses shown as", r.scale.note),
             ("stored loss convention", a.get("loss_convention", "")),
             ("normalisation", a.get("normalisation_convention", "")),
             ("software", f"{a.get('software_version', '')} ({a.get('git_revision', '')}), {a.get('build_flags', '')}, {a.get('libm', 'libm not recorded')}"),
             ("written", a.get("written_utc", ""))]
    parts = [f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>icl-report: "
             f"{html.escape(r.sweep_name)}</title><style>{STYLE}</style></head><body>",
             f"<h1>icl-report: {html.escape(r.sweep_name)}</h1>",
             "<nav>" + "".join(f"<a href='#{k}'>{v}</a>" for k, v in SECTIONS
                               if any(f["section"] == k for f in r.figures)) + "<a href='#tables'>Tables</a></nav>",
             "<table>" + "".join(f"<tr><th>{html.escape(k)}</th><td style='text-align:left'>{html.escape(str(v))}</td></tr>"
                                 for k, v in facts) + "</table>"]
    if r.pruned:
        parts.append(f"<p>{r.pruned} point(s) pruned by successive halving (their curves up to the rung are in the file); "
                     f"the tables and figures use {r.view.kept()}.</p>")
    if r.failures:
        parts.append("<h2>Points that did not finish or were not analysed</h2><pre>" + html.escape("\n".join(r.failures)) + "</pre>")
    parts.append("<h2 id='tables'>Tables</h2><p>Every point: <a href='points.csv'>points.csv</a>.</p>")
    parts += [_table(t) for t in r.tables]
    for key, title in SECTIONS:
        figures = [f for f in r.figures if f["section"] == key]
        if figures:
            parts.append(f"<h2 id='{key}'>{title}</h2>")
            for f in figures:
                parts.append(f"<h3>{html.escape(f['title'])}</h3><a href='{f['file']}'><img src='{f['file']}' "
                             f"alt='{html.escape(f['title'])}'></a><div class='cap'>{html.escape(f['caption'])}</div>")
    parts.append("<h2>Spec</h2><pre>" + html.escape(str(a.get("spec", ""))) + "</pre></body></html>")
    with open(os.path.join(r.outdir, "index.html"), "w") as f:
        f.write("\n".join(parts))
    return "index.html"
