"""icl-report OUT.h5 [-o DIR]: tables (CSV and terminal), PNG figures chosen by the options the sweep
varied, and one offline HTML page linking them all. The entry point `icl-report` (pip install), or
tools/icl-report from a source checkout or a cmake --install tree."""
import argparse
import os
import re
import sys
import time

import numpy as np

from . import (figures, figures_depth, figures_diversity, figures_halving, figures_landscape, figures_newton,
               figures_vo23, figures_weights, html, plot, tables)
from .groups import View
from .load import Sweep
from .plot import Scale

FIGURES = (figures.loss_vs_axis, figures.layer_readouts, figures.loss_vs_noise, figures.loss_curves,
           figures_vo23.replica_curves, figures_vo23.fixed_set,
           figures.alignment, figures.out_of_distribution, figures.ood_grid, figures_weights.preconditioners,
           figures_weights.v24_scalars, figures_weights.gdpp_gamma,
           figures_weights.construction_heatmaps, figures_weights.weight_heatmaps, figures_landscape.landscape,
           figures_vo23.copy_analysis, figures_vo23.rollout, figures_weights.softmax_heads, figures_halving.halving,
           figures_diversity.task_diversity, figures_diversity.context_curve, figures_newton.newton_similarity,
           figures_newton.probe_newton_similarity, figures_newton.probe_gd_similarity,
           figures_newton.probe_over_layers, figures_depth.depth_alpha)


class Report:
    """What one report collects: the view of the sweep, where it writes, its figures and tables."""

    def __init__(self, sweep, view, scale, outdir):
        self.sweep, self.view, self.scale, self.outdir = sweep, view, scale, outdir
        self.sweep_name = os.path.splitext(os.path.basename(sweep.path))[0]
        self.figures, self.tables = [], []
        status = sweep.points["status"]
        analysis_failed = sweep.analysis_failed()
        self.failures = [f"point {i}: {status[i]}: {sweep.points['message'][i]}" if status[i] != "ok" else
                         f"point {i}: trained, analysis failed: {sweep.points['analysis_message'][i]}"
                         for i in range(sweep.size) if status[i] not in ("ok", "pruned") or (status[i] == "ok" and analysis_failed[i])]
        # Successive halving: pruned points stopped at a rung by design; the tables use the view's (View.kept).
        self.pruned = int(np.sum(status == "pruned"))
        # Successive halving: the searched axes (the spec's `search`), else empty.
        found = re.search(r"^search = (.*)$", str(sweep.attrs.get("spec", "")), re.M)
        self.searched = found.group(1).split() if found else []

    def figure(self, file, title, caption, section):
        self.figures.append(dict(file=file, title=title, caption=caption, section=section))

    def table(self, name, title, header, rows, caption, csv_name=None):
        if csv_name is None:
            csv_name = name + ".csv"
            tables.write_csv(os.path.join(self.outdir, csv_name), header, rows)
        self.tables.append(dict(name=name, title=title, header=header, rows=rows, caption=caption, csv=csv_name))


def parse(argv):
    p = argparse.ArgumentParser(prog="icl-report", description=__doc__.split("\n")[0].split(": ", 1)[1])
    p.add_argument("file", help="an icl-sweep results file (icl-sweep run -o, or train -o)")
    p.add_argument("-o", "--out", help="output directory (default: FILE without .h5, plus _report)")
    p.add_argument("--half", action="store_true", help="show losses as 1/2 MSE ([VO23]/[V24]); stored is plain MSE")
    p.add_argument("--best", nargs="+", default=[], metavar="OPTION",
                   help="keep, per condition, the value of OPTION with the lowest mean test loss "
                        "(e.g. lr: best of a rate grid; replica: best seed, as [V24])")
    p.add_argument("--table", nargs=2, metavar=("ROWS", "COLUMNS"), help="pivot tables of --metric")
    p.add_argument("--metric", nargs="+", default=["test_loss"], help="metrics of --table (default test_loss)")
    p.add_argument("--where", nargs="+", default=[], metavar="OPTION=V1[,V2...]",
                   help="only the points whose OPTION has one of these values (e.g. layers=2,5 tie=true)")
    p.add_argument("--quiet", action="store_true", help="no terminal tables")
    return p.parse_args(argv)


def usage_error(option, value, rule):
    print(f"icl-report: option '{option}' = '{value}': {rule}", file=sys.stderr)
    sys.exit(2)


class Stages:
    """On a large file, a line on stderr as each stage ends once 5 s have passed (a report over 10^5 points
    takes seconds per stage: it is not silent)."""

    def __init__(self, quiet):
        self.quiet, self.start, self.after = quiet, time.monotonic(), float(os.environ.get("ICL_REPORT_STAGES_AFTER", 5))

    def done(self, what):
        elapsed = time.monotonic() - self.start
        if not self.quiet and elapsed > self.after:
            print(f"icl-report: {what} ({elapsed:.0f} s)", file=sys.stderr, flush=True)


def main(argv=None):
    args = parse(sys.argv[1:] if argv is None else argv)
    stages = Stages(args.quiet)
    if not os.path.isfile(args.file):
        usage_error("file", args.file, "no such file")
    try:
        sweep = Sweep(args.file)
    except (OSError, ValueError) as e:
        usage_error("file", args.file, f"not a readable icl-sweep results file ({e})")
    stages.done(f"read {sweep.size} points")
    plot.use_methods(sweep.methods)
    found = re.search(r"^search = (.*)$", sweep.attrs.get("spec", ""), re.M)
    halving = found.group(1).split() if found and not args.best else []   # successive halving: its winners
    if halving and not args.quiet:
        print("icl-report: a successive-halving sweep: the tables use each group's winner, as halving.csv names it "
              "(searched: " + " ".join(halving) + ")")
    for option in args.best:
        if option != "replica" and option not in sweep.points:
            usage_error("--best", option, "must be an option of the file or 'replica'")
    where = {}
    for item in args.where:
        option, _, values = item.partition("=")
        if option not in sweep.points or not values:
            usage_error("--where", item, "must be OPTION=VALUE[,VALUE...] with OPTION an option of the file")
        where[option] = values.split(",")
    for option in args.table or ():
        if option not in sweep.points:
            usage_error("--table", option, "must be an option of the file")
    for metric in args.metric:
        if metric not in sweep.metrics:
            usage_error("--metric", metric, "must be a metric of the file: " + ", ".join(sorted(sweep.metrics)))
    outdir = args.out or os.path.splitext(args.file)[0] + "_report"
    if os.path.exists(outdir) and not os.path.isdir(outdir):
        usage_error("-o", outdir, "exists and is not a directory")
    if not sweep.ok().any():
        usage_error("file", args.file, "has no finished point yet (see icl-sweep status; a running sweep merges its "
                    "finished points into the file every --merge-every seconds)")
    view = View(sweep, args.best, where, halving)
    if not view.mask.any():
        usage_error("--where", " ".join(args.where), "no finished point has these values")
    state = sweep.attrs.get("sweep_state", "complete")
    if state != "complete" and not args.quiet:
        print(f"icl-report: the sweep is {state}: {int(sweep.ok().sum())} of {sweep.size} points finished so far")
    os.makedirs(outdir, exist_ok=True)
    r = Report(sweep, view, Scale(args.half), outdir)
    tables.write_points(r)
    tables.summary(r)
    tables.halving(r)
    if args.table:
        tables.pivot(r, args.table[0], args.table[1], args.metric)
    stages.done("tables written")
    for draw in FIGURES:
        draw(r)
        stages.done(f"figure {draw.__name__}")
    page = html.write(r)
    if not args.quiet:
        for t in r.tables:
            print(f"\n{t['title']}\n{tables.text_table(t['header'], t['rows'])}")
        if r.pruned:
            print(f"\n{r.pruned} point(s) pruned by successive halving (curves up to their rung kept); tables use {view.kept()}")
        if r.failures:
            print(f"\n{len(r.failures)} point(s) did not finish or were not analysed:\n  " + "\n  ".join(r.failures[:20]))
    print(f"\nicl-report: {len(r.figures)} figures, {len(r.tables)} tables, points.csv in {outdir}; "
          f"open {os.path.join(outdir, page)}")


if __name__ == "__main__":
    main()
