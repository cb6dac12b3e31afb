"""A container image's root file system made ahead. A cold start on containers spent 16 s on the app's jar and the
knobs' check before `up` began the image's 62 s of mmdebstrap and apt (results/20261130T101705Z-cycle-cold): a
command that runs trials now starts that build (`images`) as soon as it knows the machines' kind, in a process of its
own, and `up` takes it (`take`) when it needs the image. The process leads a session of its own, so its mmdebstrap,
apt and dpkg are one process group: a run that stops before `up` took it (bad knobs, Ctrl-C, another lab in the
namespace, a failure) ends that group, undoes what is mounted in its folder and removes it, and nothing is left
changed. Only a container's base image (one per recipe, host-wide) is made ahead: a VM's box needs loop devices, and
under TCG its boot and provisioning dwarf it. Nor on a host without mmdebstrap yet: `up` installs the host's
prerequisites first and then builds the image itself (a new host's first run raced that install and failed, 2026-12-01).

    python -m lab.machines.ahead SUITE PARENT_PID ROOT    (the process itself: the suite's root file system in ROOT)
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

PREFIX = "image-"           # box.work_dir's prefix for a container's root file system
OWNER = "owner"             # in that folder: the PID of the command it was made ahead for
AUTOGROUP_NICE = -10       # ~9× the CPU weight of a nice-0 session (first())
STOP_GRACE_S = 30           # mmdebstrap undoes its mounts on SIGTERM; dpkg may take a few seconds to stop
_PR_SET_PDEATHSIG = 1


class Build:
    """One suite's root file system being made by its own process group, in `work`/root."""

    def __init__(self, suite: str, work: Path, proc: subprocess.Popen, log: Path):
        self.suite, self.work, self.proc, self.log = suite, work, proc, log
        self.started = time.monotonic()

    def take(self) -> Path:
        """The finished root file system (its folder, work, is now the caller's to remove); BoxError with the
        build's last lines when it failed."""
        if self.proc.poll() is None:
            steps.note(f"the {self.suite} root file system, started {time.monotonic() - self.started:.0f} s ago "
                       "beside the jar and the knobs' check: waiting for it")
        code = self.proc.wait()
        if code != 0:
            box.remove_work(self.work)
            tail = "\n  ".join(self.log.read_text(errors="replace").splitlines()[-12:]) if self.log.exists() else ""
            raise box.BoxError(f"image build failed: the {self.suite} root file system made ahead exited {code} "
                               f"(its whole output: {self.log})\n  {tail}")
        steps.note(f"the {self.suite} root file system made ahead in {time.monotonic() - self.started:.0f} s")
        return self.work / "root"

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


def start(suite: str, command: list[str] | None = None) -> Build:
    """The suite's root file system started in a process group of its own; its output in .lab/log/. command:
    what makes it, given the root's folder as its last argument (this module's main unless given)."""
    work = box.work_dir(PREFIX)
    (work / "root").mkdir()
    (work / OWNER).write_text(f"{os.getpid()}\n")
    paths.LOG_DIR.mkdir(parents=True, exist_ok=True)
    log = paths.LOG_DIR / f"image-{suite}.log"
    command = command or [sys.executable, "-m", "lab.machines.ahead", suite, str(os.getpid())]
    with open(log, "w") as out:
        proc = subprocess.Popen([*command, str(work / "root")], cwd=paths.ROOT, stdout=out, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True)
    first(proc.pid)
    return Build(suite, work, proc, log)


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
    """While the body runs, the base image of each suite that `missing(suite)` says is not in the lab's daemon is
    made ahead (containers only); whatever `up` did not take is cancelled when the body ends, however it ends."""
    absent = tools_missing() if kind == provider.CONTAINERS else []
    if absent:
        steps.note(f"the machines' image is not made ahead: {', '.join(absent)} is not installed yet "
                   "(`up` installs it with the host's prerequisites, then builds the image)")
    elif kind == provider.CONTAINERS:
        _left_behind()
        for suite in sorted(suites):
            if suite not in _building and missing(suite):
                _building[suite] = start(suite)
                steps.note(f"building the {suite} root file system for the machines' image beside the jar and "
                           f"the knobs' check (its output: {_building[suite].log})")
    try:
        yield
    finally:
        while _building:
            _building.popitem()[1].cancel()


def tools_missing() -> list[str]:
    """The Debian packages of the build's host tools that are not installed."""
    return prereqs.missing(prereqs.IMAGE_TOOLS)


def _orphaned(signum, frame) -> None:
    """The command that started this build died: its group (mmdebstrap, apt, dpkg) stopped with it."""
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    os.killpg(0, signal.SIGTERM)
    raise SystemExit(1)


def main(argv: list[str]) -> int:
    suite, parent, root = argv[0], int(argv[1]), Path(argv[2])
    signal.signal(signal.SIGHUP, _orphaned)
    ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGHUP)
    if os.getppid() != parent:       # it died before the line above
        _orphaned(signal.SIGHUP, None)
    image.root_filesystem(settings.load(), suite, root)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:4]))          # SUITE PARENT_PID ROOT
