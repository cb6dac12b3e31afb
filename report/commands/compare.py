"""python -m report compare OUT_FOLDER RUN_FOLDER...: several runs side by side (OUT_FOLDER/compare.md and
compare.html); changes are against the first run named (report/render/compare.py)."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from report.errors import BadInput
from report.output import WriteFailed, write_files
from report.render.compare import render
from report.render.html import render_html
from report.stats.runs import load_runs


def write(out: str | Path, folders: list[str]) -> tuple[Path, Path]:
    out = Path(out)
    runs = load_runs(folders)
    text = render(out, runs)
    page = render_html(f"Camel Tuning Lab — {out.name}", text, [], {})
    write_files(out, {"compare.md": text, "compare.html": page})      # both or neither (report/output.py)
    return out / "compare.html", out / "compare.md"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("out", help="the comparison's folder, e.g. results/<stamp>-compare")
    parser.add_argument("runs", nargs="+", help="run folders (at least two), the first is the reference")


def main(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    if len(args.runs) < 2:
        raise BadInput("compare needs at least two run folders")
    bad = [r for r in args.runs if not (Path(r) / "run.json").is_file() and not (Path(r) / "default").is_dir()]
    if bad:
        raise BadInput(f"not run folders (no run.json, no default/): {', '.join(bad)}")
    try:
        html_path, md_path = write(args.out, args.runs)
    except WriteFailed as e:
        print(f"report: {e}", file=sys.stderr)
        return 1
    print(f"compare: {html_path}, {md_path}")
    return 0
