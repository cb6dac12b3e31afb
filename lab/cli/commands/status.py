"""Each machine's state, IP, provider, accelerator, memory, CPUs, uptime and CPU placement."""
from __future__ import annotations

import os

from lab.machines import status

HELP = "show the machines"
NEEDS_ROOT = False       # without root: what the lab's files say
TAKES_LOCK = False
RUN_OPTIONS = frozenset()


def main(args) -> int:
    if os.geteuid() != 0:
        status.show_without_root()
    else:
        status.show()
    return 0
