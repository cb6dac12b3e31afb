"""The confirmation's repeated looks (issue 54, item 4): a finalist's crossover against a control runs in blocks of
`--repeat 4` and is looked at after each block, over all its trials so far, until the interval is decisive against
both thresholds 1 − floor and 1 + floor (a gain beyond the floor, as good within it, or worse by more) or LOOKS
blocks have run.

Each look j judges the combined interval at its own level 1 − α_j, the α_j spent by an O'Brien–Fleming-type
function (Lan & DeMets 1983): α(t) = 2 − 2Φ(z₀.₉₇₅ / √t), t = j / LOOKS, α_j = α(t_j) − α(t_{j−1}). The looks'
levels add up to 5 % and the chance that any look's interval misses the truth is at most their sum (Bonferroni's
union bound), whatever the looks' correlation. That is conservative (exact group-sequential boundaries are
narrower) but it holds for a t interval whose variance is itself estimated from a few trials, where the exact
boundaries' known-variance assumption does not. The O'Brien–Fleming shape spends almost nothing at the first look
(only an effect far beyond a threshold stops there: 99.93 % with three looks) and keeps the last look's interval
close to the 95 % one (96.6 %).
"""
from __future__ import annotations

import math
from statistics import NormalDist

ALPHA = 0.05
LOOKS = 3                   # blocks of --repeat 4 at most: 4, 8, 12 trials against each control

# what a look's interval says against 1 − floor and 1 + floor; the first three end the looks
GAIN, AS_GOOD, WORSE = "gain", "as good", "worse"
NOT_WORSE, NO_GAIN, UNDECIDED = "not worse", "no gain", "undecided"
DECIDED = (GAIN, AS_GOOD, WORSE)
SAID = {GAIN: "a gain beyond the floor", AS_GOOD: "as good within the floor (no gain beyond it)",
        WORSE: "worse by more than the floor", NOT_WORSE: "at least as good within the floor (a gain not shown)",
        NO_GAIN: "no gain beyond the floor (as good not shown)", UNDECIDED: "neither a gain nor as good shown"}


def spent(look: int, looks: int = LOOKS, alpha: float = ALPHA) -> float:
    """The error spent by the end of look `look` of `looks`: 0 before the first, alpha at the last."""
    if look <= 0:
        return 0.0
    normal = NormalDist()
    t = min(look / looks, 1.0)
    return 2.0 - 2.0 * normal.cdf(normal.inv_cdf(1.0 - alpha / 2.0) / math.sqrt(t))


def level(look: int, looks: int = LOOKS) -> float:
    """The confidence level look `look` judges its interval at: 1 − (what it spends)."""
    return 1.0 - (spent(look, looks) - spent(look - 1, looks))


def relevelled(effect: dict | None, confidence: float) -> tuple[float, float] | None:
    """A ratio's interval at another confidence, from its 95 % one (estimate ± t·se on the log scale, as every
    interval the report writes) and the degrees of freedom of its t; None without an estimate, interval or df
    (a series combined before verdict.json format 4 wrote its df: its look cannot be judged, so it is undecided)."""
    # scipy: the report's own dependency, loaded only where a confirmation is judged
    from scipy import stats

    e = effect or {}
    est, low, high, df = (e.get(k) for k in ("estimate", "low", "high", "df"))
    if not all(isinstance(x, (int, float)) and x > 0 for x in (est, low, high, df)):
        return None
    df = max(1.0, df)           # as the report's t_quantile takes it
    se = (math.log(high) - math.log(low)) / 2.0 / float(stats.t.ppf(0.975, df))
    half = float(stats.t.ppf(1.0 - (1.0 - confidence) / 2.0, df)) * se
    return est * math.exp(-half), est * math.exp(half)


def decision(interval: tuple[float, float] | None, floor: float) -> str:
    """What an interval says against 1 − floor and 1 + floor (SAID)."""
    if interval is None:
        return UNDECIDED
    low, high = interval
    if low > 1 + floor:
        return GAIN
    if high < 1 - floor:
        return WORSE
    if low >= 1 - floor:
        return AS_GOOD if high < 1 + floor else NOT_WORSE
    return NO_GAIN if high < 1 + floor else UNDECIDED
