"""What the search is told (issue 86, item 2): unsettled runs, interrupted trials, duplicate proposals, a replicate's
own trial on a shared study, the orientations of a crossover, and what makes a study one question."""
from __future__ import annotations

import math
import time

import optuna
import pytest

from lab.experiment.tune import evidence, search, space
from lab.experiment.tune import storage as study_storage
from lab.experiment.tune.evidence import Outcome

SPECS = {"threads": {"type": "int", "range": [1, 5000]}, "gc": {"type": "str", "choices": ["serial", "parallel"]}}
RAW = {"threads": {"low": 4, "high": 400, "log": True}, "gc": ["serial", "parallel"]}
KNOWN = {"expert": {"threads": 50, "gc": "parallel"}}


def tuner(storage: str, alone: bool = True, known: dict | None = None, raw: dict | None = None,
          sampler=None) -> search.Tuner:
    return search.Tuner(space.parse(raw or RAW, SPECS), storage, "tune", 60, 0.05, known=known, alone=alone,
                        sampler=sampler or optuna.samplers.RandomSampler(seed=1))


def told_feasible(t: search.Tuner, number: int) -> bool:
    """What the study holds as the trial's constraint (≤ 0: feasible), as TPE reads it."""
    trial = t.study.get_trials(deepcopy=False)[number]
    return all(c <= 0 for c in trial.constraints.values())


def test_a_run_that_never_settled_is_told_as_infeasible():
    """Its ratio is a warm-up's: the sampler modelled warm-up speed where it was told as feasible."""
    t = tuner("sqlite:///:memory:")
    warming = t.tell(t.next_run(), Outcome(1.4, 1.3, 1.5, settled=False))
    steady = t.tell(t.next_run(), Outcome(1.1, 1.0, 1.2, settled=True))
    assert not told_feasible(t, warming.number) and told_feasible(t, steady.number)


def test_a_trial_interrupted_in_its_own_folder_is_failed_on_resume_and_a_known_set_runs_again(tmp_path):
    storage = f"sqlite:///{tmp_path / 'study.sqlite'}"
    first = tuner(storage, known=KNOWN)
    run = first.next_run()
    assert run.known == "expert"
    first.close()                  # Ctrl-C during the run: nothing told
    again = tuner(storage, known=KNOWN)
    states = [t.state for t in again.study.get_trials(deepcopy=False)]
    assert optuna.trial.TrialState.RUNNING not in states and optuna.trial.TrialState.FAIL in states
    assert again.next_run().known == "expert", "the interrupted known set is run again"


def test_on_a_shared_study_a_trial_whose_heartbeat_stopped_is_failed(tmp_path, monkeypatch):
    """Another worker's running trial is alive while its heartbeat goes on; one silent past the grace is failed."""
    monkeypatch.setattr(study_storage, "HEARTBEAT_S", 1)
    monkeypatch.setattr(study_storage, "GRACE_S", 1)
    storage = f"sqlite:///{tmp_path / 'study.sqlite'}"
    worker = tuner(storage, alone=False, known=KNOWN)
    worker.next_run()
    time.sleep(2.5)
    other = tuner(storage, alone=False)
    assert [t.state for t in other.study.get_trials(deepcopy=False)][0] == optuna.trial.TrialState.RUNNING, \
        "a beating trial is alive"
    worker.close()                  # the worker killed: its heartbeat stops
    time.sleep(3.5)
    other = tuner(storage, alone=False)
    states = [t.state for t in other.study.get_trials(deepcopy=False)]
    assert states[0] == optuna.trial.TrialState.FAIL and optuna.trial.TrialState.WAITING in states


def test_a_proposal_of_values_that_ran_already_is_that_candidates_run_again():
    t = tuner("sqlite:///:memory:", raw={"gc": ["serial", "parallel"]})
    for _ in range(8):
        t.tell(run := t.next_run(), Outcome(1.0, 0.95, 1.05, swapped=run.swapped))
    candidates = t.candidates()
    assert len(candidates) == 2 and sum(len(c.runs) for c in candidates) == 8
    assert all(c.orientations == 2 for c in candidates)


def test_a_replicate_is_found_by_its_own_trial_on_a_shared_study(monkeypatch):
    """Another worker's trial added right after the replicate was the last one; it was read as the replicate."""
    t = tuner("sqlite:///:memory:")
    first = t.tell(t.next_run(), Outcome(1.5, 1.4, 1.6))
    add = t.study.add_trial

    def and_another_workers(trial):
        add(trial)
        add(optuna.trial.create_trial(params={"gc": "serial"}, distributions={
            "gc": optuna.distributions.CategoricalDistribution(["serial", "parallel"])}, value=0.5,
            user_attrs={"values": {"gc": "serial"}}))
    monkeypatch.setattr(t.study, "add_trial", and_another_workers)
    again = t.tell(t.next_run(), Outcome(1.5, 1.4, 1.6, swapped=True))
    assert again.replicate_of == first.number
    assert t.study.get_trials(deepcopy=False)[again.number].user_attrs.get("replicate_of") == first.number


def run(number: int, ratio: float, half: float, swapped: bool) -> evidence.Result:
    return evidence.Result(number, {}, Outcome(ratio, ratio * math.exp(-half), ratio * math.exp(half),
                                               swapped=swapped), 60, "complete")


def test_the_orientations_are_averaged_as_a_crossover():
    """Machine tuned 10 % ahead of machine default: the candidate at 1.10 on one side, 0.90 on the other. Weighted by
    their variances the well-measured orientation won (1.09); as a crossover the bias cancels (0.995)."""
    c = evidence.Candidate(0, {}, (run(0, 1.10, 0.01, False), run(1, 0.90, 0.10, True)), 0.0)
    ratio, low, high = c.combined()
    assert ratio == pytest.approx(math.sqrt(1.10 * 0.90), rel=1e-9)
    assert low < ratio < high


def test_a_studys_question_holds_its_machines_and_the_knobs_its_sets_resolve_to(tmp_path):
    """A study named its sets and its load, not the machines' kind, memory or cores, nor what the sets resolve to:
    a resumed study on 1 GB machines, or after an edit of the control's set, was taken as the same question."""
    import types

    from lab.experiment import options
    from lab.experiment.load import Profile
    from lab.experiment.tune import command
    from lab.provision import catalog

    opts = options.checked(profile=Profile(users=20, ramp_up_s=20, duration_s=120), label="q")
    plan = command.Plan(space.from_catalog(catalog.specs()), 120, 0.05, 3600)
    small, large = (types.SimpleNamespace(memory_mb=mb, cpus=2) for mb in (512, 1024))
    asked = command.question(opts, small, plan)
    assert asked["machines"] == {"kind": "containers", "memory_mb": 512, "cpus": 2}
    assert asked["control_knobs"]["tomcat_threads_max"] == catalog.defaults()["tomcat_threads_max"]
    storage = f"sqlite:///{tmp_path / 'study.sqlite'}"
    search.Tuner(plan.space, storage, "tune", 120, 0.05, question=asked)
    with pytest.raises(search.TuneError, match="another machines"):
        search.Tuner(plan.space, storage, "tune", 120, 0.05, question=command.question(opts, large, plan))


@pytest.mark.parametrize("aa_runs", [2, 0])
def test_tau_is_measured_by_an_aa_block_where_none_calibrates_the_first_run(sets, aa_runs):
    """The between-run spread was a constant 5 % whatever the machines did. A tune whose first run found no A/A runs
    of its load runs an A/A block of the control, and its later runs' reports (calibrated by it) give τ; --aa-runs 0
    keeps the assumption and says so. The stand-in's true spread is 12 %, the assumption 5 %."""
    import json

    from lab import paths
    from lab.experiment import load, options
    from lab.experiment.tune import command, standin
    tune_space = space.parse({"tomcat_threads_max": {"low": 4, "high": 400, "log": True}}, catalog_specs())
    lab = standin.StandIn(tune_space, {"tomcat_threads_max": 100}, seed=5, between_sd=0.12)
    runs = standin.Runs(lab, paths.RESULTS, [0.0], command.OVERHEAD_S["containers"])
    plan = command.Plan(tune_space, 180, 0.05, budget_s=2 * 3600, aa_runs=aa_runs)
    said: list[str] = []
    _, folder = command.execute(options.checked(profile=load.Profile(users=10, ramp_up_s=30, duration_s=180),
                                                label=f"aa{aa_runs}"), None, plan, runs, log=said.append,
                                clock=lambda: runs.clock[0], judge=lambda run_dir: ())
    spread = json.loads((folder / "tune.json").read_text())["spread"]
    aa_series = [s for s in paths.RESULTS.iterdir() if s.name.endswith("-aa-series")]
    if aa_runs:
        assert len(lab.runs) > len(runs.ran) and len(aa_series) == 1 and spread["aa_block"] == aa_series[0].name
        assert spread["source"].startswith("measured") and spread["tau"] != 0.05
        assert any("an A/A block of 2 runs" in line for line in said)
        assert any(line.startswith("tune: the between-run spread τ is") for line in said)
    else:
        assert aa_series == [] and spread == {"tau": 0.05, "source": "assumed (--between)", "aa_block": None,
                                              "tried": False}


def catalog_specs() -> dict:
    from lab.provision import catalog
    return catalog.specs()


def test_a_measured_spread_of_none_is_taken_as_the_least_the_lab_has_seen():
    """Two A/A runs that agree within their own noise estimate τ at its bound, 0: no proof that runs do not spread
    (the first block on native containers, 20261207T105842Z-racecheck-tune-aa)."""
    from lab.experiment.tune import aa
    spread = aa.Spread(0.05)
    assert spread.measured("r1", 0.0) and spread.tau == aa.TAU_FLOOR and "taken as at least 1%" in spread.source
    assert not spread.measured("r2", 0.03) and spread.tau == 0.03
