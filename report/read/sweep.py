"""A sweep's or an ablation's folder: its sweep.json (written by the lab's sweep runner) and each trial's
verdict.json (each trial is an ordinary run folder with its own report)."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from report.read.records import read_record
from runfolder import schema
from runfolder.shape import read_checked

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


# what the report reads of sweep.json (lab/experiment/sweep.py writes it), with the types it needs: the contract's
SHAPE = schema.SWEEP


class BadSweep(ValueError):
    """sweep.json cannot be read or lacks what the report needs; str(): the file and the fields."""


REQUIRED = schema.required("sweep.json")
POINT_REQUIRED = ("label", "about")


def load(folder: str | Path) -> tuple[dict[str, Any], list[Trial]]:
    """(sweep.json, its trials in its order). BadSweep naming the file and the field when sweep.json cannot be
    read or lacks what the report needs; a trial's damaged verdict.json is named on stderr and that trial has
    no verdict (report/read/records.py)."""
    folder = Path(folder)
    path = folder / SWEEP_JSON
    data, problems = read_checked(path, SHAPE, REQUIRED, BadSweep)
    if data is not None:
        problems += [f"`points[{i}].{k}` is missing" for i, p in enumerate(data.get("points") or [])
                     for k in POINT_REQUIRED if p.get(k) is None]
    if problems:
        raise BadSweep(f"{path}: {'; '.join(problems)}")
    trials = []
    for p in data["points"]:
        run_dir = Path(p["run_dir"]) if p.get("run_dir") else None
        if run_dir is not None and not run_dir.is_absolute():
            run_dir = folder.parent / run_dir
        trials.append(Trial(p["label"], p["about"], p.get("values") or {}, p.get("tier"), run_dir,
                            p.get("exit_code"), read_record(run_dir) if run_dir else None))
    return data, trials
