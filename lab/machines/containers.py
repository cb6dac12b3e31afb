"""The twin machines as system containers (provider `containers`): the lab's own Docker daemon, their shape, and
what a container cannot do.

The daemon is the lab's, started inside the lab namespace like libvirtd (there may be no service manager), with its
state under /var/lib/camel-lab/docker and its sockets under /run/camel-lab-docker: its bridges, NAT rules and
containers live in the lab's namespace, so Vagrant, Ansible and JMeter reach the machines on their private IPs as
they reach VMs, and a user's own Docker daemon, images and networks are never touched (nor used: its networks are in
the host's namespace, where the lab sends no traffic). Every process is ended by its recorded PID.
"""
from __future__ import annotations

import ipaddress
import json
import os
import re
import shutil
import subprocess
import time
from pathlib import Path

from lab import paths, procs, shell
from lab.errors import LabError
from lab.machines import netns

DAEMON = "dockerd"
# Unix sockets have a 108-byte path limit: the daemon's run-time files sit under /run, not in the checkout.
RUNTIME_DIR = Path("/run/camel-lab-docker")
SOCKET = RUNTIME_DIR / "docker.sock"
# Images and containers' layers: kept across down, and host-wide like Maven's and pip's caches: one lab runs on a
# host at a time, and an image is named by its recipe's hash, so a second checkout reuses what the first built.
DATA_ROOT = Path("/var/lib/camel-lab/docker")
CGROUP_PARENT = "camel-lab"                  # /sys/fs/cgroup/<controller>/camel-lab/<container id>
PREFIX = "camel-lab-"                        # the containers' names (the Vagrantfile's d.name)
DOCKER = "/usr/bin/docker"                   # Debian's client, matching its daemon (another may come first on PATH)
# What systemd as PID 1 needs in a container without --privileged (refused on these hosts): mounting its own
# /run and the cgroup hierarchies of its private cgroup namespace (SYS_ADMIN; seccomp filters mount(2) too),
# and the stop signal it takes as "shut down"; and what the roles need: the machine's firewall and network
# settings in its own network namespace (NET_ADMIN).
SYSTEMD_ARGS = ("--cap-add", "SYS_ADMIN", "--cap-add", "NET_ADMIN", "--security-opt", "seccomp=unconfined",
                "--security-opt", "apparmor=unconfined", "--cgroupns", "private", "--tmpfs", "/run:exec",
                "--tmpfs", "/run/lock", "--stop-signal", "SIGRTMIN+3", "--stop-timeout", "20")


class ContainerError(LabError):
    """The lab's Docker daemon or a container could not be set up; the message says which."""


def environment() -> dict:
    """What the docker client (Vagrant's provider too) needs to reach the lab's daemon only."""
    return {"DOCKER_HOST": f"unix://{SOCKET}"}


def docker(*args: str, check: bool = False, what: str | None = None, **kw) -> subprocess.CompletedProcess:
    """docker ARGS against the lab's daemon; with check a failure raises ContainerError naming `what`."""
    return shell.run([DOCKER, *args], what or f"docker {args[0]}", error=ContainerError, check=check,
                     env={**os.environ, **environment()}, **kw)


def daemon_running() -> bool:
    return procs.alive(DAEMON) and _answers(within=20)


def _answers(within: float) -> bool:
    """The daemon on SOCKET answers within that many seconds. A daemon restarted after a kill restores its
    containers before it answers (over 10 s on a busy host): not yet answering is not a failure."""
    if not SOCKET.exists():
        return False
    try:
        return docker("version", "--format", "{{.Server.Version}}", timeout=within).returncode == 0
    except subprocess.TimeoutExpired:
        return False


def start_daemon(bridge: str | None = None, timeout: float = 60) -> None:
    """dockerd inside the lab namespace (which must exist), with the host's cgroup hierarchies mounted again
    there; waits until it answers. bridge: the network of its default bridge, each container's first interface
    (the machines' management network, as the VMs' eth0). Its log: .lab/log/dockerd.log."""
    if daemon_running():
        return
    procs.forget(DAEMON)
    RUNTIME_DIR.mkdir(mode=0o700, parents=True, exist_ok=True)
    DATA_ROOT.mkdir(parents=True, exist_ok=True)
    paths.LOG_DIR.mkdir(parents=True, exist_ok=True)
    pidfile = RUNTIME_DIR / "dockerd.pid"
    pidfile.unlink(missing_ok=True)
    args = ["dockerd", f"--data-root={DATA_ROOT}", f"--exec-root={RUNTIME_DIR / 'exec'}", f"--pidfile={pidfile}",
            f"--host=unix://{SOCKET}", f"--cgroup-parent={CGROUP_PARENT}", "--exec-opt", "native.cgroupdriver=cgroupfs",
            "--log-level=warn", "--userland-proxy=false", "--ip-forward=true"]
    if bridge:
        network = ipaddress.IPv4Network(bridge)
        args.append(f"--bip={network.network_address + 1}/{network.prefixlen}")
    script = f"{netns.cgroup_mounts()}; exec {' '.join(args)}"
    with open(paths.LOG_DIR / "dockerd.log", "ab") as log:
        proc = subprocess.Popen(netns.wrap(["sh", "-c", script]), stdout=log, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True)
    procs.record(DAEMON, proc.pid)      # `exec` keeps the PID: the record is dockerd's
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise ContainerError(f"dockerd exited {proc.returncode}: "
                                 f"{(paths.LOG_DIR / 'dockerd.log').read_text()[-600:]}")
        if _answers(within=10):
            procs.record(DAEMON, proc.pid)
            return
        time.sleep(0.3)
    raise ContainerError(f"dockerd does not answer on {SOCKET} after {timeout:.0f} s "
                         f"(see {paths.LOG_DIR / 'dockerd.log'})")


def lab_containers() -> list[str]:
    """The lab's containers (by name prefix), running or not."""
    if not daemon_running():
        return []
    out = docker("ps", "-a", "--format", "{{.Names}}").stdout
    return [n for n in out.split() if n.startswith(PREFIX)]


def remove_containers() -> list[str]:
    """The lab's containers removed by name, also those Vagrant no longer knows (a killed lab's: their names would
    refuse the next boot's). Returns what it did."""
    return [f"container {name} removed" for name in lab_containers()
            if docker("rm", "--force", "--volumes", name, timeout=60).returncode == 0]


def stop_daemon() -> list[str]:
    """The lab's containers removed, its networks too, then the daemon ended by its PID. Returns what it did."""
    done = []
    if daemon_running():
        done += remove_containers()
        done += [f"docker network {n} removed" for n in networks() if docker("network", "rm", n).returncode == 0]
    if procs.alive(DAEMON):
        procs.stop(DAEMON, grace=30)
        done.append("dockerd stopped")
    procs.forget(DAEMON)
    # A killed daemon's containerd and shims were started by it: its pidfile under the exec root names them.
    for pidfile in (RUNTIME_DIR / "exec").glob("containerd/containerd.pid") if RUNTIME_DIR.is_dir() else ():
        try:
            pid = int(pidfile.read_text().strip())
        except (OSError, ValueError):
            continue
        if procs.pid_alive(pid) and procs.terminate(pid):
            done.append(f"leftover containerd {pid} ended")
    subprocess.run(["umount", "-l", str(RUNTIME_DIR / "exec" / "netns")], capture_output=True)
    return done


def networks() -> list[str]:
    """The networks Vagrant made for the lab (vagrant_network_<subnet>), in the lab's daemon only."""
    out = docker("network", "ls", "--format", "{{.Name}}").stdout
    return [n for n in out.split() if n.startswith("vagrant_network")]


def inspect(name: str) -> dict:
    result = docker("inspect", PREFIX + name, timeout=30)
    try:
        return json.loads(result.stdout)[0] if result.returncode == 0 else {}
    except (ValueError, IndexError):
        return {}


def cpuset(name: str) -> str:
    """The host cores a running machine may use (its cgroup's cpuset; empty: all)."""
    return (inspect(name).get("HostConfig") or {}).get("CpusetCpus") or ""


def pin(name: str, cores: str) -> None:
    """A running container's processes may use these host cores from now on (its cgroup's cpuset)."""
    docker("update", "--cpuset-cpus", cores, PREFIX + name, check=True, what=f"{name}: pinning to cores {cores}")


def create_args(memory_mb: int, cpus: int, cores: str | None) -> list[str]:
    """docker create's arguments for one machine of this shape: memory and memory+swap both memory_mb (a VM of
    that size has no more), `cpus` CPUs of quota, and its host cores where placement gives it some."""
    shape = ["--memory", f"{memory_mb}m", "--memory-swap", f"{memory_mb}m", "--cpus", str(cpus),
             "--pids-limit", "4096"]
    if cores:
        shape += ["--cpuset-cpus", cores]
    return [*SYSTEMD_ARGS, *shape]


# -- what a container cannot do ------------------------------------------------------------------------------

SYSCTL_ROOT = Path("/proc/sys")


def netns_sysctls() -> set[str]:
    """The kernel settings a machine of its own may change in a container: those root may write in a fresh
    network namespace of this host's kernel (the containers' kernel). Every other one is the host's, shared by
    both twins and everything else on the host: a container must not change it."""
    script = ("find /proc/sys/net -type f -perm -u+w 2>/dev/null")
    result = subprocess.run(["unshare", "--net", "sh", "-c", script], capture_output=True, text=True, timeout=60)
    if result.returncode != 0 and not result.stdout:
        raise ContainerError(f"could not list the per-namespace kernel settings: {shell.tail(result)}")
    return {_key(line) for line in result.stdout.split() if line.startswith("/proc/sys/")}


def _key(path: str) -> str:
    return path[len("/proc/sys/"):].replace("/", ".")


def sysctl_refusals(wanted: dict, per_namespace: set[str]) -> dict[str, str]:
    """base_sysctl entries a container cannot take, each with why."""
    refused = {}
    for name in wanted:
        key = str(name)
        if key in per_namespace:
            continue
        refused[key] = ("not a per-network-namespace kernel setting: on containers the kernel is the host's, "
                        "shared by both machines and the host, so the lab does not change it"
                        + (" (read-only outside the host's own namespace)" if re.match(r"net\.", key) else ""))
    return refused


def cgroup_memory(name: str) -> dict:
    """The container's memory as its own cgroup has it (bytes): limit, usage, the most it used, and how often the
    cgroup's OOM killer fired (cgroup v1: memory.*)."""
    cid = inspect(name).get("Id")
    if not cid:
        return {}
    base = Path("/sys/fs/cgroup/memory") / CGROUP_PARENT / cid
    figures = {}
    for key, file in (("limit", "memory.limit_in_bytes"), ("usage", "memory.usage_in_bytes"),
                      ("max_usage", "memory.max_usage_in_bytes"), ("swap_limit", "memory.memsw.limit_in_bytes")):
        try:
            figures[key] = int((base / file).read_text())
        except (OSError, ValueError):
            pass
    try:
        for line in (base / "memory.oom_control").read_text().splitlines():
            k, _, v = line.partition(" ")
            if k == "oom_kill":
                figures["oom_kills"] = int(v)
    except (OSError, ValueError):
        pass
    return figures


# -- what a killed lab leaves ---------------------------------------------------------------------------------

CGROUP_ROOT = Path("/sys/fs/cgroup")


def _leftover_cgroups() -> list[Path]:
    """The containers' cgroups under the lab's parent, in every hierarchy (a killed daemon leaves them), with
    those their systemd made inside (its own hierarchies: name=systemd, unified), deepest first."""
    if not CGROUP_ROOT.is_dir():
        return []
    groups = [p for p in CGROUP_ROOT.glob(f"*/{CGROUP_PARENT}/*") if p.is_dir()]
    inside = [Path(top) / d for group in groups for top, dirs, _ in os.walk(group) for d in dirs]
    return sorted(groups + inside, key=lambda p: -len(p.parts))


def remains() -> bool:
    """Anything of the lab's containers is left: its daemon recorded, its run-time folder, or a cgroup of theirs."""
    return procs.recorded(DAEMON) is not None or RUNTIME_DIR.exists() or bool(_leftover_cgroups())


def end_leftovers() -> list[str]:
    """Processes still in the lab's containers' cgroups (their daemon and shims were killed) ended by PID, and the
    cgroups removed: they are the lab's own, started in its containers."""
    done = []
    for group in _leftover_cgroups():
        try:
            pids = [int(p) for p in (group / "cgroup.procs").read_text().split()]
        except (OSError, ValueError):
            pids = []
        for pid in pids:
            if procs.terminate(pid, grace=5):
                done.append(f"leftover container process {pid} ended")
    for group in _leftover_cgroups():
        try:
            group.rmdir()
        except OSError:
            pass
    for parent in CGROUP_ROOT.glob(f"*/{CGROUP_PARENT}"):
        try:
            parent.rmdir()
        except OSError:
            pass
    if RUNTIME_DIR.exists() and not procs.alive(DAEMON):
        subprocess.run(["umount", "-l", str(RUNTIME_DIR / "exec" / "netns")], capture_output=True)
        shutil.rmtree(RUNTIME_DIR, ignore_errors=True)
    return done
