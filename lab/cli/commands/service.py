"""A service of the user's checked on this host before any machine is used."""
from __future__ import annotations

from pathlib import Path

from lab import steps
from lab.experiment import service_check

HELP = "a service of your own (README: Your own service)"
NEEDS_ROOT = False
TAKES_LOCK = False
RUN_OPTIONS = frozenset({"allow_plan_code"})     # its plan checked as a run's


def add_arguments(parser) -> None:
    parser.add_argument("action", choices=("check",), help="check: its descriptor, jar, stubs and plan, then one "
                        "start here with the tuning kit, before any machine is used")
    parser.add_argument("service", metavar="NAME|PATH", help="services/NAME.yml or a descriptor's path")
    parser.add_argument("--service-root", dest="descriptor_root", type=Path, default=None, metavar="DIR",
                        help="the folder the descriptor's paths may reach (a folder holding it; not /, a folder "
                             "directly under it, a home or one holding the lab's checkout); otherwise its own folder")


def main(args) -> int:
    return service_check.check(args.service, steps.note, allow_plan_code=args.allow_plan_code,
                               root=args.descriptor_root)
