"""The machines' base made ahead: a container image's root file system, or a VM's whole box. A cold start on
containers spent 16 s on the app's jar and the knobs' check before `up` began the image's 62 s of mmdebstrap and apt
(results/20261130T101705Z-cycle-cold), and on emulated VMs as long before the box's 67 s
(results/20261202T082512Z-bench-cycle): a command that runs trials now starts that build (`images`) as soon as it
knows the machines' kind, in a process of its own, and `up` takes it (`take`) when it needs it. The build writes
only in a folder of its own: the box is moved into place (or the image imported) by `up`, under the lab's lock. The
process leads a session of its own, so its mmdebstrap, apt and dpkg are one process group: a run that stops before
`up` took it (bad knobs, Ctrl-C, another lab in the namespace, a failure) ends that group, undoes what is mounted in
its folder (and a box's loop devices) and removes it, and nothing is left changed but the checkout's login key (made
once, as `up` would). Not on a host without the build's tools yet: `up` installs the host's prerequisites first and
then builds it itself (a new host's first run raced that install and failed, 2026-12-01).

    python -m lab.machines.ahead KIND SUITE PARENT_PID ROOT    (the process itself: KIND libvirt writes the suite's
                                                             box file in ROOT, containers its root file system)
"""
from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

from lab import paths, steps
from lab.machines import box, image, prereqs, provider, settings

PREFIX = "image-"           # box.work_dir's prefix for a base made ahead
OWNER = "owner"             # in that folder: the PID of the command it was made ahead for
AUTOGROUP_NICE = -10       # ~9× the CPU weight of a nice-0 session (first())
STOP_GRACE_S = 30           # mmdebstrap undoes its mounts on SIGTERM; dpkg may take a few seconds to stop
_PR_SET_PDEATHSIG = 1
_CLONE_NEWNS = 0x00020000
_LIBC = ctypes.CDLL(None, use_errno=True)      # prctl (not in os) and unshare (os.unshare only from 3.12)
NOUN = {provider.LIBVIRT: "box", provider.CONTAINERS: "image"}     # what a build of that kind makes (its log's name)


class Build:
    """One suite's base (a VM's box or a container's root file system) being made by its own process group, in
    `work`/root."""

    def __init__(self, suite: str, work: Path, proc: subprocess.Popen, log: Path, kind: str = provider.CONTAINERS):
        self.suite, self.work, self.proc, self.log, self.kind = suite, work, proc, log, kind
        self.what = f"{suite} box" if kind == provider.LIBVIRT else f"{suite} root file system"
        self.started = time.monotonic()

    def take(self) -> Path:
        """The finished root file system, or the box file in it (its folder, work, is now the caller's to remove);
        BoxError with the build's last lines when it failed."""
        if self.proc.poll() is None:
            steps.note(f"the {self.what}, started {time.monotonic() - self.started:.0f} s ago beside the jar and the "
                       "knobs' check: waiting for it")
        code = self.proc.wait()
        if code != 0:
            box.remove_work(self.work)
            tail = "\n  ".join(self.log.read_text(errors="replace").splitlines()[-12:]) if self.log.exists() else ""
            raise box.BoxError(f"{NOUN[self.kind]} build failed: the {self.what} made ahead exited {code} (its whole "
                               f"output: {self.log})\n  {tail}")
        steps.note(f"the {self.what} made ahead in {time.monotonic() - self.started:.0f} s")
        root = self.work / "root"
        return root / box.box_file(self.suite).name if self.kind == provider.LIBVIRT else root

    def cancel(self) -> None:
        """Its process group ended (TERM, then KILL after STOP_GRACE_S), its mounts undone, its folder removed.
        The group, not only its leader: a leader that dies first leaves mmdebstrap, apt or dpkg still writing in
        the folder for as long as the signal takes to reach them (a loaded CI host: long enough to be seen)."""
        for sig in (signal.SIGTERM, signal.SIGKILL):
            if not self._running():
                break
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, sig)        # the group this lab started: its leader is not reaped yet
            deadline = time.monotonic() + STOP_GRACE_S
            while self._running() and time.monotonic() < deadline:
                time.sleep(0.05)
        box.remove_work(self.work)

    def _running(self) -> bool:
        """Whether its leader or any process of its group still runs (a zombie has ended: its parent reaps it)."""
        return self.proc.poll() is None or bool(group_members(self.proc.pid))


def group_members(pgid: int) -> list[int]:
    """The PIDs of the live (not zombie) processes in process group `pgid`, read from /proc."""
    members = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            state, _ppid, group = stat.read_text().rsplit(")", 1)[1].split()[:3]
        except (OSError, ValueError):
            continue        # ended while read
        if state != "Z" and int(group) == pgid:
            members.append(int(stat.parent.name))
    return members


_building: dict[str, Build] = {}        # suite → its root file system being made, until `up` takes it


def start(suite: str, command: list[str] | None = None, kind: str = provider.CONTAINERS) -> Build:
    """The suite's base for machines of that kind started in a process group of its own; its output in .lab/log/.
    command: what makes it, given the root's folder as its last argument (this module's main unless given)."""
    work = box.work_dir(PREFIX)
    (work / "root").mkdir()
    (work / OWNER).write_text(f"{os.getpid()}\n")
    paths.LOG_DIR.mkdir(parents=True, exist_ok=True)
    log = paths.LOG_DIR / f"{NOUN[kind]}-{suite}.log"
    command = command or [sys.executable, "-m", "lab.machines.ahead", kind, suite, str(os.getpid())]
    with open(log, "w") as out:
        proc = subprocess.Popen([*command, str(work / "root")], cwd=paths.ROOT, stdout=out, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True)
    first(proc.pid)
    return Build(suite, work, proc, log, kind)


def first(pid: int) -> None:
    """The build's session ahead of the command's own in the CPU (its autogroup's nice): it is what `up` will wait
    for, while the jar, the knobs' check and the kit, JMeter and async-profiler beside it have time to spare. Cold
    starts here: 55 s alone; beside them 55-71 s (median 64, 6 runs) without this, 56-65 s (median 61, 5) with it,
    which the host's drift does not let tell apart. Where the kernel has no autogroups it stays as it is."""
    with contextlib.suppress(OSError):
        Path(f"/proc/{pid}/autogroup").write_text(f"{AUTOGROUP_NICE}\n")


def take(suite: str) -> Path | None:
    """The suite's root file system made ahead (waited for), None when none is being made."""
    build = _building.pop(suite, None)
    return build.take() if build is not None else None


def cancel_except(suites: set[str]) -> None:
    """The builds of suites `up` does not need (the guess missed a --set jvm_version) cancelled now."""
    for suite in [s for s in _building if s not in suites]:
        _building.pop(suite).cancel()


def _left_behind() -> None:
    """The folders of builds made ahead for a command that is gone (killed: its build stopped with it)."""
    for work in paths.BOX_DIR.glob(f"{PREFIX}*") if paths.BOX_DIR.is_dir() else ():
        try:
            owner = int((work / OWNER).read_text())
        except (OSError, ValueError):
            continue        # not one made ahead (image.build's own folder removes itself)
        if owner != os.getpid() and not Path(f"/proc/{owner}").exists():
            box.remove_work(work)


@contextlib.contextmanager
def images(kind: str, suites: set[str], missing) -> Iterator[None]:
    """While the body runs, the base of each suite that `missing(suite)` says the machines of that kind lack (a
    container's image in the lab's daemon, a VM's box file) is made ahead; whatever `up` did not take is cancelled
    when the body ends, however it ends."""
    absent = tools_missing(kind)
    if absent:
        steps.note(f"the machines' base is not made ahead: {', '.join(absent)} is not installed yet "
                   "(`up` installs it with the host's prerequisites, then builds it)")
    else:
        _left_behind()
        for suite in sorted(suites):
            if suite not in _building and missing(suite):
                _building[suite] = start(suite, kind=kind)
                steps.note(f"building the {_building[suite].what} for the machines beside the jar and the knobs' "
                           f"check (its output: {_building[suite].log})")
    try:
        yield
    finally:
        while _building:
            _building.popitem()[1].cancel()


def tools_missing(kind: str = provider.CONTAINERS) -> list[str]:
    """The Debian packages of the build's host tools that are not installed (a VM's box: its disk's tools too)."""
    return prereqs.missing(prereqs.IMAGE_TOOLS + (prereqs.DISK_TOOLS if kind == provider.LIBVIRT else ()))


def _orphaned(signum, frame) -> None:
    """The command that started this build died: its group (mmdebstrap, apt, dpkg) stopped with it."""
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    os.killpg(0, signal.SIGTERM)
    raise SystemExit(1)


def private_mounts() -> None:
    """This process's mounts from here on (a box's disk, the chroot's /proc, /sys and /dev) in a mount namespace of
    its own, shared with no other: a mount namespace copied from the host's while they are mounted (a Docker
    daemon or a container started beside the build, under `ip netns exec`) kept its own copy of the disk after the
    build unmounted it, and the build failed releasing its partitions, "error deleting partition 1" (CI's e2e,
    the VMs' box made beside the containers' runs, 2026-12-03). They also end with the build's last process."""
    if _LIBC.unshare(_CLONE_NEWNS) != 0:
        raise OSError(ctypes.get_errno(), "unshare(CLONE_NEWNS) failed: the build's mounts would be the host's")
    subprocess.run(["mount", "--make-rprivate", "/"], check=True, capture_output=True)


def main(argv: list[str]) -> int:
    kind, suite, parent, root = argv[0], argv[1], int(argv[2]), Path(argv[3])
    signal.signal(signal.SIGHUP, _orphaned)
    _LIBC.prctl(_PR_SET_PDEATHSIG, signal.SIGHUP)
    if os.getppid() != parent:       # it died before the line above
        _orphaned(signal.SIGHUP, None)
    private_mounts()
    if kind == provider.LIBVIRT:      # its disk made beside the box, in this build's folder (undone on cancel)
        (root.parent / "build").mkdir()
        box.build(settings.load(), root / box.box_file(suite).name, suite, work=root.parent / "build")
    else:
        image.root_filesystem(settings.load(), suite, root)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:5]))          # KIND SUITE PARENT_PID ROOT
