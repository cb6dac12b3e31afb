"""Where a machine's throughput settles (steady state), from the data rather than a fixed warm-up.

Successful requests are counted in 10 s bins from the machine's first sample. For each candidate start
(every bin, from the first on) a least-squares line is fitted to the bins from there to the end; the
machine is steady from the first start whose line changes by at most 10 % of the mean rate across the rest
of the run, with at least a minute and a third of the run left. A run that never meets it "never settled";
its drift is the fitted change over the measured window (Georges et al. 2007: measure once the figures
stop trending; the rule and its constants: report/README.md).
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


@dataclass
class Steady:
    settled: bool
    start_s: float = math.nan      # seconds since the machine's first sample (settled)
    drift: float = math.nan        # relative change across the measured window (fitted), e.g. +0.35
    why: str = ""                  # when it could not be judged


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


def settled_bin(rates: np.ndarray) -> int | None:
    """The first bin from which the rest's fitted line changes by at most MAX_DRIFT of its mean, with at least
    max(MIN_REST_S, MIN_REST_SHARE of the run) left; None where none does (or the run is shorter than MIN_REST_S).
    The rule the report judges a run by, and the one the lab ends a load by (--until-settled)."""
    total = len(rates) * BIN_S
    min_rest = max(MIN_REST_S, MIN_REST_SHARE * total)
    if total < MIN_REST_S:
        return None
    for k in range(len(rates)):
        rest = rates[k:]
        if len(rest) * BIN_S < min_rest:
            break
        d = _drift(rest)
        if not math.isnan(d) and abs(d) <= MAX_DRIFT:
            return k
    return None


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
    k = settled_bin(rates)
    if k is not None:
        return Steady(True, start_s=k * BIN_S, drift=_drift(rates[k:]))
    warm = int(machine.window.warmup_s // BIN_S) if machine.window else 0
    return Steady(False, drift=_drift(rates[min(warm, max(0, len(rates) - 3)):]))
