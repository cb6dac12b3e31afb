"""Only install the missing host prerequisites (what `up` does first), for the machines' kind chosen."""
from __future__ import annotations

from lab.machines import lifecycle, settings

HELP = "install missing host prerequisites"
NEEDS_ROOT = True
TAKES_LOCK = True
RUN_OPTIONS = frozenset()


def main(args) -> int:
    lifecycle.install_prereqs(settings.load().provider)
    return 0
