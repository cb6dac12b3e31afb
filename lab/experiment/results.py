"""The lab's commands over results/ that write nothing into run folders: compare (into a new folder), runs and
history (the report package's commands of the same names, report/history/)."""
from __future__ import annotations

from pathlib import Path

from lab import paths
from lab.errors import LabError
from lab.experiment import record, reporting


def compare_into(run_dirs: list[Path], out: Path | None) -> int:
    """The comparison in a new folder: out, or results/<stamp>-compare (another in the same second: -2, …)."""
    if out is not None and out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise ValueError(f"--out {out}: exists and is not an empty folder: name a new one")
    try:
        folder = out or record.make_run_dir("compare", paths.RESULTS)
    except PermissionError as denied:
        raise LabError(f"{denied.filename}: {denied.strerror}: results/ is not yours to write (runs made with sudo "
                       "leave it root's): put the comparison elsewhere with --out FOLDER") from None
    try:
        return reporting.compare(run_dirs, folder)
    except ValueError:              # bad run folders: the comparison's folder made for them goes again
        if out is None:
            folder.rmdir()
        raise


def _given(**options: str | None) -> list[str]:
    """[--flag, value, …] of the options given a value."""
    return [a for flag, value in options.items() if value for a in (f"--{flag}", value)]


def runs(label: str | None = None, since: str | None = None, service: str | None = None) -> int:
    """Every run folder, from the index of results/, as a table."""
    if not paths.RESULTS.is_dir():
        print(f"no runs yet: {paths.RESULTS} does not exist")
        return 0
    return reporting.report_command("runs", paths.RESULTS, *_given(label=label, since=since, service=service))


def history(label: str | None = None, since: str | None = None, service: str | None = None,
            ignore: str | None = None, also: str | None = None) -> int:
    """The histories of comparable runs in a new results/<stamp>-history folder (removed again when the report
    wrote nothing into it)."""
    if not paths.RESULTS.is_dir():
        print(f"no runs yet: {paths.RESULTS} does not exist")
        return 0
    out = record.make_run_dir("history", paths.RESULTS)
    code = reporting.report_command("history", paths.RESULTS, out,
                                    *_given(label=label, since=since, service=service, ignore=ignore, also=also))
    if code != 0 and not any(out.iterdir()):
        out.rmdir()
    return code
