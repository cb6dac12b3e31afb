"""Processes the lab starts: recorded by PID in .lab/run/<name>.pid and ended by that PID only.

A record whose process is gone (the lab was killed) is stale: alive() says so and forget() drops it.
"""
from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

from lab import paths


def _pidfile(name: str, run_dir: Path) -> Path:
    return run_dir / f"{name}.pid"


def cmdline(pid: int) -> str:
    """The process's command line, its arguments joined by spaces ("" when it is gone)."""
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def record(name: str, pid: int, run_dir: Path = paths.RUN_DIR) -> None:
    """Remembers a started process with the start of its command line (guards against PID reuse)."""
    run_dir.mkdir(parents=True, exist_ok=True)
    _pidfile(name, run_dir).write_text(f"{pid}\n{cmdline(pid)[:200]}\n")


def recorded(name: str, run_dir: Path = paths.RUN_DIR) -> int | None:
    try:
        lines = _pidfile(name, run_dir).read_text().splitlines()
        return int(lines[0])
    except (OSError, ValueError, IndexError):
        return None


def alive(name: str, run_dir: Path = paths.RUN_DIR) -> bool:
    """True when the recorded PID runs and is still the process we started (not a reused PID)."""
    pid = recorded(name, run_dir)
    if pid is None:
        return False
    lines = _pidfile(name, run_dir).read_text().splitlines()
    want = lines[1] if len(lines) > 1 else ""
    have = cmdline(pid)
    return bool(have) and (not want or have.startswith(want.split(" ")[0]))


def names(run_dir: Path = paths.RUN_DIR) -> list[str]:
    return sorted(p.stem for p in run_dir.glob("*.pid")) if run_dir.is_dir() else []


def forget(name: str, run_dir: Path = paths.RUN_DIR) -> None:
    _pidfile(name, run_dir).unlink(missing_ok=True)


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie still answers kill(0); it has ended all the same.
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(") ", 1)[1][0] != "Z"
    except (OSError, IndexError):
        return False


def terminate(pid: int, grace: float = 10.0) -> bool:
    """SIGTERM, then SIGKILL after `grace` seconds. True when the process is gone."""
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return True
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        if not pid_alive(pid):
            return True
        time.sleep(0.2)
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        return True
    time.sleep(0.5)
    return not pid_alive(pid)


def end(proc: subprocess.Popen, grace: float = 10.0) -> None:
    """A child this process started and still holds: SIGTERM, SIGKILL after `grace` seconds, reaped either way."""
    if proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(grace)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def stop(name: str, grace: float = 10.0, run_dir: Path = paths.RUN_DIR) -> bool:
    """Ends a recorded process (if it is still ours) and drops its record."""
    if alive(name, run_dir):
        pid = recorded(name, run_dir)
        if not terminate(pid, grace):
            return False
    forget(name, run_dir)
    return True
