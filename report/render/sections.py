"""The summary's sections after the verdict's figures (the document: report/render/summary.py): machines that
stopped answering with their evidence, errors after the warm-up, the knob diff, versions, log findings and the
processes that ended, data integrity, and what is missing or unreadable."""
from __future__ import annotations

from datetime import UTC, datetime

from report import MACHINES
from report.explain.restarts import Restart, restarts
from report.fmt import utc_clock
from report.read.events import log_events
from report.read.integrity import missing_files
from report.read.knobs import read_knobs
from report.read.runinfo import RunInfo
from report.render.integrity import machine_lines
from report.render.verdict import stop_phrase
from report.stats.machine import Machine
from report.stats.stopped import BUCKET_S, MAX_SUCCESS_RATE, MIN_ATTEMPTS, MIN_SPAN_S

TOP_ERRORS = 5


def _cell(value: object) -> str:
    """A markdown table cell: no pipes or newlines from log text or knob values."""
    text = "null" if value is None else str(value)
    return text.replace("|", "\\|").replace("\n", " ")


def table(header: list[str], rows: list[list[object]], align: list[str] | None = None) -> list[str]:
    """A Markdown table; align: one '---' / '---:' per column (default: the first left, the others right)."""
    align = align or ["---"] + ["---:"] * (len(header) - 1)
    lines = ["| " + " | ".join(header) + " |", "| " + " | ".join(align) + " |"]
    lines += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows]
    return lines


def stops_section(machines: dict[str, Machine]) -> list[str]:
    lines = ["## Stopped answering", "",
             f"Rule: from some 10 s bucket on until its last sample, every bucket's success rate stayed under "
             f"{MAX_SUCCESS_RATE * 100:.0f} % for at least {MIN_SPAN_S:.0f} s and {MIN_ATTEMPTS} requests; "
             f"the time is the end of the last successful response before that (see report/README.md).", ""]
    stopped = [m for m in machines.values() if m.stop is not None]
    if not stopped:
        with_samples = [m.name for m in machines.values() if m.samples is not None]
        # "for good": an outage the machine came back from is not a stop here (the liveness probe's line says it)
        lines.append(f"No machine stopped answering for good ({', '.join(with_samples) or 'no load results'}).")
        return lines + [""]
    for m in stopped:
        s = m.stop
        lines += [f"### {stop_phrase(m)}", ""]
        lines.append(f"- from then to the end ({s.until - s.at:,.0f} s): {s.attempts:,} requests, "
                     f"{s.successes:,} succeeded ({100.0 * s.successes / max(1, s.attempts):.1f} %); "
                     f"silent from +{s.silent_from - m.t0:.0f} s in {BUCKET_S:.0f} s buckets")
        if s.errors:
            lines += ["", "Errors after that time:", ""]
            rows = [[e, f"{n:,}", f"{100.0 * n / s.attempts:.1f} %"] for e, n in s.errors.most_common(TOP_ERRORS)]
            lines += table(["error", "requests", "share"], rows, ["---", "---:", "---:"])
        lines += ["", "Hints from its logs:", ""]
        lines += _hint_lines(m) or ["- none found in its logs"]
        lines.append("")
    return lines


def _hint_lines(machine: Machine) -> list[str]:
    return [f"- `{h.file}`: {h.what} ×{h.count} — first: `{h.first.replace('`', chr(39))}`" for h in machine.hints]


def errors_section(machines: dict[str, Machine]) -> list[str]:
    lines = ["## Errors after warm-up", ""]
    rows = []
    for m in machines.values():
        total = m.load.requests
        for error, n in m.load.errors.most_common(TOP_ERRORS):
            rows.append([m.name, error, f"{n:,}", f"{100.0 * n / total:.2f} %"])
    if not rows:
        return lines + ["None.", ""]
    return lines + table(["machine", "error", "requests", "of all requests"], rows,
                          ["---", "---", "---:", "---:"]) + [""]


def knobs_section(run: RunInfo) -> list[str]:
    diff = run.get("knob_diff", default={})
    lines = ["## Knob diff (tuned vs default)", ""]
    if not diff:
        return lines + ["run.json has no knob_diff." if not run.get("machines") else
                        "The machines' knobs are identical.", ""]
    rows = [[k, v.get("default") if isinstance(v, dict) else v, v.get("tuned") if isinstance(v, dict) else ""]
            for k, v in sorted(diff.items())]
    return lines + table(["knob", "default", "tuned"], rows, ["---", "---", "---"]) + [""]


def versions_section(run: RunInfo) -> list[str]:
    lines = ["## Versions", ""]
    per = {m: run.get("machines", m, "versions", default={}) for m in MACHINES}
    names = sorted(set().union(*[set(v) for v in per.values()]))
    if not names:
        return lines + ["run.json has no versions.", ""]
    rows = [[n, per["default"].get(n), per["tuned"].get(n)] for n in names]
    lines += table(["component", "default", "tuned"], rows, ["---", "---", "---"]) + [""]
    shapes = {m: per[m].get("jvm_shape") for m in MACHINES}
    if all(shapes.values()) and len(set(shapes.values())) > 1:     # the twins should be one shape
        lines += ["**The JVMs saw different machines** (jvm_shape, a JVM with no options of its own): "
                  + "; ".join(f"{m}: {shapes[m]}" for m in MACHINES) + ".", ""]
    return lines


def logs_section(run: RunInfo, machines: dict[str, Machine]) -> list[str]:
    lines = ["## Log findings", ""]
    for m in machines.values():
        lines += [f"**{m.name}**", ""] + (_hint_lines(m) or ["- nothing notable"]) + [""]
        ended = restarts(m.folder, log_events(m.folder, _year(run))) if m.folder else []
        if ended:
            lines += [f"Processes that ended on {m.name} (journal, crash files), with their cause:", ""]
            lines += restart_lines(ended) + [""]
    return lines


def restart_lines(items: list[Restart]) -> list[str]:
    """Markdown list items: `- 22:41:03 UTC camel-app ended — OOM killer (…); restarted 22:41:13 UTC`."""
    return [f"- {utc_clock(r.at)} UTC {r.unit or 'a process'} ended — {r.cause}; "
            + (f"restarted {utc_clock(r.restarted_at)} UTC" if r.restarted_at is not None
               else "not restarted (in the logs)")
            for r in items]


def _year(run: RunInfo) -> int:
    """The run's year, for journal lines without one: from its start, else now."""
    started = str(run.get("started", default="") or "")
    return int(started[:4]) if started[:4].isdigit() else datetime.now(UTC).year


def integrity_section(run: RunInfo, machines: dict[str, Machine]) -> list[str]:
    lines = ["## Data integrity", ""]
    for m in machines.values():
        lines += [f"**{m.name}**", ""] + machine_lines(m, run.machine_dir(m.name), read_knobs(m, run)) + [""]
    return lines


def missing_section(run: RunInfo, machines: dict[str, Machine]) -> list[str]:
    """What the run folder should hold but does not (report/read/integrity.py missing_files: from each
    machine's manifest and knobs, so a log its configuration never writes is not called missing), what could
    not be read, and the files run.json lists as incomplete (a full disk)."""
    items = list(run.problems)
    for m in machines.values():
        mdir = run.machine_dir(m.name)
        if not mdir.is_dir():
            items.append(f"{m.name}/ (the whole machine folder)")
            continue
        items += [f"{m.name}/{name}" for name in missing_files(mdir, read_knobs(m, run))]
    items += [f"{m.name}: {note}" for m in machines.values() for note in m.notes]
    why = run.get("error", default="its writer stopped")     # run.json names them: written when the disk filled,
    items += [f"{name} — may be incomplete ({why})" for name in run.get("incomplete", default=[])]   # or a watch's
    if not items:
        return []
    return ["## Missing or unreadable", ""] + [f"- {i}" for i in items] + [""]
