"""A customer's build runs in a network namespace of its own (lab/machines/build_netns.py): it reaches the package
registries through the lab's uplink and guard, nothing of the host's, and the namespace goes with the build."""
from __future__ import annotations

import os
import socket
import subprocess
from pathlib import Path

import pytest

from lab import unprivileged
from lab.machines import build_netns, netns

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="network namespaces and the lab's user need root")


def test_a_builds_namespace_reaches_nothing_of_the_hosts_and_goes_with_it():
    account = unprivileged.ensure()
    with socket.socket() as listener:           # a service of the host's, on its loopback
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        probe = f"import socket; socket.create_connection(('127.0.0.1', {listener.getsockname()[1]}), 3); print('in')"
        with build_netns.for_a_build() as (network, resolv):
            said = subprocess.run(account.command(["python3", "-c", probe], netns=network,
                                                  binds={Path("/etc/resolv.conf"): resolv}),
                                  capture_output=True, text=True, timeout=60)
            assert "in" not in said.stdout and "Connection refused" in said.stderr, said.stderr
            seen = subprocess.run(account.command(["cat", "/etc/resolv.conf"], netns=network,
                                                  binds={Path("/etc/resolv.conf"): resolv}),
                                  capture_output=True, text=True, timeout=60)
            assert seen.stdout == f"nameserver {netns.SLIRP_DNS}\n"
            rules = subprocess.run(["ip", "netns", "exec", network.name, "nft", "list", "table", "inet", "lab_guard"],
                                   capture_output=True, text=True).stdout
            assert "tcp dport { 80, 443 } accept" in rules and "127.0.0.0/8" in rules, rules
        assert not network.exists() and not resolv.exists()
