"""Change points of a history's figure: where a series of runs' values shifts, found by e-divisive with a
significance test (Matteson & James 2014; Apache Otava, formerly Hunter, Fleming et al. 2023: split by sliding
windows at a relaxed threshold, then merge back the weak points whose t-test p-value exceeds MAX_PVALUE)."""
from __future__ import annotations

import math
from dataclasses import dataclass

from otava.analysis import compute_change_points

# The p-value a change point must reach: Otava's default. On flat histories of 6 to 20 runs with 3 % noise it
# raised a false alarm in 1.5 to 2.5 % of them (0.01: 9 to 20 %); it finds a 30 % shift half way through 6 runs 9
# times in 10, a 10 % one only from about 12 runs (report/tests/test_history.py measures and prints these).
MAX_PVALUE = 0.001
MIN_RUNS = 4        # fewer runs than this: no change point can be told from noise (two per side)
# The runs a change point needs on each side, up to the next change point or the history's end: one run alone
# differs from its neighbours by its own noise, and beside a run of equal values Otava's t-test sees no variance at
# all (seen on the machines: two runs at −28.3 % and a third at −21.4 % came out at p = 0.0003).
MIN_SEGMENT = 2


@dataclass(frozen=True)
class Change:
    index: int              # the first run after the change
    pvalue: float
    change_pct: float       # the mean after against the mean before, in %
    mean_before: float
    mean_after: float


def change_points(values: list[float], max_pvalue: float = MAX_PVALUE) -> list[Change]:
    """The change points of a series (a missing value, NaN, takes its neighbour's, as Otava fills gaps)."""
    if sum(1 for v in values if not math.isnan(v)) < MIN_RUNS:
        return []
    filled = _filled(values)
    found, _weak = compute_change_points(filled, max_pvalue=max_pvalue)
    changes = [Change(int(c.index), float(c.stats.pvalue), float(c.stats.forward_change_percent()),
                      float(c.stats.mean_before()), float(c.stats.mean_after())) for c in found]
    return _with_segments(changes, len(values))


def _with_segments(changes: list[Change], n: int) -> list[Change]:
    """The change points whose segments on both sides hold MIN_SEGMENT runs or more (dropping one joins its two
    segments, so the rest are judged again)."""
    kept = sorted(changes, key=lambda c: c.index)
    while True:
        bounds = [0] + [c.index for c in kept] + [n]
        short = [i for i, c in enumerate(kept)
                 if bounds[i + 1] - bounds[i] < MIN_SEGMENT or bounds[i + 2] - bounds[i + 1] < MIN_SEGMENT]
        if not short:
            return kept
        del kept[short[0]]


def _filled(values: list[float]) -> list[float]:
    known = [v for v in values if not math.isnan(v)]
    out, last = [], known[0]
    for v in values:
        last = v if not math.isnan(v) else last
        out.append(last)
    return out
