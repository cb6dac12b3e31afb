"""The verdict.json files of run folders (written by report/render/verdict.py), as compare, sweep and the A/A
calibration of a run's intervals (report/read/calibrations.py) read them. A verdict.json that cannot be read, or
whose fields the readers use have another type, is named on stderr (file, field) and skipped: one damaged folder
never stops the report of another."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from report.output import warn
from runfolder import schema
from runfolder.shape import check

VERDICT_JSON = "verdict.json"
# what readers of a verdict.json use (calibration, compare, sweep), with the types they need: the contract's
VERDICT = schema.VERDICT


def read_record(folder: str | Path) -> dict[str, Any] | None:
    """A folder's verdict.json, or None when it has none; None with a warning naming the file and the field
    when it cannot be read or a field has another type."""
    path = Path(folder) / VERDICT_JSON
    if not path.exists():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except ValueError as e:     # cut short, not JSON, not UTF-8
        warn(f"{path}: not valid JSON ({e}): skipped")
        return None
    except OSError as e:
        warn(f"{path}: cannot be read ({e.strerror or e}): skipped")
        return None
    if not isinstance(data, dict):
        warn(f"{path}: holds {type(data).__name__}, not an object: skipped")
        return None
    _, problems = check(data, VERDICT)
    # a present field that is null where the report writes an object is as unusable as a wrong type
    problems += [f"`{key}` is null, not an object" for key in ("design", "effects") if key in data
                 and data[key] is None]
    if problems:
        warn(f"{path}: {'; '.join(problems)}: skipped")
        return None
    return data
