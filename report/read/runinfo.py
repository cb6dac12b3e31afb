"""What a run folder holds: run.json (tolerantly: any key may be missing), its design, and which expected files
are absent."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from report import MACHINES

# Files each machine folder should have; the report says which are missing instead of failing.
EXPECTED_FILES = ("jmeter.jtl", "pcp/metrics.csv", "logs/app.log", "logs/gc.log", "logs/httpd-error.log",
                  "logs/journal.txt")


class RunInfo:
    def __init__(self, folder: str | Path) -> None:
        self.folder = Path(folder)
        self.problems: list[str] = []  # what could not be read, said in the report
        self.data: dict[str, Any] = {}
        path = self.folder / "run.json"
        if not path.exists():
            self.problems.append("run.json is missing")
        else:
            try:
                data = json.loads(path.read_text(encoding="utf-8"))
                self.data = data if isinstance(data, dict) else {}
            except ValueError as e:
                self.problems.append(f"run.json is not valid JSON ({e})")

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
    def warmup_s(self) -> float | None:
        return self.load.get("warmup_s")

    def machine_dir(self, machine: str) -> Path:
        return self.folder / machine

    def missing_files(self) -> list[str]:
        """['default/logs/journal.txt', ...]: expected files absent from the folder (whole machine folders
        are named once)."""
        missing = []
        for machine in MACHINES:
            mdir = self.machine_dir(machine)
            if not mdir.is_dir():
                missing.append(f"{machine}/ (the whole machine folder)")
                continue
            missing += [f"{machine}/{name}" for name in EXPECTED_FILES if not (mdir / name).exists()]
        return missing

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
    d = run.get("design", default={}) or {}
    return {"kind": d.get("kind", "ab"),
            "configurations": d.get("configurations") or {m: m for m in MACHINES},
            "machines": d.get("machines") or {m: m for m in MACHINES},
            "trial": d.get("trial"), "trials": d.get("trials"), "series": d.get("series")}
