"""Destroy both machines and stop everything the lab started; with --hosts, the lab's firewall table and HTTPD off
the user's hosts, nothing else."""
from __future__ import annotations

import argparse
from pathlib import Path

from lab import steps
from lab.machines import lifecycle
from lab.provision import hosts_down

HELP = ("destroy the machines, stop the lab (with --hosts: the lab's firewall table and HTTPD off your hosts, "
        "nothing else)")
NEEDS_ROOT = True
TAKES_LOCK = True
RUN_OPTIONS = frozenset({"hosts"})


def add_arguments(parser) -> None:
    parser.add_argument("--hosts", type=Path, default=argparse.SUPPRESS, metavar="INVENTORY",
                        help="the inventory of a --hosts run: delete the lab's nftables table and stop HTTPD there")


def main(args) -> int:
    if getattr(args, "hosts", None) is not None:      # real hosts: the lab's firewall and HTTPD off them
        with steps.step(f"the lab off the hosts of {args.hosts} (its firewall table, HTTPD)"):
            hosts_down.down(args.hosts, steps.note)
        return 0
    lifecycle.refuse_foreign()
    lifecycle.down()
    return 0
