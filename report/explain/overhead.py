"""What an instrument costs the JVM, from two runs of the same load, one with it and one without (e.g.
profiling on, and `--set profiler_events=[]`): per configuration, successful TPS, the JVM's CPU per second
and per successful request, its peak RSS, and the change. Prints figures; asserts nothing.

    .venv/bin/python -m report.overhead results/<run with> results/<run without>

Two runs are not paired in time: a change smaller than the runs' own drift (see an A/A pair with
`./start.sh compare`) is not a cost that was measured.
"""
import argparse
import math
import sys
from pathlib import Path

from . import MACHINES
from .machine import load_machine
from .pcp import contains
from .runinfo import RunInfo
from .stats import mean_in_window, max_in_window


def jvm_figures(folder, name):
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


def _change(with_, without):
    return "—" if not without or math.isnan(with_) or math.isnan(without) else f"{100 * (with_ / without - 1):+.1f} %"


def table(with_folder, without_folder):
    rows = ["| configuration | figure | with | without | change |", "| --- | --- | ---: | ---: | ---: |"]
    for name in MACHINES:
        a, b = jvm_figures(with_folder, name), jvm_figures(without_folder, name)
        for key, label, unit in (("tps", "successful TPS", "req/s"), ("cpu_ms_s", "JVM CPU", "ms/s"),
                                 ("cpu_ms_per_request", "JVM CPU per successful request", "ms"),
                                 ("rss_mib", "JVM peak RSS", "MiB")):
            rows.append(f"| {name} | {label} | {a[key]:.1f} {unit} | {b[key]:.1f} {unit} | {_change(a[key], b[key])} |")
    return rows


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m report.overhead", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("with_folder", type=Path, help="the run with the instrument")
    parser.add_argument("without_folder", type=Path, help="the same load without it")
    args = parser.parse_args(argv)
    for folder in (args.with_folder, args.without_folder):
        if not (folder / "run.json").is_file():
            parser.error(f"{folder}: not a run folder (no run.json)")
    print(f"with: {args.with_folder.name}   without: {args.without_folder.name}")
    print("\n".join(table(args.with_folder, args.without_folder)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
