"""Uncertainty of the verdict figures: a circular block bootstrap over the paired 1 s windows of the two
machines (duet benchmarking: both ran at the same time, so their windows pair).

Both machines' samples are cut into the same wall-clock windows. A resample draws whole blocks of consecutive
windows (keeping the autocorrelation inside a block) and takes both machines' data of each drawn window
together (keeping the pairing). Every figure of a resample is computed from the drawn windows' sums, so one
set of drawn indices serves all figures. The 95 % interval of a ratio is log(ratio) ± t·se, se the standard
deviation of the resampled log ratios and t Student's quantile with (windows / block − 1) degrees of freedom;
of a difference (error %), the same on the raw scale. Method, block length rule, resamples, seed and the
coverage measured on synthetic series: report/README.md ("Uncertainty").
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from arch.bootstrap import CircularBlockBootstrap, optimal_block_length
from scipy import stats

from report import MACHINES
from report.read.jtl import Samples
from report.stats.figures import percentile

WINDOW_S = 1.0            # one window: one second of wall-clock time, by sample start
RESAMPLES = 2000
SEED = 20261123           # fixed: the same run folder gives the same interval every time
CONFIDENCE = 0.95
CI = f"{CONFIDENCE * 100:.0f} % CI"     # how every table and sentence names the interval
POWER = 0.80              # the power at which a verdict states the smallest difference it could have detected
MIN_WINDOWS = 10          # fewer paired windows: no interval
BLOCK_FACTOR = {"tps": 4, "errors": 8, "latency": 3}   # × Politis–White's length of the paired influence series,
#   by the coverage measured (bench/coverage.py, report/README.md)
LATENCY_BIN = 1.01        # latency histogram bins for resampling: 1 % wide (log-spaced)
PERCENTILES = (50, 95, 99)
MIN_TAIL_SAMPLES = 10     # a latency percentile p needs ≥ this many successes above it: n ≥ 10 / (1 − p/100)

FIGURES = ("tps", "error_pct", "p50", "p95", "p99")


def min_successes(p: float) -> int:
    """Successful requests a machine needs before its p-th latency percentile is quoted (p50: 20, p95: 200,
    p99: 1,000)."""
    return math.ceil(MIN_TAIL_SAMPLES / (1.0 - p / 100.0) - 1e-9)


@dataclass
class Side:
    """One machine's per-window sums over the paired windows."""
    requests: np.ndarray      # (n,) requests that started in each window
    successes: np.ndarray     # (n,)
    latency_hist: np.ndarray  # (n, bins) successful latencies per window, counted in log bins
    bin_ms: np.ndarray        # (bins,) each bin's representative latency (geometric centre), ms
    latencies: np.ndarray     # successful latencies in the paired windows (exact point estimates)


@dataclass
class Paired:
    start: float              # epoch seconds of the first window
    n: int                    # windows
    sides: dict[str, Side]    # 'default' / 'tuned' -> Side

    @property
    def seconds(self) -> float:
        return self.n * WINDOW_S


def paired_windows(samples_by_side: dict[str, Samples | None], start: float, end: float) -> Paired | None:
    """The two machines' samples in the common windows [start, end): {side: jtl.Samples} → Paired, or None
    when the windows do not overlap or a side has no samples."""
    if any(s is None or len(s) == 0 for s in samples_by_side.values()):
        return None
    n = int(math.floor((end - start) / WINDOW_S))
    if n <= 0:
        return None
    all_ok = np.concatenate([s.elapsed_ms[s.ok] for s in samples_by_side.values()])
    all_ok = all_ok[all_ok > 0]
    lo = max(all_ok.min() if len(all_ok) else 1.0, 0.5)
    hi = max(all_ok.max() if len(all_ok) else 1.0, lo * LATENCY_BIN)
    edges = lo * LATENCY_BIN ** np.arange(0, math.ceil(math.log(hi / lo, LATENCY_BIN)) + 2)
    centres = np.sqrt(edges[:-1] * edges[1:])
    sides = {}
    for name, s in samples_by_side.items():
        inside = (s.start >= start) & (s.start < start + n * WINDOW_S)
        win = ((s.start[inside] - start) // WINDOW_S).astype(int)
        ok = s.ok[inside]
        requests = np.bincount(win, minlength=n)[:n]
        successes = np.bincount(win[ok], minlength=n)[:n]
        lat = s.elapsed_ms[inside][ok]
        bins = np.clip(np.searchsorted(edges, np.maximum(lat, lo), side="right") - 1, 0, len(centres) - 1)
        hist = np.zeros((n, len(centres)), dtype=np.float32)
        np.add.at(hist, (win[ok], bins), 1.0)
        sides[name] = Side(requests=requests.astype(float), successes=successes.astype(float),
                           latency_hist=hist, bin_ms=centres, latencies=lat)
    return Paired(start=start, n=n, sides=sides)


GROUPS = {"tps": ("tps",), "errors": ("error_pct",), "latency": ("p50", "p95", "p99")}


def influence(paired: Paired, group: str) -> list[np.ndarray]:
    """The per-window influence series of the group's paired statistics (tuned vs default): how much each window
    moves the statistic, to first order. Its autocorrelation is what the bootstrap's blocks must keep: what both
    machines share (a warm-up, a drift, the host's slowdown) cancels in it, as it does in the statistic.
    - TPS, log(T/D) of the successes' sums: t_i/t̄ − d_i/d̄;
    - errors, the difference of the failed shares F/R: (f_i − e·r_i)/r̄ of tuned less the same of default;
    - latency, log(q_t/q_d) of each percentile: (p·s_i − b_i)/(S·g) of tuned less default's, with b_i the window's
      successes at or below the side's percentile and g the density of log latency there (the histogram's)."""
    d, t = (side_influence(paired.sides[name], group) for name in MACHINES)
    return [tuned - default for tuned, default in zip(t, d, strict=True) if np.ptp(tuned - default) > 0]


def side_influence(side: Side, group: str) -> list[np.ndarray]:
    """One machine's influence series of the group's figures (its own level: what a level gate judges)."""
    if group == "tps":
        mean = side.successes.mean()
        return [side.successes / mean if mean else np.zeros(len(side.successes))]
    if group == "errors":
        return [_error_influence(side)]
    return [_quantile_influence(side, p) for p in PERCENTILES]


def _error_influence(side: Side) -> np.ndarray:
    mean_requests = side.requests.mean()
    if not mean_requests:
        return np.zeros(len(side.requests))
    failures = side.requests - side.successes
    share = failures.sum() / side.requests.sum()
    return (failures - share * side.requests) / mean_requests


QUANTILE_BINS = 5          # the density of log latency at a percentile: the histogram's bins within ±5 of its own


def _quantile_influence(side: Side, p: float) -> np.ndarray:
    counts = side.latency_hist.sum(axis=0)
    total = counts.sum()
    if not total:
        return np.zeros(side.latency_hist.shape[0])
    cum = np.cumsum(counts)
    at = int(np.searchsorted(cum, max(1.0, math.ceil(p / 100.0 * total - 1e-9)) - 1e-6))
    lo, hi = max(0, at - QUANTILE_BINS), min(len(counts), at + QUANTILE_BINS + 1)
    density = counts[lo:hi].sum() / (total * (hi - lo) * math.log(LATENCY_BIN))
    below = side.latency_hist[:, :at + 1].sum(axis=1)
    return (p / 100.0 * side.successes - below) / (total * density)


def block_length(paired: Paired, group: str = "tps") -> int:
    """Twice Politis & White's (2004, corrected by Patton, Politis & White 2009) optimal circular block
    length of the group's paired influence series (influence(); the largest over the latency percentiles');
    1 ≤ b ≤ n/3."""
    return _block_of(influence(paired, group), paired.n, BLOCK_FACTOR[group])


def level_block_length(paired: Paired, group: str = "tps") -> int:
    """The same rule on the tuned machine's own influence series: the blocks of its level's interval, which
    nothing cancels (the host's slowdown, a warm-up and a drift are all in it)."""
    columns = [c for c in side_influence(paired.sides["tuned"], group) if np.ptp(c) > 0]
    return _block_of(columns, paired.n, BLOCK_FACTOR[group])


def _block_of(columns: list[np.ndarray], n: int, factor: float) -> int:
    if not columns or n < 4:
        return 1
    lengths = optimal_block_length(np.column_stack(columns))["circular"].to_numpy()
    lengths = lengths[np.isfinite(lengths)]
    b = math.ceil(factor * lengths.max()) if len(lengths) else 1
    return int(min(max(b, 1), max(1, n // 3)))


def resample_indices(n: int, block: int, resamples: int = RESAMPLES, seed: int = SEED) -> np.ndarray:
    """(resamples, n) window indices of a circular block bootstrap (arch's CircularBlockBootstrap)."""
    bs = CircularBlockBootstrap(block, np.arange(n), seed=np.random.default_rng(seed))
    return np.array([data[0][0] for data in bs.bootstrap(resamples)], dtype=np.int64)


def window_weights(indices: np.ndarray, n: int) -> np.ndarray:
    """(resamples, n): how often each window was drawn in each resample."""
    weights = np.zeros((indices.shape[0], n), dtype=np.float32)
    rows = np.repeat(np.arange(indices.shape[0]), indices.shape[1])
    np.add.at(weights, (rows, indices.ravel()), 1.0)
    return weights


def nearest_rank(hist_cum: np.ndarray, total: np.ndarray, p: float, bin_ms: np.ndarray) -> np.ndarray:
    """Nearest-rank percentile p of histograms given as cumulative counts (rows), → ms per row."""
    rank = np.maximum(1.0, np.ceil(p / 100.0 * total - 1e-9))
    idx = (hist_cum >= rank[:, None] - 1e-6).argmax(axis=1)
    return bin_ms[idx]


def side_figures(side: Side, weights: np.ndarray, seconds: float,
                 figures: tuple[str, ...] = FIGURES) -> dict[str, np.ndarray]:
    """Each of the figures of one machine under each row of weights: {figure: (resamples,) array}."""
    requests = weights @ side.requests
    successes = weights @ side.successes
    out = {}
    if "tps" in figures:
        out["tps"] = successes / seconds
    if "error_pct" in figures:
        out["error_pct"] = np.where(requests > 0, 100.0 * (requests - successes) / np.maximum(requests, 1), np.nan)
    wanted = [p for p in PERCENTILES if f"p{p}" in figures]
    if wanted:
        cum = np.cumsum(weights @ side.latency_hist, axis=1)
        for p in wanted:
            out[f"p{p}"] = np.where(successes > 0, nearest_rank(cum, successes, p, side.bin_ms), np.nan)
    return out


def point_figures(side: Side, seconds: float) -> dict[str, float]:
    """The figures of one machine over the paired windows, exact (latencies not binned)."""
    # percentile: the table's own nearest-rank rule
    requests, successes = side.requests.sum(), side.successes.sum()
    out = {"tps": successes / seconds, "error_pct": 100.0 * (requests - successes) / requests if requests else math.nan,
           "successes": successes, "requests": requests}
    for p in PERCENTILES:
        out[f"p{p}"] = percentile(side.latencies, p)
    return out


@dataclass
class Effect:
    """tuned vs default for one figure: a ratio (TPS, latency) or a difference in points (error %)."""
    figure: str
    kind: str                 # 'ratio' | 'difference'
    default: float
    tuned: float
    estimate: float = math.nan    # ratio tuned/default, or tuned − default
    low: float = math.nan
    high: float = math.nan
    why_not: str = ""             # why there is no interval (too few windows or requests)
    df: float = math.nan          # degrees of freedom of the t quantile behind low … high
    within_low: float = math.nan  # the within-run interval, once low … high also hold the between-run variance
    within_high: float = math.nan     # (report/stats/between.py)
    intervals: str = "within-run"     # what low … high include: within-run | calibrated (A/A runs …) |
    #                                   random-effects (k trials)
    tuned_low: float = math.nan   # the tuned configuration's own level's interval (what a level gate judges:
    tuned_high: float = math.nan  # errors<=0.1%, p99<=2s, tps>=30/s), within-run

    @property
    def within(self) -> tuple[float, float]:
        """The interval of the within-run noise alone."""
        return (self.low, self.high) if math.isnan(self.within_low) else (self.within_low, self.within_high)

    @property
    def has_interval(self) -> bool:
        return not self.why_not and not math.isnan(self.low)

    @property
    def min_detectable(self) -> float:
        """The smallest difference this interval detects with 80 % power (two-sided, 95 %): (t₀.₉₇₅ + t₀.₈₀)·se on the
        figure's scale, se the interval's half-width over t₀.₉₇₅; a ratio's as a ratio (1.09: ±9 %), a
        difference's in points; nan without an interval."""
        if not self.has_interval or self.df is None or math.isnan(self.df) or (self.kind == "ratio" and self.low <= 0):
            return math.nan
        lo, hi = (math.log(self.low), math.log(self.high)) if self.kind == "ratio" else (self.low, self.high)
        se = (hi - lo) / 2.0 / t_quantile(self.df)
        if se <= 0:             # no errors on either machine: nothing varied, nothing to detect against
            return math.nan
        size = (t_quantile(self.df) + float(stats.t.ppf(POWER, max(1.0, self.df)))) * se
        return math.exp(size) if self.kind == "ratio" else size

    @property
    def detectable(self) -> bool:
        """The interval excludes 'no difference' (1 for a ratio, 0 for a difference)."""
        if not self.has_interval:
            return False
        neutral = 1.0 if self.kind == "ratio" else 0.0
        return self.low > neutral or self.high < neutral


@dataclass
class Analysis:
    paired: Paired
    blocks: dict[str, int]                           # figure group (GROUPS) -> block length, windows
    resamples: int
    seed: int
    effects: dict[str, Effect] = field(default_factory=dict)             # figure -> Effect
    replicates: dict[str, dict[str, np.ndarray]] = field(default_factory=dict)  # side -> figure -> (resamples,)
    level_blocks: dict[str, int] = field(default_factory=dict)       # figure group -> the tuned level's block

    def block(self, figure: str) -> int:
        return next(self.blocks[g] for g, figures in GROUPS.items() if figure in figures)

    def df(self, figure: str) -> int:
        """Degrees of freedom of the figure's t quantile: independent blocks in the window, less one."""
        return max(1, self.paired.n // self.block(figure) - 1)

    def level_df(self, figure: str) -> int:
        block = next(self.level_blocks.get(g, 1) for g, figures in GROUPS.items() if figure in figures)
        return max(1, self.paired.n // block - 1)


def t_quantile(df: int, confidence: float = CONFIDENCE) -> float:
    return float(stats.t.ppf(0.5 + confidence / 2.0, max(1, df)))


MIN_FINITE = 0.99         # share of resamples whose figure must be defined for an interval


def interval(center: float, replicates: np.ndarray, df: int, log_scale: bool,
             confidence: float = CONFIDENCE) -> tuple[float, float]:
    """center ± t·se (se: σ of the replicates), on the log scale for a ratio; (nan, nan) when more than 1 %
    of the replicates are undefined (a resample without a success) or the center is not positive."""
    with np.errstate(divide="ignore", invalid="ignore"):
        values = np.log(replicates) if log_scale else np.asarray(replicates, dtype=float)
    finite = values[np.isfinite(values)]
    if len(finite) < max(10, MIN_FINITE * len(values)) or (log_scale and center <= 0):
        return math.nan, math.nan
    half = t_quantile(df, confidence) * float(finite.std(ddof=1))
    if log_scale:
        return center * math.exp(-half), center * math.exp(half)
    return center - half, center + half


def error_level_interval(failed: float, requests: float, replicates: np.ndarray,
                         confidence: float = CONFIDENCE) -> tuple[float, float]:
    """The tuned machine's error rate (%) with Wilson's score interval (1927) on the requests' effective number: the
    block bootstrap's variance of the rate over the binomial one is the design effect of its bursts (Kish), ≥ 1, by
    which the requests count less. Wilson's interval stays inside 0 … 100 % and is not empty at 0 failures, where a
    bootstrap (every resample 0) would be: a rare error rate's upper bound is what a level gate judges."""
    if requests <= 0:
        return math.nan, math.nan
    rate = failed / requests
    binomial = rate * (1.0 - rate) / requests
    finite = replicates[np.isfinite(replicates)] / 100.0
    boot = float(finite.var(ddof=1)) if len(finite) > 1 else 0.0
    n = requests / max(1.0, boot / binomial) if binomial > 0 else requests
    z = float(stats.norm.ppf(0.5 + confidence / 2.0))
    centre = (rate + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(rate * (1 - rate) / n + z * z / (4 * n * n))
    return 100.0 * max(0.0, centre - half), 100.0 * min(1.0, centre + half)


def kind_of(figure: str) -> str:
    """Error % is compared as a difference in points; every other figure as a ratio."""
    return "difference" if figure == "error_pct" else "ratio"


def effect_from(figure: str, point_d: float, point_t: float, rep_d: np.ndarray, rep_t: np.ndarray,
                df: int) -> Effect:
    """An Effect from both sides' point figures and their (paired) resampled figures."""
    kind = kind_of(figure)
    effect = Effect(figure, kind, point_d, point_t, df=df)
    if any(map(math.isnan, (point_d, point_t))):
        effect.why_not = "not measured on both machines"
        return effect
    if kind == "difference":
        effect.estimate = point_t - point_d
        effect.low, effect.high = interval(effect.estimate, rep_t - rep_d, df, log_scale=False)
    elif point_d > 0 and point_t > 0:
        effect.estimate = point_t / point_d
        with np.errstate(divide="ignore", invalid="ignore"):
            effect.low, effect.high = interval(effect.estimate, rep_t / rep_d, df, log_scale=True)
    else:
        effect.why_not = f"{'default' if point_d <= 0 else 'tuned'}'s figure is 0 in the paired window"
    if not effect.why_not and math.isnan(effect.low):
        effect.why_not = "undefined in over 1 % of the resamples (too few successes)"
    return effect


def analyse(paired: Paired, resamples: int = RESAMPLES, seed: int = SEED) -> Analysis:
    """Point estimates and 95 % intervals of every verdict figure over the paired windows. Each figure group
    is resampled with its own block length (an error burst lengthens the error blocks, not the latency ones), all
    from the same seed; the tuned configuration's levels from its own blocks (level_block_length)."""
    points = {name: point_figures(side, paired.seconds) for name, side in paired.sides.items()}
    few = paired.n < MIN_WINDOWS
    analysis = Analysis(paired=paired, blocks={g: 1 if few else block_length(paired, g) for g in GROUPS},
                        resamples=resamples, seed=seed)
    levels: dict[str, np.ndarray] = {}       # figure -> the tuned level's replicates
    if not few:
        analysis.replicates = {name: {} for name in paired.sides}
        for group, figures in GROUPS.items():
            indices = resample_indices(paired.n, analysis.blocks[group], resamples, seed)
            weights = window_weights(indices, paired.n)
            for name, side in paired.sides.items():
                analysis.replicates[name].update(side_figures(side, weights, paired.seconds, figures))
            analysis.level_blocks[group] = level_block_length(paired, group)
            if analysis.level_blocks[group] == analysis.blocks[group]:
                levels.update({f: analysis.replicates["tuned"][f] for f in figures})
            else:
                indices = resample_indices(paired.n, analysis.level_blocks[group], resamples, seed)
                levels.update(side_figures(paired.sides["tuned"], window_weights(indices, paired.n), paired.seconds,
                                           figures))
    empty = np.full(resamples, np.nan)
    for figure in FIGURES:
        d, t = (points[name][figure] for name in MACHINES)
        reps = [analysis.replicates.get(name, {}).get(figure, empty) for name in MACHINES]
        e = effect_from(figure, d, t, *reps, analysis.df(figure))
        if few:
            e.why_not = f"only {paired.n} paired windows (need {MIN_WINDOWS})"
        elif figure.startswith("p"):
            need = min_successes(int(figure[1:]))
            short = [f"{name} {int(points[name]['successes']):,}" for name in MACHINES
                     if points[name]["successes"] < need]
            if short:
                e.why_not = f"needs ≥ {need:,} successful requests per machine ({', '.join(short)})"
        if e.why_not:
            e.low = e.high = math.nan
        elif figure == "error_pct" and not math.isnan(t) and figure in levels:
            tuned = points["tuned"]
            e.tuned_low, e.tuned_high = error_level_interval(tuned["requests"] - tuned["successes"],
                                                             tuned["requests"], levels[figure])
        elif not math.isnan(t) and figure in levels:
            e.tuned_low, e.tuned_high = interval(t, levels[figure], analysis.level_df(figure),
                                                 log_scale=kind_of(figure) == "ratio" and t > 0)
        analysis.effects[figure] = e
    return analysis
