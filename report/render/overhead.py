"""The overhead command's table: per configuration, each JVM figure with the instrument, without it, and the
change (report/explain/overhead.py)."""
from __future__ import annotations

import math
from pathlib import Path

from report import MACHINES
from report.explain.overhead import jvm_figures


def _change(with_: float, without: float) -> str:
    return "—" if not without or math.isnan(with_) or math.isnan(without) else f"{100 * (with_ / without - 1):+.1f} %"


def table(with_folder: str | Path, without_folder: str | Path) -> list[str]:
    rows = ["| configuration | figure | with | without | change |", "| --- | --- | ---: | ---: | ---: |"]
    for name in MACHINES:
        a, b = jvm_figures(with_folder, name), jvm_figures(without_folder, name)
        for key, label, unit in (("tps", "successful TPS", "req/s"), ("cpu_ms_s", "JVM CPU", "ms/s"),
                                 ("cpu_ms_per_request", "JVM CPU per successful request", "ms"),
                                 ("rss_mib", "JVM peak RSS", "MiB")):
            rows.append(f"| {name} | {label} | {a[key]:.1f} {unit} | {b[key]:.1f} {unit} | {_change(a[key], b[key])} |")
    return rows
