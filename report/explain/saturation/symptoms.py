"""What followed a machine's saturation, in time order: the error rate's rise (JTL), the stop, the app's own metrics
ending early, and from the logs OOM kills, service exits and restarts, full GCs, OutOfMemoryError and PCP agents
lost."""
from __future__ import annotations

import re

import numpy as np

from report.explain.saturation.model import (
    AGENT_DROP_S,
    APP_METRICS,
    APP_SILENT_S,
    ERROR_BIN_S,
    ERROR_RATE,
    MAJOR_GC,
    SCRAPED,
    Finding,
)
from report.explain.saturation.reader import Reader
from report.read.events import Event, unit_of
from report.stats.machine import Machine


def error_rise(machine: Machine) -> Finding | None:
    """The first ERROR_BIN_S bin from the first sample with more than ERROR_RATE of its requests failed."""
    s = machine.samples
    if s is None or len(s) == 0:
        return None
    idx = ((s.start - machine.t0) // ERROR_BIN_S).astype(int)
    requests = np.bincount(idx)
    failed = np.bincount(idx[~s.ok], minlength=len(requests))
    over = np.flatnonzero((requests > 0) & (failed > ERROR_RATE * requests))
    if not len(over):
        return None
    b = int(over[0])
    return Finding(machine.t0 + b * ERROR_BIN_S, "symptom", f"errors above {ERROR_RATE * 100:g} % of requests",
                   f"{100.0 * failed[b] / requests[b]:.0f} % in that {ERROR_BIN_S:.0f} s bin")


def _app_silent(r: Reader) -> Finding | None:
    """The app's scraped metrics ending APP_SILENT_S or more before the system's: its endpoint went unanswered."""
    if r.m is None:
        return None
    app = [t.max() for name, (t, _, _) in r.m.by_metric.items() if name.startswith(APP_METRICS) and len(t)]
    system = [t.max() for name, (t, _, _) in r.m.by_metric.items() if not name.startswith(SCRAPED) and len(t)]
    if not app or not system or max(system) - max(app) < APP_SILENT_S or max(app) < r.t0:
        return None
    why = "its metrics page went unanswered (frozen, dead or too busy)"
    dropped = [e for e in r.events if e.kind == "agent_dropped" and 0 <= e.at - max(app) <= AGENT_DROP_S]
    if dropped:
        # the agent reading the endpoint waits for it: a frozen app and a starved agent look alike from here
        why = (f"its metrics page went unanswered, or PCP's openmetrics agent reading it stalled: pmcd "
               f"cut that agent off {dropped[0].at - max(app):.0f} s later ({dropped[0].file})")
    return Finding(float(max(app)), "symptom", "the app's own metrics stop",
                   f"{max(system) - max(app):.0f} s before the system's: {why}")


JOURNAL_MESSAGE = re.compile(r"^[\w@./-]+(?:\[\d+\])?: (?:\[\s*[\d.]+\] )?(?:[\w@.-]+\.service: )?(.*)$")


def _journal_message(event: Event) -> str:
    """The message of a journal line, without 'ident[pid]: ', the kernel's '[ 123.4] ' or 'unit.service: '."""
    found = JOURNAL_MESSAGE.match(event.line)
    return found.group(1) if found else event.line


def symptoms(r: Reader) -> list[Finding]:
    machine = r.machine
    found: list[Finding] = []
    rise = error_rise(machine)
    if rise:
        found.append(rise)
    stop = machine.stop
    if stop is not None:
        detail = ""
        if stop.errors:
            error, n = stop.errors.most_common(1)[0]
            detail = f"{100.0 * n / max(1, stop.attempts):.0f} % {error} from then on"
        found.append(Finding(stop.at, "symptom",
                             "stopped answering" if stop.ever_answered else "never answered successfully", detail))
    silent = _app_silent(r)
    if silent:
        found.append(silent)
    groups: dict[tuple[str, str], list[Event]] = {}
    for e in r.events:
        if e.kind in ("oom_kill", "exited", "restart", "full_gc", "out_of_memory", "agent_dropped"):
            groups.setdefault((e.kind, unit_of(e)), []).append(e)
    for (kind, unit), events in groups.items():
        first, times = events[0], f" ×{len(events)}" if len(events) > 1 else ""
        text = {"oom_kill": f"OOM kill{times} (journal: {first.detail or _journal_message(first)})",
                "exited": f"{unit or 'a service'} exited{times} (journal: {_journal_message(first)})",
                "restart": f"{unit or 'a service'} restarted{times} (journal)",
                "full_gc": f"full GC{times} (gc.log)",
                "out_of_memory": f"OutOfMemoryError{times} (app.log)",
                "agent_dropped": f"PCP lost agents{times} ({first.file}: {first.line}): their metrics end"}[kind]
        found.append(Finding(first.at, "symptom", text))
    if not any(kind == "full_gc" for kind, _ in groups):
        majors = r.series("openmetrics.app.jvm_gc_pause_seconds_count", MAJOR_GC).between(r.t0)
        if (majors.v > 0).any():
            found.append(Finding(float(majors.t[majors.v > 0][0]), "symptom", "full GCs (jvm_gc_pause_seconds, major)"))
    return sorted(found, key=lambda f: f.at)
