"""A tune's trial on the lab: the candidate (the catalog, the tune's --set values and the candidate's knob values) on
the tuned side, the control (the out-of-the-box configuration, or a named knob set) on the default side, an ordinary
A/B run (its own run folder, report and verdict.json) at the hold the search asks for; its verdict read
back as the tuner's Outcome (the objective: the paired successful-TPS ratio, or the p99 ratio turned so that higher
is better), with the constraints it broke.

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
from lab.experiment.tune.search import Outcome
from lab.provision import knob_sets
from lab.provision.configuration import Configuration, same
from runfolder import verdict as runfolder_verdict

CONSTRAINTS = ("errors<=0.1%",)          # the default: a candidate that fails requests is not an improvement
OBJECTIVES = ("tps", "p99")
CONTROL, SIDE = design.CONFIGS            # the sides: the control's, the candidate's


def candidate_config(control: str) -> str:
    """The configuration the candidate's side runs, made into the candidate by --set values: any other than the
    control's (a --set names a configuration, and the two sides must run different ones)."""
    return SIDE if control != SIDE else CONTROL


def candidate(values: dict, control: str, service, given: dict | None = None) -> Configuration:
    """The candidate as the configuration its side runs: that configuration's knob set with the candidate's values
    given on top, and whatever the set changes from the catalog put back (a candidate is the catalog and its values:
    it never inherits the tuned set's min-spare threads); given: the tune's own values for that set (its --set).
    ValueError when the service cannot take a value."""
    config = candidate_config(control)
    wanted = Configuration(knob_sets.DEFAULT, values).knobs(service)
    own = Configuration(config).knobs(service)
    return Configuration(config, given or {}).given({knob: value for knob, value in wanted.items()
                                                     if not same(own.get(knob), value)})


def options(opts: Options, values: dict, hold_s: int, label: str, control: str = knob_sets.DEFAULT,
            repeat: int = 1) -> Options:
    """The run options of one trial: the tune's, the control on the default side, the candidate on the tuned side,
    the hold asked for (repeat 2: the crossover of a confirmation). The tune's own --set values stay with the
    configuration they were given for."""
    given = {c.base: dict(c.values) for c in opts.configurations.values()}
    configured = {CONTROL: Configuration(control, given.get(control) or {}),
                  SIDE: candidate(values, control, opts.service, given.get(candidate_config(control)))}
    return dataclasses.replace(opts, configurations=configured, label=label, repeat=repeat,
                               profile=dataclasses.replace(opts.profile, duration_s=hold_s))


def objective_of(effects: dict, objective: str) -> tuple[float | None, float | None, float | None]:
    """(ratio, low, high), higher better: successful TPS candidate ÷ control, or p99 control ÷ candidate."""
    e = effects.get(objective) or {}
    est, low, high = e.get("estimate"), e.get("low"), e.get("high")
    if objective == "tps" or est is None:
        return est, low, high
    return 1 / est, (1 / high if high else None), (1 / low if low else None)


def outcome(run_dir: Path, exit_code: int, objective: str = "tps",
            judge: Callable[[Path], tuple[str, ...]] = lambda folder: ()) -> Outcome:
    """The trial's verdict.json as the tuner's Outcome; judge: run folder → the constraints it broke."""
    name = run_dir.name
    verdict = runfolder_verdict.read(run_dir)
    if verdict is None:
        return Outcome(None, violations=(f"no verdict (exit {exit_code}): see {name}",), run=name)
    ratio, low, high = objective_of(verdict.effects, objective)
    if exit_code != 0 or ratio is None:
        why = verdict.sentence or f"exit {exit_code}"
        return Outcome(None, violations=(f"no paired {objective} ratio: {why}",), run=name)
    return Outcome(ratio, low, high, tuple(judge(run_dir)), name)


def gate_judge(constraints: tuple[str, ...]) -> Callable[[Path], tuple[str, ...]]:
    """run folder → the constraints it broke, each with what it read (`report gate`: gates.xml in the folder)."""
    def judge(run_dir: Path) -> tuple[str, ...]:
        return tuple(reporting.broken_gates(run_dir, constraints)) if constraints else ()
    return judge


def evaluator(opts, s, run_trial, series: str, objective: str = "tps",
              judge: Callable[[Path], tuple[str, ...]] = lambda folder: (),
              on_run: Callable[[Path], None] = lambda folder: None, done: int = 0, control: str = knob_sets.DEFAULT):
    """(values, hold_s) → Outcome: one A/B run of the candidate by run_trial (trial.run_trial), in the tune's series
    (done: its runs so far, a resumed tune's)."""
    count = [done]

    def evaluate(values: dict, hold_s: int) -> Outcome:
        count[0] += 1
        o = options(opts, values, hold_s, f"{series.split('-', 1)[-1]}-t{count[0]}", control)
        code, run_dir = run_trial(o, o.trials(series=series, repeat=1)[0], s, o.label)
        on_run(run_dir)
        if code == 130:
            raise KeyboardInterrupt
        return outcome(run_dir, code, objective, judge)
    return evaluate


def rules(opts, s, validate, control: str = knob_sets.DEFAULT) -> Callable[[dict], str | None]:
    """values → why the lab's validation refuses them (validate: run.validate), None when it takes them."""
    def check(values: dict) -> str | None:
        try:
            validate(options(opts, values, opts.profile.duration_s, "check", control), s)
        except ValueError as refused:
            return str(refused)
        return None
    return check
