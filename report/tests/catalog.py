"""The knob catalog (ansible/knobs.yml, read as YAML: the report never imports the lab) and the snapshot of it the
lab writes into each run folder (knobs-catalog.json, read by report/read/knobs.py). Tests make the snapshot for the
run folders they build; the recorded fixture's was made with

    .venv/bin/python -m report.tests.catalog report/tests/fixtures/20261122T215957Z-fixture
"""
from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[2]
KNOBS_YML = REPO / "ansible" / "knobs.yml"
SOURCE = "ansible/knobs.yml"


def knobs(path: Path = KNOBS_YML) -> dict[str, dict[str, Any]]:
    """{knob: its catalog entry (default, type, unset, …)} of every group."""
    catalog = yaml.safe_load(path.read_text(encoding="utf-8"))
    return {name: entry for group in catalog.values() if isinstance(group, dict)
            for name, entry in (group.get("knobs") or {}).items()}


def snapshot(path: Path = KNOBS_YML) -> dict[str, Any]:
    """knobs-catalog.json: every knob's default, and what a null default means in the catalog's words."""
    entries = knobs(path)
    return {"source": SOURCE, "defaults": {name: entry.get("default") for name, entry in entries.items()},
            "unset": {name: str(entry["unset"]) for name, entry in entries.items() if entry.get("unset") is not None}}


def write_snapshot(run_folder: Path) -> Path:
    path = Path(run_folder) / "knobs-catalog.json"
    path.write_text(json.dumps(snapshot(), indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return path


if __name__ == "__main__":
    for folder in sys.argv[1:]:
        print(write_snapshot(Path(folder)))
