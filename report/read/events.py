"""Timed events from a machine's logs/: when the OOM killer struck, a service exited or was restarted, a full
GC ran, the JVM ran out of heap or files, HTTPD hit MaxRequestWorkers, the conntrack table filled. logs.py
counts such lines; this module dates each one (epoch seconds), for the saturation story and the restarts
(report/explain/restarts.py)."""
from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from report.read.oom import read_kills

MAX_LINE = 160


@dataclass
class Event:
    at: float    # epoch s
    kind: str    # one of the KINDS keys
    file: str    # relative to the machine folder, e.g. logs/journal.txt
    line: str    # the message, trimmed
    detail: str = ""    # an OOM kill: whom it killed and what held the memory (report/read/oom.py)


# The timestamp each log starts its lines with; all are UTC on the machines (base_timezone) and on the fixture.
# journal.txt is `journalctl -o short-iso` (lab/guest/run.sh); the classic "Nov 22 22:01:50" form has no year.
JOURNAL_ISO = re.compile(r"^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})(?:\.\d+)?(Z|[+-]\d{2}:?\d{2})?\s+\S+\s+(.*)$")
JOURNAL_CLASSIC = re.compile(r"^([A-Z][a-z]{2}\s+\d{1,2} \d{2}:\d{2}:\d{2})\s+\S+\s+(.*)$")
GC_LOG = re.compile(r"^\[(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?)([+-]\d{4})?\]")
APP_LOG = re.compile(r"^(\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2})")
HTTPD_ERROR = re.compile(r"^\[\w{3} (\w{3} +\d{1,2} \d{2}:\d{2}:\d{2})(?:\.\d+)? (\d{4})\]")

# kind: (log file, pattern). One OOM kill writes several kernel lines: only "Killed process" is the kill.
KINDS = {
    "oom_kill": ("journal.txt", re.compile(r"Out of memory: Kill|Killed process \d+")),
    "exited": ("journal.txt", re.compile(r"Main process exited")),
    "restart": ("journal.txt", re.compile(r"Scheduled restart job")),
    "conntrack_full": ("journal.txt", re.compile(r"nf_conntrack: table full")),
    # the end line of a full collection (its gc,start line has the same GC id)
    "full_gc": ("gc.log", re.compile(r"\[gc\s*\] GC\(\d+\) Pause Full")),
    "out_of_memory": ("app.log", re.compile(r"OutOfMemoryError")),
    "too_many_files": ("app.log", re.compile(r"Too many open files")),
    "max_request_workers": ("httpd-error.log", re.compile(r"AH00484|reached MaxRequestWorkers")),
}
UNIT = re.compile(r"([\w@.-]+)\.service:")
KILLED_PID = re.compile(r"Killed process (\d+)")

# pmlogger's own log (pcp/pmlogger*.log): pmcd's state changed (an agent went or came), then the lookups of an
# agent's metrics failed: pmcd had dropped that agent (a PMDA slower than pmcd's -t is cut off)
PMCD_CHANGED = re.compile(r"(?:PMCD state changed|Lost connection to PMCD on \S+) at "
                          r"(\w{3} \w{3} +\d{1,2} \d{2}:\d{2}:\d{2} \d{4})")
NO_AGENT = re.compile(r"Error looking up ([\w]+(?:\.[\w]+)?)\.\S+: Reason: No PMCD agent")


def _epoch(text: str, fmt: str) -> float | None:
    try:
        return datetime.strptime(text, fmt).replace(tzinfo=UTC).timestamp()
    except ValueError:
        return None


def _offset(sign_hhmm: str | None) -> int:
    """'+0100' or '+01:00' or 'Z' → seconds east of UTC."""
    if not sign_hhmm or sign_hhmm == "Z":
        return 0
    digits = sign_hhmm[1:].replace(":", "")
    seconds = int(digits[:2]) * 3600 + int(digits[2:4]) * 60
    return -seconds if sign_hhmm[0] == "-" else seconds


def _journal_time(line: str, year: int) -> tuple[float | None, str]:
    iso = JOURNAL_ISO.match(line)
    if iso:
        at = _epoch(iso.group(1), "%Y-%m-%dT%H:%M:%S")
        return (at - _offset(iso.group(2)) if at is not None else None), iso.group(3)
    classic = JOURNAL_CLASSIC.match(line)
    if classic:
        return _epoch(f"{year} {' '.join(classic.group(1).split())}", "%Y %b %d %H:%M:%S"), classic.group(2)
    return None, line


def _time(name: str, line: str, year: int) -> tuple[float | None, str]:
    """(epoch, message) of one line of log `name`; epoch None when the line has no timestamp."""
    if name == "journal.txt":
        return _journal_time(line, year)
    if name == "gc.log":
        found = GC_LOG.match(line)
        at = found and _epoch(found.group(1).split(".")[0], "%Y-%m-%dT%H:%M:%S")
        return (at - _offset(found.group(2)) if at else None), line[found.end():] if found else line
    if name == "app.log":
        found = APP_LOG.match(line)
        return (found and _epoch(found.group(1).replace("T", " "), "%Y-%m-%d %H:%M:%S")), line
    found = HTTPD_ERROR.match(line)
    return (found and _epoch(f"{found.group(2)} {' '.join(found.group(1).split())}", "%Y %b %d %H:%M:%S")), line


def log_events(machine_dir: Path, year: int) -> list[Event]:
    """Every dated event of the machine folder's logs, by time. year: for journal lines without one (the
    run's year). Lines without a readable timestamp are left out."""
    logs = machine_dir / "logs"
    events: list[Event] = []
    by_file: dict[str, list[tuple[str, re.Pattern[str]]]] = {}
    for kind, (name, pattern) in KINDS.items():
        by_file.setdefault(name, []).append((kind, pattern))
    for name, kinds in by_file.items():
        path = logs / name
        if not path.is_file():
            continue
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f:
                for kind, pattern in kinds:
                    if pattern.search(line):
                        at, message = _time(name, line.strip(), year)
                        if at is not None:
                            events.append(Event(float(at), kind, f"logs/{name}", message.strip()[:MAX_LINE]))
    _oom_details(events, logs / "journal.txt")
    return sorted(events + agents_dropped(machine_dir), key=lambda e: e.at)


def _oom_details(events: list[Event], journal: Path) -> None:
    """Each OOM kill event gets the kernel's account of it: the process killed and the largest one then (when
    the kernel's process table is in the journal)."""
    kills = {kill.pid: kill for kill in read_kills(journal)}     # a PID is killed once
    for e in events:
        found = KILLED_PID.search(e.line) if e.kind == "oom_kill" else None
        kill = kills.get(int(found.group(1))) if found else None
        if kill is not None and kill.tasks:     # without its table the kill line says it all
            e.detail = kill.words()


def agents_dropped(machine_dir: Path) -> list[Event]:
    """Events "agent_dropped", one per run of pmcd state changes after which pmlogger found no agent for some
    metrics (pmcd had cut the agent off): at the first change of the run; the message names the sources
    ('openmetrics.app, openmetrics.mock') and when they were found missing."""
    events: list[Event] = []
    for path in sorted((machine_dir / "pcp").glob("pmlogger*.log")):
        first: float | None = None
        last: float | None = None
        sources: set[str] = set()
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in list(f) + [""]:
                found = PMCD_CHANGED.search(line)
                if (found or not line) and sources:
                    missing_at = datetime.fromtimestamp(last, tz=UTC).strftime("%H:%M:%S UTC")
                    events.append(Event(first, "agent_dropped", f"pcp/{path.name}",
                                        f"no PMCD agent for {', '.join(sorted(sources))} by {missing_at}"))
                    first, sources = None, set()
                at = found and _epoch(" ".join(found.group(1).split()), "%a %b %d %H:%M:%S %Y")
                if at:
                    last = at
                    first = at if first is None else first
                lost = NO_AGENT.search(line)
                if lost and first is not None:
                    sources.add(lost.group(1))
    return events


def unit_of(event: Event) -> str:
    """'camel-app' for a systemd line about camel-app.service, else ''."""
    found = UNIT.search(event.line)
    return found.group(1) if found else ""
