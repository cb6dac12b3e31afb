"""A stand-in lab for the tuner's tests and its benchmark: each "run" of a candidate against the control returns a known
function of the knobs, measured through autocorrelated noise window by window as the lab's paired interval is, and a
region where the candidate does not start. Nothing here touches a machine.

The true ratio is 1 + gain × a bump around the optimum: each knob's distance to its best value in the range's own
scale (log for a log range, the choice's index for choices), weighted, with an interaction between the first two
knobs (as HTTPD's and the JVM's tiers interact on the machines).
"""
from __future__ import annotations

import math
import random
from dataclasses import dataclass, field

from lab.experiment.tune.search import Outcome
from lab.experiment.tune.space import Param, Space

WINDOW_S = 10                  # the paired interval's window (report/stats: one TPS value per window and machine)


def position(p: Param, value) -> float:
    """Where a value sits in its range, 0…1."""
    if p.kind == "choice":
        return p.choices.index(value) / max(1, len(p.choices) - 1)
    if p.log:
        return (math.log(value) - math.log(p.low)) / (math.log(p.high) - math.log(p.low))
    return (value - p.low) / (p.high - p.low)


@dataclass
class StandIn:
    space: Space
    optimum: dict                        # knob → its best value
    gain: float = 0.6                    # the best candidate's true ratio is 1 + gain
    width: float = 0.25                  # how far from the optimum (in the range's scale) the gain halves, about
    noise_sd: float = 0.08               # one window's relative noise
    rho: float = 0.6                     # AR(1) correlation of successive windows
    infeasible: callable = None          # values → why it does not start, or None
    seed: int = 0
    runs: list = field(default_factory=list)     # (values, hold_s) of every run, in order

    def true_ratio(self, values: dict) -> float:
        params = self.space.params
        d = [position(p, values[p.knob]) - position(p, self.optimum[p.knob]) for p in params]
        distance = sum(x * x for x in d)
        if len(d) >= 2:                  # the first two knobs interact: the best of one moves with the other
            distance += d[0] * d[1]
        return 1 + self.gain * math.exp(-max(distance, 0.0) / (2 * self.width ** 2))

    def __call__(self, values: dict, hold_s: int) -> Outcome:
        self.runs.append((dict(values), hold_s))
        why = self.infeasible(values) if self.infeasible else None
        if why:
            return Outcome(None, violations=(why,), run=f"standin-{len(self.runs)}")
        rng = random.Random(f"{self.seed}:{len(self.runs)}")
        n = max(2, hold_s // WINDOW_S)
        e, ratios = 0.0, []
        for _ in range(n):
            e = self.rho * e + math.sqrt(1 - self.rho ** 2) * rng.gauss(0, self.noise_sd)
            ratios.append(self.true_ratio(values) * (1 + e))
        mean = sum(ratios) / n
        sd = math.sqrt(sum((r - mean) ** 2 for r in ratios) / (n - 1))
        effective = max(2.0, n * (1 - self.rho) / (1 + self.rho))     # autocorrelated windows count for fewer
        half = 1.96 * sd / math.sqrt(effective)
        return Outcome(mean, mean - half, mean + half, run=f"standin-{len(self.runs)}")


@dataclass
class Runs:
    """The lab's run_trial and run_series (their signatures) over a StandIn: each run reads the candidate back from
    the run options as the machines would get it (the configuration its side runs, with the --set values), writes a
    run folder under root with a verdict.json of the stand-in's outcome, and advances clock (one value, seconds) by
    the run's length under emulation (overhead_s beside ramp-up and hold)."""
    lab: StandIn
    root: object                         # a Path: where the run folders go
    clock: list
    overhead_s: int
    interrupt_at: int | None = None      # the run whose start Ctrl-C interrupts (1-based), None: never
    ran: list = field(default_factory=list)       # (label, values) of every trial run
    series: list = field(default_factory=list)    # (the control's configuration, values) of every series

    def values(self, o, config) -> dict:
        resolved = config.knobs(o.service)
        return {k: resolved[k] for k in self.lab.space.knobs}

    def _folder(self, name: str, outcome: Outcome):
        import json
        folder = self.root / name
        folder.mkdir(parents=True)
        effects = {"tps": {"estimate": outcome.ratio, "low": outcome.low, "high": outcome.high},
                   "error_pct": {"tuned": 0.0}} if outcome.ratio is not None else {}
        (folder / "verdict.json").write_text(json.dumps({"verdict": "stand-in", "effects": effects}))
        return folder

    def validate(self, o, s) -> None:
        """The stand-in takes every candidate the space holds (the lab's validation is its own tests')."""

    def run_trial(self, o, t, s, label: str):
        if self.interrupt_at is not None and len(self.ran) + 1 == self.interrupt_at:
            raise KeyboardInterrupt
        values = self.values(o, t.configurations["tuned"])
        self.clock[0] += self.overhead_s + o.profile.ramp_up_s + o.profile.duration_s
        self.ran.append((label, values))
        return 0, self._folder(f"{label}-{len(self.ran)}", self.lab(values, o.profile.duration_s))

    def run_series(self, o, s):
        first = o.trials()[0]
        values = self.values(o, first.configurations["tuned"])
        self.clock[0] += o.repeat * (self.overhead_s + o.profile.ramp_up_s + o.profile.duration_s)
        self.series.append((first.configurations["default"].base, values))
        return 0, self._folder(f"{o.label}-series", self.lab(values, o.repeat * o.profile.duration_s))
