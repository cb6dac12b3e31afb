"""The search, made for noisy, expensive trials: optuna's TPE (multivariate, constraint-aware: a candidate that breaks a
constraint or does not start is infeasible, never a penalised value), successive halving over trial lengths (optuna's
SuccessiveHalvingPruner: every candidate runs the shortest hold; the best third of those at each length go on to the
next), the study in SQLite (optuna's RDBStorage) in the tune folder, so that an interrupted tune keeps every finished
trial and goes on where it stopped. No home-made optimiser: this module only says what a trial is and when a gain
counts.

A gain counts as an improvement only where its whole interval clears the noise floor: the candidate's paired ratio
to the control has its lower bound above 1 + floor (the floor: what an A/A of this load spreads by between runs).
"""
from __future__ import annotations

import dataclasses
import json
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC

import optuna
import sqlalchemy.exc

from lab.errors import LabError
from lab.experiment.tune.space import Space

REDUCTION = 3                 # successive halving: a third of each length's trials go on to the next
# candidates that must end a hold before any goes on from it: without, optuna's asynchronous halving promotes the
# first candidate at each hold whatever its ratio (it has no competitor yet): 20261128T084303Z-s48-tune's first
# candidate (trial 5), 0.985× at 60 s, then spent 8 more minutes at 180 s
BOOTSTRAP = REDUCTION - 1
STARTUP = 5                   # TPE's random candidates before it models: trials cost minutes each, not seconds
OPEN_ATTEMPTS = 5             # a shared storage opened while another worker makes its tables
MAX_REFUSED = 200             # proposals in a row the knob rules refuse before the space is called unsearchable
optuna.logging.set_verbosity(optuna.logging.WARNING)


class TuneError(LabError):
    """The tune cannot go on; the message says why."""


@dataclass(frozen=True)
class Outcome:
    """One run of a candidate against the control, as the tuner sees it."""
    ratio: float | None                 # candidate ÷ control, successful TPS (paired); None: it did not run
    low: float | None = None            # the ratio's 95 % interval
    high: float | None = None
    violations: tuple[str, ...] = ()    # the constraints it broke, or why it did not start or stopped answering
    run: str = ""                       # its run folder

    @property
    def feasible(self) -> bool:
        return self.ratio is not None and not self.violations


@dataclass(frozen=True)
class Result:
    """A finished trial of the study: its knobs, its last outcome and the longest hold it reached."""
    number: int
    values: dict
    outcome: Outcome
    hold_s: int
    state: str                          # complete, pruned (stopped at a shorter hold), refused (by a knob rule)
    ended: str | None = None            # when it ended (UTC, ISO 8601): best-so-far against time

    def improves(self, floor: float) -> bool:
        """Its gain is real: feasible, and its interval's lower bound above 1 + the noise floor."""
        o = self.outcome
        return o.feasible and o.low is not None and o.low > 1 + floor


Evaluate = Callable[[dict, int], Outcome]        # (knob values, hold in s) → the outcome of one A/B run


class Tuner:
    """One study: `step(evaluate)` proposes a candidate the knob rules accept and runs it, hold by hold."""

    def __init__(self, space: Space, storage: str, name: str, holds_s: tuple[int, ...], floor: float,
                 rules: Callable[[dict], str | None] | None = None, sampler: optuna.samplers.BaseSampler | None = None,
                 seed: int | None = None, question: dict | None = None) -> None:
        if not holds_s or list(holds_s) != sorted(set(holds_s)):
            raise TuneError(f"holds {holds_s}: one or more, shortest first")
        self.space, self.holds_s, self.floor, self.rules = space, tuple(holds_s), floor, rules
        self.question = dict(question or {})
        for attempt in range(OPEN_ATTEMPTS):      # workers starting together race to make the storage's tables
            try:
                self.study = optuna.create_study(
                    storage=storage, study_name=name, load_if_exists=True, direction="maximize",
                    sampler=sampler or optuna.samplers.TPESampler(seed=seed, n_startup_trials=STARTUP),
                    pruner=optuna.pruners.SuccessiveHalvingPruner(min_resource=1, reduction_factor=REDUCTION,
                                                                  bootstrap_count=BOOTSTRAP))
                break
            except (sqlalchemy.exc.IntegrityError, sqlalchemy.exc.OperationalError):
                if attempt == OPEN_ATTEMPTS - 1:
                    raise
                time.sleep(0.5 * (attempt + 1))
        self._check_same_question()

    def _check_same_question(self) -> None:
        """A resumed or shared study answers one question: its space and holds, and what the caller says makes the
        question (tune/command.py: the load, the service, the objective, the constraints, the control). A worker
        asking another is refused, naming the first difference; what a study began without is taken as this one's."""
        mine = {**self.question, "space": [dataclasses.asdict(p) for p in self.space.params],
                "holds_s": list(self.holds_s)}
        mine = json.loads(json.dumps(mine))          # as the storage gives it back: JSON
        said = self.study.user_attrs
        for key, value in mine.items():
            if key in said and said[key] != value:
                raise TuneError(f"study {self.study.study_name} was begun with another {key.replace('_s', '')}: "
                                f"{json.dumps(said[key])} (this worker: {json.dumps(value)}); resume it with the "
                                "same, or begin a new tune")
        for key, value in mine.items():
            if key not in said:
                self.study.set_user_attr(key, value)

    def propose(self) -> tuple[optuna.trial.Trial, dict]:
        """The sampler's next candidate that the knob rules accept; the refused are kept as failed trials (with
        why), never run."""
        for _ in range(MAX_REFUSED):
            trial = self.study.ask()
            values = self.space.suggest(trial)
            why = self.rules(values) if self.rules else None
            if why is None:
                return trial, values
            trial.set_user_attr("refused", why)
            self.study.tell(trial, state=optuna.trial.TrialState.FAIL)
        raise TuneError(f"the knob rules refused {MAX_REFUSED} candidates in a row: narrow the space")

    def step(self, evaluate: Evaluate) -> Result:
        """One trial: the shortest hold, then each longer one while successive halving keeps it."""
        trial, values = self.propose()
        outcome, reached = Outcome(None), self.holds_s[0]
        for rung, hold in enumerate(self.holds_s, 1):
            outcome, reached = evaluate(values, hold), hold
            trial.set_user_attr(f"hold_{hold}", dataclasses.asdict(outcome))
            if not outcome.feasible:
                break
            trial.report(outcome.ratio, rung)
            if rung < len(self.holds_s) and trial.should_prune():
                trial.set_constraint("feasible", 0.0)
                self.study.tell(trial, state=optuna.trial.TrialState.PRUNED)
                return Result(trial.number, values, outcome, reached, "pruned")
        trial.set_constraint("feasible", 0.0 if outcome.feasible else 1.0)   # TPE samples feasible ones first
        self.study.tell(trial, outcome.ratio if outcome.ratio is not None else 0.0)
        return Result(trial.number, values, outcome, reached, "complete")

    def results(self) -> list[Result]:
        """Every trial of the study so far, refused ones included, in order."""
        out = []
        for t in self.study.get_trials(deepcopy=False):
            ended = (t.datetime_complete.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")   # optuna's: local
                     if t.datetime_complete else None)
            if t.state == optuna.trial.TrialState.FAIL and "refused" in t.user_attrs:
                out.append(Result(t.number, dict(t.params), Outcome(None, violations=(t.user_attrs["refused"],)),
                                  0, "refused", ended))
                continue
            holds = [h for h in self.holds_s if f"hold_{h}" in t.user_attrs]
            if not holds or t.state not in (optuna.trial.TrialState.COMPLETE, optuna.trial.TrialState.PRUNED):
                continue            # interrupted mid-trial: not a result (a resumed tune runs it anew)
            kept = t.user_attrs[f"hold_{holds[-1]}"]
            outcome = Outcome(**{**kept, "violations": tuple(kept["violations"])})
            out.append(Result(t.number, dict(t.params), outcome, holds[-1],
                              "pruned" if t.state == optuna.trial.TrialState.PRUNED else "complete", ended))
        return out

    def best(self) -> Result | None:
        """The best candidate whose gain counts (Result.improves), among those run at the longest hold; None when
        no candidate's gain clears the noise floor."""
        proven = [r for r in self.results() if r.state == "complete" and r.hold_s == self.holds_s[-1]
                  and r.improves(self.floor)]
        return max(proven, key=lambda r: (r.outcome.low, r.outcome.ratio), default=None)

    def importance(self) -> dict[str, float]:
        """Each knob's share of what explains the outcome (optuna's default evaluator); {} with too few trials."""
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")        # "too few trials": equal shares, which say nothing
            try:
                found = optuna.importance.get_param_importances(self.study)
            except (RuntimeError, ValueError, ZeroDivisionError):
                return {}
        return {} if len(set(found.values())) <= 1 else found

