"""The summary's "Saturation (USE)" section: per machine, the USE table over the measured window and the story
(the analysis: report/explain/saturation/)."""
from __future__ import annotations

from report import fmt
from report.explain.saturation import Finding, Resource, Saturation, analyse
from report.explain.saturation.model import GC_TIME_SHARE, HELD_S, NEAR_LIMIT
from report.fmt import utc_clock
from report.read.knobs import read_knobs
from report.read.runinfo import RunInfo
from report.stats.machine import Machine


def _peak_cell(res: Resource, t0: float) -> str:
    if res.not_recorded:
        return f"not recorded ({res.not_recorded})"
    if res.unusable:
        return f"unusable ({res.unusable})"
    if fmt.missing(res.peak):
        return "no sample in the window" if res.unit else fmt.NA
    return f"{res.show(res.peak)} (+{res.peak_at - t0:.0f} s, {utc_clock(res.peak_at)} UTC)"


def table_lines(sat: Saturation) -> list[str]:
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


def story_lines(sat: Saturation) -> list[str]:
    """The ordered story: each resource that reached its limit (by its first finding), then the symptoms."""
    def said(f: Finding) -> str:
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


def saturation_lines(run: RunInfo, machines: dict[str, Machine]) -> list[str]:
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
        lines += [f"> {note}" for note in sat.notes] + ([""] if sat.notes else [])
        lines += story_lines(sat) + [""]
    return lines
