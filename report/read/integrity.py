"""Data integrity: what a machine's part of a run folder lacks or holds damaged, checked rather than assumed.
JTL rows that could not be read, gaps in the PCP samples longer than GAP_INTERVALS sampling intervals,
metrics the machine's manifest (config/manifest.json, written by Ansible) promised but that have no value,
logs it named that did not come back. A run folder from before the manifest gets the first two only."""
import json

import numpy as np

GAP_INTERVALS = 3           # a gap is longer than this many sampling intervals without any sample
SCRAPED = "openmetrics."    # logged less often than pcp_interval_s (pmrep interpolates them): not a gap


def _json(path):
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def sampling_interval(mdir):
    """pcp_interval_s as the machine had it: its manifest, then its knobs.json, else 1 s (the default)."""
    manifest, knobs = _json(mdir / "config" / "manifest.json") or {}, _json(mdir / "config" / "knobs.json") or {}
    value = manifest.get("pcp", {}).get("interval_s", knobs.get("pcp_interval_s", 1))
    try:
        return float(value) if float(value) > 0 else 1.0
    except (TypeError, ValueError):
        return 1.0


def _gaps(times, interval_s):
    seen = np.unique(times)
    steps = np.diff(seen)
    return [(float(seen[i]), float(steps[i])) for i in np.flatnonzero(steps > GAP_INTERVALS * interval_s)]


def sample_gaps(metrics, interval_s):
    """[(start, seconds)] where no PCP metric sampled at interval_s has a value for longer than
    GAP_INTERVALS × interval_s (epoch seconds of the last sample before the gap, and the gap's length):
    pmlogger stopped, or pmrep could not bridge the archive (a <mark> record: it was restarted)."""
    times = [t for name, (t, _, _) in metrics.by_metric.items() if not name.startswith(SCRAPED) and len(t)]
    return _gaps(np.concatenate(times), interval_s) if times else []


def metric_gaps(metrics, interval_s):
    """{metric: its own gaps} beyond the gaps of all metrics: one agent without values while the others
    had them (e.g. PCP's proc agent dead: hotproc.* missing)."""
    everything = sample_gaps(metrics, interval_s)
    covered = [(start, start + length) for start, length in everything]
    out = {}
    for name, (t, _, _) in metrics.by_metric.items():
        if name.startswith(SCRAPED) or len(t) < 2:
            continue
        own = [(s, n) for s, n in _gaps(t, interval_s) if not any(a <= s and s + n <= b for a, b in covered)]
        if own:
            out[name] = own
    return out


def _by_spans(own):
    """[(spans, [metric, …])]: the metrics that lacked values over the same stretches (one agent's, mostly)."""
    groups = {}
    for name, spans in sorted(own.items()):
        groups.setdefault(tuple(spans), []).append(name)
    return sorted(groups.items())


def _where(spans, t0, shown=10):
    """'+95 s (35 s), …': where gaps began from the first request, and how long each was."""
    where = ", ".join(f"+{start - t0:.0f} s ({length:.0f} s)" for start, length in spans[:shown])
    return where + (f" and {len(spans) - shown} more" if len(spans) > shown else "")


def _gap_group(names, spans, t0, shown=6):
    listed = ", ".join(names[:shown]) + (f" and {len(names) - shown} more" if len(names) > shown else "")
    return f"{listed} at {_where(spans, t0)}"


def missing_logs(mdir):
    """The logs and journals the manifest names that are not in logs/ (a gzipped one counts). gc.log only
    when the machine wrote one (jvm_gc_log). None without a manifest."""
    manifest = _json(mdir / "config" / "manifest.json")
    if manifest is None:
        return None
    knobs = _json(mdir / "config" / "knobs.json") or {}
    named = list(manifest.get("logs", {})) + list(manifest.get("journals", {}))
    named = [n for n in named if n != "gc.log" or knobs.get("jvm_gc_log")]
    return [n for n in named if not (mdir / "logs" / n).is_file() and not (mdir / "logs" / f"{n}.gz").is_file()]


def missing_metrics(mdir, metrics):
    """The manifest's exported metrics without a value in metrics.csv; None without a manifest."""
    manifest = _json(mdir / "config" / "manifest.json")
    if manifest is None:
        return None
    have = metrics.by_metric if metrics is not None else {}
    return [m for m in manifest.get("pcp", {}).get("metrics", []) if m not in have]


def machine_lines(machine, mdir):
    """One machine's integrity findings as Markdown bullets, every check said, passed or not."""
    lines = []
    if machine.samples is not None:
        bad = machine.samples.bad_rows
        lines.append(f"- jmeter.jtl: {len(machine.samples):,} samples read"
                     + (f"; **{bad:,} rows could not be read** (skipped)" if bad else ", no unreadable row"))
    else:
        lines.append("- jmeter.jtl: **absent or unreadable**")
    if machine.metrics is not None:
        interval = sampling_interval(mdir)
        gaps = sample_gaps(machine.metrics, interval)
        t0 = machine.t0 if machine.t0 is not None else 0.0
        lines.append(f"- PCP samples every {interval:g} s: " + (
            f"**{len(gaps)} gap(s) longer than {GAP_INTERVALS * interval:g} s** at {_where(gaps, t0)} (from the first request)"
            if gaps else f"no gap longer than {GAP_INTERVALS * interval:g} s")
            + (f"; **{machine.metrics.bad_rows:,} unreadable rows** in metrics.csv" if machine.metrics.bad_rows else ""))
        own = metric_gaps(machine.metrics, interval)
        if own:
            lines.append("- **metrics with gaps of their own**: " + "; ".join(
                _gap_group(names, spans, t0) for spans, names in _by_spans(own)))
    else:
        lines.append("- pcp/metrics.csv: **absent or unreadable**")
    absent_metrics, absent_logs = missing_metrics(mdir, machine.metrics), missing_logs(mdir)
    if absent_metrics is None:
        lines.append("- no config/manifest.json (a run from before it): metrics and logs not checked against it")
    else:
        lines.append("- metrics the manifest names: " + (
            f"**no values for {', '.join(absent_metrics)}**" if absent_metrics else "all have values"))
        lines.append("- logs the manifest names: " + (
            f"**not collected: {', '.join(absent_logs)}**" if absent_logs else "all collected"))
    return lines
