"""verdict.json, as the lab reads it back (the tuner's outcomes and confirmations, the console's verdict line): the
sentence and each effect's estimate with its 95 % interval. The report writes it (report/render/verdict.py)."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from runfolder import read_json, version

FILE = "verdict.json"


@dataclass(frozen=True)
class Effect:
    """A tuned-vs-default effect: a ratio (tps, p99, …) or a difference (error_pct, in points), with its interval."""
    estimate: float | None
    low: float | None = None
    high: float | None = None


@dataclass(frozen=True)
class Verdict:
    sentence: str | None                      # "tuned: +42 % successful TPS (95 % CI +30 … +55 %)."
    effects: dict = field(default_factory=dict)    # name → the effect's record as written
    format_version: int = 1
    written: dict = field(default_factory=dict, repr=False)     # the whole file as read (a series' trials, …)

    def effect(self, name: str) -> Effect | None:
        """The effect of that name with its estimate, or None where the verdict has none."""
        e = self.effects.get(name)
        if not isinstance(e, dict) or not isinstance(e.get("estimate"), (int, float)):
            return None
        return Effect(e["estimate"], e.get("low"), e.get("high"))


def read(folder: Path) -> Verdict | None:
    """The folder's verdict; None when it has none or it cannot be read."""
    data = read_json(folder / FILE)
    if data is None:
        return None
    effects = data.get("effects") if isinstance(data.get("effects"), dict) else {}
    sentence = data.get("verdict") if isinstance(data.get("verdict"), str) else None
    return Verdict(sentence, effects, version(data), data)
