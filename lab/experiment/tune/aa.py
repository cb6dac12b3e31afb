"""The between-run spread τ a tune judges by, measured (issue 86, item 2): its runs' reports widen each interval by
the A/A runs of their load that results/ holds (report/stats/between.py: the same load, service and machines), and
say the τ they used; where the first run's report found none, the tune runs an A/A block of its own (RUNS runs of
the control on both machines, at the tune's load) before its second, so that every later run is calibrated and its
τ is the measured one. Until then, and with --aa-runs 0, τ is --between's assumption, and tune.json says so.
"""
from __future__ import annotations

import dataclasses
import math

from lab.experiment import design
from lab.provision.configuration import Configuration
from runfolder import verdict as runfolder_verdict

RUNS = 2                  # an A/A block: two runs give τ a first estimate; a later tune of the load finds them
# The least τ a tune takes: a few A/A runs often show none beyond their own noise (the estimate sits at its bound of
# 0: 20261207T105842Z-racecheck-tune-aa, 2 runs on native containers), which is no proof that runs do not spread;
# the smallest spread the lab has measured between runs is about 1 % (four A/A runs at 150 users on native
# containers held ±1.2–1.5 %, 2026-12)
TAU_FLOOR = 0.01


def tau_of(verdict: runfolder_verdict.Verdict, objective: str = "tps") -> float | None:
    """The τ (log scale) a run's report widened its objective's interval by, where A/A runs calibrated it."""
    calibration = verdict.written.get("calibration") or {}
    figure = ((calibration.get("figures") or {}).get(objective) or {}) if calibration.get("applied") else {}
    tau = figure.get("tau")
    return float(tau) if isinstance(tau, (int, float)) and math.isfinite(tau) else None


def block(opts, control: str, hold_s: int, label: str, runs: int = RUNS, race=None):
    """The run options of an A/A block: the control on both machines (with the tune's own values for it), at the
    tune's load and hold, without JMeter's dashboards. race: where the tune races, each run ends once its own error is
    far below what matters (race.measuring, never on its value: it has none to judge), as the search's runs it
    calibrates do; the reports' τ takes each A/A run's own error out (report/stats/between.py), so a shorter one only
    widens what is taken out. Held whole, the block cost two whole holds (14 of a 2-hour tune's minutes on the
    stand-in, where a search run took 3)."""
    given = {c.base: dict(c.values) for c in (opts.configurations or {}).values()}
    same = Configuration(control, given.get(control) or {})
    return dataclasses.replace(opts, aa=control, configurations={side: same for side in design.CONFIGS},
                               repeat=runs, label=label, dashboards=False, race=race,
                               profile=dataclasses.replace(opts.profile, duration_s=hold_s))


ASSUMED = "assumed (--between)"


@dataclasses.dataclass
class Spread:
    """What the tune knows of τ: assumed (--between) until a calibrated run says the measured one."""
    tau: float
    source: str = ASSUMED
    block: str | None = None             # the A/A block the tune ran, where it ran one
    tried: bool = False                  # whether the tune looked at running one (it runs at most one)

    @classmethod
    def kept(cls, record: dict | None, assumed: float) -> Spread:
        """As tune.json keeps it (a resumed tune's), or the assumption."""
        if not record:
            return cls(assumed)
        return cls(record["tau"], record.get("source", ASSUMED), record.get("aa_block"), bool(record.get("tried")))

    @property
    def is_measured(self) -> bool:
        return self.source != ASSUMED

    def record(self) -> dict:
        return {"tau": self.tau, "source": self.source, "aa_block": self.block, "tried": self.tried}

    def measured(self, run: str, tau: float) -> bool:
        """A calibrated run's τ taken, at least TAU_FLOOR (True where it is the first)."""
        first = not self.is_measured
        self.tau = max(tau, TAU_FLOOR)
        self.source = (f"measured: A/A runs of the load, as run {run}'s report applied them"
                       + (f" ({tau:.1%}, taken as at least {TAU_FLOOR:.0%})" if tau < TAU_FLOOR else ""))
        return first
