"""A search run raced (issue 86, item 1: lab/experiment/tune/race.py): its hold ends once its paired windows at
steady state say it cannot beat the bar, or have measured what one run can; not before, and not otherwise."""
from __future__ import annotations

import math
import random

import pytest

from lab.experiment.load import settle
from lab.experiment.load.jtl import JtlTail
from lab.experiment.tune import race
from lab.tests.test_settle import warming, write_jtl


def windows(ratio: float, sd: float, n: int, seed: int = 1, rho: float = 0.6) -> list[float]:
    """n paired windows around a true ratio, with AR(1) noise of sd (the lab's 10 s windows are autocorrelated)."""
    rng, e, out = random.Random(seed), 0.0, []
    for _ in range(n):
        e = rho * e + math.sqrt(1 - rho * rho) * rng.gauss(0, sd)
        out.append(ratio * math.exp(e))
    return out


def test_a_clearly_worse_candidate_ends_its_hold_and_a_close_one_does_not():
    against_leader = race.of(leader_low=1.10, floor=0.05, tau=0.05, swapped=False)
    assert against_leader.bar == 1.10
    assert "cannot beat 1.100" in against_leader.decided(windows(0.70, 0.05, 12))
    assert against_leader.decided(windows(1.05, 0.08, 12)) is None, "it may still beat the leader with its own draw"
    assert race.of(None, 0.05, 0.05, False).bar == pytest.approx(0.95), "no leader: the bar is 1 − floor"


def test_no_verdict_on_less_than_a_minute_of_steady_state():
    assert race.of(1.1, 0.05, 0.05, False).decided(windows(0.3, 0.01, race.MIN_WINDOWS - 1)) is None


def test_a_run_whose_own_error_is_far_below_the_between_run_spread_has_said_what_it_can():
    precise = windows(1.02, 0.004, 20, rho=0.0)
    said = race.of(1.00, 0.05, 0.05, False).decided(precise)
    assert said is not None and said.startswith("measured")
    assert race.of(1.00, 0.0, 0.0, False).decided(precise) is None, "τ and floor 0: a run's own error is all there is"


def test_a_run_finer_than_the_floors_scale_has_said_what_it_can_where_tau_is_small():
    """A τ measured near 0 (the A/A block of 20261207T105842Z-racecheck-tune: 0, taken as 1 %) held every run to its cap
    on containers' 4 % windows: under a third of 1 % takes ~180 windows. No decision at a 5 % floor needs that."""
    containers = windows(1.02, 0.044, 12, rho=0.0, seed=3)
    said = race.of(1.00, 0.05, 0.01, False).decided(containers)
    assert said is not None and said.startswith("measured") and "floor 5%" in said
    assert race.of(1.00, 0.0, 0.01, False).decided(containers) is None, "floor 0: τ alone is the scale"
    assert race.measuring(0.01, 0.05).decided(containers) is not None


def test_the_candidate_on_machine_default_is_judged_by_the_inverse_ratio():
    """Swapped, the windows (tuned ÷ default) are control ÷ candidate: a candidate at 0.7 shows 1.43."""
    shown = windows(1 / 0.70, 0.05, 12)
    assert race.of(1.10, 0.05, 0.05, True).decided(shown) is not None
    assert race.of(1.10, 0.05, 0.05, False).decided(shown) is None


def test_the_paired_windows_start_where_the_later_machine_settled(tmp_path):
    jtls = {"default": tmp_path / "default.jtl", "tuned": tmp_path / "tuned.jtl"}
    write_jtl(jtls["default"], warming, 400)
    write_jtl(jtls["tuned"], lambda s: 10, 400)
    tails = {m: JtlTail(p, keep_starts=True) for m, p in jtls.items()}
    steady = settle.settled(tails, 60)
    got = settle.paired(tails, steady)
    first = int(max(steady.at_s.values()) // 10)
    assert first >= 6 and len(got) == 39 - first, "whole 10 s bins from the later machine's steady start"
    assert all(r == pytest.approx(0.5) for r in got[12 - first:]), "tuned 10 req/s against default's 20 from 120 s"


def test_a_raced_tune_runs_more_candidates_in_its_budget(sets):
    """The stand-in's clearly worse candidates end their holds early: the same budget holds more runs."""
    from lab import paths
    from lab.experiment import load, options
    from lab.experiment.tune import command, space, standin
    from lab.provision import catalog
    tune_space = space.parse({"tomcat_threads_max": {"low": 4, "high": 400, "log": True},
                              "jvm_gc": ["serial", "parallel", "g1"]}, catalog.specs())
    ran = {}
    for raced in (False, True):
        lab = standin.StandIn(tune_space, {"tomcat_threads_max": 300, "jvm_gc": "g1"}, gain=0.6, width=0.15, seed=7,
                              noise_sd=0.03)
        runs = standin.Runs(lab, paths.RESULTS, [0.0], command.OVERHEAD_S["containers"])
        plan = command.Plan(tune_space, 360, 0.05, budget_s=3 * 3600, race=raced, aa_runs=0,
                            name=f"race-{raced}".lower())
        command.execute(options.checked(profile=load.Profile(users=10, ramp_up_s=20, duration_s=360),
                                        label=f"race-{raced}"), None, plan, runs, log=lambda line: None,
                        clock=lambda r=runs: r.clock[0], judge=lambda run_dir: ())
        ran[raced] = len(runs.ran)
    assert ran[True] >= ran[False] * 1.3, ran       # 37 runs raced, 14 whole (2026-12-07)


def test_a_confirmations_run_ends_on_its_precision_never_on_its_value():
    """A confirmation's runs race on their precision alone (race.measuring): a finalist far under every bar still
    holds until its own error is under τ / PRECISE, so that when a run stops never depends on what it measured."""
    worse = windows(0.30, 0.004, 20, rho=0.0)
    measuring = race.measuring(0.05)
    said = measuring.decided(worse)
    assert said is not None and said.startswith("measured") and not race.on_value(said)
    assert race.measuring(0.0).decided(worse) is None, "τ 0: nothing ends it but its cap"
    assert race.on_value(race.of(1.10, 0.05, 0.05, False).decided(windows(0.70, 0.05, 12)))
    assert "never on its value" in measuring.said()


def test_the_confirmations_reserve_expects_a_run_that_measures_its_own_precision():
    """Raced, a confirmation's run is expected to last as the search's runs that measured theirs (those ended on their
    value counted at their cap), and never longer than its cap; held whole, as a search run."""
    import dataclasses

    from lab.experiment.tune.plan import Plan
    from lab.tests.test_tune import command_space
    plan = Plan(command_space(), 360, 0.05, budget_s=7200)
    cap = plan.cap_s(20)
    assert plan.confirm_s(20) == cap, "before any run: its cap"
    assert dataclasses.replace(plan, measuring_s=200, ran_s=120).confirm_s(20) == 200
    assert dataclasses.replace(plan, measuring_s=10 * cap).confirm_s(20) == cap
    assert dataclasses.replace(plan, race=False, ran_s=150).confirm_s(20) == 150


def test_a_raced_tune_confirms_on_precision_and_budgets_its_confirmations_by_the_runs_that_measured(sets):
    """On the stand-in: every confirmation's run carries the precision-only race, and tune.json's measuring_s holds each
    search run as long as it took, or at its cap where its value ended it."""
    import dataclasses
    import json

    from lab import paths
    from lab.experiment import load, options
    from lab.experiment.tune import command, standin
    from lab.tests.test_tune import command_space
    from runfolder import read_json
    tune_space = command_space()
    lab = standin.StandIn(tune_space, {"tomcat_threads_max": 100, "jvm_gc": "parallel"}, seed=5, gain=0.3,
                          noise_sd=0.04, rho=0.0, between_sd=0.05, warmup_s=25)
    runs = standin.Runs(lab, paths.RESULTS, [0.0], command.OVERHEAD_S["containers"])
    seen = []
    series = runs.run_series
    runs.run_series = lambda o, s: (seen.append(o.race), series(o, s))[1]
    plan = command.Plan(tune_space, 360, 0.05, budget_s=2 * 3600, aa_runs=0)
    opts = options.checked(profile=load.Profile(users=10, ramp_up_s=20, duration_s=360), label="raced")
    _, folder = command.execute(opts, None, dataclasses.replace(plan, name="raced"), runs, log=lambda line: None,
                                clock=lambda: runs.clock[0], judge=lambda run_dir: ())
    data = json.loads((folder / "tune.json").read_text())
    assert seen and all(r is not None and not r.on_value for r in seen), "confirmations race on precision alone"
    ended = [race.ended(read_json(paths.RESULTS / name / "run.json") or {}) for name in data["trials"]]
    assert any(race.on_value(e) for e in ended), "a worse candidate ended on its value (the stand-in's seed 5)"
    for took, measured, why in zip(data["runs_s"], data["measuring_s"], ended, strict=True):
        assert measured == (plan.cap_s(20) if race.on_value(why) else took)
