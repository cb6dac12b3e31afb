"""The paired 1 s windows of a run's two machines (duet benchmarking: both ran at the same time, so their seconds
pair): each machine's requests, successes, a histogram of its successful latencies and, where PCP recorded it, its
JVM's CPU time per window. What the bootstrap (stats/uncertainty.py) resamples and the block rule
(stats/blocks.py) reads."""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from report.read.jtl import Samples

WINDOW_S = 1.0            # one window: one second of wall-clock time, by sample start
LATENCY_BIN = 1.01        # latency histogram bins for resampling: 1 % wide (log-spaced)
PERCENTILES = (50, 95, 99)


@dataclass
class Side:
    """One machine's per-window sums over the paired windows."""
    requests: np.ndarray      # (n,) requests that started in each window
    successes: np.ndarray     # (n,)
    latency_hist: np.ndarray  # (n, bins) successful latencies per window, counted in log bins
    bin_ms: np.ndarray        # (bins,) each bin's representative latency (geometric centre), ms
    latencies: np.ndarray     # successful latencies in the paired windows (exact point estimates)
    cpu_ms: np.ndarray | None = None  # (n,) the JVM's CPU time in each window, ms (attach_cpu: each PCP sampling
    #                                   interval's shared out by successes; NaN unrecorded); None where not recorded


@dataclass
class Paired:
    start: float              # epoch seconds of the first window
    n: int                    # windows
    sides: dict[str, Side]    # 'default' / 'tuned' -> Side
    cpu_step_s: float = WINDOW_S  # the coarsest sampling interval behind the sides' cpu_ms: the CPU's resolution

    @property
    def seconds(self) -> float:
        return self.n * WINDOW_S

    @property
    def has_cpu(self) -> bool:
        """Both sides have their JVM's CPU per window."""
        return all(side.cpu_ms is not None for side in self.sides.values())

    @property
    def cpu_step_windows(self) -> int:
        """The CPU's sampling interval in whole windows: its windows share one rate."""
        return math.ceil(self.cpu_step_s / WINDOW_S - 1e-9)


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


def attach_cpu(paired: Paired, cpu_by_side: dict[str, np.ndarray | None], step_s: float) -> None:
    """Each side's JVM CPU per window (NaN where not recorded, None where not at all), as a sampling interval's CPU
    spread over its windows by the successes in them (by_successes), and the samples' resolution."""
    for name, cpu in cpu_by_side.items():
        side = paired.sides[name]
        side.cpu_ms = None if cpu is None else by_successes(np.asarray(cpu, dtype=float)[:paired.n], side.successes)
    paired.cpu_step_s = step_s


def by_successes(cpu: np.ndarray, successes: np.ndarray) -> np.ndarray:
    """PCP gives a sampling interval's mean rate: its windows hold equal CPU whatever they served, so a block
    that cuts an interval would count the CPU by time and the requests by what they were — noise the bootstrap
    would take for the JVM's (98–99 % coverage at 1.7× the width needed, bench/coverage.py). The CPU of each run of
    equal windows (one sampling interval, or its part between the export's samples) is spread over them by their
    successes instead: the interval's cost per request, in each of its windows; by time where it served none."""
    out = cpu.copy()
    finite = np.isfinite(cpu)
    same = np.isclose(cpu[1:], cpu[:-1], rtol=1e-6, atol=1e-9) & finite[1:] & finite[:-1]
    starts = np.flatnonzero(np.concatenate([[True], ~same]))
    for first, end in zip(starts, np.append(starts[1:], len(cpu)), strict=True):
        served = successes[first:end].sum()
        if finite[first] and served > 0:
            out[first:end] = cpu[first:end].sum() * successes[first:end] / served
    return out
