"""Everything the report knows about one machine of a run: its samples, metrics, measured window, figures,
stop, steady state and log hints. Missing or unreadable files leave the part empty and add a note."""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

import numpy as np

from report.read.jtl import Samples, read_jtl
from report.read.logs import Hint, log_hints
from report.read.pcp import Metrics, read_metrics, read_processes
from report.read.runinfo import RunInfo
from report.stats.figures import LoadFigures, SystemFigures, Window, load_figures, system_figures
from report.stats.steady import Steady, find_steady
from report.stats.stopped import Stop, find_stop


@dataclass
class Machine:
    name: str
    folder: Path | None = None      # the machine's folder in the run
    samples: Samples | None = None
    metrics: Metrics | None = None
    window: Window | None = None    # None when there is no time reference at all
    load: LoadFigures = field(default_factory=LoadFigures)
    system: SystemFigures = field(default_factory=SystemFigures)
    stop: Stop | None = None
    steady: Steady | None = None    # where its throughput settled, or None without samples
    hints: list[Hint] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # what could not be read
    cpu_step_s: float = math.nan    # how often PCP sampled the processes' CPU (the knob pcp_scan_interval_s, else
    #                                 the export's own interval): the resolution of the JVM's CPU per window

    @property
    def t0(self) -> float | None:
        return self.window.t0 if self.window else None

    @property
    def jvm_cpu_per_success_ms(self) -> float:
        """The JVM's CPU time per successful request over the measured window, ms (nan where either is unknown)."""
        return self.system.jvm_cpu_ms / self.load.successes if self.load.successes else math.nan


def _parse_utc(text: object) -> float | None:
    try:
        return datetime.fromisoformat(str(text).replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def load_machine(run: RunInfo, name: str, warmup_s: float) -> Machine:
    """One machine of a run: its files read, then its figures from the warm-up on."""
    return windowed(read_machine(run, name), run, warmup_s)


def read_machine(run: RunInfo, name: str) -> Machine:
    """The machine's files read (samples, metrics, log hints), nothing derived yet."""
    mdir = run.machine_dir(name)
    machine = Machine(name, folder=mdir)
    jtl, csv_path = mdir / "jmeter.jtl", mdir / "pcp" / "metrics.csv"
    if jtl.is_file():
        try:
            machine.samples = read_jtl(jtl)
        except (OSError, ValueError) as e:
            machine.notes.append(f"jmeter.jtl unreadable: {e}")
        else:
            if machine.samples.bad_rows:
                machine.notes.append(f"jmeter.jtl: {machine.samples.bad_rows} unreadable rows skipped")
            if len(machine.samples) == 0:
                machine.notes.append("jmeter.jtl has no samples")
    if csv_path.is_file():
        try:
            machine.metrics = read_metrics(csv_path)
        except (OSError, ValueError) as e:
            machine.notes.append(f"pcp/metrics.csv unreadable: {e}")
        else:
            machine.metrics.name_processes(read_processes(mdir / "pcp" / "processes.csv"))
    machine.hints = log_hints(mdir)
    return machine


def windowed(read: Machine, run: RunInfo, warmup_s: float) -> Machine:
    """The machine's window, figures, stop and steady state with this warm-up excluded (a copy: the files are
    read once, even where the report measures again from where both settled)."""
    machine = Machine(read.name, folder=read.folder, samples=read.samples, metrics=read.metrics, hints=read.hints,
                      notes=list(read.notes))
    name = machine.name
    # time zero: the first sample; without samples the run's start, then the first PCP value
    has_samples = machine.samples is not None and len(machine.samples) > 0
    if has_samples:
        t0, end = machine.samples.start[0], machine.samples.start[-1]
    else:
        t0 = _parse_utc(run.get("started")) if run.get("started") else None
        if t0 is None and machine.metrics is not None:
            t0 = machine.metrics.first_time()
        end = None
        if machine.metrics is not None and machine.metrics.by_metric:
            end = max(t.max() for t, _, _ in machine.metrics.by_metric.values() if len(t))
    if t0 is not None:
        machine.window = Window(t0=float(t0), warmup_s=float(warmup_s), end=float(end if end is not None else t0))
    if has_samples:
        machine.load = load_figures(machine.samples, machine.window)
        machine.stop = find_stop(machine.samples)
        machine.steady = find_steady(machine)
    if machine.metrics is not None and machine.window is not None:
        machine.system = system_figures(machine.metrics, machine.window)
    if machine.metrics is not None:
        times, _ = machine.metrics.series("hotproc.psinfo.utime")
        exported = float(np.median(np.diff(times))) if len(times) > 1 else math.nan
        machine.cpu_step_s = float(run.get("machines", name, "knobs", "pcp_scan_interval_s", default=exported))
    return machine
