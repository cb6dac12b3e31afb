"""Issue 52: a series' interval covers the configurations' effect 93–97 % of the time whatever the run-to-run
variance, with its own τ² (a series of 4), with the matching A/A runs' (one trial per orientation) or both pooled.

The trials here are drawn from the model the combination assumes (report/README.md, Crossover), so that thousands
of series take seconds: trial i measures L_i = δ + s_i·b + u_i + e_i on the log TPS scale, u_i ~ N(0, τ²) its JVMs'
draw, e_i ~ N(0, σ²) its within-run noise, whose bootstrap replicates have a spread known only to the trial's own
degrees of freedom (σ·√(χ²_df / df)); an A/A trial measures b + u + e. The coverage of the whole pipeline on the
synthetic runs (bootstrap and all) is bench/coverage.py's: 200 series a row, minutes each. A DerSimonian–Laird τ²
with a Satterthwaite t (the rule before) covered 84–91 % here where τ is twice σ.
"""
from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import pytest

from report.stats.between import FigureCalibration, dersimonian_laird, tau2_known_zero
from report.stats.combine import combine_figure
from report.stats.runs import LoadedRun
from report.stats.uncertainty import Analysis, Effect, interval

from .synthetic import as_trial

SIGMA = 0.05          # a trial's within-run standard error of the log TPS ratio (the lab's runs: 3–7 %)
DF = 8                # a trial's degrees of freedom (windows ÷ block − 1)
BIAS = math.log(1.1)  # the twins' own bias, which a crossover cancels
EFFECT = math.log(1.2)
SERIES = 1500
RESAMPLES = 100


def _analysis(rng: np.random.Generator, value: float) -> Analysis:
    """A trial's analysis of TPS alone: its estimate exp(value), bootstrap replicates around it with a spread known
    to DF degrees of freedom, the interval report/stats/uncertainty.py makes of them."""
    spread = SIGMA * math.sqrt(rng.chisquare(DF) / DF)
    tuned = np.exp(value + rng.normal(0.0, spread, RESAMPLES))
    e = Effect("tps", "ratio", 1.0, math.exp(value), estimate=math.exp(value), df=DF)
    e.low, e.high = interval(e.estimate, tuned, DF, log_scale=True)
    blocks = {"tps": 10, "errors": 10, "latency": 10, "cpu": 10}
    return Analysis(SimpleNamespace(n=10 * (DF + 1)), blocks, RESAMPLES, 0, {"tps": e},
                    {"default": {"tps": np.ones(RESAMPLES)}, "tuned": {"tps": tuned}})


def _series(rng: np.random.Generator, trials: int, tau: float) -> list[LoadedRun]:
    runs = []
    for i in range(trials):
        swapped = i % 2 == 1
        value = EFFECT + (-BIAS if swapped else BIAS) + rng.normal(0.0, tau) + rng.normal(0.0, SIGMA)
        runs.append(as_trial(f"trial-{i}", swapped, _analysis(rng, value)))
    return runs


def _calibration(rng: np.random.Generator, aa_runs: int, tau: float) -> FigureCalibration:
    """What `aa_runs` A/A trials of the same machines say (report/stats/between.py _figure)."""
    d = BIAS + rng.normal(0.0, tau, aa_runs) + rng.normal(0.0, SIGMA, aa_runs)
    s = SIGMA * np.sqrt(rng.chisquare(DF, aa_runs) / DF)
    cal = FigureCalibration("tps", [f"aa-{k}" for k in range(aa_runs)], list(d), list(s), tau2=tau2_known_zero(d, s))
    cal.aa_mean, cal.tau2_dl = dersimonian_laird(d, s)
    return cal


def coverage(trials: int, aa_runs: int, tau: float, seed: int) -> tuple[float, float]:
    """(coverage, median half-width on the log scale) of the combined TPS interval over SERIES series."""
    rng = np.random.default_rng(seed)
    held, halves = 0, []
    for _ in range(SERIES):
        runs = _series(rng, trials, tau)
        cal = _calibration(rng, aa_runs, tau) if aa_runs else None
        e = combine_figure(runs, "tps", cal).effect
        held += e.low <= math.exp(EFFECT) <= e.high
        halves.append(math.log(e.high / e.low) / 2)
    return held / SERIES, float(np.median(halves))


@pytest.mark.parametrize("trials, aa_runs", [(4, 0), (2, 4), (4, 4)],
                         ids=["series of 4, own τ²", "series of 2, 4 A/A runs", "series of 4 pooled with 4 A/A runs"])
@pytest.mark.parametrize("tau", [0.0, SIGMA, 2 * SIGMA], ids=["τ = 0", "τ = σ", "τ = 2σ"])
def test_a_series_interval_covers_its_effect_whatever_the_between_run_variance(trials, aa_runs, tau):
    covered, half = coverage(trials, aa_runs, tau, seed=5200 + 10 * trials + aa_runs + int(100 * tau))
    assert 0.93 <= covered <= 0.97, f"coverage {covered:.3f} (half-width ±{100 * half:.1f} %)"


def test_more_trials_narrow_the_interval():
    """What buys width back is trials: A/A runs beside a series of 4 (2 + 3 degrees of freedom for the scatter
    instead of 2), as `./start.sh --aa --repeat 4` gives."""
    _, alone = coverage(4, 0, SIGMA, seed=1)
    _, pooled = coverage(4, 4, SIGMA, seed=1)
    assert pooled < 0.8 * alone


def test_trials_that_agree_exactly_still_get_an_interval():
    """Identical A/A differences (no scatter at all) must not shrink the interval to a point."""
    from report.stats.between import hartung_knapp
    low, high, df = hartung_knapp("ratio", 1.1, 0.05 ** 2, [(0.0, 3)])
    assert df == 3 and low < 1.1 < high
    assert high / 1.1 == pytest.approx(math.exp(3.182446 * 0.05), rel=1e-5)
