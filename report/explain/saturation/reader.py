"""One machine as the saturation probes read it: its metrics, window, knobs and log events, and the three kinds of
rule applied to them (utilisation against a limit, a queue above a threshold, an error's first occurrence)."""
from __future__ import annotations

import math
from collections.abc import Callable
from datetime import UTC, datetime

import numpy as np

from report import fmt
from report.explain.saturation.model import (
    AS_COUNTER,
    HELD_S,
    HELD_SCRAPES,
    NEAR_LIMIT,
    SCRAPED,
    Finding,
    Resource,
    Series,
    first_held,
)
from report.read.events import log_events
from report.read.knobs import Knobs
from report.read.pcp import Match
from report.stats.figures import integral
from report.stats.machine import Machine

SCRAPE_KNOB = "pcp_openmetrics_interval_s"


class Reader:
    """One machine's metrics, window, knobs and log events, and the three kinds of rule applied to them."""

    def __init__(self, machine: Machine, knobs: Knobs | None) -> None:
        self.machine, self.m, self.window, self.t0 = machine, machine.metrics, machine.window, machine.t0
        self.knobs = knobs if knobs is not None else Knobs()
        year = datetime.fromtimestamp(self.t0, tz=UTC).year
        self.events = [e for e in log_events(machine.folder, year) if e.at >= self.t0] if machine.folder else []
        self.scrape_s, scrape_source = self.knob(SCRAPE_KNOB)
        self.notes: list[str] = []
        if fmt.missing(self.scrape_s):
            self.notes.append(f"How often the app's metrics were scraped is not known ({scrape_source}): a scraped "
                              "metric's stretch near its limit or over its threshold is not judged held.")

    def has_log(self, name: str) -> bool:
        return self.machine.folder is not None and (self.machine.folder / "logs" / name).is_file()

    def series(self, metric: str, match: Match | None = None) -> Series:
        t, v = self.m.series(metric, match) if self.m is not None else (np.array([]), np.array([]))
        return Series(t, v, metric.startswith(SCRAPED))

    def count(self, metric: str, match: Match | None = None) -> tuple[Series, str]:
        """(Series, why unusable) of a gauge that counts things: a scraped count with fractional values is the
        rate pmrep made of it (AS_COUNTER), returned empty with the reason."""
        s = self.series(metric, match)
        if s.scraped and len(s) and np.any(np.abs(s.v - np.round(s.v)) > 1e-6):
            return Series(np.array([]), np.array([]), True), f"{metric.rsplit('.', 1)[1]} is {AS_COUNTER}"
        return s, ""

    def last(self, metric: str, match: Match | None = None) -> float:
        s = self.series(metric, match)
        return float(s.v[-1]) if len(s) else math.nan

    def knob(self, name: str) -> tuple[float, str]:
        """(value, where it comes from) of a knob (report/read/knobs.py); nan when unknown, the source says why."""
        return self.knobs.number(name)

    def in_window(self, kind: str) -> int:
        return sum(1 for e in self.events if e.kind == kind and self.window.start <= e.at <= self.window.end)

    def _held(self, s: Series, hit: np.ndarray) -> tuple[int, int] | None:
        if s.scraped and fmt.missing(self.scrape_s):
            return None
        min_s = max(HELD_S, HELD_SCRAPES * self.scrape_s) if s.scraped else HELD_S
        return first_held(s.t, hit, s.interval, min_s)

    def utilisation(self, res: Resource, s: Series, limit: float, source: str) -> None:
        """Peak, limit and seconds near it in the window; the first time it held near the limit."""
        res.limit, res.limit_source, res.window_s = limit, source, self.window.seconds
        w = s.between(self.window.start, self.window.end)
        if len(w):
            i = int(np.argmax(w.v))
            res.peak, res.peak_at = float(w.v[i]), float(w.t[i])
        if fmt.missing(limit) or limit <= 0:
            return
        res.near_s = float((w.v >= NEAR_LIMIT * limit).sum() * s.interval)
        since = s.between(self.t0)
        held = self._held(since, since.v >= NEAR_LIMIT * limit)
        if held:
            res.held_from = float(since.t[held[0]])
            share = "" if fmt.missing(res.near_pct) else f"for {res.near_pct:.0f} % of the window"
            res.findings.append(Finding(res.held_from, "utilisation", res.level(since.v[held[0]:held[1]].max()),
                                        share))

    def queue(self, res: Resource, s: Series, threshold: float,
              words: Callable[[float], str]) -> tuple[float, float]:
        """A saturation signal, the rule `value > threshold`: a finding when it held. Returns (peak in the
        window, seconds of the window over the threshold)."""
        since = s.between(self.t0)
        held = self._held(since, since.v > threshold)
        if held:
            res.findings.append(Finding(float(since.t[held[0]]), "saturation", words(since.v[held[0]:held[1]].max())))
        w = s.between(self.window.start, self.window.end)
        return (float(w.v.max()) if len(w) else math.nan), float((w.v > threshold).sum() * s.interval)

    def occurrence(self, res: Resource, s: Series, words: str) -> float:
        """An error counter (a per-second rate): its first non-zero sample is a finding. Returns its count in
        the window (∫ rate dt)."""
        since = s.between(self.t0)
        hits = np.flatnonzero(since.v > 0)
        if len(hits):
            res.findings.append(Finding(float(since.t[hits[0]]), "errors", words))
        return integral(s.t, s.v, self.window)

    def log_finding(self, res: Resource, kind: str, words: str) -> int:
        """A log line as a finding (its first occurrence); returns how many fell in the window."""
        found = [e for e in self.events if e.kind == kind]
        if found:
            res.findings.append(Finding(found[0].at, "errors", f"{words} ({found[0].file})"))
        return self.in_window(kind)


def limit_of(r: Reader, metric: str, match: Match | None, knob: str) -> tuple[float, str]:
    """(limit, source): the metric's last positive value, else the knob (its own value, else the run's catalog
    default; nan when unknown, the source says why)."""
    value = r.last(metric, match)
    if fmt.missing(value) or value <= 0:
        return r.knob(knob)
    return value, metric.rsplit(".", 1)[1]
