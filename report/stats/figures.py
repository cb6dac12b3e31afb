"""Figures of one machine over the measured window (after the warm-up): request counts, throughput,
latency percentiles, errors; and the PCP peaks and totals of the summary."""
from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from report.read.jtl import Samples
from report.read.pcp import Match, Metrics, contains

# Process groups of the hotproc metrics, by instance name ('PID command'); the first group of words that
# matches any instance wins (the mock runs as python3 on the machines, and hotproc may name only argv[0]).
PROCESS_GROUPS = {
    "java": (("java",),),
    "httpd": (("httpd", "apache2"),),
    "mock": (("mock",), ("python",)),
}


def percentile(values: Sequence[float] | np.ndarray, p: float) -> float:
    """Nearest-rank percentile: the smallest value with at least p % of the values at or below it."""
    if len(values) == 0:
        return math.nan
    ordered = np.sort(np.asarray(values, dtype=float))
    rank = max(1, math.ceil(p / 100.0 * len(ordered)))
    return float(ordered[rank - 1])


@dataclass
class Window:
    """The measured window of one machine: [start, end] in epoch seconds. start = first sample + warm-up,
    end = the last sample's start."""
    t0: float
    warmup_s: float
    end: float

    @property
    def start(self) -> float:
        return self.t0 + self.warmup_s

    @property
    def seconds(self) -> float:
        return max(0.0, self.end - self.start)


@dataclass
class LoadFigures:
    requests: float = math.nan  # nan: no samples at all (a count of 0 means none in the window)
    successes: float = math.nan
    window_s: float = math.nan
    tps: float = math.nan        # successful requests per second over the window
    tps_sd: float = math.nan     # σ of the per-second successful counts (whole seconds of the window)
    error_pct: float = math.nan
    p50: float = math.nan        # latency of successful requests, ms
    p95: float = math.nan
    p99: float = math.nan
    mean_ms: float = math.nan
    sd_ms: float = math.nan
    errors: Counter[str] = field(default_factory=Counter)  # error name -> count


def load_figures(samples: Samples, window: Window) -> LoadFigures:
    """Request figures of the samples that started inside the window."""
    figures = LoadFigures(window_s=window.seconds)
    inside = (samples.start >= window.start) & (samples.start <= window.end)
    ok = samples.ok[inside]
    figures.requests = int(inside.sum())  # a count from here on, even when 0
    figures.successes = int(ok.sum())
    if figures.requests == 0 or window.seconds <= 0:
        return figures
    figures.error_pct = 100.0 * (figures.requests - figures.successes) / figures.requests
    figures.tps = figures.successes / window.seconds
    whole = int(window.seconds)
    if whole >= 2:
        per_second = np.bincount(
            (samples.start[inside][ok] - window.start).astype(int), minlength=whole + 1)[:whole]
        figures.tps_sd = float(np.std(per_second, ddof=1))
    latency = samples.elapsed_ms[inside][ok]
    if len(latency):
        figures.p50, figures.p95, figures.p99 = (percentile(latency, p) for p in (50, 95, 99))
        figures.mean_ms = float(latency.mean())
        figures.sd_ms = float(latency.std(ddof=1)) if len(latency) > 1 else math.nan
    figures.errors = Counter(samples.error[inside][~ok])
    return figures


def in_window(times: np.ndarray, values: np.ndarray, window: Window) -> tuple[np.ndarray, np.ndarray]:
    keep = (times >= window.start) & (times <= window.end)
    return times[keep], values[keep]


def max_in_window(metrics: Metrics, metric: str, window: Window, match: Match | None = None) -> float:
    times, values = in_window(*metrics.series(metric, match), window)
    return float(values.max()) if len(values) else math.nan


def mean_in_window(metrics: Metrics, metric: str, window: Window, match: Match | None = None) -> float:
    """Mean over the window's samples of the metric summed over the matching instances (samples are evenly
    spaced: pmrep exports at the run's interval)."""
    times, values = in_window(*metrics.series(metric, match), window)
    return float(values.mean()) if len(values) else math.nan


def integral_in_window(metrics: Metrics, metric: str, window: Window, match: Match | None = None) -> float:
    """∫ rate dt of a rate-converted counter over the window: each value is the mean rate since the
    previous sample, so it is weighted by the time since that sample."""
    return integral(*metrics.series(metric, match), window)


def integral(times: np.ndarray, values: np.ndarray, window: Window) -> float:
    """integral_in_window of one (times, values) series."""
    if len(times) < 2:
        return math.nan
    dt = np.diff(times)
    times, values = times[1:], values[1:]
    keep = (times > window.start) & (times <= window.end)
    return float((values[keep] * dt[keep]).sum()) if keep.any() else math.nan


def process_match(metrics: Metrics, group: str) -> Match | None:
    """The instance filter of a process group, or None when no instance of hotproc.psinfo.rss matches."""
    names = metrics.instances("hotproc.psinfo.rss")
    for words in PROCESS_GROUPS[group]:
        match = contains(*words)
        if any(match(name) for name in names):
            return match
    return None


JVM_CPU_TIMES = ("hotproc.psinfo.utime", "hotproc.psinfo.stime")   # counters of ms, exported as ms per s
GAP_SAMPLES = 2.5           # a spacing over this many times the series' usual one is a gap, not a sample
MIN_CPU_RECORDED = 0.5      # share of the windows PCP must have recorded the JVM's CPU through


def jvm_cpu_windows(metrics: Metrics | None, start: float, n: int, width: float = 1.0) -> np.ndarray | None:
    """The JVM's CPU time (user + system, ms) in each of n windows of `width` s from `start`: each sample's rate
    holds since the sample before it, so the CPU accumulates linearly between samples and a window takes its share
    of it — spread evenly over a sampling interval, whose length is the figure's resolution. NaN in a window PCP
    did not record (before its first sample, after its last — the load's last seconds — or in a gap); None where
    PCP recorded no JVM or fewer than half of the windows."""
    java = process_match(metrics, "java") if metrics is not None else None
    if java is None or n <= 0:
        return None
    edges = start + width * np.arange(n + 1)
    cpu = np.zeros(n)
    for metric in JVM_CPU_TIMES:
        times, rates = metrics.series(metric, java)
        if len(times) < 2:
            return None
        dt = np.diff(times)
        cumulative = np.interp(edges, times, np.concatenate([[0.0], np.cumsum(rates[1:] * dt)]))
        recorded = (edges[:-1] >= times[0]) & (edges[1:] <= times[-1])
        for gap in np.flatnonzero(dt > GAP_SAMPLES * np.median(dt)):
            recorded &= (edges[1:] <= times[gap]) | (edges[:-1] >= times[gap + 1])
        cpu += np.where(recorded, np.diff(cumulative), np.nan)
    return cpu if np.isfinite(cpu).mean() >= MIN_CPU_RECORDED else None


CONVERSION_OUTCOMES = ("attempt", "hit", "miss", "failed", "noop")   # the kit's camel_type_converter_total


@dataclass
class SystemFigures:
    max_load1: float = math.nan
    peak_rss_mib: dict[str, float] = field(default_factory=dict)  # group -> MiB (sum of the group's processes)
    gc_pause_s: float = math.nan
    gc_pauses: float = math.nan
    jvm_cpu_ms: float = math.nan    # the JVM's CPU time (user + system) in the window
    jit_s: float = math.nan         # the JIT's compiling time in the window, summed over its compiler threads
    conversions: dict[str, float] = field(default_factory=dict)   # Camel's type conversions by outcome, where counted


def system_figures(metrics: Metrics | None, window: Window) -> SystemFigures:
    figures = SystemFigures()
    if metrics is None:
        return figures
    figures.max_load1 = max_in_window(metrics, "kernel.all.load", window, contains("1 minute"))
    for group in PROCESS_GROUPS:
        match = process_match(metrics, group)
        peak = max_in_window(metrics, "hotproc.psinfo.rss", window, match) if match else math.nan
        figures.peak_rss_mib[group] = peak / 1024.0  # hotproc RSS is in KiB
    java = process_match(metrics, "java")
    if java:
        figures.jvm_cpu_ms = sum(integral_in_window(metrics, time, window, java) for time in JVM_CPU_TIMES)
    figures.gc_pause_s = integral_in_window(metrics, "openmetrics.app.jvm_gc_pause_seconds_sum", window)
    figures.gc_pauses = integral_in_window(metrics, "openmetrics.app.jvm_gc_pause_seconds_count", window)
    figures.jit_s = integral_in_window(metrics, "openmetrics.app.jvm_compilation_time_ms_total", window) / 1000.0
    if metrics.instances("openmetrics.app.camel_type_converter_total"):
        for outcome in CONVERSION_OUTCOMES:
            figures.conversions[outcome] = integral_in_window(
                metrics, "openmetrics.app.camel_type_converter_total", window, contains(f"outcome:{outcome}"))
    return figures
