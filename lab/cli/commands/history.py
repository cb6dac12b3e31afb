"""The histories of comparable runs and their change points (results/<stamp>-history/history.html)."""
from __future__ import annotations

from lab.cli.commands import runs
from lab.experiment import results

HELP = "the history of comparable runs and its change points (results/<stamp>-history/history.html)"
NEEDS_ROOT = False
TAKES_LOCK = False
RUN_OPTIONS = frozenset()


def add_arguments(parser) -> None:
    runs.add_filters(parser)
    parser.add_argument("--ignore", metavar="KNOB,…",
                        help="widen the fingerprint: knobs, or parts (load.users, cores, …)")
    parser.add_argument("--also", metavar="versions,commit", help="narrow the fingerprint")


def main(args) -> int:
    return results.history(**runs.filters(args), ignore=args.ignore, also=args.also)
