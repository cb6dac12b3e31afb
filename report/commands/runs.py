"""python -m report runs RESULTS [--label TEXT] [--since DATE] [--service NAME]: the index of runs
(RESULTS/.index/index.sqlite, rebuilt from the folders, which stay the truth) and a table of its folders, oldest
first; a folder that cannot be read is named and skipped. A user who may not write RESULTS (the lab's, root's) gets the
table all the same, read from the folders, and a warning that the index was left as it was."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from report.errors import BadInput
from report.history import index
from report.history.histories import Filters, moment
from report.output import warn

# in a folder of its own: where the lab runs as root the report writes it as the lab's user, in that folder lent to
# it, and results/ itself stays root's alone (lab/experiment/reporting.py)
INDEX = Path(".index") / "index.sqlite"


def add_filters(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--label", help="only folders whose label holds this text")
    parser.add_argument("--since", type=_since, help="only folders started at or after this ISO date or time, UTC "
                                                     "(e.g. 2026-11-28 or '2026-11-28 03:00')")
    parser.add_argument("--service", help="only runs of this service (the lab's own app: sample)")


def _since(text: str):
    try:
        return moment(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def refreshed(results: Path) -> tuple[list[index.Entry], dict[str, str]]:
    """The index rebuilt from RESULTS' folders, and the folders skipped with why; when it cannot be written, the
    same entries from the folders (the index left as it was) and a warning that says why."""
    try:
        skipped = index.rebuild(results, results / INDEX)
    except index.NotWritten as why:
        warn(f"{why}; the runs are read from the folders, the index is left as it was")
        return index.in_memory(results)
    return index.load(results / INDEX), skipped


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("results", help="the results folder (results/)")
    add_filters(parser)
    parser.add_argument("--add", type=Path, metavar="FOLDER", help="only bring FOLDER into the index (a run, series, "
                                                                  "sweep or tune just finished), no table")


def main(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    results = Path(args.results)
    if not results.is_dir():
        raise BadInput(f"{results} is not a folder")
    if args.add is not None:
        try:
            index.add(results / INDEX, args.add)
        except index.Unreadable as why:
            raise BadInput(f"{args.add}: {why}") from None
        except index.NotWritten as why:
            print(f"report: {why}", file=sys.stderr)       # as a document that cannot be written (output.py)
            return 1
        return 0
    entries, skipped = refreshed(results)
    wanted = Filters(label=args.label, since=args.since, service=args.service)
    shown = [e for e in entries if wanted.matches(e)]
    from report.render.history import runs_table  # the statistics' imports (8 s here): only for the table
    print(runs_table(shown))
    print(f"\n{len(shown)} of {len(entries)} indexed folders; index: {results / INDEX}")
    for name, why in sorted(skipped.items()):
        print(f"skipped {name}: {why}", file=sys.stderr)
    return 0
