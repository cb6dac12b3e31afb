"""The saturation probes: one per resource on the request path (a row, or rows, of the USE table), each reading
its utilisation against a limit, its saturation and its errors (the rules: report/explain/saturation/reader.py).
A limit comes from the metric that reports it; without that, from the knob (the machine's own value, else the
run's knobs-catalog.json: report/read/knobs.py); without either it is unknown, and the row says so."""
from __future__ import annotations

import math

import numpy as np

from report import fmt
from report.explain.saturation.model import GC_TIME_SHARE, HEAP, MAJOR_GC, MIB, OLD_GEN, Finding, Resource, Series
from report.explain.saturation.reader import Reader, limit_of
from report.read.pcp import connector, contains
from report.stats.figures import integral


def cpu(r: Reader) -> Resource:
    res = Resource("CPU", reads="busy (user + sys + steal), % of all CPU time", unit="%")
    if container_memory(r, r.last("mem.physmem")) is not None:
        return container_cpu(r, res)
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


def container_cpu(r: Reader, res: Resource) -> Resource:
    """A container's CPU from its cgroup (kernel.all.* and the run queue are the host's): the CPU time it used
    against its quota, and the time the quota throttled it."""
    res.reads = "the container's CPU time, % of its quota (cpuacct)"
    limit = r.last("openmetrics.machine.cpu_limit_millis")
    used = r.series("openmetrics.machine.cpu_used_ms")        # a rate: ms of CPU per second
    if len(used) and not fmt.missing(limit) and limit > 0:
        r.utilisation(res, used.map(lambda v: 100.0 * v / limit), 100.0,
                      f"{limit / 1000:g} CPUs of quota, openmetrics.machine.cpu_limit_millis")
    else:
        res.not_recorded = "openmetrics.machine.cpu_used_ms, cpu_limit_millis"
    throttled = r.series("openmetrics.machine.cpu_throttled_ms")
    if len(throttled):
        peak, over = r.queue(res, throttled, 0.0, lambda top: f"throttled by its quota ({top:.0f} ms/s)")
        res.saturation = f"throttled peak {fmt.num(peak, 0)} ms/s ({over:.0f} s)"
    else:
        res.saturation = "throttling not recorded"
    return res


def memory(r: Reader) -> Resource:
    res = Resource("Memory", reads="in use (RAM − available)", unit="MiB")
    phys = r.last("mem.physmem")
    available = r.series("mem.util.available")
    own = container_memory(r, phys)
    if own is not None:     # a container: its cgroup's limit and what is left under it, not the host's meminfo
        limit, available = own
        res.reads = "in use (the container's memory limit − available under it)"
        r.utilisation(res, available.map(lambda v: (limit - v) / 1024.0), limit / 1024.0,
                      "openmetrics.machine.memory_total_kb")
    elif len(available) and not fmt.missing(phys):
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
    kills = r.series("openmetrics.machine.oom_kills" if own is not None else "mem.vmstat.oom_kill")
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


def container_memory(r: Reader, phys: float):
    """(limit KiB, available Series) where the machine is a container (its cgroup's limit below the RAM PCP
    reports, which is the host's), else None."""
    limit = r.last("openmetrics.machine.memory_total_kb")
    if fmt.missing(limit) or fmt.missing(phys) or limit >= phys:
        return None
    available = r.series("openmetrics.machine.memory_available_kb")
    return (limit, available) if len(available) else None


def heap(r: Reader) -> Resource:
    """The old gen's occupancy after GC against its max; without those metrics the old gen's use against its
    max, then the whole heap's use against -Xmx (knob jvm_heap_max_mb): not after GC, as `reads` says."""
    res = Resource("JVM heap", unit="MiB")
    live = r.series("openmetrics.app.jvm_gc_live_data_size_bytes")
    most = r.last("openmetrics.app.jvm_gc_max_data_size_bytes")
    def old(i: str) -> bool:
        return HEAP(i) and OLD_GEN(i)
    old_used, old_max = r.series("openmetrics.app.jvm_memory_used_bytes", old), \
        r.last("openmetrics.app.jvm_memory_max_bytes", old)
    heap_used, heap_mb = r.series("openmetrics.app.jvm_memory_used_bytes", HEAP), r.knobs.value("jvm_heap_max_mb")
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


def httpd(r: Reader) -> Resource:
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


def traffic_connector(r: Reader) -> tuple[str, str]:
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
    protocol = r.knobs.value("httpd_proxy_protocol")
    if protocol is None:
        return "", ""
    protocol = str(protocol)
    pick = [n for n in names if n.lower().startswith(protocol.lower())]
    return (pick[0], f"httpd_proxy_protocol {protocol}") if pick else ("", "")


def tomcat(r: Reader, traffic: str) -> list[Resource]:
    names = sorted({connector(i) for m in (THREADS_BUSY, CONNECTIONS) for i in r.m.instances(m)}, key=lambda n: (
        n != traffic, n)) if r.m else []
    rows = []
    for name in names or [""]:
        label = f" ({name}{', traffic' if name == traffic else ''})" if name else ""
        def of(i: str, n: str = name) -> bool:
            return connector(i) == n
        for metric, limit_metric, knob, what, reads, unit in (
                (THREADS_BUSY, "openmetrics.app.tomcat_connector_threads_config_max", "tomcat_threads_max",
                 "Tomcat threads", "busy threads", "threads"),
                (CONNECTIONS, "openmetrics.app.tomcat_connector_connections_config_max", "tomcat_max_connections",
                 "Tomcat connections", "current connections", "connections")):
            res = Resource(what + label, reads=reads, unit=unit)
            used, unusable = r.count(metric, of)
            if len(used):
                r.utilisation(res, used, *limit_of(r, limit_metric, of, knob))
            else:
                res.missing(metric, unusable)
            rows.append(res)
    return rows


def accept_queue(r: Reader) -> Resource:
    backlog, source = r.knob("tomcat_accept_count")
    res = Resource("Accept queue", reads="the kernel's listen-queue overflows and drops (all sockets)",
                   limit_source=f"Tomcat's backlog ({source})" if fmt.missing(backlog) else
                   f"Tomcat's backlog {backlog:.0f} ({source})")
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


def backend_pool(r: Reader) -> Resource:
    res = Resource("Backend pool", reads="leased connections", unit="connections")
    client = contains("httpclient:")      # every pool (the sample app's one backend; older runs named it "backend")
    leased, unusable = r.count("openmetrics.app.httpcomponents_httpclient_pool_total_connections",
                               lambda i: client(i) and "state:leased" in i)
    if len(leased):
        r.utilisation(res, leased, *limit_of(r, "openmetrics.app.httpcomponents_httpclient_pool_total_max", client,
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


def compose_pool(r: Reader) -> Resource:
    res = Resource("Compose pool", reads="active threads", unit="threads")
    pool = contains("name:compose")
    active, unusable = r.count("openmetrics.app.executor_active_threads", pool)
    if len(active):
        r.utilisation(res, active, *limit_of(r, "openmetrics.app.executor_pool_max_threads", pool,
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
    of = "of an unknown capacity" if fmt.missing(capacity) else f"of {capacity:.0f}"
    if len(queued):
        peak, over = r.queue(res, queued, 0.0, lambda top: f"tasks queued (up to {top:.0f} {of})")
        res.saturation = f"queued peak {fmt.num(peak, 0)} {of} (> 0: {over:.0f} s)"
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


def _capacity(r: Reader, name: str, reads: str, unit: str, used_metric: str, max_metric: str,
              unlimited: str) -> Resource:
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


def conntrack(r: Reader) -> Resource:
    res = _capacity(r, "Conntrack", "tracked connections", "entries", "openmetrics.conntrack.nf_conntrack_count",
                    "openmetrics.conntrack.nf_conntrack_max", "none: nf_conntrack_max absent or 0")
    if res.not_recorded:
        res.not_recorded += "; absent when the kernel tracks no connections"
    n = r.log_finding(res, "conntrack_full", "conntrack table full, packets dropped")
    res.errors = f"table full ×{n} (journal)" if n else fmt.NA
    return res


def files(r: Reader) -> list[Resource]:
    jvm = _capacity(r, "JVM file descriptors", "open files of the JVM", "fds",
                    "openmetrics.app.process_files_open_files", "openmetrics.app.process_files_max_files",
                    "none: process_files_max_files absent")
    n = r.log_finding(jvm, "too_many_files", "Too many open files")
    jvm.errors = f"Too many open files ×{n} (app.log)" if n else fmt.NA
    system = _capacity(r, "System file handles", "allocated file handles", "handles", "vfs.files.count",
                       "vfs.files.max", "none: vfs.files.max −1 (unlimited) or absent")
    return [jvm, system]
