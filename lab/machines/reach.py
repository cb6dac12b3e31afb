"""How the lab reaches its machines: the VMs from inside the lab namespace through Vagrant's ssh_config, or
(./start.sh --hosts, lab/provision/hosts.py) real hosts from this machine's own network through the ssh_config
made from the inventory. Chosen once per process; every SSH and every command towards a machine goes through
here."""
from __future__ import annotations

import subprocess
from pathlib import Path

from lab import paths
from lab.machines import netns

SSH_CONFIG = paths.STATE_DIR / "ssh_config"  # what Ansible, checks and `./start.sh exec` use


# chosen once per process (reach_hosts)
_reach = {"ssh_config": SSH_CONFIG, "wrap": netns.wrap, "vms": True}


def reach_hosts(ssh_config: Path) -> None:
    """From now on the machines are real hosts: SSH through ssh_config, every command run here as it is."""
    _reach.update(ssh_config=ssh_config, wrap=lambda argv: list(argv), vms=False)


def reaches_vms() -> bool:
    return _reach["vms"]


def wrap(cmd: list[str]) -> list[str]:
    """The command as run where the machines are reachable (the lab namespace for the VMs)."""
    return _reach["wrap"](cmd)


def ssh_config() -> Path:
    return _reach["ssh_config"]


def ssh_command(name: str, command: str) -> list[str]:
    """The argv that runs a command on a machine over SSH from where it is reachable."""
    return wrap(["ssh", "-F", str(ssh_config()), "-o", "ConnectTimeout=20", "-o", "BatchMode=yes", name, command])


def ssh(name: str, command: str, timeout: float = 120) -> subprocess.CompletedProcess:
    """Runs a command on a machine over SSH from where it is reachable."""
    return subprocess.run(ssh_command(name, command), capture_output=True, text=True, timeout=timeout)
