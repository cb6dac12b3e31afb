"""Change points of a history's figure: where a series of runs' values shifts, by e-divisive (Matteson & James,
"A nonparametric approach for multiple change point analysis of multivariate data", JASA 2014) as Apache Otava
implements it, with its permutation significance test: the split of largest energy divergence over the series (later:
over every segment left) is tested against the same maximum after shuffling each segment, PERMUTATIONS times — so the
test accounts for the split having been chosen by the data (Otava's default `compute_change_points` merges weak
points by a t-test on the chosen segments: its p 0.017 was scipy's 0.033 on the same segments, and neither is a
p-value after the search) — and the search goes on while p ≤ alpha. A history tests several figures at once: holm()
keeps a figure's change points only where its first split survives Holm's step-down over all of the history's
figures together (HISTORY_ALPHA: the chance of any false alarm in a flat history). A run without a value is a gap,
not a copy of its neighbour: the series is judged on the runs that have one.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np
from otava.change_point_divisive.calculator import PairDistanceCalculator
from otava.change_point_divisive.significance_test import PermutationsSignificanceTester

PERMUTATIONS = 999          # shuffles of a segment: the smallest p-value is 1/1000
SEED = 20261129             # fixed: the same history gives the same p-values every time
HISTORY_ALPHA = 0.05        # the false-alarm rate of a whole history, all its figures together (Holm)
MIN_RUNS = 4        # fewer runs than this: no change point can be told from noise (two per side)
# The runs a change point needs on each side, up to the next change point or the history's end: one run alone
# differs from its neighbours by its own noise (seen on the machines: two runs at −28.3 % and a third at −21.4 %
# came out of Otava's t-test at p = 0.0003).
MIN_SEGMENT = 2


@dataclass(frozen=True)
class Change:
    index: int              # the first run after the change (its position in the history, gaps counted)
    pvalue: float           # e-divisive's permutation p-value of the split in its segment
    change_pct: float       # the mean after against the mean before, in %
    mean_before: float
    mean_after: float
    adjusted: float = math.nan      # Holm-adjusted over the history's figures (history.py): what decides


def change_points(values: list[float], alpha: float = HISTORY_ALPHA, permutations: int = PERMUTATIONS) -> list[Change]:
    """The series' change points in the order e-divisive found them, each with its permutation p-value: the first
    always (the test of "any change at all", which holm() weighs against the history's other figures), the next
    while p ≤ alpha (Otava's ChangePointDetector loop, kept here to keep that order and the first p). p = (1 + the
    shuffles at least as divergent) / (1 + shuffles) (Otava's own leaves the 1 out of the count). A split that would
    leave a side shorter than MIN_SEGMENT ends the search. NaN: a run without this figure, left out."""
    known = [i for i, v in enumerate(values) if not math.isnan(v)]
    series = np.array([values[i] for i in known], dtype=float)
    if len(series) < MIN_RUNS or np.ptp(series) == 0:
        return []
    calculator = PairDistanceCalculator(series)
    tester = PermutationsSignificanceTester(max_pvalue=alpha, permutations=permutations,
                                            calculator=PairDistanceCalculator, seed=SEED)
    points: list = []
    found: list[Change] = []
    while True:
        intervals = tester.get_intervals(points)
        candidate = calculator.get_next_candidate(intervals)
        if candidate is None:
            break
        point = tester.change_point(candidate, series, intervals)
        p = (1 + int(point.stats.extreme_qhat_perm)) / (1 + permutations)
        split = int(point.index)
        bounds = [0, *(int(c.index) for c in points), len(series)]     # points are kept in order
        a = max(b for b in bounds if b < split)
        b = min(b for b in bounds if b > split)
        if split - a < MIN_SEGMENT or b - split < MIN_SEGMENT or (found and p > alpha):
            break
        before, after = series[a:split], series[split:b]
        found.append(Change(known[split], p, 100.0 * (after.mean() / before.mean() - 1), float(before.mean()),
                            float(after.mean())))
        if p > alpha:
            break
        points = sorted([*points, point], key=lambda c: c.index)
    return found


def holm(changes_by_track: list[list[Change]], alpha: float = HISTORY_ALPHA) -> list[list[Change]]:
    """Each figure's change points where its first ("any change at all") survives Holm's step-down (1979) over the
    first p-values of all the history's figures: the chance of any false alarm in a flat history stays at alpha.
    Each kept point carries its adjusted p-value (the first's, Holm's; a later one's, its own or the first's if
    larger)."""
    firsts = sorted((changes[0].pvalue, t) for t, changes in enumerate(changes_by_track) if changes)
    m = len(firsts)
    adjusted: dict[int, float] = {}
    running = 0.0
    for rank, (p, t) in enumerate(firsts):
        running = max(running, min(1.0, (m - rank) * p))
        adjusted[t] = running
    out = []
    for t, changes in enumerate(changes_by_track):
        if not changes or adjusted[t] > alpha:
            out.append([])
            continue
        first = replace(changes[0], adjusted=adjusted[t])
        later = [replace(c, adjusted=max(c.pvalue, adjusted[t])) for c in changes[1:] if c.pvalue <= alpha]
        out.append([first, *later])
    return out
