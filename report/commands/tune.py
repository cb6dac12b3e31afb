"""python -m report tune TUNE_FOLDER: a tune's report (TUNE_FOLDER/tune.md and tune.html) from its tune.json (each
trial is an ordinary run folder with its own report)."""
from __future__ import annotations

import argparse
from pathlib import Path

from report.commands import folder_document
from report.output import write_files
from report.read.tune import TUNE_JSON, BadTune, load
from report.render.html import render_html
from report.render.tune import chart, render


def write(folder: str | Path) -> tuple[Path, Path]:
    folder = Path(folder)
    data = load(folder)
    text = render(data)
    figure = chart(data)
    html = render_html(f"Camel Tuning Lab — {folder.name}", text, [figure] if figure else [], {},
                       charts_title="Chart")
    write_files(folder, {"tune.md": text, "tune.html": html})       # both or neither (report/output.py)
    return folder / "tune.html", folder / "tune.md"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("folder", help="the tune's folder (holds tune.json)")


def main(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    return folder_document.main(args.folder, parser, "tune", TUNE_JSON, write, BadTune)
