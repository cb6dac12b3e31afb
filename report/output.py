"""What the report puts on disk and on stderr, below the layers (like fmt.py): a document's files written all or
none, and warnings about the files it read and skipped.

A document is several files read together (summary.md, report.html and verdict.json): a reader must find either
all of them new or all of them old, never a new verdict beside an old report, nor a file cut short by a full disk.
So everything is rendered in memory first; write_files then writes each file to a temporary file beside its
target, flushed to disk, and only when every one is written renames them into place."""
from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path


class WriteFailed(Exception):
    """A document's files could not be written; the previous ones are untouched. str(): what and why."""


def warn(message: str) -> None:
    """A warning on stderr: something read was skipped or ignored, the report goes on."""
    print(f"report: warning: {message}", file=sys.stderr, flush=True)


def _fsync_folder(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass        # some filesystems cannot sync a folder; the renames are done all the same
    finally:
        os.close(fd)


def write_files(folder: str | Path, files: dict[str, str | bytes]) -> list[Path]:
    """Writes {name: content} into folder, all or none; returns the paths in the given order. Each content goes
    to a hidden temporary file in folder (same filesystem: the rename is atomic), written and fsync'd (a full
    disk fails here, not later); once all are written, they are renamed in the given order, so the last one
    named (verdict.json: what other reports and the console read first) appears last. Any failure before the
    renames removes the temporary files and raises WriteFailed naming the folder, the file and the cause."""
    folder = Path(folder)
    temps: list[tuple[Path, Path]] = []
    name = ""
    replaced: list[str] = []
    mask = os.umask(0)
    os.umask(mask)      # mkstemp makes 0600 files: give them the mode a plain write would
    try:
        folder.mkdir(parents=True, exist_ok=True)
        for name, content in files.items():
            data = content.encode("utf-8") if isinstance(content, str) else content
            fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{name}.", suffix=".tmp")
            temps.append((Path(tmp), folder / name))
            with os.fdopen(fd, "wb") as f:
                os.fchmod(f.fileno(), 0o666 & ~mask)
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
        for tmp, target in temps:
            name = target.name
            os.replace(tmp, target)
            replaced.append(name)
    except OSError as e:
        for tmp, _ in temps:
            try:
                tmp.unlink(missing_ok=True)
            except OSError:
                pass        # a folder gone read-only keeps it: a hidden .tmp, never read as a report
        kept = [n for n in files if n not in replaced]
        before = ("the files there before are unchanged" if not replaced else
                  f"already replaced: {', '.join(replaced)}; unchanged: {', '.join(kept)}")
        raise WriteFailed(f"cannot write {name or 'the report'} into {folder}: {e.strerror or e} ({before})") from e
    _fsync_folder(folder)
    return [folder / n for n in files]
