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
from typing import Any

import numpy as np
from scipy import special  # scipy.special's quantiles are scipy.stats' own, without its 0.8 s import

from report import MACHINES
from report.stats.blocks import block_length, centering_inflation, level_block_length, sampling_inflation
from report.stats.bootstrap import circular_block_indices, window_weights
from report.stats.figures import percentile
from report.stats.windows import PERCENTILES, WINDOW_S, Paired, Side

RESAMPLES = 2000
SEED = 20261123           # fixed: the same run folder gives the same interval every time
CONFIDENCE = 0.95
CI = f"{CONFIDENCE * 100:.0f} % CI"     # how every table and sentence names the interval
POWER = 0.80              # the power at which a verdict states the smallest difference it could have detected
MIN_WINDOWS = 10          # fewer paired windows: no interval
MIN_CPU_SAMPLES = 3       # the JVM's CPU: PCP's process samples (pcp_scan_interval_s) a paired window must span
MIN_TAIL_SAMPLES = 10     # a latency percentile p needs ≥ this many successes above it: n ≥ 10 / (1 − p/100)

FIGURES = ("tps", "error_pct", "p50", "p95", "p99", "cpu")     # cpu: the JVM's CPU ms per successful request


def min_successes(p: float) -> int:
    """Successful requests a machine needs before its p-th latency percentile is quoted (p50: 20, p95: 200,
    p99: 1,000)."""
    return math.ceil(MIN_TAIL_SAMPLES / (1.0 - p / 100.0) - 1e-9)


GROUPS = {"tps": ("tps",), "errors": ("error_pct",), "latency": ("p50", "p95", "p99"), "cpu": ("cpu",)}
NO_CPU = "the JVM's CPU was not recorded by PCP through the paired window on both machines"


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
    if "cpu" in figures:            # over the windows PCP recorded the JVM's CPU in
        if side.cpu_ms is None:
            out["cpu"] = np.full(weights.shape[0], np.nan)
        else:
            recorded = np.isfinite(side.cpu_ms)
            served = weights @ np.where(recorded, side.successes, 0.0)
            out["cpu"] = np.where(served > 0, (weights @ np.nan_to_num(side.cpu_ms)) / np.maximum(served, 1), np.nan)
    return out


def spread(replicates: dict[str, np.ndarray], factor: float) -> dict[str, np.ndarray]:
    """The replicates moved `factor` times as far from their mean, each on its figure's own scale (log for a ratio,
    as is for error %): every interval, comparison and combination then sees the variance the bootstrap left out
    (blocks.centering_inflation). Undefined replicates stay undefined."""
    if factor == 1.0:
        return replicates
    out = {}
    for figure, values in replicates.items():
        kind = kind_of(figure)
        scaled = log_or_raw(kind, values)
        finite = np.isfinite(scaled)
        if finite.any():
            middle = float(scaled[finite].mean())
            scaled = np.where(finite, middle + factor * (scaled - middle), scaled)
        out[figure] = np.where(finite, np.exp(scaled), values) if kind == "ratio" else scaled
    return out


def point_figures(side: Side, seconds: float) -> dict[str, float]:
    """The figures of one machine over the paired windows, exact (latencies not binned)."""
    # percentile: the table's own nearest-rank rule
    requests, successes = side.requests.sum(), side.successes.sum()
    out = {"tps": successes / seconds, "error_pct": 100.0 * (requests - successes) / requests if requests else math.nan,
           "successes": successes, "requests": requests}
    for p in PERCENTILES:
        out[f"p{p}"] = percentile(side.latencies, p)
    served = side.successes[np.isfinite(side.cpu_ms)].sum() if side.cpu_ms is not None else 0.0
    out["cpu"] = float(np.nansum(side.cpu_ms) / served) if served else math.nan
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
        size = (t_quantile(self.df) + float(special.stdtrit(max(1.0, self.df), POWER))) * se
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
        return self.blocks[group_of(figure)]

    def df(self, figure: str) -> int:
        """Degrees of freedom of the figure's t quantile: independent blocks in the window, less one."""
        return max(1, self.paired.n // self.block(figure) - 1)

    def level_df(self, figure: str) -> int:
        """The same for the tuned level's interval, from its own blocks."""
        return max(1, self.paired.n // self.level_blocks.get(group_of(figure), 1) - 1)


def group_of(figure: str) -> str:
    """The figure group (GROUPS) a figure is resampled with."""
    return next(g for g, figures in GROUPS.items() if figure in figures)


def t_quantile(df: int, confidence: float = CONFIDENCE) -> float:
    return float(special.stdtrit(max(1, df), 0.5 + confidence / 2.0))


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
    z = float(special.ndtri(0.5 + confidence / 2.0))
    centre = (rate + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(rate * (1 - rate) / n + z * z / (4 * n * n))
    return 100.0 * max(0.0, centre - half), 100.0 * min(1.0, centre + half)


def widened(center: float, low: float, high: float, factor: float) -> tuple[float, float]:
    """A ratio's interval around its center, factor times as wide on the log scale."""
    if factor == 1.0 or math.isnan(low) or center <= 0:
        return low, high
    return center * (low / center) ** factor, center * (high / center) ** factor


def log_or_raw(kind: str, values: Any) -> Any:
    """Ratios are combined as logs, differences as they are."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.log(values) if kind == "ratio" else np.asarray(values, dtype=float)


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


def analyse(paired: Paired, resamples: int = RESAMPLES, seed: int = SEED, levels_too: bool = True) -> Analysis:
    """Point estimates and 95 % intervals of every verdict figure over the paired windows. Each figure group
    is resampled with its own block length (an error burst lengthens the error blocks, not the latency ones), all
    from the same seed; the tuned configuration's levels from its own blocks (level_block_length), unless
    levels_too is False (a third more resampling that the effects' coverage tests do not need)."""
    points = {name: point_figures(side, paired.seconds) for name, side in paired.sides.items()}
    few = paired.n < MIN_WINDOWS
    analysis = Analysis(paired=paired, blocks={g: 1 if few else block_length(paired, g) for g in GROUPS},
                        resamples=resamples, seed=seed)
    levels: dict[str, np.ndarray] = {}       # figure -> the tuned level's replicates
    if not few:
        analysis.replicates = {name: {} for name in paired.sides}
        for group, figures in GROUPS.items():
            if group == "cpu" and not paired.has_cpu:
                continue
            indices = circular_block_indices(paired.n, analysis.blocks[group], resamples, seed)
            weights = window_weights(indices, paired.n)
            factor = centering_inflation(paired.n, analysis.blocks[group], group)
            for name, side in paired.sides.items():
                analysis.replicates[name].update(spread(side_figures(side, weights, paired.seconds, figures), factor))
            if not levels_too:
                continue
            analysis.level_blocks[group] = level_block_length(paired, group)
            if analysis.level_blocks[group] == analysis.blocks[group]:
                levels.update({f: analysis.replicates["tuned"][f] for f in figures})
            else:
                indices = circular_block_indices(paired.n, analysis.level_blocks[group], resamples, seed)
                levels.update(spread(side_figures(paired.sides["tuned"], window_weights(indices, paired.n),
                                                  paired.seconds, figures),
                                     centering_inflation(paired.n, analysis.level_blocks[group], group)))
    empty = np.full(resamples, np.nan)
    for figure in FIGURES:
        d, t = (points[name][figure] for name in MACHINES)
        reps = [analysis.replicates.get(name, {}).get(figure, empty) for name in MACHINES]
        e = effect_from(figure, d, t, *reps, analysis.df(figure))
        if few:
            e.why_not = f"only {paired.n} paired windows (need {MIN_WINDOWS})"
        elif figure == "cpu" and not paired.has_cpu:
            e.why_not = NO_CPU
        elif figure == "cpu" and paired.n < MIN_CPU_SAMPLES * paired.cpu_step_s / WINDOW_S:
            e.why_not = (f"the paired window holds fewer than {MIN_CPU_SAMPLES} of PCP's {paired.cpu_step_s:g} s "
                         "samples of the JVM's CPU")
        elif figure == "cpu":
            e.low, e.high = widened(e.estimate, e.low, e.high, sampling_inflation(paired, analysis.block(figure)))
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
            if figure == "cpu":
                e.tuned_low, e.tuned_high = widened(t, e.tuned_low, e.tuned_high, sampling_inflation(
                    paired, analysis.level_blocks[group_of(figure)]))
        analysis.effects[figure] = e
    return analysis
