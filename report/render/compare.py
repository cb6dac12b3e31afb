"""python -m report.compare OUT_FOLDER RUN_FOLDER...: several runs side by side (compare.md, compare.html).

For every verdict figure: each run's default and tuned value and its tuned-vs-default interval (as in the
run's own report), and each configuration's change from the first run named ("tuned before and after a knob
change", "three A/A runs: how far does the lab drift"). Runs are not paired in time with each other, so a
change across runs is the ratio (or difference) of two independent estimates: its interval takes t × the σ of
the difference of their independent bootstrap replicates (log scale for ratios), with their degrees of
freedom summed. A/A runs in the list show how far 'identical' drifts between runs on this host.
"""
import argparse
import sys
from pathlib import Path

import numpy as np

from . import MACHINES
from .runs import load_runs, log_or_raw
from .uncertainty import CI, FIGURES, Effect, interval, kind_of
from .verdict import FIGURE_NAMES, effect_text, read_record

UNITS = {"tps": "req/s", "error_pct": "%", "p50": "ms", "p95": "ms", "p99": "ms"}


def across_runs(first, other, side, figure):
    """other's figure of one side vs first's: an Effect (ratio, or difference for error %)."""
    kind = kind_of(figure)
    if first.analysis is None or other.analysis is None:
        e = Effect(figure, kind, float("nan"), float("nan"))
        e.why_not = "a run without a paired window"
        return e
    a, b = first.analysis.effects[figure], other.analysis.effects[figure]
    base, value = getattr(a, side), getattr(b, side)
    e = Effect(figure, kind, base, value)
    if np.isnan(base) or np.isnan(value) or (kind == "ratio" and (base <= 0 or value <= 0)):
        e.why_not = "not measured in both runs"
        return e
    # the runs' own rules first: too few windows, or too few successes for a percentile, in either run
    refused = [f"{run}: {eff.why_not}" for run, eff in (("first run", a), ("this run", b))
               if eff.why_not and "figure is 0" not in eff.why_not]
    if refused or not first.analysis.replicates or not other.analysis.replicates:
        e.why_not = "; ".join(refused) or "a run without resamples"
        return e
    ra, rb = first.analysis.replicates[side][figure], other.analysis.replicates[side][figure]
    df = first.analysis.df(figure) + other.analysis.df(figure)
    if kind == "ratio":
        e.estimate = value / base
        e.low, e.high = interval(e.estimate, np.exp(log_or_raw(kind, rb) - log_or_raw(kind, ra)), df, log_scale=True)
    else:
        e.estimate = value - base
        e.low, e.high = interval(e.estimate, rb - ra, df, log_scale=False)
    return e


def _value(x, figure):
    if x is None or np.isnan(x):
        return "—"
    digits = 1 if figure == "tps" else 2 if figure == "error_pct" else 0
    return f"{x:,.{digits}f} {UNITS[figure]}"


def render(out, runs):
    names = [Path(r.folder).name for r in runs]
    lines = [f"# Camel Tuning Lab — comparison of {len(runs)} runs", "",
             f"Runs, in the order given (changes are against the first, **{names[0]}**):", ""]
    for r, name in zip(runs, names):
        d = r.design
        kind = {"aa": f"A/A ({d['configurations']['default']} on both machines)", "ab": "A/B"}.get(d["kind"], d["kind"])
        swap = " — roles swapped" if r.swapped else ""
        trial = f", trial {d['trial']} of {d['trials']}" if d.get("trial") else ""
        lines.append(f"- [{name}](../{name}/report.html): {kind}{trial}{swap}; status {r.run.status}; "
                     f"verdict: {_verdict_of(r)}")
    lines.append("")
    for figure in FIGURES:
        lines += [f"## {FIGURE_NAMES[figure]}", "",
                  f"| run | default | tuned | tuned vs default ({CI}) | default vs first run | "
                  "tuned vs first run |", "| --- | ---: | ---: | ---: | ---: | ---: |"]
        for r, name in zip(runs, names):
            if r.analysis is None:
                lines.append(f"| {name} | — | — | — (no paired window) | | |")
                continue
            e = r.analysis.effects[figure]
            changes = ["" if r is runs[0] else effect_text(across_runs(runs[0], r, side, figure))
                       for side in MACHINES]
            lines.append(f"| {name} | {_value(e.default, figure)} | {_value(e.tuned, figure)} | {effect_text(e)} | "
                         f"{changes[0]} | {changes[1]} |")
        lines.append("")
    lines += ["Intervals within a run: paired block bootstrap (report/README.md, Uncertainty). Across runs: the "
              "runs are independent, so the interval of a change combines both runs' bootstrap spreads; it does "
              "not include drift of the host between runs — A/A runs in the list measure that.", ""]
    return "\n".join(lines)


def _verdict_of(r):
    record = read_record(r.folder)
    return "(no report yet)" if record is None else record.get("verdict", "")


def write(out, folders):
    from .html import render_html
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    runs = load_runs(folders)
    text = render(out, runs)
    (out / "compare.md").write_text(text, encoding="utf-8")
    (out / "compare.html").write_text(render_html(f"Camel Tuning Lab — {out.name}", text, [], {}), encoding="utf-8")
    return out / "compare.html", out / "compare.md"


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m report.compare", description=__doc__.split("\n\n")[0])
    parser.add_argument("out", help="the comparison's folder, e.g. results/<stamp>-compare")
    parser.add_argument("runs", nargs="+", help="run folders (at least two), the first is the reference")
    args = parser.parse_args(argv)
    if len(args.runs) < 2:
        parser.error("compare needs at least two run folders")
    bad = [r for r in args.runs if not (Path(r) / "run.json").is_file() and not (Path(r) / "default").is_dir()]
    if bad:
        parser.error(f"not run folders (no run.json, no default/): {', '.join(bad)}")
    html_path, md_path = write(args.out, args.runs)
    print(f"compare: {html_path}, {md_path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
