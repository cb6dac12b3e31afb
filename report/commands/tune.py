"""python -m report tune TUNE_FOLDER: a tune's report (TUNE_FOLDER/tune.md and tune.html) from its tune.json (each
trial is an ordinary run folder with its own report)."""
from __future__ import annotations

import argparse
from pathlib import Path

from report.commands import folder_document
from report.read.tune import TUNE_JSON, BadTune, load
from report.render.tune import chart, render


def write(folder: str | Path) -> tuple[Path, Path]:
    folder = Path(folder)
    data = load(folder)
    return folder_document.write(folder, "tune", render(data), chart(data))


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("folder", help="the tune's folder (holds tune.json)")


def main(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    return folder_document.main(args.folder, parser, "tune", TUNE_JSON, write, BadTune)
