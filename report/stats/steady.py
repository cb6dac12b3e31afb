"""Where a machine reaches its steady state, from the data rather than a fixed warm-up.

Successful requests are counted in 10 s bins from the machine's first sample. For each candidate start
(every bin, from the first on) a least-squares line is fitted to the bins from there to the end; the
machine is steady from the first start whose line changes by at most 10 % of the mean rate across the rest
of the run, with at least a minute and a third of the run left. A run that never meets it "never settled";
its drift is the fitted change over the measured window (Georges et al. 2007: measure once the figures
stop trending; the rule and its constants: report/README.md).

A flat throughput is not yet a warm JVM: where the JIT's compiling time was recorded (the kit's
jvm_compilation_time_ms_total), the candidate starts begin only where the JIT went quiet, the first bin from which
its compiler threads take at most QUIET_CPU on average over the rest of the run (the petclinic default's C2
compiled at 1.1 CPUs for minutes after its throughput had "settled", 20261202T022034Z-s74-petclinic-tune-confir-
vs-default; 20 minutes showed it 2.7x faster once done, 20261202T024708Z-s74-petclinic-20m).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from report.stats.machine import Machine

BIN_S = 10.0
MAX_DRIFT = 0.10         # |fitted change across the rest| / mean rate
MIN_REST_S = 60.0
MIN_REST_SHARE = 1 / 3
# CPUs compiling on average over the measured window from which a side is named still warming up: its throughput may
# look steady (on 2 shared cores the petclinic default's C2 compiled at 1.1 CPUs through windows it had settled in,
# 20261202T022034Z-s74-petclinic-tune-confir-vs-default-t1), but it still pays for its compiler
STILL_COMPILING_CPU = 0.1
# The JIT's CPUs on average over the rest of the run from which it is quiet: half the mark above, so that a window
# starting where the JIT went quiet is never one whose machine is "still compiling"
QUIET_CPU = STILL_COMPILING_CPU / 2
JIT_METRIC = "openmetrics.app.jvm_compilation_time_ms_total"    # ms of compiling per s (a counter, rate-converted)


@dataclass
class Steady:
    settled: bool
    start_s: float = math.nan      # seconds since the machine's first sample (settled)
    drift: float = math.nan        # relative change across the measured window (fitted), e.g. +0.35
    why: str = ""                  # when it could not be judged
    quiet_s: float = math.nan      # where the JIT went quiet (seconds since the first sample); nan: not recorded
    compiling: bool = False        # not settled because the JIT went quiet too late or never (its throughput had)


def _drift(rates: np.ndarray) -> float:
    """Fitted change across the bins, relative to their mean (nan without a mean)."""
    mean = rates.mean()
    if len(rates) < 3 or mean <= 0:
        return math.nan
    x = np.arange(len(rates), dtype=float)
    slope = np.polyfit(x, rates, 1)[0]
    return float(slope * (len(rates) - 1) / mean)


def successful_rates(machine: Machine) -> np.ndarray:
    """Successful requests per second in BIN_S bins from the first sample to the last sample's start."""
    return binned(machine.samples.start, machine.samples.ok, machine.t0)


def binned(start: np.ndarray, ok: np.ndarray, t0: float) -> np.ndarray:
    """Successful requests per second in BIN_S bins from t0 to the last start (whole bins only)."""
    if len(start) == 0:
        return np.zeros(0)
    rel = start[ok] - t0
    n = int((start.max() - t0) // BIN_S)       # whole bins only
    if n <= 0:
        return np.zeros(0)
    rel = rel[rel < n * BIN_S]
    return np.bincount((rel // BIN_S).astype(int), minlength=n)[:n] / BIN_S


def settled_bin(rates: np.ndarray, first: int = 0) -> int | None:
    """The first bin (from `first`, where the JIT went quiet) from which the rest's fitted line changes by at most
    MAX_DRIFT of its mean, with at least max(MIN_REST_S, MIN_REST_SHARE of the run) left; None where none does (or
    the run is shorter than MIN_REST_S). The rule the report judges a run by, and the one the lab ends a load by
    (--until-settled)."""
    total = len(rates) * BIN_S
    min_rest = max(MIN_REST_S, MIN_REST_SHARE * total)
    if total < MIN_REST_S:
        return None
    for k in range(first, len(rates)):
        rest = rates[k:]
        if len(rest) * BIN_S < min_rest:
            break
        d = _drift(rest)
        if not math.isnan(d) and abs(d) <= MAX_DRIFT:
            return k
    return None


def quiet_bin(times: np.ndarray, compiled_s: np.ndarray, bins: int) -> int | None:
    """The first of `bins` BIN_S bins from which the JIT took at most QUIET_CPU on average over the rest; None where
    it never did. times: seconds since the first sample; compiled_s: the JIT's compiling seconds so far at each."""
    edges = np.interp(np.arange(bins + 1) * BIN_S, times, compiled_s)
    for k in range(bins):
        if (edges[-1] - edges[k]) / ((bins - k) * BIN_S) <= QUIET_CPU:
            return k
    return None


def steady_start(rates: np.ndarray, jit: tuple[np.ndarray, np.ndarray] | None) -> tuple[int | None, int | None]:
    """(the first steady bin, the bin from which the JIT was quiet): jit is (seconds since the first sample, compiling
    seconds so far), or None where it was not recorded (the throughput alone judges: quiet from the start). The
    first is None where the JIT never went quiet, or the throughput never settled after it. The rule the report and
    the load (--until-settled) both apply."""
    quiet = quiet_bin(*jit, len(rates)) if jit is not None else 0
    return (None if quiet is None else settled_bin(rates, quiet)), quiet


def jit_timeline(machine: Machine) -> tuple[np.ndarray, np.ndarray] | None:
    """The JIT's compiling seconds so far (seconds since the first sample, cumulative seconds) from PCP's rates, or
    None where they were not recorded."""
    metrics, t0 = getattr(machine, "metrics", None), machine.t0
    times, rate_ms = metrics.series(JIT_METRIC) if metrics is not None else (np.zeros(0), np.zeros(0))
    if len(times) < 2 or t0 is None:
        return None
    compiled = np.concatenate([[0.0], np.cumsum(np.nan_to_num(rate_ms[1:]) * np.diff(times))]) / 1000.0
    return times - t0, compiled


def compiling_cpu(machine: Machine) -> float:
    """CPUs busy compiling (the JIT's threads), on average over the measured window; nan where either is unknown."""
    system, load = getattr(machine, "system", None), getattr(machine, "load", None)
    jit, window = getattr(system, "jit_s", None), getattr(load, "window_s", None)
    if not all(isinstance(x, (int, float)) and not math.isnan(x) for x in (jit, window)) or not window:
        return math.nan
    return jit / window


def find_steady(machine: Machine) -> Steady:
    """The machine's steady state, or why it could not be judged."""
    if machine.samples is None or len(machine.samples) == 0:
        return Steady(False, why="no samples")
    if machine.stop is not None:
        return Steady(False, why="it stopped answering")
    rates = successful_rates(machine)
    if len(rates) * BIN_S < MIN_REST_S:
        return Steady(False, why=f"the run is shorter than {MIN_REST_S:.0f} s")
    jit = jit_timeline(machine)
    k, quiet = steady_start(rates, jit)
    quiet_s = math.nan if jit is None or quiet is None else quiet * BIN_S
    if k is not None:
        return Steady(True, start_s=k * BIN_S, drift=_drift(rates[k:]), quiet_s=quiet_s)
    warm = int(machine.window.warmup_s // BIN_S) if machine.window else 0
    # the JIT's doing where the throughput alone would have settled: it went quiet too late, or never
    return Steady(False, drift=_drift(rates[min(warm, max(0, len(rates) - 3)):]), quiet_s=quiet_s,
                  compiling=quiet != 0 and settled_bin(rates) is not None)
