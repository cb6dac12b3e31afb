"""What the commands that write one folder's document share (sweep, tune): the folder checked by the file that
makes it one, the document written as STEM.md and STEM.html (both files or neither), the outcome said."""
from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

from report.errors import BadInput
from report.output import WriteFailed, write_files
from report.render.html import Figure, render_html


def write(folder: Path, stem: str, text: str, figure: tuple[Figure, bytes] | None) -> tuple[Path, Path]:
    """The document's markdown and its page (the markdown with its one chart, if any); (html path, md path)."""
    html = render_html(f"Camel Tuning Lab — {folder.name}", text, [figure] if figure else [], {},
                       charts_title="Chart")
    write_files(folder, {f"{stem}.md": text, f"{stem}.html": html})
    return folder / f"{stem}.html", folder / f"{stem}.md"


def main(folder: str, parser: argparse.ArgumentParser, kind: str, marker: str,
         write: Callable[[str], tuple[Path, Path]], bad: type[Exception]) -> int:
    """`kind` names the folder in messages; marker: the file it must hold; bad: the error of a damaged marker (its
    message names the file and the field; nothing is written)."""
    if not (Path(folder) / marker).is_file():
        raise BadInput(f"{folder} is not a {kind} folder (no {marker})")
    try:
        html_path, md_path = write(folder)
    except bad as e:
        raise BadInput(str(e)) from None
    except WriteFailed as e:
        print(f"report: {e}", file=sys.stderr)
        return 1
    print(f"{kind}: {html_path}, {md_path}")
    return 0
