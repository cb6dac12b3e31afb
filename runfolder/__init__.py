"""The run folder's contract: the files the lab writes and the report reads (run.json, sweep.json, tune.json), and
those the report writes and the lab reads back (verdict.json, gates.xml, summary.md's first table), each JSON file
with a format version. Both sides read and write them through here; this package imports neither lab/ nor report/.

A file written before its `format_version` field is version 1 and is read as it is. A file of a newer version than
this checkout knows is read too (its readers take what they know), and version() says so.
"""
from __future__ import annotations

import json
from pathlib import Path

SIDES = ("default", "tuned")     # a run folder's halves, each a machine's (lab.machines.NAMES, report.MACHINES)

FORMATS = {"run.json": 2, "verdict.json": 6, "sweep.json": 2, "tune.json": 9}

# What each version of a file changed, newest last (pyperf keeps such a history for its JSON).
HISTORY = {
    "run.json": {1: "every field the lab wrote before format_version (docs/ARCHITECTURE.md, The run folder)",
                 2: "format_version"},
    "verdict.json": {1: "verdict, effects {name: estimate, low, high, …}, levels, intervals as report/README.md says",
                     2: "format_version",
                     3: "per effect: intervals (within-run | calibrated (A/A runs …) | random-effects (k trials)), "
                        "min_detectable (80 % power), tuned_ci (the tuned level's interval, what level gates judge); "
                        "a series': tuned, tuned_ci and calibration; method.level_block_windows (issue 52)",
                     4: "a series' effects: df (a single run's had it already): the tuner's confirmation re-levels "
                        "the interval at each look (lab/experiment/tune/sequential.py)",
                     5: "steady per machine: compiling_cpu (the JIT's CPUs on average over the window) and "
                        "still_compiling (at least report/stats/steady.STILL_COMPILING_CPU): a tune's proof needs "
                        "none",
                     6: "steady per machine: jit_quiet_s (where its JIT went quiet: the steady state starts no "
                        "earlier; null where the JIT was not recorded) and jit_never_quiet (not settled because the "
                        "JIT went quiet too late or never)"},
    "sweep.json": {1: "the plan, each trial's values, folder and exit code", 2: "format_version"},
    "tune.json": {1: "the plan, every trial, the finalist and its confirmations", 2: "format_version",
                  3: "one hold (holds_s [hold]) and no successive halving; base, known, between; each run's outcome "
                     "with settled, steady_from_s, swapped, calibrated; replicate_of and known per run; candidates "
                     "(each candidate's runs combined); best and finalist are candidates (issue 54)",
                  4: "each run's past (a past run of the same question that warmed the study) and the plan's cold; "
                     "the space's unset (its define-by-run at_most, at_least and when were written since a707744)",
                  5: "each confirmation's looks (its blocks' series), combined (the folder over all its trials), look, "
                     "objective, level, at_look (the objective's interval at the look's level) and decision "
                     "(sequential.py); the plan's around (--around, region.py)",
                  6: "each confirmation's settled (its trials: how many had both machines at steady state, how many "
                     "not): the answer is confirmed only with none still warming up (confirm.proven)",
                  7: "confirm_against (the controls the finalist is confirmed against) and itself ({control: why "
                     "not}: the tuned set where the finalist is its configuration, confirm.itself); until_settled_s "
                     "(--until-settled: every run's hold a cap, lab/experiment/load/settle.py)",
                  8: "no_finalist (why a tune has no finalist: none ran within its constraints, or every one that "
                     "did was shown worse than the control, confirm.nothing_to_confirm)",
                  9: "race (search runs raced, tune/race.py), aa_runs and spread (τ assumed or measured, the A/A "
                     "block: tune/aa.py); each confirmation's planned (the looks its spending was planned for, from "
                     "the budget: confirm.planned_looks)"},
}


def version(data: dict) -> int:
    """The format version of a file's content (1: written before the field)."""
    found = data.get("format_version")
    return found if isinstance(found, int) and found >= 1 else 1


def stamped(name: str, data: dict) -> dict:
    """data with the current format version of file `name` first."""
    return {"format_version": FORMATS[name], **{k: v for k, v in data.items() if k != "format_version"}}


def read_json(path: Path) -> dict | None:
    """A contract file's content: None when it is missing, unreadable or not a JSON object."""
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None
