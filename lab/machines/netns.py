"""The lab's own network namespace, where libvirt or the lab's Docker daemon, the machines, Vagrant, Ansible and
JMeter live. Inside it: a user-space uplink (slirp4netns) for the machines' package downloads, an nftables egress
guard that lets out only DNS (to slirp's resolver) and TCP 80/443 to public addresses, and the daemons the lab starts
(there is no service manager to run them), each recorded by PID (lab.procs) and stopped by that PID; teardown also
works on the remains of a lab that was killed."""
from __future__ import annotations

import ipaddress
import json
import os
import pwd
import re
import shutil
import stat
import subprocess
import time
from pathlib import Path

from lab import paths, procs, shell
from lab.errors import LabError

NAME = "camel-lab"
NETNS_FILE = Path("/var/run/netns") / NAME
NETNS_ETC = Path("/etc/netns") / NAME
UPLINK = "tap0"
# slirp4netns' fixed addresses inside the namespace.
SLIRP_NET = ipaddress.IPv4Network("10.0.2.0/24")
SLIRP_DNS = "10.0.2.3"
# Special-purpose and private ranges no guest may reach through the uplink (plus the host's own
# networks, added at setup). The mirror is reached on whatever public address it resolves to.
BLOCKED_RANGES = (
    "0.0.0.0/8", "10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16", "172.16.0.0/12",
    "192.0.0.0/24", "192.168.0.0/16", "198.18.0.0/15", "224.0.0.0/4", "240.0.0.0/4",
)
CGROUP_V1_CONTROLLERS = ("cpu", "cpuacct", "cpuset", "memory", "devices", "freezer", "blkio", "pids")
LIBVIRT_URI = "qemu:///system"
DAEMONS = ("virtlogd", "libvirtd")          # the VMs' (provider libvirt); containers bring their own (containers.py)
# libvirt keeps QEMU's capabilities in a cache it checks on every call; the cache is stale when "KVM was
# enabled when probing ..., but it is not available now" (virQEMUCapsIsValid): QEMU's probe got KVM, yet
# /dev/kvm is not usable by QEMU's user. Then libvirt probes QEMU again on every call (~4 s each here) and
# `vagrant up` spent ~4 of its ~7 minutes on it. Where QEMU's user cannot use /dev/kvm, libvirt can run
# no KVM guest anyway, so libvirtd sees an empty root-only file there instead and the cache holds. Its
# guests then keep the daemon's /dev (namespaces = []): libvirt 9.0 moves every mount under /dev into a
# guest's private /dev and fails on a file ("Unable to move ... mount to /dev/kvm: Invalid argument").
KVM_DEVICE = Path("/dev/kvm")
QEMU_USER = "libvirt-qemu"
KVM_STAND_IN = paths.RUN_DIR / "no-kvm"
QEMU_CONF = Path("/etc/libvirt/qemu.conf")
LAB_QEMU_CONF = paths.RUN_DIR / "qemu.conf"


class NetnsError(LabError):
    """The namespace or a daemon in it could not be set up; the message says which."""


def wrap(cmd: list[str]) -> list[str]:
    """The command as run inside the lab namespace."""
    return ["ip", "netns", "exec", NAME, *cmd]


def exists() -> bool:
    return NETNS_FILE.exists()


# The checkout whose lab made the namespace. Not in NETNS_ETC: `ip netns exec` bind-mounts every file
# there over /etc/<name> in the namespace.
OWNER_FILE = Path("/run") / f"{NAME}.owner"


def foreign_owner() -> str | None:
    """The other checkout whose lab holds the namespace, if it still exists and runs; None if it is ours or gone.

    The namespace, libvirt's domains and its networks are host-wide: two checkouts cannot run their labs
    at once, and one must never tear down the other's.
    """
    if not exists():
        return None
    try:
        owner = OWNER_FILE.read_text().strip()
    except OSError:
        return None
    if owner and owner != str(paths.ROOT) and Path(owner, "start.sh").exists() and _lab_runs(Path(owner)):
        return owner
    return None



def _lab_runs(root: Path) -> bool:
    """Something of the lab in checkout ROOT still runs: a process it recorded, or any inside the namespace.
    A host that restarted (or a snapshot of one) keeps the namespace's file and its owner but none of its
    processes: those remains block nobody, and teardown clears them."""
    run_dir = root / paths.RUN_DIR.relative_to(paths.ROOT)
    return any(procs.alive(n, run_dir) for n in procs.names(run_dir)) or bool(_pids_in_namespace())


def sh(cmd: list[str], what: str, check: bool = True, **kw) -> subprocess.CompletedProcess:
    """shell.run, failing with NetnsError (build_netns.py's too)."""
    return shell.run(cmd, what, error=NetnsError, check=check, **kw)


def virsh(*args: str, check: bool = False) -> subprocess.CompletedProcess:
    """virsh ARGS against the lab's libvirtd (inside the namespace); with check a failure raises NetnsError."""
    return sh(wrap(["virsh", "-c", LIBVIRT_URI, *args]), f"virsh {args[0]}", check=check)


def libvirt_started() -> bool:
    """libvirt's daemons were started in the namespace (provider libvirt), dead or alive."""
    return any(procs.recorded(n) is not None for n in DAEMONS)


def healthy(libvirt: bool | None = None) -> bool:
    """The namespace exists, its uplink runs; with libvirt (None: where it was started) its daemons run and answer."""
    if not exists() or not procs.alive("slirp4netns"):
        return False
    if not (libvirt_started() if libvirt is None else libvirt):
        return True
    return all(procs.alive(n) for n in DAEMONS) and virsh("version").returncode == 0


def host_networks() -> list[str]:
    """IPv4 networks of the host's own interfaces (guests must not reach them through the uplink)."""
    out = sh(["ip", "-j", "-4", "addr", "show"], "listing the host's addresses").stdout
    nets = []
    for link in json.loads(out or "[]"):
        for addr in link.get("addr_info", []):
            net = ipaddress.IPv4Interface(f"{addr['local']}/{addr['prefixlen']}").network
            if not net.is_loopback:
                nets.append(str(net))
    return nets


def guard_ruleset(blocked_extra: list[str]) -> str:
    """nftables egress guard: what may leave the namespace through the uplink."""
    blocked = ", ".join(dict.fromkeys([*BLOCKED_RANGES, *blocked_extra]))
    return f"""
table inet lab_guard
delete table inet lab_guard
table inet lab_guard {{
  set blocked {{ type ipv4_addr; flags interval; auto-merge; elements = {{ {blocked} }} }}
  chain egress {{
    ip daddr {SLIRP_DNS} udp dport 53 accept
    ip daddr {SLIRP_DNS} tcp dport 53 accept
    ip daddr @blocked counter drop
    meta l4proto tcp tcp dport {{ 80, 443 }} accept
    counter drop
  }}
  chain forward {{ type filter hook forward priority 0; policy accept; oifname "{UPLINK}" jump egress; }}
  chain output {{ type filter hook output priority 0; policy accept; oifname "{UPLINK}" jump egress; }}
}}
"""


def start_uplink(netns_file: Path = NETNS_FILE, record: str = "slirp4netns") -> subprocess.Popen:
    paths.LOG_DIR.mkdir(parents=True, exist_ok=True)
    with open(log := paths.LOG_DIR / f"{record}.log", "ab") as out:
        # --disable-host-loopback: the namespace must not reach the host's 127.0.0.1 services.
        proc = subprocess.Popen(
            ["slirp4netns", "--configure", "--mtu=65520", "--disable-host-loopback",
             "--netns-type=path", str(netns_file), UPLINK],
            stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
    procs.record(record, proc.pid)
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        if sh(["ip", "-n", netns_file.name, "-4", "addr", "show", UPLINK], "the uplink", check=False).stdout.strip():
            return proc
        if proc.poll() is not None:
            raise NetnsError(f"slirp4netns exited {proc.returncode}: {log.read_text()[-500:]}")
        time.sleep(0.3)
    raise NetnsError(f"slirp4netns did not configure {UPLINK} within 15 s (log: {log})")


def cgroup_mounts() -> str:
    """Shell lines mounting the host's cgroup v1 hierarchies again (`ip netns exec` mounts a fresh /sys): libvirtd
    and dockerd need the controllers, a container's systemd its own hierarchy."""
    lines = ["mount -t tmpfs cgroup_root /sys/fs/cgroup"]
    for c in CGROUP_V1_CONTROLLERS:
        if Path(f"/sys/fs/cgroup/{c}").is_dir():
            lines.append(f"mkdir -p /sys/fs/cgroup/{c} && mount -t cgroup -o {c} cgroup /sys/fs/cgroup/{c}")
    if Path("/sys/fs/cgroup/systemd").is_dir():
        lines.append("mkdir -p /sys/fs/cgroup/systemd && "
                     "mount -t cgroup -o none,name=systemd cgroup /sys/fs/cgroup/systemd")
    if Path("/sys/fs/cgroup/unified").is_dir():
        lines.append("mkdir -p /sys/fs/cgroup/unified && mount -t cgroup2 cgroup2 /sys/fs/cgroup/unified")
    return "; ".join(lines)


def permits_read_write(mode: int, owner: int, group: int, uid: int, gids: list[int]) -> bool:
    """Whether a file's mode bits let uid (with gids) read and write it: libvirt's test of /dev/kvm
    (virFileAccessibleAs, run as QEMU's user)."""
    if uid == 0:
        return True
    shift = 6 if owner == uid else 3 if group in gids else 0
    return (mode >> shift) & 0o6 == 0o6


def kvm_unusable_by_qemu(device: Path = KVM_DEVICE, user: str = QEMU_USER) -> bool:
    """/dev/kvm exists but QEMU's user may not open it (or that user does not exist)."""
    try:
        st = device.stat()
    except OSError:
        return False
    try:
        account = pwd.getpwnam(user)
    except KeyError:
        return True
    return not permits_read_write(st.st_mode, st.st_uid, st.st_gid, account.pw_uid,
                                  os.getgrouplist(user, account.pw_gid))


def qemu_conf_without_namespaces(host_conf: str) -> str:
    """The host's qemu.conf with guests' private /dev switched off (any namespaces setting of its own out)."""
    kept = [line for line in host_conf.splitlines() if not re.match(r"\s*namespaces\s*=", line)]
    return "\n".join([*kept, "# The lab's libvirtd shows no /dev/kvm (lab/machines/netns.py): guests keep its /dev.",
                      "namespaces = []", ""])


def _kvm_hidden_mounts() -> str:
    """The shell lines that show libvirtd an empty root-only file at /dev/kvm and a qemu.conf without guests'
    private /dev (in its own mount namespace: `ip netns exec` gives each command one), or nothing where
    QEMU's user can use KVM."""
    if not kvm_unusable_by_qemu():
        return ""
    KVM_STAND_IN.touch()
    KVM_STAND_IN.chmod(0o600)
    host_conf = QEMU_CONF.read_text() if QEMU_CONF.is_file() else ""
    LAB_QEMU_CONF.write_text(qemu_conf_without_namespaces(host_conf))
    LAB_QEMU_CONF.chmod(0o600)
    return f"mount --bind {KVM_STAND_IN} {KVM_DEVICE}; mount --bind {LAB_QEMU_CONF} {QEMU_CONF}; "


def kvm_hidden_from_libvirt() -> bool:
    """What libvirtd sees at /dev/kvm, through its own root: not the device when it was hidden."""
    pid = procs.recorded("libvirtd")
    if pid is None or not KVM_DEVICE.exists():
        return False
    try:
        return not stat.S_ISCHR(os.stat(f"/proc/{pid}/root{KVM_DEVICE}").st_mode)
    except OSError:
        return False


def _start_daemon(name: str) -> None:
    pidfile = paths.RUN_DIR / f"{name}.daemon-pid"
    pidfile.unlink(missing_ok=True)
    hidden = _kvm_hidden_mounts() if name == "libvirtd" else ""
    script = f"{cgroup_mounts()}; {hidden}exec {name} --daemon --pid-file={pidfile}"
    sh(wrap(["sh", "-c", script]), f"starting {name}")
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            procs.record(name, int(pidfile.read_text().strip()))
            return
        except (OSError, ValueError):
            time.sleep(0.2)
    raise NetnsError(f"{name} started but wrote no PID file within 20 s")


def _wait_libvirtd(timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if virsh("version").returncode == 0:
            return
        time.sleep(0.5)
    raise NetnsError(f"libvirtd does not answer on {LIBVIRT_URI} after {timeout:.0f} s "
                     f"(see {paths.LOG_DIR}/libvirtd.log)")


def create(libvirt: bool = True) -> None:
    """Namespace, uplink, guard, and libvirt's daemons (the VMs'). Undoes what it made if any step fails."""
    paths.RUN_DIR.mkdir(parents=True, exist_ok=True)
    paths.LOG_DIR.mkdir(parents=True, exist_ok=True)
    try:
        sh(["ip", "netns", "add", NAME], "creating the lab namespace")
        sh(wrap(["ip", "link", "set", "lo", "up"]), "bringing up loopback in the namespace")
        NETNS_ETC.mkdir(parents=True, exist_ok=True)
        (NETNS_ETC / "resolv.conf").write_text(f"nameserver {SLIRP_DNS}\n")
        OWNER_FILE.write_text(f"{paths.ROOT}\n")
        start_uplink()
        sh(wrap(["nft", "-f", "-"]), "loading the egress guard", input=guard_ruleset(host_networks()))
        sh(wrap(["sysctl", "-qw", "net.ipv4.ip_forward=1"]), "enabling forwarding in the namespace")
        if libvirt:
            for daemon in DAEMONS:
                _start_daemon(daemon)
            _wait_libvirtd()
    except BaseException:
        destroy()
        raise


def _libvirt_leftover_pids() -> list[int]:
    """QEMU and dnsmasq processes libvirt started for the lab (found by libvirt's own PID files)."""
    pids = []
    for pattern in ("/var/run/libvirt/qemu/*.pid", "/var/lib/libvirt/dnsmasq/lab-*.pid"):
        for f in Path("/").glob(pattern.lstrip("/")):
            try:
                pids.append(int(f.read_text().strip()))
            except (OSError, ValueError):
                pass
    ours = {procs.recorded(d) for d in DAEMONS}   # libvirtd's own PID file sits beside the guests'
    return [p for p in pids if p not in ours and procs.pid_alive(p) and in_lab_netns(p)]


def _pids_in_namespace() -> list[int]:
    found = []
    for entry in Path("/proc").glob("[0-9]*"):
        pid = int(entry.name)
        if pid != os.getpid() and in_lab_netns(pid) and procs.pid_alive(pid):
            found.append(pid)
    return found


def in_lab_netns(pid: int) -> bool:
    try:
        return os.stat(f"/proc/{pid}/ns/net").st_ino == os.stat(NETNS_FILE).st_ino
    except OSError:
        return False


def destroy(networks: tuple[str, ...] = ()) -> list[str]:
    """Stops everything the lab started in the namespace and deletes it. Returns what it did."""
    done = []
    if exists() and procs.alive("libvirtd"):
        for net in networks:
            if virsh("net-destroy", net).returncode == 0:
                done.append(f"network {net} destroyed")
    leftovers = _libvirt_leftover_pids() if exists() else []
    for daemon in reversed(DAEMONS):
        if procs.alive(daemon):
            procs.stop(daemon)
            done.append(f"{daemon} stopped")
        procs.forget(daemon)
    # Guests and dnsmasq outlive a killed libvirtd: end them by libvirt's PID files.
    for pid in leftovers:
        if procs.terminate(pid):
            done.append(f"leftover process {pid} ended")
    if procs.alive("slirp4netns"):
        procs.stop("slirp4netns")
        done.append("slirp4netns stopped")
    procs.forget("slirp4netns")
    # A killed lab's daemons are not in our PID records; whatever still runs inside the lab's own
    # namespace was started by a lab.
    for pid in _pids_in_namespace() if exists() else []:
        if procs.terminate(pid):
            done.append(f"leftover process {pid} in the namespace ended")
    if exists():
        sh(["ip", "netns", "delete", NAME], "deleting the lab namespace", check=False)
        done.append(f"namespace {NAME} deleted")
    shutil.rmtree(NETNS_ETC, ignore_errors=True)
    OWNER_FILE.unlink(missing_ok=True)
    return done
