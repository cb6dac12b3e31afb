"""The circular block bootstrap the verdict's intervals stand on: its resamples and its block length estimate.

Both are the estimators arch 8.0 computes (arch.bootstrap's CircularBlockBootstrap and optimal_block_length), so
every interval and coverage figure measured with arch stays as it was (report/tests/test_bootstrap.py holds them
to arch's on many series). They are written here, in a few lines of numpy each, because importing arch.bootstrap
imports the whole of arch (its univariate models, pandas): 0.7 s of every report's 6 s, and its resampling loop,
one Python object per replicate, was a third of a run's analysis (np.add.at another third: window_weights).
"""
from __future__ import annotations

import numpy as np


def circular_block_indices(n: int, block: int, resamples: int, seed: int) -> np.ndarray:
    """(resamples, n) indices of 0..n−1: each row ⌈n/block⌉ blocks of `block` consecutive indices, wrapping
    around, from uniform starts, cut to n. The starts are drawn one replicate at a time from
    numpy.random.default_rng(seed), as arch draws them, so a seed gives arch's resamples."""
    rng = np.random.default_rng(seed)
    blocks = -(-n // block)
    starts = np.stack([rng.integers(n, size=blocks, dtype=np.int64) for _ in range(resamples)])
    return ((starts[:, :, None] + np.arange(block, dtype=np.int64)).reshape(resamples, -1) % n)[:, :n]


def window_weights(indices: np.ndarray, n: int) -> np.ndarray:
    """(resamples, n) float32: how often each of n windows was drawn in each resample (row)."""
    rows = indices.shape[0]
    flat = (indices + n * np.arange(rows, dtype=np.int64)[:, None]).ravel()
    return np.bincount(flat, minlength=rows * n).reshape(rows, n).astype(np.float32)


def circular_block_length(x: np.ndarray) -> float:
    """Politis & White's (2004) optimal block length for a circular block bootstrap of series x, with Patton,
    Politis & White's (2009) correction: b = (2G²/D)^⅓ n^⅓, D = 4/3 σ̂⁴, G and σ̂² the flat-top (h(t) = min(1,
    2(1−|t|))) weighted sums of the autocovariances up to lag m; m twice the first lag after which k_n = max(5,
    log10 n) autocorrelations all lie within ±2√(log10 n / n) (at least 2, at most ⌈√n⌉ + k_n); b at most
    ⌈min(3√n, n/3)⌉. The autocorrelation at lag i is normalised as arch does it (by the sums of squares of the
    lag's two overlapping parts shifted by one), so the lengths are arch's. inf or nan where the series has no
    long-run variance."""
    x = np.asarray(x, dtype=float)
    n = x.shape[0]
    eps = x - x.mean()
    b_max = np.ceil(min(3 * np.sqrt(n), n / 3))
    kn = max(5, int(np.log10(n)))
    m_max = int(np.ceil(np.sqrt(n))) + kn
    # each lag's cross product and the sums of squares of its two overlapping parts, shifted by one (arch's
    # normalisation), summed in arch's order: the same floats, so the same m and the same length
    sums = np.array([(eps[i:] @ eps[:n - i], eps[i + 1:] @ eps[i + 1:], eps[:n - i - 1] @ eps[:n - i - 1])
                     for i in range(m_max + 1)])
    acv = sums[:, 0] / n
    with np.errstate(divide="ignore", invalid="ignore"):
        small = np.abs(sums[:, 0]) / np.sqrt(sums[:, 1] * sums[:, 2]) < 2 * np.sqrt(np.log10(n) / n)
    quiet = [j for j in range(m_max - kn + 1) if small[j:j + kn].all()]
    m = min(2 * max(quiet[0], 1), m_max) if quiet else m_max
    g, long_run = 0.0, acv[0]
    for k in range(1, m + 1):
        flat_top = 1 if k / m <= 1 / 2 else 2 * (1 - k / m)
        g += 2 * flat_top * k * acv[k]
        long_run += 2 * flat_top * acv[k]
    with np.errstate(divide="ignore", invalid="ignore"):
        b = ((2 * g**2) / (4 / 3 * long_run**2)) ** (1 / 3) * n ** (1 / 3)
    return float(min(b, b_max))
