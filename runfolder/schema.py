"""What each JSON file of the contract holds: its fields, their JSON types, which must be there and since which
format version. Small on purpose: the fields the lab and the report read back and rely on, not every field a
file carries (a file may hold more; a reader takes what it knows).

    problems("run.json", data)     -> ["status: 'done' is not one of complete, failed, interrupted, running", …]
    read(folder / "tune.json")     -> the content, or ContractError naming the file and what is wrong with it

A field added in version N is required only of files of version N or later: an old folder still reads.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from runfolder import FORMATS, version


class ContractError(ValueError):
    """A contract file that cannot be read as its contract says; the message names the file and the field."""


TYPES = {"str": str, "int": int, "number": (int, float), "bool": bool, "object": dict, "array": list,
         "null": type(None)}


@dataclass(frozen=True)
class Field:
    types: tuple[str, ...]           # JSON types (TYPES' names); a bool is never taken for a number
    since: int = 1                   # the format version that made it required
    choices: tuple[str, ...] = ()    # where a string is one of a few words
    required: bool = True            # False: checked where present (a series' verdict has no run status)


STATUS = ("complete", "failed", "interrupted", "running")
TEXT_OR_NONE = ("str", "null")

FIELDS: dict[str, dict[str, Field]] = {
    "run.json": {
        "format_version": Field(("int",), since=2),
        "run_id": Field(("str",)),
        "status": Field(("str",), choices=STATUS),
        "started": Field(TEXT_OR_NONE),
        "ended": Field(TEXT_OR_NONE),
        "error": Field(TEXT_OR_NONE),
        "load": Field(("object",)),
        "host": Field(("object",)),
        "provider": Field(TEXT_OR_NONE, required=False),     # known once the machines are (a failed up: none)
        "design": Field(("object",), since=2),
        "phases": Field(("object",), since=2),
        "command": Field(("array",), since=2),
    },
    "verdict.json": {
        "format_version": Field(("int",), since=2),
        "run_id": Field(("str",)),
        "status": Field(("str", "null"), required=False),    # a series' combined verdict has no run status
        "verdict": Field(TEXT_OR_NONE),
        "effects": Field(("object",)),
        "design": Field(("object",)),
    },
    "sweep.json": {
        "format_version": Field(("int",), since=2),
        "sweep_id": Field(("str",)),
        "status": Field(("str",), choices=STATUS),
        "started": Field(TEXT_OR_NONE),
        "ended": Field(TEXT_OR_NONE),
        "axes": Field(("array",)),
        "points": Field(("array",)),
    },
    "tune.json": {
        "format_version": Field(("int",), since=2),
        "tune_id": Field(("str",)),
        "status": Field(("str",), choices=STATUS),
        "started": Field(TEXT_OR_NONE),
        "ended": Field(TEXT_OR_NONE),
        "budget_s": Field(("number",)),
        "floor": Field(("number",)),
        "holds_s": Field(("array",)),
        "space": Field(("array",)),
        "objective": Field(("str",)),
        "constraints": Field(("array",)),
        "control": Field(("str",)),
        "trials": Field(("array",)),
        "results": Field(("array",)),
        "best": Field(("object", "null")),
        "confirmations": Field(("array",)),
    },
}
# an effect of verdict.json: what the lab's readers (runfolder.verdict) take from each
EFFECT = {"estimate": Field(("number", "null")), "low": Field(("number", "null")), "high": Field(("number", "null"))}


def _is(value, types: tuple[str, ...]) -> bool:
    if isinstance(value, bool):
        return "bool" in types
    return any(isinstance(value, TYPES[t]) for t in types)


def _against(data: dict, fields: dict[str, Field], have: int, where: str = "") -> list[str]:
    found = []
    for name, f in fields.items():
        if name not in data:
            if f.required and have >= f.since:
                found.append(f"{where}{name}: missing")
            continue
        value = data[name]
        if not _is(value, f.types):
            found.append(f"{where}{name}: {json.dumps(value)[:40]} is not {' or '.join(f.types)}")
        elif f.choices and isinstance(value, str) and value not in f.choices:
            found.append(f"{where}{name}: {value!r} is not one of {', '.join(f.choices)}")
    return found


def problems(name: str, data) -> list[str]:
    """What in `data` breaks the contract of file `name` (empty: nothing), judged by the data's own version."""
    if not isinstance(data, dict):
        return [f"not a JSON object ({type(data).__name__})"]
    have = version(data)
    if have > FORMATS[name]:
        return []            # a newer lab's file: its readers take what they know (runfolder's rule)
    found = _against(data, FIELDS[name], have)
    if name == "verdict.json" and isinstance(data.get("effects"), dict):
        for effect, record in data["effects"].items():
            if record is not None:      # None: an effect the data could not give (a series' p99 of no samples)
                found += ([f"effects.{effect}: not an object"] if not isinstance(record, dict)
                          else _against(record, EFFECT, have, f"effects.{effect}."))
    return found


def read(path: Path) -> dict:
    """A contract file's content, checked against its contract (the file's name says which); ContractError naming
    the file and every problem found."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as e:
        raise ContractError(f"{path}: cannot be read ({e.strerror or e})") from None
    except ValueError as e:
        raise ContractError(f"{path}: not JSON ({e})") from None
    found = problems(path.name, data)
    if found:
        raise ContractError(f"{path}: not a {path.name} this lab can read: {'; '.join(found)}")
    return data
