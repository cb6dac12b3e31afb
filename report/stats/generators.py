"""The load generators of a distributed run (real hosts with a `loadgen` group, JMeter's remote engines): each
one's CPU and memory over the measured window, from its PCP recording (loadgen/<name>/pcp/metrics.csv, written
by lab/load/generator_pcp.py), and whether it was saturated. A generator short of CPU sends late and measures
late: the targets' figures would then understate what they can do. The summary's section:
report/render/generators.py."""
from __future__ import annotations

import math
from pathlib import Path

from report.read.pcp import read_metrics
from report.stats.figures import Window, in_window, percentile
from report.stats.machine import Machine

SATURATED_BUSY_PCT = 90.0       # p99 of the generator's CPU busy (all its CPUs) at or above this: saturated


def measured_window(machines: dict[str, Machine]) -> Window | None:
    """The span of the machines' measured windows (the generators served both), or None."""
    windows = [m.window for m in machines.values() if m.window is not None and m.window.seconds > 0]
    if not windows:
        return None
    start, end = min(w.start for w in windows), max(w.end for w in windows)
    return Window(t0=start, warmup_s=0.0, end=end)


def figures(metrics_csv: str | Path, window: Window | None) -> dict[str, float]:
    """{cpus, busy_mean, busy_p99 (% of all its CPUs), available_min_mb, samples} over the window."""
    metrics = read_metrics(metrics_csv)
    shares = metrics.cpu_shares()      # every state on the same sample times: busy is their sum
    busy = (next(iter(shares.values()))[0], sum(v for _, v in shares.values())) if shares else None
    out: dict[str, float] = {"cpus": math.nan, "busy_mean": math.nan, "busy_p99": math.nan,
                             "available_min_mb": math.nan, "samples": 0}
    ncpu = metrics.series("hinv.ncpu")[1]
    if len(ncpu):
        out["cpus"] = int(ncpu[-1])
    if busy is not None and window is not None:
        _, in_it = in_window(*busy, window)
        if len(in_it):
            out.update(busy_mean=float(in_it.mean()), busy_p99=percentile(in_it, 99), samples=len(in_it))
    if window is not None:
        _, available = in_window(*metrics.series("mem.util.available"), window)
        if len(available):
            out["available_min_mb"] = float(available.min()) / 1024
    return out
