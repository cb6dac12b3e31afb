"""Running a host command the lab depends on: one way to run it and one way to fail (naming the step and
quoting the tail of the command's output), so every stage reports a broken tool the same way."""
from __future__ import annotations

import subprocess

TAIL_LINES = 15


def tail(result: subprocess.CompletedProcess, lines: int = TAIL_LINES) -> str:
    """The last lines a command wrote (stderr, or stdout when stderr is empty), indented for a message."""
    text = result.stderr or (result.stdout if isinstance(result.stdout, str) else b"") or ""
    if isinstance(text, bytes):     # bytes on stdout are the command's data (a tar), never its message
        text = text.decode(errors="replace")
    return "\n  ".join(text.strip().splitlines()[-lines:])


def shown(cmd: list[str]) -> str:
    """The command as a message quotes it: its program and first arguments, past `ip netns exec NAME` and setpriv."""
    if cmd[:3] == ["ip", "netns", "exec"]:
        cmd = cmd[4:]
    if cmd[:1] and cmd[0].endswith("/confine.sh") and "--" in cmd:    # confined (lab/confine.py)
        cmd = cmd[cmd.index("--") + 1:]
    if cmd[:1] == ["setpriv"] and "--" in cmd:          # as the lab's user (lab/unprivileged.py)
        cmd = cmd[cmd.index("--") + 1:]
    if cmd[:2] == ["env", "-i"]:                        # its environment alone
        cmd = cmd[2:]
        while cmd and "=" in cmd[0]:
            cmd = cmd[1:]
    return " ".join(cmd[:4]) + (" …" if len(cmd) > 4 else "")


def run(cmd: list[str], what: str, error: type[Exception] = RuntimeError, check: bool = True,
        lines: int = TAIL_LINES, **kw) -> subprocess.CompletedProcess:
    """cmd with its output captured (text unless told otherwise). A missing program, and with check a
    non-zero exit, raise `error` with "WHAT: …" and the output's last `lines` lines."""
    kw.setdefault("capture_output", True)
    kw.setdefault("text", "input" not in kw or isinstance(kw["input"], str))
    try:
        result = subprocess.run(cmd, **kw)
    except FileNotFoundError:
        raise error(f"{what}: the command '{cmd[0]}' is not installed") from None
    if check and result.returncode != 0:
        raise error(f"{what}: {shown(cmd)} exited {result.returncode}\n  " + tail(result, lines))
    return result
