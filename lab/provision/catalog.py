"""The knob catalog (ansible/knobs.yml) read: every knob's spec (type, default, what, where it lands, its rules) by
tier, the out-of-the-box values, and a value typed for a knob (`--set [target:]knob=value`) parsed against it.
The file is read once while it stays as it was: a run resolves its configurations about twenty times."""
from __future__ import annotations

import copy
import datetime
import functools
import json
from dataclasses import dataclass
from pathlib import Path

import yaml

from lab import machines, paths

CATALOG = paths.ANSIBLE_DIR / "knobs.yml"


@dataclass(frozen=True)
class Section:
    tier: str
    about: str
    knobs: dict         # name -> spec

    @property
    def title(self) -> str:
        return f"{self.tier}: {self.about}" if self.about else self.tier


TYPES = ("int", "num", "bool", "str", "list", "dict")


def read_yaml(path: Path):
    """The file as YAML reads it, read once while it stays as it was (its inode, size and modification time); a
    copy each call, so a caller may change its own. OSError and yaml.YAMLError as reading raises them."""
    st = path.stat()
    return copy.deepcopy(_read(path, (st.st_ino, st.st_size, st.st_mtime_ns)))


@functools.lru_cache(maxsize=32)
def _read(path: Path, stamp: tuple):
    return yaml.safe_load(path.read_text())


def sections(text: str | None = None) -> list[Section]:
    """The catalog's tiers in order; ValueError naming the knob when an entry lacks what every knob says."""
    data = read_yaml(CATALOG) if text is None else yaml.safe_load(text)
    out = [Section(tier, body.get("about", ""), body.get("knobs") or {}) for tier, body in data.items()]
    for s in out:
        for name, spec in s.knobs.items():
            lacks = [k for k in ("type", "what", "lands") if k not in spec]
            lacks += [] if spec.get("inventory") or "default" in spec else ["default"]
            if lacks or spec["type"] not in TYPES:
                raise ValueError(f"ansible/knobs.yml: knob {name} " + (f"lacks {', '.join(lacks)}" if lacks else
                                 f"has type {spec['type']!r} (one of {', '.join(TYPES)})"))
    return out


def specs(text: str | None = None) -> dict[str, dict]:
    """Every knob, the inventory's too: name -> its spec."""
    return {name: spec for s in sections(text) for name, spec in s.knobs.items()}


def defaults(text: str | None = None) -> dict:
    """The out-of-the-box value of every knob that group_vars sets (not the inventory's)."""
    return {name: spec["default"] for name, spec in specs(text).items() if not spec.get("inventory")}


def parse_overrides(items: list[str], targets: tuple[str, ...] | list[str] = machines.NAMES,
                    prefixes: tuple[str, ...] | list[str] | None = None, what: str = "machine") -> dict[str, dict]:
    """`knob=value` (every target) or `target:knob=value` → {target: {knob: value}}. targets: the machines
    (`./start.sh provision`) or the knob sets a run uses; prefixes: what a prefix may name (default: targets;
    a run allows every knob set, and refuses one no machine runs later, with the reason); what: "machine" or
    "knob set", for the messages.

    Values are YAML (200 → int, true → bool, null → None, [a, b] → list), as in the catalog, and what JSON holds
    (Ansible gets them as JSON, run.json records them): parse_value().
    """
    catalog = specs()
    known = [name for name, spec in catalog.items() if not spec.get("inventory")]
    prefixes = list(targets) if prefixes is None else list(prefixes)
    out: dict[str, dict] = {name: {} for name in targets}
    for item in items:
        target, sep, assignment = item.partition(":") if ":" in item.split("=", 1)[0] else ("", "", item)
        knob, eq, raw = assignment.partition("=")
        knob = knob.strip()
        if not eq or not knob:
            raise ValueError(f"--set {item!r}: expected [{'|'.join(prefixes)}:]knob=value, "
                             "e.g. tuned:tomcat_threads_max=250")
        if target and target not in prefixes:
            raise ValueError(f"--set {item!r}: unknown {what} {target!r} ({what}s: {', '.join(prefixes)})")
        if knob not in known:
            close = [k for k in known if k.split("_")[0] == knob.split("_")[0]][:8]
            raise ValueError(f"--set {item!r}: unknown knob {knob!r}"
                             + (f" (knobs of that tier: {', '.join(close)})" if close else " (see ansible/knobs.yml)"))
        value = parse_value(f"--set {item!r}", catalog[knob], raw)
        for name in ([target] if target else targets):
            out.setdefault(name, {})[knob] = value
    return out


def parse_value(where: str, spec: dict, raw: str):
    """One knob value as typed (YAML), as JSON holds it; ValueError starting with `where` (e.g. "--set 'knob=v'").
    A date YAML reads (2024-01-01) is the text as typed for a knob of type str (to a time zone it is no date), and
    refused for any other, with how to quote it."""
    try:
        value = yaml.safe_load(raw) if raw.strip() else None
    except yaml.YAMLError as bad:
        raise ValueError(f"{where}: the value is not valid YAML: {bad}") from None
    odd = _not_json(value)
    if odd is not None and spec["type"] == "str":
        return raw.strip()
    if odd is not None:
        what, text = odd
        typed = text if isinstance(value, (dict, list)) else raw.strip()      # a part, or the value as typed
        raise ValueError(f"{where}: YAML reads {typed} as {what}, which no knob holds (a knob's value is text, a "
                         f"number, true/false, null, a list or a mapping): write it in quotes, {json.dumps(typed)}")
    return value


def _not_json(value) -> tuple[str, str] | None:
    """(what it is, its text) of the first part of a YAML value JSON cannot hold as it is (a date, a time, a set,
    binary data, .inf, .nan), or None when JSON holds it all."""
    if isinstance(value, dict):
        parts = [*value.keys(), *value.values()]
    elif isinstance(value, list):
        parts = value
    elif value is None or isinstance(value, (str, bool, int)):
        return None
    elif isinstance(value, float) and json.dumps(value) not in ("NaN", "Infinity", "-Infinity"):
        return None
    else:
        what = {datetime.datetime: "a date and time", datetime.date: "a date", float: "a number JSON cannot hold",
                set: "a set", bytes: "binary data"}.get(type(value), f"a {type(value).__name__}")
        return what, str(value) if not isinstance(value, float) else yaml.safe_dump(value).split("\n")[0]
    return next((odd for odd in map(_not_json, parts) if odd is not None), None)
