"""What a run folder holds: run.json (tolerantly: any key may be missing, a key of the wrong type is named and
ignored) and its design. Which files a machine folder should have: report/read/integrity.py."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from report import MACHINES
from runfolder import schema
from runfolder.shape import check

# What the report reads of run.json and the type each field must have: the run folder's contract
RUN_JSON = schema.RUN


class RunInfo:
    def __init__(self, folder: str | Path) -> None:
        self.folder = Path(folder)
        self.problems: list[str] = []  # what could not be read, said in the report
        self.data: dict[str, Any] = {}
        path = self.folder / "run.json"
        if not path.exists():
            self.problems.append("run.json is missing")
            return
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except ValueError as e:     # JSON or UTF-8
            self.problems.append(f"run.json is not valid JSON ({e})")
            return
        except OSError as e:
            self.problems.append(f"run.json cannot be read ({e.strerror or e})")
            return
        # a field of another type is dropped and named (run.json is the lab's; an edited or damaged one happens)
        checked, found = check(data, RUN_JSON) if data is not None else (None, ["`(the whole file)` is null"])
        self.data = checked or {}
        self.problems += [f"run.json: {problem} (ignored)" for problem in found]

    def get(self, *keys: str, default: Any = None) -> Any:
        """Nested lookup, e.g. get('load', 'warmup_s'); default when any level is missing or null."""
        value: Any = self.data
        for key in keys:
            if not isinstance(value, dict) or value.get(key) is None:
                return default
            value = value[key]
        return value

    @property
    def run_id(self) -> str:
        return self.get("run_id", default=self.folder.resolve().name)

    @property
    def status(self) -> str:
        return self.get("status", default="unknown")

    @property
    def load(self) -> dict[str, Any]:
        """run.json's load profile. Also accepts the profile nested as load.profile (lab/load/runner.py's
        LoadResult.to_dict()), with load's own keys winning."""
        load = self.get("load", default={})
        if not isinstance(load, dict):
            return {}
        nested = load.get("profile") if isinstance(load.get("profile"), dict) else {}
        return {**nested, **{k: v for k, v in load.items() if k != "profile" and v is not None}}

    @property
    def cores(self) -> str | None:
        """'swapped' when the machines traded host cores half-way through the measured window (core_swap in
        run.json), 'fixed' when each kept its own (runs before the swap existed too), None on real hosts."""
        swap = self.get("core_swap", default={})
        if swap.get("mode") == "swap" and swap.get("swapped_at"):     # set only when the swap itself succeeded
            return "swapped"
        return None if self.get("provider") == "hosts" else "fixed"

    @property
    def warmup_s(self) -> float | None:
        return self.load.get("warmup_s")

    def machine_dir(self, machine: str) -> Path:
        return self.folder / machine

    def dashboards(self) -> dict[str, str]:
        """{machine: relative link} of JMeter's own HTML dashboards that exist."""
        links = {}
        for machine in MACHINES:
            index = self.folder / "jmeter-dashboard" / machine / "index.html"
            if index.exists():
                links[machine] = f"jmeter-dashboard/{machine}/index.html"
        return links


def design(run: RunInfo) -> dict[str, Any]:
    """run.json's design, with what an older run folder implies: an A/B run, each side on its own machine.

    Results are labelled by configuration: a run folder's default/ and tuned/ hold what ran the default and the
    tuned configuration, whichever machine that was (`machines` says which)."""
    d = run.get("design", default={})
    return {"kind": d.get("kind") or "ab",
            "configurations": {m: m for m in MACHINES} | (d.get("configurations") or {}),
            "machines": {m: m for m in MACHINES} | (d.get("machines") or {}),
            "trial": d.get("trial"), "trials": d.get("trials"), "series": d.get("series")}


def boxes(run: RunInfo) -> dict[str, str]:
    """side → the box it ran (its Debian suite: run.json boxes); {} on real hosts and in runs from before boxes
    were recorded (every one of them ran bookworm)."""
    found = run.get("boxes", default=None)
    if run.get("provider") == "hosts" or not isinstance(found, dict):
        return {}
    return {side: suite or "bookworm" for side, suite in found.items()}
