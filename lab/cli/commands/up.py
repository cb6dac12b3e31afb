"""Install missing host prerequisites, build or reuse the base box (or image), bring both machines up."""
from __future__ import annotations

from lab.experiment import design
from lab.machines import lifecycle, settings

HELP = "bring both machines up"
NEEDS_ROOT = True
TAKES_LOCK = True
RUN_OPTIONS = frozenset()


def main(args) -> int:
    s = settings.load()
    lifecycle.refuse_foreign()
    lifecycle.up(s, design.own_suites())      # each machine on the box of its own knob set's Java
    return 0
