"""The histories in an index: its complete runs grouped by fingerprint, oldest first, and for each figure
(successful TPS, p99, errors) three tracks — the verdict's tuned-vs-default figure with its interval, and each
configuration's own level — each with its change points and what changed between the runs around them."""
from __future__ import annotations

import datetime
import math
from dataclasses import dataclass, field

from report import MACHINES
from report.fmt import UNITS
from report.history import fingerprint
from report.history.changes import Change, change_points, holm
from report.history.index import Entry, as_change

FIGURES = {"tps": "successful TPS", "p99": "p99", "error_pct": "errors"}
SIDES = MACHINES


def moment(text: str) -> datetime.datetime:
    """An ISO date or time (2026-11-28, '2026-11-28 03:00', 2026-11-28T03:00Z, …; without a zone: UTC, the lab's
    clock) as an aware datetime; ValueError naming it otherwise ('yesterday', a 13th month)."""
    try:
        when = datetime.datetime.fromisoformat(text.strip())
    except ValueError:
        raise ValueError(f"{text!r} is not an ISO date or time (e.g. 2026-11-28 or '2026-11-28 03:00', UTC)") from None
    return when if when.tzinfo else when.replace(tzinfo=datetime.UTC)


@dataclass(frozen=True)
class Filters:
    label: str | None = None        # a part of the label
    since: datetime.datetime | None = None      # runs started at or after it (moment())
    service: str | None = None
    ignore: frozenset[str] = frozenset()
    also: frozenset[str] = frozenset()

    def matches(self, e: Entry) -> bool:
        """The folder's label, start and service are the ones asked for. Starts compare as times, not as text
        ('2026-11-28 03:00' matched a run of 02:02 when they did); a start that cannot be read is not after it."""
        return ((self.label is None or self.label in e.label) and (self.since is None or self._after(e.started))
                and (self.service is None or e.service == self.service))

    def _after(self, started: str) -> bool:
        try:
            return moment(started) >= self.since
        except (ValueError, TypeError, AttributeError):
            return False

    def keep(self, e: Entry) -> bool:
        """A complete run with a verdict, matching."""
        return e.kind == "run" and e.status == "complete" and bool(e.figures) and self.matches(e)


@dataclass
class Track:
    figure: str                     # tps, p99, error_pct
    what: str                       # "effect" (tuned vs default), or a side's level: "default", "tuned"
    unit: str                       # %, pt, req/s, ms
    values: list[float]
    lows: list[float]
    highs: list[float]
    changes: list[Change] = field(default_factory=list)
    why: list[list[str]] = field(default_factory=list)      # per change: what changed around it

    @property
    def title(self) -> str:
        name = FIGURES[self.figure]
        return f"{name}, tuned vs default" if self.what == "effect" else f"{name} of the {self.what} configuration"


@dataclass
class History:
    key: str
    parts: dict
    entries: list[Entry]
    tracks: list[Track]


def _level(e: Entry, figure: str, side: str) -> float:
    value = (e.figures.get(figure) or {}).get(side)
    return math.nan if value is None else float(value)


def tracks(entries: list[Entry]) -> list[Track]:
    out = []
    for figure in FIGURES:
        if not any(figure in e.figures for e in entries):
            continue
        effects = [as_change(e.figures.get(figure) or {}) for e in entries]
        unit = next((u for *_, u in effects if u), "%")
        out.append(Track(figure, "effect", unit, [v for v, *_ in effects], [lo for _, lo, _, _ in effects],
                         [hi for _, _, hi, _ in effects]))
        for side in SIDES:
            levels = [_level(e, figure, side) for e in entries]
            nan = [math.nan] * len(levels)
            out.append(Track(figure, side, UNITS[figure], levels, nan, nan))
    for t, changes in zip(out, holm([change_points(t.values) for t in out]), strict=True):
        t.changes = changes
        t.why = [fingerprint.differences(entries[c.index - 1], entries[c.index]) for c in t.changes]
    return out


def histories(entries: list[Entry], filters: Filters = Filters()) -> list[History]:
    """The histories (at least two runs each), the longest first."""
    groups: dict[str, tuple[dict, list[Entry]]] = {}
    for e in entries:
        if filters.keep(e):
            parts = fingerprint.parts(e, filters.ignore, filters.also)
            groups.setdefault(fingerprint.key(parts), (parts, []))[1].append(e)
    found = [History(k, parts, members, tracks(members)) for k, (parts, members) in groups.items() if len(members) >= 2]
    return sorted(found, key=lambda h: (-len(h.entries), h.entries[0].started))
