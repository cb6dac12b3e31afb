"""One command at a time changes a lab: an flock on .lab/lock, taken by every command that changes the lab (the
full run, sweep, ablate, up, down, provision, prereqs) and held until it ends. Two runs in one checkout would
share .lab/overrides.json, the provisioning stamp and ansible.log, restart each other's services mid-load, and a
second run's failed boot would destroy the first one's machines.

The file names its holder (PID, command, run id once known, since when), so a refused command can say who holds
the lab and how to stop it. The kernel releases an flock when its holder dies, however it dies; a file that
still names a holder when the lock is free therefore names one that died without releasing it, and the next
command says so as it takes the lab over. The descriptor is close-on-exec: the daemons and tools the lab
starts (libvirtd, slirp4netns, JMeter) never inherit the lock and never keep it held after the lab exits.
"""
from __future__ import annotations

import contextlib
import datetime
import fcntl
import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path

from lab import paths
from lab.errors import LabError

PATH = paths.STATE_DIR / "lock"

_held: dict = {}        # this process's lock while it holds it: {"fd": int, "info": dict}


class Busy(LabError):
    """Another process holds the lab; the message names it and how to stop it."""


def _read(fd: int) -> dict | None:
    try:
        data = json.loads(os.pread(fd, 4096, 0) or b"null")
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _write(fd: int, info: dict) -> None:
    try:
        os.ftruncate(fd, 0)
        os.pwrite(fd, (json.dumps(info) + "\n").encode(), 0)
    except OSError:         # a full disk: the lock is held all the same, its holder just goes unnamed
        pass


def describe(info: dict) -> str:
    run = f"run {info['run_id']}, " if info.get("run_id") else ""
    return f"`{info.get('command') or './start.sh'}` ({run}PID {info.get('pid')}, since {info.get('since')})"


def holder(path: Path | None = None) -> dict | None:
    """What the lock file says: its holder, or one that died holding it; None when it names nobody."""
    try:
        fd = os.open(path or PATH, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        return _read(fd) or None
    finally:
        os.close(fd)


@contextlib.contextmanager
def hold(command: str, path: Path | None = None, log: Callable[[str], None] = print) -> Iterator[dict]:
    """The lab's lock for the duration, or Busy naming the holder. Released however the block ends (an
    exception, Ctrl-C, SIGTERM raised as KeyboardInterrupt); re-entrant within one process."""
    if _held:
        yield _held["info"]
        return
    path = path or PATH
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    os.fchmod(fd, 0o600)      # it names the holder's command line: the lab's own to read (one made 0644 before too)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            info = _read(fd)
            raise Busy(f"the lab is busy: {describe(info)} holds it. Wait for it to end, or stop it with "
                       f"`kill -INT {info.get('pid')}` (as Ctrl-C in its terminal: it still collects and reports)"
                       if info else "the lab is busy: another ./start.sh has just taken it") from None
        last = _read(fd)
        if last and last.get("pid"):
            log(f"the last holder of the lab, {describe(last)}, died without releasing it: taking it over (its "
                "machines may be left in any state: ./start.sh status)")
        info = {"pid": os.getpid(), "command": command, "run_id": None,
                "since": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")}
        _write(fd, info)
        _held.update(fd=fd, info=info)
        try:
            yield info
        finally:
            _held.clear()
            _write(fd, {})       # released cleanly: the file names nobody (emptied while still held)
    finally:
        os.close(fd)             # closing the descriptor releases the flock


def note(run_id: str) -> None:
    """The run this process's lock is held for, for a refused command to name; nothing when it holds none."""
    if _held:
        _held["info"]["run_id"] = run_id
        _write(_held["fd"], _held["info"])
