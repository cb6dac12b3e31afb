"""The verdict.json files of run folders (written by report/render/verdict.py): one folder's, and the newest A/A
run beside a run (its calibration line)."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

VERDICT_JSON = "verdict.json"


def read_record(folder: str | Path) -> dict[str, Any] | None:
    """A folder's verdict.json, or None when it has none or it cannot be read."""
    try:
        data = json.loads((Path(folder) / VERDICT_JSON).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def latest_calibration(folder: str | Path, run_id: str) -> dict[str, Any] | None:
    """verdict.json of the newest A/A run beside this one that is older than it, or None."""
    best = None
    for other in Path(folder).resolve().parent.iterdir():
        data = read_record(other) if other.name < str(run_id) else None
        if data is None:
            continue
        if data.get("design", {}).get("kind") == "aa" and data.get("effects", {}).get("tps"):
            if best is None or other.name > best["run_id"]:
                best = {"run_id": other.name, "tps": data["effects"]["tps"]}
    return best
