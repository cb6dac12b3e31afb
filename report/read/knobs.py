"""A machine's knobs, and the run's snapshot of the knob catalog: where every knob value the report uses comes from.

First the machine's own values: <machine>/config/knobs.json (what Ansible provisioned), else run.json's
machines.<name>.knobs. A knob they do not set (absent, or null: left to the software) comes from the run's
catalog snapshot, <run folder>/knobs-catalog.json, which the lab writes from ansible/knobs.yml at each run:

    {"source": "ansible/knobs.yml", "defaults": {"<knob>": <default>, ...},
     "unset": {"<knob>": "<what null means, in the catalog's words>", ...}}

("unset" is optional: a knob whose default is null, e.g. httpd_max_request_workers, takes the software's own value,
which the catalog states in words; a plain number there, "150", is used.) The report holds no default of its own:
a knob that neither the machine nor the snapshot gives is unknown, and whatever needs it says so.
"""
from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from report.read.runinfo import RunInfo

CATALOG_FILE = "knobs-catalog.json"
NUMBER = re.compile(r"-?\d+(?:\.\d+)?")


@dataclass(frozen=True)
class Catalog:
    """A run's snapshot of the knob catalog."""
    source: str
    defaults: dict[str, Any]
    unset: dict[str, str]


def read_catalog(run_folder: str | Path) -> Catalog | None:
    """The run folder's knobs-catalog.json; None when it has none (a run from before it) or it is unreadable."""
    try:
        data = json.loads((Path(run_folder) / CATALOG_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or not isinstance(data.get("defaults"), dict):
        return None
    unset = data.get("unset") if isinstance(data.get("unset"), dict) else {}
    return Catalog(str(data.get("source") or CATALOG_FILE), data["defaults"],
                   {k: str(v) for k, v in unset.items() if v is not None})


@dataclass(frozen=True)
class Knob:
    name: str
    value: Any      # None: unknown
    source: str     # "knob NAME" (the machine's own), "default: NAME unset" (the catalog's), or "unknown: why"

    @property
    def known(self) -> bool:
        return self.value is not None

    def number(self) -> float:
        """The value as a number; nan when unknown or not a number."""
        if self.value is None or isinstance(self.value, bool):
            return math.nan
        try:
            return float(self.value)
        except (TypeError, ValueError):
            return math.nan


class Knobs:
    """One machine's knobs (its own values, then the run's catalog snapshot)."""

    def __init__(self, own: dict[str, Any] | None = None, catalog: Catalog | None = None) -> None:
        self.own = own or {}
        self.catalog = catalog

    def knob(self, name: str) -> Knob:
        value = self.own.get(name)
        if value is not None:
            return Knob(name, value, f"knob {name}")
        if self.catalog is None:
            return Knob(name, None, f"unknown: {name} unset and the run folder has no {CATALOG_FILE}")
        if name not in self.catalog.defaults:
            return Knob(name, None, f"unknown: {name} unset and not in {CATALOG_FILE}")
        default = self.catalog.defaults[name]
        if default is not None and name not in self.own:
            return Knob(name, default, f"default: {name} unset")
        meaning = self.catalog.unset.get(name, "").strip()
        if NUMBER.fullmatch(meaning):
            return Knob(name, float(meaning) if "." in meaning else int(meaning), f"default: {name} unset")
        return Knob(name, None, f"unknown: {name} unset" + (f" ({meaning})" if meaning else ""))

    def value(self, name: str) -> Any:
        """The knob's value, None when unknown."""
        return self.knob(name).value

    def number(self, name: str) -> tuple[float, str]:
        """(value, where it comes from); the value nan when unknown."""
        knob = self.knob(name)
        return knob.number(), knob.source


def _own_file(machine_dir: Path | None) -> dict[str, Any] | None:
    if machine_dir is None:
        return None
    try:
        knobs = json.loads((machine_dir / "config" / "knobs.json").read_text())
    except (OSError, ValueError, TypeError):
        return None
    return knobs if isinstance(knobs, dict) else None


def machine_knobs(machine_dir: Path | None, name: str | None = None, run: RunInfo | None = None) -> Knobs:
    """The knobs of the machine folder `machine_dir` (<run folder>/<name>): config/knobs.json, else run.json's
    machines.<name>.knobs; the run's catalog snapshot behind them. run: the run, when already read (else the
    machine folder's parent)."""
    own = _own_file(machine_dir)
    folder = run.folder if run is not None else machine_dir.parent if machine_dir is not None else None
    if own is None:
        if run is None and folder is not None:
            run = RunInfo(folder)
        name = name or (machine_dir.name if machine_dir is not None else "")
        own = (run.get("machines", name, "knobs", default={}) if run is not None else {}) or {}
    return Knobs(own if isinstance(own, dict) else {}, read_catalog(folder) if folder is not None else None)


class MachineRef(Protocol):
    name: str
    folder: Path | None


def read_knobs(machine: MachineRef, run: RunInfo | None = None) -> Knobs:
    """A loaded machine's knobs (see machine_knobs)."""
    return machine_knobs(machine.folder, machine.name, run)
