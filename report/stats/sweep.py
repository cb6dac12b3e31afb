"""A sweep's and an ablation's analysis, from each trial's verdict.json (report/read/sweep.py; the document:
report/render/sweep.py).

Sweep: each verdict figure against the knob's value with the trial's 95 % interval (tuned vs the default
control, paired within the trial), and the best value by the rule in sweep.json (highest successful-TPS ratio
with tuned errors ≤ 0.1 %), with whether its interval overlaps the runner-up's. Ablation: each tier's share of
the full set's TPS gain: share = (ln r_full − ln r_without) / ln r_full, where r is a trial's tuned/default
successful TPS ratio; its interval propagates both trials' intervals on the log scale (σ from each 95 % interval's
half-width / its own t quantile — t₀.₉₇₅ with the interval's degrees of freedom, 1.96 only where the verdict names
none — independent trials, t with Satterthwaite's degrees of freedom; r_full's own uncertainty in the denominator
left out). The same for the
error reduction, on the difference in error points (d_full − d_without) / d_full: under overload the tuned set's
gain may be in errors, not in TPS. A share is given only of a gain the full set's trial tells apart from none
(its interval excludes no difference); of a gain within the noise every share would be noise too.
"""
from __future__ import annotations

import math
from typing import Any

from report.read.sweep import Trial
from report.stats.between import satterthwaite
from report.stats.uncertainty import t_quantile

Z95 = 1.959964


def best(trials: list[Trial], max_error_pct: float) -> tuple[Trial | None, Trial | None, str]:
    """(best trial, runner-up or None, why) by the rule: highest TPS ratio among trials with tuned errors ≤ max."""
    ok = [t for t in trials if t.reported and t.effect("tps").get("estimate") is not None
          and (t.effect("error_pct").get("tuned") or 0) <= max_error_pct]
    if not ok:
        return None, None, f"no trial kept the tuned side's errors at or below {max_error_pct} %"
    ranked = sorted(ok, key=lambda t: t.effect("tps")["estimate"], reverse=True)
    return ranked[0], (ranked[1] if len(ranked) > 1 else None), ""


def overlaps(a: Trial, b: Trial) -> bool:
    ea, eb = a.effect("tps"), b.effect("tps")
    if None in (ea.get("low"), ea.get("high"), eb.get("low"), eb.get("high")):
        return True
    return ea["low"] <= eb["high"] and eb["low"] <= ea["high"]


def _kind(e: dict[str, Any], figure: str) -> str:
    return e.get("kind") or ("difference" if figure == "error_pct" else "ratio")


def _on_scale(x: float | None, kind: str) -> float | None:
    """A figure on the scale where gains add up: ln of a ratio, a difference as it is (None when undefined)."""
    if x is None:
        return None
    if kind == "ratio":
        return math.log(x) if x > 0 else None
    return x


def _t(df: float | None) -> float:
    return Z95 if df is None or df <= 0 else t_quantile(df)


def _sigma(e: dict[str, Any], kind: str) -> float | None:
    """The standard error behind a 95 % interval: its half-width over the t quantile it was made with (at df 2, 1.96
    would make it 2.2× too large)."""
    low, high = _on_scale(e.get("low"), kind), _on_scale(e.get("high"), kind)
    return None if low is None or high is None else (high - low) / (2 * _t(e.get("df")))


def gain_told_apart(full: Trial, figure: str = "tps") -> bool:
    """Whether the full set's trial tells its gain in figure apart from none: what its verdict.json recorded
    (report/stats/uncertainty.py Effect.detectable: the interval excludes no difference; no interval, not told)."""
    return bool(full.effect(figure).get("detectable"))


def share(full: Trial, without: Trial, figure: str = "tps") -> tuple[float, float | None, float | None] | None:
    """(share, low, high) of the full set's gain in figure (tps: the TPS ratio; error_pct: the error difference)
    that the reverted tier carried; None when not computable."""
    ef, ew = full.effect(figure), without.effect(figure)
    kind = _kind(ef, figure)
    gain, rest = _on_scale(ef.get("estimate"), kind), _on_scale(ew.get("estimate"), kind)
    if gain is None or rest is None or abs(gain) < 1e-9:
        return None
    part = gain - rest
    sf, sw = _sigma(ef, kind), _sigma(ew, kind)
    if sf is None or sw is None:
        return part / gain, None, None
    df = [ef.get("df"), ew.get("df")]       # Welch–Satterthwaite: the two variances' degrees of freedom together
    joint = None if None in df else satterthwaite([(sf * sf, df[0]), (sw * sw, df[1])])
    half = _t(joint) * math.hypot(sf, sw)
    low, high = sorted(((part - half) / gain, (part + half) / gain))
    return part / gain, low, high
