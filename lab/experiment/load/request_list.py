"""A service's load as a request list (a descriptor's `load: {requests: FILE.csv}`), for a team without a JMeter plan:
one request per row, replayed by a JMeter plan the lab writes from it, drawn at random by weight.

```
method,path,body_file,weight,expected_status
GET,"/shop/price/${__Random(1,1000)}",,60,200
POST,/shop/orders,order.json,10,201
```
- method: GET, POST, PUT, PATCH, DELETE or HEAD; path: from / (JMeter functions that compute a value, such as
  ${__Random(1,9)}, allowed — VALUE_FUNCTIONS; one that runs code, reads files or sets properties is refused:
  quote a path with a comma, as CSV does);
- body_file: a file in the CSV's folder sent as the body (Content-Type application/json when it parses as JSON), or
  empty; the same functions only;
- weight: a whole number ≥ 1, relative to the others; expected_status: the status a success answers with.

The plan (`write_plan`) is a plan of the kind a user brings (plan_check.py): its target and size from the lab's
properties, so the lab runs it two-sided like any (user_plan.py). Each row is one sampler, labelled
"METHOD path" (the report's per-label verdicts), with a Response Assertion on its status, each once in the plan
(its body too, however heavy its weight): a Switch Controller runs the row a random unit of weight names (the weights
reduced by their greatest common divisor, each unit a variable `lab_pick_K` holding its row's index).
`parse()` refuses, naming the file, the line and the column, what it cannot replay.
"""
from __future__ import annotations

import csv
import json
import math
import re
from dataclasses import dataclass
from pathlib import Path
from xml.sax.saxutils import escape, quoteattr

from lab.experiment.load.plan_check import FUNCTION_NAME, PlanError

COLUMNS = ("method", "path", "body_file", "weight", "expected_status")
METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE", "HEAD")
MAX_REPEATS = 200           # units of weight at most (weights reduced by their gcd): one small variable each
# JMeter evaluates ${__name(…)} in a sampler's path and body, on the lab's host. A request list may use the
# functions that compute a value from nothing but their arguments; those that run code (__groovy, __javaScript,
# __jexl3, __BeanShell, __eval), read or write files (__FileToString, __CSVRead, __StringToFile) or change the
# lab's properties (__setProperty: the target's host) are refused.
VALUE_FUNCTIONS = frozenset({"__Random", "__RandomString", "__RandomDate", "__UUID", "__counter", "__threadNum",
                             "__time", "__timeShift", "__intSum", "__longSum", "__urlencode", "__urldecode",
                             "__escapeHtml", "__unescapeHtml", "__char", "__P", "__property", "__dateTimeConvert",
                             "__changeCase", "__digest"})
FUNCTION = re.compile(r"\$\{[^}]*}")


@dataclass(frozen=True)
class Request:
    method: str
    path: str
    body: str | None
    json_body: bool
    weight: int
    status: int

    @property
    def label(self) -> str:
        """METHOD path, its JMeter functions shown as {…} (one label however the path is drawn)."""
        return f"{self.method} {FUNCTION.sub('{…}', self.path)}"


def parse(path: str | Path) -> list[Request]:
    """The CSV's requests; PlanError naming the file, the line and what is wrong."""
    path = Path(path)
    try:
        rows = list(csv.reader(path.read_text(encoding="utf-8").splitlines()))
    except (OSError, UnicodeDecodeError) as e:
        raise PlanError(f"{path}: cannot be read ({getattr(e, 'strerror', None) or e})") from None
    except csv.Error as e:          # a field over csv's limit (128 KiB): a body belongs in a body_file
        raise PlanError(f"{path}: not a request list CSV ({e}; a long body goes in a body_file)") from None
    if not rows or tuple(c.strip() for c in rows[0]) != COLUMNS:
        raise PlanError(f"{path}: line 1 must name the columns {','.join(COLUMNS)}")
    found = []
    for number, row in enumerate(rows[1:], start=2):
        if not row or not any(c.strip() for c in row) or row[0].lstrip().startswith("#"):
            continue
        where = f"{path}: line {number}"
        if len(row) != len(COLUMNS):
            raise PlanError(f"{where}: {len(row)} columns, not {len(COLUMNS)} ({','.join(COLUMNS)})")
        method, target, body_file, weight, status = (c.strip() for c in row)
        if method.upper() not in METHODS:
            raise PlanError(f"{where}: method {method!r} is not one of {', '.join(METHODS)}")
        if not target.startswith("/") or " " in target:
            raise PlanError(f"{where}: path {target!r} must start with / and hold no space (the lab sends it to "
                            "each machine through HTTPD)")
        if not (weight.isascii() and weight.isdigit()) or int(weight) < 1:     # "²" is a digit to Python
            raise PlanError(f"{where}: weight {weight!r} must be a whole number of at least 1")
        if not (status.isascii() and status.isdigit()) or not 100 <= int(status) <= 599:
            raise PlanError(f"{where}: expected_status {status!r} must be an HTTP status from 100 to 599")
        body = None
        if body_file:
            body_path = (path.parent / body_file).resolve()
            if not body_path.is_relative_to(path.parent.resolve()):
                raise PlanError(f"{where}: body_file {body_file!r} is outside the list's folder ({path.parent}): the "
                                "lab sends only files kept beside the list")
            try:
                body = body_path.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as e:
                raise PlanError(f"{where}: body_file {body_file!r}: {getattr(e, 'strerror', None) or e}") from None
        for what, text in (("path", target), (f"body_file {body_file!r}", body or "")):
            refused = sorted({name for name in FUNCTION_NAME.findall(text) if name not in VALUE_FUNCTIONS})
            if refused:
                raise PlanError(f"{where}: {what} calls JMeter's {', '.join(refused)}: JMeter would run it on the "
                                "lab's host; a request list may use only functions that compute a value ("
                                + ", ".join(sorted(VALUE_FUNCTIONS)) + ")")
        found.append(Request(method.upper(), target, body, _is_json(body), int(weight), int(status)))
    if not found:
        raise PlanError(f"{path}: no request")
    return found


def _is_json(body: str | None) -> bool:
    if body is None:
        return False
    try:
        json.loads(body)
    except ValueError:
        return False
    return True


def repeats(requests: list[Request], where: str = "the request list") -> list[int]:
    """How many units of weight each request has: its weight over the weights' gcd; PlanError when they come to
    more than MAX_REPEATS."""
    divisor = math.gcd(*(r.weight for r in requests))
    counts = [r.weight // divisor for r in requests]
    if sum(counts) > MAX_REPEATS:
        weights = ", ".join(str(r.weight) for r in requests)
        raise PlanError(f"{where}: the weights {weights} need {sum(counts)} units to draw by (at most "
                        f"{MAX_REPEATS}): round them, e.g. to percentages")
    return counts


def _sampler(r: Request) -> str:
    body = ""
    if r.body is not None:
        body = ('<boolProp name="HTTPSampler.postBodyRaw">true</boolProp>'
                '<elementProp name="HTTPsampler.Arguments" elementType="Arguments"><collectionProp '
                'name="Arguments.arguments"><elementProp name="" elementType="HTTPArgument"><boolProp '
                'name="HTTPArgument.always_encode">false</boolProp><stringProp name="Argument.value">'
                f'{escape(r.body)}</stringProp><stringProp name="Argument.metadata">=</stringProp></elementProp>'
                '</collectionProp></elementProp>')
    headers = ""
    if r.json_body:
        headers = ('<HeaderManager guiclass="HeaderPanel" testclass="HeaderManager" testname="JSON body" '
                   'enabled="true"><collectionProp name="HeaderManager.headers"><elementProp name="" '
                   'elementType="Header"><stringProp name="Header.name">Content-Type</stringProp><stringProp '
                   'name="Header.value">application/json</stringProp></elementProp></collectionProp>'
                   '</HeaderManager><hashTree/>')
    return ('<HTTPSamplerProxy guiclass="HttpTestSampleGui" testclass="HTTPSamplerProxy" '
            f'testname={quoteattr(r.label)} enabled="true">{body}'
            f'<stringProp name="HTTPSampler.path">{escape(r.path)}</stringProp>'
            f'<stringProp name="HTTPSampler.method">{r.method}</stringProp>'
            '<boolProp name="HTTPSampler.follow_redirects">false</boolProp>'
            '<boolProp name="HTTPSampler.use_keepalive">true</boolProp></HTTPSamplerProxy>'
            f'<hashTree>{headers}<ResponseAssertion guiclass="AssertionGui" testclass="ResponseAssertion" '
            f'testname="status {r.status}" enabled="true"><collectionProp name="Asserion.test_strings">'
            f'<stringProp name="0">{r.status}</stringProp></collectionProp>'
            '<stringProp name="Assertion.test_field">Assertion.response_code</stringProp>'
            '<boolProp name="Assertion.assume_success">true</boolProp>'
            '<intProp name="Assertion.test_type">8</intProp></ResponseAssertion><hashTree/></hashTree>')


def _picks(counts: list[int]) -> str:
    """User Defined Variables lab_pick_1…N: the index of the row each unit of weight draws."""
    rows = [i for i, n in enumerate(counts) for _ in range(n)]
    variables = "".join(f'<elementProp name="lab_pick_{k}" elementType="Argument"><stringProp name="Argument.name">'
                        f'lab_pick_{k}</stringProp><stringProp name="Argument.value">{row}</stringProp>'
                        '<stringProp name="Argument.metadata">=</stringProp></elementProp>'
                        for k, row in enumerate(rows, start=1))
    return ('<Arguments guiclass="ArgumentsPanel" testclass="Arguments" testname="the row of each unit of weight" '
            f'enabled="true"><collectionProp name="Arguments.arguments">{variables}</collectionProp></Arguments>'
            '<hashTree/>')


def plan_xml(requests: list[Request], source: str) -> str:
    """A JMeter plan replaying the requests by weight, reading the lab's properties."""
    counts = repeats(requests, source)
    samplers = "".join(_sampler(r) for r in requests)
    pick = f"${{__V(lab_pick_${{__Random(1,{sum(counts)})}})}}"
    return f"""<?xml version="1.0" encoding="UTF-8"?>
<!-- Written by the lab from {escape(source)} (lab/experiment/load/request_list.py): do not edit, edit the list. -->
<jmeterTestPlan version="1.2" properties="5.0" jmeter="5.6.3"><hashTree>
<TestPlan guiclass="TestPlanGui" testclass="TestPlan" testname="request list" enabled="true">
<boolProp name="TestPlan.serialize_threadgroups">false</boolProp></TestPlan><hashTree>
{_picks(counts)}
<ConfigTestElement guiclass="HttpDefaultsGui" testclass="ConfigTestElement" testname="target" enabled="true">
<elementProp name="HTTPsampler.Arguments" elementType="Arguments"><collectionProp name="Arguments.arguments"/>
</elementProp><stringProp name="HTTPSampler.domain">${{__P(host,127.0.0.1)}}</stringProp>
<stringProp name="HTTPSampler.port">${{__P(port,80)}}</stringProp>
<stringProp name="HTTPSampler.protocol">${{__P(scheme,http)}}</stringProp>
<stringProp name="HTTPSampler.connect_timeout">${{__P(connect_timeout_ms,5000)}}</stringProp>
<stringProp name="HTTPSampler.response_timeout">${{__P(response_timeout_ms,30000)}}</stringProp>
<stringProp name="HTTPSampler.implementation">HttpClient4</stringProp></ConfigTestElement><hashTree/>
<ThreadGroup guiclass="ThreadGroupGui" testclass="ThreadGroup" testname="users" enabled="true">
<stringProp name="ThreadGroup.on_sample_error">continue</stringProp>
<elementProp name="ThreadGroup.main_controller" elementType="LoopController" guiclass="LoopControlPanel"
 testclass="LoopController" enabled="true"><boolProp name="LoopController.continue_forever">false</boolProp>
<intProp name="LoopController.loops">-1</intProp></elementProp>
<stringProp name="ThreadGroup.num_threads">${{__P(users,10)}}</stringProp>
<stringProp name="ThreadGroup.ramp_time">${{__P(ramp_up_s,10)}}</stringProp>
<boolProp name="ThreadGroup.scheduler">true</boolProp>
<stringProp name="ThreadGroup.duration">${{__jexl3(${{__P(ramp_up_s,10)}} + ${{__P(duration_s,60)}})}}</stringProp>
<stringProp name="ThreadGroup.delay">0</stringProp>
<boolProp name="ThreadGroup.same_user_on_next_iteration">true</boolProp></ThreadGroup><hashTree>
<SwitchController guiclass="SwitchControllerGui" testclass="SwitchController" testname="one request by weight"
 enabled="true"><stringProp name="SwitchController.value">{pick}</stringProp></SwitchController>
<hashTree>{samplers}</hashTree></hashTree></hashTree></hashTree></jmeterTestPlan>
"""


def write_plan(source: str | Path, out: str | Path) -> Path:
    """The request list at source written as a plan at out (only when its content changes)."""
    text = plan_xml(parse(source), str(source))
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    if not out.is_file() or out.read_text(encoding="utf-8") != text:
        out.write_text(text, encoding="utf-8")
    return out
