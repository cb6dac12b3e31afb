"""The verdict's intervals on synthetic, autocorrelated paired runs with a known truth (tests/synthetic.py):
coverage over many seeded runs, the verdict's words, and the crossover combination removing a machine bias."""
import math

import numpy as np
import pytest
from scipy import stats

from report.stats.blocks import block_length
from report.stats.combine import combine
from report.stats.uncertainty import analyse, min_successes
from report.stats.windows import paired_windows

from .synthetic import as_trial, paired_samples

TRIALS = 150          # seeded runs per scenario
RESAMPLES = 500       # per run (reports use 2,000): enough for the interval's σ, 4× faster
SECONDS = 300
MIN_COVERAGE = 0.89   # the issue asks ~90 %: measured 0.91–0.96 with these seeds


def analysis_of(seed, **truth):
    sides = paired_samples(seed, seconds=SECONDS, **truth)
    t0 = sides["default"].start[0]
    return analyse(paired_windows(sides, t0, t0 + SECONDS), resamples=RESAMPLES, seed=seed, levels_too=False)


SCENARIOS = {
    "no effect": dict(effect=1.0),
    "+10 % TPS, latency −20 %, errors 2 → 5 %": dict(effect=1.1, latency_factor=0.8, error_tuned=0.05),
    "+50 % TPS, latency +20 %, no errors": dict(effect=1.5, latency_factor=1.2, error_default=0.0, error_tuned=0.0),
    "machine bias +20 %, no configuration effect": dict(effect=1.0, bias=1.2),
}


def truth_of(p):
    ratio = p.get("effect", 1.0) * p.get("bias", 1.0)
    latency = p.get("latency_factor", 1.0)
    errors = 100.0 * (p.get("error_tuned", 0.02) - p.get("error_default", 0.02))
    return {"tps": ratio, "error_pct": errors, "p50": latency, "p95": latency, "p99": latency}


@pytest.fixture(scope="module", params=list(SCENARIOS), ids=list(SCENARIOS))
def scenario(request):
    params = SCENARIOS[request.param]
    return params, [analysis_of(seed, **params) for seed in range(TRIALS)]


@pytest.mark.parametrize("figure", ["tps", "error_pct", "p50", "p95", "p99"])
def test_the_95_interval_covers_the_truth_at_least_90_percent(scenario, figure):
    params, analyses = scenario
    truth = truth_of(params)[figure]
    with_interval = [a.effects[figure] for a in analyses if a.effects[figure].has_interval]
    assert len(with_interval) >= 0.95 * TRIALS
    if figure == "error_pct" and params.get("error_default") == 0.0:
        assert all(e.low == e.high == 0.0 for e in with_interval)   # no errors anywhere: exactly none
        return
    covered = sum(e.low <= truth <= e.high for e in with_interval) / len(with_interval)
    assert covered >= MIN_COVERAGE, f"{figure}: {covered:.2%} of {len(with_interval)} intervals cover {truth}"


def test_the_verdict_words_follow_the_interval(scenario):
    params, analyses = scenario
    tps = [a.effects["tps"] for a in analyses]
    detected = sum(e.detectable for e in tps) / len(tps)
    if truth_of(params)["tps"] == 1.0:
        assert detected <= 0.11           # "no difference detectable" in ~95 % of A/A-like runs
    elif truth_of(params)["tps"] >= 1.2:
        # a +20 % (bias) or +50 % effect is seen: 87 % of these 5-minute runs see +20 % with intervals that cover
        # 94–97 % (92 % did while TPS's covered 91–92.5 %: report/README.md, A single run's intervals)
        assert detected >= 0.85
        assert all(e.estimate > 1.0 for e in tps if e.detectable)


def test_a_single_run_attributes_a_machine_bias_to_the_configuration():
    """Why crossover exists: one run with a +20 % machine bias reports ~+20 % for an unchanged config."""
    estimates = [analysis_of(seed, effect=1.0, bias=1.2).effects["tps"].estimate for seed in range(20)]
    assert 1.12 < float(np.median(estimates)) < 1.28


def _trial(seed, swapped, effect, bias):
    """A trial as LoadedRun: swapped means the tuned config ran on the slower/faster machine default."""
    return as_trial(f"trial-{seed}", swapped, analysis_of(seed, effect=effect, bias=(1.0 / bias) if swapped else bias))


@pytest.mark.parametrize("effect", [1.0, 1.1])
def test_crossover_removes_a_planted_machine_bias(effect):
    bias = 1.2
    covered = 0
    biases = []
    pairs = 40
    for k in range(pairs):
        trials = [_trial(1000 + 2 * k, False, effect, bias), _trial(1001 + 2 * k, True, effect, bias)]
        c = combine(trials)["tps"]
        covered += c.effect.low <= effect <= c.effect.high
        biases.append(c.bias.estimate)
        # each trial alone is off by the bias, in opposite directions
    assert covered / pairs >= MIN_COVERAGE
    assert 1.15 < float(np.median(biases)) < 1.25        # the bias is measured, not hidden


def test_trials_that_disagree_are_flagged():
    """Four trials, two per orientation, one pair 30 % off the others: Cochran's Q says so."""
    trials = [_trial(2000, False, 1.0, 1.0), _trial(2001, True, 1.0, 1.0),
              _trial(2002, False, 1.3, 1.0), _trial(2003, True, 1.0, 1.0)]
    c = combine(trials)["tps"]
    assert c.q_df == 2 and c.q_p < 0.05
    agree = combine([_trial(3000 + i, i % 2 == 1, 1.1, 1.2) for i in range(4)])["tps"]
    assert agree.q_df == 2 and agree.q_p >= 0.05


def test_latency_percentiles_need_enough_successes():
    assert (min_successes(50), min_successes(95), min_successes(99)) == (20, 200, 1000)
    sides = paired_samples(7, seconds=60, rate=5.0)    # ~300 successes per machine: p99 not quoted
    t0 = sides["default"].start[0]
    a = analyse(paired_windows(sides, t0, t0 + 60), resamples=200)
    assert a.effects["p95"].has_interval and not a.effects["p99"].has_interval
    assert "≥ 1,000 successful requests" in a.effects["p99"].why_not


def test_too_few_windows_give_no_interval():
    sides = paired_samples(3, seconds=8)
    t0 = sides["default"].start[0]
    a = analyse(paired_windows(sides, t0, t0 + 8), resamples=200)
    assert not a.effects["tps"].has_interval and "paired windows" in a.effects["tps"].why_not
    assert not math.isnan(a.effects["tps"].estimate)


def test_block_length_grows_with_autocorrelation():
    def block(phi):
        sides = paired_samples(11, seconds=600, phi=phi, own_sigma=0.3, common_sigma=0.3)
        t0 = sides["default"].start[0]
        return block_length(paired_windows(sides, t0, t0 + 600))
    assert block(0.0) < block(0.95)


def test_an_error_burst_lengthens_the_blocks_of_the_figures_it_moves():
    """A 30 s burst of failures on one machine is a long excursion in the errors' paired series and in successful
    TPS's (tuned served no successes for 30 s): both groups' blocks lengthen (issue 52: the blocks follow the
    paired statistic's own series); the latency of the successes it did not touch keeps its length."""
    sides = paired_samples(13, seconds=300)
    t0 = sides["default"].start[0]
    before = analyse(paired_windows(sides, t0, t0 + 300), resamples=200)
    start = sides["tuned"].start
    sides["tuned"].ok[(start > start[0] + 100) & (start < start[0] + 130)] = False
    after = analyse(paired_windows(sides, t0, t0 + 300), resamples=200)
    assert after.blocks["errors"] >= 4 * before.blocks["errors"] and after.blocks["tps"] > 2 * before.blocks["tps"]
    assert after.blocks["latency"] == before.blocks["latency"]


def _half_width_and_block(seed, **shared):
    sides = paired_samples(seed, seconds=160, **shared)
    t0 = max(s.start[0] for s in sides.values())
    a = analyse(paired_windows(sides, t0, t0 + 159), resamples=RESAMPLES, seed=seed)
    e = a.effects["tps"]
    return math.log(e.high / e.low) / 2, a.block("tps")


@pytest.mark.parametrize("shared", [dict(warmup_s=90.0, warmup_depth=0.8), dict(drift=1.0)],
                         ids=["warm-up", "drift"])
def test_what_both_machines_share_does_not_widen_the_interval(shared):
    """The block length comes from the paired statistic's own series: a warm-up or a drift that both machines
    share cancels in the ratio, so it must neither lengthen the blocks nor widen the interval (issue 52: blocks from
    each machine's own series grew to n/3 under a shared trend, and the half-width doubled)."""
    seeds = range(12)
    plain = [_half_width_and_block(seed) for seed in seeds]
    trend = [_half_width_and_block(seed, **shared) for seed in seeds]
    width_ratio = np.median([t[0] / p[0] for t, p in zip(trend, plain, strict=True)])
    assert width_ratio < 1.2, f"shared {shared}: half-width ×{width_ratio:.2f}"
    assert np.median([t[1] for t in trend]) <= 1.3 * np.median([p[1] for p in plain])


def test_no_difference_says_the_smallest_difference_it_could_have_detected():
    """Issue 52: 'no difference' reads 'none larger than ±x %': (t₀.₉₇₅ + t₀.₈₀)·se, the difference the interval
    finds with 80 % power; runs whose true effect is that large find it about 80 % of the time."""
    from report.render.verdict import _tps_words
    e = analysis_of(1, effect=1.0).effects["tps"]
    se = math.log(e.high / e.low) / 2 / stats.t.ppf(0.975, e.df)
    assert e.min_detectable == pytest.approx(math.exp((stats.t.ppf(0.975, e.df) + stats.t.ppf(0.8, e.df)) * se))
    if not e.detectable:
        assert f"none larger than ±{100 * (e.min_detectable - 1):.0f} % at 80 % power" in _tps_words(e, "tuned")
    sizes = [analysis_of(seed, effect=1.0).effects["tps"].min_detectable for seed in range(20)]
    size = float(np.median(sizes))
    found = [analysis_of(100 + seed, effect=size).effects["tps"].detectable for seed in range(50)]
    assert 0.65 <= np.mean(found) <= 0.95, f"an effect of {size:.3f} found in {np.mean(found):.0%} of runs"


def test_the_tuned_error_level_has_wilsons_interval_on_the_effective_requests():
    """Issue 52: 0 failures in 2,000 requests do not show a rate ≤ 0.1 % (Wilson's upper bound 0.19 %), where every
    bootstrap resample would say exactly 0; bursts (a bootstrap variance above the binomial one) count the requests
    less and widen it; a run's analysis carries it as tuned_low … tuned_high."""
    from report.stats.uncertainty import error_level_interval
    low, high = error_level_interval(0, 2000, np.zeros(500))
    z2 = 1.959964 ** 2
    assert low == pytest.approx(0, abs=1e-12) and high == pytest.approx(100 * z2 / (2000 + z2), rel=1e-6)
    calm = error_level_interval(20, 2000, np.full(500, 1.0))
    rng = np.random.default_rng(3)
    bursty = error_level_interval(20, 2000, rng.normal(1.0, 0.6, 500))     # σ 0.6 pt against a binomial 0.22
    assert bursty[0] < calm[0] < 1.0 < calm[1] < bursty[1]
    sides = paired_samples(4, seconds=120, error_tuned=0.01)
    t0 = sides["default"].start[0]
    e = analyse(paired_windows(sides, t0, t0 + 120), resamples=200).effects["error_pct"]
    assert e.tuned_low < e.tuned < e.tuned_high
