"""The bootstrap's block length (issue 52): Politis & White's (2004, corrected by Patton, Politis & White 2009)
optimal circular block length of the paired statistic's own influence series — what both machines share (a
warm-up, a drift, the host's slowdown) cancels there as it does in the statistic — times the factor each figure
group's coverage asked for on synthetic runs with a known truth (bench/coverage.py; report/README.md,
Uncertainty); at least 1, at most a third of the windows. The tuned configuration's own level takes the same rule
on that machine's own series, in which nothing cancels."""
from __future__ import annotations

import math

import numpy as np

from report import MACHINES
from report.stats.bootstrap import circular_block_length
from report.stats.windows import LATENCY_BIN, PERCENTILES, Paired, Side

# × Politis–White's length: the plug-in length itself (and twice it) under-covered, 88–91 % for TPS, 4× still
# 91–92.5 % where the machines' own noise is slow (with centering_inflation: 4× 92.0–93.8 %, 5× 93.7–94.3 %, 6×
# 94.5–95.2 % but a +20 % detected in 77 % of 5-minute runs, not 87 %); errors 8× still 89.5–92 % where bursts and a
# warm-up meet, 16× 93–95.5 % (report/README.md, Coverage and width)
BLOCK_FACTOR = {"tps": 5, "errors": 16, "latency": 3, "cpu": 2}
# the groups whose replicates are widened by centering_inflation; the errors' 16× blocks were chosen for coverage
# without it (93.5–96.5 % over 600 runs a row; with it stationary errors covered 97.3 %)
CENTERED = ("tps", "latency", "cpu")


def influence(paired: Paired, group: str) -> list[np.ndarray]:
    """The per-window influence series of the group's paired statistics (tuned vs default): how much each window
    moves the statistic, to first order. Its autocorrelation is what the bootstrap's blocks must keep: what both
    machines share (a warm-up, a drift, the host's slowdown) cancels in it, as it does in the statistic.
    - TPS, log(T/D) of the successes' sums: t_i/t̄ − d_i/d̄;
    - errors, the difference of the failed shares F/R: (f_i − e·r_i)/r̄ of tuned less the same of default;
    - latency, log(q_t/q_d) of each percentile: (p·s_i − b_i)/(S·g) of tuned less default's, with b_i the window's
      successes at or below the side's percentile and g the density of log latency there (the histogram's);
    - the JVM's CPU per success, log(C/S) of each side: c_i/c̄ − s_i/s̄ of tuned less default's."""
    d, t = (side_influence(paired.sides[name], group) for name in MACHINES)
    return [tuned - default for tuned, default in zip(t, d, strict=True) if np.ptp(tuned - default) > 0]


def side_influence(side: Side, group: str) -> list[np.ndarray]:
    """One machine's influence series of the group's figures (its own level: what a level gate judges)."""
    if group == "tps":
        mean = side.successes.mean()
        return [side.successes / mean if mean else np.zeros(len(side.successes))]
    if group == "errors":
        return [_error_influence(side)]
    if group == "cpu":
        recorded = np.isfinite(side.cpu_ms) if side.cpu_ms is not None else None
        if recorded is None or not np.nanmean(side.cpu_ms) or not side.successes[recorded].mean():
            return [np.zeros(len(side.successes))]
        return [np.where(recorded, np.nan_to_num(side.cpu_ms) / np.nanmean(side.cpu_ms)
                         - side.successes / side.successes[recorded].mean(), 0.0)]
    return [_quantile_influence(side, p) for p in PERCENTILES]


def _error_influence(side: Side) -> np.ndarray:
    mean_requests = side.requests.mean()
    if not mean_requests:
        return np.zeros(len(side.requests))
    failures = side.requests - side.successes
    share = failures.sum() / side.requests.sum()
    return (failures - share * side.requests) / mean_requests


QUANTILE_BINS = 5          # the density of log latency at a percentile: the histogram's bins within ±5 of its own


def _quantile_influence(side: Side, p: float) -> np.ndarray:
    counts = side.latency_hist.sum(axis=0)
    total = counts.sum()
    if not total:
        return np.zeros(side.latency_hist.shape[0])
    cum = np.cumsum(counts)
    at = int(np.searchsorted(cum, max(1.0, math.ceil(p / 100.0 * total - 1e-9)) - 1e-6))
    lo, hi = max(0, at - QUANTILE_BINS), min(len(counts), at + QUANTILE_BINS + 1)
    density = counts[lo:hi].sum() / (total * (hi - lo) * math.log(LATENCY_BIN))
    below = side.latency_hist[:, :at + 1].sum(axis=1)
    return (p / 100.0 * side.successes - below) / (total * density)


def block_length(paired: Paired, group: str = "tps") -> int:
    """BLOCK_FACTOR[group] × Politis & White's optimal circular block length of the group's paired influence
    series (influence(); the largest over the latency percentiles'), rounded up; 1 ≤ b ≤ n/3. The CPU's blocks
    hold at least one of its sampling intervals (within one, its windows share a rate by construction)."""
    return _block_of(influence(paired, group), paired.n, BLOCK_FACTOR[group], _least(paired, group))


def level_block_length(paired: Paired, group: str = "tps") -> int:
    """The same rule on the tuned machine's own influence series: the blocks of its level's interval, which
    nothing cancels (the host's slowdown, a warm-up and a drift are all in it)."""
    columns = [c for c in side_influence(paired.sides["tuned"], group) if np.ptp(c) > 0]
    return _block_of(columns, paired.n, BLOCK_FACTOR[group], _least(paired, group))


def _least(paired: Paired, group: str) -> int:
    return paired.cpu_step_windows if group == "cpu" else 1


def _block_of(columns: list[np.ndarray], n: int, factor: float, least: int = 1) -> int:
    if not columns or n < 4:
        return 1
    lengths = np.array([circular_block_length(column) for column in columns])
    lengths = lengths[np.isfinite(lengths)]
    b = math.ceil(factor * lengths.max()) if len(lengths) else 1
    return int(min(max(b, least, 1), max(1, n // 3)))


def centering_inflation(n: int, block: int, group: str = "tps") -> float:
    """How much wider than its bootstrap's spread an interval must be: a circular block bootstrap of b of n windows
    estimates the variance of a mean as the Bartlett-weighted autocovariances around the run's own mean, which
    leaves out about b/n of it (each block's deviations are taken from a mean the block itself moved; Künsch 1989,
    Politis & Romano 1992). √ of 1/(1 − b/n): 1.07 for the TPS blocks of a 3-minute run (23 of 180 windows), 1.22
    at the cap of a third. Without it a single run's TPS covered 91–92.5 % and its CPU 92–93 % (bench/coverage.py,
    600 seeded runs a row; report/README.md)."""
    if group not in CENTERED or block < 1 or block >= n:
        return 1.0
    return 1.0 / math.sqrt(1.0 - block / n)


def sampling_inflation(paired: Paired, block: int) -> float:
    """How much wider than the bootstrap's the CPU's interval must be: PCP spreads a sampling interval of L windows
    over them alike (by successes), so two windows h apart share their interval's cost with probability 1 − h/L —
    a triangular autocorrelation that a circular block bootstrap of b ≥ L windows weighs by 1 − h/b, seeing
    1 − L/(3b) of the variance (Künsch 1989: the block bootstrap's Bartlett weights). √ of its inverse; 1 where the
    blocks are shorter than an interval (they cannot be: _least)."""
    least = paired.cpu_step_windows
    if least <= 1 or block < least:
        return 1.0
    return 1.0 / math.sqrt(1.0 - least / (3.0 * block))
