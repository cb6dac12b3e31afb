"""The tuner on a stand-in lab (lab/experiment/tune/standin.py: a known function of the knobs, autocorrelated
noise, a region that does not start, and where asked a between-run draw, the JIT's warm-up and a machine bias): the
space it searches, the search against random search, the floor, the knob rules, replication with the roles swapped,
steady state, the known sets, an interrupted study resumed."""
from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import optuna
import pytest

from lab.experiment import load, options
from lab.experiment.tune import evidence, search, space, standin
from lab.provision import catalog
from lab.provision.configuration import Configuration
from runfolder import schema

SPECS = {"threads": {"type": "int", "range": [1, 5000]}, "workers": {"type": "int", "range": [1, 20000]},
         "heap": {"type": "int", "range": [32, 8192], "unset": "ergonomics"},
         "gc": {"type": "str", "choices": ["serial", "parallel", "g1"]}, "pool": {"type": "int", "range": [1, 1000]},
         "pooling": {"type": "bool"}}
RAW = {"threads": {"low": 4, "high": 400, "log": True}, "workers": {"low": 25, "high": 400, "log": True},
       "heap": {"low": 64, "high": 320, "step": 16}, "gc": ["serial", "parallel", "g1"],
       "pool": {"low": 1, "high": 64, "log": True}}
OPTIMUM = {"threads": 12, "workers": 60, "heap": 192, "gc": "parallel", "pool": 8}
HOLD = 540


def infeasible(values: dict) -> str | None:
    return "OutOfMemoryError at start" if values["heap"] < 96 and values["threads"] > 200 else None


def rule(values: dict) -> str | None:
    """A knob rule (as HTTPD's MaxRequestWorkers ≤ ServerLimit × ThreadsPerChild): never to be run against."""
    return "workers must be ≥ threads / 4" if values["workers"] < values["threads"] / 4 else None


def tuner(name: str, sampler=None, storage: str = "sqlite:///:memory:", seed: int = 0, floor: float = 0.03,
          between: float = 0.0, known: dict | None = None):
    return search.Tuner(space.parse(RAW, SPECS), storage, name, HOLD, floor, rules=rule, sampler=sampler, seed=seed,
                        between=between, known=known)


# -- the space ---------------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("raw", "said"), [
    ({"nothing": [1, 2]}, "nothing: not a knob"),
    ({"threads": {"low": 0, "high": 10}}, "threads: 0–10 is not a range of the knob's values"),
    ({"threads": {"low": 10, "high": 10}}, "threads: 10–10 is not a range"),
    ({"threads": {"low": 1, "high": 10, "log": True, "step": 2}}, "threads: a log range needs low > 0 and no step"),
    ({"heap": {"low": 64, "high": 320, "step": 30}}, "heap: step 30 must divide"),
    ({"gc": ["serial", "cms"]}, "gc: 'cms' is not a value the knob takes"),
    ({"gc": {"low": 1, "high": 2}}, "gc: a str knob takes a list of values"),
    ({"pooling": [True]}, "pooling: a list of at least two different values"),
    ({"threads": {"low": 1, "high": 10, "scale": "log"}}, "threads: a range is {low, high"),
    # issue 53, item 7: a traceback each before (unhashable type: 'list'; cannot convert float infinity to integer)
    ({"gc": [["serial"], "parallel"]}, "gc: ['serial'] is not a value the knob takes"),
    ({"threads": {"low": 4, "high": float("inf")}}, "threads: 4–inf is not a range"),
    ({}, "at least one knob"),
])
def test_a_space_the_knobs_cannot_take_is_refused_naming_the_knob(raw, said):
    with pytest.raises(space.SpaceError, match=None) as refused:
        space.parse(raw, SPECS)
    assert said in str(refused.value)


def test_a_space_takes_null_where_the_knob_has_an_unset_meaning():
    got = space.parse({"heap": [None, 128, 256], "pooling": [True, False]}, SPECS)
    assert got.contains({"heap": None, "pooling": False}) and not got.contains({"heap": 64, "pooling": False})
    with pytest.raises(space.SpaceError, match="threads: None is not a value"):
        space.parse({"threads": [None, 8]}, SPECS)


def test_the_catalogs_tune_ranges_are_a_space_of_its_own_knobs():
    specs = catalog.specs()
    tuned = space.from_catalog(specs)
    assert len(tuned.knobs) >= 5 and {k.split("_")[0] for k in tuned.knobs} >= {"httpd", "tomcat", "jvm"}


# -- define-by-run: the rules between knobs inside the space ------------------------------------------------------

MPM_SPECS = {k: {"type": "int", "range": [1, 20000]} for k in ("limit", "per_child", "workers", "spare_max",
                                                                 "spare_min")}
MPM_SPECS |= {"protocol": {"type": "str", "choices": ["http", "ajp"]},
              "connector": {"type": "str", "choices": ["nio", "apr"]}}
# written with the bounded knobs first: parse() must put what bounds them before them
MPM = {"spare_min": {"low": 1, "high": 400, "log": True, "at_most": "spare_max"},
       "workers": {"low": 25, "high": 400, "log": True, "at_most": "limit * per_child"},
       "spare_max": {"low": 5, "high": 400, "at_most": "workers"},
       "connector": {"values": ["nio", "apr"], "when": {"protocol": "ajp"}},
       "limit": {"low": 2, "high": 16}, "per_child": {"low": 25, "high": 64}, "protocol": ["http", "ajp"]}


def mpm_rule(values: dict) -> str | None:
    """HTTPD's rules between its MPM knobs (ansible/roles/knobs/tasks/rules.yml) and the connector's."""
    if values["workers"] > values["limit"] * values["per_child"]:
        return "workers > limit × per_child"
    if not values["spare_min"] <= values["spare_max"] <= values["workers"]:
        return "spare threads out of order"
    if ("connector" in values) != (values["protocol"] == "ajp"):
        return "a connector only over AJP"
    return None


@pytest.mark.parametrize("sampler", ["random", "tpe"])
def test_define_by_run_proposes_only_what_the_rules_between_knobs_take(sampler):
    """Issue 54, item 2: bounds by earlier knobs and conditions shape what is proposed, so that nothing proposed is
    refused (without them, 183 of 200 random proposals of this space broke a rule)."""
    got = space.parse(MPM, MPM_SPECS)
    order = got.knobs
    assert order.index("limit") < order.index("workers") < order.index("spare_max") < order.index("spare_min")
    assert order.index("protocol") < order.index("connector")
    study = optuna.create_study(direction="maximize", sampler=optuna.samplers.RandomSampler(seed=3)
                                if sampler == "random" else optuna.samplers.TPESampler(seed=3, n_startup_trials=5))
    proposed = []
    for _ in range(200):
        trial = study.ask()
        values = got.suggest(trial)
        proposed.append(values)
        study.tell(trial, values["workers"] / 100)
    assert [v for v in proposed if mpm_rule(v)] == []
    assert all(got.contains(v) for v in proposed)
    assert {v["protocol"] for v in proposed if "connector" in v} == {"ajp"}
    if sampler == "random":         # the whole range (TPE, which models it, goes where the objective rises)
        assert max(v["workers"] for v in proposed) > 300 and min(v["workers"] for v in proposed) < 40
    flat = space.parse({k: ({kk: vv for kk, vv in r.items() if kk not in ("at_most", "when")}
                            if isinstance(r, dict) and "low" in r else r["values"] if isinstance(r, dict) else r)
                        for k, r in MPM.items()}, MPM_SPECS)
    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=3))
    broke = sum(mpm_rule(flat.suggest(study.ask())) is not None for _ in range(200))
    assert broke > 150, broke       # the same space without its rules between knobs: refusals, not proposals


def test_the_sampler_models_every_knob_bounded_or_conditional_ones_too():
    """Issue 86: optuna's multivariate TPE and GP model only the knobs whose distribution is the same in every trial
    (the intersection search space); a range bounded by earlier knobs changed with them, and a knob searched only
    `when` another holds was missing from some trials, so both were drawn at random beside the model (5 of the
    catalog's 17). Every knob is now proposed in every trial on a fixed scale, and TPE learns a bounded one."""
    got = space.parse(MPM, MPM_SPECS)
    study = optuna.create_study(direction="maximize", sampler=optuna.samplers.TPESampler(seed=3, n_startup_trials=5))
    proposed = []
    for _ in range(60):
        trial = study.ask()
        values = got.suggest(trial)
        proposed.append(values)
        # the objective: HTTPD's workers at the top of what the limits leave them, the only thing that matters
        low, high = next(p for p in got.params if p.knob == "workers").bounds(values)
        study.tell(trial, (values["workers"] - low) / max(1, high - low))
    modelled = optuna.search_space.intersection_search_space(study.get_trials())
    assert set(modelled) == set(got.knobs)
    early, late = proposed[:5], proposed[-20:]
    share = [(v["workers"] - b[0]) / max(1, b[1] - b[0]) for v in proposed
             for b in [next(p for p in got.params if p.knob == "workers").bounds(v)]]
    assert sum(share[-20:]) / 20 > 0.8 > sum(share[:5]) / 5, (early, late)     # learned, not drawn at random
    for values in proposed:         # what the sampler was told stands for the same candidate
        assert got.decode(got.encode(values)) == values


def test_contains_judges_each_knob_beside_the_others():
    got = space.parse(MPM, MPM_SPECS)
    fine = {"limit": 5, "per_child": 30, "protocol": "ajp", "connector": "apr", "workers": 150, "spare_max": 20,
            "spare_min": 5}
    assert got.contains(fine)
    assert not got.contains({**fine, "workers": 151})                     # over limit × per_child
    assert not got.contains({**fine, "spare_min": 21})                    # over spare_max
    assert not got.contains({**fine, "protocol": "http"})                 # a connector over HTTP
    assert got.contains({k: v for k, v in {**fine, "protocol": "http"}.items() if k != "connector"})


@pytest.mark.parametrize(("raw", "said"), [
    ({"workers": {"low": 25, "high": 400, "at_most": "limit"}}, "workers: its bound or condition names limit, which"),
    ({"workers": {"low": 25, "high": 400, "at_most": "limit"}, "limit": {"low": 2, "high": 16}},
     "workers: at_most limit can be 2, under its low 25"),
    ({"limit": {"low": 2, "high": 16, "at_most": "workers"}, "workers": {"low": 2, "high": 400, "at_least": "limit"}},
     "in a circle"),
    ({"connector": {"values": ["nio", "apr"], "when": "ajp"}, "protocol": ["http", "ajp"]},
     "connector: when is a mapping"),
    ({"workers": {"low": 25, "high": 400, "at_most": "protocol"}, "protocol": ["http", "ajp"]},
     "must be searched as a positive range"),
    ({"workers": {"low": 25, "high": 400, "at_most": "limit *"}, "limit": {"low": 2, "high": 16}},
     "a bound is a knob or a product of knobs"),
])
def test_a_bound_or_condition_the_space_cannot_honour_is_refused(raw, said):
    with pytest.raises(space.SpaceError) as refused:
        space.parse(raw, MPM_SPECS)
    assert said in str(refused.value)


def test_the_catalogs_space_can_express_the_tuned_sets_httpd():
    """The tune of 20261130T111421Z could not reach the tuned set's HTTPD (its MPM and threads were outside the
    space) and failed 3.4 % of its requests where tuned failed none: the known set `tuned` now holds them all, and
    every proposal keeps HTTPD's rules."""
    from lab.experiment.tune import trials
    tune_space = space.from_catalog(catalog.specs())
    tuned = trials.known_sets(tune_space, ["tuned"], "default")["tuned"]
    wanted = Configuration("tuned").knobs(None)
    for knob in ("httpd_mpm", "httpd_server_limit", "httpd_threads_per_child", "httpd_max_request_workers",
                 "httpd_min_spare_threads", "httpd_max_spare_threads", "httpd_proxy_protocol", "tomcat_ajp_connector"):
        assert tuned[knob] == wanted[knob], knob
    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=5))
    for _ in range(200):
        v = tune_space.suggest(study.ask())
        assert v["httpd_max_request_workers"] <= v["httpd_server_limit"] * v["httpd_threads_per_child"]
        assert v["httpd_min_spare_threads"] <= v["httpd_max_spare_threads"] <= v["httpd_max_request_workers"]
        assert ("tomcat_ajp_connector" in v) == (v["httpd_proxy_protocol"] == "ajp")


def test_a_known_set_holds_a_bounded_knob_only_beside_what_bounds_it():
    """A value fixed beside a bound the sampler draws could break the rule the bound keeps (150 workers beside a drawn
    ServerLimit of 2): where a set does not hold the bounding knob, the bounded one is left to the sampler too; a
    range's `unset` says what a set leaving the knob unset is searched as."""
    from lab.experiment.tune import trials
    specs = catalog.specs()
    raw = {"httpd_server_limit": {"low": 2, "high": 16}, "httpd_threads_per_child": {"low": 25, "high": 64},
           "httpd_max_request_workers": {"low": 25, "high": 400, "at_most": "httpd_server_limit * "
                                                                         "httpd_threads_per_child"}}
    without = trials.known_sets(space.parse(raw, specs), ["default"], "tuned")["default"]
    assert without == {"httpd_threads_per_child": 25}              # ServerLimit unset: "event/worker 16, prefork 256"
    raw["httpd_server_limit"]["unset"] = 16
    held = trials.known_sets(space.parse(raw, specs), ["default"], "tuned")["default"]
    assert held == {"httpd_server_limit": 16, "httpd_threads_per_child": 25, "httpd_max_request_workers": 150}
    with pytest.raises(space.SpaceError, match="unset 20 is not a value of the range 2–16"):
        space.parse({"httpd_server_limit": {"low": 2, "high": 16, "unset": 20}}, specs)
    with pytest.raises(space.SpaceError, match="for a knob that may be unset"):
        space.parse({"tomcat_threads_max": {"low": 25, "high": 400, "unset": 200}}, specs)


def test_the_catalogs_known_sets_pass_the_labs_own_validation():
    """Each known set a tune from the catalog starts with, as the tune runs it against `tuned` (trials.rules →
    ansible/validate.yml on this host): none refused. The catalog's set was refused in the first tune with HTTPD's
    knobs (its ServerLimit, unset, was drawn as 2 beside a fixed 150 workers); the range's `unset: 16` holds it."""
    from lab.experiment import load, run
    from lab.experiment.tune import trials
    from lab.machines import settings
    tune_space = space.from_catalog(catalog.specs())
    known = trials.known_sets(tune_space, list(trials.KNOWN), "default", None, "tuned")
    assert known["default"]["httpd_server_limit"] == 16 and set(known) == set(trials.KNOWN)
    opts = options.checked(profile=load.named("lab", users=150, ramp_up_s=60, duration_s=180))
    check = trials.rules(opts, settings.load(), run.validate, "tuned", "default")
    refused = {name: check(values) for name, values in known.items()}
    assert refused == dict.fromkeys(known), refused


# -- the search ---------------------------------------------------------------------------------------------------

def trials_to_reach(kind: str, seed: int, budget: int = 60) -> int:
    """Runs until the tuner's best proven candidate is within 5 % of the optimum's true ratio (budget + 1: never); a
    leader's replicate counts as a run."""
    lab = standin.StandIn(space.parse(RAW, SPECS), OPTIMUM, infeasible=infeasible, seed=seed)
    top = lab.true_ratio(OPTIMUM)
    sampler = optuna.samplers.RandomSampler(seed=seed) if kind == "random" else None     # None: the lab's TPE
    t = tuner(f"{kind}-{seed}", sampler, seed=seed)
    for k in range(1, budget + 1):
        t.step(lab)
        best = t.best()
        if best is not None and lab.true_ratio(best.values) >= 0.95 * top:
            return k
    return budget + 1


def test_tpe_reaches_the_optimum_in_fewer_trials_than_random_search():
    """Over seeded repeats at one budget (60 runs, replicates included): TPE finds a candidate within 5 % of the
    optimum more often and sooner than random search (both printed; 2026-11-30: TPE 8 of 8, random 1 of 8)."""
    tpe = [trials_to_reach("tpe", s) for s in range(8)]
    rand = [trials_to_reach("random", s) for s in range(8)]
    print(f"runs to within 5 % of the optimum (61: not within 60): TPE {tpe}, random {rand}")
    assert sum(t <= 60 for t in tpe) > sum(r <= 60 for r in rand)
    assert sum(tpe) < sum(rand)


def test_every_run_is_inside_the_space_and_the_knob_rules():
    lab = standin.StandIn(space.parse(RAW, SPECS), OPTIMUM, infeasible=infeasible, seed=3)
    t = tuner("inside")
    for _ in range(25):
        t.step(lab)
    assert lab.runs and all(t.space.contains(values) and rule(values) is None for values, _ in lab.runs)
    refused = [r for r in t.results() if r.state == "refused"]
    assert all(rule(r.values) for r in refused), "what the rules refused is kept, with why, never run"
    assert {hold for _, hold in lab.runs} == {HOLD}
    told = {tr.number: tr for tr in t.study.get_trials()}
    assert refused and all(told[r.number].state == optuna.trial.TrialState.COMPLETE
                           and told[r.number].constraints == {"feasible": 1.0} for r in refused), \
        "a refused candidate is told to TPE as infeasible (it learns from it), not as a failure it ignores"
    assert set(t.importance()) <= set(RAW), "importances over the measured runs, of the space's knobs"


def test_the_leader_runs_again_with_the_roles_swapped_before_its_gain_counts():
    """Replication: a candidate's gain counts only over runs in both orientations; the leader gets its second run
    (the machines swapped) before anything new, and the twins' bias cancels in the combined ratio."""
    lab = standin.StandIn(space.parse(RAW, SPECS), OPTIMUM, seed=4, machine_bias=1.10)
    t = tuner("replicated", known={"expert": OPTIMUM})
    first = t.step(lab)
    assert first.known == "expert" and first.values == OPTIMUM and not first.outcome.swapped
    assert t.best() is None, "one run in one orientation: not yet a gain that counts"
    again = t.step(lab)
    assert again.replicate_of == first.number and again.outcome.swapped and again.values == OPTIMUM
    [best] = [c for c in t.candidates() if c.number == first.number]
    assert t.best() == best and best.orientations == 2 and len(best.runs) == 2
    truth = lab.true_ratio(OPTIMUM)
    assert first.outcome.ratio > truth * 1.05 and again.outcome.ratio < truth / 1.05, "each run carries the bias"
    assert abs(best.combined()[0] / truth - 1) < 0.03, "the crossover cancels it"
    assert t.step(lab).replicate_of is None, "a leader with both orientations: the next run is a new candidate"


def test_a_gain_inside_the_floor_is_never_an_improvement():
    """A stand-in where no candidate is really better than the control: whatever the noise makes of a candidate,
    none is called an improvement."""
    lab = standin.StandIn(space.parse(RAW, SPECS), OPTIMUM, gain=0.0, seed=5)
    t = tuner("flat", floor=0.05)
    for _ in range(30):
        t.step(lab)
    assert t.best() is None

    def candidate(*outcomes, between=0.0):
        return evidence.Candidate(0, {}, tuple(evidence.Result(i, {}, o, 540, "complete") for i, o in
                                             enumerate(outcomes)), between)
    run, swapped = evidence.Outcome(1.06, 1.04, 1.08), evidence.Outcome(1.06, 1.04, 1.08, swapped=True)
    assert not candidate(run, swapped).improves(0.05) and candidate(run, swapped).improves(0.03)
    assert not candidate(run, swapped, between=0.05).improves(0.03), "the between-run spread widens it"
    calibrated = evidence.Outcome(1.06, 1.04, 1.08, calibrated=True)
    assert candidate(calibrated, dataclasses.replace(calibrated, swapped=True), between=0.05).improves(0.03), \
        "an interval calibrated by A/A runs holds the between-run variance already: not added twice"
    assert not candidate(evidence.Outcome(1.3, 1.25, 1.35)).improves(0.0), "one run: not a gain that counts"
    assert not candidate(run, dataclasses.replace(run, settled=False, swapped=True)).improves(0.0), \
        "a run whose machines never settled measured a warm-up"
    broke = candidate(evidence.Outcome(1.3, 1.2, 1.4, violations=("errors 2 %",)),
                      evidence.Outcome(1.3, 1.2, 1.4, swapped=True))
    assert not broke.improves(0.0) and not broke.may_improve(0.0), "an infeasible candidate is no improvement"
    assert broke.combined()[0] == pytest.approx(1.3), "what it measured is still shown"


def test_a_warm_up_is_not_taken_for_a_gain():
    """The JIT's warm-up on the stand-in (the control settling slowly, a C1-only candidate quickly): at a hold where
    the machines have not settled the run says so and its gain does not count; at one where they have, the ratio is
    the steady state's."""
    quick = dict(warmup_s=120.0, quick_warmup=lambda v: 0.25 if v["gc"] == "serial" else 1.0)
    lab = standin.StandIn(space.parse(RAW, SPECS), OPTIMUM, gain=0.0, seed=6, **quick)
    values = {**OPTIMUM, "gc": "serial"}
    short = lab(values, 180)
    assert short.settled is False and short.ratio > 1.2, "measured in the warm-up: a C1-only start looks like a gain"
    long = lab(values, 900)
    assert long.settled and long.steady_from_s > 0 and abs(long.ratio - 1) < 0.05
    t = search.Tuner(space.parse(RAW, SPECS), "sqlite:///:memory:", "warming", 180, 0.03, known={"quick": values})
    t.step(standin.StandIn(space.parse(RAW, SPECS), OPTIMUM, gain=0.0, seed=6, **quick))
    [warming] = t.candidates()
    assert warming.combined()[0] > 1.2 and not warming.settled and t.best() is None
    assert t.next_replicate() is None, "nor is a warm-up's leader run again: it may not improve"


def test_the_known_sets_are_run_first_once_as_far_as_the_space_holds_them(tmp_path):
    from lab.experiment.tune import trials
    specs = catalog.specs()
    tune_space = space.parse({"tomcat_threads_max": {"low": 4, "high": 400, "log": True},
                              "app_backend_max_connections": {"low": 4, "high": 400, "log": True},
                              "jvm_heap_max_mb": [None, 128, 256], "httpd_proxy_protocol": ["http", "ajp"]}, specs)
    known = trials.known_sets(tune_space, ["default", "tuned", "article-2018", "nosuch"], "default")
    assert "default" not in known, "the base itself against itself as the control: no run"
    assert "default" in trials.known_sets(tune_space, ["default"], "default", control="tuned"), \
        "against another control the base itself is a candidate (the scenario's A/B)"
    assert known["tuned"] == {"tomcat_threads_max": 150, "app_backend_max_connections": 200, "jvm_heap_max_mb": None,
                              "httpd_proxy_protocol": "ajp"}, "an unset pool (its meaning '200') is 200 in a range"
    assert "jvm_heap_max_mb" not in known["article-2018"], "its 384 MB is outside the space: left to the sampler"
    storage = f"sqlite:///{tmp_path / 'study.sqlite'}"
    lab = standin.StandIn(tune_space, known["tuned"], seed=1)
    t = search.Tuner(tune_space, storage, "known", HOLD, 0.03, known=known)
    ran = [t.step(lab) for _ in range(3)]
    assert ran[0].known == "tuned" and ran[0].values == known["tuned"]
    assert ran[1].replicate_of == ran[0].number, "the leader first"
    assert ran[2].known == "article-2018" and all(ran[2].values[k] == v for k, v in known["article-2018"].items())
    search.Tuner(tune_space, storage, "known", HOLD, 0.03, known=known).step(lab)     # resumed: not enqueued again
    assert sum(r.known == "tuned" for r in search.Tuner(tune_space, storage, "known", HOLD, 0.03).results()) == 1
    # the rule refuses the article's values only, and the sampler is seeded: a random proposal of 300 threads
    # (1 in ~2,000) once made a second refusal (CI of e6e193f)
    article = known["article-2018"]
    refusing = search.Tuner(tune_space, "sqlite:///:memory:", "refusing", HOLD, 0.03, known=known, seed=1,
                            rules=lambda v: "needs ~522 MB" if all(v[k] == x for k, x in article.items()) else None)
    refusing.step(lab)
    refusing.step(lab)
    refusing.step(lab)
    [refused] = [r for r in refusing.results() if r.state == "refused"]
    assert refused.known == "article-2018" and refused.outcome.violations == ("needs ~522 MB",), \
        "a known set the rules refuse is named as that set in tune.json"


def test_an_infeasible_candidate_is_a_result_with_why(tmp_path):
    lab = standin.StandIn(space.parse(RAW, SPECS), OPTIMUM, infeasible=lambda v: "stopped answering", seed=1)
    t = tuner("dead")
    got = t.step(lab)
    assert got.state == "complete" and not got.outcome.feasible and got.outcome.violations == ("stopped answering",)
    assert t.best() is None and t.importance() == {}, "no measured run: nothing to explain"


def test_an_interrupted_study_resumes_where_it_stopped(tmp_path):
    storage = f"sqlite:///{tmp_path / 'study.sqlite'}"
    lab = standin.StandIn(space.parse(RAW, SPECS), OPTIMUM, infeasible=infeasible, seed=7)
    first = tuner("resumed", storage=storage)
    for _ in range(6):
        first.step(lab)
    done = [r.number for r in first.results()]
    again = tuner("resumed", storage=storage)           # a new process: the same study from its SQLite file
    assert [r.number for r in again.results()] == done
    again.step(lab)
    assert len(again.results()) > len(done) and [r.number for r in again.results()][:len(done)] == done
    with pytest.raises(search.TuneError, match="another space"):
        search.Tuner(space.parse({**RAW, "pool": {"low": 1, "high": 32, "log": True}}, SPECS), storage, "resumed",
                     HOLD, 0.03)


@pytest.mark.parametrize(("key", "theirs", "mine"), [
    ("load", {"users": 150, "duration_s": 1200}, {"users": 50, "duration_s": 1200}),
    ("service", "sample", "testapp"), ("objective", "tps", "p99"), ("constraints", ["errors<=0.1%"], []),
    ("control", "tuned", "catalog"), ("base", "default", "tuned"), ("between", 0.05, 0.03),
    ("until_settled_s", None, 240),
])
def test_a_worker_asking_another_question_of_a_shared_study_is_refused_naming_it(tmp_path, key, theirs, mine):
    """A shared or resumed study is one question: outcomes of another load, service, objective, constraint or
    control would mix in it (before: only the space and holds were compared)."""
    storage = f"sqlite:///{tmp_path / 'study.sqlite'}"
    question = {"load": {"users": 150, "duration_s": 1200}, "service": "sample", "objective": "tps",
                "constraints": ["errors<=0.1%"], "control": "tuned"}
    search.Tuner(space.parse(RAW, SPECS), storage, "shared", HOLD, 0.03, question={**question, key: theirs})
    search.Tuner(space.parse(RAW, SPECS), storage, "shared", HOLD, 0.03, question=question)   # the same: joins
    with pytest.raises(search.TuneError, match=f"begun with another {key.replace('_s', '')}: .*this worker: "):
        search.Tuner(space.parse(RAW, SPECS), storage, "shared", HOLD, 0.03, question={**question, key: mine})


# -- the command on a stand-in lab: its folder, tune.json, budget and resume --------------------------------------

def command_space():
    return space.parse({"tomcat_threads_max": {"low": 4, "high": 400, "log": True},
                        "jvm_gc": ["serial", "parallel", "g1"]}, catalog.specs())


def test_the_tune_command_keeps_its_study_and_trials_and_resumes(tmp_path, sets):
    """execute() on a stand-in lab (standin.Runs: each trial a run folder with a verdict.json): the candidate is the
    catalog and its values; the budget in trials' estimated time, the confirmations' share kept; an interruption
    kept; --resume goes on, confirms the finalist against default and tuned and writes its knob set."""
    import json

    from lab import paths
    from lab.experiment.tune import command, confirm
    from lab.provision import knob_sets
    tune_space = command_space()
    lab = standin.StandIn(tune_space, {"tomcat_threads_max": 10, "jvm_gc": "parallel"}, seed=2)
    runs = standin.Runs(lab, paths.RESULTS, [0.0], command.OVERHEAD_S["containers"], interrupt_at=5)
    out_of_the_box = Configuration(knob_sets.DEFAULT).knobs(options.checked().service)
    plan = command.Plan(tune_space, 180, 0.03, budget_s=6 * 3600)
    opts = options.checked(profile=load_profile())
    said = []
    code, folder = command.execute(opts, None, plan, runs, log=said.append, clock=lambda: runs.clock[0],
                                   judge=lambda run_dir: ())
    data = json.loads((folder / "tune.json").read_text())
    assert code == 130 and data["status"] == "interrupted" and len(data["trials"]) == 4 and not runs.series
    assert "tune: 2 knobs on the tuned side, from the default set, against the default set" in said[0]
    assert "then ~" in said[0] and any("run 1 of about" in line for line in said)
    assert "first: tuned (1 of 2 knobs); article-2018 (2 of 2 knobs)" in said[0], "tuned: the JVM's collector"
    for _, values in runs.ran:          # the candidate is the catalog and its values: nothing of the tuned set
        config = options.checked(overrides=[f"tuned:{k}={json.dumps(v)}" for k, v in values.items()])
        assert set(values) == set(tune_space.knobs) and config.configurations["tuned"].values == values
    resolved = opts.configurations["tuned"].knobs(opts.service)
    assert resolved["tomcat_threads_min_spare"] != out_of_the_box["tomcat_threads_min_spare"], "the tuned set differs"
    runs.interrupt_at = None
    plan = dataclasses.replace(plan, budget_s=7 * 3600)        # --resume FOLDER --budget 7h: the whole tune's
    code, again = command.execute(opts, None, plan, runs, resume_folder=folder, log=said.append,
                                  clock=lambda: runs.clock[0], judge=lambda run_dir: ())
    data = json.loads((folder / "tune.json").read_text())
    assert again == folder and code == 0 and data["status"] == "complete" and len(data["trials"]) > 5
    assert data["budget_s"] == 7 * 3600, "tune.json holds the budget the resumed tune ran to, not the first one's"
    assert schema.problems("tune.json", data) == [], "tune.json as the run folder's contract says"
    assert data["spent_s"] <= plan.budget_s, "a resumed tune goes on with what is left of its budget"
    assert [r["number"] for r in data["results"]] == sorted(r["number"] for r in data["results"])
    final = data["finalist"]
    assert runs.series == [("default", final["values"]), ("tuned", final["values"])], \
        "the finalist confirmed against the control, then the tuned set"
    assert [c["against"] for c in data["confirmations"]] == ["default", "tuned"]
    written = sets / f"{data['name']}.yml"
    assert data["knob_set"] == f"ansible/knob_sets/{written.name}" and written.is_file()
    assert knob_sets.values(data["name"], catalog.defaults()) == final["values"]
    assert f"tune {folder.name}" in written.read_text() and "--repeat 4 (crossover) vs default" in written.read_text()
    with pytest.raises(ValueError, match="is not this tune's"):
        confirm.check_name(data["name"], "20990101T000000Z-tune")


def test_a_finalist_that_is_the_tuned_set_is_not_confirmed_against_itself(tmp_path, sets, monkeypatch):
    """A tune --base tuned whose finalist is the tuned set itself would confirm it against tuned: four runs of an A/A.
    A finalist whose configuration is the tuned set's on the service, knob for knob, is confirmed against the control
    only, and tune.json, tune.md and the knob set say why; one a knob away is confirmed against both."""
    from lab import paths
    from lab.experiment.tune import command, confirm
    from lab.provision import knob_sets
    service = options.checked().service
    tuned = {k: v for k, v in knob_sets.values("tuned", catalog.defaults()).items() if k != "base"}
    assert confirm.itself(tuned, "default", service) == {
        "tuned": "the finalist is the tuned set's configuration on this service: not run against itself"}
    assert confirm.itself({**tuned, "tomcat_threads_max": tuned["tomcat_threads_max"] + 1}, "default", service) == {}
    assert confirm.itself(tuned, "tuned", service) == {}, "the tune's own control is always confirmed against"
    tune_space = command_space()
    runs = standin.Runs(standin.StandIn(tune_space, {"tomcat_threads_max": 10, "jvm_gc": "parallel"}, seed=2),
                        paths.RESULTS, [0.0], command.OVERHEAD_S["containers"])
    monkeypatch.setattr(confirm, "itself", lambda values, control, service, base: {"tuned": "it is the tuned set"})
    code, folder = command.execute(options.checked(profile=load_profile()), None,
                                   command.Plan(tune_space, 180, 0.03, budget_s=6 * 3600), runs,
                                   log=lambda line: None, clock=lambda: runs.clock[0], judge=lambda run_dir: ())
    data = json.loads((folder / "tune.json").read_text())
    assert code == 0 and [name for name, _ in runs.series] == ["default"] * len(data["confirmations"][0]["looks"])
    assert data["confirm_against"] == ["default"] and data["itself"] == {"tuned": "it is the tuned set"}
    assert schema.problems("tune.json", data) == []
    assert "# not confirmed against tuned: it is the tuned set" in (sets / f"{data['name']}.yml").read_text()
    from report.render import tune as tune_page
    assert "Not confirmed against tuned: it is the tuned set." in tune_page.render(data)


def test_an_until_settled_tune_budgets_by_the_runs_it_measured(tmp_path, sets):
    """--until-settled makes every hold a cap: the same runs, ending at a third of it, leave room for more runs and a
    smaller reserve for the confirmations than a budget planned on the cap (tune.json keeps the longest run for a
    resume)."""
    from lab import paths
    from lab.experiment.tune import command
    tune_space = command_space()
    plan = command.Plan(tune_space, 900, 0.03, budget_s=4 * 3600, race=False)     # --until-settled alone caps holds
    counts, said = {}, []
    for window in (None, 120):
        said.clear()                    # the last tune's lines are kept: the --until-settled one's
        runs = standin.Runs(standin.StandIn(tune_space, {"tomcat_threads_max": 10, "jvm_gc": "parallel"}, seed=2),
                            paths.RESULTS, [0.0], command.OVERHEAD_S["containers"])
        runs.overhead_s -= 600          # each run ends once settled, at a third of its cap
        opts = options.checked(profile=load.Profile(users=10, ramp_up_s=30, duration_s=1200),
                               until_settled_s=window, label=f"w{window or 'off'}")
        _, folder = command.execute(opts, None, dataclasses.replace(plan, name=f"until-{window or 'off'}"), runs,
                                    log=said.append, clock=lambda c=runs.clock: c[0], judge=lambda run_dir: ())
        data = json.loads((folder / "tune.json").read_text())
        counts[window] = len(data["trials"])
        assert data["spent_s"] <= plan.budget_s
    assert set(data["runs_s"]) == {plan.trial_s(30) - 600} and data["until_settled_s"] == 120
    assert counts[120] >= counts[None] + 5, counts
    told = [tuple(map(int, m.groups())) for m in (re.search(r"run (\d+) of about (\d+)", line) for line in said) if m]
    assert told and all(about >= k for k, about in told), "the estimate follows the runs as they last"


def test_a_tune_that_fails_says_so_in_its_tune_json(tmp_path, sets, monkeypatch):
    """Issue 53, item 7: the knob rules refusing every candidate (TuneError after MAX_REFUSED) leaves tune.json
    "failed" with the error's name and message, not "running"."""
    import json

    from lab import paths
    from lab.experiment.tune import command
    tune_space = command_space()
    runs = standin.Runs(standin.StandIn(tune_space, {"tomcat_threads_max": 10, "jvm_gc": "parallel"}, seed=2),
                        paths.RESULTS, [0.0], command.OVERHEAD_S["containers"])

    def refuse(o, s):
        raise ValueError("every value refused")
    monkeypatch.setattr(runs, "validate", refuse)
    monkeypatch.setattr(search, "MAX_REFUSED", 5)
    with pytest.raises(search.TuneError, match="refused 5 candidates in a row"):
        command.execute(options.checked(profile=load_profile()), None, command.Plan(tune_space, 180, 0.03,
                        budget_s=6 * 3600), runs, log=lambda line: None, clock=lambda: runs.clock[0])
    [folder] = [p for p in paths.RESULTS.iterdir() if p.name.endswith("-tune")]
    data = json.loads((folder / "tune.json").read_text())
    assert data["status"] == "failed" and data["error"].startswith("TuneError: the knob rules refused 5"), data
    assert data["ended"] is not None and schema.problems("tune.json", data) == []


def test_while_nothing_is_feasible_the_confirmations_share_goes_to_the_search(tmp_path, sets):
    """Before: a run started only with the confirmations' share left after it, even with nothing to confirm (the
    real tune of 20261130T111421Z stopped after 23 of 55 minutes). Now every candidate failing its constraint leaves
    the whole budget to the search; the first feasible one late in it is written unconfirmed, and said so."""
    import json

    from lab import paths
    from lab.experiment.tune import command
    tune_space = command_space()
    plan = command.Plan(tune_space, 180, 0.03, budget_s=2 * 3600)
    trial_s, reserve_s = plan.trial_s(30), plan.reserve_s(30)
    runs = standin.Runs(standin.StandIn(tune_space, {"tomcat_threads_max": 100, "jvm_gc": "parallel"}, seed=3,
                                        infeasible=lambda v: "errors 4 %"), paths.RESULTS, [0.0],
                        command.OVERHEAD_S["containers"])
    said = []
    _, folder = command.execute(options.checked(profile=load_profile()), None, plan, runs, log=said.append,
                                clock=lambda: runs.clock[0], judge=lambda run_dir: ())
    assert len(runs.ran) == plan.budget_s // trial_s > (plan.budget_s - reserve_s) // trial_s + 1, \
        "the whole budget searched"
    assert not runs.series and any("nothing to confirm" in line for line in said)
    late = {"n": 0}

    def feasible_last(values):
        late["n"] += 1
        return None if late["n"] >= plan.budget_s // trial_s else "errors 4 %"
    runs = standin.Runs(standin.StandIn(tune_space, {"tomcat_threads_max": 100, "jvm_gc": "parallel"}, seed=4,
                                        infeasible=feasible_last), paths.RESULTS, [0.0],
                        command.OVERHEAD_S["containers"])
    said = []
    _, folder = command.execute(options.checked(profile=load_profile(), label="late"), None, plan, runs,
                                log=said.append, clock=lambda: runs.clock[0], judge=lambda run_dir: ())
    data = json.loads((folder / "tune.json").read_text())
    assert not runs.series and data["finalist"] and data["confirmations"] == []
    assert any("no budget left to confirm" in line for line in said) and data["knob_set"]
    assert "NOT a confirmed gain" in (sets / f"{data['name']}.yml").read_text()


def _worker(root, storage: str, seed: int, budget_s: int) -> str:
    """One worker of a shared study on its own stand-in twins (a process of its own)."""
    from lab import paths
    from lab.experiment import reporting
    from lab.experiment.tune import command
    paths.RESULTS = root
    reporting.report_command = lambda *a, **k: 0
    tune_space = command_space()
    runs = standin.Runs(standin.StandIn(tune_space, {"tomcat_threads_max": 10, "jvm_gc": "parallel"}, seed=seed),
                        root, [0.0], command.OVERHEAD_S["containers"])
    plan = command.Plan(tune_space, 180, 0.03, budget_s=budget_s, study=storage)
    _, folder = command.execute(options.checked(profile=load_profile(), label=f"w{seed}"), None, plan, runs,
                                proves=False, log=lambda line: None, clock=lambda: runs.clock[0],
                                judge=lambda run_dir: ())
    return str(folder)


@pytest.fixture
def postgresql():
    """A real PostgreSQL server (the host's Debian package, ./test.sh installs it) started for the test in a folder
    of its own, reached on a Unix socket only (no TCP port), stopped and removed after; its URL."""
    import os
    import shutil
    import subprocess
    import tempfile
    found = sorted(Path("/usr/lib/postgresql").glob("*/bin/pg_ctl"))
    if not found:
        if os.environ.get("CI") == "true":
            pytest.fail("no PostgreSQL server here (Debian package postgresql: ./test.sh installs it)")
        pytest.skip("no PostgreSQL server here (Debian package postgresql)")
    bin_dir = found[-1].parent
    folder = Path(tempfile.mkdtemp(prefix="lab-pg-"))
    as_owner = []
    if os.geteuid() == 0:           # the server refuses root: it runs as the package's own account
        shutil.chown(folder, "postgres", "postgres")
        as_owner = ["runuser", "-u", "postgres", "--"]

    def run(*command):
        subprocess.run([*as_owner, *command], check=True, capture_output=True, timeout=120)

    run(str(bin_dir / "initdb"), "-D", str(folder / "data"), "-U", "lab", "--auth=trust", "--no-sync")
    run(str(bin_dir / "pg_ctl"), "-D", str(folder / "data"), "-l", str(folder / "server.log"), "-w", "start", "-o",
        f"-k {folder} -c listen_addresses='' -c fsync=off")
    try:
        run(str(bin_dir / "createdb"), "-h", str(folder), "-U", "lab", "tune")
        yield f"postgresql+psycopg2://lab@/tune?host={folder}"
    finally:
        run(str(bin_dir / "pg_ctl"), "-D", str(folder / "data"), "-m", "immediate", "-w", "stop")
        shutil.rmtree(folder, ignore_errors=True)


@pytest.mark.parametrize("server", ["sqlite", "postgresql"])
def test_two_workers_share_one_study(tmp_path, sets, server, request):
    """Two controllers' workers (processes) on one study through its storage: each runs its own trials in its own
    folder, the study holds both workers' trials once each, and each sees the other's. On SQLite (workers of one
    controller) and on a real PostgreSQL server (workers on several)."""
    import json
    import multiprocessing

    from lab.experiment.tune import search
    storage = (request.getfixturevalue("postgresql") if server == "postgresql"
               else f"sqlite:///{tmp_path / 'shared.sqlite'}")
    from lab.cli.commands import tune as tune_command
    assert tune_command.study_url(storage) == storage, "--study takes it (its driver is installed)"
    roots = [tmp_path / "one", tmp_path / "two"]
    with multiprocessing.get_context("fork").Pool(2) as pool:
        folders = pool.starmap(_worker, [(roots[0], storage, 1, 2 * 3600), (roots[1], storage, 2, 2 * 3600)])
    data = [json.loads((Path(f) / "tune.json").read_text()) for f in folders]
    study = search.Tuner(command_space(), storage, "tune", 180, 0.03).results()
    mine = [set(d["trials"]) for d in data]                     # the run folders each worker made
    assert all(mine) and not mine[0] & mine[1], "each worker ran trials of its own"
    held = [r.outcome.run for r in study if r.state != "refused"]     # each trial's run at its last hold
    assert set(held) <= mine[0] | mine[1] and held[0] and len(set(held)) == len(held), "the study holds their runs"
    assert set(held) & mine[0] and set(held) & mine[1], "both workers' trials are in the one study"
    assert len({r.number for r in study}) == len(study), "one study: each trial once"
    last = max(data, key=lambda d: d["ended"])
    seen = {r["outcome"]["run"] for r in last["results"]}
    assert seen & mine[0] and seen & mine[1], "the worker that ended last sees the other's trials too"
    assert all(d["study"] == storage for d in data)


def test_a_trials_verdict_is_the_objective_and_its_constraints_are_gates(tmp_path, monkeypatch):
    """outcome(): the paired ratio of the objective (p99 turned so that higher is better) and the --constraint gates
    the report judges on the verdict (a broken one names what it read); no verdict: infeasible with why."""
    import json

    from lab import paths
    from lab.experiment.tune import trials
    monkeypatch.setattr(paths, "RESULTS", tmp_path)     # a trial's folder is in results/, the report's to write
    run_dir = tmp_path / "20261128T000000Z-tune-t1"
    run_dir.mkdir()
    (run_dir / "verdict.json").write_text(json.dumps({"verdict": "x", "effects": {
        "tps": {"kind": "ratio", "default": 10, "tuned": 15, "estimate": 1.5, "low": 1.4, "high": 1.6},
        "p99": {"kind": "ratio", "default": 2000, "tuned": 1000, "estimate": 0.5, "low": 0.4, "high": 0.625,
                "tuned_ci": {"low": 900, "high": 1200}},
        "error_pct": {"kind": "difference", "default": 0.0, "tuned": 0.4, "estimate": 0.4, "low": 0.1,
                      "high": 0.7, "tuned_ci": {"low": 0.25, "high": 0.6}}}}))
    judge = trials.gate_judge(trials.CONSTRAINTS + ("p99<=2s",))
    got = trials.outcome(run_dir, 0, "tps", judge)
    assert (got.ratio, got.low, got.high) == (1.5, 1.4, 1.6) and not got.feasible
    assert got.violations == ("errors<=0.1%: tuned's error_pct 0.4 % (95 % CI 0.25 … 0.6 %): judged on the upper "
                              "bound",), \
        "the broken gate alone, with its reading (a level gate reads the level's interval: issue 52)"
    got = trials.outcome(run_dir, 0, "p99")
    assert (got.ratio, got.low, got.high) == (2.0, 1.6, 2.5) and got.feasible
    gone = tmp_path / "20261128T000000Z-tune-t2"
    gone.mkdir()
    assert trials.outcome(gone, 1).violations == ("no verdict (exit 1): see 20261128T000000Z-tune-t2",)


def load_profile():
    from lab.experiment import load
    return load.Profile(users=10, ramp_up_s=30, duration_s=60)


@pytest.mark.parametrize(("argv", "said"), [
    (["tune"], "tune: --budget TIME"),
    (["tune", "--budget", "2h", "--hold", "0"], "--hold 0: a positive length"),
    (["tune", "--budget", "2h", "--between", "2"], "--between 2.0: a fraction"),
    (["tune", "--budget", "2h", "--base", "nosuch"], "--base nosuch: not a knob set"),
    (["tune", "--budget", "2h", "--known", "nosuch"], "--known nosuch: not a knob set"),
    (["tune", "--budget", "2h", "--around", "nosuch"], "--around nosuch: not a knob set"),
    (["tune", "--budget", "2h", "--floor", "1.5"], "--floor 1.5: a fraction"),
    (["tune", "--budget", "20m"], "not even one run and its confirmations fit"),
    (["tune", "--budget", "2h", "--control", "nosuch"], "--control nosuch: not a knob set"),
    (["tune", "--budget", "2h", "--objective", "capacity"], "--objective capacity: one of tps, p99"),
    (["tune", "--budget", "2h", "--constraint", "errors<=1"], "gate 'errors<=1'"),
    (["tune", "--budget", "2h", "--study", "mysql://x"], "--study mysql://x: a storage URL"),
    (["tune", "--budget", "2h", "--study", "sqlite:////nowhere/at/all.sqlite"], "PATH's folder existing"),
    (["tune", "--budget", "2h", "--name", "Bad Name"], "--name 'Bad Name': 1–40 lower-case"),
    (["tune", "--budget", "2h", "--name", "tuned"], "--name tuned: ansible/knob_sets/tuned.yml exists"),
    (["tune", "--budget", "2h", "--space", "nowhere.yml"], "nowhere.yml: cannot be read"),
    (["tune", "--resume", "nowhere"], "--resume nowhere: not a tune folder"),
])
def test_a_tune_the_lab_cannot_run_is_refused_before_anything_starts(argv, said):
    from lab.cli import arguments
    from lab.cli.commands import tune as tune_command
    with pytest.raises(ValueError) as refused:
        tune_command.plan_of(arguments.parser().parse_args(argv))
    assert said in str(refused.value)


def test_a_sparse_stand_in_moves_only_with_its_relevant_knobs():
    """bench/tuner.py --relevant: where few knobs decide (a sampler has something to learn), the others change
    nothing; with all knobs relevant, any of them does."""
    tune_space = space.parse(RAW, SPECS)
    sparse = standin.StandIn(tune_space, OPTIMUM, relevant=frozenset({"threads", "heap"}))
    dense = standin.StandIn(tune_space, OPTIMUM)
    elsewhere = {**OPTIMUM, "workers": 400, "gc": "g1", "pool": 64}
    assert sparse.true_ratio(elsewhere) == sparse.true_ratio(OPTIMUM) == 1 + sparse.gain
    assert dense.true_ratio(elsewhere) < dense.true_ratio(OPTIMUM)
    assert sparse.true_ratio({**OPTIMUM, "threads": 400}) < 1 + sparse.gain


def test_the_budget_holds_each_run_with_its_ramp_up():
    """A 45-min tune with 3-min holds and a 60 s ramp-up passed a check that left the ramp-up out, ran one run and
    had no budget left to confirm it (results/20261201T224005Z-s73-tune-tune): refused now, naming what fits."""
    import dataclasses

    from lab.cli import arguments
    from lab.cli.commands import tune as tune_command
    args = arguments.parser().parse_args(["tune", "--budget", "45m", "--hold", "3m"])
    plan = tune_command.plan_of(args)
    plan = dataclasses.replace(plan, budget_s=plan.trial_s(0) + plan.reserve_s(0))     # without a ramp-up it fits
    with pytest.raises(ValueError) as refused:
        tune_command.check_budget(plan, plan.budget_s, ramp_up_s=60)
    whole = plan.trial_s(60) + plan.reserve_s(60)
    assert f"~{whole} s" in str(refused.value) and whole > plan.budget_s >= plan.trial_s(0) + plan.reserve_s(0)
    tune_command.check_budget(plan, whole, ramp_up_s=60)


def test_a_damaged_tune_folder_is_refused_naming_what_is_wrong(tmp_path):
    """Issue 53, item 7: a tune.json without its space (KeyError before), with a space entry of an unknown field
    (TypeError before) or not JSON is a message naming the file and the field."""
    from lab.cli import arguments
    from lab.cli.commands import tune as tune_command
    good = {"format_version": 3, "tune_id": tmp_path.name, "status": "interrupted", "started": "x", "ended": None,
            "budget_s": 7200, "floor": 0.03, "holds_s": [180], "objective": "tps", "constraints": [],
            "control": "default", "trials": [], "results": [], "best": None, "confirmations": [],
            "base": "default", "known": ["tuned"], "between": 0.05, "candidates": [],
            "space": [{"knob": "tomcat_threads_max", "kind": "int", "low": 4, "high": 400, "log": True}]}

    def refused(data) -> str:
        (tmp_path / "tune.json").write_text(data if isinstance(data, str) else json.dumps(data))
        with pytest.raises(ValueError) as e:
            tune_command.plan_of(arguments.parser().parse_args(["tune", "--resume", str(tmp_path)]))
        return str(e.value)

    assert "`space` is missing" in refused({k: v for k, v in good.items() if k != "space"})
    assert "`budget_s` is a string, not a number" in refused({**good, "budget_s": "2h"})
    assert "`status` is 'done', not one of" in refused({**good, "status": "done"})
    assert "space[0] is not a knob of a search" in refused({**good, "space": [{"knob": "x", "colour": "red"}]})
    assert "tune.json: not JSON" in refused("{")
    (tmp_path / "tune.json").write_text(json.dumps(good))
    assert tune_command.plan_of(arguments.parser().parse_args(["tune", "--resume", str(tmp_path)])).hold_s == 180
    assert "begun by the tuner of successive halving" in refused({**good, "format_version": 2})


@pytest.mark.parametrize("option", [["--repeat", "2"], ["--aa"], ["--knob-set", "tuned=article-2018"],
                                    ["--duration", "5m"], ["--gate", "tps>=+10%"]])
def test_run_options_a_tune_decides_itself_are_refused(option):
    from lab.cli import arguments
    problems = options.contradictions(arguments.parser().parse_args(["tune", "--budget", "2h", *option]))
    assert len(problems) == 1 and option[0] in problems[0]


def test_a_warmup_that_leaves_a_trial_nothing_to_measure_is_refused():
    from lab.cli import arguments
    from lab.cli.commands import tune as tune_command
    plan = tune_command.plan_of(arguments.parser().parse_args(["tune", "--budget", "3h", "--hold", "60"]))
    tune_command.check_warmup(options.checked(profile=load_profile(), warmup_s=60), plan)     # 30 s ramp + 60 s
    with pytest.raises(ValueError, match="--warmup 90 s: a run lasts 90 s"):
        tune_command.check_warmup(options.checked(profile=load_profile(), warmup_s=90), plan)
    long = options.checked(profile=load.Profile(users=10, ramp_up_s=30, duration_s=600), until_settled_s=120)
    with pytest.raises(ValueError, match=r"--until-settled 120 s: .* shorter than the hold \(60 s\), its cap"):
        tune_command.check_warmup(long, plan)          # a window longer than every trial's hold


def test_a_study_whose_tables_another_worker_is_making_is_opened_again(monkeypatch):
    """Two workers making a PostgreSQL study's tables at once get one of these (seen on a real server); the second
    opening finds the tables made."""
    import sqlalchemy

    create = optuna.create_study
    raced = [sqlalchemy.exc.ProgrammingError("CREATE TYPE", {}, Exception('type "alembic_version" already exists')),
             sqlalchemy.exc.IntegrityError("INSERT", {}, Exception("duplicate key value violates unique constraint"))]
    monkeypatch.setattr(search.time, "sleep", lambda s: None)

    def racing(**kw):
        if raced:
            raise raced.pop(0)
        return create(**kw)
    monkeypatch.setattr(optuna, "create_study", racing)
    assert tuner("raced").study.study_name == "raced" and raced == []


@pytest.mark.parametrize(("cut", "again"), [(30, True), (120, False)])
def test_a_trial_is_reported_again_from_its_steady_state_only_where_its_report_cut_earlier(tmp_path, monkeypatch,
                                                                                          cut, again):
    """A load --until-settled ended is reported from its steady state already (verdict.json method.warmup_s): a
    second report of it would only cost the tune its seconds."""
    from lab.experiment import reporting
    from lab.experiment.tune import trials
    asked = []
    monkeypatch.setattr(reporting, "report_command", lambda *a, **k: asked.append(a) or 0)
    (tmp_path / "verdict.json").write_text(json.dumps({
        "format_version": 6, "verdict": "v", "effects": {}, "method": {"warmup_s": cut},
        "steady": {m: {"settled": True, "start_s": 120.0} for m in ("default", "tuned")}}))
    trials.at_steady_state(tmp_path, 30, log=lambda line: None)
    assert bool(asked) is again and (not again or asked[0][2:] == ("--warmup", "auto"))


def test_a_search_run_leaves_jmeters_dashboards_for_later(tmp_path):
    """Issue 54 item 5: a search run is read for its verdict; its dashboards cost 7-26 s a petclinic run."""
    from lab.experiment.tune import trials
    asked = []

    def run_trial(o, t, s, label):
        asked.append(o.dashboards)
        return 2, tmp_path          # a failed run: nothing to read after it
    evaluate = trials.Evaluator(options.checked(profile=load_profile()), None, run_trial, "20261202T000000Z-tune")
    evaluate({}, 180)
    assert asked == [False] and options.Options().dashboards, "an ordinary run still makes them"
