"""python -m report history RESULTS OUT [--ignore KNOB,…] [--also versions,commit] [--label …] [--since …]
[--service …]: the histories of RESULTS' runs (runs whose fingerprint agrees, report/history/fingerprint.py), each
figure's runs in order with their intervals and the change points found in them, written to OUT/history.md and
OUT/history.html; the table of change points is printed too."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from report.commands.runs import add_filters, refreshed
from report.errors import BadInput
from report.history.fingerprint import check_names
from report.history.histories import Filters, histories
from report.output import WriteFailed, write_files
from report.render.history import change_text, charts, pvalue_text, render
from report.render.html import render_html


def _names(text: str | None) -> frozenset[str]:
    return frozenset(n.strip() for n in (text or "").split(",") if n.strip())


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("results", help="the results folder (results/)")
    parser.add_argument("out", help="where history.md and history.html go")
    add_filters(parser)
    parser.add_argument("--ignore", help="widen the fingerprint: knobs, or parts (design, load, load.users, service, "
                                         "machine_kind, cores, knobs), comma-separated")
    parser.add_argument("--also", help="narrow the fingerprint: versions, commit (comma-separated)")


def main(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    results, out = Path(args.results), Path(args.out)
    if not results.is_dir():
        raise BadInput(f"{results} is not a folder")
    entries, skipped = refreshed(results)
    filters = Filters(label=args.label, since=args.since, service=args.service, ignore=_names(args.ignore),
                      also=_names(args.also))
    known = {k for e in entries for knobs in e.knobs.values() for k in knobs}
    bad = check_names(filters.ignore, filters.also, known)
    if bad:
        raise BadInput("; ".join(bad))
    found = histories(entries, filters)
    said = ", ".join(f"{k} {v}" for k, v in (("label", args.label), ("since", args.since), ("service", args.service),
                                             ("ignoring", args.ignore), ("also", args.also)) if v) or "all"
    text = render(found, skipped, said)
    try:
        write_files(out, {"history.md": text,
                          "history.html": render_html("Camel Tuning Lab — run history", text, charts(found), {},
                                                      charts_title="Charts")})
    except WriteFailed as e:
        print(f"report: {e}", file=sys.stderr)
        return 1
    for h in found:
        changes = sum(len(t.changes) for t in h.tracks)
        print(f"history {h.key}: {len(h.entries)} runs, {changes} change point(s)")
        for t in h.tracks:
            for c, why in zip(t.changes, t.why, strict=True):
                print(f"  {t.title}: at run {c.index + 1} ({h.entries[c.index].id}) {change_text(t, c)}, "
                      f"{pvalue_text(c)}; {'; '.join(why) or 'nothing recorded changed'}")
    print(f"history: {out / 'history.html'}, {out / 'history.md'}")
    return 0
