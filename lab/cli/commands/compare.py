"""Several run folders side by side, in a new folder."""
from __future__ import annotations

from pathlib import Path

from lab.experiment import results

HELP = "several run folders side by side"
NEEDS_ROOT = False
TAKES_LOCK = False
RUN_OPTIONS = frozenset()


def add_arguments(parser) -> None:
    parser.add_argument("run_dirs", type=Path, nargs="+", metavar="RUN_FOLDER",
                        help="two or more run folders; changes are stated against the first")
    parser.add_argument("--out", type=Path, default=None, metavar="FOLDER",
                        help="a new folder for the comparison (default results/<stamp>-compare; e.g. one of your own "
                             "when results/ is root's)")


def main(args) -> int:
    return results.compare_into(args.run_dirs, args.out)
