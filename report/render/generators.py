"""The summary's "Load generators" section of a distributed run: each generator's CPU and memory over the measured
window and whether it was saturated (report/stats/generators.py)."""
from __future__ import annotations

import math

from report.read.runinfo import RunInfo
from report.stats.generators import SATURATED_BUSY_PCT, figures, measured_window
from report.stats.machine import Machine


def _num(value: float | None, unit: str = "") -> str:
    return "—" if value is None or (isinstance(value, float) and math.isnan(value)) else f"{value:.0f}{unit}"


def lines(run: RunInfo, machines: dict[str, Machine]) -> list[str]:
    """Markdown: '## Load generators', or nothing for a run the controller loaded itself."""
    engines = [e for e in (run.get("load") or {}).get("engines") or [] if e.get("name")]
    if not engines:
        return []
    problems = run.get("loadgen_problems") or {}
    window = measured_window(machines)
    out = ["## Load generators", "",
           f"JMeter ran as {len(engines)} remote engine(s), each with 1/{len(engines)} of the load; this machine was "
           "their controller. Each generator's CPU busy (all its CPUs) and lowest available memory over the measured "
           f"window, from its PCP recording; saturated when its p99 CPU busy reached {SATURATED_BUSY_PCT:.0f} %.", "",
           "| generator | address | CPUs | CPU busy mean | CPU busy p99 | memory available (lowest) | verdict |",
           "| --- | --- | --- | --- | --- | --- | --- |"]
    saturated = []
    for engine in engines:
        name = engine["name"]
        csv_path = run.folder / "loadgen" / name / "pcp" / "metrics.csv"
        if not csv_path.is_file():
            why = problems.get(name, "no PCP data")
            out.append(f"| {name} | {engine.get('address')} | — | — | — | — | {why} |")
            continue
        f = figures(csv_path, window)
        if f["samples"] == 0:
            verdict = "no samples in the measured window"
        elif f["busy_p99"] >= SATURATED_BUSY_PCT:
            verdict = "**saturated**"
            saturated.append(name)
        else:
            verdict = "not saturated"
        out.append(f"| {name} | {engine.get('address')} | {_num(f['cpus'])} | {_num(f['busy_mean'], ' %')} | "
                   f"{_num(f['busy_p99'], ' %')} | {_num(f['available_min_mb'], ' MB')} | {verdict} |")
    if saturated:
        out += ["", f"> **A load generator was saturated** ({', '.join(saturated)}): the machines' figures understate "
                "what they can do; add generators or lower the load."]
    return out + [""]
