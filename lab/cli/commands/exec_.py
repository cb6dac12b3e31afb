"""Run a command inside the lab's network namespace (e.g. ssh -F .lab/ssh_config default)."""
from __future__ import annotations

import argparse

from lab.machines import lifecycle

HELP = "run a command in the lab namespace"
NEEDS_ROOT = True
TAKES_LOCK = False
RUN_OPTIONS = frozenset()


def add_arguments(parser) -> None:
    parser.add_argument("argv", nargs=argparse.REMAINDER, help="the command (after --)")


def main(args) -> int:
    return lifecycle.exec_inside(args.argv)
