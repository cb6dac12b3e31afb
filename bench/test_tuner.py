"""The honest stand-in (issue 86, item 3; lab/experiment/tune/standin.py, standin_shape.py, standin_stats.py and
bench/tuner.py --stand-in honest): its optimum is away from every known set, its true function has a flat top, a cliff
and infeasible regions, its between-run draws are heavy-tailed with a spread other than the tuner's assumed one, its
proofs carry the lab's few degrees of freedom, and its boundary null's best is exactly 1 + the floor."""
from __future__ import annotations

import json
import math
import random

import pytest

from bench import tuner as bench
from lab.experiment import options
from lab.experiment.load import Profile
from lab.experiment.tune import sequential, space, standin, standin_shape, trials
from lab.provision import catalog, knob_sets

SEEDS = range(16)


@pytest.fixture(scope="module")
def tune_space():
    return space.from_catalog(catalog.specs())


def honest(tune_space, seed: int, gain: float = bench.GAIN) -> standin.StandIn:
    return bench.lab(tune_space, seed, "containers", gain, relevant_k=3, preset="honest")


def value_at(p: space.Param, where: float):
    """The value at a position of p's range (standin.position's inverse)."""
    x = math.exp(math.log(p.low) + where * (math.log(p.high) - math.log(p.low))) if p.log else \
        p.low + where * (p.high - p.low)
    return round(x) if p.kind == "int" else x


def test_the_optimum_is_a_set_distance_from_every_known_set(tune_space):
    """Enqueuing the known sets first finds nothing by construction: each is at least KNOWN_DISTANCE (range positions,
    over the relevant knobs) from the optimum, the control among them."""
    known = trials.known_sets(tune_space, list(trials.KNOWN), knob_sets.DEFAULT)
    control = trials.known_sets(tune_space, [knob_sets.DEFAULT], knob_sets.DEFAULT, control="tuned")[
        knob_sets.DEFAULT]
    assert set(known) == {"tuned", "article-2018"}
    for seed in SEEDS:
        lab = honest(tune_space, seed)
        assert len(lab.relevant) == 3 and lab.control == control
        params = lab.params()
        for name, values in {**known, knob_sets.DEFAULT: control}.items():
            assert standin_shape.distance(params, lab.optimum, values) >= standin_shape.KNOWN_DISTANCE, (seed, name)
            assert lab.true_ratio(values) < 0.97 * lab.true_ratio(lab.optimum), (seed, name)
        assert lab.true_ratio(control) == pytest.approx(1.0), "the control as a candidate measures 1"
        assert lab.true_ratio(lab.optimum) == pytest.approx(1 + bench.GAIN)


def test_the_true_function_has_a_flat_top_and_a_cliff(tune_space):
    for seed in SEEDS:
        lab = honest(tune_space, seed)
        top = lab.true_ratio(lab.optimum)
        rng = random.Random(seed)
        for _ in range(20):             # within the radius of the optimum: as good as it, exactly
            near = dict(lab.optimum)
            for p in lab.params():
                if p.kind != "choice" and not p.needs:
                    where = standin_shape.position(p, near[p.knob]) + rng.uniform(-1, 1) * lab.radius / 4
                    near[p.knob] = value_at(p, min(1.0, max(0.0, where)))
            assert lab.true_ratio(near) == pytest.approx(top, abs=1e-12), seed
        p = lab.space_param(lab.cliff.knob)
        assert p.knob in standin_shape.CAPACITIES and p.knob in lab.relevant
        below, above = dict(lab.optimum), dict(lab.optimum)
        below[p.knob] = value_at(p, lab.cliff.threshold - 0.1)
        above[p.knob] = value_at(p, lab.cliff.threshold + lab.cliff.band + 0.01)
        assert lab.true_ratio(below) < 0.5 * lab.true_ratio(above), "a steep drop below the threshold"


def test_infeasible_regions_come_back_as_infeasible_outcomes(tmp_path, tune_space):
    lab = honest(tune_space, 3)
    heavy = {**lab.optimum, "jvm_heap_max_mb": 192, "tomcat_threads_max": 400}
    start = lab(heavy, 360)
    assert start.ratio is None and start.violations[0].startswith("does not start: memory"), start
    p = lab.space_param(lab.cliff.knob)
    erring = {**lab.optimum, p.knob: value_at(p, lab.cliff.threshold + lab.cliff.band / 2)}
    assert standin_shape.memory(erring) is None
    errs = lab(erring, 360)
    assert errs.ratio is not None and not errs.feasible and errs.violations[0].startswith("errors<=0.1%: ")
    assert abs(errs.ratio / lab.true_ratio(erring) - 1) < 0.5, "its throughput held: what it measured is shown"
    runs = standin.Runs(lab, tmp_path, [0.0], 90)
    folder = runs._folder("erring", errs)
    assert runs.judge(folder) == errs.violations, "the tune's judge reads the constraint it broke"
    assert runs.judge(runs._folder("heavy", start)) == start.violations


def test_between_run_draws_are_heavy_tailed_with_the_presets_spread(tune_space):
    sd, df, _ = bench.SPREAD["honest"]
    assert df and sd != trials.BETWEEN, "the tuner's assumed spread is not the true one"
    lab = honest(tune_space, 0)
    assert (lab.between_sd, lab.between_df) == (sd, df)
    rng = random.Random(7)
    x = [lab.draw(rng, lab.between_sd, lab.between_df) for _ in range(40000)]
    m = sum(x) / len(x)
    var = sum((v - m) ** 2 for v in x) / (len(x) - 1)
    kurtosis = sum((v - m) ** 4 for v in x) / len(x) / var ** 2 - 3
    assert abs(math.sqrt(var) / sd - 1) < 0.15 and kurtosis > 3, (math.sqrt(var), kurtosis)
    a, b = lab({}, 360, aa=True), lab({}, 360, aa=True)     # what an A/A run carries: its own draw, not 5 %
    assert a.ratio != b.ratio


def test_a_combined_series_has_the_labs_few_df_and_a_wider_interval_than_z(tmp_path, tune_space):
    """A confirmation's block of 4 (2 per orientation) combined as report/stats/combine.py: Hartung–Knapp's t at
    k − 2 df (+ k_AA − 1 pooled with the A/A runs), written into verdict.json where sequential.relevelled reads it."""
    lab = honest(tune_space, 5)
    runs = standin.Runs(lab, tmp_path, [0.0], 90)
    opts = options.checked(profile=Profile(users=20, ramp_up_s=20, duration_s=360))
    one = lab(lab.optimum, 360)
    # its steady windows (from 50 s of 360: the warm-up, 2.3 T of 25 s), 31 of them, independent on containers (ρ 0,
    # as measured): df 30
    assert lab.dfs[one.run] == 30
    for aa_runs in (0, 2):
        if aa_runs:
            from lab.experiment.tune import aa
            runs.run_series(aa.block(opts, knob_sets.DEFAULT, 360, "aa", aa_runs), None)
        o = trials.options(opts, lab.optimum, 360, f"c{aa_runs}", knob_sets.DEFAULT, repeat=4)
        _, folder = runs.run_series(o, None)
        tps = json.loads((folder / "verdict.json").read_text())["effects"]["tps"]
        assert tps["df"] == 2 + (aa_runs - 1 if aa_runs else 0), tps
        z = standin.combined(runs.blocks[folder.name])      # the stand-in before: DerSimonian–Laird and 1.96
        assert math.log(tps["high"] / tps["low"]) > math.log(z.high / z.low), (tps, z)
        assert sequential.relevelled(tps, 0.99) is not None
    calibrated = json.loads(runs._folder("one", lab(lab.optimum, 360)).joinpath("verdict.json").read_text())
    tps = calibrated["effects"]["tps"]
    assert tps["intervals"].startswith("calibrated") and tps["df"] < 12, "Satterthwaite's df of se² and τ₀² (2 df)"


def test_the_boundary_nulls_best_is_exactly_one_plus_the_floor(tune_space):
    gain, floor = bench.NULLS["boundary"]
    assert gain == floor == bench.FLOOR and bench.NULLS["floor-0"] == (0.0, 0.0) and bench.NULLS["flat"][0] == 0
    rng = random.Random(1)
    for seed in range(4):
        lab = honest(tune_space, 1000 + seed, gain)
        assert lab.true_ratio(lab.optimum) == pytest.approx(1 + floor, abs=1e-12)
        best = max(lab.true_ratio(standin_shape.draw_point(tune_space, rng)) for _ in range(300))
        assert best <= 1 + floor + 1e-12
        flat = honest(tune_space, 1000 + seed, 0.0)
        assert max(flat.true_ratio(standin_shape.draw_point(tune_space, rng)) for _ in range(300)) <= 1 + 1e-12
