"""What the tuner knows of its runs: one A/B run's outcome as the tuner reads it (Outcome), a run of the study
(Result), and a candidate's runs together (Candidate).

A candidate's runs are combined on the log scale as a crossover: in each orientation weighted by the inverse of their
variance (its own interval's and, where its verdict was not calibrated by A/A runs, the between-run variance
`between`, what A/A runs of a load spread by between runs), the two orientations' means then averaged. A gain counts
only where the candidate ran in both orientations, at steady state, within its constraints, and its combined
interval's lower bound clears 1 + the floor (the smallest gain worth a change).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

REPLICATES = 2                # a candidate's runs before its gain can count: one in each orientation
Z95 = 1.959964


def t95(df: float | None) -> float:
    """Student's two-sided 95 % quantile at df (the normal's without one), as the report's t_quantile takes df."""
    if df is None or df > 1e5:
        return Z95
    from scipy import special  # the report's own dependency, loaded only where a run's df is known
    return float(special.stdtrit(max(1.0, df), 0.975))


@dataclass(frozen=True)
class Outcome:
    """One run of a candidate against the control, as the tuner sees it."""
    ratio: float | None                 # candidate ÷ control, successful TPS (paired); None: it did not run
    low: float | None = None            # the ratio's 95 % interval (the between-run variance in it: `calibrated`)
    high: float | None = None
    violations: tuple[str, ...] = ()    # the constraints it broke, or why it did not start or stopped answering
    run: str = ""                       # its run folder
    # Whether both machines' throughput settled within the hold (the report's steady state) and the ratio is of the
    # window from there (the later machine's start_s, report --warmup auto); False: a machine still warming up at
    # the hold's end, its ratio a warm-up's (under emulation a C1-only JIT's quicker start looked like +17 % at a
    # 6-min hold on the stand-in); None: not judged (a verdict without steady states)
    settled: bool | None = None
    steady_from_s: float | None = None
    swapped: bool = False               # the machines' roles swapped (the candidate on machine default)
    calibrated: bool = False            # its interval holds the between-run variance already (A/A runs of the load)
    df: float | None = None             # the degrees of freedom of its interval's t (None: a normal interval)
    tau: float | None = None            # the between-run spread its report's A/A runs widened it by (tune/aa.py)

    @property
    def feasible(self) -> bool:
        return self.ratio is not None and not self.violations

    @classmethod
    def stored(cls, kept: dict) -> Outcome:
        """An outcome as the study keeps it (a trial's user attribute: JSON, its violations a list)."""
        return cls(**{**kept, "violations": tuple(kept["violations"])})

    def log_variance(self, between: float) -> float:
        """The variance of its log ratio: its interval's (estimate ± t·se, t at its df: taken as 1.96, a run's
        variance was overstated 2–2.6× at the 3–5 df of a 6-minute hold), and the between-run variance where that is
        not in it."""
        se = (math.log(self.high) - math.log(self.low)) / (2 * t95(self.df)) if self.low and self.high else 0.0
        return se * se + (0.0 if self.calibrated else between * between)


@dataclass(frozen=True)
class Result:
    """A finished run of the study (one optuna trial): its knobs, its outcome, its hold, and whose replicate it is."""
    number: int
    values: dict
    outcome: Outcome
    hold_s: int
    state: str                          # complete (it ran), refused (by a knob rule: never ran)
    ended: str | None = None            # when it ended (UTC, ISO 8601): best-so-far against time
    replicate_of: int | None = None     # the candidate's first run, for a run again of the same values
    known: str | None = None            # the known knob set it is, where it was enqueued as one
    past: bool = False                  # a past run of the same question, found in results/ (warm.py)


@dataclass(frozen=True)
class Candidate:
    """A candidate's runs together (its first run's number): their combined ratio and interval."""
    number: int
    values: dict
    runs: tuple[Result, ...]
    between: float

    @property
    def feasible(self) -> bool:
        return all(r.outcome.feasible for r in self.runs)

    @property
    def settled(self) -> bool:
        return all(r.outcome.settled is not False for r in self.runs)

    @property
    def known(self) -> str | None:
        """The known knob set its first run was, if it was one."""
        return self.runs[0].known

    @property
    def orientations(self) -> int:
        return len({r.outcome.swapped for r in self.runs})

    def combined(self) -> tuple[float, float, float] | None:
        """(ratio, low, high) as a crossover: in each orientation the measured runs' log ratios weighted by the
        inverse of their variance, then the orientations' means averaged with equal weights, so that the twins'
        bias (one machine ahead of the other) cancels however the runs' variances differ (weighting every run by
        its variance kept the bias of the better-measured orientation); a run that broke a constraint measured one
        too: shown, never counted. None when no run measured one."""
        sides = {}
        for r in self.runs:
            if r.outcome.ratio is not None and r.outcome.low and r.outcome.high:
                sides.setdefault(r.outcome.swapped, []).append((math.log(r.outcome.ratio),
                                                                r.outcome.log_variance(self.between)))
        if not sides or any(v <= 0 for logs in sides.values() for _, v in logs):
            return None
        means = []
        for logs in sides.values():
            weights = [1 / v for _, v in logs]
            means.append((sum(w * x for w, (x, _) in zip(weights, logs, strict=True)) / sum(weights),
                          1 / sum(weights)))
        mean = sum(m for m, _ in means) / len(means)
        half = Z95 * math.sqrt(sum(v for _, v in means)) / len(means)
        return math.exp(mean), math.exp(mean - half), math.exp(mean + half)

    def improves(self, floor: float) -> bool:
        """Its gain is real: it ran in both orientations, within its constraints, at steady state, and its combined
        interval's lower bound clears 1 + the floor."""
        got = self.combined()
        return (got is not None and self.feasible and self.settled and self.orientations >= min(2, REPLICATES)
                and len(self.runs) >= REPLICATES and got[1] > 1 + floor)

    def may_improve(self, floor: float) -> bool:
        """Worth another run: feasible, settled, and its upper bound above 1 + the floor."""
        got = self.combined()
        return got is not None and self.feasible and self.settled and got[2] > 1 + floor
