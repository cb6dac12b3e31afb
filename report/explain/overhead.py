"""What an instrument costs the JVM (`python -m report overhead`): one configuration's successful TPS, the JVM's
CPU per second and per successful request and its peak RSS over a run's measured window — the figures the run's own
report reads (report/stats/figures.py SystemFigures); two runs of the same load, one with the instrument and one
without, give its cost (report/render/overhead.py)."""
from __future__ import annotations

import math
from pathlib import Path

from report.read.runinfo import RunInfo
from report.stats.machine import load_machine


def jvm_figures(folder: str | Path, name: str) -> dict[str, float]:
    """{tps, cpu_ms_s, cpu_ms_per_request, rss_mib} of one configuration over its measured window (nan where a
    figure was not recorded)."""
    run = RunInfo(folder)
    machine = load_machine(run, name, run.warmup_s or 0)
    load, system = machine.load, machine.system
    return {"tps": load.tps, "cpu_ms_s": system.jvm_cpu_ms / load.window_s if load.window_s else math.nan,
            "cpu_ms_per_request": machine.jvm_cpu_per_success_ms,
            "rss_mib": system.peak_rss_mib.get("java", math.nan)}
