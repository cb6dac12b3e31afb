"""Change points of a history's figure: where a series of runs' values shifts, by e-divisive (Matteson & James,
"A nonparametric approach for multiple change point analysis of multivariate data", JASA 2014), the method Apache
Otava builds on, with its own significance test: the split of largest energy divergence over the series (or, later,
over any segment left) is tested by permutation — the same maximum over 999 shuffles of that segment, so the test
accounts for the split having been chosen by the data (Otava's t-test on the chosen segments does not: its p 0.017
was scipy's 0.033 on the same segments, and neither is a p-value after the search) — and kept while p ≤ alpha.
A history tests several figures at once: holm() keeps a figure's change points only where its first split
survives Holm's step-down over all of the history's figures together (HISTORY_ALPHA: the chance of any false alarm
in a flat history). A run without a value is a gap, not a copy of its neighbour: the series is judged on the runs
that have one.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

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


def change_points(values: list[float], alpha: float = HISTORY_ALPHA) -> list[Change]:
    """The series' change points in the order e-divisive found them, each with its permutation p-value: the first
    always (the test of "any change at all", which holm() weighs against the history's other figures), the next
    while p ≤ alpha. NaN: a run without this figure, left out."""
    known = [i for i, v in enumerate(values) if not math.isnan(v)]
    series = np.array([values[i] for i in known], dtype=float)
    if len(series) < MIN_RUNS or np.ptp(series) == 0:
        return []
    rng = np.random.default_rng(SEED)
    splits: list[int] = []
    found = []
    while True:
        bounds = [0, *sorted(splits), len(series)]
        segments = [(a, b) for a, b in zip(bounds, bounds[1:], strict=False) if b - a >= 2 * MIN_SEGMENT]
        if not segments:
            break
        best = max(((energy_max(series[None, a:b])[0], a, b) for a, b in segments))
        _, a, b = best
        segment = series[a:b]
        split = a + MIN_SEGMENT + int(np.argmax(energy_split(segment[None, :])[0]))
        p = permutation_pvalue(segment, rng)
        if found and p > alpha:
            break
        before, after = series[a:split], series[split:b]
        found.append(Change(known[split], p, 100.0 * (after.mean() / before.mean() - 1), float(before.mean()),
                            float(after.mean())))
        splits.append(split)
        if p > alpha:
            break
    return found


def energy_max(x: np.ndarray) -> np.ndarray:
    """The largest of e-divisive's divergence statistics over the splits of each row of x (energy_split)."""
    return np.max(energy_split(x), axis=1)


def energy_split(x: np.ndarray) -> np.ndarray:
    """e-divisive's divergence statistic (α = 1) of every split that leaves MIN_SEGMENT on each side, for each row of
    x (one series a row; the splits after MIN_SEGMENT, MIN_SEGMENT + 1, … values):
    Q(s) = m·k/n · (2/(m·k) Σ|a − b| − Σ_{i<j}|a_i − a_j| / C(m, 2)
    − Σ_{i<j}|b_i − b_j| / C(k, 2)), a the first m values, b the other k."""
    rows, n = x.shape
    d = np.abs(x[:, :, None] - x[:, None, :])
    s = np.zeros((rows, n + 1, n + 1))
    s[:, 1:, 1:] = d.cumsum(1).cumsum(2)

    m = np.arange(MIN_SEGMENT, n - MIN_SEGMENT + 1)

    def block(*corners):        # the sums of d over rows a…b−1, columns c…e−1, for every split at once
        a, b, c, e = np.broadcast_arrays(*corners, m)[:4]
        return s[:, b, e] - s[:, a, e] - s[:, b, c] + s[:, a, c]
    k = n - m
    between = block(0, m, m, n)
    within_a = block(0, m, 0, m) / 2
    within_b = block(m, n, m, n) / 2
    e = 2 * between / (m * k) - within_a / (m * (m - 1) / 2) - within_b / (k * (k - 1) / 2)
    return m * k / n * e


def permutation_pvalue(segment: np.ndarray, rng: np.random.Generator) -> float:
    """How often a shuffled segment's best split diverges as much as the segment's own: (1 + that count) / (1 +
    PERMUTATIONS)."""
    observed = energy_max(segment[None, :])[0]
    shuffled = rng.permuted(np.tile(segment, (PERMUTATIONS, 1)), axis=1)
    as_large = sum(int(np.sum(energy_max(chunk) >= observed - 1e-12)) for chunk in np.array_split(shuffled, 10))
    return (1 + as_large) / (1 + PERMUTATIONS)


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
