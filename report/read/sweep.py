"""A sweep's or an ablation's folder: its sweep.json (written by the lab's sweep runner) and each trial's
verdict.json (each trial is an ordinary run folder with its own report)."""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from report.read.records import read_record

SWEEP_JSON = "sweep.json"


@dataclass
class Trial:
    label: str
    about: str
    values: dict[str, Any]
    tier: str | None
    folder: Path | None
    exit_code: int | None
    record: dict[str, Any] | None

    def effect(self, figure: str) -> dict[str, Any]:
        return ((self.record or {}).get("effects") or {}).get(figure) or {}

    @property
    def reported(self) -> bool:
        return bool(self.effect("tps"))


def load(folder: str | Path) -> tuple[dict[str, Any], list[Trial]]:
    """(sweep.json, its trials in its order)."""
    folder = Path(folder)
    data = json.loads((folder / SWEEP_JSON).read_text(encoding="utf-8"))
    trials = []
    for p in data["points"]:
        run_dir = Path(p["run_dir"]) if p.get("run_dir") else None
        if run_dir is not None and not run_dir.is_absolute():
            run_dir = folder.parent / run_dir
        trials.append(Trial(p["label"], p["about"], p.get("values") or {}, p.get("tier"), run_dir,
                            p.get("exit_code"), read_record(run_dir) if run_dir else None))
    return data, trials
