"""The tuned set with one tier's changes reverted at a time: which tier carries the gain (a sweep's machinery)."""
from __future__ import annotations

from lab.cli.commands import sweep as sweep_command
from lab.experiment import sweep

HELP = "the tuned set with one tier's changes reverted at a time"
NEEDS_ROOT = True
TAKES_LOCK = True
RUN_OPTIONS = "all"


def main(args) -> int:
    return sweep_command.main(args, sweep.ablation_plan(args.options.configurations["tuned"].base))
