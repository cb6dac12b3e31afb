"""The lab's intervals on the stand-in's runs (standin.py, stats "lab"), by the report's own functions
(report/stats/between.py, combine.py), so that the proofs a tune reads carry the lab's few degrees of freedom:

- one run: estimate·e^(±t·se), t with its independent windows less one (the report's blocks less one);
- calibrated by the A/A runs so far: τ₀² (the twins' bias counted in) beside se², t with Satterthwaite's df
  (between.widen_effect);
- a series (a confirmation's block, or its looks combined): the crossover mean of the orientations' plain means,
  its within-run variance Σcᵢ²sᵢ² (no smaller than Σcᵢ² × the trials' mean sᵢ²: combine.within_floor), then
  DerSimonian–Laird's τ² of effect + s·bias, pooled with the A/A runs' τ² (k ≥ 2, by df), and Hartung–Knapp's
  t at the scatter's df (N − 2, + k − 1 pooled): a block of 4 has 2 or 3; with no df left for τ² (one run per
  orientation), the A/A runs' τ² and their scatter's df (combine._calibrated).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from report.stats.between import (
    FigureCalibration,
    dersimonian_laird,
    dispersion,
    dl_regression,
    hartung_knapp,
    tau2_known_zero,
    widen,
)
from report.stats.combine import within_floor
from report.stats.uncertainty import t_quantile


@dataclass(frozen=True)
class Interval:
    estimate: float
    low: float
    high: float
    df: float
    said: str = "within-run"        # verdict.json effects.tps.intervals


def se_of(low: float, high: float, df: float) -> float:
    """The log-scale standard error behind estimate·e^(±t·se) (between.within_se)."""
    return (math.log(high) - math.log(low)) / 2.0 / t_quantile(df)


def run(estimate: float, se: float, df: int) -> Interval:
    half = t_quantile(df) * se
    return Interval(estimate, estimate * math.exp(-half), estimate * math.exp(half), float(df))


def calibration(aa: list[Interval]) -> FigureCalibration | None:
    """What the A/A runs so far say of the between-run variance (between._figure), None before any."""
    if not aa:
        return None
    d, s = [math.log(r.estimate) for r in aa], [se_of(r.low, r.high, r.df) for r in aa]
    cal = FigureCalibration("tps", [f"aa-{i + 1}" for i in range(len(aa))], d, s)
    cal.tau2 = tau2_known_zero(np.array(d), np.array(s))
    if cal.k >= 2:
        cal.aa_mean, cal.tau2_dl = dersimonian_laird(np.array(d), np.array(s))
    return cal


def calibrated(r: Interval, cal: FigureCalibration | None) -> Interval:
    """One A/B run's interval widened by the A/A runs' τ₀² (k df), as the report's widen_effect."""
    if cal is None:
        return r
    said = f"calibrated (the stand-in's A/A runs, {cal.k})"
    if cal.tau2 <= 0:
        return Interval(r.estimate, r.low, r.high, r.df, said)
    low, high, df = widen("ratio", r.estimate, se_of(r.low, r.high, r.df), r.df, cal.tau2, cal.k)
    return Interval(r.estimate, low, high, df, said)


def coefficients(signs: np.ndarray) -> np.ndarray:
    """Each trial's weight in the effect: the mean of the orientations' means (one orientation: the plain mean)."""
    plus, minus = signs > 0, signs < 0
    if plus.any() and minus.any():
        return np.where(plus, 0.5 / plus.sum(), 0.5 / minus.sum())
    return np.full(len(signs), 1.0 / len(signs))


def series(trials: list[tuple[Interval, bool]], cal: FigureCalibration | None) -> Interval:
    """A series' trials (each run's own interval, whether its roles were swapped) combined as combine_figure does."""
    points = np.array([math.log(r.estimate) for r, _ in trials])
    var = np.array([se_of(r.low, r.high, r.df) ** 2 for r, _ in trials])
    signs = np.array([-1.0 if swapped else 1.0 for _, swapped in trials])
    c = coefficients(signs)
    both = bool((signs > 0).any() and (signs < 0).any())
    estimate = math.exp(float(np.sum(c * points)))
    se = math.sqrt(float(np.sum(c * c * var)))      # the replicates' σ of the combination: independent trials
    df = float(sum(r.df for r, _ in trials))
    within = run(estimate, se, df)
    q_df = len(points) - (2 if both else 1)
    if q_df >= 1 and np.all(var > 0):                # random effects (combine._random_effects)
        design = np.column_stack([np.ones(len(points)), signs])[:, :2 if both else 1]
        _, _, tau2 = dl_regression(points, var, design)
        pooled = both and cal is not None and cal.k >= 2
        if pooled:
            tau2 = (q_df * tau2 + (cal.k - 1) * cal.tau2_dl) / (q_df + cal.k - 1)
        scatter = [dispersion(points, var + tau2, design)] + ([cal.dispersion(tau2, True)] if pooled else [])
        low, high, df = hartung_knapp("ratio", estimate, within_floor(se, c, var, cal if pooled else None)
                                      + tau2 * float(np.sum(c * c)), scatter)
        said = f"random-effects ({len(points)} trials" + (", pooled with the stand-in's A/A runs)" if pooled else ")")
        return Interval(estimate, low, high, df, said)
    if cal is not None:                              # too few trials for their own τ² (combine._calibrated)
        around_mean = both and cal.k >= 2
        tau2 = cal.tau2_dl if around_mean else cal.tau2
        low, high, df = hartung_knapp("ratio", estimate, within_floor(se, c, var, cal) + tau2 * float(np.sum(c * c)),
                                      [cal.dispersion(tau2, around_mean)])
        return Interval(estimate, low, high, df, f"calibrated (the stand-in's A/A runs, {cal.k})")
    return within
