"""Confinement for what runs a customer's text on the lab's host: a service's jar (`service check`, jvm_cds's training
start), its build, a JMeter plan, a knob's JVM options, the report over a run's labels. Each such process runs

- as the lab's user (lab/unprivileged.py; setpriv: its IDs, no groups, no capabilities at all, no_new_privs);
- in a network namespace: the sandbox (`camel-lab-sandbox`, loopback only: a service's main() reaches nothing but
  what the same check started beside it) or the lab's own (JMeter, which must reach the machines);
- in a cgroup of its own (a child that forks twice is still found, and ended with the rest: `Cgroup.end`);
- with only the environment it is given (`env -i`: no database password, no token of the lab's environment);
- seeing, through a folder its user may not enter (a checkout in /root), only the paths it was given: in a mount
  namespace of its own that folder is a tmpfs holding just those, bound from the real ones (lab/sh/confine.sh).
  The user reads nothing past permissions: what it needs is shown, not opened to it by a capability.
"""
from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from lab import paths
from lab.errors import LabError

SCRIPT = paths.ROOT / "lab" / "sh" / "confine.sh"
SANDBOX = "camel-lab-sandbox"                       # loopback only
NETNS_DIR = Path("/run/netns")
CGROUP_ROOT = Path("/sys/fs/cgroup")
# the v1 controllers a confined process is placed in (where mounted): pids bounds its forks, memory its size, freezer
# none but is where v1 keeps whole trees of processes visible
V1_CONTROLLERS = ("pids", "memory")
PIDS_MAX = 4096                     # a JVM of a few hundred threads, Maven's forks; a fork bomb stops here
MEMORY_MAX = 4 << 30                # a service's start or a build: far above either, far below the host
END_GRACE_S = 5


class ConfineError(LabError):
    """The confinement could not be set up; the message says which part."""


def python() -> list[Path]:
    """What a confined run of this Python needs to see: the venv and the installation it stands on (its stdlib)."""
    return [Path(sys.prefix), Path(sys.base_prefix)]


def sandbox() -> Path:
    """The sandbox network namespace's file, made when missing: loopback up, no other interface, no route."""
    path = NETNS_DIR / SANDBOX
    if not path.exists():
        for argv in (["ip", "netns", "add", SANDBOX], ["ip", "-n", SANDBOX, "link", "set", "lo", "up"]):
            done = subprocess.run(argv, capture_output=True, text=True)
            if done.returncode != 0 and not (argv[2] == "add" and path.exists()):     # made by a concurrent call
                raise ConfineError(f"the sandbox network namespace: {' '.join(argv)} failed: {done.stderr.strip()}")
    return path


def remove_sandbox() -> bool:
    """`down`: the sandbox namespace gone (nothing runs in it between commands); whether there was one."""
    if not (NETNS_DIR / SANDBOX).exists():
        return False
    subprocess.run(["ip", "netns", "del", SANDBOX], capture_output=True)
    return True


@dataclass(frozen=True)
class Hierarchy:
    mount: Path             # where the host mounts it
    relative: str           # the lab's own cgroup in it, from its root
    fstype: str             # cgroup (v1) or cgroup2
    options: str            # its controller (v1)


def _hierarchies() -> list[Hierarchy]:
    """Each hierarchy used, with the lab's own cgroup in it: a confined process's cgroup is made beside it, so the
    host's limits on the lab still hold."""
    own = {}
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        _, controllers, where = line.split(":", 2)
        own[controllers] = where.lstrip("/")
    if (CGROUP_ROOT / "cgroup.controllers").exists():          # unified (v2) only
        return [Hierarchy(CGROUP_ROOT, own.get("", ""), "cgroup2", "")]
    found = []
    for controller in V1_CONTROLLERS:
        mount = CGROUP_ROOT / controller
        key = next((k for k in own if controller in k.split(",")), None)
        if key is not None and (mount / "cgroup.procs").exists():
            found.append(Hierarchy(mount, own[key], "cgroup", controller))
    return found


@dataclass(frozen=True)
class Cgroup:
    """A cgroup of its own in each hierarchy, for one confined command and every process it makes."""
    joins: tuple[tuple[Hierarchy, str], ...]        # (hierarchy, the cgroup's path from its root)

    @property
    def folders(self) -> tuple[Path, ...]:
        return tuple(hierarchy.mount / relative for hierarchy, relative in self.joins)

    @classmethod
    def make(cls, name: str) -> Cgroup:
        made = []
        for hierarchy in _hierarchies():
            relative = str(Path(hierarchy.relative) / f"camel-lab-{name}-{os.getpid()}")
            folder = hierarchy.mount / relative
            try:
                folder.mkdir(exist_ok=True)
            except OSError as e:
                raise ConfineError(f"a cgroup for {name}: cannot make {folder} ({e.strerror})") from None
            made.append((hierarchy, relative))
            for limit, value in (("pids.max", PIDS_MAX), ("memory.limit_in_bytes", MEMORY_MAX),
                                 ("memory.max", MEMORY_MAX)):
                with contextlib.suppress(OSError):
                    (folder / limit).write_text(str(value))
        return cls(tuple(made))

    def procs_files(self) -> list[Path]:
        return [folder / "cgroup.procs" for folder in self.folders]

    def pids(self) -> list[int]:
        found = set()
        for procs in self.procs_files():
            with contextlib.suppress(OSError):
                found.update(int(pid) for pid in procs.read_text().split())
        return sorted(found)

    def end(self) -> list[int]:
        """Every process still in it ended (SIGTERM, then SIGKILL after END_GRACE_S), the cgroup removed; the PIDs
        that were still there (what outlived the command the lab waited for)."""
        left = self.pids()
        for sig in (signal.SIGTERM, signal.SIGKILL):
            for pid in self.pids():
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, sig)
            until = time.monotonic() + END_GRACE_S
            while self.pids() and time.monotonic() < until:
                time.sleep(0.05)
            if not self.pids():
                break
        for folder in self.folders:
            with contextlib.suppress(OSError):
                folder.rmdir()
        return left

    @contextlib.contextmanager
    def held(self) -> Iterator[Cgroup]:
        try:
            yield self
        finally:
            self.end()


# Folders any user may write (the host's /tmp and its kind): a confined command gets empty ones of its own, so that
# nothing it writes outside what it was lent outlives it or reaches another process of the host
PRIVATE = (Path("/tmp"), Path("/var/tmp"), Path("/dev/shm"), Path("/run/lock"))
CLOSED_MODE, PRIVATE_MODE = "0755", "1777"


def _private() -> list[Path]:
    return [folder for folder in PRIVATE if folder.is_dir() and not folder.is_symlink()]


def _opened(account, needed: list[Path]) -> set[Path]:
    """The needed paths, each needed folder the user may not enter itself (a 0700 run folder or results/ of a test)
    given as what it holds: shown in an empty folder of their own, its entries keep their own permissions."""
    found = set()
    for path in (Path(p).resolve() for p in needed if Path(p).exists()):
        if path.is_dir() and not account.enters(path):
            found |= {entry for entry in path.iterdir() if not entry.is_symlink()}     # a link: never shown
        else:
            found.add(path)
    return found


def shows(account, needed: list[Path]) -> list[tuple[Path, Path]]:
    """(folder the command gets empty, path to show inside it) for each needed path inside one of the private folders
    or behind a folder the user may not enter; a path inside another shown one goes with it."""
    found = []
    private = _private()
    for path in sorted(_opened(account, needed), key=lambda p: len(p.parts)):
        if any(path.is_relative_to(shown) for _, shown in found):
            continue
        folder = next((f for f in private if path.is_relative_to(f)), None) or account.blocked([path])
        if folder is not None and folder != path:
            found.append((folder, path))
    return found


def shown_through(account, needed: list[Path]) -> list[str]:
    """The folders closed to the user through which the command was shown what it needed (for run.json)."""
    private = _private()
    return sorted({str(folder) for folder, _ in shows(account, needed) if folder not in private})


def command(account, argv: list[str], needed: list[Path] = (), env: Mapping[str, str] | None = None,
            netns: Path | None = None, cgroup: Cgroup | None = None, die_with_parent: bool = True,
            binds: Mapping[Path, Path] | None = None) -> list[str]:
    """argv confined: as account's user (no capabilities), in netns (None: the caller's), in cgroup, with env alone
    (None: account.environment()), with private /tmp and its kind, seeing the needed paths (what it reads or writes)
    there and behind closed folders, and each file of binds as the file it maps to (a build's resolv.conf)."""
    line = [str(SCRIPT)]
    for hierarchy, relative in cgroup.joins if cgroup else ():
        line += ["--cgroup", str(hierarchy.mount), relative, hierarchy.fstype, hierarchy.options]
    if netns is not None:
        line += ["--netns", str(netns)]
    found = shows(account, list(needed))
    private = _private()
    for folder in [*private, *dict.fromkeys(f for f, _ in found if f not in private)]:
        line += ["--folder", str(folder), PRIVATE_MODE if folder in private else CLOSED_MODE]
    for folder, path in found:
        line += ["--show", str(folder), str(path)]
    for file, source in (binds or {}).items():
        line += ["--bind", str(file), str(source)]
    environment = dict(account.environment() if env is None else env)
    if "PATH" in environment:       # the folders the user can search (root's own, /root/.pyenv, are no use to it)
        environment["PATH"] = ":".join(p for p in environment["PATH"].split(":")
                                       if p and account.blocked([Path(p) / "-"]) is None)
    return [*line, "--", *account.setpriv(die_with_parent), "--",
            "env", "-i", *(f"{k}={v}" for k, v in environment.items()), *argv]


CLONE_NEWNET = 0x40000000


def _enter(netns: Path) -> None:
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    with open(netns) as handle:
        if libc.setns(handle.fileno(), CLONE_NEWNET) != 0:
            raise ConfineError(f"cannot enter the network namespace {netns}: {os.strerror(ctypes.get_errno())}")


@contextlib.contextmanager
def netns_thread(netns: Path | None) -> Iterator:
    """A call of f(*args) made on a thread of its own inside netns (None: here): the lab's own probes of what it
    started in the sandbox (a network namespace is a thread's, not the process's)."""
    from concurrent.futures import ThreadPoolExecutor
    if netns is None:
        yield lambda f, *args: f(*args)
        return
    with ThreadPoolExecutor(1, thread_name_prefix="netns", initializer=_enter, initargs=(netns,)) as pool:
        yield lambda f, *args: pool.submit(f, *args).result()
