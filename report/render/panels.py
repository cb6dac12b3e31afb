"""What each chart of report.html shows: per machine a Panel (named series, x in seconds since its first sample,
or a note saying why there is none) built from its samples and metrics; CHARTS lists them in the page's order.
Drawing them: report/render/charts.py."""
from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from report.explain import path
from report.read.pcp import CPU_STATES, Match, connector, contains
from report.stats.figures import PROCESS_GROUPS, percentile, process_match
from report.stats.machine import Machine

MAX_POINTS = 240          # time bins per panel: enough to see, small PNGs
MIN_LATENCY_BIN_S = 5     # percentiles need enough samples per bin
TOP_ERROR_TYPES = 4


@dataclass
class Panel:
    """What one machine contributes to a chart: named series (x relative to its t0) or a note."""
    series: list[tuple[str, np.ndarray, np.ndarray]] = field(default_factory=list)  # (label, x, y)
    note: str = ""
    stacked: bool = False
    hlines: list[tuple[str, float]] = field(default_factory=list)  # (label, y)
    colors: list[str] | None = None  # one per series; matplotlib's cycle when None


@dataclass
class Chart:
    key: str
    title: str
    ylabel: str
    about: str  # one line under the title: what it shows
    build: Callable[[Machine, float], Panel]  # the machine's panel, given the span of the longest machine's samples


def bin_width(span: float, minimum: float = 1) -> float:
    return max(minimum, math.ceil(span / MAX_POINTS)) if span > 0 else minimum


def samples_span(machine: Machine) -> float:
    s = machine.samples
    return float(s.end.max() - machine.t0) if s is not None and len(s) else 0.0


def _no_samples(machine: Machine) -> Panel | None:
    if machine.samples is None or len(machine.samples) == 0:
        return Panel(note="no data (jmeter.jtl missing or empty)")
    return None


def throughput(machine: Machine, span: float) -> Panel:
    empty = _no_samples(machine)
    if empty:
        return empty
    s = machine.samples
    width = bin_width(span)
    rel = s.start - machine.t0
    n = int(rel.max() // width) + 1
    idx = (rel // width).astype(int)
    ok = np.bincount(idx[s.ok], minlength=n) / width
    failed = np.bincount(idx[~s.ok], minlength=n) / width
    x = np.arange(n) * width + width / 2
    return Panel(series=[("successful", x, ok), ("failed", x, failed)], colors=["tab:green", "tab:red"])


def latency(machine: Machine, span: float) -> Panel:
    empty = _no_samples(machine)
    if empty:
        return empty
    s = machine.samples
    width = bin_width(span, MIN_LATENCY_BIN_S)
    rel = s.start[s.ok] - machine.t0
    elapsed = s.elapsed_ms[s.ok]
    if len(rel) == 0:
        return Panel(note="no successful request")
    idx = (rel // width).astype(int)
    n = int(idx.max()) + 1
    order = np.argsort(idx, kind="stable")
    bounds = np.searchsorted(idx[order], np.arange(n + 1))
    curves = {p: np.full(n, np.nan) for p in (50, 95, 99)}
    for b in range(n):
        chunk = elapsed[order[bounds[b]:bounds[b + 1]]]
        if len(chunk):
            for p in curves:
                curves[p][b] = percentile(chunk, p)
    x = np.arange(n) * width + width / 2
    return Panel(series=[(f"p{p}", x, curves[p]) for p in (99, 95, 50)])


def errors(machine: Machine, span: float) -> Panel:
    empty = _no_samples(machine)
    if empty:
        return empty
    s = machine.samples
    failed = ~s.ok
    if not failed.any():
        return Panel(note="no errors")
    width = bin_width(span)
    rel = s.start - machine.t0
    n = int(rel.max() // width) + 1
    names, counts = np.unique(s.error[failed].astype(str), return_counts=True)
    top = [str(x) for x in names[np.argsort(-counts)][:TOP_ERROR_TYPES]]
    series = []
    x = np.arange(n) * width + width / 2
    for name in top:
        pick = failed & (s.error == name)
        series.append((_short(name), x, np.bincount((rel[pick] // width).astype(int), minlength=n) / width))
    other = failed & ~np.isin(s.error.astype(str), top)
    if other.any():
        series.append(("other", x, np.bincount((rel[other] // width).astype(int), minlength=n) / width))
    return Panel(series=series, stacked=True)


def _short(error: str, width: int = 60) -> str:
    return error if len(error) <= width else error[:width - 1] + "…"


def _metric_panel(machine: Machine, wanted: list[tuple[str, str, Match | None]], scale: float = 1.0,
                  stacked: bool = False) -> Panel:
    """wanted: [(label, metric, match)], each summed over its matching instances, times scale."""
    m = machine.metrics
    if m is None:
        return Panel(note="no data (pcp/metrics.csv missing)")
    series = []
    for label, metric, match in wanted:
        t, v = m.series(metric, match)
        if len(t):
            series.append((label, t - machine.t0, v * scale))
    if not series:
        names = sorted({metric for _, metric, _ in wanted})
        return Panel(note="no data (" + ", ".join(names) + " not recorded)")
    return Panel(series=series, stacked=stacked)


def load_average(machine: Machine, span: float) -> Panel:
    return _metric_panel(machine, [(f"{w} min", "kernel.all.load", contains(f"{w} minute")) for w in (1, 5, 15)])


def _ncpu(machine: Machine) -> float | None:
    t, v = machine.metrics.series("hinv.ncpu") if machine.metrics else ((), ())
    return float(v[-1]) if len(v) and v[-1] > 0 else None


def cpu(machine: Machine, span: float) -> Panel:
    m = machine.metrics
    shares = m.cpu_shares() if m is not None else {}
    if shares:
        return Panel(series=[(state, t - machine.t0, v) for state, (t, v) in shares.items()], stacked=True)
    ncpu = _ncpu(machine)
    if m is not None and ncpu is None:
        return Panel(note="no data (hinv.ncpu not recorded: cannot scale to %)")
    # without idle: rate-converted CPU counters are ms of CPU per second over all CPUs, 1000 × ncpu = 100 %
    scale = 100.0 / (1000.0 * ncpu) if ncpu else 1.0
    wanted = [(state, metric, None) for state, metric in CPU_STATES.items() if state != "idle"]
    return _metric_panel(machine, wanted, scale, stacked=True)


def memory(machine: Machine, span: float) -> Panel:
    m = machine.metrics
    if m is None:
        return Panel(note="no data (pcp/metrics.csv missing)")
    tl, limit = m.series("openmetrics.machine.memory_total_kb")
    tp, phys = m.series("mem.physmem")
    if len(limit) and len(phys) and limit[-1] < phys[-1]:      # a container: its cgroup's, not the host's meminfo
        ta, available = m.series("openmetrics.machine.memory_available_kb")
        panel = Panel(stacked=True)
        if len(ta):
            panel.series.append(("used (the container's cgroup)", ta - machine.t0, (limit[-1] - available) / 1024.0))
        panel.hlines.append(("memory limit", float(limit[-1]) / 1024.0))
        return panel
    # mem.util.used includes the page cache and buffers: stack them on what processes use
    t, used = m.series("mem.util.used")
    tc, cached = m.series("mem.util.cached")
    tb, buffers = m.series("mem.util.bufmem")
    panel = Panel(stacked=True)
    if len(t) and np.array_equal(t, tc) and np.array_equal(t, tb):
        rel = t - machine.t0
        panel.series += [("used by processes", rel, (used - cached - buffers) / 1024.0),
                         ("cached", rel, cached / 1024.0), ("buffers", rel, buffers / 1024.0)]
    elif len(t):
        panel.series.append(("used", t - machine.t0, used / 1024.0))
    ts, total = m.series("mem.util.swapTotal")
    tf, free = m.series("mem.util.swapFree")
    if len(ts) and np.array_equal(ts, tf):
        panel.series.append(("swap used", ts - machine.t0, (total - free) / 1024.0))
    if len(phys):
        panel.hlines.append(("RAM", float(phys[-1]) / 1024.0))
    if not panel.series:
        panel.note = "no data (mem.util.* not recorded)"
    return panel


def heap(machine: Machine, span: float) -> Panel:
    return _metric_panel(machine, [("heap used", "openmetrics.app.jvm_memory_used_bytes", _heap_only)],
                         1 / (1024.0 * 1024.0))


def _heap_only(instance: str) -> bool:
    text = instance.lower()
    return "heap" in text and "nonheap" not in text


def gc_pauses(machine: Machine, span: float) -> Panel:
    # seconds of pause per second -> ms per s
    return _metric_panel(machine, [("GC pause", "openmetrics.app.jvm_gc_pause_seconds_sum", None)], 1000.0)


def tomcat_threads(machine: Machine, span: float) -> Panel:
    m = machine.metrics
    metric = "openmetrics.app.tomcat_connector_threads_busy"
    if m is None or not m.has(metric):
        return _metric_panel(machine, [("busy", metric, None)])
    wanted = [(connector(i), metric, lambda x, i=i: x == i) for i in m.instances(metric)]
    return _metric_panel(machine, wanted)


def httpd_workers(machine: Machine, span: float) -> Panel:
    return _metric_panel(machine, [("busy", "apache.busy_servers", None), ("idle", "apache.idle_servers", None)])


def mock_latency(machine: Machine, span: float) -> Panel:
    m = machine.metrics
    if m is None:
        return Panel(note="no data (pcp/metrics.csv missing)")
    t, total = m.series("openmetrics.mock.mock_http_request_duration_seconds_sum")
    t2, count = m.series("openmetrics.mock.mock_http_request_duration_seconds_count")
    if not len(t) or not len(t2):
        return Panel(note="no data (openmetrics.mock.mock_http_request_duration_seconds_* not recorded)")
    common, i1, i2 = np.intersect1d(t, t2, return_indices=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        mean_ms = np.where(count[i2] > 0, total[i1] / count[i2] * 1000.0, np.nan)
    return Panel(series=[("mean", common - machine.t0, mean_ms)])


def process_rss(machine: Machine, span: float) -> Panel:
    m = machine.metrics
    if m is None:
        return Panel(note="no data (pcp/metrics.csv missing)")
    wanted = [(g, "hotproc.psinfo.rss", process_match(m, g)) for g in PROCESS_GROUPS]
    return _metric_panel(machine, [w for w in wanted if w[2] is not None] or [("rss", "hotproc.psinfo.rss", None)],
                         1 / 1024.0)


def request_path(machine: Machine, span: float) -> Panel:
    """Mean time per request per bin, stacked by where it was spent (report/explain/path.py): HTTPD's share growing is a
    queue in front of the app."""
    width = bin_width(span, path.MIN_BIN_S)
    found = path.breakdown(machine, span, width)
    if not found.parts:
        return Panel(note="no data (" + ", ".join(found.missing) + " not recorded)")
    return Panel(series=[(label, found.x, ms) for label, ms in found.parts], stacked=True)


def tcp(machine: Machine, span: float) -> Panel:
    return _metric_panel(machine, [("established", "network.tcpconn.established", None),
                                   ("time_wait", "network.tcpconn.time_wait", None)])


CHARTS = [
    Chart("throughput", "Throughput", "req/s", "requests per second by outcome (JMeter, by start time)", throughput),
    Chart("latency", "Latency of successful requests", "ms", "p50 / p95 / p99 of JMeter's elapsed per time bin",
          latency),
    Chart("errors", "Errors by type", "req/s", "failed requests per second, stacked by error", errors),
    Chart("load", "Load average", "", "kernel.all.load", load_average),
    Chart("cpu", "CPU", "% of all CPUs",
          "user / sys / iowait / steal, stacked: shares of all CPU time, idle included (kernel.all.cpu.*)", cpu),
    Chart("memory", "Memory and swap", "MiB",
          "used by processes / cached / buffers / swap used, stacked; dotted: RAM", memory),
    Chart("heap", "JVM heap used", "MiB", "sum of the heap pools (jvm_memory_used_bytes, area heap)", heap),
    Chart("gc", "GC pauses", "ms per s", "time spent in GC pauses per second (jvm_gc_pause_seconds_sum)", gc_pauses),
    Chart("tomcat", "Tomcat busy threads", "threads", "per connector (tomcat_connector_threads_busy)",
          tomcat_threads),
    Chart("httpd", "HTTPD workers", "workers", "busy and idle workers (apache.busy_servers / idle_servers)",
          httpd_workers),
    Chart("path", "Request path", "ms per request",
          "mean time per request: in HTTPD and in front of the app (%D − the app's), in the app, waiting for the "
          "backend (route timers), stacked", request_path),
    Chart("mock", "Mock service latency", "ms", "mean time in the mock per request (its histogram sum / count)",
          mock_latency),
    Chart("rss", "Process memory (RSS)", "MiB", "hotproc.psinfo.rss per process group", process_rss),
    Chart("tcp", "TCP connections", "connections", "network.tcpconn.*", tcp),
]
