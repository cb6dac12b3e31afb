"""A user's own JMeter plan (a service descriptor's load.plan, checked by plan_check.py) made into the lab's two-sided
plan: the same load on both machines at once from one JMeter, each side's samples in its own JTL, as the lab's own
plan does (jmeter/plan.jmx).

The user's plan reads its target from the properties `host`, `port` and `scheme`. Each of its thread groups is
copied once per side, and in each copy (and in a copy of every element outside the thread groups that reads the
target, such as HTTP Request Defaults, moved into the copies) `__P(host` becomes `__P(default_host` or
`__P(tuned_host` — the properties the lab gives each machine (profile.target_properties). Each copy gets the lab's
JTL writer for its side (taken from jmeter/plan.jmx, so the columns are the same); the user's own listeners outside
the thread groups are disabled (the lab writes the results). Everything else — samplers, timers, assertions,
extractors, the plan's variables — is the user's, unchanged. A plan that runs its thread groups one after the other
(serialize_threadgroups) is refused: its sides would not load the machines at the same time.
"""
from __future__ import annotations

import copy
import re
import xml.etree.ElementTree as ET
from pathlib import Path

from lab.experiment.load.jmeter import PLAN
from lab.experiment.load.plan_check import PlanError
from lab.experiment.load.profile import MACHINES

TARGET = re.compile(r"__P\(\s*(host|port|scheme)\b")
LISTENERS = ("ResultCollector", "BackendListener", "Summariser")


def _pairs(tree: ET.Element) -> list[tuple[ET.Element, ET.Element]]:
    """A <hashTree>'s children as (element, the hashTree that follows it: its children)."""
    items, out = list(tree), []
    for i, element in enumerate(items):
        if element.tag == "hashTree":
            continue
        follows = items[i + 1] if i + 1 < len(items) and items[i + 1].tag == "hashTree" else None
        if follows is None:
            follows = ET.Element("hashTree")
            tree.insert(list(tree).index(element) + 1, follows)
        out.append((element, follows))
    return out


def _reads_target(*elements: ET.Element) -> bool:
    return any(TARGET.search(node.text or "") or any(TARGET.search(v) for v in node.attrib.values())
               for element in elements for node in element.iter())


def _for_side(element: ET.Element, side: str) -> ET.Element:
    copied = copy.deepcopy(element)
    for node in copied.iter():
        if node.text:
            node.text = TARGET.sub(rf"__P({side}_\1", node.text)
        for key, value in node.attrib.items():
            node.attrib[key] = TARGET.sub(rf"__P({side}_\1", value)
    return copied


def _lab_writer(side: str) -> tuple[ET.Element, ET.Element]:
    """The lab's own JTL writer of that side (a Simple Data Writer), as jmeter/plan.jmx has it."""
    for writer in ET.parse(PLAN).getroot().iter("ResultCollector"):
        if writer.get("testname") == f"JTL: {side}":
            return copy.deepcopy(writer), ET.Element("hashTree")
    raise PlanError(f"{PLAN}: has no 'JTL: {side}' writer to copy")


def two_sided(source: str | Path, out: str | Path) -> Path:
    """Writes the user's plan as the lab's two-sided plan into out; PlanError naming what it cannot do."""
    where = str(source)
    try:
        root = ET.parse(source).getroot()
    except (OSError, ET.ParseError) as e:
        raise PlanError(f"{where}: cannot be read as a JMeter plan ({e})") from None
    top = root.find("hashTree")
    plan_pairs = _pairs(top) if top is not None else []
    if not plan_pairs or plan_pairs[0][0].tag != "TestPlan":
        raise PlanError(f"{where}: no TestPlan element at its top")
    test_plan, body = plan_pairs[0]
    serial = test_plan.find("boolProp[@name='TestPlan.serialize_threadgroups']")
    if serial is not None and (serial.text or "").strip() == "true":
        raise PlanError(f"{where}: runs its thread groups one after the other (Run Thread Groups consecutively): "
                        "the lab runs each of them on both machines at the same time; untick it")
    groups, shared, rest = [], [], []
    for element, children in _pairs(body):
        if element.tag.endswith("ThreadGroup"):
            groups.append((element, children))
        elif element.get("enabled") != "false" and _reads_target(element, children):
            shared.append((element, children))        # e.g. HTTP Request Defaults: one per side, in its groups
        else:
            rest.append((element, children))
    if not any(g.get("enabled") != "false" for g, _ in groups):
        raise PlanError(f"{where}: no enabled thread group")
    body.clear()
    for element, children in rest:
        if element.tag in LISTENERS:
            element.set("enabled", "false")           # the lab writes the results, one JTL per side
        body.extend([element, children])
    for side in MACHINES:
        for group, children in groups:
            mine = _for_side(children, side)
            for element, grandchildren in reversed(shared):
                mine.insert(0, _for_side(grandchildren, side))
                mine.insert(0, _for_side(element, side))
            mine.extend(_lab_writer(side))
            body.extend([_for_side(group, side), mine])
    out = Path(out)
    ET.ElementTree(root).write(out, encoding="UTF-8", xml_declaration=True)
    return out
