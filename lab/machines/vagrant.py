"""The twin machines through Vagrant: box registration, up, status, destroy, SSH access.

Vagrant runs inside the lab namespace (lab.machines.netns) with the lab's own VAGRANT_HOME and dot-file
folder, so a user's own boxes and Vagrant projects are never touched.
"""
from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import subprocess
import time
from dataclasses import asdict
from pathlib import Path

from lab import paths, shell
from lab.errors import LabError
from lab.machines import NAMES, accel, box, containers, image, netns, placement, provider
from lab.machines.reach import SSH_CONFIG

DOMAIN_PREFIX = "camel-lab-"                 # set in the Vagrantfile (libvirt default_prefix)
SERIAL_LOG = "/var/log/libvirt/qemu/lab-{name}-serial.log"   # each guest's console (the Vagrantfile's lv.serial)
DOMAIN_DEFINITIONS = Path("/etc/libvirt/qemu")   # libvirt's domain XML files, also of a crashed lab
NETWORKS = ("lab-mgmt", "lab-private")       # libvirt networks the Vagrantfile asks for
VAGRANT_PROVIDERS = {provider.LIBVIRT: "libvirt", provider.CONTAINERS: "docker"}   # the lab's → Vagrant's name
DOTFILE = paths.STATE_DIR / "vagrant"        # Vagrant's state of the machines (VAGRANT_DOTFILE_PATH): their ids


class MachineError(LabError):
    """A machine could not be brought up or reached; the message names it."""


def resolve(settings, suites: dict[str, str], detect=accel.detect) -> dict:
    """Settings as the Vagrantfile reads them: provider, accelerator and CPU placement decided, each machine's box
    (or image) named (suites: machine → the Debian suite of its box)."""
    resolved = asdict(settings)
    chosen = provider.choose(settings.provider, settings.accelerator, detect)
    cpusets = (placement.for_containers(settings.cpu_placement, NAMES, settings.cpus)
               if chosen["provider"] == provider.CONTAINERS else placement.resolve(settings.cpu_placement, NAMES))
    resolved.update(requested=asdict(settings), **chosen, cpusets=cpusets, suites=dict(suites),
                    login_key=str(box.login_key()))
    return with_suites(resolved, suites)


def with_suites(resolved: dict, suites: dict[str, str]) -> dict:
    """The resolved settings with each machine on its suite's box (a VM) or image (a container)."""
    resolved = {**resolved, "suites": dict(suites), "boxes": {n: box.box_name(suites[n]) for n in NAMES}}
    if resolved.get("provider") == provider.CONTAINERS:
        resolved.update(images={n: image.image_name(suites[n]) for n in NAMES},
                        create_args={n: containers.create_args(resolved["memory_mb"], resolved["cpus"],
                                                               (resolved.get("cpusets") or {}).get(n))
                                     for n in NAMES})
    return resolved


def kind() -> str:
    """The running lab's provider (libvirt where none is recorded: labs made before containers)."""
    return (read_resolved() or {}).get("provider") or provider.LIBVIRT


def in_containers() -> bool:
    return kind() == provider.CONTAINERS


def write_resolved(resolved: dict) -> None:
    paths.STATE_DIR.mkdir(parents=True, exist_ok=True)
    paths.SETTINGS_JSON.write_text(json.dumps(resolved, indent=2, sort_keys=True))


def read_resolved() -> dict | None:
    try:
        return json.loads(paths.SETTINGS_JSON.read_text())
    except (OSError, ValueError):
        return None


def vagrant_env() -> dict:
    env = {**os.environ,
           "VAGRANT_HOME": str(paths.VAGRANT_HOME),
           "VAGRANT_DOTFILE_PATH": str(DOTFILE),
           "VAGRANT_DEFAULT_PROVIDER": VAGRANT_PROVIDERS[kind()],
           "VAGRANT_CHECKPOINT_DISABLE": "1",
           "VAGRANT_NO_COLOR": "1",
           "LIBVIRT_DEFAULT_URI": netns.LIBVIRT_URI,
           "LAB_SETTINGS": str(paths.SETTINGS_JSON)}
    # the lab's Docker daemon, through Debian's client that matches it (also for a libvirt lab: Vagrant may have to
    # destroy containers a killed lab left)
    env.update(containers.environment(), PATH=f"{Path(containers.DOCKER).parent}:{env.get('PATH', '')}")
    return env


def vagrant(*args: str, stream: bool = False, timeout: float | None = None,
            what: str | None = None) -> subprocess.CompletedProcess:
    """Runs vagrant in the lab namespace from the project root (where the Vagrantfile is). With `what`, a
    failure raises MachineError naming it."""
    cmd = netns.wrap(["vagrant", *args])
    if stream:
        return _streamed(cmd, timeout)
    return shell.run(cmd, what or f"vagrant {args[0]}", error=MachineError, check=what is not None,
                     cwd=paths.ROOT, env=vagrant_env(), timeout=timeout)


def _streamed(cmd: list[str], timeout: float | None) -> subprocess.CompletedProcess:
    """Shows Vagrant's messages as they come, without its carriage-return progress bars."""
    proc = subprocess.Popen(cmd, cwd=paths.ROOT, env=vagrant_env(), stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    deadline = None if timeout is None else time.monotonic() + timeout
    kept = []
    for raw in iter(proc.stdout.readline, b""):
        for line in raw.decode(errors="replace").replace("\x1b[K", "\r").split("\r"):
            line = line.rstrip()
            if line and not line.lstrip().startswith("Progress:"):
                print(f"    {line}", flush=True)
                kept.append(line)
        if deadline and time.monotonic() > deadline:
            proc.kill()
            break
    proc.wait()
    return subprocess.CompletedProcess(cmd, proc.returncode, "\n".join(kept), "")


def parse_status(machine_readable: str) -> dict[str, str]:
    """`vagrant status --machine-readable` -> {machine: state}."""
    states = {}
    for line in machine_readable.splitlines():
        parts = line.split(",")
        if len(parts) >= 4 and parts[2] == "state":
            states[parts[1]] = parts[3]
    return states


def states() -> dict[str, str]:
    if not healthy():
        return {name: "not_created" for name in NAMES}
    if in_containers():
        return container_states()
    result = vagrant("status", "--machine-readable")
    found = parse_status(result.stdout)
    return {name: found.get(name, "unknown") for name in NAMES}


def container_ids() -> dict[str, str]:
    """Each machine's container id as Vagrant's docker provider keeps it ("" where it keeps none)."""
    ids = {}
    for name in NAMES:
        try:
            ids[name] = (DOTFILE / "machines" / name / VAGRANT_PROVIDERS[provider.CONTAINERS] / "id").read_text()
        except OSError:
            ids[name] = ""
    return {name: cid.strip() for name, cid in ids.items()}


def container_states() -> dict[str, str]:
    """What `vagrant status` says of containers, read as Vagrant's docker provider reads it (provider.rb `state`,
    driver.rb `state`): the container id Vagrant keeps for a machine, running when `docker ps` lists it, stopped
    when `docker ps -a` does, else not created. Without Ruby's start: ~0.1 s, not ~2 s, on every status."""
    ids = container_ids()
    running, created = (set(containers.docker("ps", *flag, "-q", "--no-trunc").stdout.split())
                        for flag in ((), ("-a",)))
    return {name: "preparing" if cid == "preparing" else "running" if cid and cid in running else
            "stopped" if cid and cid in created else "not_created" for name, cid in ids.items()}


def ensure_box(box_path: Path, name: str) -> bool:
    """Registers the box file under the lab's VAGRANT_HOME. True when it was added now."""
    listed = vagrant("box", "list", "--machine-readable").stdout
    if re.search(rf",box-name,{re.escape(name)}$", listed, re.MULTILINE):
        return False
    vagrant("box", "add", "--force", "--name", name, str(box_path), what=f"vagrant could not add the box {box_path}")
    return True


def up(boot_timeout: int, names: tuple[str, ...] = NAMES) -> None:
    """The machines at once (vagrant-libvirt boots in parallel): both, or those named."""
    result = vagrant("up", f"--provider={VAGRANT_PROVIDERS[kind()]}", "--no-provision",
                     *([] if names == NAMES else names), stream=True, timeout=boot_timeout + 900)
    if result.returncode != 0:
        raise MachineError("the machines did not come up (vagrant up exited "
                           f"{result.returncode}; the guests' consoles: "
                           + (f"{', '.join(SERIAL_LOG.format(name=n) for n in names)})" if not in_containers()
                              else f"{paths.LOG_DIR / 'dockerd.log'} and `docker logs`)"))


def keep_consoles(label: str) -> list[Path]:
    """Each guest's console as it is now, copied to .lab/log/<label>-<name>-serial.log: the next boot of the
    same machine writes over SERIAL_LOG."""
    kept = []
    for name in NAMES:
        source = Path(SERIAL_LOG.format(name=name))
        if source.is_file():
            paths.LOG_DIR.mkdir(parents=True, exist_ok=True)
            target = paths.LOG_DIR / f"{label}-{name}-serial.log"
            shutil.copyfile(source, target)
            kept.append(target)
    return kept


def write_ssh_config() -> Path:
    if in_containers():
        SSH_CONFIG.write_text(container_ssh_config())
        return SSH_CONFIG
    result = vagrant("ssh-config", *NAMES, what="vagrant ssh-config failed")
    # Vagrant names hosts after the machines; keep its options (user, key, port) as they are.
    SSH_CONFIG.write_text(result.stdout)
    return SSH_CONFIG


# `vagrant ssh-config`'s options for a machine whose private key the Vagrantfile names (config.ssh.private_key_path)
SSH_OPTIONS = ("User vagrant", "Port 22", "UserKnownHostsFile /dev/null", "StrictHostKeyChecking no",
               "PasswordAuthentication no", "IdentityFile {key}", "IdentitiesOnly yes", "LogLevel FATAL")


def container_ssh_config() -> str:
    """What `vagrant ssh-config` writes for the containers, as its docker provider finds them (provider.rb
    `ssh_info`: the container's address on Docker's default bridge, port 22), without Ruby's start (~3 s of every
    `up`); MachineError when a machine has no address yet."""
    found = container_ids()
    if not all(found.values()):
        raise MachineError(f"vagrant ssh-config failed: Vagrant keeps no container for {found}")
    out = containers.docker("inspect", "--format", "{{.NetworkSettings.IPAddress}}", *found.values())
    addresses = dict(zip(found, out.stdout.split(), strict=False))
    if out.returncode != 0 or any(not addresses.get(name) for name in NAMES):
        raise MachineError(f"vagrant ssh-config failed: the containers' addresses are not known yet "
                           f"({out.stderr.strip()[-300:] or addresses})")
    key = box.login_key()
    return "\n".join(f"Host {name}\n  HostName {addresses[name]}\n"
                     + "\n".join(f"  {option.format(key=key)}" for option in SSH_OPTIONS) + "\n"
                     for name in NAMES)


def destroy(names: tuple[str, ...] = NAMES) -> bool:
    """Destroys both machines, or those named (no-op when there are none). True when vagrant succeeded."""
    if not healthy():
        return True
    return vagrant("destroy", "--force", *([] if names == NAMES else names), stream=True, timeout=600).returncode == 0


def healthy() -> bool:
    """The lab namespace and the daemon of the machines' kind (libvirtd, or the lab's dockerd) answer."""
    if in_containers():
        return netns.healthy(libvirt=False) and containers.daemon_running()
    return netns.healthy(libvirt=True)


def domains() -> list[str]:
    """libvirt domains of the lab (by name prefix), running or not."""
    if in_containers() or not netns.healthy(libvirt=True):
        return []
    out = netns.virsh("list", "--all", "--name").stdout
    return [d for d in out.split() if d.startswith(DOMAIN_PREFIX)]


def undefine_leftover_domains() -> list[str]:
    """Domains Vagrant no longer knows (its state was lost): destroyed and undefined with their disks."""
    gone = []
    for dom in domains():
        netns.virsh("destroy", dom)
        netns.virsh("undefine", dom, "--remove-all-storage")
        gone.append(dom)
    return gone


def vcpu_placement(name: str) -> str:
    """The host cores a running machine's vCPUs (a container's processes) may use, as libvirt (Docker) reports
    them."""
    if in_containers():
        return containers.cpuset(name) or "all"
    out = netns.virsh("vcpupin", DOMAIN_PREFIX + name).stdout
    cores = sorted({line.split()[-1] for line in out.splitlines() if re.match(r"^\s*\d+\s", line)})
    return ";".join(cores) if cores else "unknown"


def pin(name: str, cpuset: str) -> None:
    """A running machine's vCPUs and emulator threads (a container's processes) may use these host cores from now
    on (libvirt --live; the container's cpuset)."""
    if in_containers():
        containers.pin(name, cpuset)
        return
    domain = DOMAIN_PREFIX + name
    count = int(netns.virsh("vcpucount", domain, "--live", "--active", check=True).stdout.split()[0])
    for vcpu in range(count):
        netns.virsh("vcpupin", domain, str(vcpu), cpuset, "--live", check=True)
    netns.virsh("emulatorpin", domain, cpuset, "--live", check=True)


def pin_checked(name: str, cpuset: str, when: str = "") -> None:
    """pin(), then libvirt must show the machine's vCPUs on exactly those cores (it may refuse without a word):
    MachineError otherwise, saying `when` (e.g. " after the start")."""
    pin(name, cpuset)
    shown = vcpu_placement(name)
    if set().union(*(placement.cores(c) for c in shown.split(";"))) != placement.cores(cpuset):
        raise MachineError(f"{name}: its vCPUs are on host cores {shown}{when}, not {cpuset}")


@contextlib.contextmanager
def cores_shared(cpusets: dict[str, str], log=print):
    """Both machines on all of the twins' host cores for the duration: their services' equal start. Pinned, the
    machine that is ready first leaves its core idle while its twin's two vCPUs still share one; shared, the
    slower start finishes on both. Each machine gets its own cores back after, also when the start failed,
    and the load never runs unless libvirt shows them so (placement.py: pinned twins are equal, unpinned not)."""
    if not cpusets:
        yield
        return
    both = placement.shared(cpusets)
    for name in cpusets:
        pin(name, both)
    try:
        yield
    finally:
        for name, cpuset in cpusets.items():
            pin_checked(name, cpuset, " after the start")
        log(f"each machine back on its own host cores: {'; '.join(f'{n} {c}' for n, c in cpusets.items())}")


def forget_containers() -> None:
    """Vagrant's record of the machines as containers (their ids), once the containers are gone: a machine
    recorded under one provider cannot be brought up under the other."""
    for record in (DOTFILE / "machines").glob(f"*/{VAGRANT_PROVIDERS[provider.CONTAINERS]}"):
        shutil.rmtree(record, ignore_errors=True)


def defined_domains() -> list[str]:
    """Machines whose libvirt domain is defined, read from libvirt's XML files (they outlive a crashed lab)."""
    return sorted(f.name[len(DOMAIN_PREFIX):-len(".xml")] for f in DOMAIN_DEFINITIONS.glob(DOMAIN_PREFIX + "*.xml"))
