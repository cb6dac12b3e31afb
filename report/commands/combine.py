"""python -m report combine SERIES_FOLDER TRIAL_FOLDER...: one report over the trials of a `--repeat N` run
(SERIES_FOLDER/summary.md, report.html and verdict.json). The method: report/stats/combine.py."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from report.errors import BadInput
from report.output import WriteFailed, write_files
from report.read.calibrations import matching_aa
from report.read.records import VERDICT_JSON
from report.render.combine import FOREST, forest_png, record, render, verdict_sentence
from report.render.html import render_html
from report.render.verdict import verdict_json
from report.stats import between
from report.stats.between import Calibration
from report.stats.combine import combine
from report.stats.runs import LoadedRun, load_runs


def write(series_folder: str | Path, trial_folders: list[str]) -> tuple[Path, str]:
    """Writes the series report (summary.md, report.html, verdict.json: all or none, raises WriteFailed);
    returns (summary path, verdict sentence)."""
    series_folder = Path(series_folder)
    trials = load_runs(trial_folders)
    calibration = series_calibration(trials)
    results = combine(trials, calibration)
    sentence = verdict_sentence(results, trials)
    summary = render(series_folder, trials, results)
    page = render_html(f"Camel Tuning Lab — {series_folder.name}", summary,
                       [(FOREST, forest_png(trials, results))], {}, charts_title="At a glance")
    verdict = verdict_json(record(series_folder, trials, results, sentence, calibration))
    # all rendered: the three files all or none, verdict.json last (report/output.py)
    write_files(series_folder, {"summary.md": summary, "report.html": page, VERDICT_JSON: verdict})
    return series_folder / "summary.md", sentence


def series_calibration(trials: list[LoadedRun]) -> Calibration | None:
    """The A/A runs beside the trials that match their load (as `report run` looks them up for one run); none for an
    A/A series, which is a calibration itself."""
    if not trials or all(t.design.get("kind") == "aa" for t in trials):
        return None
    return between.calibrate(matching_aa(trials[0].folder, trials[0].run))


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("series_folder", help="where the combined report goes, e.g. results/<stamp>-x-series")
    parser.add_argument("trials", nargs="+", help="the trials' run folders, in the order they ran")


def main(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    missing = [t for t in args.trials if not (Path(t) / "run.json").is_file()]
    if missing:
        raise BadInput(f"not run folders (no run.json): {', '.join(missing)}")
    try:
        summary, sentence = write(args.series_folder, args.trials)
    except WriteFailed as e:
        print(f"report: {e}", file=sys.stderr)
        return 1
    print(f"report: {summary.parent / 'report.html'}, {summary}\n{sentence}")
    return 0
