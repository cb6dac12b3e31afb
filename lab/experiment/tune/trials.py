"""A tune's trial on the lab: the candidate (the catalog, the tune's --set values and the candidate's knob values) on
the tuned side, the control (the out-of-the-box configuration, or a named knob set) on the default side, an ordinary
A/B run (its own run folder, report and verdict.json) at the hold the search asks for; its verdict read
back as the tuner's Outcome (the objective: the paired successful-TPS ratio, or the p99 ratio turned so that higher
is better), with the constraints it broke. The ratio is the steady state's: where both machines settled later than
the run's warm-up, the trial's report is rendered again from there (`report run --warmup auto`); where one never
settled within the hold, the outcome says so and its gain does not count (evidence.Outcome.settled).

The constraints are constraints, never penalties: gates (`--constraint`, as `--gate` reads them: report/history/
gates.py) judged on each trial's verdict, by default the candidate's errors at most 0.1 % (its level); a candidate
that failed to start, stopped answering or left no verdict is infeasible with why. The knob rules (types, ranges,
the rules between knobs, the memory estimate) are checked before a trial starts (`rules()`: the lab's own
validation), never by a failed provisioning.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path

from lab.experiment import design, reporting
from lab.experiment.options import Options
from lab.experiment.tune import aa
from lab.experiment.tune.evidence import Outcome
from lab.experiment.tune.space import Space
from lab.provision import catalog, knob_sets
from lab.provision.configuration import Configuration, same
from runfolder import verdict as runfolder_verdict

CONSTRAINTS = ("errors<=0.1%",)          # the default: a candidate that fails requests is not an improvement
KNOWN = ("default", "tuned", "article-2018")     # the sets a tune starts from, beside those --known names
# What a run's ratio spreads by between runs of one load where no A/A runs of it calibrate the verdict (log scale):
# issue 54's review took 5 %; the lab's own A/A series at 150 users on containers agreed within 4 %
# (20261128T191144Z-s50-aa150-ct-series). --between changes it; a calibrated verdict brings its own.
BETWEEN = 0.05
OBJECTIVES = ("tps", "p99")
CONTROL, SIDE = design.CONFIGS            # the sides: the control's, the candidate's


def candidate_config(control: str) -> str:
    """The configuration the candidate's side runs, made into the candidate by --set values: any other than the
    control's (a --set names a configuration, and the two sides must run different ones)."""
    return SIDE if control != SIDE else CONTROL


def candidate(values: dict, control: str, service, given: dict | None = None, base: str = knob_sets.DEFAULT
              ) -> Configuration:
    """The candidate as the configuration its side runs: the base set (the catalog unless --base) with the
    candidate's values on top, whatever the side's own set changes beyond that put back (a candidate from the catalog
    never inherits the tuned set's min-spare threads); given: the tune's own values for that side's set (its --set).
    ValueError when the service cannot take a value."""
    config = candidate_config(control)
    wanted = Configuration(base, values).knobs(service)
    own = Configuration(config).knobs(service)
    return Configuration(config, given or {}).given({knob: value for knob, value in wanted.items()
                                                     if not same(own.get(knob), value)})


def options(opts: Options, values: dict, hold_s: int, label: str, control: str = knob_sets.DEFAULT,
            repeat: int = 1, base: str = knob_sets.DEFAULT) -> Options:
    """The run options of one trial: the tune's, the control on the default side, the candidate on the tuned side,
    the hold asked for (repeat > 1: the crossover of a confirmation). The tune's own --set values stay with the
    configuration they were given for."""
    given = {c.base: dict(c.values) for c in opts.configurations.values()}
    configured = {CONTROL: Configuration(control, given.get(control) or {}),
                  SIDE: candidate(values, control, opts.service, given.get(candidate_config(control)), base)}
    return dataclasses.replace(opts, configurations=configured, label=label, repeat=repeat,
                               profile=dataclasses.replace(opts.profile, duration_s=hold_s))


def known_sets(tune_space: Space, names: list[str], base: str, service=None, control: str | None = None
               ) -> dict[str, dict]:
    """Each named knob set as a first candidate: its values of the space's knobs, where the space holds them (an
    unset knob whose meaning is a number in its range, e.g. the backend pool's '200', as that number; a value outside
    a range is left to the sampler); a set the lab does not have is left out, and so is one that changes nothing the
    space searches from the base when the base is the control (it would be an A/A run)."""
    specs = catalog.specs()
    out, base_values = {}, Configuration(base).knobs(service)
    for name in names:
        if name not in knob_sets.names():
            continue
        values = Configuration(name).knobs(service)
        fits = {}
        for p in tune_space.params:         # in the space's order: a bound's knobs are known before it
            value = as_searched(p, values.get(p.knob), specs.get(p.knob) or {})
            # a knob bounded by one the set does not hold is left to the sampler too (a fixed 150 workers beside a
            # drawn ServerLimit of 2 was refused: s70-catalog-vs-tuned-tune's first run)
            if p.searched(fits) and p.needs <= fits.keys() and p.contains(value, fits):
                fits[p.knob] = value
        if (control or base) != base or any(
                not same(as_searched(p, base_values.get(p.knob), specs.get(p.knob) or {}), fits[p.knob])
                for p in tune_space.params if p.knob in fits):
            out[name] = fits
    return out


def refuses(opts: Options, control: str = knob_sets.DEFAULT, base: str = knob_sets.DEFAULT
            ) -> Callable[[str, object], str | None]:
    """(knob, value) → why the tune's service cannot take the value as a candidate's (the lab's own resolution,
    Configuration.given), None where it can: what Space.fitted leaves out of a space for a service."""
    given = {c.base: dict(c.values) for c in opts.configurations.values()}

    def why(knob: str, value) -> str | None:
        try:
            candidate({knob: value}, control, opts.service, given.get(candidate_config(control)), base)
        except ValueError as refused:
            return " ".join(str(refused).split())
        return None
    return why


def as_searched(p, value, spec: dict):
    """A knob's value as its range holds it: an unset (null) knob as the range's own `unset` where it says one (the
    meaning depends on another knob the space pins: ServerLimit's 16 under event/worker), else, where its `unset`
    meaning is a plain number, as that number when the range is numeric and does not list null itself."""
    if value is None and p.unset is not None:
        return p.unset
    unset = str(spec.get("unset", ""))
    if value is None and p.kind != "choice" and unset.strip().lstrip("-").isdigit():
        return int(unset)
    return value


def objective_of(effects: dict, objective: str) -> tuple[float | None, float | None, float | None]:
    """(ratio, low, high), higher better: successful TPS candidate ÷ control, or p99 control ÷ candidate."""
    e = effects.get(objective) or {}
    est, low, high = e.get("estimate"), e.get("low"), e.get("high")
    if objective == "tps" or est is None:
        return est, low, high
    return 1 / est, (1 / high if high else None), (1 / low if low else None)


def outcome(run_dir: Path, exit_code: int, objective: str = "tps",
            judge: Callable[[Path], tuple[str, ...]] = lambda folder: (), swapped: bool = False) -> Outcome:
    """The trial's verdict.json as the tuner's Outcome; judge: run folder → the constraints it broke."""
    name = run_dir.name
    verdict = runfolder_verdict.read(run_dir)
    if verdict is None:
        return Outcome(None, violations=(f"no verdict (exit {exit_code}): see {name}",), run=name, swapped=swapped)
    ratio, low, high = objective_of(verdict.effects, objective)
    if exit_code != 0 or ratio is None:
        why = verdict.sentence or f"exit {exit_code}"
        return Outcome(None, violations=(f"no paired {objective} ratio: {why}",), run=name, swapped=swapped)
    settled, steady_from_s = steady_state(verdict)
    said = str((verdict.effects.get(objective) or {}).get("intervals") or "within-run")
    df = (verdict.effects.get(objective) or {}).get("df")
    return Outcome(ratio, low, high, tuple(judge(run_dir)), name, settled, steady_from_s, swapped,
                   calibrated=not said.startswith("within-run"),
                   df=float(df) if isinstance(df, (int, float)) and not isinstance(df, bool) else None,
                   tau=aa.tau_of(verdict, objective))


def steady_state(verdict: runfolder_verdict.Verdict) -> tuple[bool | None, float | None]:
    """(both machines settled, from when: the later one's start, s from its first sample); (None, None) when the
    verdict judged no steady state."""
    judged = [m for m in _steady(verdict) if isinstance(m.get("settled"), bool)]
    if len(judged) < len(design.CONFIGS):
        return None, None
    if not all(m["settled"] for m in judged):
        return False, None
    starts = [m.get("start_s") for m in judged]
    return True, max(starts) if all(isinstance(x, (int, float)) for x in starts) else None


def still_compiling(verdict: runfolder_verdict.Verdict) -> bool:
    """Either machine's JIT compiled through the measured window (verdict.json format 5: steady.<machine>
    .still_compiling): its throughput may have settled while it still pays for its compiler."""
    return any(m.get("still_compiling") is True for m in _steady(verdict))


def _steady(verdict: runfolder_verdict.Verdict) -> list[dict]:
    """Each machine's steady record of verdict.json (none where it wrote no such dict)."""
    steady = verdict.written.get("steady")
    return [m for m in steady.values() if isinstance(m, dict)] if isinstance(steady, dict) else []


def at_steady_state(run_dir: Path, warmup_s: float, log=print) -> None:
    """The trial's report again from where both machines settled, when that is later than the warm-up it
    excluded (report run --warmup auto): the tuner's ratio is then the steady state's. Not where the report cut there
    already (verdict.json method.warmup_s: a load --until-settled ended is reported from its steady state)."""
    verdict = runfolder_verdict.read(run_dir)
    settled, steady_from_s = steady_state(verdict) if verdict else (None, None)
    cut = (verdict.written.get("method") or {}).get("warmup_s") if verdict else None
    cut = cut if isinstance(cut, (int, float)) else warmup_s
    if settled and steady_from_s is not None and steady_from_s > cut:
        reporting.report_command("run", run_dir, "--warmup", "auto", log=log, what="steady-state report")


def gate_judge(constraints: tuple[str, ...]) -> Callable[[Path], tuple[str, ...]]:
    """run folder → the constraints it broke, each with what it read (`report gate`: gates.xml in the folder)."""
    def judge(run_dir: Path) -> tuple[str, ...]:
        return tuple(reporting.broken_gates(run_dir, constraints)) if constraints else ()
    return judge


@dataclasses.dataclass(frozen=True)
class Made:
    """A run made on the machines, its outcome not read yet."""
    run_dir: Path
    code: int                           # run_trial's exit code
    warmup_s: float                     # the warm-up its options excluded
    swapped: bool
    reported: bool                      # its report was written with it (False: Evaluator.judged writes it)


class Evaluator:
    """(values, hold_s, swapped) → Outcome: one A/B run of the candidate by run_trial (trial.run_trial), in the
    tune's series (done: its runs so far, a resumed tune's), the machines' roles swapped when asked. Or in two halves,
    so that a run's report is made while the next run is prepared (tune/overlap.py): `run` makes the run up to its
    collection, before_start called where its machines are provisioned and about to start (the previous run's
    outcome is told there), and `judged` writes its report (report_later: the lab's) and reads its outcome."""

    def __init__(self, opts, s, run_trial, series: str, objective: str = "tps",
                 judge: Callable[[Path], tuple[str, ...]] = lambda folder: (),
                 on_run: Callable[[Path], None] = lambda folder: None, done: int = 0,
                 control: str = knob_sets.DEFAULT, base: str = knob_sets.DEFAULT,
                 report_later: Callable[[Path], None] = lambda folder: None,
                 race: Callable[[bool], object] | None = None) -> None:
        """race: (roles swapped) → what the run races against (tune/race.py), None: every hold whole."""
        self.opts, self.s, self.run_trial, self.series, self.objective = opts, s, run_trial, series, objective
        self.judge, self.on_run, self.count, self.control, self.base = judge, on_run, done, control, base
        self.report_later, self.race = report_later, race

    def run(self, values: dict, hold_s: int, swapped: bool = False,
            before_start: Callable[[], None] | None = None) -> Made:
        self.count += 1
        # a search run is read for its verdict: JMeter's dashboards wait for whoever opens it (report --dashboards),
        # and with before_start its report is written by judged, beside the next run's provisioning
        o = dataclasses.replace(options(self.opts, values, hold_s, f"{self.series.split('-', 1)[-1]}-t{self.count}",
                                        self.control, base=self.base), dashboards=False, report=before_start is None,
                                race=self.race(swapped) if self.race else None)
        crossover = o.trials(series=self.series, repeat=2)[1 if swapped else 0]     # [1]: the machines' roles swapped
        later = {} if before_start is None else {"before_start": before_start}
        code, run_dir = self.run_trial(o, dataclasses.replace(crossover, number=None, of=None), self.s, o.label,
                                       **later)
        self.on_run(run_dir)
        if code == 130:
            raise KeyboardInterrupt
        return Made(run_dir, code, o.effective_warmup_s, swapped, reported=o.report)

    def judged(self, made: Made) -> Outcome:
        if not made.reported:
            self.report_later(made.run_dir)
        if made.code == 0:
            at_steady_state(made.run_dir, made.warmup_s, log=lambda line: None)
        return outcome(made.run_dir, made.code, self.objective, self.judge, made.swapped)

    def __call__(self, values: dict, hold_s: int, swapped: bool = False) -> Outcome:
        return self.judged(self.run(values, hold_s, swapped))


def rules(opts, s, validate, control: str = knob_sets.DEFAULT, base: str = knob_sets.DEFAULT
          ) -> Callable[[dict], str | None]:
    """values → why the lab's validation refuses them (validate: run.validate), None when it takes them."""
    def check(values: dict) -> str | None:
        try:
            validate(options(opts, values, opts.profile.duration_s, "check", control, base=base), s)
        except ValueError as refused:
            return str(refused)
        return None
    return check
