"""The report's charts: one PNG per subject, default and tuned side by side on the same y scale, x in seconds
since each machine's first sample, warm-up shaded, a machine's stop marked."""
import io
import math
from dataclasses import dataclass, field

import matplotlib

matplotlib.use("Agg")  # no display: files only
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from PIL import Image  # noqa: E402  (comes with matplotlib)

from . import path  # noqa: E402
from .pcp import CPU_STATES, connector, contains  # noqa: E402
from .stats import PROCESS_GROUPS, percentile, process_match  # noqa: E402

DPI = 96
FIGSIZE = (13.5, 2.9)  # 1296 × 278 px: the page's width, no upscaling
MAX_POINTS = 240          # time bins per panel: enough to see, small PNGs
MIN_LATENCY_BIN_S = 5     # percentiles need enough samples per bin
TOP_ERROR_TYPES = 4


@dataclass
class Panel:
    """What one machine contributes to a chart: named series (x relative to its t0) or a note."""
    series: list = field(default_factory=list)  # (label, x, y)
    note: str = ""
    stacked: bool = False
    hlines: list = field(default_factory=list)  # (label, y)
    colors: list = None  # one per series; matplotlib's cycle when None


@dataclass
class Chart:
    key: str
    title: str
    ylabel: str
    about: str  # one line under the title: what it shows
    build: object  # function(machine, span) -> Panel


def _bin_width(span, minimum=1):
    return max(minimum, math.ceil(span / MAX_POINTS)) if span > 0 else minimum


def _samples_span(machine):
    s = machine.samples
    return float(s.end.max() - machine.t0) if s is not None and len(s) else 0.0


def _no_samples(machine):
    if machine.samples is None or len(machine.samples) == 0:
        return Panel(note="no data (jmeter.jtl missing or empty)")
    return None


def throughput(machine, span):
    empty = _no_samples(machine)
    if empty:
        return empty
    s = machine.samples
    width = _bin_width(span)
    rel = s.start - machine.t0
    n = int(rel.max() // width) + 1
    idx = (rel // width).astype(int)
    ok = np.bincount(idx[s.ok], minlength=n) / width
    failed = np.bincount(idx[~s.ok], minlength=n) / width
    x = np.arange(n) * width + width / 2
    return Panel(series=[("successful", x, ok), ("failed", x, failed)], colors=["tab:green", "tab:red"])


def latency(machine, span):
    empty = _no_samples(machine)
    if empty:
        return empty
    s = machine.samples
    width = _bin_width(span, MIN_LATENCY_BIN_S)
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


def errors(machine, span):
    empty = _no_samples(machine)
    if empty:
        return empty
    s = machine.samples
    failed = ~s.ok
    if not failed.any():
        return Panel(note="no errors")
    width = _bin_width(span)
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


def _short(error, width=60):
    return error if len(error) <= width else error[:width - 1] + "…"


def _metric_panel(machine, wanted, scale=1.0, stacked=False, missing_ok=False):
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


def load_average(machine, span):
    return _metric_panel(machine, [(f"{w} min", "kernel.all.load", contains(f"{w} minute")) for w in (1, 5, 15)])


def _ncpu(machine):
    t, v = machine.metrics.series("hinv.ncpu") if machine.metrics else ((), ())
    return float(v[-1]) if len(v) and v[-1] > 0 else None


def cpu(machine, span):
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


def memory(machine, span):
    m = machine.metrics
    if m is None:
        return Panel(note="no data (pcp/metrics.csv missing)")
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
    tp, phys = m.series("mem.physmem")
    if len(phys):
        panel.hlines.append(("RAM", float(phys[-1]) / 1024.0))
    if not panel.series:
        panel.note = "no data (mem.util.* not recorded)"
    return panel


def heap(machine, span):
    return _metric_panel(machine, [("heap used", "openmetrics.app.jvm_memory_used_bytes", _heap_only)],
                         1 / (1024.0 * 1024.0))


def _heap_only(instance):
    text = instance.lower()
    return "heap" in text and "nonheap" not in text


def gc_pauses(machine, span):
    # seconds of pause per second -> ms per s
    return _metric_panel(machine, [("GC pause", "openmetrics.app.jvm_gc_pause_seconds_sum", None)], 1000.0)


def tomcat_threads(machine, span):
    m = machine.metrics
    metric = "openmetrics.app.tomcat_connector_threads_busy"
    if m is None or not m.has(metric):
        return _metric_panel(machine, [("busy", metric, None)])
    wanted = [(connector(i), metric, lambda x, i=i: x == i) for i in m.instances(metric)]
    return _metric_panel(machine, wanted)


def httpd_workers(machine, span):
    return _metric_panel(machine, [("busy", "apache.busy_servers", None), ("idle", "apache.idle_servers", None)])


def mock_latency(machine, span):
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


def process_rss(machine, span):
    m = machine.metrics
    if m is None:
        return Panel(note="no data (pcp/metrics.csv missing)")
    wanted = [(g, "hotproc.psinfo.rss", process_match(m, g)) for g in PROCESS_GROUPS]
    return _metric_panel(machine, [w for w in wanted if w[2] is not None] or [("rss", "hotproc.psinfo.rss", None)],
                         1 / 1024.0)


def request_path(machine, span):
    """Mean time per request per bin, stacked by where it was spent (path.py): HTTPD's share growing is a
    queue in front of the app."""
    width = _bin_width(span, path.MIN_BIN_S)
    found = path.breakdown(machine, span, width)
    if not found.parts:
        return Panel(note="no data (" + ", ".join(found.missing) + " not recorded)")
    return Panel(series=[(label, found.x, ms) for label, ms in found.parts], stacked=True)


def tcp(machine, span):
    return _metric_panel(machine, [("established", "network.tcpconn.established", None),
                                   ("time_wait", "network.tcpconn.time_wait", None)])


CHARTS = [
    Chart("throughput", "Throughput", "req/s", "requests per second by outcome (JMeter, by start time)", throughput),
    Chart("latency", "Latency of successful requests", "ms", "p50 / p95 / p99 of JMeter's elapsed per time bin",
          latency),
    Chart("errors", "Errors by type", "req/s", "failed requests per second, stacked by error", errors),
    Chart("load", "Load average", "", "kernel.all.load", load_average),
    Chart("cpu", "CPU", "% of all CPUs", "user / sys / iowait / steal, stacked: shares of all CPU time, idle included (kernel.all.cpu.*)", cpu),
    Chart("memory", "Memory and swap", "MiB", "used by processes / cached / buffers / swap used, stacked; dotted: RAM", memory),
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


def _thinned(x, y, span):
    """At most ~2 × MAX_POINTS points: a 20 min run's 1 s PCP samples become the mean of each time bin
    (readable lines, small PNGs). Shorter series are returned as they are."""
    if len(x) <= 2 * MAX_POINTS:
        return x, y
    width = _bin_width(span)
    idx = ((x - x.min()) // width).astype(int)
    valid = ~np.isnan(y)
    sums = np.bincount(idx[valid], weights=y[valid], minlength=idx.max() + 1)
    counts = np.bincount(idx[valid], minlength=idx.max() + 1)
    with np.errstate(invalid="ignore", divide="ignore"):
        means = np.where(counts > 0, sums / np.maximum(counts, 1), np.nan)
    return x.min() + (np.arange(len(means)) + 0.5) * width, means


def _y_top(panels):
    tops = []
    for p in panels:
        if p.stacked and p.series:
            tops.append(_stack_max(p.series))
        else:
            tops += [float(np.nanmax(y)) for _, _, y in p.series if len(y) and not np.all(np.isnan(y))]
        tops += [y for _, y in p.hlines]
    top = max(tops) if tops else 1.0
    return top * 1.08 if top > 0 else 1.0


def _stack_max(series):
    xs = np.unique(np.concatenate([x for _, x, _ in series]))
    total = sum(np.interp(xs, x, np.nan_to_num(y), left=0, right=0) for _, x, y in series)
    return float(total.max()) if len(total) else 0.0


def render(chart, machines, warmup_s):
    """PNG bytes of one chart with a panel per machine."""
    spans = [_samples_span(m) for m in machines]
    span = max(spans) if max(spans) > 0 else 60.0
    panels = [chart.build(m, span) if m.window is not None else Panel(note="no data (no time reference)")
              for m in machines]
    for panel in panels:
        panel.series = [(label, *_thinned(x, y, span)) for label, x, y in panel.series]
    top = _y_top(panels)
    fig, axes = plt.subplots(1, len(machines), figsize=FIGSIZE, dpi=DPI, sharey=True)
    for ax, machine, panel in zip(np.atleast_1d(axes), machines, panels):
        _draw(ax, machine, panel, warmup_s, span, top)
        ax.set_title(machine.name, fontsize=10, loc="left")
        ax.set_xlabel("s since first sample", fontsize=8)
    np.atleast_1d(axes)[0].set_ylabel(chart.ylabel, fontsize=8)
    # fixed margins (not tight_layout): every chart's panels line up under each other
    fig.subplots_adjust(left=0.05, right=0.995, bottom=0.17, top=0.88, wspace=0.04)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=DPI)
    plt.close(fig)
    return _small_png(buf.getvalue())


def _small_png(png):
    """A palette PNG (≤64 colours, octree: keeps rare colours such as the red stop mark): about a third of
    the size of matplotlib's RGBA, same look for line charts."""
    image = Image.open(io.BytesIO(png)).convert("RGB").quantize(colors=64, method=Image.Quantize.FASTOCTREE)
    palette = image.getpalette()
    # the octree averages white with near-white: make the background white again
    image.putpalette([255 if min(palette[i - i % 3:i - i % 3 + 3]) >= 245 else v for i, v in enumerate(palette)])
    out = io.BytesIO()
    image.save(out, format="PNG", optimize=True)
    return out.getvalue()


def _draw(ax, machine, panel, warmup_s, span, top):
    ax.set_xlim(min(0.0, *[float(x.min()) for _, x, _ in panel.series if len(x)]) if panel.series else 0.0, span)
    ax.set_ylim(0, top)
    ax.tick_params(labelsize=8)
    ax.grid(alpha=0.3, linewidth=0.5)
    if warmup_s > 0:
        ax.axvspan(0, warmup_s, color="0.85", zorder=0)
        ax.text(warmup_s / 2, top * 0.97, "warm-up", ha="center", va="top", fontsize=7, color="0.4")
    steady = getattr(machine, "steady", None)
    if steady is not None and steady.settled:
        ax.axvline(steady.start_s, color="tab:green", linestyle=":", linewidth=1.2)
        ax.text(steady.start_s, top * 0.97, " steady ", color="tab:green", fontsize=7, va="top",
                ha="right" if steady.start_s > 0.75 * span else "left")
    if machine.stop is not None:
        at = machine.stop.at - machine.t0
        ax.axvline(at, color="red", linestyle="--", linewidth=1)
        right_half = at > 0.75 * span  # keep the label inside the panel
        ax.text(at, top * 0.5, f" stopped +{at:.0f} s ", color="red", fontsize=8, va="center",
                ha="right" if right_half else "left", bbox=dict(facecolor="white", alpha=0.8, edgecolor="none", pad=1))
    if panel.note and not panel.series:
        ax.text(0.5, 0.5, panel.note, transform=ax.transAxes, ha="center", va="center", fontsize=9, color="0.35")
        return
    if panel.stacked:
        xs = np.unique(np.concatenate([x for _, x, _ in panel.series]))
        ys = [np.interp(xs, x, np.nan_to_num(y), left=0, right=0) for _, x, y in panel.series]
        ax.stackplot(xs, ys, labels=[label for label, _, _ in panel.series], alpha=0.85, linewidth=0)
    else:
        for i, (label, x, y) in enumerate(panel.series):
            ax.plot(x, y, label=label, linewidth=1.1, color=panel.colors[i] if panel.colors else None)
    for label, y in panel.hlines:
        ax.axhline(y, color="0.3", linestyle=":", linewidth=1, label=label)
    ax.legend(fontsize=7, loc="upper right", framealpha=0.7)
