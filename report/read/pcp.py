"""Reads a machine's pcp/metrics.csv (time,metric,instance,value; counters already per second) and gives
time series of one metric, summed over the instances that match."""
from __future__ import annotations

import csv
import re
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path

import numpy as np

Match = Callable[[str], bool]
"""An instance filter: true for the instances to sum (see contains)."""
Series = tuple[np.ndarray, np.ndarray]
"""(times, values) of one metric."""

# The CPU states the lab records (rate-converted: ms per second over all CPUs), by the name charts give them
CPU_STATES = {"user": "kernel.all.cpu.user", "sys": "kernel.all.cpu.sys", "iowait": "kernel.all.cpu.wait.total",
              "steal": "kernel.all.cpu.steal", "idle": "kernel.all.cpu.idle"}


class Metrics:
    """All values of one metrics.csv, by metric name: {metric: (times, instances, values)} arrays."""

    def __init__(self, by_metric: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]] | None = None,
                 bad_rows: int = 0) -> None:
        self.by_metric = by_metric or {}
        self.bad_rows = bad_rows

    def has(self, metric: str) -> bool:
        return metric in self.by_metric

    def instances(self, metric: str) -> list[str]:
        return sorted(set(self.by_metric[metric][1])) if metric in self.by_metric else []

    def series(self, metric: str, match: Match | None = None) -> Series:
        """(times, values) of `metric`, values summed per timestamp over the instances for which
        match(instance) is true (all when match is None). Empty arrays when nothing matches."""
        if metric not in self.by_metric:
            return np.array([]), np.array([])
        times, instances, values = self.by_metric[metric]
        if match is not None:
            keep = np.fromiter((bool(match(i)) for i in instances), dtype=bool, count=len(instances))
            times, values = times[keep], values[keep]
        if len(times) == 0:
            return np.array([]), np.array([])
        uniq, idx = np.unique(times, return_inverse=True)
        return uniq, np.bincount(idx, weights=values, minlength=len(uniq))

    def name_processes(self, command_lines: dict[str, str]) -> None:
        """hotproc instances renamed "PID command line" from {instance: command line} (pcp/processes.csv):
        PCP names a process by its executable only, and python3 is both the mock and PCP's own agent."""
        for metric, (times, instances, values) in self.by_metric.items():
            if metric.startswith("hotproc."):
                renamed = [f"{i.split(' ', 1)[0]} {command_lines[i]}" if i in command_lines else i for i in instances]
                self.by_metric[metric] = (times, np.asarray(renamed, dtype=object), values)

    def cpu_shares(self) -> dict[str, Series]:
        """{state: (times, %)} of user, sys, iowait and steal: each state's share of all the CPU time recorded at
        that sample (idle included), as mpstat computes it; {} without idle, the share's denominator.
        Not the rate over 1000 ms × ncpu: when a starved guest's sampling stalls, the rates pmrep derives for
        one sample can add up to several times the machine's capacity and to a fraction of it at the next
        (793 % of 2 vCPUs in results/20261124T122420Z-full-explain); shares stay within 0…100 %."""
        found = {state: self.series(metric) for state, metric in CPU_STATES.items()}
        found = {state: tv for state, tv in found.items() if len(tv[0])}
        if "idle" not in found:
            return {}
        common = found["idle"][0]
        for t, _ in found.values():
            common = np.intersect1d(common, t)
        values = {state: v[np.searchsorted(t, common)] for state, (t, v) in found.items()}
        total = sum(values.values())
        ok = total > 0
        return {state: (common[ok], 100.0 * v[ok] / total[ok]) for state, v in values.items() if state != "idle"}

    def first_time(self) -> float | None:
        firsts = [t.min() for t, _, _ in self.by_metric.values() if len(t)]
        return min(firsts) if firsts else None


def read_metrics(path: str | Path) -> Metrics:
    """Reads the tidy CSV. Rows with a missing or non-numeric value are skipped and counted."""
    cols: defaultdict[str, tuple[list[float], list[str], list[float]]] = defaultdict(lambda: ([], [], []))
    bad = 0
    with open(path, newline="", encoding="utf-8", errors="replace") as f:
        rows = csv.reader(f)
        header = next(rows, None) or []
        col = {name: i for i, name in enumerate(header)}
        if not {"time", "metric", "value"} <= col.keys():
            raise ValueError(f"{path}: expected a header time,metric,instance,value")
        i_t, i_m, i_v, i_i = col["time"], col["metric"], col["value"], col.get("instance")
        for row in rows:
            try:
                t, v = float(row[i_t]), float(row[i_v])
            except (ValueError, IndexError):
                bad += 1
                continue
            times, instances, values = cols[row[i_m]]
            times.append(t)
            instances.append(row[i_i] if i_i is not None and i_i < len(row) else "")
            values.append(v)
    by_metric = {m: (np.asarray(t, dtype=float), np.asarray(i, dtype=object), np.asarray(v, dtype=float))
                 for m, (t, i, v) in cols.items()}
    return Metrics(by_metric, bad)


def read_processes(path: str | Path) -> dict[str, str]:
    """pcp/processes.csv (instance,psargs) → {instance: command line}; {} when absent or unreadable."""
    try:
        with open(path, newline="", encoding="utf-8", errors="replace") as f:
            return {row["instance"]: row["psargs"] for row in csv.DictReader(f) if row.get("psargs")}
    except (OSError, KeyError, csv.Error):
        return {}


def contains(*words: str) -> Match:
    """Instance filter: true when the instance name contains any of `words` (case-insensitive).
    PCP instance names vary by PMDA ('0 area:heap id:G1 Eden Space', '012345 /usr/bin/java -jar …')."""
    lowered = [w.lower() for w in words]
    return lambda instance: any(w in instance.lower() for w in lowered)


def connector(instance: str) -> str:
    """A Tomcat connector's name from its instance ('0 connector:http-nio-8080 protocol:…' → 'http-nio-8080')."""
    found = re.search(r"connector[:=]\"?([\w.\-]+)", instance)
    return found.group(1) if found else instance
