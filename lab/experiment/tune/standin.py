"""A stand-in lab for the tuner's tests and its benchmark: each "run" of a candidate against the control returns a known
function of the knobs, measured through autocorrelated noise window by window as the lab's paired interval is, and
regions where the candidate does not start or errs. Nothing here touches a machine.

The true ratio (standin_shape.py) is 1 + gain × a bump around the optimum: each knob's distance to its best value in
the range's own scale (log for a log range, the choice's index for choices), with an interaction between the first
two knobs, flat within `radius`; times a `cliff`'s collapse, and against the `control`'s own throughput where it is
given (the optimum's ratio is then 1 + gain exactly). That is the steady state; what a run measures may also carry
(issue 54's and issue 86's stand-ins, bench/tuner.py):
- a between-run draw (`between_sd`, on the log scale, one per run: what A/A runs of a load spread by; Student's t
  with `between_df` degrees of freedom scaled to that spread where given, heavy-tailed), which a run's own interval
  does not see;
- the JIT's warm-up (`warmup_s`): each side's throughput at t s into the measured window is 1 − depth·e^(−t/T) of its
  steady state, T the control's time constant and, for the candidate, that times `quick_warmup(values)` (C1-only
  code compiles sooner); a short hold then ranks warm-up speed, not the steady state (the 2-hour emulated tune of
  2026-11-28: every trial still warming up).
Its intervals (`stats`): "z", normal (df 10⁶ written; a series by DerSimonian–Laird and 1.96), or "lab": the
report's t intervals with their few df, calibrated and combined as the lab's are (standin_stats.py).
"""
from __future__ import annotations

import json
import math
import random
from dataclasses import dataclass, field

import numpy as np

from lab.experiment.load import settle
from lab.experiment.tune import standin_stats
from lab.experiment.tune.evidence import Outcome
from lab.experiment.tune.space import Space
from lab.experiment.tune.standin_shape import ERRORS_MAX, Cliff, bump, position  # noqa: F401 (its callers')
from report.stats.between import tau2_known_zero

SETTLED = 0.05                 # a side within this share of its steady state has settled (the report's 10 % drift rule)
WINDOW_S = 10                  # the paired interval's window (report/stats: one TPS value per window and machine)


@dataclass
class StandIn:
    space: Space
    optimum: dict                        # knob → its best value
    gain: float = 0.6                    # the best candidate's true ratio is 1 + gain
    width: float = 0.25                  # how far from the optimum (in the range's scale) the gain halves, about
    noise_sd: float = 0.08               # one window's relative noise
    rho: float = 0.6                     # AR(1) correlation of successive windows
    infeasible: callable = None          # values → why it does not start, or None
    between_sd: float = 0.0              # a run's own draw (log scale), shared by its windows
    warmup_s: float = 0.0                # the control's warm-up time constant (0: a run starts at its steady state)
    warmup_depth: float = 0.5            # how far below its steady state a side starts
    quick_warmup: callable = None        # values → the candidate's warm-up time constant ÷ the control's
    machine_bias: float = 1.0            # machine tuned's throughput ÷ machine default's, configuration aside
    seed: int = 0
    relevant: frozenset | None = None    # the knobs the outcome depends on (None: all); the others change nothing
    radius: float = 0.0                  # the flat top: within it of the optimum, a candidate is as good
    control: dict | None = None          # the control's values: a ratio is against its throughput (None: against 1)
    cliff: Cliff | None = None           # where the throughput collapses, and above it requests err
    between_df: float = 0.0              # the between-run draw's Student t df (0: normal)
    window_df: float = 0.0               # the windows' innovations' Student t df (0: normal)
    stats: str = "z"                     # a run's interval: "z" (normal), "lab" (the report's t, standin_stats)
    runs: list = field(default_factory=list)     # (values, hold_s) of every run, in order
    dfs: dict = field(default_factory=dict)      # a run's name → its interval's degrees of freedom ("lab")

    def params(self) -> list:
        return [p for p in self.space.params if self.relevant is None or p.knob in self.relevant]

    def throughput(self, values: dict, amplitude: float) -> float:
        """Its steady throughput ÷ a reference's: the bump's and the cliff's."""
        cut = self.cliff.factor(self.space_param(self.cliff.knob), values) if self.cliff else 1.0
        return (1 + amplitude * bump(self.params(), values, self.optimum, self.width, self.radius)) * cut

    def true_ratio(self, values: dict) -> float:
        """Its steady-state throughput ÷ the control's, the optimum's 1 + gain; where no control is given, 1 + gain ×
        the bump (times the cliff's share)."""
        if self.control is None:
            return self.throughput(values, self.gain)
        # the amplitude for which optimum ÷ control is 1 + gain, whatever the bump and cliff leave the control
        top, c = self.throughput(self.optimum, 0.0), self.throughput(self.control, 0.0)
        b = bump(self.params(), self.control, self.optimum, self.width, self.radius)
        amplitude = ((1 + self.gain) * c - top) / (top - (1 + self.gain) * c * b)
        return self.throughput(values, amplitude) / self.throughput(self.control, amplitude)

    def space_param(self, knob: str):
        return next(p for p in self.space.params if p.knob == knob)

    def errors_pct(self, values: dict) -> float:
        return self.cliff.errors_pct(self.space_param(self.cliff.knob), values) if self.cliff else 0.0

    def draw(self, rng: random.Random, sd: float, df: float) -> float:
        """A normal draw of sd, or Student's t with df degrees of freedom scaled to sd."""
        if not df:
            return rng.gauss(0, sd)
        return rng.gauss(0, 1) / math.sqrt(2 * rng.gammavariate(df / 2, 1) / df) * sd * math.sqrt((df - 2) / df)

    def __call__(self, values: dict, hold_s: int, swapped: bool = False, aa: bool = False, race=None) -> Outcome:
        """One run of the candidate against the control; aa: an A/A run (the control on both machines); race: the
        run's race (tune/race.py), which may end its hold early as the load does (self.held_s: how long it held)."""
        self.runs.append((dict(values), hold_s))
        self.held_s, self.ended = hold_s, None
        name = f"standin-{len(self.runs)}"
        why = self.infeasible(values) if self.infeasible and not aa else None
        if why:
            return Outcome(None, violations=(why,), run=name, swapped=swapped)
        errors = 0.0 if aa else self.errors_pct(values)
        broke = (f"errors<={ERRORS_MAX:g}%: {errors:.2f} % of the candidate's requests failed",) \
            if errors > ERRORS_MAX else ()
        rng = random.Random(f"{self.seed}:{len(self.runs)}")
        n = max(2, hold_s // WINDOW_S)
        settled_s = None if aa else self.settled_s(values)
        # the report's rule: steady with at least a minute and a third of the run left (report/stats/steady.py)
        settled = settled_s is None or hold_s - settled_s >= max(60.0, hold_s / 3)
        first = 0 if settled_s is None or not settled else int(settled_s // WINDOW_S)
        drawn = math.exp(self.draw(rng, self.between_sd, self.between_df)) if self.between_sd else 1.0
        drawn *= 1 / self.machine_bias if swapped else self.machine_bias     # the candidate on the other machine
        e, ratios = 0.0, []
        for i in range(n):
            e = self.rho * e + math.sqrt(1 - self.rho ** 2) * self.draw(rng, self.noise_sd, self.window_df)
            true = 1.0 if aa else self.true_ratio(values) * self.warming(values, (i + 0.5) * WINDOW_S)
            ratios.append(true * drawn * max(0.05, 1 + e))
        if race is not None and settled:        # looked at as the load looks, once its steady state is long enough
            every = max(1, round(settle.EVERY_S / WINDOW_S))
            for i in range(int(math.ceil(((settled_s or 0.0) + race.steady_s) / WINDOW_S)), n, every):
                shown = ratios[first:i] if not swapped else [1 / r for r in ratios[first:i]]    # tuned ÷ default
                self.ended = race.decided(shown)
                if self.ended:
                    ratios, self.held_s, hold_s = ratios[:i], i * WINDOW_S, i * WINDOW_S
                    break
        ratios = ratios[first:]
        n = len(ratios)
        mean = sum(ratios) / n
        sd = math.sqrt(sum((r - mean) ** 2 for r in ratios) / (n - 1))
        effective = max(2.0, n * (1 - self.rho) / (1 + self.rho))     # autocorrelated windows count for fewer
        if self.stats == "lab":     # the report's: t with its independent blocks less one, on the log scale
            df = max(1, int(effective) - 1)
            got = standin_stats.run(mean, sd / mean / math.sqrt(effective), df)
            low, high = got.low, got.high
            self.dfs[name] = df
        else:
            half = 1.96 * sd / math.sqrt(effective)
            low, high = mean - half, mean + half
        return Outcome(mean, low, high, broke, run=name,
                       settled=None if settled_s is None else settled,
                       steady_from_s=None if settled_s is None or not settled else first * WINDOW_S, swapped=swapped)

    def settled_s(self, values: dict) -> float | None:
        """When the later side's warm-up is within 5 % of its steady state (None: no warm-up modelled)."""
        if not self.warmup_s or self.warmup_depth <= SETTLED:
            return None
        share = self.quick_warmup(values) if self.quick_warmup else 1.0
        return self.warmup_s * max(1.0, share) * math.log(self.warmup_depth / SETTLED)

    def warming(self, values: dict, t: float) -> float:
        """The candidate's throughput ÷ the control's at t s into the window, from their warm-ups alone."""
        if not self.warmup_s:
            return 1.0
        share = self.quick_warmup(values) if self.quick_warmup else 1.0
        control = 1 - self.warmup_depth * math.exp(-t / self.warmup_s)
        return (1 - self.warmup_depth * math.exp(-t / (self.warmup_s * share))) / control


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
    blocks: dict = field(default_factory=dict)    # a series folder's name → its runs (combine)
    aa: list = field(default_factory=list)        # the A/A runs of the load: once there are, every run is calibrated

    def values(self, o, config) -> dict:
        resolved = config.knobs(o.service)
        return {k: resolved[k] for k in self.lab.space.knobs}

    @property
    def honest(self) -> bool:
        return self.lab.stats == "lab"

    def interval(self, r: Outcome) -> standin_stats.Interval:
        """A run's own interval as the report wrote it, with its df."""
        return standin_stats.Interval(r.ratio, r.low, r.high, self.lab.dfs[r.run])

    def tau(self) -> float | None:
        """The between-run spread the A/A runs so far show, as the report's calibration takes it (between.py
        tau2_known_zero: the twins' bias counted in), None before any."""
        if not self.aa:
            return None
        if self.honest:
            return math.sqrt(standin_stats.calibration([self.interval(r) for r in self.aa]).tau2)
        d = np.array([math.log(r.ratio) for r in self.aa])
        se = np.array([max((math.log(r.high) - math.log(r.low)) / (2 * 1.96), 1e-6) for r in self.aa])
        return math.sqrt(tau2_known_zero(d, se))

    def _folder(self, name: str, outcome: Outcome, aa: bool = False, got: standin_stats.Interval | None = None):
        """The run's (or series', got: its combined interval) folder with its verdict.json; the constraints it
        broke in `standin.violations` (judge())."""
        folder = self.root / name
        folder.mkdir(parents=True)
        tau = None if aa else self.tau()
        estimate, low, high, df = outcome.ratio, outcome.low, outcome.high, 1e6
        said = "within-run" if tau is None else "calibrated (the stand-in's A/A runs)"
        if got is not None:
            estimate, low, high, df, said = got.estimate, got.low, got.high, got.df, got.said
        elif self.honest and outcome.ratio is not None:         # one run, as the report widens it
            got = self.interval(outcome)
            got = got if aa else standin_stats.calibrated(got, standin_stats.calibration(
                [self.interval(r) for r in self.aa]))
            low, high, df, said = got.low, got.high, got.df, got.said
        elif tau is not None and outcome.ratio is not None:      # calibrated: τ₀ beside its own error, as the report
            se = (math.log(high) - math.log(low)) / (2 * 1.96)
            half = 1.96 * math.sqrt(se * se + tau * tau)
            low, high = outcome.ratio * math.exp(-half), outcome.ratio * math.exp(half)
        # stats "z": the intervals are normal, a t with 10⁶ degrees of freedom (confirmations re-level them)
        effects = {"tps": {"estimate": estimate, "low": low, "high": high, "df": df, "intervals": said},
                   "error_pct": {"tuned": 0.0}} if outcome.ratio is not None else {}
        steady = {} if outcome.settled is None else {      # as the report writes it: each machine's
            side: {"settled": outcome.settled, "start_s": outcome.steady_from_s} for side in ("default", "tuned")}
        calibration = {"applied": tau is not None, "figures": {"tps": {"tau": tau}}}
        sentence = "stand-in" if outcome.ratio is not None else "; ".join(outcome.violations) or "stand-in"
        (folder / "verdict.json").write_text(json.dumps({"verdict": sentence, "effects": effects,
                                                         "steady": steady, "calibration": calibration,
                                                         "design": {"kind": "aa" if aa else "ab"},
                                                         "standin": {"violations": list(outcome.violations)}}))
        return folder

    @staticmethod
    def judge(run_dir) -> tuple[str, ...]:
        """The constraints a run broke, as its verdict.json says (the tune's judge on the stand-in)."""
        violations = json.loads((run_dir / "verdict.json").read_text()).get("standin", {}).get("violations")
        return tuple(violations or ())

    def validate(self, o, s) -> None:
        """The stand-in takes every candidate the space holds (the lab's validation is its own tests')."""

    def report_later(self, folder) -> None:
        """The stand-in's runs write their verdict.json as they end: no report is left for later."""

    def run_trial(self, o, t, s, label: str, before_start=None):
        if self.interrupt_at is not None and len(self.ran) + 1 == self.interrupt_at:
            raise KeyboardInterrupt
        if before_start is not None:        # the lab's equal start comes after its provisioning
            before_start()
        values = self.values(o, t.configurations["tuned"])
        self.ran.append((label, values))
        folder = self._folder(f"{label}-{len(self.ran)}", self.timed(o, values, t.swapped))
        if o.race is not None:      # what the tune reads of a raced run's record (race.ended)
            (folder / "run.json").write_text(json.dumps({"load": {"race": {"said": o.race.said(),
                                                                           "ended": self.lab.ended}}}))
        return 0, folder

    def run_series(self, o, s):
        """o.repeat runs of the candidate, the machines swapped on every second, each with its own draw, combined as
        the lab's series are: stats "lab", as report/stats/combine.py (standin_stats.series); "z", on the log scale
        by inverse variance with DerSimonian–Laird's τ² where there are more runs than orientations."""
        first = o.trials()[0]
        if o.aa is not None:            # an A/A block: the control on both machines
            runs = [self.timed(o, {}, False, aa=True) for _ in o.trials()]
            self.aa += runs
            return 0, self._folder(f"{o.label}-series", combined(runs), aa=True, got=self.combined(
                [(r, False) for r in runs], aa=True))
        values = self.values(o, first.configurations["tuned"])
        self.series.append((first.configurations["default"].base, values))
        runs = [self.timed(o, values, t.swapped) for t in o.trials()]
        self.blocks[f"{o.label}-series"] = runs
        return 0, self._folder(f"{o.label}-series", combined(runs), got=self.combined([(r, r.swapped) for r in runs]))

    def timed(self, o, values: dict, swapped: bool, aa: bool = False) -> Outcome:
        """One run (raced where its options say), the clock advanced by its length."""
        outcome = self.lab(values, o.profile.duration_s, swapped, aa=aa, race=o.race)
        self.clock[0] += self.overhead_s + o.profile.ramp_up_s + self.lab.held_s
        return outcome

    def combine(self, label: str, series: list):
        """The runs of several series as one (a confirmation's later look)."""
        self.clock[0] += 60
        runs = [r for s in series for r in self.blocks[s.name]]
        return self._folder(label, combined(runs), got=self.combined([(r, r.swapped) for r in runs]))

    def combined(self, runs: list[tuple[Outcome, bool]], aa: bool = False) -> standin_stats.Interval | None:
        """Stats "lab": the series' interval as the report combines it (its own τ², pooled with the A/A runs'), None
        where one run did not measure (or stats "z")."""
        if not self.honest or any(r.ratio is None for r, _ in runs):
            return None
        cal = None if aa else standin_stats.calibration([self.interval(r) for r in self.aa])
        return standin_stats.series([(self.interval(r), swapped) for r, swapped in runs], cal)


def combined(runs: list[Outcome]) -> Outcome:
    """Runs of one candidate as one outcome: their log ratios weighted by the inverse of their within-run variance
    plus DerSimonian–Laird's τ² from their spread (with more than two runs); the first that did not run, when one
    did not."""
    if any(not r.feasible for r in runs):
        return next(r for r in runs if not r.feasible)
    x = [math.log(r.ratio) for r in runs]
    v = [max(((math.log(r.high) - math.log(r.low)) / (2 * 1.96)) ** 2, 1e-12) for r in runs]
    tau2 = 0.0
    if len(runs) > 2:
        w = [1 / vi for vi in v]
        mean = sum(wi * xi for wi, xi in zip(w, x, strict=False)) / sum(w)
        q = sum(wi * (xi - mean) ** 2 for wi, xi in zip(w, x, strict=False))
        tau2 = max(0.0, (q - (len(runs) - 1)) / (sum(w) - sum(wi * wi for wi in w) / sum(w)))
    w = [1 / (vi + tau2) for vi in v]
    mean = sum(wi * xi for wi, xi in zip(w, x, strict=False)) / sum(w)
    half = 1.96 / math.sqrt(sum(w))
    return Outcome(math.exp(mean), math.exp(mean - half), math.exp(mean + half), run=runs[-1].run)
