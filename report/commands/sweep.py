"""python -m report sweep SWEEP_FOLDER: a sweep's or an ablation's report (SWEEP_FOLDER/sweep.md and sweep.html)
from its sweep.json and each trial's verdict.json (each trial is an ordinary run folder with its own report)."""
from __future__ import annotations

import argparse
from pathlib import Path

from report.read.sweep import SWEEP_JSON, load
from report.render.html import render_html
from report.render.sweep import chart, render


def write(folder: str | Path) -> tuple[Path, Path]:
    folder = Path(folder)
    data, trials = load(folder)
    text = render(data, trials)
    (folder / "sweep.md").write_text(text, encoding="utf-8")
    figure = chart(data, trials)
    html = render_html(f"Camel Tuning Lab — {folder.name}", text, [figure] if figure else [], {},
                       charts_title="Chart")
    (folder / "sweep.html").write_text(html, encoding="utf-8")
    return folder / "sweep.html", folder / "sweep.md"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("folder", help="the sweep's folder (holds sweep.json)")


def main(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    if not (Path(args.folder) / SWEEP_JSON).is_file():
        parser.error(f"{args.folder} is not a sweep folder (no sweep.json)")
    html_path, md_path = write(args.folder)
    print(f"sweep: {html_path}, {md_path}")
    return 0
