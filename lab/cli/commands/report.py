"""(Re)write the report of a run folder."""
from __future__ import annotations

from pathlib import Path

from lab.experiment import load, reporting
from lab.experiment.options import seconds

HELP = "(re)write a run folder's report"
NEEDS_ROOT = False
TAKES_LOCK = False
RUN_OPTIONS = frozenset({"warmup"})


def add_arguments(parser) -> None:
    parser.add_argument("run_dir", type=Path, metavar="RUN_FOLDER", help="e.g. results/20261123T101500Z-quick")
    parser.add_argument("--warmup", type=lambda t: t if t == "auto" else seconds(t), default=None,
                        metavar="TIME|auto", help="warm-up to exclude (default: the one in run.json); auto: from "
                        "where both machines settled")
    parser.add_argument("--dashboards", action="store_true",
                        help="make JMeter's HTML dashboards first (a tune's search runs are left without them)")


def main(args) -> int:
    if args.dashboards:
        load.dashboards(args.run_dir)
    return reporting.report(args.run_dir, args.warmup)
