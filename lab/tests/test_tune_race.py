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
    assert race.of(1.00, 0.05, 0.0, False).decided(precise) is None, "τ 0: a run's own error is all there is"


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
