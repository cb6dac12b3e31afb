"""The search, made for a handful of noisy, expensive trials: optuna's TPE (multivariate, constraint-aware: a
candidate that breaks a constraint, does not start or is refused by the knob rules is infeasible, told as such so
that the sampler learns where not to go, never a penalised value); the known knob sets first (`known`: where experts
start); every candidate measured at one hold, at steady state (trials.py); the leading candidate run again with the
machines' roles swapped until it has a run in each orientation (replication: the twins' bias cancels and the
between-run variance is seen twice) before its gain can count; the study in SQLite (optuna's RDBStorage) in the
tune folder, so that an interrupted tune keeps every finished run and goes on where it stopped. No home-made
optimiser: this module only says which candidate runs next (evidence.py: what a run says, when a gain counts).

Successive halving over hold lengths (optuna's SuccessiveHalvingPruner) was here before issue 54: with
bootstrap_count it pruned the first candidates whatever they scored, never cut a second time with three or more
holds, and ranked at its shortest hold, where the machines had not settled: what it promoted was warm-up speed.
"""
from __future__ import annotations

import dataclasses
import json
import time
import uuid
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC

import optuna
import sqlalchemy.exc

from lab.errors import LabError
from lab.experiment.tune import storage as study_storage
from lab.experiment.tune.evidence import REPLICATES, Candidate, Outcome, Result
from lab.experiment.tune.space import Space

STARTUP = 5                   # the sampler's random candidates before it models: trials cost minutes each, not seconds
SAMPLERS = ("tpe", "gp", "random")      # what proposes the next candidate (bench/tuner.py compares them)


def sampler_of(name: str, seed: int | None = None) -> optuna.samplers.BaseSampler:
    """The named sampler. tpe and gp read the trials' constraint values (trial.set_constraint) and learn where the
    infeasible lie; random ignores them. gp: optuna's Gaussian process (noise-aware; needs torch, which the lab does
    not install)."""
    if name == "tpe":
        return optuna.samplers.TPESampler(seed=seed, n_startup_trials=STARTUP)
    if name == "gp":
        return optuna.samplers.GPSampler(seed=seed, n_startup_trials=STARTUP, warn_independent_sampling=False)
    if name == "random":
        return optuna.samplers.RandomSampler(seed=seed)
    raise TuneError(f"sampler {name!r}: one of {', '.join(SAMPLERS)}")
OPEN_ATTEMPTS = 5             # a shared storage opened while another worker makes its tables
MAX_REFUSED = 200             # proposals in a row the knob rules refuse before the space is called unsearchable
optuna.logging.set_verbosity(optuna.logging.WARNING)


class TuneError(LabError):
    """The tune cannot go on; the message says why."""


def _key(values: dict) -> str:
    return json.dumps(values, sort_keys=True)


def _told(outcome: Outcome) -> float:
    """The constraint value the sampler is told (≤ 0: feasible): a run that broke a constraint, did not start or never
    settled is no measurement of the steady state it models (an unsettled ratio is the warm-up's speed)."""
    return 0.0 if outcome.feasible and outcome.settled is not False else 1.0


def _plain(params: list) -> list:
    """A space's params as JSON without the fields at their defaults (empty or null), so that a field a later lab
    added does not make an earlier study another question."""
    return [{k: v for k, v in p.items() if v not in (None, [], ())} for p in params] if isinstance(params, list) \
        else params


@dataclass(frozen=True)
class Next:
    """The run to make next: a new candidate (its optuna trial, asked) or the leader again (replicate_of)."""
    values: dict
    swapped: bool                       # the machines' roles swapped (the candidate on machine default)
    trial: optuna.trial.Trial | None = None
    replicate_of: int | None = None
    known: str | None = None


Evaluate = Callable[[dict, int, bool], Outcome]   # (knob values, hold in s, roles swapped) → one A/B run's outcome


class Tuner:
    """One study: `step(evaluate)` runs the next candidate (the leader again while it lacks its replicates, else the
    sampler's next proposal that the knob rules accept) and tells the sampler what it found."""

    def __init__(self, space: Space, storage: str, name: str, hold_s: int, floor: float,
                 rules: Callable[[dict], str | None] | None = None, sampler: optuna.samplers.BaseSampler | None = None,
                 seed: int | None = None, question: dict | None = None, between: float = 0.0,
                 known: dict[str, dict] | None = None, past: list[tuple[dict, Outcome, str | None]] | None = None,
                 alone: bool = False) -> None:
        """alone: no other worker uses the storage (the tune folder's own), so a trial still running when it opens
        was interrupted; on a shared one, those whose heartbeat stopped are."""
        if hold_s <= 0:
            raise TuneError(f"hold {hold_s} s: a positive length")
        self.space, self.hold_s, self.floor, self.rules, self.between = space, int(hold_s), floor, rules, between
        self.question = dict(question or {})
        for attempt in range(OPEN_ATTEMPTS):      # workers starting together race to make the storage's tables
            try:
                self.study = optuna.create_study(
                    storage=study_storage.of(storage) if isinstance(storage, str) else storage, study_name=name,
                    load_if_exists=True, direction="maximize",
                    # TPE reads each trial's constraint values (trial.set_constraint): the infeasible go to its
                    # "bad" density whatever value they were told
                    sampler=sampler or sampler_of("tpe", seed))
                break
            # SQLite: locked. PostgreSQL, two workers making the tables at once: a duplicate pg_type row
            # (IntegrityError) or 'type "alembic_version" already exists' (ProgrammingError): 4 of 24 openings here
            except (sqlalchemy.exc.IntegrityError, sqlalchemy.exc.OperationalError, sqlalchemy.exc.ProgrammingError):
                if attempt == OPEN_ATTEMPTS - 1:
                    raise
                time.sleep(0.5 * (attempt + 1))
        self.beating: dict[int, study_storage.Heartbeat] = {}
        self._check_same_question()
        self._fail_interrupted(alone)
        self._add_past(past or [])
        had = {_key(self.values_of(t)) for t in self.study.get_trials(deepcopy=False)
               if t.state != optuna.trial.TrialState.FAIL}
        for set_name, values in (known or {}).items():      # where experts start: run first (once per study), not
            if _key(values) not in had:                     # where a past run of the question ran it already
                self.study.enqueue_trial(self.space.encode(values), user_attrs={"known": set_name, "values": values})

    def _fail_interrupted(self, alone: bool) -> None:
        """Trials left running by an interrupted worker failed (a known set among them queued again)."""
        if not alone:
            study_storage.fail_stale(self.study)
            return
        for t in self.study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.RUNNING,)):
            self.study.tell(t.number, state=optuna.trial.TrialState.FAIL)
            study_storage.again_if_known(self.study, t)

    @staticmethod
    def values_of(t: optuna.trial.FrozenTrial) -> dict:
        """A trial's candidate: its values as run (a study made before the joint model kept them as its params)."""
        return dict(t.user_attrs["values"]) if "values" in t.user_attrs else dict(t.params)

    def _added(self, values: dict, value: float, attrs: dict, constraint: float,
               params: dict | None = None, distributions: dict | None = None) -> int:
        """A run the study did not propose added as a finished trial; its number, found by an id of its own (on a
        shared study another worker's trial may have come in between)."""
        attrs = {**attrs, "values": values, "id": uuid.uuid4().hex}
        self.study.add_trial(optuna.trial.create_trial(
            params=params if params is not None else self.space.encode(values),
            distributions=distributions if distributions is not None else self.space.distributions(),
            value=value, user_attrs=attrs, constraints={"feasible": constraint}))
        return next(t.number for t in reversed(self.study.get_trials(deepcopy=False))
                    if t.user_attrs.get("id") == attrs["id"])

    def _add_past(self, past: list[tuple[dict, Outcome, str | None]]) -> None:
        """Past runs of the same question (warm.py: values, outcome, when it ended) as runs the study made, each once
        (by its run folder: a worker's own runs, another's on a shared study, or an earlier tune's), a run of values
        the study has run already joining that candidate as its replicate (an earlier tune's leader and its swapped
        run stay one candidate)."""
        trials = [t for t in self.study.get_trials(deepcopy=False) if "outcome" in t.user_attrs]
        kept = {t.user_attrs["outcome"]["run"] for t in trials}
        first = {}
        for t in trials:
            first.setdefault(_key(self.values_of(t)), t.user_attrs.get("replicate_of", t.number))
        for values, outcome, ended in past:
            if outcome.run in kept or not self.space.contains(values):
                continue
            attrs = {"past": True, "ended": ended, "outcome": json.loads(json.dumps(dataclasses.asdict(outcome)))}
            if _key(values) in first:
                attrs["replicate_of"] = first[_key(values)]
            number = self._added(values, outcome.ratio if outcome.ratio is not None else 0.0, attrs, _told(outcome))
            kept.add(outcome.run)
            first.setdefault(_key(values), number)

    def _check_same_question(self) -> None:
        """A resumed or shared study answers one question: its space and hold, and what the caller says makes the
        question (tune/command.py: the load, the service, the objective, the constraints, the control, the base). A
        worker asking another is refused, naming the first difference; what a study began without is taken as this
        one's."""
        mine = {**self.question, "space": [dataclasses.asdict(p) for p in self.space.params],
                "holds_s": [self.hold_s]}
        mine = json.loads(json.dumps(mine))          # as the storage gives it back: JSON
        said = dict(self.study.user_attrs)
        if "space" in said:     # a field a later lab added, at its default, is the same space (a resumed older tune)
            said["space"], mine["space"] = _plain(said["space"]), _plain(mine["space"])
        for key, value in mine.items():
            if key in said and said[key] != value:
                raise TuneError(f"study {self.study.study_name} was begun with another {key.replace('_s', '')}: "
                                f"{json.dumps(said[key])} (this worker: {json.dumps(value)}); resume it with the "
                                "same, or begin a new tune")
        for key, value in mine.items():
            if key not in said:
                self.study.set_user_attr(key, value)

    def propose(self) -> tuple[optuna.trial.Trial, dict]:
        """The sampler's next candidate that the knob rules accept. A refused one is told to the sampler as
        infeasible (a constraint value it learns from, not a failure it ignores), with why, and never run."""
        study_storage.fail_stale(self.study)
        for _ in range(MAX_REFUSED):
            with warnings.catch_warnings():     # its heartbeat is ours (study_storage.Heartbeat), not Study.optimize's
                warnings.filterwarnings("ignore", message="Heartbeat of storage")
                trial = self.study.ask()
            values = self.space.suggest(trial)
            trial.set_user_attr("values", values)
            why = self.rules(values) if self.rules else None
            if why is None:
                self.beating[trial.number] = study_storage.Heartbeat(self.study._storage, trial._trial_id)
                return trial, values
            trial.set_user_attr("refused", why)
            trial.set_constraint("feasible", 1.0)
            self.study.tell(trial, 0.0)
        raise TuneError(f"the knob rules refused {MAX_REFUSED} candidates in a row: narrow the space")

    def next_replicate(self, pending: Next | None = None) -> Candidate | None:
        """The leading candidate (the highest combined ratio among those that may still improve on the floor) when
        it lacks runs for its gain to count; not while its run again is pending (made, its outcome not yet told)."""
        open_ = [c for c in self.candidates() if c.may_improve(self.floor)]
        leader = max(open_, key=lambda c: c.combined()[0], default=None)
        if leader is None or len(leader.runs) >= REPLICATES:
            return None
        return None if pending is not None and pending.replicate_of == leader.number else leader

    def next_run(self, pending: Next | None = None) -> Next:
        """What runs next: the leader again with the roles swapped where it lacks its replicates, else a new candidate.
        pending: a run made whose outcome is not told yet (its report is being made: tune/overlap.py); the sampler
        sees it as running."""
        leader = self.next_replicate(pending)
        if leader is not None:
            return Next(dict(leader.values), not leader.runs[-1].outcome.swapped, replicate_of=leader.number)
        trial, values = self.propose()
        same = next((c for c in self.candidates() if _key(c.values) == _key(values)), None)
        if same is not None:        # a proposal of values that ran already: that candidate's run again
            return Next(values, not same.runs[-1].outcome.swapped, trial=trial, replicate_of=same.number,
                        known=trial.user_attrs.get("known"))
        return Next(values, False, trial=trial, known=trial.user_attrs.get("known"))

    def tell(self, run: Next, outcome: Outcome) -> Result:
        """A run's outcome into the study: a new candidate's trial told (infeasible: its value unused), a run again
        added as a trial of its own once it ended (a run interrupted half-way leaves nothing; queued known sets keep
        their turn)."""
        kept = json.loads(json.dumps(dataclasses.asdict(outcome)))
        value = outcome.ratio if outcome.ratio is not None else 0.0
        if run.trial is not None:
            beating = self.beating.pop(run.trial.number, None)
            if beating is not None:
                beating.stop.set()
            run.trial.set_user_attr("outcome", kept)
            if run.replicate_of is not None:
                run.trial.set_user_attr("replicate_of", run.replicate_of)
            run.trial.set_constraint("feasible", _told(outcome))
            self.study.tell(run.trial, value)
            return Result(run.trial.number, run.values, outcome, self.hold_s, "complete", known=run.known,
                          replicate_of=run.replicate_of)
        first = self.study.get_trials(deepcopy=False)[run.replicate_of]
        number = self._added(dict(run.values), value, {"replicate_of": run.replicate_of, "outcome": kept},
                             _told(outcome), dict(first.params), dict(first.distributions))
        return Result(number, dict(run.values), outcome, self.hold_s, "complete", replicate_of=run.replicate_of)

    def close(self) -> None:
        """The heartbeats of runs still under way stopped (an interrupted worker's trials then go stale)."""
        for beating in self.beating.values():
            beating.stop.set()
        self.beating.clear()

    def step(self, evaluate: Evaluate) -> Result:
        """One run, made and told."""
        run = self.next_run()
        return self.tell(run, evaluate(run.values, self.hold_s, run.swapped))

    def results(self) -> list[Result]:
        """Every run of the study so far, refused candidates included, in order."""
        out = []
        for t in self.study.get_trials(deepcopy=False):
            ended = t.user_attrs.get("ended") if t.user_attrs.get("past") else (     # a past run's: its own
                t.datetime_complete.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")   # optuna's: local
                if t.datetime_complete else None)
            if "refused" in t.user_attrs:
                out.append(Result(t.number, self.values_of(t), Outcome(None, violations=(t.user_attrs["refused"],)),
                                  0, "refused", ended, known=t.user_attrs.get("known")))
                continue
            if t.state != optuna.trial.TrialState.COMPLETE or "outcome" not in t.user_attrs:
                continue            # interrupted mid-run: not a result (a resumed tune runs anew)
            out.append(Result(t.number, self.values_of(t), Outcome.stored(t.user_attrs["outcome"]), self.hold_s,
                              "complete", ended, t.user_attrs.get("replicate_of"), t.user_attrs.get("known"),
                              bool(t.user_attrs.get("past"))))
        return out

    def candidates(self) -> list[Candidate]:
        """Each candidate that ran, its runs together (a replicate joins the run it repeats)."""
        runs: dict[int, list[Result]] = {}
        for r in self.results():
            if r.state == "complete":
                runs.setdefault(r.number if r.replicate_of is None else r.replicate_of, []).append(r)
        return [Candidate(n, rs[0].values, tuple(rs), self.between) for n, rs in sorted(runs.items())]

    def leader_low(self) -> float | None:
        """The highest combined lower bound of a candidate within its constraints at steady state (what a run races
        against: race.py); None before one."""
        lows = [c.combined()[1] for c in self.candidates() if c.feasible and c.settled and c.combined()]
        return max(lows, default=None)

    def best(self, candidates: list[Candidate] | None = None) -> Candidate | None:
        """The candidate whose gain counts (Candidate.improves) with the highest lower bound; None when none does.
        candidates: self.candidates(), where the caller has them already."""
        proven = [c for c in (self.candidates() if candidates is None else candidates) if c.improves(self.floor)]
        return max(proven, key=lambda c: (c.combined()[1], c.combined()[0]), default=None)

    def importance(self) -> dict[str, float]:
        """Each knob's share of what explains the outcome over the runs that measured one (refused and infeasible
        runs left out: their told value is no measurement), by optuna's default evaluator; {} with too few."""
        measured = [t for t in self.study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.COMPLETE,))
                    if "outcome" in t.user_attrs and Outcome.stored(t.user_attrs["outcome"]).feasible]
        if len(measured) < 4:
            return {}
        local = optuna.create_study(direction="maximize")
        local.add_trials(measured)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")        # "too few trials": equal shares, which say nothing
            try:
                found = optuna.importance.get_param_importances(local)
            except (RuntimeError, ValueError, ZeroDivisionError):
                return {}
        return {} if len(set(found.values())) <= 1 else found

