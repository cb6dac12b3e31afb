"""Number formatting for every document's words: figures with units, '—' for what was not measured, UTC clock
times. Below the layers (like MACHINES): any of them may import it."""
from __future__ import annotations

import math
from datetime import UTC, datetime

NA = "—"
# each verdict figure's unit as a level (report/stats/uncertainty.py FIGURES; cpu: the JVM's CPU per request)
UNITS = {"tps": "req/s", "error_pct": "%", "p50": "ms", "p95": "ms", "p99": "ms", "cpu": "ms"}


def missing(x: float | None) -> bool:
    return x is None or (isinstance(x, float) and math.isnan(x))


def num(x: float | None, digits: int = 1, unit: str = "") -> str:
    if missing(x):
        return NA
    text = f"{x:,.{digits}f}"
    return f"{text} {unit}".rstrip() if unit else text


def typed(v) -> str:
    """A knob value as it is typed on the command line and in the YAML files: null, true, 0.5, serial."""
    if v is None or isinstance(v, bool):
        return "null" if v is None else str(v).lower()
    return f"{v:g}" if isinstance(v, float) else str(v)


def count(x: float | None) -> str:
    return NA if missing(x) else f"{int(round(x)):,}"


def mean_sd(mean: float | None, sd: float | None, digits: int = 1, unit: str = "") -> str:
    if missing(mean):
        return NA
    if missing(sd):
        return num(mean, digits, unit)
    return f"{mean:,.{digits}f} ± {sd:,.{digits}f} {unit}".rstrip()


def ratio(tuned: float | None, default: float | None, digits: int = 2) -> str:
    """'1.23×' (tuned / default) or '—' when either is missing or default is 0."""
    if missing(tuned) or missing(default) or default == 0:
        return NA
    return f"{tuned / default:.{digits}f}×"


def seconds(x: float | None) -> str:
    return NA if missing(x) else f"{x:,.0f} s"


def percent(x: float | None, digits: int = 1) -> str:
    return num(x, digits, "%")


def utc_clock(epoch: float) -> str:
    """'22:01:45': the time of day in UTC."""
    return datetime.fromtimestamp(epoch, tz=UTC).strftime("%H:%M:%S")
