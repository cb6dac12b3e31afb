"""The run-to-run part of a verdict's uncertainty: each run's JVMs are a random draw (Kalibera & Jones, "Rigorous
benchmarking in reasonable time", ISMM 2013: every invocation is a random effect), which one run per side cannot
measure; the within-run bootstrap (stats/uncertainty.py) cannot see it.

Model, per figure on its analysis scale (log ratio for TPS and latency, the difference in points for errors): a
run measures D = δ + b + u + e, δ the configurations' difference, b the twins' own bias, u ~ N(0, τ²) the run's
own draw, e ~ N(0, s²) its within-run noise (s: the bootstrap's standard error). An A/A run has δ = 0, so its
d_i = b + u_i + e_i. The interval a single A/B run needs for δ is D ± t·√(s² + τ₀²) with τ₀² = b² + τ²: the
moment estimator with the mean known to be zero, τ₀² = max(0, (Σ w_i d_i² − k) / Σ w_i), w_i = 1/s_i² (k = 1:
d₁² − s₁²). DerSimonian & Laird (1986, Controlled Clinical Trials 7:177–188) estimate the mean too and τ² around
it: that τ² leaves the twins' bias out, right for a crossover series (which cancels it) and wrong for one run
(which carries it); it is reported beside, with the A/A mean. t: Student's quantile with Satterthwaite's degrees of
freedom for s² (the run's own) plus τ₀² (k). README: report/README.md (Uncertainty)."""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from report.read.calibrations import AALookup
from report.stats.uncertainty import FIGURES, Analysis, Effect, kind_of, t_quantile


def on_scale(kind: str, x: float | None) -> float:
    """A figure's value on the scale its intervals are symmetric on: log for a ratio, as is for a difference."""
    if x is None or math.isnan(x):
        return math.nan
    if kind == "ratio":
        return math.log(x) if x > 0 else math.nan
    return float(x)


def within_se(kind: str, low: float | None, high: float | None, df: float | None) -> float:
    """The within-run standard error behind an interval centre ± t·se (a ratio's on the log scale), recovered from
    the interval and the degrees of freedom of its t quantile; nan when any is missing."""
    lo, hi = on_scale(kind, low), on_scale(kind, high)
    if df is None or math.isnan(lo) or math.isnan(hi):
        return math.nan
    return (hi - lo) / 2.0 / t_quantile(df)


def tau2_known_zero(d: np.ndarray, s: np.ndarray) -> float:
    """Between-run variance of trials whose true difference is known to be 0 (A/A): max(0, (Σ w d² − k) / Σ w),
    w = 1/s²; it counts a steady bias of the twins into τ²."""
    w = 1.0 / np.square(s)
    return max(0.0, float((np.sum(w * np.square(d)) - len(d)) / np.sum(w)))


def dersimonian_laird(d: np.ndarray, s: np.ndarray) -> tuple[float, float]:
    """(weighted mean, τ²) by DerSimonian & Laird (1986): Q = Σ w (d − mean)², τ² = max(0, (Q − (k − 1)) /
    (Σ w − Σ w² / Σ w)); k ≥ 2."""
    coef, _, tau2 = dl_regression(np.asarray(d, dtype=float), np.square(s), np.ones((len(d), 1)))
    return float(coef[0]), tau2


def dl_regression(y: np.ndarray, v: np.ndarray, x: np.ndarray) -> tuple[np.ndarray, float, float]:
    """DerSimonian–Laird for a weighted least-squares fit y ~ x (meta-regression, Raudenbush 2009): (coefficients,
    Cochran's Q, τ² = max(0, (Q − (k − p)) / (Σ w − tr((XᵀWX)⁻¹ XᵀW²X)))); τ² nan without k > p."""
    w = 1.0 / v
    xtw = x.T * w
    coef = np.linalg.solve(xtw @ x, xtw @ y)
    q = float(np.sum(w * np.square(y - x @ coef)))
    df = len(y) - x.shape[1]
    if df < 1:
        return coef, q, math.nan
    trace = float(np.sum(w) - np.trace(np.linalg.solve(xtw @ x, (x.T * w * w) @ x)))
    return coef, q, max(0.0, (q - df) / trace)


def satterthwaite(parts: list[tuple[float, float]]) -> float:
    """Welch–Satterthwaite degrees of freedom of a sum of variance estimates [(variance, its df)]."""
    total = sum(v for v, _ in parts)
    denominator = sum(v * v / df for v, df in parts if v > 0)
    return total * total / denominator if denominator > 0 else parts[0][1]


def widen(kind: str, estimate: float, se: float, df: float, between: float,
          between_df: float) -> tuple[float, float, float]:
    """(low, high, df) of estimate ± t·√(se² + between) on the figure's scale, t with Satterthwaite's degrees of
    freedom."""
    df_total = satterthwaite([(se * se, df), (between, between_df)])
    return (*_around(kind, estimate, t_quantile(df_total) * math.sqrt(se * se + between)), df_total)


def _around(kind: str, estimate: float, half: float) -> tuple[float, float]:
    """estimate ± half on the figure's scale (a ratio's log), back on its own."""
    centre = on_scale(kind, estimate)
    if kind == "ratio":
        return math.exp(centre - half), math.exp(centre + half)
    return centre - half, centre + half


def dispersion(y: np.ndarray, v: np.ndarray, x: np.ndarray | None) -> tuple[float, int]:
    """(Q*, its df): the weighted squared residuals of y around its weighted least-squares fit on x, weights 1/v
    (v: each value's whole variance, its own plus τ²); x None: around 0, a mean known to be zero (A/A runs'
    differences where the twins' bias stays in)."""
    if x is None:
        return float(np.sum(np.square(y) / v)), len(y)
    return dl_regression(y, v, x)[1], len(y) - x.shape[1]


def hartung_knapp(kind: str, estimate: float, variance: float,
                  parts: list[tuple[float, int]]) -> tuple[float, float, float]:
    """(low, high, df) of estimate ± t·√(q·variance) on the figure's scale (Hartung & Knapp, Statistics in
    Medicine 20:3875–3889, 2001; Sidik & Jonkman, Statistics in Medicine 21:3153–3159, 2002): `variance` the
    random-effects one (within-run plus τ²), q = ΣQ* / Σdf the scatter the trials actually showed against it
    (dispersion(), pooled over the parts that measured the same run-to-run variance), t with Σdf degrees of freedom.
    Unlike a Satterthwaite interval on a DerSimonian–Laird τ², it does not fall back to the within-run width when
    τ² is estimated as 0 from a few trials (which happens often with 2–5 df), and a within-run variance the
    bootstrap misjudged is rescaled by q."""
    q = sum(p for p, _ in parts)
    df = sum(d for _, d in parts)
    # no scatter at all (identical differences: only degenerate data): the model's variance as it is, not a point
    half = t_quantile(df) * math.sqrt((q / df if q > 0 else 1.0) * variance)
    return (*_around(kind, estimate, half), float(df))


@dataclass
class FigureCalibration:
    """What the matching A/A trials say of one figure's run-to-run variance."""
    figure: str
    trials: list[str]                     # the A/A trials with an interval for this figure
    d: list[float]                        # their differences (analysis scale)
    s: list[float]                        # their within-run standard errors
    tau2: float = 0.0                     # τ₀², around no difference: what an A/B interval adds
    tau2_dl: float = math.nan             # DerSimonian–Laird's τ², around the A/A mean (k ≥ 2)
    aa_mean: float = math.nan             # the A/A differences' weighted mean: the twins' apparent bias (k ≥ 2)

    @property
    def k(self) -> int:
        return len(self.trials)

    def dispersion(self, tau2: float, around_mean: bool) -> tuple[float, int]:
        """The A/A differences' Q* with weights 1/(s² + tau2): around their mean (k − 1 df) or around 0 (k)."""
        d, v = np.array(self.d), np.square(self.s) + tau2
        return dispersion(d, v, np.ones((self.k, 1)) if around_mean else None)


@dataclass
class Calibration:
    lookup: AALookup
    figures: dict[str, FigureCalibration] = field(default_factory=dict)
    applied: bool = False                 # this run's intervals include it

    @property
    def trials(self) -> list[str]:
        return self.lookup.names


def _figure(lookup: AALookup, figure: str) -> FigureCalibration:
    kind = kind_of(figure)
    cal = FigureCalibration(figure, [], [], [])
    spotless = []           # A/A trials without an error on either twin: a difference of exactly 0
    for trial in lookup.matching:
        e = trial.effects.get(figure) or {}
        d = on_scale(kind, e.get("estimate"))
        s = within_se(kind, e.get("low"), e.get("high"), trial.df.get(figure))
        if kind == "difference" and d == 0 and s == 0:
            spotless.append(trial.run_id)
            continue
        if math.isnan(d) or not s > 0:    # no interval
            continue
        cal.trials.append(trial.run_id)
        cal.d.append(d)
        cal.s.append(s)
    if cal.k and spotless:  # they count, as agreeing twins (leaving them out biased τ₀² up), weighted as the most
        cal.trials += spotless     # precise of the others (their own interval, 0 … 0, says nothing of its spread)
        cal.d += [0.0] * len(spotless)
        cal.s += [min(cal.s)] * len(spotless)
    if cal.k:
        d, s = np.array(cal.d), np.array(cal.s)
        cal.tau2 = tau2_known_zero(d, s)
        if cal.k >= 2:
            cal.aa_mean, cal.tau2_dl = dersimonian_laird(d, s)
    return cal


def calibrate(lookup: AALookup) -> Calibration:
    return Calibration(lookup, {figure: _figure(lookup, figure) for figure in FIGURES})


def widen_effect(effect: Effect, cal: FigureCalibration, between: float | None = None,
                 between_df: float | None = None) -> bool:
    """The effect's interval with the calibration's between-run variance (True), its within-run interval kept in
    within_low/high; False when there is nothing to widen. One run takes τ₀² with k df (the defaults); a series
    passes its own share of the A/A's variance (between, between_df: combine.py)."""
    if not effect.has_interval or not cal.k or (effect.kind == "difference" and effect.default == effect.tuned == 0):
        return False    # no interval, no calibration of this figure; or no errors on either machine: exactly none
    between = cal.tau2 if between is None else between
    se = within_se(effect.kind, effect.low, effect.high, effect.df)
    effect.within_low, effect.within_high = effect.low, effect.high
    if between > 0:         # (none: the interval as it was, not as recomputed to the last bit)
        effect.low, effect.high, effect.df = widen(effect.kind, effect.estimate, se, effect.df, between,
                                                   cal.k if between_df is None else between_df)
    effect.intervals = f"calibrated (A/A runs {', '.join(cal.trials)})"
    return True


def apply(analysis: Analysis | None, calibration: Calibration) -> None:
    """An A/B run's intervals widened by the between-run variance of the matching A/A trials (an A/A run keeps its
    own: it is what calibrates the others)."""
    if analysis is None or not calibration.trials:
        return
    widened = [widen_effect(effect, calibration.figures[figure]) for figure, effect in analysis.effects.items()]
    calibration.applied = any(widened)


def record(calibration: Calibration) -> dict[str, Any]:
    """verdict.json's calibration: which A/A trials, which not and why, each figure's variance components."""
    def num(x: float) -> float | None:
        return None if math.isnan(x) else x
    return {"applied": calibration.applied, "trials": calibration.trials, "unused": dict(calibration.lookup.unused),
            "why_none": calibration.lookup.why_none or None,
            "figures": {f: {"scale": "log ratio" if kind_of(f) == "ratio" else "difference in points",
                            "trials": c.trials, "tau2": c.tau2, "tau": math.sqrt(c.tau2), "tau2_dl": num(c.tau2_dl),
                            "aa_mean": num(c.aa_mean)} for f, c in calibration.figures.items()}}
