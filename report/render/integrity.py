"""The summary's "Data integrity" lines of one machine (the checks: report/read/integrity.py): JTL rows that could
not be read, gaps in the PCP samples, metrics and logs the manifest named that did not come back; every check
said, passed or not."""
from __future__ import annotations

from pathlib import Path

from report.read.integrity import (
    GAP_INTERVALS,
    Gap,
    measured_interval,
    metric_gaps,
    missing_logs,
    missing_metrics,
    not_written,
    sample_gaps,
    sampling_interval,
    too_short_for,
)
from report.read.knobs import Knobs
from report.stats.machine import Machine


def _by_spans(own: dict[str, list[Gap]]) -> list[tuple[tuple[Gap, ...], list[str]]]:
    """[(spans, [metric, …])]: the metrics that lacked values over the same stretches (one agent's, mostly)."""
    groups: dict[tuple[Gap, ...], list[str]] = {}
    for name, spans in sorted(own.items()):
        groups.setdefault(tuple(spans), []).append(name)
    return sorted(groups.items())


def _where(spans: list[Gap] | tuple[Gap, ...], t0: float, shown: int = 10) -> str:
    """'+95 s (35 s), …': where gaps began from the first request, and how long each was."""
    where = ", ".join(f"+{start - t0:.0f} s ({length:.0f} s)" for start, length in spans[:shown])
    return where + (f" and {len(spans) - shown} more" if len(spans) > shown else "")


def _gap_group(names: list[str], spans: tuple[Gap, ...], t0: float, shown: int = 6) -> str:
    listed = ", ".join(names[:shown]) + (f" and {len(names) - shown} more" if len(names) > shown else "")
    return f"{listed} at {_where(spans, t0)}"


def _pcp_lines(machine: Machine, mdir: Path, knobs: Knobs | None) -> list[str]:
    metrics = machine.metrics
    interval = sampling_interval(mdir, knobs) or measured_interval(metrics)
    unreadable = f"; **{metrics.bad_rows:,} unreadable rows** in metrics.csv" if metrics.bad_rows else ""
    if interval is None:
        return [f"- PCP sampling interval unknown (no manifest, knob or catalog says; too few samples to measure "
                f"it): gaps not checked{unreadable}"]
    gaps = sample_gaps(metrics, interval)
    t0 = machine.t0 if machine.t0 is not None else 0.0
    longest = GAP_INTERVALS * interval
    lines = [f"- PCP samples every {interval:g} s: "
             + (f"**{len(gaps)} gap(s) longer than {longest:g} s** at {_where(gaps, t0)} (from the first request)"
                if gaps else f"no gap longer than {longest:g} s") + unreadable]
    own = metric_gaps(metrics, interval)
    if own:
        lines.append("- **metrics with gaps of their own**: " + "; ".join(
            _gap_group(names, spans, t0) for spans, names in _by_spans(own)))
    return lines


def _absent_said(mdir: Path, absent: list[str], machine: Machine, shown: int = 6) -> str:
    """The manifest's metrics without values, in bold, but those logged less often than this run lasted: said
    apart, as not sampled yet (a run of a few seconds), not as missing."""
    unsampled, span = too_short_for(mdir, absent, machine.metrics)
    missing = [m for m in absent if m not in unsampled]
    said = [f"**no values for {', '.join(missing)}**" if missing else "none missing"]
    if unsampled:
        names = list(unsampled)
        low, high = min(unsampled.values()), max(unsampled.values())
        every = f"{low:g}" if low == high else f"{low:g}–{high:g}"
        listed = ", ".join(names[:shown]) + (f" and {len(names) - shown} more" if len(names) > shown else "")
        said.append(f"{len(names)} logged every {every} s, "
                    f"longer than this run's PCP values span ({span:g} s), have none yet: {listed}")
    return "; ".join(said) if missing or unsampled else "all have values"


def machine_lines(machine: Machine, mdir: Path, knobs: Knobs | None = None) -> list[str]:
    """One machine's integrity findings as Markdown bullets, every check said, passed or not. knobs: the
    machine's (report/read/knobs.py), read from mdir when not given."""
    lines = []
    if machine.samples is not None:
        bad = machine.samples.bad_rows
        lines.append(f"- jmeter.jtl: {len(machine.samples):,} samples read"
                     + (f"; **{bad:,} rows could not be read** (skipped)" if bad else ", no unreadable row"))
    else:
        lines.append("- jmeter.jtl: **absent or unreadable**")
    if machine.metrics is not None:
        lines += _pcp_lines(machine, mdir, knobs)
    else:
        lines.append("- pcp/metrics.csv: **absent or unreadable**")
    absent_metrics, absent_logs = missing_metrics(mdir, machine.metrics), missing_logs(mdir, knobs)
    if absent_metrics is None:
        lines.append("- no config/manifest.json (a run from before it): metrics and logs not checked against it")
    else:
        lines.append("- metrics the manifest names: " + _absent_said(mdir, absent_metrics, machine))
        off = not_written(mdir, knobs)
        lines.append("- logs the manifest names: " + (
            f"**not collected: {', '.join(absent_logs)}**" if absent_logs else "all collected")
            + "".join(f"; {log} {why}" for log, why in off.items()))
    return lines
