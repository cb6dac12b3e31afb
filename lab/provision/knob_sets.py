"""Named knob sets: ansible/knob_sets/<name>.yml, each only the knobs it changes from the catalog.

`default` is the catalog itself (ansible/knobs.yml, no file); `tuned` is the lab's tuning, the set the machine named
tuned runs unless told otherwise; `article-2018` the 2018 article's values. A run chooses the set of each side
(`--knob-set tuned=article-2018`). Ansible never reads these files: a machine gets its set's values only as the lab's
per-machine overrides (lab/experiment/design.py machine_overrides), handed over as data (as_data.py: a value that
holds a template stays text) and validated like any knob.
"""
from __future__ import annotations

from pathlib import Path

import yaml

from lab import paths
from lab.provision import catalog

DIR = paths.ROOT / "ansible" / "knob_sets"
DEFAULT = "default"                 # the catalog: no file


def names() -> list[str]:
    """Every set: default first, then the files' names in order."""
    return [DEFAULT, *sorted(p.stem for p in DIR.glob("*.yml"))]


def path(name: str) -> Path | None:
    return None if name == DEFAULT else DIR / f"{name}.yml"


BASE = "base"                       # a set's `base: NAME`: it is that set plus its own values


def values(name: str, known: dict | None = None) -> dict:
    """What the set changes from the catalog: {knob: value}, its base set's first (`base: tuned`: the lab's tuning
    moved to another line changes only what moves); ValueError for an unknown set or base, a base that leads back
    to the set, a file that is not a mapping, or a knob the catalog does not have (known: the catalog's knob names,
    checked when given)."""
    merged = {}
    for _, own in reversed(chain(name, known)):
        merged.update({k: v for k, v in own.items() if k != BASE})
    return merged


def chain(name: str, known: dict | None = None) -> list[tuple[str, dict]]:
    """(name, its file as written) of the set, then of its base set, and so on to the root, each read once;
    ValueError for a base that leads back to the set."""
    found, own = [], name
    while own is not None:
        if own in (seen := [n for n, _ in found]):
            raise ValueError(f"ansible/knob_sets/{name}.yml: its base sets lead back to {own} ({' → '.join(seen)})")
        found.append((own, _own(own, known)))
        own = found[-1][1].get(BASE)
    return found


def origin(name: str) -> str:
    """The set this one was made from, at the root of its `base:` chain (tuned-camel4 → tuned), or itself."""
    return chain(name)[-1][0]


def _own(name: str, known: dict | None = None) -> dict:
    """The set's own file as written (its base: included)."""
    if name not in names():
        raise ValueError(f"unknown knob set {name!r} (sets: {', '.join(names())}; files in ansible/knob_sets/)")
    file = path(name)
    if file is None:
        return {}
    try:
        data = catalog.read_yaml(file) or {}       # read once per process while the file stays as it was
    except yaml.YAMLError as bad:
        raise ValueError(f"ansible/knob_sets/{file.name}: not valid YAML: {bad}") from None
    if not isinstance(data, dict):
        raise ValueError(f"ansible/knob_sets/{file.name}: must be a mapping of knob: value")
    if BASE in data and data[BASE] not in names():
        raise ValueError(f"ansible/knob_sets/{file.name}: base {data[BASE]!r} is not a knob set ({', '.join(names())})")
    unknown = sorted(set(data) - set(known) - {BASE}) if known is not None else []
    if unknown:
        raise ValueError(f"ansible/knob_sets/{file.name} sets knobs the catalog does not have: {', '.join(unknown)}")
    return data


def about(name: str) -> str:
    """The set's first comment line, for listings."""
    file = path(name)
    if file is None:
        return "the catalog's values (ansible/knobs.yml): the out-of-the-box behaviour"
    for line in file.read_text().splitlines():
        if line.startswith("#"):
            return line.lstrip("# ").strip()
    return ""


def parse_choice(text: str, sides: tuple[str, ...]) -> tuple[str, str]:
    """`[SIDE=]SET` (side tuned when left out) → (side, set); ValueError naming what is wrong."""
    side, eq, name = text.partition("=")
    if not eq:
        side, name = sides[-1], text
    side, name = side.strip(), name.strip()
    if side not in sides:
        raise ValueError(f"--knob-set {text!r}: {side!r} is not a side (sides: {', '.join(sides)})")
    if name not in names():
        raise ValueError(f"--knob-set {text!r}: unknown knob set {name!r} (sets: {', '.join(names())}; "
                         "files in ansible/knob_sets/)")
    return side, name
