"""The paired analysis of one run's two machines (stats/uncertainty.py over the windows both were measured in), and
several run folders at once (combined trials, comparisons): each read as its own report reads it, with its
paired analysis drawn from a seed of its own so that resamples of different runs are independent."""
from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from report import MACHINES
from report.output import warn
from report.read.runinfo import RunInfo, design
from report.stats.figures import jvm_cpu_windows
from report.stats.machine import Machine, load_machine
from report.stats.uncertainty import SEED, Analysis, analyse
from report.stats.windows import WINDOW_S, Paired, attach_cpu, paired_windows


def analyse_window(machines: dict[str, Machine]) -> Paired | None:
    """The paired windows both machines were measured in, or None."""
    ms = [machines[m] for m in MACHINES]
    if any(m.samples is None or len(m.samples) == 0 or m.window is None for m in ms):
        return None
    start = max(m.window.start for m in ms)
    end = min(m.window.end for m in ms)      # whole seconds only, up to the earlier machine's last sample
    paired = paired_windows({m.name: m.samples for m in ms}, start, end)
    if paired is not None:
        attach_cpu(paired, {m.name: jvm_cpu_windows(m.metrics, paired.start, paired.n, WINDOW_S) for m in ms},
                   max((m.cpu_step_s for m in ms if not math.isnan(m.cpu_step_s)), default=WINDOW_S))
    return paired


def analyse_machines(machines: dict[str, Machine], seed: int = SEED) -> Analysis | None:
    """The paired analysis of a run's two machines, or None."""
    paired = analyse_window(machines)
    return analyse(paired, seed=seed) if paired is not None else None


@dataclass
class LoadedRun:
    folder: str | Path
    run: RunInfo
    machines: dict[str, Machine]
    analysis: Analysis | None

    @property
    def design(self) -> dict[str, Any]:
        return design(self.run)

    @property
    def swapped(self) -> bool:
        """True when the default configuration ran on machine tuned (a crossover trial's other half)."""
        return self.design["machines"]["default"] != "default"


def load_runs(folders: list[str] | list[Path], warmup: float | None = None) -> list[LoadedRun]:
    """LoadedRun per folder, in the given order; the i-th analysed with seed SEED + 1 + i."""
    loaded = []
    for i, folder in enumerate(folders):
        run = RunInfo(folder)
        for problem in run.problems:        # named, and the run read as far as it can be (never fatal)
            warn(f"{run.folder}: {problem}")
        warmup_s = float(warmup) if warmup is not None else float(run.warmup_s or 0.0)
        machines = {name: load_machine(run, name, warmup_s) for name in MACHINES}
        paired = analyse_window(machines)
        analysis = analyse(paired, seed=SEED + 1 + i) if paired is not None else None
        loaded.append(LoadedRun(folder, run, machines, analysis))
    return loaded


def back(kind: str, x: float) -> float:
    return math.exp(x) if kind == "ratio" else x
