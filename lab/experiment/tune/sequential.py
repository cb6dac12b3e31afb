"""The confirmation's repeated looks (issue 54, item 4): a finalist's crossover against a control runs in blocks of
`--repeat 4` and is looked at after each block, over all its trials so far, until the interval is decisive against
both thresholds 1 − floor and 1 + floor (a gain beyond the floor, as good within it, or worse by more) or LOOKS
blocks have run.

Each look j judges the combined interval at its own level 1 − α_j, the α_j spent by a Hwang–Shih–DeCani function
(Hwang, Shih & DeCani 1990) with γ = −2: α(t) = α (1 − e^(−γt)) / (1 − e^(−γ)), t = j / LOOKS, α_j = α(t_j) −
α(t_{j−1}). The looks' levels add up to 5 % and the chance that any look's interval misses the truth is at most their
sum (Bonferroni's union bound), whatever the looks' correlation. That is conservative (exact group-sequential
boundaries are narrower) but it holds for a t interval whose variance is itself estimated from a few trials, where the
exact boundaries' known-variance assumption does not.

Why γ = −2 (99.26 %, 98.56 %, 97.19 % with three looks): a first look has few df (4 trials: 3), where a t quantile's
tail is steep. The O'Brien–Fleming shape (Lan & DeMets 1983) this replaced spent almost nothing there (99.93 %: t =
14.6 at 3 df), so even a 2× gain went on to a second block half the time (trials' spread 10 %); Pocock's shape
(97.7 % at the first look) stops such gains at once but leaves the last look so wide that "as good" is shown a third
less often. Simulated (3,000–4,000 confirmations a case; the table in docs/methods.md): γ = −2 decides a 2× gain in
1.01 blocks on average (O'Brien–Fleming 1.53, Pocock 1.00) and shows a true equality as good 64 % of the time at a
5 % spread (O'Brien–Fleming 68 %, Pocock 43 %).
"""
from __future__ import annotations

import math

ALPHA = 0.05
LOOKS = 3                   # blocks of --repeat 4 at most: 4, 8, 12 trials against each control
GAMMA = -2.0                # the spending's shape: between Pocock's (0) and O'Brien–Fleming's (about −4)

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
    t = min(look / looks, 1.0)
    return alpha * (1.0 - math.exp(-GAMMA * t)) / (1.0 - math.exp(-GAMMA))


def level(look: int, looks: int = LOOKS) -> float:
    """The confidence level look `look` judges its interval at: 1 − (what it spends)."""
    return 1.0 - (spent(look, looks) - spent(look - 1, looks))


def relevelled(effect: dict | None, confidence: float) -> tuple[float, float] | None:
    """A ratio's interval at another confidence, from its 95 % one (estimate ± t·se on the log scale, as every
    interval the report writes) and the degrees of freedom of its t; None without an estimate, interval or df
    (a series combined before verdict.json format 4 wrote its df: its look cannot be judged, so it is undecided)."""
    # scipy: the report's own dependency, loaded only where a confirmation is judged (stdtrit: scipy.stats' t.ppf)
    from scipy import special

    e = effect or {}
    est, low, high, df = (e.get(k) for k in ("estimate", "low", "high", "df"))
    if not all(isinstance(x, (int, float)) and x > 0 for x in (est, low, high, df)):
        return None
    df = max(1.0, df)           # as the report's t_quantile takes it
    se = (math.log(high) - math.log(low)) / 2.0 / float(special.stdtrit(df, 0.975))
    half = float(special.stdtrit(df, 1.0 - (1.0 - confidence) / 2.0)) * se
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
