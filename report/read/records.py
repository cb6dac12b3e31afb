"""The verdict.json files of run folders (written by report/render/verdict.py): one folder's, and the newest A/A
run beside a run (its calibration line). A verdict.json that cannot be read, or whose fields the readers use
have another type, is named on stderr (file, field) and skipped: one damaged folder never stops the report of
another."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from report.output import warn
from report.read.shape import MapOf, check

VERDICT_JSON = "verdict.json"
NUMBER = (int, float)
_EFFECT = {"kind": str, "default": NUMBER, "tuned": NUMBER, "estimate": NUMBER, "low": NUMBER, "high": NUMBER,
           "detectable": bool, "why_not": str}
# what readers of a verdict.json use (calibration, compare, sweep), with the types they need
VERDICT = {"run_id": str, "status": str, "verdict": str, "design": {"kind": str}, "effects": MapOf(_EFFECT)}


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


def latest_calibration(folder: str | Path, run_id: str) -> dict[str, Any] | None:
    """verdict.json of the newest A/A run beside this one that is older than it, or None. Siblings whose
    verdict.json is damaged are named on stderr and passed over."""
    best = None
    try:
        siblings = sorted(Path(folder).resolve().parent.iterdir())
    except OSError as e:
        warn(f"{Path(folder).resolve().parent}: cannot list it ({e.strerror or e}): no A/A calibration looked up")
        return None
    for other in siblings:
        if other.name >= str(run_id) or not other.is_dir():
            continue
        data = read_record(other)
        if data is None:
            continue
        design, tps = data.get("design") or {}, (data.get("effects") or {}).get("tps")
        if design.get("kind") == "aa" and tps:
            if best is None or other.name > best["run_id"]:
                best = {"run_id": other.name, "tps": tps}
    return best
