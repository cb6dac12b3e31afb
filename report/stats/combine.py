"""The combination of the trials of a `--repeat N` run (the series' report: report/render/combine.py).

Each trial is a run folder whose default/ and tuned/ hold what the default and the tuned configuration did;
run.json `design.machines` says which machine ran which (from the second trial on they alternate:
crossover). Per figure, trial i measured L_i = effect + s_i·bias (logs of ratios; differences for error %),
s_i = +1 when each configuration ran on its namesake machine, −1 when swapped. With both orientations the
effect is the mean of the two orientation means, which cancels a machine bias (Mytkowicz et al. 2009: setup
bias; swap it out), and half their difference estimates that bias. The within-trial interval: t × the σ of the
same combination over the trials' independent bootstrap replicates, with the trials' degrees of freedom summed.
Each trial is also a random draw of the JVMs (Kalibera & Jones 2013): with more trials than fitted terms, the
between-trial variance τ² (DerSimonian & Laird 1986, around the fitted effect and bias) joins the interval, whose
scale is then the trials' own scatter (Hartung & Knapp 2001: t with the scatter's degrees of freedom, not a
Satterthwaite t that trusts a τ² from two of them). Whether the trials agree: Cochran's Q of the same fit.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy import special  # chdtrc is scipy.stats' chi2.sf, without its 0.8 s import

from report.stats.between import (
    Calibration,
    FigureCalibration,
    dispersion,
    dl_regression,
    hartung_knapp,
    on_scale,
    widen,
    widen_effect,
    within_se,
)
from report.stats.runs import LoadedRun, back
from report.stats.uncertainty import FIGURES, Effect, interval, kind_of, log_or_raw

AGREEMENT_P = 0.05


@dataclass
class Combined:
    figure: str
    kind: str
    effect: Effect                      # the combined estimate, its interval
    bias: Effect | None = None          # machine tuned vs machine default (both orientations only)
    q: float = math.nan                 # Cochran's Q, its degrees of freedom and p-value
    q_df: int = 0
    q_p: float = math.nan
    tau2: float = math.nan              # DerSimonian–Laird's between-trial variance (analysis scale)
    inflated: float = 1.0               # the interval's widening by it, against the within-trial interval
    per_trial: list[Effect | None] = field(default_factory=list)   # the trials' own Effects
    level: Effect | None = None         # the tuned configuration's own level over the trials (level gates)
    pooled: bool = False                # τ² pooled with the matching A/A trials' (_random_effects)


def _orientation_means(values: np.ndarray, signs: np.ndarray) -> tuple[Any, Any]:
    """(effect, bias) from one value (or replicate row) per trial; bias nan with one orientation."""
    plus, minus = values[signs > 0], values[signs < 0]
    if len(plus) and len(minus):
        return (plus.mean(axis=0) + minus.mean(axis=0)) / 2.0, (plus.mean(axis=0) - minus.mean(axis=0)) / 2.0
    return values.mean(axis=0), np.full(values.shape[1:], np.nan) if values.ndim > 1 else math.nan


def combine_figure(trials: list[LoadedRun], figure: str, cal: FigureCalibration | None = None) -> Combined:
    """The crossover combination of one figure over the trials that have an interval for it; the between-trial
    variance its own (random effects) where the trials can estimate it, else the matching A/A calibration's."""
    usable = [t for t in trials if t.analysis is not None and t.analysis.effects[figure].has_interval]
    kind = kind_of(figure)
    per_trial = [t.analysis.effects[figure] if t.analysis is not None else None for t in trials]
    if not usable:
        e = Effect(figure, kind, math.nan, math.nan)
        e.why_not = "no trial has an interval for it"
        return Combined(figure, kind, e, per_trial=per_trial)
    signs = np.array([-1.0 if t.swapped else 1.0 for t in usable])
    points = np.array([log_or_raw(kind, t.analysis.effects[figure].estimate) for t in usable])
    reps = np.array([log_or_raw(kind, t.analysis.replicates["tuned"][figure] / t.analysis.replicates["default"][figure]
                                if kind == "ratio" else
                                t.analysis.replicates["tuned"][figure] - t.analysis.replicates["default"][figure])
                     for t in usable])
    reps = np.where(np.isfinite(reps), reps, np.nan)
    effect, bias = _orientation_means(points, signs)
    effect_reps, bias_reps = _orientation_means(reps, signs)
    df = sum(t.analysis.df(figure) for t in usable)
    d_mean = float(np.mean([t.analysis.effects[figure].default for t in usable]))
    t_mean = float(np.mean([t.analysis.effects[figure].tuned for t in usable]))
    e = Effect(figure, kind, d_mean, t_mean, estimate=back(kind, effect), df=df)
    scale = (lambda x: np.exp(x)) if kind == "ratio" else (lambda x: x)
    e.low, e.high = interval(e.estimate, scale(effect_reps), df, log_scale=kind == "ratio")
    combined = Combined(figure, kind, e, per_trial=per_trial)
    if not math.isnan(bias):
        b = Effect(figure, kind, math.nan, math.nan, estimate=back(kind, bias), df=df)
        b.low, b.high = interval(b.estimate, scale(bias_reps), df, log_scale=kind == "ratio")
        combined.bias = b
    var = np.nanvar(reps, axis=1, ddof=1)
    _random_effects(combined, points, var, signs, cal)
    if not math.isnan(combined.tau2):
        combined.effect.intervals = f"random-effects ({len(usable)} trials" + (
            f", pooled with A/A runs {', '.join(cal.trials)})" if combined.pooled else ")")
    elif cal is not None:
        _calibrated(combined, cal, signs, var)
    combined.level = tuned_level(usable, figure)
    return combined


def within_floor(se: float, c: np.ndarray, var: np.ndarray, cal: FigureCalibration | None = None) -> float:
    """The combination's within-trial variance se², no smaller than Σ c_i² times the trials' mean bootstrap variance
    (the series' and, given, the matching A/A trials': the same machines and load). Each trial's bootstrap has a
    few degrees of freedom; a series whose trials came out quieter than their kind would otherwise get an interval
    too narrow (bench/coverage.py: 1–1.5 points of coverage in the A/A-calibrated series, none lost elsewhere)."""
    typical = np.concatenate([var, np.square(cal.s)]) if cal is not None else var
    return max(se * se, float(np.sum(c * c)) * float(np.nanmean(typical)))


def _calibrated(combined: Combined, cal: FigureCalibration, signs: np.ndarray, var: np.ndarray) -> None:
    """Too few trials for their own τ² (one per orientation): the matching A/A trials' between-run variance joins
    the interval, Σ c_i² τ² for the effect Σ c_i L_i. Both orientations cancel the twins' bias, so the A/A's τ² around
    its own mean (DerSimonian–Laird, k ≥ 2) is the one that applies; one orientation (or one A/A trial): τ₀²,
    around no difference, which keeps the bias in. The interval is Hartung–Knapp's on the A/A trials' scatter
    (between.hartung_knapp: with a Satterthwaite t it covered 86.5 %, bench/coverage.py)."""
    c_effect, _ = _coefficients(signs)
    around_mean = combined.bias is not None and cal.k >= 2
    tau2 = cal.tau2_dl if around_mean else cal.tau2
    e = combined.effect
    se = within_se(e.kind, e.low, e.high, e.df)
    between = tau2 * float(np.sum(c_effect ** 2))
    if widen_effect(e, cal, between=0.0):       # its label and within-run interval kept; the widening is this one
        e.low, e.high, e.df = hartung_knapp(e.kind, e.estimate, within_floor(se, c_effect, var, cal) + between,
                                            [cal.dispersion(tau2, around_mean)])


def tuned_level(trials: list[LoadedRun], figure: str) -> Effect | None:
    """The tuned configuration's level over the trials (on both machines in a crossover), for level gates: the
    mean of the trials' levels on the figure's scale, its interval from their within-run intervals plus the
    between-trial variance (Hedges' unweighted moments: the levels' variance less the mean within-run variance,
    k ≥ 2), t with Satterthwaite's degrees of freedom.
    None when a trial has no interval of its level."""
    kind = kind_of(figure)
    effects = [t.analysis.effects[figure] for t in trials]
    if not effects or any(math.isnan(e.tuned_low) for e in effects):
        return None
    values = np.array([on_scale(kind, e.tuned) for e in effects])
    se = np.array([within_se(kind, e.tuned_low, e.tuned_high, t.analysis.level_df(figure))
                   for e, t in zip(effects, trials, strict=True)])
    k = len(values)
    level = Effect(figure, kind, math.nan, back(kind, float(values.mean())))
    level.estimate = level.tuned
    if not np.all(np.isfinite(values)):
        return None
    if np.all(se == 0):                 # no errors in any trial: exactly none
        level.low = level.high = level.tuned
        return level
    tau2 = max(0.0, float(values.var(ddof=1) - np.mean(se * se))) if k >= 2 else 0.0
    within = float(np.sqrt(np.sum(se * se))) / k
    df = float(sum(t.analysis.level_df(figure) for t in trials))
    level.low, level.high, level.df = widen(kind, level.tuned, within, df, tau2 / k, max(k - 1, 1))
    if figure == "error_pct":           # a rate: inside 0 … 100 %
        level.low, level.high = max(0.0, level.low), min(100.0, level.high)
    return level


def _coefficients(signs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The weights c_i of the trials in the effect (the mean of the orientation means) and in the bias (half their
    difference); one orientation: the effect is the plain mean, no bias."""
    plus, minus = signs > 0, signs < 0
    if plus.any() and minus.any():
        effect = np.where(plus, 0.5 / plus.sum(), 0.5 / minus.sum())
        return effect, np.where(plus, effect, -effect)
    return np.full(len(signs), 1.0 / len(signs)), np.zeros(len(signs))


def _random_effects(combined: Combined, points: np.ndarray, var: np.ndarray, signs: np.ndarray,
                    cal: FigureCalibration | None = None) -> None:
    """Agreement and the between-trial variance: Cochran's Q of the trials around the weighted least-squares fit of
    effect + s·bias (weights: 1 / each trial's bootstrap variance), χ² with N − fitted terms df; DerSimonian–Laird's
    τ² from the same fit (Q − df over the weights' trace). The effect Σ c_i L_i then has variance Σ c_i² (s_i² + τ²);
    its interval (and the bias's) is Hartung–Knapp's, estimate ± t·√(q·(se² + τ² Σ c_i²)), q the trials' scatter
    around the fit with the weights 1/(s_i² + τ²) over its N − fitted terms df, t with those df. Without N > fitted
    terms τ² cannot be estimated: the within-trial interval stays, and the report says so. With both orientations
    and ≥ 2 matching A/A trials, their τ² around their mean (the same between-run variance, measured apart) is pooled
    with the series' own, each weighted by its degrees of freedom, and their scatter joins q: the df add (a series of
    4 alone has 2). Measured (bench/coverage.py, report/README.md): a Satterthwaite t on the same τ² covered
    89.5 % (series of 4) and 86.5 % (one trial per orientation with 4 A/A runs) where τ was about each trial's
    own standard error; it fell back to the within-trial width whenever τ² came out 0, which 2 df make common."""
    both = combined.bias is not None
    combined.q_df = len(points) - (2 if both else 1)
    if combined.q_df < 1 or not np.all(var > 0):
        return
    design = np.column_stack([np.ones(len(points)), signs])[:, :2 if both else 1]
    _, combined.q, combined.tau2 = dl_regression(points, var, design)
    combined.q_p = float(special.chdtrc(combined.q_df, combined.q))
    tau2 = combined.tau2
    pooled = both and cal is not None and cal.k >= 2
    if pooled:
        tau2 = (combined.q_df * combined.tau2 + (cal.k - 1) * cal.tau2_dl) / (combined.q_df + cal.k - 1)
        combined.pooled = True
    scatter = [dispersion(points, var + tau2, design)] + ([cal.dispersion(tau2, around_mean=True)] if pooled else [])
    c_effect, c_bias = _coefficients(signs)
    for e, c in ((combined.effect, c_effect), (combined.bias, c_bias)):
        if e is None or not e.has_interval:
            continue
        se = within_se(e.kind, e.low, e.high, e.df)
        half = on_scale(e.kind, e.high) - on_scale(e.kind, e.estimate)
        e.within_low, e.within_high = e.low, e.high
        e.low, e.high, e.df = hartung_knapp(e.kind, e.estimate, within_floor(se, c, var, cal if pooled else None)
                                            + tau2 * float(np.sum(c * c)), scatter)
        if e is combined.effect and half > 0:
            combined.inflated = (on_scale(e.kind, e.high) - on_scale(e.kind, e.estimate)) / half


def combine(trials: list[LoadedRun], calibration: Calibration | None = None) -> dict[str, Combined]:
    """Every figure combined; calibration: the A/A trials matching the series' load (none for an A/A series)."""
    return {figure: combine_figure(trials, figure, calibration.figures[figure] if calibration else None)
            for figure in FIGURES}
