"""What an instrument costs the JVM (`python -m report overhead`): one configuration's successful TPS, the JVM's
CPU per second and per successful request and its peak RSS over a run's measured window; two runs of the same
load, one with the instrument and one without, give its cost (report/render/overhead.py)."""
from __future__ import annotations

import math
from pathlib import Path

from report.read.pcp import contains
from report.read.runinfo import RunInfo
from report.stats.figures import max_in_window, mean_in_window
from report.stats.machine import load_machine


def jvm_figures(folder: str | Path, name: str) -> dict[str, float]:
    """{tps, cpu_ms_s, cpu_ms_per_request, rss_mib} of one configuration over its measured window."""
    run = RunInfo(folder)
    machine = load_machine(run, name, run.warmup_s or 0)
    figures = {"tps": machine.load.tps, "cpu_ms_s": math.nan, "cpu_ms_per_request": math.nan,
               "rss_mib": math.nan}
    if machine.metrics is None or machine.window is None:
        return figures
    java = contains("java")
    cpu = mean_in_window(machine.metrics, "hotproc.psinfo.utime", machine.window, java) + \
        mean_in_window(machine.metrics, "hotproc.psinfo.stime", machine.window, java)
    figures.update(cpu_ms_s=cpu, cpu_ms_per_request=cpu / figures["tps"] if figures["tps"] else math.nan,
                   rss_mib=max_in_window(machine.metrics, "hotproc.psinfo.rss", machine.window, java) / 1024)
    return figures
