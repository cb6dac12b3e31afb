"""gates.xml (JUnit), written by `python -m report gate`: the lab reads back which gates failed and what each read."""
from __future__ import annotations

from pathlib import Path
from xml.etree import ElementTree

FILE = "gates.xml"


def _cases(folder: Path) -> list[ElementTree.Element] | None:
    """gates.xml's testcases (one a gate, named as the gate was written); None without a readable gates.xml."""
    try:
        return list(ElementTree.parse(folder / FILE).getroot().iter("testcase"))
    except (OSError, ElementTree.ParseError):
        return None


def failures(folder: Path) -> list[str] | None:
    """'NAME: what it read' of every failed gate; None when the folder has no readable gates.xml."""
    cases = _cases(folder)
    if cases is None:
        return None
    return [f"{case.get('name')}: {failed.get('message')}" for case in cases for failed in case.findall("failure")]


def judged(folder: Path) -> list[str] | None:
    """The gates gates.xml judged; None without a readable one."""
    cases = _cases(folder)
    return None if cases is None else [case.get("name") for case in cases]
