"""How processes ended during a run: every service exit of a machine's journal with its cause (an OOM kill or a
JVM crash file just before it, else systemd's exit status) and whether systemd restarted it; an OOM kill or a
crash file that ended no service is a row of its own. The events come dated from report/read/events.py."""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from report.read.events import Event, unit_of


@dataclass
class Restart:
    at: float                       # epoch s: when the process ended
    unit: str                       # the systemd service ('' when the journal did not say)
    cause: str                      # the OOM killer, a JVM crash, or systemd's exit status
    restarted_at: float | None      # when systemd restarted the service, None when it did not (in the logs)


RESTART_AFTER_S = 300     # systemd's restart of an exited service: within this long (RestartSec and a slow stop)
CAUSE_BEFORE_S = 15       # an OOM kill or a crash file this long before an exit is its cause


KILLED = re.compile(r"Killed process \d+ \([^)]*\)")
ANON_RSS = re.compile(r"anon-rss:(\d+kB)")


def _victim(kill: Event) -> str:
    """The kernel's account of the kill (report/read/oom.py: whom it killed, the largest process then), else
    'Killed process 7376 (java), anon-rss 280104kB' from its kill line alone."""
    if kill.detail:
        return kill.detail
    found, rss = KILLED.search(kill.line), ANON_RSS.search(kill.line)
    return (found.group(0) if found else kill.line[:80]) + (f", anon-rss {rss.group(1)}" if rss else "")


def restarts(machine_dir: Path, events: list[Event]) -> list[Restart]:
    """Every service exit of the machine's logs (journal.txt) with its cause and its restart, by time; a JVM
    crash file (logs/hs_err_pid*.log, dated by its mtime) and an OOM kill that ended no service are rows too.
    events: log_events' list for the folder."""
    crashes = [(p.stat().st_mtime, p.name) for p in sorted((machine_dir / "logs").glob("hs_err*.log"))]
    kills = [e for e in events if e.kind == "oom_kill" and "Killed process" in e.line]
    used_kills: set[int] = set()
    used_crashes: set[tuple[float, str]] = set()
    out: list[Restart] = []
    for e in (e for e in events if e.kind == "exited"):
        unit = unit_of(e)
        kill = next((k for k in reversed(kills) if 0 <= e.at - k.at <= CAUSE_BEFORE_S), None)
        crash = next((c for c in reversed(crashes) if 0 <= e.at - c[0] <= CAUSE_BEFORE_S), None)
        status = e.line.split("Main process exited,", 1)[-1].strip().rstrip(".")
        if kill is not None:
            used_kills.add(id(kill))
            cause = f"OOM killer ({_victim(kill)}); {status}"
        elif crash is not None:
            used_crashes.add(crash)
            cause = f"JVM crash (logs/{crash[1]}); {status}"
        else:
            cause = status
        again = next((r.at for r in events if r.kind == "restart" and unit_of(r) == unit
                      and 0 <= r.at - e.at <= RESTART_AFTER_S), None)
        out.append(Restart(e.at, unit, cause, again))
    out += [Restart(k.at, "", f"OOM killer ({_victim(k)})", None) for k in kills if id(k) not in used_kills]
    out += [Restart(at, "", f"JVM crash (logs/{name})", None) for at, name in crashes if (at, name) not in used_crashes]
    return sorted(out, key=lambda r: r.at)
