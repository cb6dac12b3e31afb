"""Why a machine held or fell: the USE method (Gregg: for every resource, its Utilisation, Saturation and
Errors) over each resource on the request path — CPU, memory, JVM heap, HTTPD workers, Tomcat threads and
connections per connector, the accept queue, the backend and compose pools, conntrack, file descriptors —
and the story of which reached its limit first, then the next ones, and what followed (errors, the stop,
OOM kills, restarts, full GCs).

The table covers the measured window (after the warm-up); the story runs from the machine's first sample, so
that a machine that fell during the ramp-up is explained. The rules are in README.md (Saturation (USE))."""
import json
import math
import re
from dataclasses import dataclass, field
from datetime import datetime, timezone

import numpy as np

from . import fmt
from .events import log_events, unit_of
from .machine import utc_clock
from .pcp import connector, contains
from .stats import integral

NEAR_LIMIT = 0.90      # near the limit: at or over 90 % of it
HELD_S = 5.0           # held: the rule met at every sample of a stretch at least this long (samples × interval)
HELD_MIN_SAMPLES = 2   # ... of at least this many samples (one sample is an instant, not a stretch) ...
HELD_SCRAPES = 2       # ... and, for a scraped metric, at least this many scrape intervals: pmrep gives each
#                        sample the nearest scrape's value, so one scrape alone lasts one interval
GAP_INTERVALS = 2      # a stretch ends at a gap of more than this many sampling intervals without a sample
GC_TIME_SHARE = 0.10   # the heap is saturated when GC pauses take over 10 % of the time (pause s per s)
ERROR_BIN_S = 10.0     # the error rate is judged in bins of this many seconds from the first sample ...
ERROR_RATE = 0.01      # ... the first bin in which more than 1 % of the requests failed
APP_SILENT_S = 30.0    # the app's scraped metrics ending this long before the system's: its endpoint went unanswered
AGENT_DROP_S = 180.0   # pmcd cutting its openmetrics agent off this soon after: the agent may be why they ended

# A limit comes from the metric that reports it; without that, from the knob; a null knob is the default.
KNOB_DEFAULTS = {
    "httpd_max_request_workers": 150,    # Debian's mpm_*.conf MaxRequestWorkers
    "tomcat_threads_max": 200,           # maxThreads, both connectors (the AJP one gets the HTTP one's knobs)
    "tomcat_max_connections": 8192,      # maxConnections of NIO and APR
    "tomcat_accept_count": 100,          # acceptCount: Tomcat's listen backlog
    "app_backend_max_connections": 200,  # the backend pool's max total
    "app_compose_max_pool_size": 20,
    "app_compose_queue_size": 1000,
    "pcp_openmetrics_interval_s": 10,    # how often the openmetrics.* metrics are scraped
}

SCRAPED = "openmetrics."
# PCP's openmetrics agent logs a metric whose name has a piece "total", "count" or "sum" as a counter (its
# heuristic, whatever the TYPE line says), so pmrep exports the rate of such a gauge, not its level:
# a count with fractional values is such a rate, unusable here
AS_COUNTER = "its rate, not its level: PCP's openmetrics agent logs a name with total/count/sum as a counter"
APP_METRICS = "openmetrics.app."
HEAP = contains("area:heap")
OLD_GEN = contains("old gen", "tenured")
MAJOR_GC = contains("major gc")
MIB = 1024.0 * 1024.0


@dataclass
class Finding:
    at: float          # epoch s: the first sample of the first stretch that held, or the first occurrence
    kind: str          # "utilisation", "saturation", "errors"; "symptom" for what followed
    text: str          # what, without the time: "200 of 200 threads"
    detail: str = ""   # said after the time: "for 83 % of the window"


@dataclass
class Resource:
    """One row of the USE table: utilisation (the peak against its limit, in the measured window), saturation
    and errors in words, and the findings of the story (from the first sample on)."""
    name: str                    # "Tomcat threads (http-nio-8080, traffic)"
    reads: str = ""              # what the utilisation is: "busy threads"
    unit: str = ""
    peak: float = math.nan       # highest value in the window
    peak_at: float = math.nan    # epoch s of its first sample at that value
    limit: float = math.nan
    limit_source: str = ""       # the metric, knob or default the limit comes from
    near_s: float = math.nan     # seconds of the window at or over NEAR_LIMIT × limit
    window_s: float = math.nan
    held_from: float = None      # epoch s: the first time it held near the limit (from the first sample on)
    saturation: str = fmt.NA
    errors: str = fmt.NA
    not_recorded: str = ""       # the utilisation's metrics, when absent
    unusable: str = ""           # why its recorded metric cannot be read as a level (AS_COUNTER)
    findings: list = field(default_factory=list)

    @property
    def peak_pct(self):
        if fmt.missing(self.peak) or fmt.missing(self.limit) or self.limit <= 0:
            return math.nan
        return 100.0 * self.peak / self.limit

    @property
    def near_pct(self):
        if fmt.missing(self.near_s) or not self.window_s or fmt.missing(self.window_s):
            return math.nan
        return 100.0 * self.near_s / self.window_s

    @property
    def first(self):
        return min(self.findings, key=lambda f: f.at) if self.findings else None

    def show(self, value):
        return f"{value:,.0f} {self.unit}".rstrip()

    def missing(self, metric, unusable=""):
        """Marks the utilisation as not recorded (metric absent) or unusable (recorded as a rate)."""
        if unusable:
            self.unusable = unusable
        else:
            self.not_recorded = metric

    def level(self, value):
        """'200 of 200 threads'; a percentage (CPU): '95 % busy'."""
        return f"{self.show(value)} busy" if self.unit == "%" else f"{value:,.0f} of {self.show(self.limit)}"


@dataclass
class Saturation:
    machine: str
    t0: float
    window_s: float
    resources: list = field(default_factory=list)
    symptoms: list = field(default_factory=list)  # [Finding] of what followed, by time
    traffic: str = ""                             # the connector that carried the traffic, and why

    @property
    def reached(self):
        """The resources with a finding, by the time of their first one."""
        return sorted((r for r in self.resources if r.findings), key=lambda r: r.first.at)

    @property
    def closest(self):
        """The resource with the highest peak against its limit, or None."""
        rated = [r for r in self.resources if not fmt.missing(r.peak_pct)]
        return max(rated, key=lambda r: r.peak_pct) if rated else None


@dataclass
class Series:
    t: np.ndarray
    v: np.ndarray
    scraped: bool = False  # an openmetrics.* metric: scraped less often, interpolated by pmrep

    def __len__(self):
        return len(self.t)

    def map(self, f):
        return Series(self.t, f(self.v), self.scraped)

    def between(self, start, end=math.inf):
        keep = (self.t >= start) & (self.t <= end)
        return Series(self.t[keep], self.v[keep], self.scraped)

    @property
    def interval(self):
        return float(np.median(np.diff(self.t))) if len(self.t) > 1 else 1.0


def first_held(times, hit, interval, min_s=HELD_S):
    """(start, end) indices [start, end) of the first stretch of consecutive samples meeting the rule
    (`hit`) that lasted at least min_s (samples × interval; a gap in the samples breaks a stretch), or None."""
    gap = np.concatenate([[True], np.diff(times) > GAP_INTERVALS * interval])
    start = None
    for i in range(len(times) + 1):
        if start is not None and (i == len(times) or not hit[i] or gap[i]):
            if i - start >= HELD_MIN_SAMPLES and (i - start) * interval >= min_s:
                return start, i
            start = None
        if i < len(times) and hit[i] and start is None:
            start = i
    return None


class _Reader:
    """One machine's metrics, window, knobs and log events, and the three kinds of rule applied to them."""

    def __init__(self, machine, knobs):
        self.machine, self.m, self.window, self.t0 = machine, machine.metrics, machine.window, machine.t0
        self.knobs = knobs or {}
        year = datetime.fromtimestamp(self.t0, tz=timezone.utc).year
        self.events = [e for e in log_events(machine.folder, year) if e.at >= self.t0] if machine.folder else []
        self.scrape_s = self.knob("pcp_openmetrics_interval_s")[0]

    def has_log(self, name):
        return self.machine.folder is not None and (self.machine.folder / "logs" / name).is_file()

    def series(self, metric, match=None):
        t, v = self.m.series(metric, match) if self.m is not None else (np.array([]), np.array([]))
        return Series(t, v, metric.startswith(SCRAPED))

    def count(self, metric, match=None):
        """(Series, why unusable) of a gauge that counts things: a scraped count with fractional values is the
        rate pmrep made of it (AS_COUNTER), returned empty with the reason."""
        s = self.series(metric, match)
        if s.scraped and len(s) and np.any(np.abs(s.v - np.round(s.v)) > 1e-6):
            return Series(np.array([]), np.array([]), True), f"{metric.rsplit('.', 1)[1]} is {AS_COUNTER}"
        return s, ""

    def last(self, metric, match=None):
        s = self.series(metric, match)
        return float(s.v[-1]) if len(s) else math.nan

    def knob(self, name):
        """(value, where it comes from) of a knob; its default when unset."""
        value = self.knobs.get(name)
        return (float(value), f"knob {name}") if value is not None else \
            (float(KNOB_DEFAULTS[name]), f"default: {name} unset")

    def in_window(self, kind):
        return sum(1 for e in self.events if e.kind == kind and self.window.start <= e.at <= self.window.end)

    def _held(self, s, hit):
        min_s = max(HELD_S, HELD_SCRAPES * self.scrape_s) if s.scraped else HELD_S
        return first_held(s.t, hit, s.interval, min_s)

    def utilisation(self, res, s, limit, source):
        """Peak, limit and seconds near it in the window; the first time it held near the limit."""
        res.limit, res.limit_source, res.window_s = limit, source, self.window.seconds
        w = s.between(self.window.start, self.window.end)
        if len(w):
            i = int(np.argmax(w.v))
            res.peak, res.peak_at = float(w.v[i]), float(w.t[i])
        if fmt.missing(limit) or limit <= 0:
            return
        res.near_s = float((w.v >= NEAR_LIMIT * limit).sum() * s.interval)
        since = s.between(self.t0)
        held = self._held(since, since.v >= NEAR_LIMIT * limit)
        if held:
            res.held_from = float(since.t[held[0]])
            share = "" if fmt.missing(res.near_pct) else f"for {res.near_pct:.0f} % of the window"
            res.findings.append(Finding(res.held_from, "utilisation", res.level(since.v[held[0]:held[1]].max()),
                                        share))

    def queue(self, res, s, threshold, words):
        """A saturation signal, the rule `value > threshold`: a finding when it held. Returns (peak in the
        window, seconds of the window over the threshold)."""
        since = s.between(self.t0)
        held = self._held(since, since.v > threshold)
        if held:
            res.findings.append(Finding(float(since.t[held[0]]), "saturation", words(since.v[held[0]:held[1]].max())))
        w = s.between(self.window.start, self.window.end)
        return (float(w.v.max()) if len(w) else math.nan), float((w.v > threshold).sum() * s.interval)

    def occurrence(self, res, s, words):
        """An error counter (a per-second rate): its first non-zero sample is a finding. Returns its count in
        the window (∫ rate dt)."""
        since = s.between(self.t0)
        hits = np.flatnonzero(since.v > 0)
        if len(hits):
            res.findings.append(Finding(float(since.t[hits[0]]), "errors", words))
        return integral(s.t, s.v, self.window)

    def log_finding(self, res, kind, words):
        """A log line as a finding (its first occurrence); returns how many fell in the window."""
        found = [e for e in self.events if e.kind == kind]
        if found:
            res.findings.append(Finding(found[0].at, "errors", f"{words} ({found[0].file})"))
        return self.in_window(kind)


def _limit(r, metric, match, knob):
    """(limit, source): the metric's last positive value, else the knob (or its default)."""
    value = r.last(metric, match)
    if fmt.missing(value) or value <= 0:
        return r.knob(knob)
    return value, metric.rsplit(".", 1)[1]


# --- the resources ------------------------------------------------------------------------------------------

def _cpu(r):
    res = Resource("CPU", reads="busy (user + sys + steal), % of all CPU time", unit="%")
    ncpu = r.last("hinv.ncpu")
    known = not fmt.missing(ncpu) and ncpu > 0
    shares = r.m.cpu_shares() if r.m is not None else {}
    busy = [Series(*shares[state]) for state in ("user", "sys", "steal") if state in shares]
    if busy:
        # shares of all CPU time (report.pcp.Metrics.cpu_shares): bounded by 100 % when sampling stalls
        r.utilisation(res, Series(busy[0].t, sum(s.v for s in busy)), 100.0,
                      f"{ncpu:.0f} vCPUs, hinv.ncpu" if known else "all CPU time")
    else:
        res.not_recorded = "kernel.all.cpu.* (idle included)"
    runnable = r.series("kernel.all.runnable")
    if len(runnable) and known:
        peak, over = r.queue(res, runnable, ncpu, lambda top: f"run queue above {ncpu:.0f} vCPUs (up to {top:.0f})")
        res.saturation = f"run queue peak {fmt.num(peak, 0)} (> {ncpu:.0f} vCPUs: {over:.0f} s)"
    else:
        res.saturation = "run queue not recorded"
    return res


def _memory(r):
    res = Resource("Memory", reads="in use (RAM − available)", unit="MiB")
    phys = r.last("mem.physmem")
    available = r.series("mem.util.available")
    if len(available) and not fmt.missing(phys):
        r.utilisation(res, available.map(lambda v: (phys - v) / 1024.0), phys / 1024.0, "mem.physmem")
    else:
        res.not_recorded = "mem.util.available, mem.physmem"
    bits = []
    swap_out = r.series("mem.vmstat.pswpout")
    if len(swap_out):
        peak, over = r.queue(res, swap_out, 0.0, lambda top: f"swapping out (up to {top:,.0f} pages/s)")
        bits.append(f"swap-out peak {fmt.num(peak, 0)} pages/s ({over:.0f} s)")
    faults = r.series("mem.vmstat.pgmajfault").between(r.window.start, r.window.end)
    if len(faults):
        bits.append(f"major faults peak {faults.v.max():,.0f}/s")
    res.saturation = "; ".join(bits) or "swap-out, major faults not recorded"
    kills = r.series("mem.vmstat.oom_kill")
    counted = integral(kills.t, kills.v, r.window) if len(kills) else math.nan
    logged = r.in_window("oom_kill") if r.has_log("journal.txt") else None
    if logged is not None and (math.isnan(counted) or logged > round(counted)):
        # the kernel's counter misses kills made while the guest was too starved to be sampled
        seen = "" if math.isnan(counted) else f"; PCP's counter saw {fmt.count(counted)}: its samples stalled"
        res.errors = f"OOM kills {logged} (journal{seen})"
    elif not math.isnan(counted):
        res.errors = f"OOM kills {fmt.count(counted)}"
    else:
        res.errors = "OOM kills not recorded"
    return res


def _heap(r):
    """The old gen's occupancy after GC against its max; without those metrics the old gen's use against its
    max, then the whole heap's use against -Xmx (knob jvm_heap_max_mb): not after GC, as `reads` says."""
    res = Resource("JVM heap", unit="MiB")
    live = r.series("openmetrics.app.jvm_gc_live_data_size_bytes")
    most = r.last("openmetrics.app.jvm_gc_max_data_size_bytes")
    old = (lambda i: HEAP(i) and OLD_GEN(i))
    old_used, old_max = r.series("openmetrics.app.jvm_memory_used_bytes", old), \
        r.last("openmetrics.app.jvm_memory_max_bytes", old)
    heap_used, heap_mb = r.series("openmetrics.app.jvm_memory_used_bytes", HEAP), r.knobs.get("jvm_heap_max_mb")
    if len(live) and not fmt.missing(most) and most > 0:
        res.reads = "old gen after the last major GC"
        r.utilisation(res, live.map(lambda v: v / MIB), most / MIB, "jvm_gc_max_data_size_bytes")
    elif len(old_used) and not fmt.missing(old_max) and old_max > 0:
        res.reads = "old gen used (not after GC: no live-data metric)"
        r.utilisation(res, old_used.map(lambda v: v / MIB), old_max / MIB, "jvm_memory_max_bytes, old gen")
    elif len(heap_used) and heap_mb:
        res.reads = "heap used (not after GC: no live-data metric)"
        r.utilisation(res, heap_used.map(lambda v: v / MIB), float(heap_mb), "knob jvm_heap_max_mb")
    else:
        res.not_recorded = "openmetrics.app.jvm_gc_live_data_size_bytes, jvm_gc_max_data_size_bytes"
    pause = r.series("openmetrics.app.jvm_gc_pause_seconds_sum")
    if len(pause):
        share = pause.map(lambda v: v * 100.0)
        peak, over = r.queue(res, share, GC_TIME_SHARE * 100.0,
                             lambda top: f"GC pauses over {GC_TIME_SHARE * 100:.0f} % of the time (up to {top:.0f} %)")
        mean = share.between(r.window.start, r.window.end).v
        res.saturation = (f"GC time mean {fmt.num(float(mean.mean()) if len(mean) else math.nan, 1)} %, peak "
                          f"{fmt.num(peak, 0)} % (> {GC_TIME_SHARE * 100:.0f} %: {over:.0f} s)")
    else:
        res.saturation = "GC pauses not recorded"
    # full GCs: gc.log's lines when it is kept (exact), else Micrometer's timer of major GCs, which appears
    # at the first one (recorded pauses without it: none)
    bits = []
    if r.has_log("gc.log"):
        bits.append(f"full GCs {r.in_window('full_gc')} (gc.log)")
    elif len(r.series("openmetrics.app.jvm_gc_pause_seconds_count")):
        majors = r.series("openmetrics.app.jvm_gc_pause_seconds_count", MAJOR_GC)
        bits.append(f"full GCs {fmt.count(integral(majors.t, majors.v, r.window)) if len(majors) else 0}")
    else:
        bits.append("full GCs not recorded")
    if r.in_window("out_of_memory"):
        bits.append(f"OutOfMemoryError ×{r.in_window('out_of_memory')}")
    res.errors = "; ".join(bits)
    return res


def _httpd(r):
    res = Resource("HTTPD workers", reads="busy workers", unit="workers")
    busy = r.series("apache.busy_servers")
    if len(busy):
        r.utilisation(res, busy, *r.knob("httpd_max_request_workers"))
    else:
        res.not_recorded = "apache.busy_servers"
    res.saturation = "(its queue: the accept queue's row)"
    n = r.log_finding(res, "max_request_workers", "MaxRequestWorkers reached")
    res.errors = f"MaxRequestWorkers reached ×{n}" if n else \
        ("none in httpd-error.log" if r.has_log("httpd-error.log") else fmt.NA)
    return res


THREADS_BUSY = "openmetrics.app.tomcat_connector_threads_busy"
CONNECTIONS = "openmetrics.app.tomcat_connector_connections_current"


def traffic_connector(r):
    """(connector, why) of the one that carried HTTPD's traffic: the most busy threads from the first sample on,
    then the most connections, then the knob httpd_proxy_protocol; ("", "") without Tomcat metrics."""
    names = sorted({connector(i) for m in (THREADS_BUSY, CONNECTIONS) for i in r.m.instances(m)}) if r.m else []
    if not names:
        return "", ""
    for metric, why in ((THREADS_BUSY, "most busy threads"), (CONNECTIONS, "most connections")):
        totals = {n: float(r.series(metric, lambda i, n=n: connector(i) == n).between(r.t0).v.sum()) for n in names}
        ranked = sorted(names, key=totals.get, reverse=True)
        if totals[ranked[0]] > 0 and (len(ranked) == 1 or totals[ranked[0]] > totals[ranked[1]]):
            return ranked[0], why
    protocol = str(r.knobs.get("httpd_proxy_protocol") or "http")
    pick = [n for n in names if n.lower().startswith(protocol.lower())]
    return (pick[0], f"httpd_proxy_protocol {protocol}") if pick else ("", "")


def _tomcat(r, traffic):
    names = sorted({connector(i) for m in (THREADS_BUSY, CONNECTIONS) for i in r.m.instances(m)}, key=lambda n: (
        n != traffic, n)) if r.m else []
    rows = []
    for name in names or [""]:
        label = f" ({name}{', traffic' if name == traffic else ''})" if name else ""
        of = (lambda i, n=name: connector(i) == n)
        for metric, limit_metric, knob, what, reads, unit in (
                (THREADS_BUSY, "openmetrics.app.tomcat_connector_threads_config_max", "tomcat_threads_max",
                 "Tomcat threads", "busy threads", "threads"),
                (CONNECTIONS, "openmetrics.app.tomcat_connector_connections_config_max", "tomcat_max_connections",
                 "Tomcat connections", "current connections", "connections")):
            res = Resource(what + label, reads=reads, unit=unit)
            used, unusable = r.count(metric, of)
            if len(used):
                r.utilisation(res, used, *_limit(r, limit_metric, of, knob))
            else:
                res.missing(metric, unusable)
            rows.append(res)
    return rows


def _accept_queue(r):
    backlog, source = r.knob("tomcat_accept_count")
    res = Resource("Accept queue", reads="the kernel's listen-queue overflows and drops (all sockets)",
                   limit_source=f"Tomcat's backlog {backlog:.0f} ({source})")
    overflows, drops = r.series("network.tcp.listenoverflows"), r.series("network.tcp.listendrops")
    if not len(overflows) and not len(drops):
        res.not_recorded = "network.tcp.listenoverflows, network.tcp.listendrops"
        return res
    if len(overflows):
        n = r.occurrence(res, overflows, "the listen queue overflowed")
        peak = overflows.between(r.window.start, r.window.end).v
        res.saturation = f"overflows {fmt.count(n)} (peak {fmt.num(float(peak.max()) if len(peak) else math.nan, 0)}/s)"
    if len(drops):
        n = r.occurrence(res, drops, "the kernel dropped connections at the listen queue")
        res.errors = f"drops {fmt.count(n)}"
    res.findings = [res.first] if res.findings else []  # an overflow and its drop come together: the earlier
    return res


def _backend_pool(r):
    res = Resource("Backend pool", reads="leased connections", unit="connections")
    client = contains("httpclient:backend")
    leased, unusable = r.count("openmetrics.app.httpcomponents_httpclient_pool_total_connections",
                               lambda i: client(i) and "state:leased" in i)
    if len(leased):
        r.utilisation(res, leased, *_limit(r, "openmetrics.app.httpcomponents_httpclient_pool_total_max", client,
                                           "app_backend_max_connections"))
    else:
        res.missing("httpcomponents_httpclient_pool_total_connections", unusable)
    pending, unusable = r.count("openmetrics.app.httpcomponents_httpclient_pool_total_pending", client)
    if len(pending):
        peak, over = r.queue(res, pending, 0.0,
                             lambda top: f"requests waiting for a backend connection (up to {top:.0f})")
        res.saturation = f"pending peak {fmt.num(peak, 0)} (> 0: {over:.0f} s)"
    else:
        res.saturation = "pending unusable (its rate was logged, not its level)" if unusable else \
            "pending not recorded"
    return res


def _compose_pool(r):
    res = Resource("Compose pool", reads="active threads", unit="threads")
    pool = contains("name:compose")
    active, unusable = r.count("openmetrics.app.executor_active_threads", pool)
    if len(active):
        r.utilisation(res, active, *_limit(r, "openmetrics.app.executor_pool_max_threads", pool,
                                           "app_compose_max_pool_size"))
    else:
        res.missing("executor_active_threads", unusable)
    queued = r.count("openmetrics.app.executor_queued_tasks", pool)[0]
    remaining = r.count("openmetrics.app.executor_queue_remaining_tasks", pool)[0]
    common, iq, ir = np.intersect1d(queued.t, remaining.t, return_indices=True)
    # the queue's capacity: queued + remaining (the median: pmrep interpolates the two apart), else the knob
    capacity = float(np.median(queued.v[iq] + remaining.v[ir])) if len(common) else 0.0
    if capacity <= 0:
        capacity = r.knob("app_compose_queue_size")[0]
    if len(queued):
        peak, over = r.queue(res, queued, 0.0, lambda top: f"tasks queued (up to {top:.0f} of {capacity:.0f})")
        res.saturation = f"queued peak {fmt.num(peak, 0)} of {capacity:.0f} (> 0: {over:.0f} s)"
    else:
        res.saturation = "queue not recorded"
    if len(common):
        # full: nothing remaining while tasks wait (a queue of size 0 hands over and is never "full")
        full = Series(common, ((remaining.v[ir] <= 0) & (queued.v[iq] > 0)).astype(float), True)
        if full.between(r.t0).v.any():
            since = full.between(r.t0)
            res.findings.append(Finding(float(since.t[since.v > 0][0]), "errors",
                                        "queue full (the rejection policy takes over)"))
        res.errors = f"queue full {full.between(r.window.start, r.window.end).v.sum() * full.interval:.0f} s"
    return res


def _capacity(r, name, reads, unit, used_metric, max_metric, unlimited):
    """A count against a system limit; `unlimited` says what a limit ≤ 0 or absent means."""
    res = Resource(name, reads=reads, unit=unit)
    (used, unusable), limit = r.count(used_metric), r.last(max_metric)
    if not len(used):
        res.missing(used_metric, unusable)
    elif fmt.missing(limit) or limit <= 0:
        r.utilisation(res, used, math.nan, unlimited)
    else:
        r.utilisation(res, used, limit, max_metric.rsplit(".", 1)[1])
    return res


def _conntrack(r):
    res = _capacity(r, "Conntrack", "tracked connections", "entries", "openmetrics.conntrack.nf_conntrack_count",
                    "openmetrics.conntrack.nf_conntrack_max", "none: nf_conntrack_max absent or 0")
    if res.not_recorded:
        res.not_recorded += "; absent when the kernel tracks no connections"
    n = r.log_finding(res, "conntrack_full", "conntrack table full, packets dropped")
    res.errors = f"table full ×{n} (journal)" if n else fmt.NA
    return res


def _files(r):
    jvm = _capacity(r, "JVM file descriptors", "open files of the JVM", "fds",
                    "openmetrics.app.process_files_open_files", "openmetrics.app.process_files_max_files",
                    "none: process_files_max_files absent")
    n = r.log_finding(jvm, "too_many_files", "Too many open files")
    jvm.errors = f"Too many open files ×{n} (app.log)" if n else fmt.NA
    system = _capacity(r, "System file handles", "allocated file handles", "handles", "vfs.files.count",
                       "vfs.files.max", "none: vfs.files.max −1 (unlimited) or absent")
    return [jvm, system]


# --- what followed ------------------------------------------------------------------------------------------

def error_rise(machine):
    """The first ERROR_BIN_S bin from the first sample with more than ERROR_RATE of its requests failed."""
    s = machine.samples
    if s is None or len(s) == 0:
        return None
    idx = ((s.start - machine.t0) // ERROR_BIN_S).astype(int)
    requests = np.bincount(idx)
    failed = np.bincount(idx[~s.ok], minlength=len(requests))
    over = np.flatnonzero((requests > 0) & (failed > ERROR_RATE * requests))
    if not len(over):
        return None
    b = int(over[0])
    return Finding(machine.t0 + b * ERROR_BIN_S, "symptom", f"errors above {ERROR_RATE * 100:g} % of requests",
                   f"{100.0 * failed[b] / requests[b]:.0f} % in that {ERROR_BIN_S:.0f} s bin")


def _app_silent(r):
    """The app's scraped metrics ending APP_SILENT_S or more before the system's: its endpoint went unanswered."""
    if r.m is None:
        return None
    app = [t.max() for name, (t, _, _) in r.m.by_metric.items() if name.startswith(APP_METRICS) and len(t)]
    system = [t.max() for name, (t, _, _) in r.m.by_metric.items() if not name.startswith(SCRAPED) and len(t)]
    if not app or not system or max(system) - max(app) < APP_SILENT_S or max(app) < r.t0:
        return None
    why = "its /actuator/prometheus went unanswered (frozen, dead or too busy)"
    dropped = [e for e in r.events if e.kind == "agent_dropped" and 0 <= e.at - max(app) <= AGENT_DROP_S]
    if dropped:
        # the agent reading the endpoint waits for it: a frozen app and a starved agent look alike from here
        why = (f"its /actuator/prometheus went unanswered, or PCP's openmetrics agent reading it stalled: pmcd "
               f"cut that agent off {dropped[0].at - max(app):.0f} s later ({dropped[0].file})")
    return Finding(float(max(app)), "symptom", "the app's own metrics stop",
                   f"{max(system) - max(app):.0f} s before the system's: {why}")


JOURNAL_MESSAGE = re.compile(r"^[\w@./-]+(?:\[\d+\])?: (?:\[\s*[\d.]+\] )?(?:[\w@.-]+\.service: )?(.*)$")


def _journal_message(event):
    """The message of a journal line, without 'ident[pid]: ', the kernel's '[ 123.4] ' or 'unit.service: '."""
    found = JOURNAL_MESSAGE.match(event.line)
    return found.group(1) if found else event.line


def _symptoms(r):
    machine, found = r.machine, []
    rise = error_rise(machine)
    if rise:
        found.append(rise)
    stop = machine.stop
    if stop is not None:
        detail = ""
        if stop.errors:
            error, n = stop.errors.most_common(1)[0]
            detail = f"{100.0 * n / max(1, stop.attempts):.0f} % {error} from then on"
        found.append(Finding(stop.at, "symptom",
                             "stopped answering" if stop.ever_answered else "never answered successfully", detail))
    silent = _app_silent(r)
    if silent:
        found.append(silent)
    groups = {}
    for e in r.events:
        if e.kind in ("oom_kill", "exited", "restart", "full_gc", "out_of_memory", "agent_dropped"):
            groups.setdefault((e.kind, unit_of(e)), []).append(e)
    for (kind, unit), events in groups.items():
        first, times = events[0], f" ×{len(events)}" if len(events) > 1 else ""
        text = {"oom_kill": f"OOM kill{times} (journal: {_journal_message(first)})",
                "exited": f"{unit or 'a service'} exited{times} (journal: {_journal_message(first)})",
                "restart": f"{unit or 'a service'} restarted{times} (journal)",
                "full_gc": f"full GC{times} (gc.log)",
                "out_of_memory": f"OutOfMemoryError{times} (app.log)",
                "agent_dropped": f"PCP lost agents{times} ({first.file}: {first.line}): their metrics end"}[kind]
        found.append(Finding(first.at, "symptom", text))
    if not any(kind == "full_gc" for kind, _ in groups):
        majors = r.series("openmetrics.app.jvm_gc_pause_seconds_count", MAJOR_GC).between(r.t0)
        if (majors.v > 0).any():
            found.append(Finding(float(majors.t[majors.v > 0][0]), "symptom", "full GCs (jvm_gc_pause_seconds, major)"))
    return sorted(found, key=lambda f: f.at)


# --- per machine, and the summary's section -----------------------------------------------------------------

def read_knobs(machine, run=None):
    """The machine's knobs: config/knobs.json (what Ansible provisioned), else run.json's; {} without either."""
    try:
        knobs = json.loads((machine.folder / "config" / "knobs.json").read_text())
        if isinstance(knobs, dict):
            return knobs
    except (OSError, ValueError, TypeError):
        pass
    return (run.get("machines", machine.name, "knobs", default={}) if run is not None else {}) or {}


def analyse(machine, knobs=None):
    """The Saturation of one machine; None without a time reference."""
    if machine.window is None:
        return None
    r = _Reader(machine, knobs)
    result = Saturation(machine.name, machine.t0, machine.window.seconds)
    traffic, why = traffic_connector(r)
    result.traffic = f"{traffic} ({why})" if traffic else ""
    result.resources = [_cpu(r), _memory(r), _heap(r), _httpd(r), *_tomcat(r, traffic), _accept_queue(r),
                        _backend_pool(r), _compose_pool(r), _conntrack(r), *_files(r)]
    result.symptoms = _symptoms(r)
    return result


def _peak_cell(res, t0):
    if res.not_recorded:
        return f"not recorded ({res.not_recorded})"
    if res.unusable:
        return f"unusable ({res.unusable})"
    if fmt.missing(res.peak):
        return "no sample in the window" if res.unit else fmt.NA
    return f"{res.show(res.peak)} (+{res.peak_at - t0:.0f} s, {utc_clock(res.peak_at)} UTC)"


def table_lines(sat):
    rows = []
    for res in sat.resources:
        limit = res.limit_source if fmt.missing(res.limit) else f"{res.show(res.limit)} ({res.limit_source})"
        near = fmt.NA if fmt.missing(res.near_s) else f"{res.near_s:.0f} s ({res.near_pct:.0f} %)"
        held = fmt.NA if res.held_from is None else f"+{res.held_from - sat.t0:.0f} s"
        rows.append([f"{res.name}: {res.reads}", _peak_cell(res, sat.t0), limit or fmt.NA,
                     fmt.percent(res.peak_pct, 0), near, held, res.saturation, res.errors])
    header = ["resource: reads", "peak (at)", "limit (source)", "peak / limit",
              f"≥ {NEAR_LIMIT * 100:.0f} % of limit (of window)", "held from", "saturation", "errors"]
    align = ["---", "---:", "---:", "---:", "---:", "---:", "---", "---"]
    return ["| " + " | ".join(header) + " |", "| " + " | ".join(align) + " |"] + \
        ["| " + " | ".join(str(c).replace("|", "\\|") for c in row) + " |" for row in rows]


def story_lines(sat):
    """The ordered story: each resource that reached its limit (by its first finding), then the symptoms."""
    def said(f):
        prep = "at" if f.kind == "symptom" else "from"
        return f"{f.text} {prep} +{f.at - sat.t0:.0f} s ({utc_clock(f.at)} UTC)" + (f", {f.detail}" if f.detail else "")

    lines = [f"{n}. {res.name}: " + "; ".join(said(f) for f in sorted(res.findings, key=lambda f: f.at)) + "."
             for n, res in enumerate(sat.reached, 1)]
    if not lines:
        closest = sat.closest
        words = (f"; the closest: {closest.name} {closest.level(closest.peak)} ({closest.peak_pct:.0f} % of its "
                 f"limit, at +{closest.peak_at - sat.t0:.0f} s)" if closest else "")
        lines.append(f"Nothing reached its limit{words}.")
    lines.append("")
    if sat.symptoms:
        lines.append("Symptoms, in time order: " + "; ".join(said(f) for f in sat.symptoms) + ".")
    else:
        lines.append("No symptoms: no error rise, no stop, no OOM kill, restart or full GC.")
    return lines


def saturation_lines(run, machines):
    """The summary's "Saturation (USE)" section, per machine: the table and the story."""
    lines = ["## Saturation (USE)", "",
             f"Each resource on the request path over the measured window: utilisation (the peak against the "
             f"limit, and the time at or over {NEAR_LIMIT * 100:.0f} % of it), saturation (a queue or a wait) and "
             f"errors. The story runs from the first sample (warm-up included): a resource reached its limit when "
             f"it held there for {HELD_S:.0f} s (two scrapes for the app's metrics) — the run queue above the "
             f"vCPUs, a queue above 0 and GC over {GC_TIME_SHARE * 100:.0f} % of the time count too — or at its "
             f"first overflow or log line. See report/README.md (Saturation (USE)).", ""]
    for m in machines.values():
        lines += [f"### {m.name}", ""]
        sat = analyse(m, read_knobs(m, run))
        if sat is None:
            lines += ["No time reference (no samples, no run start, no metrics): not analysed.", ""]
            continue
        lines += table_lines(sat) + [""]
        if sat.traffic:
            lines += [f"Traffic connector: {sat.traffic}.", ""]
        lines += story_lines(sat) + [""]
    return lines
