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
- no enabled HTTP sampler, or a file that is not a JMeter plan;
- a target that is not the lab's property itself: a server of more than `${__P(host)}` (`${__P(host)}.example`),
  a port or protocol of more than its property, a sampler path that is a full URL (`http://elsewhere/x`), a sampler
  of another protocol (TCP, JDBC, SMTP, …: the lab cannot point it at each machine);
- code the plan would run in JMeter on the lab's host (as the lab's user; issue 53): an element that runs a script
  or a program (OS Process, JSR223, BeanShell, BSF, Java and JUnit samplers, pre- and post-processors, assertions,
  timers, listeners) and a function that runs code, reads or writes the host's files or sets JMeter's properties
  (`__groovy`, `__javaScript`, `__BeanShell`, `__eval`, `__FileToString`, `__setProperty`, …; CODE_FUNCTIONS), unless
  the user passes --allow-plan-code. `__jexl2`/`__jexl3` are taken where they only compute (arithmetic,
  comparisons, quoted text and `${…}` reads: the usual `${__jexl3(${__P(ramp_up_s)} + ${__P(duration_s)})}`), not
  where they call anything.
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
# elements that run a script, a class or a program inside JMeter (testclass names; JSR223*, BeanShell* and BSF* are
# matched by prefix: every sampler, pre/post-processor, assertion, timer and listener of those families)
CODE_ELEMENTS = ("SystemSampler", "JavaSampler", "JUnitSampler")
CODE_PREFIXES = ("JSR223", "BeanShell", "BSF")
# samplers of other protocols: their target is not HTTPD's, so the lab cannot point them at each machine
OTHER_PROTOCOLS = ("TCPSampler", "JDBCSampler", "SmtpSampler", "FTPSampler", "LDAPSampler", "LDAPExtSampler",
                   "JMSSampler", "PublisherSampler", "SubscriberSampler", "MailReaderSampler", "AjpSampler",
                   "AccessLogSampler", "BoltSampler", "MongoScriptSampler")
# functions that run code, read or write the host's files, or set JMeter's properties (another sampler's target)
CODE_FUNCTIONS = ("__groovy", "__javaScript", "__BeanShell", "__eval", "__evalVar", "__FileToString",
                  "__StringFromFile", "__CSVRead", "__StringToFile", "__XPath", "__setProperty", "__machineIP")
JEXL = ("__jexl2", "__jexl3")
FUNCTION_NAME = re.compile(r"\$\{(__\w+)")        # a JMeter function a text calls: ${__name(…)} or ${__name}
ALLOW_CODE = "--allow-plan-code"


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


def _whole_read(value: str, prop: str) -> bool:
    """value is exactly ${__P(prop)} or ${__P(prop,default)}: nothing beside it."""
    return re.fullmatch(rf"\$\{{__P\(\s*{prop}\s*(,[^()]*)?\)\}}", value) is not None


def _calls(text: str, name: str) -> list[str]:
    """The argument text of every ${name(…)} in text (parentheses balanced)."""
    found = []
    for start in (m.end() for m in re.finditer(rf"\$\{{{re.escape(name)}\(", text)):
        depth, i = 1, start
        while i < len(text) and depth:
            depth += {"(": 1, ")": -1}.get(text[i], 0)
            i += 1
        found.append(text[start:i - 1])
    return found


def _jexl_calls_something(expression: str) -> bool:
    """A JEXL expression that does more than compute: with its ${…} reads and quoted text taken out, it calls a
    function or method, makes an object or reaches a member."""
    bare = re.sub(r"'[^']*'|\"[^\"]*\"", "''", expression)
    while "${" in bare:
        reduced = re.sub(r"\$\{[^{}]*\}", "0", bare)
        if reduced == bare:
            break
        bare = reduced
    return re.search(r"[A-Za-z_]\w*\s*[(.]|\bnew\b|[{}\[\]]|=~|!~", bare) is not None


def _code(root: ET.Element, text: str, parents: dict) -> str | None:
    """What in the plan would run code in JMeter (an element, a function), named; None when nothing does."""
    for element in root.iter():
        # JMeter makes an element of its tag's class (the testclass attribute is the GUI's): a plan without the
        # attribute ran an OS Process sampler past this check (bench/inputs.py)
        for kind in {element.get("testclass") or "", element.tag}:
            if (kind in CODE_ELEMENTS or kind.startswith(CODE_PREFIXES)) and _enabled(element, parents):
                return f"{element.get('testname') or kind!r} ({kind}) runs code"
    called = set(FUNCTION_NAME.findall(text))
    for name in CODE_FUNCTIONS:
        if name in called:
            return f"it calls JMeter's {name}, which runs code or reaches the host's files or properties"
    for name in JEXL:
        for expression in _calls(text, name):
            if _jexl_calls_something(expression):
                return f"{name}({expression[:60]}) calls something (a JEXL expression that only computes is taken)"
    return None


def check(path: str | Path, allow_code: bool = False) -> PlanFacts:
    """The plan's facts; PlanError naming the first problem. allow_code: the user's --allow-plan-code (elements and
    functions that run code are then taken; the targets are checked all the same)."""
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
    text = path.read_text(encoding="utf-8", errors="replace")
    code = None if allow_code else _code(root, text, parents)
    if code:
        raise PlanError(f"{where}: {code}; JMeter runs it on the lab's host, so the lab refuses it unless you "
                        f"pass {ALLOW_CODE} (the plan is yours and you have read it)")
    for element in root.iter():
        kind = element.get("testclass") or element.tag
        if kind in OTHER_PROTOCOLS and _enabled(element, parents):
            raise PlanError(f"{where}: {element.get('testname') or kind!r} ({kind}) sends to a target of its own: the "
                            "lab loads each machine through HTTPD, with HTTP samplers (HTTPSamplerProxy) only")
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
            if wanted and value and not _whole_read(value, wanted):
                raise PlanError(f"{where}: {name!r}: {prop.get('name').split('.')[1]} is {value!r}, "
                                + ("typed into the plan" if wanted not in _reads(value) else "more than the lab's "
                                   "property") + f"; read it from the lab with ${{__P({wanted})}} alone so that each "
                                "machine gets its own load")
            if prop.get("name") == "HTTPSampler.path" and re.match(r"\s*([A-Za-z][\w+.-]*:)?//", value):
                raise PlanError(f"{where}: {name!r}: path {value!r} is a full URL, which JMeter sends where it names, "
                                "not to the machine: give the path alone (/api/…)")
        if element.tag == "HTTPSamplerProxy":
            samplers.append(name)
    if not samplers:
        raise PlanError(f"{where}: no enabled HTTP sampler (HTTPSamplerProxy): nothing to send")
    reads = _reads(text)
    missing = [p for p in REQUIRED if p not in reads]
    if missing:
        raise PlanError(f"{where}: never reads the lab's propert{'y' if len(missing) == 1 else 'ies'} "
                        f"{', '.join(missing)} (with ${{__P({missing[0]})}}): the lab could not point it at each "
                        "machine or size its load")
    return PlanFacts(where, tuple(samplers), tuple(p for p in PLAN_PROPERTIES if p in reads))
