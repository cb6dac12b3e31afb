"""The JVMs' profiles of a run (<machine>/profile/<event>.collapsed: async-profiler's samples of the measured
window, one line per distinct stack and its count; profile/profile.json: what was asked, the engine, the window,
what converted) as frame trees. What they mean: report/explain/flame.py; drawn: report/render/flame.py."""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from report import MACHINES
from report.read.runinfo import RunInfo

EVENTS = {                  # event → (what a sample is, title)
    "cpu": ("CPU samples (on-CPU stacks)", "CPU"),
    "alloc": ("allocation samples (where the code allocates)", "allocations"),
    "lock": ("contended-lock samples (where threads waited for a monitor)", "lock contention"),
}


@dataclass
class Frame:
    name: str
    total: int = 0                                  # samples whose stack passes through this frame
    own: int = 0                                    # samples where it is the leaf (self)
    children: dict[str, Frame] = field(default_factory=dict)

    def child(self, name: str) -> Frame:
        node = self.children.get(name)
        if node is None:
            node = self.children[name] = Frame(name)
        return node

    def find(self, path: tuple[str, ...]) -> Frame | None:
        node: Frame | None = self
        for name in path:
            node = node.children.get(name)
            if node is None:
                return None
        return node


def read_collapsed(path: str | Path) -> Frame | None:
    """A collapsed profile ("frame;frame;… count" per line) → its root Frame ("all"), or None when the file
    is missing or holds no sample. Lines that are not a stack and a count are skipped."""
    root = Frame("all")
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f:
                stack, _, count = line.rstrip("\n").rpartition(" ")
                if not stack or not count.isdigit():
                    continue
                n = int(count)
                node = root
                node.total += n
                for name in stack.split(";"):
                    node = node.child(name)
                    node.total += n
                node.own += n
    except OSError:
        return None
    return root if root.total else None


def profile_share(collapsed_path: str | Path, frames: re.Pattern[str]) -> tuple[float, int] | None:
    """(share of the CPU samples whose stack holds a frame matching `frames`, samples) of a collapsed
    profile; None when there is none."""
    total = hit = 0
    try:
        with open(collapsed_path, encoding="utf-8", errors="replace") as f:
            for line in f:
                stack, _, count = line.rstrip("\n").rpartition(" ")
                if not count.isdigit():
                    continue
                total += int(count)
                hit += int(count) if frames.search(stack) else 0
    except OSError:
        return None
    return (hit / total, total) if total else None


def read_profile_info(machine_dir: Path) -> dict[str, Any]:
    """profile/profile.json (what was asked, the engine, the window, what converted), {} when absent."""
    try:
        return json.loads((machine_dir / "profile" / "profile.json").read_text())
    except (OSError, ValueError, TypeError):
        return {}


@dataclass
class Profiles:
    """What the run's profiles hold: {event: {machine: root Frame}} and {machine: profile.json}."""
    roots: dict[str, dict[str, Frame]]
    info: dict[str, dict[str, Any]]

    def events(self) -> list[str]:
        return [e for e in EVENTS if self.roots.get(e)]


def load_profiles(run: RunInfo) -> Profiles:
    roots: dict[str, dict[str, Frame]] = {}
    info = {}
    for name in MACHINES:
        folder = run.machine_dir(name)
        info[name] = read_profile_info(folder)
        for event in EVENTS:
            root = read_collapsed(folder / "profile" / f"{event}.collapsed")
            if root is not None:
                roots.setdefault(event, {})[name] = root
    return Profiles(roots, info)
