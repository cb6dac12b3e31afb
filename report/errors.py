"""The report's one error family (as lab/errors.py is the lab's; report/ never imports lab/). A ReportError is a
failure the user must read: `python -m report` (report/__main__.py) prints it as one line, `python -m report:
MESSAGE`, without a traceback, and exits with its exit_code. Anything else that escapes a command is a bug and shows
as one (a traceback, exit 1)."""
from __future__ import annotations


class ReportError(Exception):
    """A failure the user must read: one message naming the folder, file, option or gate and the problem; exit 1."""
    exit_code = 1


class BadInput(ReportError, ValueError):
    """Input refused before anything was written (an option, a folder that is not what the command reads, a gate
    that cannot be read): exit 2."""
    exit_code = 2
