"""The saturation analysis's vocabulary: a Resource (a row of the USE table) with its Findings, the Saturation of
a machine, a metric's Series, the rules' constants and the held rule (first_held)."""
from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from report import fmt
from report.read.pcp import contains

NEAR_LIMIT = 0.90      # near the limit: at or over 90 % of it
HELD_S = 5.0           # held: the rule met at every sample of a stretch at least this long (samples × interval)
HELD_MIN_SAMPLES = 2   # ... of at least this many samples (one sample is an instant, not a stretch) ...
HELD_SCRAPES = 2       # ... and, for a scraped metric, at least this many scrape intervals: pmrep gives each
#                        sample the nearest scrape's value, so one scrape alone lasts one interval
GAP_INTERVALS = 2      # a stretch ends at a gap of more than this many sampling intervals without a sample
GC_TIME_SHARE = 0.10   # the heap is saturated when GC pauses take over 10 % of the time (pause s per s)
ERROR_BIN_S = 10.0     # the error rate is judged in bins of this many seconds from the first sample ...
ERROR_RATE = 0.01      # ... the first bin in which more than 1 % of the requests failed
APP_SILENT_S = 30.0    # the app's scraped metrics ending this long before the system's: its endpoint went unanswered
AGENT_DROP_S = 180.0   # pmcd cutting its openmetrics agent off this soon after: the agent may be why they ended
SCRAPED = "openmetrics."
# PCP's openmetrics agent logs a metric whose name has a piece "total", "count" or "sum" as a counter (its
# heuristic, whatever the TYPE line says), so pmrep exports the rate of such a gauge, not its level:
# a count with fractional values is such a rate, unusable here
AS_COUNTER = "its rate, not its level: PCP's openmetrics agent logs a name with total/count/sum as a counter"
APP_METRICS = "openmetrics.app."
HEAP = contains("area:heap")
OLD_GEN = contains("old gen", "tenured")
MAJOR_GC = contains("major gc")
MIB = 1024.0 * 1024.0


@dataclass
class Finding:
    at: float          # epoch s: the first sample of the first stretch that held, or the first occurrence
    kind: str          # "utilisation", "saturation", "errors"; "symptom" for what followed
    text: str          # what, without the time: "200 of 200 threads"
    detail: str = ""   # said after the time: "for 83 % of the window"


@dataclass
class Resource:
    """One row of the USE table: utilisation (the peak against its limit, in the measured window), saturation
    and errors in words, and the findings of the story (from the first sample on)."""
    name: str                    # "Tomcat threads (http-nio-8080, traffic)"
    reads: str = ""              # what the utilisation is: "busy threads"
    unit: str = ""
    peak: float = math.nan       # highest value in the window
    peak_at: float = math.nan    # epoch s of its first sample at that value
    limit: float = math.nan
    limit_source: str = ""       # the metric, knob or default the limit comes from
    near_s: float = math.nan     # seconds of the window at or over NEAR_LIMIT × limit
    window_s: float = math.nan
    held_from: float | None = None  # epoch s: the first time it held near the limit (from the first sample on)
    saturation: str = fmt.NA
    errors: str = fmt.NA
    not_recorded: str = ""       # the utilisation's metrics, when absent
    unusable: str = ""           # why its recorded metric cannot be read as a level (AS_COUNTER)
    findings: list[Finding] = field(default_factory=list)

    @property
    def peak_pct(self) -> float:
        if fmt.missing(self.peak) or fmt.missing(self.limit) or self.limit <= 0:
            return math.nan
        return 100.0 * self.peak / self.limit

    @property
    def near_pct(self) -> float:
        if fmt.missing(self.near_s) or not self.window_s or fmt.missing(self.window_s):
            return math.nan
        return 100.0 * self.near_s / self.window_s

    @property
    def first(self) -> Finding | None:
        return min(self.findings, key=lambda f: f.at) if self.findings else None

    def show(self, value: float) -> str:
        return f"{value:,.0f} {self.unit}".rstrip()

    def missing(self, metric: str, unusable: str = "") -> None:
        """Marks the utilisation as not recorded (metric absent) or unusable (recorded as a rate)."""
        if unusable:
            self.unusable = unusable
        else:
            self.not_recorded = metric

    def level(self, value: float) -> str:
        """'200 of 200 threads'; a percentage (CPU): '95 % busy'."""
        return f"{self.show(value)} busy" if self.unit == "%" else f"{value:,.0f} of {self.show(self.limit)}"


@dataclass
class Saturation:
    machine: str
    t0: float
    window_s: float
    resources: list[Resource] = field(default_factory=list)
    symptoms: list[Finding] = field(default_factory=list)  # what followed, by time
    traffic: str = ""                                       # the connector that carried the traffic, and why
    notes: list[str] = field(default_factory=list)          # what could not be judged, and why

    @property
    def reached(self) -> list[Resource]:
        """The resources with a finding, by the time of their first one."""
        return sorted((r for r in self.resources if r.findings), key=lambda r: r.first.at)

    @property
    def closest(self) -> Resource | None:
        """The resource with the highest peak against its limit, or None."""
        rated = [r for r in self.resources if not fmt.missing(r.peak_pct)]
        return max(rated, key=lambda r: r.peak_pct) if rated else None


@dataclass
class Series:
    t: np.ndarray
    v: np.ndarray
    scraped: bool = False  # an openmetrics.* metric: scraped less often, interpolated by pmrep

    def __len__(self) -> int:
        return len(self.t)

    def map(self, f: Callable[[np.ndarray], np.ndarray]) -> Series:
        return Series(self.t, f(self.v), self.scraped)

    def between(self, start: float, end: float = math.inf) -> Series:
        keep = (self.t >= start) & (self.t <= end)
        return Series(self.t[keep], self.v[keep], self.scraped)

    @property
    def interval(self) -> float:
        return float(np.median(np.diff(self.t))) if len(self.t) > 1 else 1.0


def first_held(times: np.ndarray, hit: np.ndarray, interval: float, min_s: float = HELD_S) -> tuple[int, int] | None:
    """(start, end) indices [start, end) of the first stretch of consecutive samples meeting the rule
    (`hit`) that lasted at least min_s (samples × interval; a gap in the samples breaks a stretch), or None."""
    gap = np.concatenate([[True], np.diff(times) > GAP_INTERVALS * interval])
    start = None
    for i in range(len(times) + 1):
        if start is not None and (i == len(times) or not hit[i] or gap[i]):
            if i - start >= HELD_MIN_SAMPLES and (i - start) * interval >= min_s:
                return start, i
            start = None
        if i < len(times) and hit[i] and start is None:
            start = i
    return None
