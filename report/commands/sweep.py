"""python -m report sweep SWEEP_FOLDER: a sweep's or an ablation's report (SWEEP_FOLDER/sweep.md and sweep.html)
from its sweep.json and each trial's verdict.json (each trial is an ordinary run folder with its own report)."""
from __future__ import annotations

import argparse
from pathlib import Path

from report.commands import folder_document
from report.read.sweep import SWEEP_JSON, BadSweep, load
from report.render.sweep import chart, render


def write(folder: str | Path) -> tuple[Path, Path]:
    folder = Path(folder)
    data, trials = load(folder)
    return folder_document.write(folder, "sweep", render(data, trials), chart(data, trials))


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("folder", help="the sweep's folder (holds sweep.json)")


def main(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    return folder_document.main(args.folder, parser, "sweep", SWEEP_JSON, write, BadSweep)
