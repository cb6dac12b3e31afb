"""Change points of a history's figure: where a series of runs' values shifts, found by e-divisive with a
significance test (Matteson & James 2014; Apache Otava, formerly Hunter, Fleming et al. 2023: split by sliding
windows at a relaxed threshold, then merge back the weak points whose t-test p-value exceeds MAX_PVALUE)."""
from __future__ import annotations

import math
from dataclasses import dataclass

from otava.analysis import compute_change_points

# The p-value a change point must reach: Otava's default. On flat histories of 6 to 20 runs with 3 % noise it
# raised a false alarm in about 2 % of them (0.01: 9 to 20 %); it finds a 30 % shift half way through 6 runs 9
# times in 10, a 10 % one only from about 12 runs (report/tests/test_history.py measures and prints these).
MAX_PVALUE = 0.001
MIN_RUNS = 4        # fewer runs than this: no change point can be told from noise (two per side)


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
    return [Change(int(c.index), float(c.stats.pvalue), float(c.stats.forward_change_percent()),
                   float(c.stats.mean_before()), float(c.stats.mean_after())) for c in found]


def _filled(values: list[float]) -> list[float]:
    known = [v for v in values if not math.isnan(v)]
    out, last = [], known[0]
    for v in values:
        last = v if not math.isnan(v) else last
        out.append(last)
    return out
