"""The knob space a tune searches: for each knob a range, {low, high[, log: true][, step: N]} for a number or a list
of values (choices, true/false, null for the knob's "unset"), declared beside the knob in the catalog
(ansible/knobs.yml `tune:`, one place as every knob) or in a space file (YAML: knob: range), which may only narrow
what the knob takes. `parse()` refuses, naming the knob, a range the knob cannot take."""
from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import yaml

from lab.errors import BadInput


class SpaceError(BadInput):
    """A space the lab cannot search; the message names the knob and why."""


@dataclass(frozen=True)
class Param:
    knob: str
    kind: str                            # int, float or choice
    low: float | None = None
    high: float | None = None
    log: bool = False
    step: float | None = None
    choices: tuple = ()

    def suggest(self, trial):
        """The trial's value of this knob (optuna's suggest_*: TPE's proposal, inside the range by construction)."""
        if self.kind == "choice":
            return trial.suggest_categorical(self.knob, list(self.choices))
        if self.kind == "int":
            return trial.suggest_int(self.knob, int(self.low), int(self.high), step=int(self.step or 1), log=self.log)
        return trial.suggest_float(self.knob, self.low, self.high, step=self.step, log=self.log)

    def contains(self, value) -> bool:
        if self.kind == "choice":
            return value in self.choices
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not self.low <= value <= self.high:
            return False
        return self.kind == "float" or (value - self.low) % (self.step or 1) == 0

    def describe(self) -> str:
        if self.kind == "choice":
            return " | ".join("null" if c is None else str(c).lower() if isinstance(c, bool) else str(c)
                              for c in self.choices)
        return f"{self.low:g}–{self.high:g}" + (" (log)" if self.log else "") + (f" step {self.step:g}"
                                                                                 if self.step else "")


@dataclass(frozen=True)
class Space:
    params: tuple[Param, ...]

    @property
    def knobs(self) -> list[str]:
        return [p.knob for p in self.params]

    def suggest(self, trial) -> dict:
        return {p.knob: p.suggest(trial) for p in self.params}

    def contains(self, values: dict) -> bool:
        return set(values) == set(self.knobs) and all(p.contains(values[p.knob]) for p in self.params)


def _takes(knob: str, spec: dict, value) -> bool:
    """Whether the knob itself takes the value (its type, range, choices, also, unset)."""
    if value is None:
        return "unset" in spec
    if isinstance(value, (list, dict)):         # a space chooses among single values (a list is unhashable)
        return False
    if value in (spec.get("also") or {}):
        return True
    kind = spec["type"]
    if kind == "bool":
        return isinstance(value, bool)
    if kind in ("int", "num"):
        if (isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value)
                or (kind == "int" and value != int(value))):
            return False
        low, high = spec.get("range", (float("-inf"), float("inf")))
        return low <= value <= high
    choices = spec.get("choices")
    return kind == "str" and isinstance(value, str) and (not choices or value in choices)


def param(knob: str, raw, spec: dict | None) -> Param:
    """One knob's range, checked against what the knob takes."""
    if spec is None:
        raise SpaceError(f"{knob}: not a knob of ansible/knobs.yml")
    if isinstance(raw, list):
        if len(raw) < 2 or len(set(map(repr, raw))) != len(raw):
            raise SpaceError(f"{knob}: a list of at least two different values, got {raw!r}")
        bad = [v for v in raw if not _takes(knob, spec, v)]
        if bad:
            raise SpaceError(f"{knob}: {bad[0]!r} is not a value the knob takes")
        return Param(knob, "choice", choices=tuple(raw))
    if not isinstance(raw, dict) or not {"low", "high"} <= set(raw) or set(raw) - {"low", "high", "log", "step"}:
        raise SpaceError(f"{knob}: a range is {{low, high[, log: true][, step: N]}} or a list of values, got {raw!r}")
    if spec["type"] not in ("int", "num"):
        raise SpaceError(f"{knob}: a {spec['type']} knob takes a list of values, not a range")
    low, high, log, step = raw["low"], raw["high"], raw.get("log", False), raw.get("step")
    if not (_takes(knob, spec, low) and _takes(knob, spec, high)) or low >= high:
        raise SpaceError(f"{knob}: {low}–{high} is not a range of the knob's values ({spec.get('range')})")
    if log and (low <= 0 or step not in (None, 1)):
        raise SpaceError(f"{knob}: a log range needs low > 0 and no step")
    if step is not None and (not isinstance(step, (int, float)) or step <= 0 or (high - low) % step):
        raise SpaceError(f"{knob}: step {step!r} must divide {high} − {low}")
    return Param(knob, "int" if spec["type"] == "int" else "float", low, high, bool(log), step)


def parse(raw: dict, specs: dict[str, dict]) -> Space:
    if not isinstance(raw, dict) or not raw:
        raise SpaceError("a space is a mapping of knob: range, with at least one knob")
    return Space(tuple(param(knob, value, specs.get(knob)) for knob, value in raw.items()))


def from_catalog(specs: dict[str, dict]) -> Space:
    """The catalog's tuning-relevant knobs: those with a `tune:` range, in the catalog's order."""
    return parse({k: s["tune"] for k, s in specs.items() if "tune" in s}, specs)


def from_file(path: Path, specs: dict[str, dict]) -> Space:
    try:
        raw = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as e:
        raise SpaceError(f"{path}: cannot be read as YAML ({e})") from None
    try:
        return parse(raw, specs)
    except SpaceError as e:
        raise SpaceError(f"{path}: {e}") from None
