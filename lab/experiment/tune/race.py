"""A search run ended once its hold has nothing left to say (issue 86, item 1): candidates race on replicates, not
on hold length. The load watches the paired windows at steady state (each 10 s bin's candidate ÷ control throughput
from where both machines settled, settle.py) and ends the hold where either holds:

- **it cannot beat the bar**: its upper bound, with one run's own draw τ (the between-run spread) beside its
  within-run error, lies under the leader's lower bound, or under 1 − floor where no leader is better (a clearly
  worse candidate no longer runs its whole hold);
- **its own error is far below what matters**: the within-run standard error is under the larger of τ and the floor,
  over PRECISE: a longer hold narrows what the next run's own draw swamps anyway, or what no decision at the floor's
  scale needs (a τ measured near 0 held every run to its cap, on containers' 4 % windows); a replicate in the other
  orientation measures what is left.

A confirmation's runs race on the second rule alone (`measuring`): when a run stops depends on its noise, never on its
value, so its ratio is read as a whole hold's would be, and the crossover of the series cancels the machines' bias.

Judged at the 99 % level on the log scale, the windows' lag-1 autocorrelation counted (n·(1 − ρ)/(1 + ρ) windows'
worth). A run ended so is an ordinary run whose hold was shorter: its report and outcome are read as any other's.
"""
from __future__ import annotations

import math
import random
from dataclasses import dataclass

WINDOW_S = 10            # a paired window: the report's bin (report/stats/steady.py BIN_S)
MIN_WINDOWS = 6          # a minute of steady state at least before either rule is looked at
PRECISE = 3.0            # within-run error under max(τ, floor) / PRECISE: the hold has said what it can
Z99 = 2.326348           # one-sided 99 %: a candidate is stopped as worse only when clearly so
BUDGET_LEVEL = 0.95      # the confirmations' runs fit their reserve this often (budgeted_s)
DRAWS = 2000             # draws of their total (budgeted_s): its 95th percentile within ~1 %
CANNOT = "cannot beat"   # how a hold ended on its value begins (tune/command.py: such a run would have measured its
                         # own precision later than it ended: censored, `lengths`)


@dataclass(frozen=True)
class Race:
    """What a search run is raced against."""
    bar: float               # the ratio it must be able to beat: the leader's lower bound, at least 1 − floor
    tau: float               # one run's own draw (log scale): the between-run spread
    swapped: bool = False    # the candidate on machine default: its windows' ratio is default ÷ tuned
    steady_s: float = MIN_WINDOWS * WINDOW_S     # the steady state both machines need before it is looked at
    on_value: bool = True    # False: ended on its precision alone (a confirmation's run: `measuring`)
    floor: float = 0.0       # the smallest gain worth a change: no decision needs a run finer than its scale

    @property
    def scale(self) -> float:
        """What a run's own error is measured against: the between-run spread, or the floor where that is larger."""
        return max(self.tau, self.floor)

    def _precision(self) -> str:
        return (f"its own error is under a {PRECISE:g}rd of the between-run spread {self.tau:.1%}"
                + (f" or of the floor {self.floor:.0%}" if self.floor > self.tau else ""))

    def said(self) -> str:
        if not self.on_value:
            return f"raced on its precision alone: ended once {self._precision()}, never on its value"
        return (f"raced: ended once it cannot beat {self.bar:.3f}× (with a between-run spread of {self.tau:.1%}) or "
                f"{self._precision()}")

    def decided(self, ratios: list[float]) -> str | None:
        """Why the hold can end now, given the paired windows so far (tuned ÷ default per bin), or None."""
        x = [math.log(r if not self.swapped else 1 / r) for r in ratios if r and r > 0]
        n = len(x)
        if n < MIN_WINDOWS:
            return None
        mean = sum(x) / n
        var = sum((v - mean) ** 2 for v in x) / (n - 1)
        lag = sum((x[i] - mean) * (x[i + 1] - mean) for i in range(n - 1)) / ((n - 1) * var) if var > 0 else 0.0
        rho = min(0.9, max(0.0, lag))
        se = math.sqrt(var / max(2.0, n * (1 - rho) / (1 + rho)))
        upper = math.exp(mean + Z99 * math.sqrt(se * se + self.tau * self.tau))
        if self.on_value and upper < self.bar:
            return (f"{CANNOT} {self.bar:.3f}×: {math.exp(mean):.3f}× over {n} windows, at most {upper:.3f}× "
                    "with a run's own draw")
        if self.scale > 0 and se < self.scale / PRECISE:
            return (f"measured: {math.exp(mean):.3f}× over {n} windows, its own error {se:.1%} under a "
                    f"{PRECISE:g}rd of the " + (f"between-run spread {self.tau:.1%}" if self.tau >= self.floor else
                                                f"floor {self.floor:.0%}"))
        return None


def of(leader_low: float | None, floor: float, tau: float, swapped: bool) -> Race:
    """The race of a run: against the leader's lower bound where it is above 1 − floor, else against 1 − floor."""
    return Race(max(leader_low or 0.0, 1 - floor), tau, swapped, floor=floor)


def measuring(tau: float, floor: float = 0.0) -> Race:
    """The race of a confirmation's run: it ends once its own error is under max(τ, floor) / PRECISE, never on its
    value."""
    return Race(0.0, tau, on_value=False, floor=floor)


def raced(run_record: dict) -> bool:
    """Whether the run's load ran under a race (its run.json's load.race): a run that never loaded has none."""
    return isinstance((run_record.get("load") or {}).get("race"), dict)


def ended(run_record: dict) -> str | None:
    """Why a run's race ended its hold (its run.json's load.race.ended), None where it held whole."""
    record = (run_record.get("load") or {}).get("race")
    return record.get("ended") if isinstance(record, dict) else None


def lengths(measured_s: list[float] | None, cut_s: list[float] | None = None) -> list[tuple[float, float]]:
    """How long a run takes to measure its own precision, as a distribution [(length, probability)]: Kaplan–Meier's
    over the search's runs, those that ended on their precision or held whole (measured_s: a confirmation's run would
    be as long) and those ended on their value (cut_s: it would have measured later, how much later unknown:
    censored). What lies beyond the longest measured is left out of the sum (the caller puts it at the cap).

    Taking the value-ended runs at their cap made the median the cap wherever most candidates were worse: 2 of 16
    seeds of the stand-in kept a third of their budget for confirmations that took half of it."""
    events = sorted([(t, True) for t in measured_s or []] + [(t, False) for t in cut_s or []],
                    key=lambda e: (e[0], not e[1]))       # at one length, the runs that measured come first
    out, survive = [], 1.0
    for i, (t, measured) in enumerate(events):
        if measured:
            drop = survive / (len(events) - i)
            out.append((float(t), drop))
            survive -= drop
    return out


def budgeted_s(measured_s: list[float] | None, cut_s: list[float] | None, cap_s: int, runs: int,
               level: float = BUDGET_LEVEL) -> int | None:
    """What a confirmation's run is budgeted at: `runs` runs' total at its `level` quantile, ÷ runs, each run drawn
    from `lengths` (what it leaves out at the cap), at most the cap; None before any run measured.

    Budgeted at the median run, 5 of 166 stand-in tunes went 1–3 % over their 2-hour budget: eight runs' total
    exceeds eight medians about half the time, and the last block has no room for it."""
    dist = lengths(measured_s, cut_s)
    if not dist:
        return None
    values = [min(float(cap_s), t) for t, _ in dist] + [float(cap_s)]
    weights = [p for _, p in dist] + [max(0.0, 1.0 - sum(p for _, p in dist))]
    rng = random.Random(0)         # the same runs, the same budget
    totals = sorted(sum(rng.choices(values, weights, k=runs)) for _ in range(DRAWS))
    return min(int(cap_s), math.ceil(totals[min(DRAWS - 1, int(level * DRAWS))] / runs))


def on_value(said: str | None) -> bool:
    """Whether a run's hold ended because its value could not beat the bar (run.json load.race.ended)."""
    return bool(said) and said.startswith(CANNOT)
