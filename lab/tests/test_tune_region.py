"""A trust region (lab/experiment/tune/region.py, `./start.sh tune --around SET`): each numeric range narrowed around
the set's value on its grid, lists kept, the define-by-run rules still holding in every proposal, and the command
line's refusals."""
from __future__ import annotations

import math

import optuna
import pytest

from lab.experiment.tune import region, space, trials
from lab.provision import catalog, knob_sets
from lab.provision.configuration import Configuration

TUNED = {**catalog.defaults(), **knob_sets.values("tuned")}


def test_each_range_keeps_a_quarter_of_its_span_each_way_of_the_sets_value():
    whole = space.from_catalog(catalog.specs())
    narrowed = region.around(whole, TUNED, "tuned")
    assert narrowed.knobs == whole.knobs, "the same knobs, in the same order"
    by_knob = {p.knob: p for p in whole.params}
    changed = 0
    for q in narrowed.params:
        p, value = by_knob[q.knob], TUNED.get(q.knob)
        if p.kind == "choice":
            assert q == p, "a list of values stays whole"
            continue
        value = trials.as_searched(p, value, catalog.specs()[q.knob])
        assert value is not None, f"{q.knob}: every numeric knob of tuned has a number to narrow around"
        assert p.low <= q.low <= value <= q.high <= p.high, q
        span = math.log(p.high / p.low) if p.log else p.high - p.low
        reach = [math.log(value / q.low), math.log(q.high / value)] if p.log else [value - q.low, q.high - value]
        bounded = bool(p.at_most or p.at_least)     # widened again where its bounds could leave it empty
        assert bounded or all(r <= region.SHARE * span + (math.log(2) if p.log else 1) for r in reach), q
        changed += (q.low, q.high) != (p.low, p.high)
    assert changed >= 7, "the tuned set's numbers all narrow their ranges"
    pool = next(q for q in narrowed.params if q.knob == "app_backend_max_connections")
    assert 4 < pool.low < 200 < pool.high, "unset: the catalog's meaning, a pool of 200, as the tuner searches it"


@pytest.mark.parametrize("sampler", ["random", "tpe"])
def test_every_proposal_of_a_region_keeps_the_rules_and_its_ranges(sampler):
    narrowed = region.around(space.from_catalog(catalog.specs()), TUNED, "tuned")
    study = optuna.create_study(direction="maximize", sampler=optuna.samplers.RandomSampler(seed=4)
                                if sampler == "random" else optuna.samplers.TPESampler(seed=4, n_startup_trials=5))
    for _ in range(200):
        trial = study.ask()
        v = narrowed.suggest(trial)
        assert narrowed.contains(v), v
        assert v["httpd_max_request_workers"] <= v["httpd_server_limit"] * v["httpd_threads_per_child"], v
        assert v["httpd_min_spare_threads"] <= v["httpd_max_spare_threads"] <= v["httpd_max_request_workers"], v
        assert 75 <= v["tomcat_threads_max"] <= 300, "within ×/÷ 2 of tuned's 150"
        study.tell(trial, v["tomcat_threads_max"] / 100)
    assert narrowed.contains(trials.known_sets(narrowed, ["tuned"], "default")["tuned"]), "tuned itself inside"
    assert Configuration("tuned").knobs(None)["httpd_max_request_workers"] == 150


def test_a_grid_an_unset_value_and_a_value_outside_the_range():
    specs = {"heap": {"type": "int", "range": [32, 8192], "unset": "ergonomics"},
             "limit": {"type": "int", "range": [1, 64], "unset": "16"}, "rate": {"type": "num", "range": [0, 10]}}
    got = space.parse({"heap": {"low": 64, "high": 320, "step": 16}, "limit": {"low": 2, "high": 16, "unset": 16},
                       "rate": {"low": 1.0, "high": 9.0}}, specs)
    narrowed = {p.knob: p for p in region.around(got, {"heap": 200, "limit": None, "rate": 20.0}, "x").params}
    heap = narrowed["heap"]
    assert (heap.low - 64) % 16 == 0 and (heap.high - 64) % 16 == 0 and heap.low < 200 < heap.high
    assert heap.low >= 200 - 0.25 * 256 - 16 and heap.high <= 200 + 0.25 * 256 + 16
    assert narrowed["limit"].low == 12 and narrowed["limit"].high == 16 and narrowed["limit"].unset == 16, \
        "a set that leaves it unset: around what its range says unset stands for"
    assert (narrowed["rate"].low, narrowed["rate"].high) == (1.0, 9.0), "a value the range does not hold: kept whole"
