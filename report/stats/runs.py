"""Several run folders at once (combined trials, comparisons): each read as its own report reads it, with
its paired analysis drawn from a seed of its own so that resamples of different runs are independent."""
import math
from dataclasses import dataclass

import numpy as np

from . import MACHINES
from .machine import load_machine
from .runinfo import RunInfo
from .uncertainty import SEED, analyse
from .verdict import analyse_window, design


@dataclass
class LoadedRun:
    folder: object
    run: RunInfo
    machines: dict
    analysis: object        # uncertainty.Analysis or None

    @property
    def design(self):
        return design(self.run)

    @property
    def swapped(self):
        """True when the default configuration ran on machine tuned (a crossover trial's other half)."""
        return self.design["machines"]["default"] != "default"


def load_runs(folders, warmup=None):
    """LoadedRun per folder, in the given order; the i-th analysed with seed SEED + 1 + i."""
    loaded = []
    for i, folder in enumerate(folders):
        run = RunInfo(folder)
        warmup_s = float(warmup) if warmup is not None else float(run.warmup_s or 0.0)
        machines = {name: load_machine(run, name, warmup_s) for name in MACHINES}
        paired = analyse_window(machines)
        analysis = analyse(paired, seed=SEED + 1 + i) if paired is not None else None
        loaded.append(LoadedRun(folder, run, machines, analysis))
    return loaded


def log_or_raw(kind, values):
    """Ratios are combined as logs, differences as they are."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.log(values) if kind == "ratio" else np.asarray(values, dtype=float)


def back(kind, x):
    return math.exp(x) if kind == "ratio" else x
