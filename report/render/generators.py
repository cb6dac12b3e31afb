"""The load generators of a distributed run (real hosts with a `loadgen` group, JMeter's remote engines): each
one's CPU and memory over the measured window, from its PCP recording (loadgen/<name>/pcp/metrics.csv, written
by lab/load/generator_pcp.py), and whether it was saturated. A generator short of CPU sends late and measures
late: the targets' figures would then understate what they can do."""
import math

from .pcp import read_metrics
from .stats import Window, in_window, percentile

SATURATED_BUSY_PCT = 90.0       # p99 of the generator's CPU busy (all its CPUs) at or above this: saturated


def measured_window(machines):
    """The span of the machines' measured windows (the generators served both), or None."""
    windows = [m.window for m in machines.values() if m.window is not None and m.window.seconds > 0]
    if not windows:
        return None
    start, end = min(w.start for w in windows), max(w.end for w in windows)
    return Window(t0=start, warmup_s=0.0, end=end)


def figures(metrics_csv, window):
    """{cpus, busy_mean, busy_p99 (% of all its CPUs), available_min_mb, samples} over the window."""
    metrics = read_metrics(metrics_csv)
    shares = metrics.cpu_shares()      # every state on the same sample times: busy is their sum
    busy = (next(iter(shares.values()))[0], sum(v for _, v in shares.values())) if shares else None
    out = {"cpus": math.nan, "busy_mean": math.nan, "busy_p99": math.nan, "available_min_mb": math.nan, "samples": 0}
    ncpu = metrics.series("hinv.ncpu")[1]
    if len(ncpu):
        out["cpus"] = int(ncpu[-1])
    if busy is not None and window is not None:
        _, in_it = in_window(*busy, window)
        if len(in_it):
            out.update(busy_mean=float(in_it.mean()), busy_p99=percentile(in_it, 99), samples=len(in_it))
    if window is not None:
        _, available = in_window(*metrics.series("mem.util.available"), window)
        if len(available):
            out["available_min_mb"] = float(available.min()) / 1024
    return out


def _num(value, unit=""):
    return "—" if value is None or (isinstance(value, float) and math.isnan(value)) else f"{value:.0f}{unit}"


def lines(run, machines):
    """Markdown: '## Load generators', or nothing for a run the controller loaded itself."""
    engines = (run.get("load") or {}).get("engines") or []
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
