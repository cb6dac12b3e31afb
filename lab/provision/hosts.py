"""Real hosts (`./start.sh --hosts INVENTORY`): the two configurations on hosts an Ansible inventory names, instead
of the twin VMs, and optionally JMeter's remote engines on the hosts of its `loadgen` group.

The inventory is read by Ansible itself (`ansible-inventory --list`: YAML, INI or a script, as the user wrote it).
`default` and `tuned` are each a host of that name or a group of that name holding one host. Before anything
changes, every host is checked (check(): SSH, sudo without a password, facts); then the lab reaches the targets the
way it reaches its VMs, through an ssh_config of its own (Host default, Host tuned), without the lab namespace.
"""
from __future__ import annotations

import ipaddress
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from lab import machines, paths
from lab.errors import BadInput, LabError
from lab.machines import reach
from lab.provision import playbook

LOADGEN = "loadgen"                              # the inventory group of JMeter's remote engines
STATE = paths.STATE_DIR / "hosts"               # ssh_config, known_hosts, inventory.yml of the hosts mode
CHECK_PLAYBOOK = paths.ANSIBLE_DIR / "check_hosts.yml"
CHECK_TIMEOUT_S = 300
# the host variables that say how to reach a host; the others (become settings, interpreter) pass through as given
REACH_VARS = ("ansible_host", "ansible_user", "ansible_port", "ansible_ssh_private_key_file", "ansible_connection")
# Variables the lab does not copy into the files it writes (.lab/hosts/): passwords and other secrets by their name,
# and anything vault-encrypted. The lab reaches hosts with keys (BatchMode SSH) and needs sudo without a password.
SECRET_NAME = re.compile(r"pass|secret|token|credential|vault", re.I)


class HostsError(LabError):
    """The inventory or a host is not usable; the message names the file or the host and what to do."""


class BadInventory(HostsError, BadInput):
    """The inventory itself is refused before anything is touched (exit 2, as all bad input)."""


@dataclass(frozen=True)
class Host:
    name: str                       # as the inventory names it
    address: str                    # ansible_host, else the name
    user: str | None = None
    port: int = 22
    key: str | None = None          # ansible_ssh_private_key_file
    connection: str = "ssh"         # ssh, or local (a host that is this machine, e.g. a generator in a test)
    extra: dict = field(default_factory=dict)   # the inventory's other variables of this host, passed through

    def ansible_vars(self) -> dict:
        reach = {"ansible_host": self.address, "ansible_port": self.port, "ansible_connection": self.connection,
                 "ansible_user": self.user, "ansible_ssh_private_key_file": self.key}
        return {**self.extra, **{k: v for k, v in reach.items() if v is not None}}


@dataclass(frozen=True)
class Inventory:
    path: Path
    targets: dict[str, Host]        # "default" / "tuned" → its host
    loadgens: dict[str, Host]       # the loadgen group's hosts, by name (may be empty)

    @property
    def hosts(self) -> dict[str, Host]:
        """Every host under the name the lab gives it: default, tuned, then the generators' own names."""
        return {**self.targets, **self.loadgens}


def read(path: Path | str) -> Inventory:
    """The inventory as Ansible reads it, checked; BadInventory naming the file and the problem."""
    path = Path(path)
    if not path.is_file():
        raise BadInventory(f"--hosts {path}: no such file (an Ansible inventory naming `default` and `tuned`; "
                         "see ansible/inventory/example.yml)")
    done = subprocess.run([str(Path(sys.executable).parent / "ansible-inventory"), "-i", str(path), "--list"],
                          capture_output=True, text=True, env={**os.environ, "ANSIBLE_INVENTORY_UNPARSED_FAILED": "1",
                                                               "ANSIBLE_NOCOLOR": "1"})
    if done.returncode != 0:
        raise BadInventory(f"--hosts {path}: Ansible cannot read it as an inventory:\n  "
                         + "\n  ".join((done.stderr or done.stdout).strip().splitlines()[-8:]))
    return parse(path, json.loads(done.stdout))


def parse(path: Path, listed: dict) -> Inventory:
    """The checked Inventory from `ansible-inventory --list` output."""
    hostvars = listed.get("_meta", {}).get("hostvars", {})
    groups = {name: body for name, body in listed.items() if name != "_meta" and isinstance(body, dict)}

    def members(group: str, seen=()) -> list[str]:
        body = groups.get(group, {})
        found = list(body.get("hosts", []))
        for child in body.get("children", []):
            if child not in seen:
                found += [h for h in members(child, (*seen, group)) if h not in found]
        return found

    every = set(hostvars) | {h for g in groups for h in members(g)}
    problems, targets = [], {}
    for side in machines.NAMES:
        if side in groups and members(side):
            chosen = members(side)
            if len(chosen) != 1:
                problems.append(f"group `{side}` holds {len(chosen)} hosts ({', '.join(chosen)}): it must hold one")
                continue
            targets[side] = chosen[0]
        elif side in every:
            targets[side] = side
        else:
            problems.append(f"no host or group named `{side}` (the lab runs the {side} configuration there)")
    loadgens = members(LOADGEN) if LOADGEN in groups else []
    if len(targets) == 2 and targets["default"] == targets["tuned"]:
        problems.append(f"`default` and `tuned` are the same host ({targets['default']}): an A/B needs two hosts")
    for name in loadgens:
        if name in targets.values():
            problems.append(f"{name} is both a target and in `{LOADGEN}`: a generator must not share a target's CPUs")
    hosts = {}
    for name in [*targets.values(), *loadgens]:
        try:
            hosts[name] = _host(name, hostvars.get(name, {}))
        except ValueError as bad:
            problems.append(str(bad))
    addresses = [hosts[n].address for n in targets.values() if n in hosts and hosts[n].connection != "local"]
    if len(addresses) == 2 and addresses[0] == addresses[1]:
        problems.append(f"`default` and `tuned` have the same address ({addresses[0]}): an A/B needs two hosts")
    if problems:
        raise HostsError(f"--hosts {path}:\n" + "\n".join(f"  {p}" for p in problems))
    return Inventory(path, {side: hosts[name] for side, name in targets.items()},
                     {name: hosts[name] for name in loadgens})


def _host(name: str, given: dict) -> Host:
    port = given.get("ansible_port", 22)
    try:
        port = int(port)
    except (TypeError, ValueError):
        port = -1
    if not 1 <= port <= 65535:
        raise ValueError(f"{name}: ansible_port {given.get('ansible_port')!r} is not a TCP port (1–65535)")
    connection = str(given.get("ansible_connection", "ssh"))
    if connection not in ("ssh", "local"):
        raise ValueError(f"{name}: ansible_connection {connection!r}: the lab reaches hosts over ssh (or local, "
                         "for this machine itself)")
    secrets = sorted(k for k, v in given.items() if k not in REACH_VARS
                     and (SECRET_NAME.search(k) or (isinstance(v, dict) and "__ansible_vault" in v)))
    if secrets:
        raise ValueError(f"{name}: {', '.join(secrets)}: the lab does not copy secrets from the inventory into the "
                         "files it writes (.lab/hosts/): reach the host with a key (ansible_ssh_private_key_file or "
                         "ssh-agent) and give its user sudo without a password, then leave these out")
    return Host(name=name, address=str(given.get("ansible_host", name)), user=given.get("ansible_user"),
                port=port, key=given.get("ansible_ssh_private_key_file"), connection=connection,
                extra={k: v for k, v in given.items() if k not in REACH_VARS})


def ssh_config(inv: Inventory, known_hosts: Path) -> str:
    """The lab's ssh_config for these hosts: each under the lab's name for it (default, tuned, a generator's
    name), so every SSH the lab makes (checks, restarts, collection) reads as it does for the VMs. Host keys are
    learnt on first contact into the lab's own known_hosts, and checked from then on."""
    blocks = []
    for alias, host in inv.hosts.items():
        if host.connection == "local":
            continue
        lines = [f"Host {alias}", f"  HostName {host.address}", f"  Port {host.port}",
                 f"  UserKnownHostsFile {known_hosts}", "  StrictHostKeyChecking accept-new",
                 "  ServerAliveInterval 15"]
        if host.user:
            lines.append(f"  User {host.user}")
        if host.key:
            lines += [f"  IdentityFile {host.key}", "  IdentitiesOnly yes"]
        blocks.append("\n".join(lines))
    return "# Generated by ./start.sh --hosts from " + str(inv.path) + "; do not edit.\n" + "\n\n".join(blocks) + "\n"


def ansible_inventory(inv: Inventory, ssh_config_path: Path, networks: list[str],
                      memory_mb: dict[str, int]) -> dict:
    """The inventory site.yml runs against: the targets as `default` and `tuned`, the generators in `loadgen`;
    each reached through the lab's ssh_config. networks: who may reach the targets' services (this controller
    and the generators, as the targets see them); memory_mb: each target's RAM, for the knobs' memory rules."""
    def entry(host: Host) -> dict:
        if host.connection == "local":       # this machine: as root it needs no sudo (which may not be installed)
            own = {"ansible_become": False} if os.geteuid() == 0 and "ansible_become" not in host.extra else {}
            return {**own, **host.extra, "ansible_connection": "local", "lab_private_ip": host.address}
        # keys checked whatever the environment says; SSH's shared connections kept by where they really go (%C:
        # address, port, user), not by Ansible's default, the lab's name alone (`default` may be another host by now)
        return {**host.extra, "ansible_ssh_common_args": f"-F {ssh_config_path}", "ansible_host_key_checking": True,
                "ansible_control_path": "%(directory)s/%%C", "lab_private_ip": host.address}
    return {"all": {
        "vars": {"lab_networks": sorted(set(networks))},
        "hosts": {side: {**entry(host), "lab_memory_mb": int(memory_mb.get(side, 512))}
                  for side, host in inv.targets.items()},
        "children": {LOADGEN: {"hosts": {name: entry(host) for name, host in inv.loadgens.items()}}}}}


def source_address(address: str) -> str:
    """This machine's address as `address` sees it (the kernel's route to it): what the targets' firewall admits."""
    done = subprocess.run(["ip", "-o", "route", "get", address], capture_output=True, text=True)
    found = re.search(r"\bsrc (\S+)", done.stdout)
    if done.returncode != 0 or not found:
        raise HostsError(f"no route from this machine to {address}: {(done.stderr or done.stdout).strip()}")
    return found.group(1)


def networks(inv: Inventory, facts: dict[str, dict]) -> list[str]:
    """Who the targets must let in: this controller as each target sees it (the client address of the check's SSH
    session there, facts' controller_address: behind NAT not this machine's own) and every generator (a local one
    is this controller). A target that is this machine reaches itself over the loopback, which is always let in."""
    out = set()
    for side, host in inv.targets.items():
        if host.connection == "local":
            continue
        seen = str(facts.get(side, {}).get("controller_address") or "")
        try:
            out |= _one_host_networks(str(ipaddress.ip_address(seen)))
        except ValueError:
            raise HostsError(f"{side} ({host.address}): its SSH session did not say where this machine comes from "
                             f"(SSH_CONNECTION gave {seen!r}): the lab cannot admit itself to its firewall") from None
    for h in inv.loadgens.values():
        out |= _one_host_networks(h.address) if h.connection != "local" else set()
    return sorted(out)


def _one_host_networks(address: str) -> set[str]:
    """address as a one-host network (10.0.0.5/32, 2001:db8::5/128); a name as each address it resolves to here."""
    try:
        found = {ipaddress.ip_address(address)}
    except ValueError:
        try:
            found = {ipaddress.ip_address(a[4][0].split("%")[0]) for a in socket.getaddrinfo(address, None)}
        except (OSError, ValueError) as failure:
            raise HostsError(f"{address}: not resolved here ({failure}): the targets' firewall must admit it") from None
    return {str(ipaddress.ip_network(getattr(ip, "ipv4_mapped", None) or ip)) for ip in found}


def _write_private(path: Path, text: str) -> None:
    """text into path, readable by this user only (0600) whatever the umask, also when path existed before."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.fchmod(fd, 0o600)
    with os.fdopen(fd, "w") as out:
        out.write(text)


def write_state(inv: Inventory, state: Path = STATE) -> tuple[Path, Path]:
    """The lab's ssh_config and the check's inventory for these hosts, under .lab/hosts/ (0700, its files 0600).
    (ssh_config, inventory)"""
    state.mkdir(parents=True, exist_ok=True)
    state.chmod(0o700)
    config = state / "ssh_config"
    _write_private(config, ssh_config(inv, state / "known_hosts"))
    check_inventory = state / "check-inventory.yml"
    _write_private(check_inventory, yaml.safe_dump(ansible_inventory(inv, config, [], {}), sort_keys=False))
    return config, check_inventory


def check(inv: Inventory, state: Path = STATE, timeout_s: float = CHECK_TIMEOUT_S) -> dict[str, dict]:
    """Every host answers over SSH, sudo works without a password, and its facts are read: {lab name: facts}.
    HostsError with one line per host that fails, saying what to fix; nothing is changed on any host."""
    _, check_inventory = write_state(inv, state)
    with tempfile.TemporaryDirectory(prefix="lab-facts-") as facts_dir:
        command = [str(Path(sys.executable).parent / "ansible-playbook"), "-i", str(check_inventory),
                   "-e", json.dumps({"lab_facts_dir": facts_dir}), str(CHECK_PLAYBOOK)]
        env = {**os.environ, "ANSIBLE_CONFIG": str(paths.ANSIBLE_DIR / "ansible.cfg"), "ANSIBLE_NOCOLOR": "1",
               **playbook.JSON_RESULTS, "ANSIBLE_HOST_KEY_CHECKING": "True"}
        try:
            done = subprocess.run(command, cwd=paths.ANSIBLE_DIR, env=env, capture_output=True, text=True,
                                  timeout=timeout_s)
        except subprocess.TimeoutExpired:
            raise HostsError(f"checking the hosts took over {timeout_s:.0f} s (ansible-playbook check_hosts.yml): "
                             "a host that accepts SSH but does not finish logging in?") from None
        facts = {p.stem: json.loads(p.read_text()) for p in Path(facts_dir).glob("*.json")}
    problems = {host: why(result, inv.hosts.get(host), state / "known_hosts")
                for host, result in host_failures(done.stdout)}
    for name in inv.hosts:
        if name not in facts and name not in problems:
            problems[name] = "no facts read (ansible-playbook exited " + str(done.returncode) + "):\n    " + \
                "\n    ".join((done.stderr or done.stdout).strip().splitlines()[-6:])
    if problems:
        raise HostsError("the hosts are not ready; nothing was changed on any of them:\n"
                         + "\n".join(f"  {name} ({inv.hosts[name].address}): {why}" for name, why in problems.items()
                                     if name in inv.hosts))
    for found in facts.values():
        found["memory_mb"] = int(found["memory_mb"]) if str(found.get("memory_mb")).isdigit() else None
        found["cpus"] = int(found["cpus"]) if str(found.get("cpus")).isdigit() else None
    return facts


def host_failures(output: str) -> list[tuple[str, dict]]:
    """(host, result) of each host the check playbook could not reach or failed on."""
    out = []
    for line in output.splitlines():
        m = playbook.FAILED_LINE.match(line)
        if m:
            try:
                out.append((m.group("host"), json.loads(m.group("json"))))
            except ValueError:
                continue
    return out


def why(result: dict, host: Host | None, known_hosts: Path) -> str:
    msg = " ".join(str(result.get("msg", "")).split())
    if result.get("unreachable") and re.search(r"REMOTE HOST IDENTIFICATION HAS CHANGED|Host key verification "
                                                 r"failed", msg, re.I) and host is not None:
        known = host.address if host.port == 22 else f"[{host.address}]:{host.port}"
        return (f"its SSH host key is not the one the lab learnt on first contact (in {known_hosts}): refused, "
                "someone may be between this machine and it. If the host was reinstalled or its keys replaced on "
                f"purpose, forget the old key (ssh-keygen -f {known_hosts} -R '{known}') and run again")
    if result.get("unreachable"):
        return f"unreachable over SSH: {msg.removeprefix('Task failed: ')}"
    if re.search(r"password is required|Missing sudo password|incorrect sudo password", msg, re.I):
        return ("sudo asks for a password: the lab needs sudo without one for this user "
                "(e.g. `user ALL=(ALL) NOPASSWD: ALL` in /etc/sudoers.d/)")
    return msg.removeprefix("Task failed: ") or json.dumps(result)[:300]


def describe(name: str, facts: dict) -> str:
    return (f"{name}: {facts.get('cpus')} CPUs ({facts.get('cpu_model')}), {facts.get('memory_mb')} MB, "
            f"{facts.get('distribution')}, kernel {facts.get('kernel')}, virtualisation {facts.get('virtualization')}")


def prepare(path: Path | str, log=print, state: Path = STATE) -> dict:
    """--hosts: the inventory read and every host checked (nothing changed on any), the lab's ssh_config and the
    inventory site.yml runs against written under .lab/hosts/, and from now on the lab reaches its machines as
    these hosts (lab.machines). Returns what the run needs and records, in the shape of the VMs' settings:
    machines {default, tuned: address}, memory_mb {machine: MB}, inventory (its path), facts, loadgens."""
    inv = read(path)
    facts = check(inv, state)       # it wrote the lab's ssh_config for these hosts
    for name in inv.hosts:
        log(describe(name, facts[name]))
    config = state / "ssh_config"
    memory = {side: facts[side]["memory_mb"] or 512 for side in inv.targets}
    site = state / "inventory.yml"
    _write_private(site, f"# Generated by ./start.sh --hosts from {inv.path}; do not edit.\n"
                   + yaml.safe_dump(ansible_inventory(inv, config, networks(inv, facts), memory), sort_keys=False))
    reach.reach_hosts(config)
    return {"mode": "hosts", "inventory_source": str(inv.path.resolve()), "inventory": str(site),
            "machines": {side: h.address for side, h in inv.targets.items()},
            "hosts": {side: h.name for side, h in inv.targets.items()}, "memory_mb": memory, "facts": facts,
            "ssh_ports": {side: h.port for side, h in inv.targets.items()},
            "loadgens": {name: {"address": h.address, "connection": h.connection} for name, h in inv.loadgens.items()}}
