"""Build the app, then provision both machines with Ansible, outside a run (knobs: ansible/knobs.yml, the knob sets;
--set [machine:]knob=value for this run only)."""
from __future__ import annotations

from lab.experiment import provisioning
from lab.machines import settings
from lab.provision import catalog

HELP = "provision both machines (Ansible)"
NEEDS_ROOT = True
TAKES_LOCK = True
RUN_OPTIONS = frozenset({"overrides", "insist_memory"})
INSIST_MEMORY_HELP = ("run a configuration whose memory estimate exceeds the machine's, knowing it may swap or be "
                      "OOM-killed (without it such knobs are refused)")    # provision's, and the full run's


def add_arguments(parser) -> None:
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="[MACHINE:]KNOB=VALUE",
                        help="override a knob for this run, e.g. --set tuned:tomcat_threads_max=250 (repeatable)")
    parser.add_argument("--insist-memory", action="store_true", help=INSIST_MEMORY_HELP)


def main(args) -> int:
    overrides = catalog.parse_overrides(args.overrides)
    return provisioning.provision(overrides, settings.load(), args.insist_memory)
