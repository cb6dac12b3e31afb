"""A tune's folder: its tune.json (written by the lab's tune command, lab/experiment/tune/command.py): the plan, every
trial of the study with its values, outcome and run folder, the finalist, its confirmations and its knob set."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from runfolder import schema
from runfolder.shape import read_checked

TUNE_JSON = "tune.json"
# what the report reads of tune.json, with the types it needs: the run folder's contract
SHAPE = schema.TUNE
REQUIRED = schema.required("tune.json")


class BadTune(ValueError):
    """tune.json cannot be read or lacks what the report needs; str(): the file and the fields."""


def load(folder: str | Path) -> dict[str, Any]:
    """tune.json, checked: BadTune naming the file and the field when it cannot be read or lacks what the report
    needs."""
    path = Path(folder) / TUNE_JSON
    data, problems = read_checked(path, SHAPE, REQUIRED, BadTune)
    if problems:
        raise BadTune(f"{path}: {'; '.join(problems)}")
    return data
