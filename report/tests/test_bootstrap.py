"""report/stats/bootstrap.py computes arch 8.0's estimators without importing arch: the same resamples for a seed
and the same block lengths, on white noise, slow AR(1) noise, a warm-up, bursts, short and constant series (arch
stays the tests' reference: requirements-dev.txt)."""
import numpy as np
import pytest
from arch.bootstrap import CircularBlockBootstrap, optimal_block_length

from report.stats.bootstrap import circular_block_indices, circular_block_length, window_weights


def arch_indices(n, block, resamples, seed):
    bs = CircularBlockBootstrap(block, np.arange(n), seed=np.random.default_rng(seed))
    return np.array([data[0][0] for data in bs.bootstrap(resamples)], dtype=np.int64)


@pytest.mark.parametrize("n, block", [(10, 1), (10, 3), (180, 23), (301, 7), (1200, 60), (50, 50), (7, 2)])
def test_the_resamples_are_archs_for_the_same_seed(n, block):
    for seed in (0, 1, 20261123):
        ours = circular_block_indices(n, block, 40, seed)
        assert ours.shape == (40, n) and ours.dtype == np.int64
        assert np.array_equal(ours, arch_indices(n, block, 40, seed))


def test_the_window_weights_count_each_draw():
    indices = circular_block_indices(97, 5, 30, 3)
    weights = window_weights(indices, 97)
    assert weights.dtype == np.float32 and weights.shape == (30, 97)
    for row, drawn in zip(weights, indices, strict=True):
        assert np.array_equal(row, np.bincount(drawn, minlength=97))
    assert (weights.sum(axis=1) == 97).all()


def series(rng, n):
    """Series of the kinds a run's influence has: noise, slow noise, a warm-up, bursts, steps, a trend."""
    ar = np.zeros(n)
    for i in range(1, n):
        ar[i] = 0.95 * ar[i - 1] + rng.normal()
    t = np.arange(n)
    yield rng.normal(size=n)
    yield ar
    yield ar + 20 * np.exp(-t / (n / 5))
    yield np.where(rng.random(n) < 0.05, 10.0, 0.0) + rng.normal(size=n)
    yield np.repeat(rng.normal(size=-(-n // 10)), 10)[:n]
    yield t + rng.normal(size=n)


@pytest.mark.parametrize("n", [10, 11, 30, 180, 600, 1800])     # a report bootstraps ≥ 10 windows
def test_the_block_lengths_are_archs(n):
    rng = np.random.default_rng(n)
    for x in series(rng, n):
        with np.errstate(all="ignore"):        # arch divides by a zero variance where a short series has none
            expected = optimal_block_length(x[:, None])["circular"].to_numpy()[0]
        assert circular_block_length(x) == pytest.approx(expected, rel=1e-12, nan_ok=True)


def test_a_series_without_variance_has_no_length():
    with np.errstate(all="ignore"):
        expected = optimal_block_length(np.ones((50, 1)))["circular"].to_numpy()[0]
    assert np.isnan(circular_block_length(np.ones(50))) and np.isnan(expected)
