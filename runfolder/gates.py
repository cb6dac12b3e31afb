"""gates.xml (JUnit), written by `python -m report gate`: the lab reads back which gates failed and what each read."""
from __future__ import annotations

from pathlib import Path
from xml.etree import ElementTree

FILE = "gates.xml"


def failures(folder: Path) -> list[str] | None:
    """'NAME: what it read' of every failed gate; None when the folder has no readable gates.xml."""
    try:
        cases = ElementTree.parse(folder / FILE).getroot().iter("testcase")
    except (OSError, ElementTree.ParseError):
        return None
    return [f"{case.get('name')}: {failed.get('message')}" for case in cases for failed in case.findall("failure")]


def judged(folder: Path) -> list[str] | None:
    """The gates gates.xml judged (each testcase's name is the gate as written); None without a readable one."""
    try:
        return [case.get("name") for case in ElementTree.parse(folder / FILE).getroot().iter("testcase")]
    except (OSError, ElementTree.ParseError):
        return None
