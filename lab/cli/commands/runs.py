"""Every run, series, sweep and tune folder, from the index of results/."""
from __future__ import annotations

from lab.experiment import results

HELP = "every run, series, sweep and tune folder, from the index of results/ (rebuilt from the folders)"
NEEDS_ROOT = False
TAKES_LOCK = False
RUN_OPTIONS = frozenset()


def add_arguments(parser) -> None:
    add_filters(parser)


def add_filters(parser) -> None:
    """Which runs: shared with history."""
    parser.add_argument("--label", dest="filter_label", metavar="TEXT", help="only runs whose label holds TEXT")
    parser.add_argument("--since", metavar="DATE",
                        help="only runs started at or after DATE (ISO, UTC: 2026-11-28 or '2026-11-28 03:00')")
    parser.add_argument("--service", dest="filter_service", metavar="NAME",
                        help="only runs of this service (the lab's own app: sample)")


def filters(args) -> dict:
    return {"label": args.filter_label, "since": args.since, "service": args.filter_service}


def main(args) -> int:
    return results.runs(**filters(args))
