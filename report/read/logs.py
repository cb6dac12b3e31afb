"""Hints from a machine's logs/ about why it stopped or struggled: the OOM killer and service restarts
(journal.txt), OutOfMemoryError (app.log), a JVM crash file (hs_err*.log), proxy errors (httpd-error.log),
full GCs (gc.log). Each hint is a count and the first matching line, never a whole log."""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from report.read.oom import read_kills

MAX_LINE = 240
# httpd's error lines put the message last, after time, module, pid and client: keep time and message
HTTPD_LINE = re.compile(r"^\[([^\]]+)\].*?\b(AH\d{5}:.*)$")


@dataclass
class Hint:
    file: str    # relative to the machine folder, e.g. logs/journal.txt
    what: str    # e.g. "OOM killer"
    count: int
    first: str   # first matching line, trimmed


# (file name, what, pattern); patterns are the messages these programs really write
PATTERNS = (
    ("journal.txt", "OOM killer", re.compile(r"Out of memory: Kill|invoked oom-killer|oom-kill:|Killed process \d+")),
    # systemd's words for a service that died or was restarted (a plain "Started" is a normal start)
    ("journal.txt", "service failed or restarted",
     re.compile(r"Main process exited|Failed with result|Scheduled restart job|restart counter is at")),
    # the journal starts at the mark before the load: a service stopped in it was stopped during the run (but the
    # lab's own recorder, which collection stops)
    ("journal.txt", "service stopped during the run",
     re.compile(r"systemd\[1\]: Stopped (?!lab-pmlogger)\S+\.service")),
    ("app.log", "OutOfMemoryError", re.compile(r"OutOfMemoryError")),
    ("app.log", "ERROR lines", re.compile(r"\bERROR\b")),
    # the HTTP client's I/O failures toward the external service (logged at INFO by its retry handler)
    ("app.log", "calls to the backend failed",
     re.compile(r"NoHttpResponseException|HttpHostConnectException|ConnectException|Connection refused|"
                r"SocketTimeoutException|Read timed out")),
    ("gc.log", "full GCs", re.compile(r"Pause Full")),
    ("gc.log", "to-space exhausted / evacuation failure", re.compile(r"To-space exhausted|Evacuation Failure", re.I)),
    ("httpd-error.log", "proxy errors", re.compile(r"\[proxy[^\]]*:error\]|AH0(0898|1102|0957|1114|0940)")),
    ("httpd-error.log", "MaxRequestWorkers reached", re.compile(r"AH00484|MaxRequestWorkers")),
)


def _condense(line: str) -> str:
    httpd = HTTPD_LINE.match(line)
    return f"[{httpd.group(1)}] {httpd.group(2)}" if httpd else line


def _scan(path: Path, pattern: re.Pattern[str]) -> tuple[int, str]:
    count, first = 0, ""
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            if pattern.search(line):
                count += 1
                if not first:
                    first = _condense(line.strip())[:MAX_LINE]
    return count, first


def _oom_hints(logs: Path) -> list[Hint]:
    """The OOM killer's own account (report/read/oom.py): whom it killed and what held the memory. From the
    journal; from the serial console only when the journal did not come back (its lines are not dated: a kill
    there may be older than the run)."""
    kills = [k for k in read_kills(logs / "journal.txt") if k.tasks]      # a kill without its table: nothing new
    if kills:
        return [Hint("logs/journal.txt", "OOM killer: what held the memory", len(kills), kills[0].words())]
    if (logs / "journal.txt").is_file():
        return []
    kills = [k for k in read_kills(logs / "serial-console.log") if k.tasks]
    return [Hint("logs/serial-console.log", "OOM killer: what held the memory (console, not dated: maybe before "
                 "this run)", len(kills), kills[0].words())] if kills else []


def log_hints(machine_dir: Path) -> list[Hint]:
    """The hints of one machine folder, in PATTERNS order; an hs_err file is always a hint."""
    logs = machine_dir / "logs"
    hints: list[Hint] = []
    if not logs.is_dir():
        return hints
    for name, what, pattern in PATTERNS:
        path = logs / name
        if path.is_file():
            count, first = _scan(path, pattern)
            if count:
                hints.append(Hint(f"logs/{name}", what, count, first))
    hints += _oom_hints(logs)
    for crash in sorted(logs.glob("hs_err*.log")):
        # the crash file's summary: the signal line and the problematic frame
        lines = [x.strip() for x in crash.read_text(encoding="utf-8", errors="replace").splitlines()[:40]]
        summary = [x.lstrip("# ") for x in lines if re.search(r"SIG[A-Z]+|Problematic frame|^#\s+[CJV]\s+\[", x)]
        hints.append(Hint(f"logs/{crash.name}", "JVM crash (hs_err file)", 1,
                          " · ".join(summary[:3])[:MAX_LINE] or "present"))
    return hints
