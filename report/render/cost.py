"""The summary's "The lab's own cost" section: per machine, the shares of its instruments and of the mock
(report/explain/cost.py) against the budget, the load generator's line (run.json `load_generator`) and the host's
other processes' (run.json `host_outside`, lab/experiment/host_watch.py)."""
from __future__ import annotations

import math

from report.explain.cost import INSTRUMENT_BUDGET, machine_cost, pct
from report.read.runinfo import RunInfo
from report.stats.machine import Machine


def cost_lines(run: RunInfo, machines: dict[str, Machine]) -> list[str]:
    """Markdown: '## The lab's own cost': a table per machine and the load generator's line."""
    lines = ["## The lab's own cost", "",
             f"Share of each machine's CPU (all its vCPUs) and RAM over the measured window. Budget: the "
             f"instruments (PCP and the scrapes) at most {100 * INSTRUMENT_BUDGET:.0f} % of the CPU. The mock is "
             "the scenario's external service: listed, not counted as an instrument. The profiler's cost is "
             "inside the JVM's own CPU (see report/README.md: the lab's own cost).", "",
             "| machine | what | CPU | memory (mean RSS) | note |", "| --- | --- | --- | --- | --- |"]
    for m in machines.values():
        cost = machine_cost(m)
        if not cost.shares:
            lines.append(f"| {m.name} | — | — | — | no PCP data |")
            continue
        for s in cost.shares:
            memory = "—" if math.isnan(s.rss_mib) else f"{s.rss_mib:.0f} MiB ({pct(s.rss_share)})"
            lines.append(f"| {m.name} | {s.what} | {pct(s.cpu, s.at_most)} | {memory} | {s.note} |")
        lines.append(f"| {m.name} | **instruments together** | **{pct(cost.instruments_cpu, cost.at_most)}** | | "
                     f"{cost.verdict} |")
    lines += ["", load_generator_line(run), "", outside_line(run), ""]
    return lines


def load_generator_line(run: RunInfo) -> str:
    """One sentence on JMeter's host: its CPU, the host's, the timer lag, and whether it was saturated."""
    summary = run.get("load_generator")
    if not summary or not summary.get("seconds"):
        return "Load generator: not watched in this run (no host/load-generator.csv)."
    text = (f"Load generator (the host, {summary.get('host_cpus')} cores): JMeter used "
            f"{summary.get('jmeter_cpu_pct_mean')} % of one core on average "
            f"(p99 {summary.get('jmeter_cpu_pct_p99')} %), "
            f"the host was {summary.get('host_busy_pct_mean')} % busy (p99 {summary.get('host_busy_pct_p99')} %), "
            f"timer lag p50 {summary.get('timer_lag_ms_p50')} ms, p99 {summary.get('timer_lag_ms_p99')} ms "
            f"over {summary.get('seconds')} s.")
    if summary.get("saturated"):
        return (f"> **The load generator was saturated:** {summary.get('why')}. {text} Its figures understate the "
                "machines.")
    return text + " Not saturated."


def _heaviest(summary: dict) -> str:
    return ", ".join(f"`{p.get('command')}` (pid {p.get('pid')}) {p.get('cpu_pct')} %"
                     for p in summary.get("heaviest") or [])


def outside_line(run: RunInfo) -> str:
    """One sentence on what else ran on the host during the load: the CPU share of processes outside the lab, the
    heaviest named, and the kernel's and the lab's shares beside it."""
    summary = run.get("host_outside")
    if not summary or not summary.get("seconds"):
        return "The host's other processes: not watched in this run (run.json has no host_outside)."
    named = _heaviest(summary)
    heaviest = f", the heaviest {named}" if named else ""
    return (f"The host's other processes took {summary.get('outside_cpu_pct')} % of its CPU "
            f"({summary.get('host_cpus')} cores) over {summary.get('seconds'):.0f} s of load{heaviest}; the kernel's "
            f"threads {summary.get('kernel_cpu_pct')} %, the lab's own processes (the machines, JMeter, the lab) "
            f"{summary.get('lab_cpu_pct')} %.")


def outside_warning(run: RunInfo) -> str | None:
    """The warning at the summary's top when processes outside the lab passed the threshold the lab measured."""
    summary = run.get("host_outside", default=None) or {}
    if not summary.get("warn"):
        return None
    return (f"> **Something else ran on the host during the load**: processes outside the lab took "
            f"{summary.get('outside_cpu_pct')} % of the host's CPU (the lab warns from {summary.get('threshold_pct')} "
            f"%): {_heaviest(summary)}. They took it from the machines and JMeter (from one machine more than the "
            "other where the machines are pinned to cores): repeat the run on a quiet host before trusting a small "
            "difference.")
