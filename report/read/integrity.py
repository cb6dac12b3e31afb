"""Data integrity: what a machine's part of a run folder lacks or holds damaged, checked rather than assumed.
Gaps in the PCP samples longer than GAP_INTERVALS sampling intervals, metrics the machine's manifest
(config/manifest.json, written by Ansible) promised but that have no value, logs it named that did not come back.
A run folder from before the manifest gets the gaps only. The summary's section: report/render/integrity.py."""
from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import numpy as np

from report.read.knobs import Knobs, machine_knobs
from report.read.pcp import Metrics

GAP_INTERVALS = 3           # a gap is longer than this many sampling intervals without any sample
SCRAPED = "openmetrics."    # logged less often than pcp_interval_s (pmrep interpolates them): not a gap
LOG_GROUP = re.compile(r"log mandatory on every (\d+) seconds? \{([^}]*)\}")    # pmlogger's configuration

Gap = tuple[float, float]
"""(epoch s of the last sample before the gap, its length in s)"""


def _json(path: Path) -> Any:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def _pcp(mdir: Path) -> dict[str, Any]:
    """The manifest's pcp part; {} when there is none (or it is not an object)."""
    manifest = _json(mdir / "config" / "manifest.json")
    pcp = manifest.get("pcp") if isinstance(manifest, dict) else None
    return pcp if isinstance(pcp, dict) else {}


def _positive(value: Any) -> float | None:
    try:
        return float(value) if float(value) > 0 else None
    except (TypeError, ValueError):
        return None


def sampling_interval(mdir: Path, knobs: Knobs | None = None) -> float | None:
    """pcp_interval_s as the machine had it: its manifest, then its knob (knobs.json, run.json, the run's
    knobs-catalog.json: report/read/knobs.py); None when none of them says."""
    value = _pcp(mdir).get("interval_s")
    if value is None:
        value = (knobs or machine_knobs(mdir)).value("pcp_interval_s")
    return _positive(value)


def _system_times(metrics: Metrics) -> list[np.ndarray]:
    return [t for name, (t, _, _) in metrics.by_metric.items() if not name.startswith(SCRAPED) and len(t)]


def measured_interval(metrics: Metrics) -> float | None:
    """The sampling interval the PCP samples show (the median step between sample times), for a run folder that
    does not say what it was; None with fewer than two sample times."""
    times = _system_times(metrics)
    seen = np.unique(np.concatenate(times)) if times else np.array([])
    return _positive(np.median(np.diff(seen))) if len(seen) > 1 else None


def _gaps(times: np.ndarray, interval_s: float) -> list[Gap]:
    seen = np.unique(times)
    steps = np.diff(seen)
    return [(float(seen[i]), float(steps[i])) for i in np.flatnonzero(steps > GAP_INTERVALS * interval_s)]


def sample_gaps(metrics: Metrics, interval_s: float) -> list[Gap]:
    """[(start, seconds)] where no PCP metric sampled at interval_s has a value for longer than
    GAP_INTERVALS × interval_s (epoch seconds of the last sample before the gap, and the gap's length):
    pmlogger stopped, or pmrep could not bridge the archive (a <mark> record: it was restarted)."""
    times = _system_times(metrics)
    return _gaps(np.concatenate(times), interval_s) if times else []


def metric_gaps(metrics: Metrics, interval_s: float) -> dict[str, list[Gap]]:
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


# Logs a machine writes only when a knob turns them on ({log: knob}): absent by configuration is not missing.
LOG_KNOBS = {"gc.log": "jvm_gc_log"}
# What a machine folder from before the manifest should hold (its logs gated by LOG_KNOBS like any other)
BEFORE_MANIFEST = ("jmeter.jtl", "pcp/metrics.csv", "logs/app.log", "logs/gc.log", "logs/httpd-error.log",
                   "logs/journal.txt")


def not_written(mdir: Path, knobs: Knobs | None = None) -> dict[str, str]:
    """{log: why it is not expected} for the logs LOG_KNOBS gates whose knob is not known to be on: 'not
    written: jvm_gc_log is false', or 'not checked: jvm_gc_log unknown' when nothing recorded the machine's value
    (calling it missing could be the very falsehood this avoids)."""
    knobs = knobs or machine_knobs(mdir)
    out = {}
    for log, knob in LOG_KNOBS.items():
        value = knobs.value(knob)
        if value is None:
            out[log] = f"not checked: {knob} unknown"
        elif not value:
            out[log] = f"not written: {knob} is {json.dumps(value)}"
    return out


def _collected(mdir: Path, name: str) -> bool:
    return (mdir / "logs" / name).is_file() or (mdir / "logs" / f"{name}.gz").is_file()


def missing_logs(mdir: Path, knobs: Knobs | None = None) -> list[str] | None:
    """The logs and journals the manifest names that are not in logs/ (a gzipped one counts), but for those the
    machine's configuration did not write (not_written). None without a manifest."""
    manifest = _json(mdir / "config" / "manifest.json")
    if not isinstance(manifest, dict):
        return None
    off = not_written(mdir, knobs)
    named = [*_names(manifest.get("logs")), *_names(manifest.get("journals"))]
    return [n for n in named if n not in off and not _collected(mdir, n)]


def _names(section: Any) -> list[str]:
    return [str(n) for n in section] if isinstance(section, dict | list) else []


def missing_files(mdir: Path, knobs: Knobs | None = None) -> list[str]:
    """The files this machine folder should hold but does not, relative to it: the JTL, the PCP values, the
    journal and every log its manifest names (config/manifest.json: what the machine's roles said they would
    write; a folder from before the manifest: BEFORE_MANIFEST), less the logs its configuration did not write."""
    manifest = _json(mdir / "config" / "manifest.json")
    off = not_written(mdir, knobs)
    if not isinstance(manifest, dict):
        expected = [f for f in BEFORE_MANIFEST if f.removeprefix("logs/") not in off]
        return [f for f in expected if not (mdir / f).exists()]
    absent = [f for f in ("jmeter.jtl", "pcp/metrics.csv") if not (mdir / f).exists()]
    if not _collected(mdir, "journal.txt"):      # lab/experiment/guest/run.sh writes it on every machine
        absent.append("logs/journal.txt")
    return absent + [f"logs/{n}" for n in missing_logs(mdir, knobs) or []]


def logging_intervals(mdir: Path) -> dict[str, float]:
    """{metric or group: seconds between its records} from the machine's own pmlogger configuration
    (config/pmlogger.config, the pcp role's `log mandatory on every N seconds { … }` groups); {} without it."""
    try:
        text = (mdir / "config" / "pmlogger.config").read_text()
    except OSError:
        return {}
    return {name: float(every) for every, names in LOG_GROUP.findall(text) for name in names.split()}


def too_short_for(mdir: Path, absent: list[str], metrics: Metrics | None) -> tuple[dict[str, float], float]:
    """Of the absent metrics, those logged less often than the PCP values span ({metric: seconds between its
    records}): a run of a few seconds records a 20 s group once at most, and pmrep needs two records to export
    it, so they are not sampled yet rather than missing; and that span in seconds. Without two sample times
    there is no span to judge by: every absent metric is missing."""
    times = [t for t, _, _ in (metrics.by_metric.values() if metrics is not None else ()) if len(t)]
    span = float(np.ptp(np.concatenate(times))) if times else 0.0
    every = logging_intervals(mdir) if span > 0 else {}
    def interval(metric: str) -> float:    # a metric's own line, else its group's (openmetrics.app)
        groups = [name for name in every if metric == name or metric.startswith(name + ".")]
        return every[max(groups, key=len)] if groups else 0.0
    return {m: every_s for m in absent if (every_s := interval(m)) > span}, span


def missing_metrics(mdir: Path, metrics: Metrics | None) -> list[str] | None:
    """The manifest's exported metrics without a value in metrics.csv; None without a manifest."""
    if not isinstance(_json(mdir / "config" / "manifest.json"), dict):
        return None
    have = metrics.by_metric if metrics is not None else {}
    named = _pcp(mdir).get("metrics")
    return [m for m in named if isinstance(m, str) and m not in have] if isinstance(named, list) else []
