"""A tune's folder: its tune.json (written by the lab's tune command, lab/experiment/tune/command.py): the plan, every
trial of the study with its values, outcome and run folder, the finalist, its confirmations and its knob set."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from report.read.shape import NUMBER, ListOf, MapOf, read_checked

TUNE_JSON = "tune.json"
OUTCOME = {"ratio": NUMBER, "low": NUMBER, "high": NUMBER, "violations": ListOf(str), "run": str}
ROW = {"number": int, "state": str, "hold_s": NUMBER, "values": dict, "outcome": OUTCOME, "ended": str}
RATIO = {"estimate": NUMBER, "low": NUMBER, "high": NUMBER}
# what the report reads of tune.json, with the types it needs
SHAPE = {"tune_id": str, "status": str, "started": str, "ended": str, "budget_s": NUMBER, "spent_s": NUMBER,
         "holds_s": ListOf(NUMBER), "floor": NUMBER, "space": ListOf(dict), "load": dict, "service": str,
         "control": str, "name": str, "trials": ListOf(str), "results": ListOf(ROW), "best": ROW,
         "importance": MapOf(NUMBER), "finalist": {**ROW, "counted": bool},
         "confirmations": ListOf({"against": str, "series": str, "exit": int, "tps": RATIO, "p99": RATIO,
                                  "verdict": str}),
         "knob_set": str}
REQUIRED = ("tune_id", "status", "holds_s", "floor", "space", "results")


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
