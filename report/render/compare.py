"""compare.md: several runs side by side. For every verdict figure: each run's default and tuned value and its
tuned-vs-default interval (as in the run's own report), and each configuration's change from the first run named
(report/stats/compare.py). A/A runs in the list show how far 'identical' drifts between runs on this host."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from report import MACHINES
from report.fmt import UNITS
from report.read.calibrations import fingerprint, mismatch
from report.read.records import read_record
from report.render.summary import knob_sets_text
from report.render.verdict import FIGURE_NAMES, effect_text
from report.stats.compare import across_runs
from report.stats.runs import LoadedRun
from report.stats.uncertainty import CI, FIGURES

DECIMALS = {"tps": 1, "error_pct": 2, "p50": 0, "p95": 0, "p99": 0, "cpu": 2}    # each verdict figure's, as a level


def _value(x: float | None, figure: str) -> str:
    if x is None or np.isnan(x):
        return "—"
    return f"{x:,.{DECIMALS[figure]}f} {UNITS[figure]}"


def render(out: str | Path, runs: list[LoadedRun]) -> str:
    names = [Path(r.folder).name for r in runs]
    lines = [f"# Camel Tuning Lab — comparison of {len(runs)} runs", "",
             f"Runs, in the order given (changes are against the first, **{names[0]}**):", ""]
    for r, name in zip(runs, names, strict=True):
        d = r.design
        kind = {"aa": f"A/A ({d['configurations']['default']} on both machines)", "ab": "A/B"}.get(d["kind"], d["kind"])
        swap = " — roles swapped" if r.swapped else ""
        trial = f", trial {d['trial']} of {d['trials']}" if d.get("trial") else ""
        service = f"service {r.run.get('service', 'name', default=None) or 'sample'}"
        lines.append(f"- [{name}](../{name}/report.html): {kind}{trial}{swap} of {service}; status {r.run.status}; "
                     f"{knob_sets_text(r.run)}; verdict: {_verdict_of(r)}")
    services = {r.run.get("service", "name", default=None) or "sample" for r in runs}
    if len(services) > 1:
        lines += ["", "> **These runs are of different services**: a change between them is the services' difference, "
                      "not a knob's."]
    unlike = _unlike_the_first(runs, names)
    if unlike:
        lines += ["", "> **Not the first run's load or kind of host**: a change from it is theirs as much as a "
                      "knob's — " + "; ".join(unlike) + "."]
    lines.append("")
    for figure in FIGURES:
        lines += [f"## {FIGURE_NAMES[figure]}", "",
                  f"| run | default | tuned | tuned vs default ({CI}) | default vs first run | "
                  "tuned vs first run |", "| --- | ---: | ---: | ---: | ---: | ---: |"]
        for r, name in zip(runs, names, strict=True):
            if r.analysis is None:
                lines.append(f"| {name} | — | — | — (no paired window) | | |")
                continue
            e = r.analysis.effects[figure]
            changes = ["" if r is runs[0] else effect_text(across_runs(runs[0], r, side, figure))
                       for side in MACHINES]
            lines.append(f"| {name} | {_value(e.default, figure)} | {_value(e.tuned, figure)} | {effect_text(e)} | "
                         f"{changes[0]} | {changes[1]} |")
        lines.append("")
    lines += ["Intervals within a run: paired block bootstrap (report/README.md, Uncertainty). Across runs: the "
              "runs are independent, so the interval of a change combines both runs' bootstrap spreads; it does "
              "not include drift of the host between runs — A/A runs in the list measure that.", ""]
    return "\n".join(lines)


def _unlike_the_first(runs: list[LoadedRun], names: list[str]) -> list[str]:
    """'<run>: users 20, not 150' for each run whose load or host differs from the first's (as an A/A calibration
    would judge it: report/read/calibrations.py; the service is said above)."""
    def fp(r):
        return {k: v for k, v in fingerprint(r.run).items() if k != "service"}
    first = fp(runs[0])
    return [f"{name}: {why}" for r, name in zip(runs[1:], names[1:], strict=True) if (why := mismatch(first, fp(r)))]


def _verdict_of(r: LoadedRun) -> str:
    record = read_record(r.folder)
    return "(no report yet)" if record is None else record.get("verdict", "")
