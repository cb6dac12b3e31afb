"""What each JSON file of the contract holds: the shape of every field a reader relies on (runfolder/shape.py: its
JSON type, nested), the fields that must be there and since which format version, and the words a status may be.
The report reads with these shapes (tolerantly: a field of another type is named and ignored); the lab reads a
file it must go on with through read() (strictly); the tests hold every writer to problems() == [].

    problems("run.json", data)     -> ["`status` is a number, not a string", "`design` is missing", …]
    read(folder / "tune.json")     -> the content, or ContractError naming the file and what is wrong with it

A field required since version N is required only of files of version N or later: an old folder still reads.
"""
from __future__ import annotations

import json
from pathlib import Path

from runfolder import FORMATS, version
from runfolder.shape import NUMBER, ListOf, MapOf, check


class ContractError(ValueError):
    """A contract file that cannot be read as its contract says; the message names the file and the field."""


STATUS = ("complete", "failed", "interrupted", "running")

_LOAD = {"name": str, "model": str, "users": NUMBER, "ramp_up_s": NUMBER, "duration_s": NUMBER, "warmup_s": NUMBER,
         "rate_per_s": NUMBER, "step_s": NUMBER, "step_rates": ListOf(NUMBER), "p99_target_ms": NUMBER,
         "keep_alive": bool, "scheme": str, "mix": MapOf(NUMBER), "test_start_ms": NUMBER,
         "engines": ListOf({"name": str, "address": str, "runs_as": dict}),
         # who JMeter ran as (lab/unprivileged.py) and the user the kernel saw running it; read_all and why: runs
         # before JMeter was confined (it kept a capability to read past permissions), shown_through: since
         "runs_as": {"user": str, "uid": int, "read_all": bool, "why": str, "shown_through": ListOf(str)},
         "jmeter_uid": int}
# the keys: lab/experiment/record.py and docs/ARCHITECTURE.md (run.json)
RUN = {
    "format_version": int, "run_id": str, "label": str, "command": ListOf(str), "status": str, "phase": str,
    "stopped_at": str, "started": str, "ended": str, "error": str, "incomplete": ListOf(str), "phases": MapOf(NUMBER),
    "git_commit": str, "provider": str, "accelerator": str, "inventory": str,
    "design": {"kind": str, "configurations": MapOf(str), "machines": MapOf(str), "trial": int, "trials": int,
               "series": str},
    "load": {**_LOAD, "profile": _LOAD},
    "host": {"cpus": NUMBER, "memory_mb": NUMBER},
    "finish_errors": MapOf(str), "collect_errors": MapOf((str, list)), "loadgen_problems": MapOf(str),
    "liveness": MapOf({"probes": int, "failed": int, "dead_at": NUMBER, "back_at": NUMBER, "deaths": int}),
    "jit_watch": MapOf({"readings": int, "compiling_s": NUMBER}),     # --until-settled (lab/experiment/jit_watch.py)
    "dashboards": str,      # why JMeter's dashboards were not made (lab/experiment/finish.py DEFERRED)
    "service_starts": {"spread_s": NUMBER},
    "core_swap": {"mode": str, "why": str, "at_s": NUMBER, "after_s": NUMBER, "swapped_at": NUMBER, "error": str},
    "load_generator": dict, "knob_diff": dict,
    "host_outside": {"seconds": NUMBER, "host_cpus": NUMBER, "outside_cpu_pct": NUMBER, "kernel_cpu_pct": NUMBER,
                     "lab_cpu_pct": NUMBER, "heaviest": ListOf({"pid": int, "command": str, "cpu_pct": NUMBER}),
                     "warn": bool, "threshold_pct": NUMBER, "why": str},
    "machines": MapOf({"knobs": dict, "versions": dict}),
}
EFFECT = {"kind": str, "default": NUMBER, "tuned": NUMBER, "estimate": NUMBER, "low": NUMBER, "high": NUMBER,
          "detectable": bool, "why_not": str, "intervals": str, "min_detectable": NUMBER, "df": NUMBER,
          "tuned_ci": {"low": NUMBER, "high": NUMBER}}
VERDICT = {"format_version": int, "run_id": str, "status": str, "verdict": str, "design": {"kind": str},
           "effects": MapOf(EFFECT)}
SWEEP = {"format_version": int, "kind": str, "sweep_id": str, "status": str, "configuration": str,
         "warmup_s": NUMBER, "load": dict, "rule": {"max_error_pct": NUMBER, "best": str},
         "points": ListOf({"label": str, "about": str, "values": dict, "tier": str, "run_dir": str, "exit_code": int})}
_OUTCOME = {"ratio": NUMBER, "low": NUMBER, "high": NUMBER, "violations": ListOf(str), "run": str, "settled": bool,
            "steady_from_s": NUMBER, "swapped": bool, "calibrated": bool, "df": NUMBER, "tau": NUMBER}
_ROW = {"number": int, "state": str, "hold_s": NUMBER, "values": dict, "outcome": _OUTCOME, "ended": str,
        "replicate_of": int, "known": str, "past": bool}
_CANDIDATE = {"number": int, "values": dict, "runs": ListOf(int), "orientations": int, "settled": bool,
              "feasible": bool, "counts": bool, "ratio": NUMBER, "low": NUMBER, "high": NUMBER, "known": str}
_RATIO = {"estimate": NUMBER, "low": NUMBER, "high": NUMBER}
TUNE = {"format_version": int, "tune_id": str, "status": str, "started": str, "ended": str, "error": str,
        "budget_s": NUMBER, "spent_s": NUMBER, "holds_s": ListOf(NUMBER), "floor": NUMBER, "space": ListOf(dict),
        "load": dict, "service": str, "objective": str, "constraints": ListOf(str), "control": str, "name": str,
        "base": str, "known": ListOf(str), "between": NUMBER, "cold": bool, "around": str, "race": bool,
        "aa_runs": int, "spread": {"tau": NUMBER, "source": str, "aa_block": str, "tried": bool},
        "trials": ListOf(str), "results": ListOf(_ROW), "candidates": ListOf(_CANDIDATE), "best": _CANDIDATE,
        "importance": MapOf(NUMBER), "finalist": {**_CANDIDATE, "counted": bool}, "no_finalist": str,
        "confirmations": ListOf({"against": str, "series": str, "exit": int, "tps": _RATIO, "p99": _RATIO,
                                 "verdict": str, "looks": ListOf(str), "combined": str, "look": int,
                                 "level": NUMBER, "at_look": {"low": NUMBER, "high": NUMBER}, "decision": str,
                                 "planned": int,
                                 "objective": str, "settled": {"trials": int, "settled": int,
                                                                "unsettled": int}}),
        "knob_set": str}

SHAPES = {"run.json": RUN, "verdict.json": VERDICT, "sweep.json": SWEEP, "tune.json": TUNE}
# field → the format version since which it must be there (not null); a run that failed before its machines were
# known has no provider, a series' verdict no status of its own, a running one no end: those are not required
REQUIRED: dict[str, dict[str, int]] = {
    "run.json": {"run_id": 1, "status": 1, "started": 1, "load": 1, "host": 1,
                 "format_version": 2, "design": 2, "phases": 2, "command": 2},
    "verdict.json": {"run_id": 1, "design": 1, "effects": 1, "format_version": 2},
    "sweep.json": {"kind": 1, "sweep_id": 1, "status": 1, "configuration": 1, "points": 1, "format_version": 2},
    "tune.json": {"tune_id": 1, "status": 1, "holds_s": 1, "floor": 1, "space": 1, "results": 1,
                  "format_version": 2, "budget_s": 2, "trials": 2, "confirmations": 2, "base": 3, "between": 3,
                  "candidates": 3},
}
# files whose `status` is a run's (a series' verdict has none; a run's verdict repeats its run's)
STATUS_OF = ("run.json", "verdict.json", "sweep.json", "tune.json")


def required(name: str, of_version: int = 1) -> tuple[str, ...]:
    """The fields a file `name` of that format version must hold."""
    return tuple(field for field, since in REQUIRED[name].items() if of_version >= since)


def problems(name: str, data) -> list[str]:
    """What in `data` breaks the contract of file `name` (empty: nothing), judged by the data's own version."""
    if not isinstance(data, dict):
        return ["`(the whole file)` is not an object"]
    have = version(data)
    if have > FORMATS[name]:
        return []            # a newer lab's file: its readers take what they know (runfolder's rule)
    _, found = check(data, SHAPES[name])        # a field of another type is named there: not missing as well
    found += [f"`{field}` is missing" for field in required(name, have) if data.get(field) is None]
    status = data.get("status")
    if name in STATUS_OF and isinstance(status, str) and status not in STATUS:
        found.append(f"`status` is {status!r}, not one of {', '.join(STATUS)}")
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
