"""python -m report run RUN_FOLDER [--warmup SECONDS|auto]: writes RUN_FOLDER/report.html, RUN_FOLDER/summary.md and
RUN_FOLDER/verdict.json."""
from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

from report import MACHINES
from report.errors import BadInput
from report.output import WriteFailed, warn, write_files
from report.read.calibrations import matching_aa
from report.read.profiles import load_profiles
from report.read.records import VERDICT_JSON
from report.read.runinfo import RunInfo, design
from report.render import capacity
from report.render.charts import render
from report.render.flame import flame_sections
from report.render.html import render_html
from report.render.labels import label_lines, label_record
from report.render.panels import CHARTS
from report.render.summary import render_summary
from report.render.verdict import verdict_json, verdict_record, verdict_sentence
from report.stats import between
from report.stats.labels import by_label
from report.stats.machine import read_machine, windowed
from report.stats.runs import analyse_machines


def build_report(folder: str | Path, warmup: float | str | None = None) -> tuple[Path, Path]:
    """Reads the run folder, renders its report.html, summary.md and verdict.json in memory, then writes them
    all or none (report/output.py: a failure leaves the previous three untouched; raises WriteFailed); returns
    (html path, summary path). Files of the folder or its siblings that cannot be read are named on stderr.
    warmup: seconds, 'auto' (from where both machines' throughput settled), or None (run.json's)."""
    run = RunInfo(folder)
    for problem in run.problems:
        warn(f"{run.folder}: {problem}")
    # --until-settled or a tune's race ended the load: the steady state it waited for is what the run measures
    ended_settled = warmup is None and bool(run.get("load", "settled") or (run.get("load", "race") or {}).get("ended"))
    warmup = "auto" if ended_settled else warmup
    if warmup is not None and warmup != "auto":
        warmup_s, source = float(warmup), "--warmup"
    elif run.warmup_s is not None:
        warmup_s, source = float(run.warmup_s), "run.json load.warmup_s"
    else:
        warmup_s, source = 0.0, "run.json has no load.warmup_s: nothing excluded"
    read = {name: read_machine(run, name) for name in MACHINES}
    machines = {name: windowed(read[name], run, warmup_s) for name in MACHINES}
    if warmup == "auto":
        settled = [m.steady.start_s for m in machines.values() if m.steady is not None and m.steady.settled]
        if len(settled) == len(machines):
            warmup_s, source = max(settled), ("--until-settled ended the load" if ended_settled else "--warmup auto") \
                + ": where the later machine's throughput settled"
            machines = {name: windowed(read[name], run, warmup_s) for name in MACHINES}
        else:
            source += "; --warmup auto kept it: not every machine reached a steady state"
    analysis = analyse_machines(machines)
    # the A/A runs of this load beside it: their between-run variance widens an A/B run's intervals
    calibration = between.calibrate(matching_aa(folder, run))
    if design(run)["kind"] != "aa":
        between.apply(analysis, calibration)
    sentence = verdict_sentence(run, machines, analysis)
    profiles = load_profiles(run)
    labelled, left_out = by_label(machines, analysis)
    summary = render_summary(run, machines, warmup_s, source, sentence, analysis, calibration, profiles,
                             per_label=label_lines(labelled, left_out))
    verdict = verdict_json({**verdict_record(run, machines, analysis, sentence, calibration),
                            "labels": label_record(labelled)})
    charts = [(chart, render(chart, list(machines.values()), warmup_s)) for chart in CHARTS]
    stepped = capacity.chart(run, machines)
    if stepped is not None:
        charts.insert(0, stepped)
    deferred = run.get("dashboards")
    page = render_html(f"Camel Tuning Lab — {run.run_id}", summary, charts, run.dashboards(),
                       flames=flame_sections(profiles), no_dashboards=deferred if isinstance(deferred, str) else "")
    # all rendered: now the three files, all or none (verdict.json last: what other reports read)
    summary_path, html_path, _ = write_files(folder, {"summary.md": summary, "report.html": page,
                                                      VERDICT_JSON: verdict})
    return html_path, summary_path


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run_folder", help="results/<run-id>")
    parser.add_argument("--warmup", metavar="SECONDS|auto",
                        help="warm-up to exclude, from each machine's first sample (default: run.json load.warmup_s); "
                             "auto: from where both machines' throughput settled (see README: steady state)")


def warmup_seconds(text: str) -> float:
    """--warmup's seconds: a finite number ≥ 0 (float() also reads nan and inf, which would exclude no or every
    sample without a word); BadInput otherwise."""
    try:
        seconds = float(text)
    except ValueError:
        seconds = math.nan
    if not math.isfinite(seconds) or seconds < 0:
        raise BadInput(f"--warmup {text!r}: seconds (≥ 0) or auto")
    return seconds


def main(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    folder = Path(args.run_folder)
    if not folder.is_dir():
        raise BadInput(f"{folder}: no such run folder")
    if not any((folder / m).is_dir() for m in MACHINES):
        run = RunInfo(folder)
        if not run.data:        # nothing to report on: a mistyped folder, or a run.json that says nothing
            why = "; ".join(run.problems) or "run.json holds nothing"
            raise BadInput(f"{folder} is not a run folder ({why}; no {' or '.join(f'{m}/' for m in MACHINES)})")
    if args.warmup is not None and args.warmup != "auto":
        args.warmup = warmup_seconds(args.warmup)
    started = time.monotonic()
    try:
        html_path, summary_path = build_report(folder, args.warmup)
    except WriteFailed as e:
        print(f"report: {e}", file=sys.stderr)
        return 1
    print(f"report: {html_path} ({html_path.stat().st_size / 1024:.0f} KiB), {summary_path} "
          f"in {time.monotonic() - started:.1f} s")
    return 0
