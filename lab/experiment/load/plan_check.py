"""A user's own JMeter plan (`--plan my.jmx`, or a service descriptor's load.plan), checked before any machine is
touched (issue 38): the lab runs it against each machine by JMeter properties, so the plan must take its target
and its size from them, never from values typed into it.

The properties the lab gives a user's plan (PLAN_PROPERTIES): `host`, `port`, `scheme` (the machine, through
HTTPD), `users`, `ramp_up_s`, `duration_s`, `connect_timeout_ms`, `response_timeout_ms`, read with `${__P(name)}`
or `${__P(name,default)}`. Refused, each named with the element's testname:
- an enabled HTTP sampler or HTTP Request Defaults whose server, port or protocol is typed in rather than read
  from `host`, `port`, `scheme` (empty is fine: the HTTP Request Defaults then give it);
- a plan that never reads `host`, `users`, `ramp_up_s` or `duration_s` (it would load one machine, or ignore
  the lab's load options);
- no enabled HTTP sampler, or a file that is not a JMeter plan.
"""
from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

from lab.errors import BadInput

PLAN_PROPERTIES = ("host", "port", "scheme", "users", "ramp_up_s", "duration_s", "connect_timeout_ms",
                   "response_timeout_ms")
REQUIRED = ("host", "users", "ramp_up_s", "duration_s")
# an HTTP element's target fields → the property each must read
TARGET_FIELDS = {"HTTPSampler.domain": "host", "HTTPSampler.port": "port", "HTTPSampler.protocol": "scheme"}
HTTP_ELEMENTS = ("HTTPSamplerProxy", "ConfigTestElement")


class PlanError(BadInput):
    """A plan the lab cannot run against its machines; the message names the file, the element and why."""


@dataclass(frozen=True)
class PlanFacts:
    path: str
    samplers: tuple[str, ...]            # the enabled HTTP samplers' testnames (the report's labels)
    reads: tuple[str, ...]               # the lab's properties the plan reads


def _reads(text: str) -> set[str]:
    return set(re.findall(r"__P\(\s*([A-Za-z_][\w.]*)", text or ""))


def _enabled(element: ET.Element, parents: dict) -> bool:
    while element is not None:
        if element.get("enabled") == "false":
            return False
        element = parents.get(element)
    return True


def _hash_tree_parents(root: ET.Element) -> dict:
    """JMeter nests an element's children in the <hashTree> that follows it: element → its logical parent."""
    parents = {}

    def walk(tree: ET.Element, owner: ET.Element | None) -> None:
        last = None
        for child in tree:
            if child.tag == "hashTree":
                walk(child, last)
            else:
                parents[child] = owner
                last = child
    for tree in root.findall("hashTree"):
        walk(tree, None)
    return parents


def check(path: str | Path) -> PlanFacts:
    """The plan's facts; PlanError naming the first problem."""
    path = Path(path)
    where = str(path)
    try:
        root = ET.parse(path).getroot()
    except OSError as e:
        raise PlanError(f"{where}: cannot be read ({e.strerror or e})") from None
    except ET.ParseError as e:
        raise PlanError(f"{where}: not XML ({e})") from None
    if root.tag != "jmeterTestPlan":
        raise PlanError(f"{where}: not a JMeter plan (its root is <{root.tag}>, not <jmeterTestPlan>)")
    parents = _hash_tree_parents(root)
    samplers = []
    for element in root.iter():
        if element.tag not in HTTP_ELEMENTS or not _enabled(element, parents):
            continue
        if element.tag == "ConfigTestElement" and element.get("guiclass") != "HttpDefaultsGui":
            continue
        name = element.get("testname") or element.tag
        for prop in element.iter("stringProp"):
            wanted = TARGET_FIELDS.get(prop.get("name", ""))
            value = (prop.text or "").strip()
            if wanted and value and wanted not in _reads(value):
                raise PlanError(f"{where}: {name!r}: {prop.get('name').split('.')[1]} is {value!r}, typed into the "
                                f"plan; read it from the lab with ${{__P({wanted})}} so that each machine gets "
                                "its own load")
        if element.tag == "HTTPSamplerProxy":
            samplers.append(name)
    if not samplers:
        raise PlanError(f"{where}: no enabled HTTP sampler (HTTPSamplerProxy): nothing to send")
    reads = _reads(path.read_text(encoding="utf-8", errors="replace"))
    missing = [p for p in REQUIRED if p not in reads]
    if missing:
        raise PlanError(f"{where}: never reads the lab's propert{'y' if len(missing) == 1 else 'ies'} "
                        f"{', '.join(missing)} (with ${{__P({missing[0]})}}): the lab could not point it at each "
                        "machine or size its load")
    return PlanFacts(where, tuple(samplers), tuple(p for p in PLAN_PROPERTIES if p in reads))
