"""A finished run's or series' verdict against gates, for a pipeline (exit 3 when one fails)."""
from __future__ import annotations

from pathlib import Path

from lab.experiment import reporting

HELP = "a run's or a series' verdict against gates (exit 3 when one fails)"
NEEDS_ROOT = False
TAKES_LOCK = False
RUN_OPTIONS = frozenset()


def add_arguments(parser) -> None:
    parser.add_argument("folder", type=Path, metavar="FOLDER", help="a run or series folder")
    parser.add_argument("--gate", dest="folder_gates", action="append", required=True, metavar="GATE",
                        help="e.g. 'tps>=+10%%', 'errors<=0.1%%', 'p99<=2s' (repeatable)")


def main(args) -> int:
    return reporting.report_command("gate", args.folder, *reporting.gate_args(tuple(args.folder_gates)))
